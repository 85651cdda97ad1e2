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
           "Paired bootstrap resampling between all pairs of systems (Holm-Bonferroni corrected); a new cluster "
           "starts where a system is significantly worse (p < 0.05) than the best system of the current cluster.",
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


def correlation_section(result: ExperimentResult) -> str:
    rows = result.correlation_rows
    if not rows:
        return ""
    out = ["## Correlation with human judgments", ""]
    sys_rows = [r for r in rows if r["level"] == "system"]
    table = []
    for r in sys_rows:
        table.append([r["variant"], r["refset"], r["method"], "yes" if r["include_human"] else "no", r["value"],
                      f"[{_fmt(r['ci_low'], 3)}, {_fmt(r['ci_high'], 3)}]", r["p_value"], r["n"]])
    out += ["### System level (BLEU vs mean human score per system)", "",
            _table(["variant", "refset", "method", "human systems", "value", "95% CI", "p", "n"], table, 3), ""]
    seg_rows = [r for r in rows if r["level"] == "segment"]
    table = [[r["variant"], r["refset"], r["method"], r["grouping"], "yes" if r["include_human"] else "no",
              r["value"], f"[{_fmt(r['ci_low'], 3)}, {_fmt(r['ci_high'], 3)}]", r["n"]] for r in seg_rows]
    out += ["### Segment level (sentence BLEU vs segment human score)", "",
            _table(["variant", "refset", "method", "grouping", "human systems", "value", "95% CI", "n"], table, 3), ""]
    return "\n".join(out)


def paper_section(result: ExperimentResult) -> str:
    ex = result.extras
    if "blocks" not in ex:
        return ""
    out = ["## The paper's protocol", ""]
    blocks = ex["blocks"]
    if blocks:
        out += ["### Blocks (corpus BLEU on 20 contiguous blocks)", "",
                _table(["variant", "refset", "system", "mean", "std"],
                       [[b["variant"], b["refset"], b["system"], b["mean"], b["std"]] for b in blocks]), ""]
        t_rows = [r for r in result.significance_rows if r.get("test") == "block_t"]
        out += ["Paired t between neighbours (in order of mean block BLEU; the paper reports t = 6, 3.4, 24, 11):",
                "", _table(["variant", "system_a", "system_b", "delta", "t", "p"],
                           [[r["variant"], r["system_a"], r["system_b"], r["delta"], r["statistic"], r["p_value"]]
                            for r in t_rows]), ""]
    agree = ex.get("ranking_agreement") or []
    if agree:
        out += ["### One reference vs all references", "",
                _table(["variant", "refset", "vs", "Kendall tau", "same order", "discordant pairs"],
                       [[a["variant"], a["refset"], a["versus"], a["kendall_tau"], a["identical_order"],
                         a["n_discordant"]] for a in agree]), ""]
    comp = ex.get("variant_comparison") or []
    if comp:
        out += ["### Which variant agrees best (system-level Pearson, MT systems, all references)", "",
                _table(["best", "other", "r best", "r other", "delta", "p", "95% CI of delta"],
                       [[c["best"], c["other"], c["r_best"], c["r_other"], c["delta"], c["p_value"],
                         f"[{_fmt(c['ci_low'], 3)}, {_fmt(c['ci_high'], 3)}]"] for c in comp], 3), ""]
    return "\n".join(out)


def discussion(result: ExperimentResult) -> str:
    rows = [r for r in result.correlation_rows if r["level"] == "system" and r["method"] == "pearson"]
    if not rows:
        return ""
    full = "+".join(max(result.spec.refsets, key=len))
    pick = {(r["variant"], bool(r["include_human"])): r["value"] for r in rows if r["refset"] == full}
    seg = [r for r in result.correlation_rows if r["level"] == "segment" and r["refset"] == full
           and r["method"] == "kendall" and r["grouping"] == "none" and r["include_human"]]
    lines = ["## Discussion", ""]
    for v in result.spec.variants:
        mt = pick.get((v.name, False))
        allsys = pick.get((v.name, True))
        lines.append(f"- **{v.name}** ({full}): Pearson r = {_fmt(allsys, 3)} with the human translation among the "
                     f"systems" + (f", {_fmt(mt, 3)} on MT systems only" if mt is not None else "") + ".")
    if seg:
        lines.append("- Segment level (Kendall tau-b, all system x segment pairs): "
                     + ", ".join(f"{r['variant']} {_fmt(r['value'], 3)}" for r in seg) + ".")
    lines += ["",
              f"Papineni et al. (2002) report r = {PAPER_R['monolingual']} (monolingual judges) and "
              f"{PAPER_R['bilingual']} (bilingual judges) over five systems: three weak 2002 MT systems and two "
              "human translators, judged on a 1-5 scale. Here the judges are MQM experts annotating errors, the "
              "systems are strong neural WMT21 submissions within a few BLEU of each other, and a human "
              "translation is scored as a system: BLEU penalises its legitimate divergence from the references, "
              "which is why correlations with and without it differ. Close systems leave little range for any "
              "metric, so wide confidence intervals are expected and honest.", ""]
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
        fig, axes = plt.subplots(1, len(variants), figsize=(3.6 * len(variants), 3.4), squeeze=False)
        for ax, v in zip(axes[0], variants):
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
                xs = np.linspace(x.min(), x.max(), 10)
                ax.plot(xs, slope * xs + icept, color="gray")
                r = float(np.corrcoef(x[mt], y[mt])[0, 1])
                ax.set_title(f"{v}: r = {r:.3f} (MT systems)", fontsize=9)
            ax.set_xlabel("BLEU")
            ax.set_ylabel(f"human ({human.name})")
        paths.append(_save(fig, out / "bleu_vs_human.png"))
    blocks = result.extras.get("blocks") or []
    if blocks:
        fig, ax = plt.subplots(figsize=(7, 4))
        for v in dict.fromkeys(b["variant"] for b in blocks):
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
