"""``report.md`` and PNG figures of a job: systems table, significance clusters, correlation with human judgments
and, for the paper validation, the block protocol, 1 vs all references and the BLEU-vs-human regression figure.
matplotlib is imported lazily (Agg backend: no display needed)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .experiment import ExperimentResult
from .store import write_text

PAPER_R = {"monolingual": 0.99, "bilingual": 0.96}


def _fmt(x: Any, digits: int = 2) -> str:
    if x is None:
        return ""
    if isinstance(x, (float, np.floating)):
        return "" if math.isnan(x) else f"{x:.{digits}f}"
    return str(x)


def _table(header: list[str], rows: list[list[Any]], digits: int = 2) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_fmt(v, digits) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> Path:
    tmp = path.with_name(f".{path.stem}.tmp.png")
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    tmp.replace(path)
    _pyplot().close(fig)
    return path


def systems_section(result: ExperimentResult) -> str:
    out = ["## Systems", ""]
    variants = [v.name for v in result.spec.variants]
    for refset in dict.fromkeys(c.refset for c in result.cells):
        cells = {(c.system.name, c.variant.name): c for c in result.cells if c.refset == refset}
        first = variants[0]
        names = sorted({s for s, _ in cells}, key=lambda s: -cells[(s, first)].score.score)
        rows = []
        for s in names:
            human = cells[(s, first)].system.human
            row: list[Any] = [s + (" (human)" if human else "")]
            for v in variants:
                c = cells[(s, v)]
                ci = "" if math.isnan(c.ci_low) else f" [{c.ci_low:.2f}, {c.ci_high:.2f}]"
                row.append(f"{c.score.score:.2f}{ci}")
            rows.append(row)
        out += [f"### References: {refset}", "", _table(["system"] + variants, rows), ""]
    sigs = sorted({(c.variant.name, c.score.signature) for c in result.cells})
    out += ["Signatures:", ""] + [f"- `{v}`: `{s}`" for v, s in sigs] + [""]
    out += ["Bracketed: 95% bootstrap interval (sacrebleu's convention: mean +- half the 2.5-97.5% range, "
            f"{result.spec.n_samples} resamples of segments, seed {result.spec.seed}).", ""]
    return "\n".join(out)


def significance_section(result: ExperimentResult) -> str:
    clusters = result.extras.get("clusters") or []
    if not clusters:
        return ""
    out = ["## Significance", "",
           f"Paired bootstrap resampling ({result.spec.n_samples} resamples, seed {result.spec.seed}) between all "
           "pairs of systems; a new cluster starts where a system is significantly worse (p < 0.05) than the best "
           "system of the current cluster, by per-pair p-values. Holm-Bonferroni adjusted p-values are in "
           "`significance.parquet` (`p_holm`); note that the smallest bootstrap p-value is "
           f"1/{result.spec.n_samples + 1}, which Holm multiplies by up to the number of pairs.",
           ""]
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in clusters:
        by.setdefault((row["refset"], row["variant"]), []).append(row)
    for (refset, variant), rows in by.items():
        groups: dict[int, list[str]] = {}
        for r in rows:
            groups.setdefault(int(r["cluster"]), []).append(f"{r['system']} ({r['score']:.2f})")
        text = " > ".join("{" + ", ".join(g) + "}" for _, g in sorted(groups.items()))
        out.append(f"- **{variant}** @ {refset}: {len(groups)} clusters: {text}")
    return "\n".join(out) + "\n"


def _full(result: ExperimentResult) -> str:
    return "+".join(max(result.spec.refsets, key=len))


def _corr(result: ExperimentResult, **match: Any) -> dict[str, dict[str, Any]]:
    """Correlation rows matching ``match``, by variant."""
    return {r["variant"]: r for r in result.correlation_rows if all(r.get(k) == v for k, v in match.items())}


def _with_ci(row: dict[str, Any] | None) -> str:
    if row is None:
        return ""
    ci = "" if math.isnan(float(row["ci_low"])) else f" [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
    return f"{row['value']:.3f}{ci}"


def correlation_section(result: ExperimentResult) -> str:
    if not result.correlation_rows:
        return ""
    full = _full(result)
    variants = [v.name for v in result.spec.variants]
    has_human = any(s.human for s in result.spec.systems)
    out = ["## Correlation with human judgments", "",
           f"System level: BLEU vs the mean human score per system, references {full}; 95% bootstrap intervals "
           f"over segments ({result.spec.n_samples} resamples, seed {result.spec.seed}).", ""]
    cols = [("pearson", False), ("spearman", False), ("kendall", False)]
    if has_human:
        cols = [("pearson", True)] + cols
    rows = []
    for v in variants:
        row: list[Any] = [v]
        for method, include in cols:
            row.append(_with_ci(_corr(result, refset=full, level="system", method=method,
                                      include_human=include if has_human else True).get(v)))
        rows.append(row)
    heads = [f"{m}{' (all systems)' if inc else (' (MT only)' if has_human else '')}" for m, inc in cols]
    out += [_table(["variant"] + heads, rows), ""]
    singles = [("+".join(r)) for r in result.spec.refsets if "+".join(r) != full]
    if singles:
        rows = [[v] + [_with_ci(_corr(result, refset=r, level="system", method="pearson",
                                      include_human=not has_human).get(v)) for r in singles + [full]]
                for v in variants]
        out += ["Pearson r per reference set" + (" (MT systems only)" if has_human else "") + ":", "",
                _table(["variant"] + singles + [full], rows), ""]
    seg_cols = [("pearson", "none"), ("kendall", "none"), ("kendall", "item"), ("kendall_like", "none")]
    rows = [[v] + [_with_ci(_corr(result, refset=full, level="segment", method=m, grouping=g,
                                  include_human=not has_human).get(v)) for m, g in seg_cols] for v in variants]
    out += ["Segment level: sentence BLEU vs segment human scores" + (" (MT systems only)" if has_human else "")
            + "; `none` pools all system x segment pairs, `item` correlates across systems per segment and "
              "averages; `kendall_like` is the WMT17-20 pairwise variant (metric ties count as discordant).", "",
            _table(["variant"] + [f"{m} / {g}" for m, g in seg_cols], rows), ""]
    return "\n".join(out)


def paper_section(result: ExperimentResult) -> str:
    ex = result.extras
    if "blocks" not in ex:
        return ""
    out = ["## The paper's protocol", ""]
    blocks = ex["blocks"]
    if blocks:
        first = blocks[0]["variant"]
        rows = [b for b in blocks if b["variant"] == first]
        out += [f"### Blocks: corpus BLEU on 20 contiguous blocks ({first}, {rows[0]['refset']})", "",
                "The paper's Table 2 analogue (all variants in `significance.parquet`, test `block_t`).", "",
                _table(["system", "mean", "std"], [[b["system"], b["mean"], b["std"]] for b in rows]), ""]
        t_rows = [r for r in result.significance_rows if r.get("test") == "block_t" and r["variant"] == first]
        out += ["Paired t between neighbours in order of mean block BLEU (the paper: t = 6, 3.4, 24, 11; |t| > 2.09 "
                "is significant at 95% with 19 degrees of freedom):", "",
                _table(["system_a", "system_b", "delta", "t", "p"],
                       [[r["system_a"], r["system_b"], r["delta"], r["statistic"], r["p_value"]] for r in t_rows]), ""]
    agree = ex.get("ranking_agreement") or []
    if agree:
        out += ["### One reference vs all references", "",
                "Does the ranking survive with fewer references (the paper: yes)? Kendall tau between the system "
                "rankings.", "",
                _table(["variant", "refset", "vs", "Kendall tau", "same order", "discordant pairs"],
                       [[a["variant"], a["refset"], a["versus"], a["kendall_tau"], a["identical_order"],
                         a["n_discordant"]] for a in agree]), ""]
    comp = ex.get("variant_comparison") or []
    if comp:
        out += ["### Which variant agrees best (system-level Pearson, MT systems, all references)", "",
                "Paired bootstrap over segments: both variants' correlations on the same resamples.", "",
                _table(["best", "other", "r best", "r other", "delta (other - best)", "p", "95% CI of delta"],
                       [[c["best"], c["other"], c["r_best"], c["r_other"], c["delta"], c["p_value"],
                         f"[{_fmt(c['ci_low'], 3)}, {_fmt(c['ci_high'], 3)}]"] for c in comp], 3), ""]
    return "\n".join(out)


def discussion(result: ExperimentResult) -> str:
    if not result.correlation_rows:
        return ""
    full = _full(result)
    spec = result.spec
    has_human = any(s.human for s in spec.systems)
    first = spec.variants[0].name
    mt = _corr(result, refset=full, level="system", method="pearson", include_human=not has_human)
    tau = _corr(result, refset=full, level="system", method="kendall", include_human=not has_human)
    allsys = _corr(result, refset=full, level="system", method="pearson", include_human=True)
    seg = _corr(result, refset=full, level="segment", method="kendall", grouping="none", include_human=not has_human)
    lines = ["## Discussion", ""]
    if first in mt:
        lines.append(f"- **System level.** With {first} BLEU against {full}, Pearson r = {_with_ci(mt[first])} and "
                     f"Kendall tau = {_with_ci(tau.get(first))} on the {mt[first]['n']} "
                     f"{'MT ' if has_human else ''}systems.")
    if has_human and first in allsys:
        humans = [s.name for s in spec.systems if s.human]
        cells = {c.system.name: c.score.score for c in result.cells if c.refset == full and c.variant.name == first}
        rank = sorted(cells, key=lambda s: -cells[s])
        hs = spec.human
        hum_rank = sorted((s for s in cells if s in hs.seg), key=lambda s: -float(np.nanmean(hs.seg[s]))
                          * (1 if hs.higher_is_better else -1))
        lines.append(f"- **With the human translation** ({', '.join(humans)}) among the systems, r falls to "
                     f"{_with_ci(allsys[first])}: BLEU ranks {humans[0]} {rank.index(humans[0]) + 1} of {len(rank)}, "
                     f"the human judges rank it {hum_rank.index(humans[0]) + 1} of {len(hum_rank)}. BLEU rewards "
                     "closeness to the references, not translation quality as such (Callison-Burch et al. 2006).")
    if first in seg:
        lines.append(f"- **Segment level.** Kendall tau-b of sentence BLEU ({first}) vs segment scores = "
                     f"{_with_ci(seg[first])}: weak, as is known for BLEU on single sentences.")
    comp = result.extras.get("variant_comparison") or []
    if comp:
        best = comp[0]["best"]
        vs_first = next((c for c in comp if c["other"] == first), None)
        text = f"- **Best variant here:** {best} (r = {comp[0]['r_best']:.3f})"
        if vs_first is not None:
            text += (f"; against {first} (r = {vs_first['r_other']:.3f}) the difference has p = "
                     f"{vs_first['p_value']:.3f}" + (" (not significant)." if vs_first["p_value"] >= 0.05 else "."))
        lines.append(text)
    lines += ["",
              f"Papineni et al. (2002) report r = {PAPER_R['monolingual']} (monolingual judges) and "
              f"{PAPER_R['bilingual']} (bilingual judges) over five systems: three MT systems of 2002, far apart "
              "in quality, and two human translators, judged on a 1-5 scale, with four references. Here the judges "
              "are MQM experts annotating errors, the systems are strong neural WMT21 submissions within a few "
              "BLEU of each other (a narrow range leaves little for any metric to correlate with, hence wide "
              "intervals), there are two references, and a human translation is scored as a system, where BLEU "
              "penalises its legitimate divergence from the references.", ""]
    return "\n".join(lines)


def figures(result: ExperimentResult, out: Path) -> list[Path]:
    """PNG figures: BLEU per system, BLEU vs human per variant (with regression line and r), block means."""
    plt = _pyplot()
    paths = []
    full = "+".join(max(result.spec.refsets, key=len))
    variants = [v.name for v in result.spec.variants]
    cells = [c for c in result.cells if c.refset == full]
    systems = [s.name for s in result.spec.systems]
    fig, ax = plt.subplots(figsize=(max(6, len(systems) * 0.9), 4))
    width = 0.8 / max(1, len(variants))
    for j, v in enumerate(variants):
        vals = {c.system.name: c.score.score for c in cells if c.variant.name == v}
        ax.bar(np.arange(len(systems)) + j * width, [vals[s] for s in systems], width, label=v)
    ax.set_xticks(np.arange(len(systems)) + 0.4 - width / 2, systems, rotation=30, ha="right")
    ax.set_ylabel("BLEU")
    ax.set_title(f"BLEU per system ({full})")
    ax.legend(fontsize=8)
    paths.append(_save(fig, out / "bleu_by_system.png"))
    human = result.spec.human
    if human is not None and result.correlation_rows:
        sign = 1.0 if human.higher_is_better else -1.0
        ncol = min(4, len(variants))
        nrow = -(-len(variants) // ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(3.8 * ncol, 3.4 * nrow), squeeze=False)
        for ax in axes.ravel()[len(variants):]:
            ax.set_visible(False)
        for ax, v in zip(axes.ravel(), variants):
            pts = [(c.score.score, sign * float(np.nanmean(human.seg[c.system.name])), c.system)
                   for c in cells if c.variant.name == v and c.system.name in human.seg]
            x = np.array([p[0] for p in pts])
            y = np.array([p[1] for p in pts])
            colors = ["tab:red" if p[2].human else "tab:blue" for p in pts]
            ax.scatter(x, y, c=colors)
            for xi, yi, p in pts:
                ax.annotate(p.name, (xi, yi), fontsize=6)
            mt = np.array([not p[2].human for p in pts])
            if mt.sum() >= 2:
                slope, icept = np.polyfit(x[mt], y[mt], 1)
                xs = np.linspace(x[mt].min(), x[mt].max(), 10)  # fitted on MT systems: no extrapolation
                ax.plot(xs, slope * xs + icept, color="gray")
                r = float(np.corrcoef(x[mt], y[mt])[0, 1])
                ax.set_title(f"{v}: r = {r:.3f} (MT systems)", fontsize=9)
            ax.set_xlabel("BLEU")
            ax.set_ylabel(f"human ({human.name})")
        fig.suptitle("BLEU vs human judgments (red: human translation; line: least squares over MT systems)",
                     fontsize=10)
        fig.tight_layout()
        paths.append(_save(fig, out / "bleu_vs_human.png"))
    blocks = result.extras.get("blocks") or []
    if blocks:
        fig, ax = plt.subplots(figsize=(7, 4))
        for v in list(dict.fromkeys(b["variant"] for b in blocks))[:3]:
            rows = [b for b in blocks if b["variant"] == v]
            ax.errorbar([b["system"] for b in rows], [b["mean"] for b in rows], yerr=[b["std"] for b in rows],
                        fmt="o", capsize=3, label=v)
        ax.set_ylabel("mean block BLEU (+- std)")
        ax.set_title("The paper's block protocol (20 blocks)")
        ax.tick_params(axis="x", rotation=30)
        ax.legend(fontsize=8)
        paths.append(_save(fig, out / "blocks.png"))
    return paths


def write_report(result: ExperimentResult, frames: Mapping[str, Any], out: Path) -> list[Path]:
    """Write ``report.md`` and the figures into ``out``; returns their paths."""
    spec = result.spec
    out.mkdir(parents=True, exist_ok=True)
    figs = figures(result, out)
    head = [f"# {spec.experiment}: {spec.dataset}", "",
            f"{len(spec.systems)} systems x {len(spec.refsets)} reference sets x {len(spec.variants)} BLEU variants, "
            f"{spec.n_segments} segments. Inputs (SHA-256): "
            + ", ".join(f"{k} `{v.sha256[:12]}`" for k, v in spec.refs.items()) + ".", ""]
    body = [systems_section(result), significance_section(result), correlation_section(result),
            paper_section(result), discussion(result)]
    body += ["## Figures", ""] + [f"![{p.stem}]({p.name})" for p in figs] + [""]
    path = write_text(out / "report.md", "\n".join(head + [b for b in body if b]))
    return [path, *figs]
