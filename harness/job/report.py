"""``report.md`` of a job, computed from its result: every sentence about the data comes from a number of this
job (names, counts, directions, which way a correlation moves, ranks, spreads, significance); nothing is written
for one dataset. The comparison with the paper's 0.99 / 0.96 appears only with ``paper_protocol``.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np

from .result import BEST_VS_EACH, CorrelationResult, JobResult, VariantDifference, equal_parts

PAPER_R = {"monolingual": 0.99, "bilingual": 0.96}
ALPHA = 0.05


# ---------------------------------------------------------------------------------------------------------------
# formatting
# ---------------------------------------------------------------------------------------------------------------



def scores_label(variants: Sequence[Any]) -> str:
    """"BLEU" when every variant is one, else "Scores" (tables that mix BLEU and chrF)."""
    return "BLEU" if all(v.is_bleu for v in variants) else "Scores"


def score_text(cell: Any, ci_digits: int = 2, sep: str = ", ") -> str:
    """A cell's score as the tables show it (imported scores to 4 decimals: they live on their own scale, often
    0-1), with its bootstrap interval when it has one."""
    if math.isnan(cell.score.score):
        return "-"
    digits = 4 if cell.variant.family == "scores" else 2
    ci = "" if math.isnan(cell.ci_low) else f" [{cell.ci_low:.{ci_digits}f}{sep}{cell.ci_high:.{ci_digits}f}]"
    return f"{cell.score.score:.{digits}f}{ci}"


def variant_families(variants: Sequence[Any]) -> str:
    """``3 BLEU, 2 chrF``: how many variants of each metric family."""
    counts: dict[str, int] = {}
    for v in variants:
        counts[v.measure.label] = counts.get(v.measure.label, 0) + 1
    return ", ".join(f"{n} {label}" for label, n in counts.items())

def fmt(x: Any, digits: int = 2) -> str:
    if x is None:
        return ""
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (float, np.floating)):
        return "" if math.isnan(x) else f"{x:.{digits}f}"
    return str(x)


def fmt_p(p: float) -> str:
    """A p-value as users read it: 4 decimals, or scientific below 0.0001 (never "0.00")."""
    if p is None or math.isnan(p):
        return ""
    if p == 0:
        return "0"
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], digits: int = 2) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(fmt(v, digits) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def with_ci(row: CorrelationResult | None, digits: int = 3) -> str:
    if row is None:
        return ""
    c = row.correlation
    if math.isnan(c.value):
        return "n/a"
    ci = "" if math.isnan(c.ci_low) else f" [{c.ci_low:.2f}, {c.ci_high:.2f}]"
    return f"{c.value:.{digits}f}{ci}"


def listing(names: Sequence[str]) -> str:
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


# ---------------------------------------------------------------------------------------------------------------
# facts shared by sections
# ---------------------------------------------------------------------------------------------------------------


def shown_variants(result: JobResult) -> list[str]:
    same = result.same_as
    return [v.name for v in result.spec.variants if v.name not in same]


def _subset(result: JobResult) -> bool:
    """include_human of the headline correlations: MT systems only when human translations are among them."""
    return not any(s.human for s in result.inputs.systems)


def _corr(result: JobResult, kind: str, variant: str, refset: str, level: str, method: str,
          include_human: bool, grouping: str = "none") -> CorrelationResult | None:
    for r in result.correlations:
        c = r.correlation
        if (r.human_score, r.variant, r.refset, c.level, c.method, c.grouping, r.include_human) == \
                (kind, variant, refset, level, method, grouping, include_human):
            return r
    return None


# ---------------------------------------------------------------------------------------------------------------
# sections
# ---------------------------------------------------------------------------------------------------------------


def header(result: JobResult) -> str:
    inputs = result.inputs
    layout = inputs.layout
    title = layout.title if layout is not None and layout.title else result.dataset
    systems = inputs.systems
    humans = [s.label for s in systems if s.human]
    mt = len(systems) - len(humans)
    refs = list(inputs.refs)
    lines = [f"# {result.experiment}: {title}" if title != result.experiment else f"# {title}", ""]
    langs = ""
    if layout is not None and layout.source_lang and layout.target_lang:
        langs = f", {layout.source_lang}->{layout.target_lang}"
    sys_text = plural(mt, "MT system")
    if humans:
        sys_text += f" and {plural(len(humans), 'human translation')} ({listing(humans)})"
    lines.append(f"Dataset `{result.dataset}`{langs}: {inputs.n_segments} segments, "
                 f"{plural(len(refs), 'reference')} ({listing(refs)}), {sys_text}; "
                 f"{plural(len(inputs.refsets), 'reference set')} x {plural(len(result.spec.variants), 'variant')} ({variant_families(result.spec.variants)}).")
    for h in inputs.human:
        direction = "higher is better" if h.higher_is_better else "lower is better (negated for correlations)"
        level = f"published system scores ({h.sys_path.name})" if h.sys_path is not None \
            else "the mean of the judged segments"
        text = f"Human scores `{h.name}` ({direction}): system level from {level}"
        text += f", segment scores in {h.seg_path.name}" if h.seg_path is not None else ", no segment scores"
        if h.differs:
            text += (f"; the published system scores of {listing(list(h.differs))} differ from the mean of their "
                     "segment scores by more than 1e-6, and the system-level correlations use the published ones")
        lines.append(text + ".")
    if inputs.seg_map is not None:
        m = inputs.seg_map
        docs = f", {plural(m.n_documents, 'document')}" if m.n_documents else ""
        lines.append(f"Segment judgments are placed on lines through `seg_map.tsv` (`{m.id_name}` of each line{docs}), "
                     "checked: one row per line, ids unique" + (", consecutive within each document" if docs else "")
                     + ".")
    for (lang, rule, tokenizer), names in result.spec.language_choices().items():
        whose = "as sacrebleu -l picks it" if rule == "sacrebleu" else f"by the {rule} rule"
        lines.append(f"Target language `{lang}`: {listing(names)} tokenized with `{tokenizer}`, {whose} (a variant's "
                     "`tokenize` chooses otherwise).")
    if not inputs.human:
        lines.append("No human scores: no correlations.")
    lines += ["", "Inputs (SHA-256, first 12 digits): " + ", ".join(
        f"{k.split(':', 1)[1]} `{v[:12]}`" for k, v in inputs.input_hashes().items()) + ".", ""]
    return "\n".join(lines)


def systems_section(result: JobResult) -> str:
    variants = shown_variants(result)
    same = result.same_as
    first = variants[0]
    out = ["## Systems", ""]
    if result.spec.paper_protocol:
        out += ["Table 1 analogue (Papineni et al. 2002): BLEU of every system, human translations included, "
                "per reference set and variant.", ""]
    for refset in result.refsets:
        cells = {(c.system.label, c.variant.name): c for c in result.cells_of(refset)}
        labels = sorted({s for s, _ in cells}, key=lambda s: (-cells[(s, first)].score.score, s))
        rows = []
        here = [v for v in variants if (labels[0], v) in cells]  # imported scores: the full reference set only
        for s in labels:
            row: list[Any] = [s + (" (human)" if cells[(s, first)].system.human else "")]
            row += [score_text(cells[(s, v)]) for v in here]
            rows.append(row)
        out += [f"### References: {refset}", "", table(["system"] + here, rows), ""]
    for name, earlier in same.items():
        out += [f"Variant `{name}` gives every number of `{earlier}` on this data (corpus and sentence BLEU, "
                f"intervals, tests, correlations); it is shown once, as `{earlier}`.", ""]
    for name, (earlier, equal, differ) in equal_parts(result.cells, result.correlations, result.clusters,
                                                      result.differences).items():
        out += [f"Variant `{name}` gives the {listing(equal)} of `{earlier}` on this data; its {listing(differ)} "
                f"differ, so both are shown.", ""]
    sigs = sorted({(c.variant.name, c.score.signature, c.sentence_signature) for c in result.cells})
    out += ["Signatures (corpus scores; sentence scores, which every segment-level number uses):", ""]
    out += [f"- `{v}`: `{s}`; sentence: `{t}`" for v, s, t in sigs] + [""]
    out += ["Bracketed: 95% bootstrap interval (sacrebleu's convention: mean +- half the 2.5-97.5% range, "
            f"{result.spec.n_samples} resamples of segments, seed {result.spec.seed}).", ""]
    return "\n".join(out)


def cluster_lines(result: JobResult, refset: str | None = None) -> list[str]:
    """``- **variant** @ refset: N clusters: {A (30.1), B (29.8)} > {C (27.0)}`` per reference set and variant
    (variants identical to an earlier one once)."""
    same = result.same_as
    groups: dict[tuple[str, str], dict[int, list[str]]] = {}
    for c in result.clusters:
        if c.variant in same or (refset is not None and c.refset != refset):
            continue
        groups.setdefault((c.refset, c.variant), {}).setdefault(c.row.cluster, []).append(
            f"{c.row.system} ({c.row.score:.2f})")
    out = []
    for (where, variant), found in groups.items():
        text = " > ".join("{" + ", ".join(g) + "}" for _, g in sorted(found.items()))
        out.append(f"- **{variant}** @ {where}: {plural(len(found), 'cluster')}: {text}")
    return out


#: Placeholders of :func:`run_note`, filled in once the parent run exists.
EXPERIMENT_ID, RUN_ID = "@@EXPERIMENT_ID@@", "@@RUN_ID@@"
#: MLflow 3.17's UI opens a page in "Model training" mode only when the URL says so (it ignores the experiment's
#: kind tag and otherwise remembers the browser's last choice, GenAI at first).
ML = "?workflowType=machine_learning"
#: MLflow's limit on a tag's value (``mlflow.utils.validation.MAX_TAG_VAL_LENGTH``).
NOTE_LIMIT = 8000


def run_note(result: JobResult, figures: Sequence[str]) -> str:
    """The parent run's page in MLflow (its ``mlflow.note.content``, rendered as Markdown): the scores of every
    system against the full reference set beside each kind of human scores, the significance clusters, the
    system-level correlations, and links to the report and figures (artifacts). Shortened to MLflow's limit by
    dropping variants from the end (the note says so)."""
    full = result.full_refset
    link = f"#/experiments/{EXPERIMENT_ID}/runs/{RUN_ID}/artifactPath/"
    variants = shown_variants(result)
    for n in range(len(variants), 0, -1):
        text = _note(result, figures, variants[:n], full, link)
        if n < len(variants):
            text += (f"\n\n*{len(variants) - n} more variant(s) in [report.md]({link}report.md{ML}) and "
                     "`tables/system_scores.json`.*")
        if len(text) <= NOTE_LIMIT - 100:
            return text
    return text[:NOTE_LIMIT - 100]


def _note(result: JobResult, figures: Sequence[str], variants: Sequence[str], full: str, link: str) -> str:
    cells = {(c.system.label, c.variant.name): c for c in result.cells_of(full)}
    first = variants[0]
    labels = sorted({s for s, _ in cells}, key=lambda s: (-np.nan_to_num(cells[(s, first)].score.score, nan=-1e9), s))
    kinds = list(result.inputs.human)
    rows = [[s + (" (human)" if cells[(s, first)].system.human else "")]
            + [score_text(cells[(s, v)]) if (s, v) in cells else "" for v in variants]
            + [f"{h.sys[s]:.4g}" if s in h.sys else "-" for h in kinds] for s in labels]
    out = [f"**{result.dataset}**: {plural(len(labels), 'system')}, references {full}; "
           f"[report.md]({link}report.md{ML}), tables under [tables/]({link}tables{ML}).", "",
           table(["system", *variants, *(h.name for h in kinds)], rows), ""]
    clusters = [line for line in cluster_lines(result, full) if line.split("**")[1] in variants]
    if clusters:
        out += ["**Significance clusters** (paired bootstrap, Holm-adjusted p < 0.05):", "", *clusters, ""]
    corr_rows = []
    subset = not _subset(result)
    for v in variants:
        row: list[Any] = [v]
        for h in kinds:
            for method in ("pearson", "kendall"):
                found = _corr(result, h.name, v, full, "system", method, not subset)
                row.append("" if found is None else with_ci(found))
        corr_rows.append(row)
    if kinds and any(any(c for c in r[1:]) for r in corr_rows):
        header_ = ["variant", *(f"{h.name} {m}" for h in kinds for m in ("pearson", "kendall"))]
        out += [f"**Correlation with human scores** (system level{', MT systems' if subset else ''}):", "",
                table(header_, corr_rows), ""]
    pngs = [f for f in figures if f.endswith(".png")]
    if pngs:
        out.append("Figures: " + " · ".join(f"[{f.removesuffix('.png')}]({link}{f}{ML})" for f in pngs))
    return "\n".join(out)


def significance_section(result: JobResult) -> str:
    if not result.clusters:
        return ""
    tests = [c.outcome for c in result.differences if c.outcome.test == "paired_bs"]
    n = tests[0].n_samples if tests else result.spec.n_samples
    n_systems = len({c.row.system for c in result.clusters if (c.refset, c.variant) == (result.clusters[0].refset,
                                                                                       result.clusters[0].variant)})
    m = n_systems * (n_systems - 1) // 2
    raised = f"; n_samples={result.spec.n_samples} raised so that Holm's correction can reach p < {ALPHA}" \
        if n > result.spec.n_samples else ""
    out = ["## Significance", "",
           f"Paired bootstrap resampling ({n} resamples, seed {result.spec.seed}{raised}) between all "
           f"{plural(m, 'pair')} of systems, Holm-Bonferroni adjusted over the {plural(m, 'pair')} of each reference "
           f"set and variant; a new cluster starts where a system is significantly worse (adjusted p < {ALPHA}) than "
           "the best system of the current cluster. `significance.parquet` has both p-values (`p_value`, `p_holm`), "
           f"`system_scores.parquet` the clusters (`cluster`); the smallest adjusted p-value here is "
           f"{m}/{n + 1} = {fmt_p(min(1.0, m / (n + 1)))}.", ""]
    out += cluster_lines(result)
    return "\n".join(out) + "\n"


def correlation_section(result: JobResult, kind: str) -> str:
    full = result.full_refset
    variants = [v for v in shown_variants(result)
                if any(r.variant == v and r.human_score == kind for r in result.correlations)]
    if not variants:
        return ""
    has_human = not _subset(result)
    h = next(x for x in result.inputs.human if x.name == kind)
    out = [f"## Correlation with human judgments: {kind}", ""]
    level = f"published system scores ({h.sys_path.name})" if h.sys_path is not None \
        else "the mean of each system's judged segments"
    mixed = scores_label(result.spec.variants) != "BLEU"
    out += [f"System level: corpus {'scores' if mixed else 'BLEU'} vs {level}, references {full}; 95% bootstrap "
            f"intervals over segments ({result.spec.n_samples} resamples, seed {result.spec.seed})"
            + ("; imported metrics as given, without intervals." if any(v.family == "scores"
                                                                         for v in result.spec.variants) else "."),
            ""]
    cols = [("pearson", False), ("spearman", False), ("kendall", False)] if has_human else \
        [("pearson", True), ("spearman", True), ("kendall", True)]
    if has_human:
        cols = [("pearson", True)] + cols
    rows = [[v] + [with_ci(_corr(result, kind, v, full, "system", m, inc)) for m, inc in cols] for v in variants]
    heads = [f"{m}{' (all systems)' if inc and has_human else (' (MT only)' if has_human else '')}" for m, inc in cols]
    out += [table(["variant"] + heads, rows), ""]
    singles = [r for r in result.refsets if r != full]
    if singles:
        rows = [[v] + [with_ci(_corr(result, kind, v, r, "system", "pearson", not has_human))
                       for r in singles + [full]] for v in variants]
        out += ["Pearson r per reference set" + (" (MT systems only)" if has_human else "") + ":", "",
                table(["variant"] + singles + [full], rows), ""]
    # level, method, grouping, column, what it is, its trivial baseline (said once for both soft pairwise accuracies)
    spa_baseline = "soft pairwise accuracy of a metric undecided on every pair (every p-value 0.5)"
    wmt = [("system", "pairwise_accuracy", "none", "pairwise accuracy", "pairwise accuracy (Kocmi et al. 2021)",
            "pairwise accuracy of ordering the systems at random (0.5 of the pairs the humans order)"),
           ("system", "soft_pairwise_accuracy", "none", "soft pairwise accuracy",
            "soft pairwise accuracy (Thompson et al. 2024) from sentence BLEU as MTME does for BLEU", spa_baseline),
           ("system", "soft_pairwise_accuracy_corpus", "none", "soft pairwise accuracy (corpus)",
            "the same from permuted corpus-BLEU statistics (corpus BLEU is not a sum of sentence BLEU)", spa_baseline),
           ("segment", "acc_eq", "item", "acc_eq (segment, item)",
            "tie-calibrated accuracy acc_eq with its threshold (Deutsch et al. 2023)",
            "acc_eq of calling every pair a tie (the humans' tie rate)")]
    cells: dict[str, list[str]] = {}
    for v in variants:
        row = []
        for level, m, g, *_ in wmt:
            r = _corr(result, kind, v, full, level, m, not has_human, g)
            cell = "" if r is None else fmt(r.correlation.value, 3)
            if r is not None and m == "acc_eq":
                cell += f" (eps {r.epsilon:.3g})"
            row.append(cell)
        cells[v] = row
    shown = [k for k in range(len(wmt)) if any(cells[v][k] for v in variants)]  # a statistic no variant has: no column
    missing = [wmt[k][3] for k in range(len(wmt)) if k not in shown]
    no_segments = f"; {listing(missing)} need segment scores, which `{kind}` does not have" \
        if missing and not h.seg else ""
    if shown:
        found = {(v, k): _corr(result, kind, v, full, wmt[k][0], wmt[k][1], not has_human, wmt[k][2])
                 for v in variants for k in shown}
        base = [next((r.baseline for (_, j), r in found.items() if j == k and r is not None), math.nan)
                for k in shown]
        no_better = []
        for k, b in zip(shown, base):
            worse = [v for v in variants if (got := found[(v, k)]) is not None and math.isfinite(b)
                     and got.correlation.value <= b]
            if worse:
                no_better.append(f"{wmt[k][3]}: {listing(worse)}")
        order = (" Soft pairwise accuracy takes the systems in sorted order of their names (MTME's one-sided "
                 "p-values depend on the order)." if any(wmt[k][1].startswith("soft_pairwise") for k in shown) else "")
        baselines = list(dict.fromkeys(wmt[k][5] for k in shown))  # as shown, each once
        out += ["WMT meta-evaluation statistics (google-research/mt-metrics-eval), references " + full
                + (" (MT systems only)" if has_human else "") + ": "
                + listing([wmt[k][4] for k in shown]) + no_segments + "." + order, "",
                table(["variant"] + [wmt[k][3] for k in shown],
                      [[v] + [cells[v][k] for k in shown] for v in variants]
                      + [["*trivial baseline*"] + [fmt(b, 3) for b in base]]), "",
                f"Trivial {'baselines' if len(baselines) > 1 else 'baseline'}, on the same systems and segments: "
                + ", ".join(baselines) + ". "
                + ("No better than its baseline: " + "; ".join(no_better) + "." if no_better
                   else "Every variant does better than " + ("each baseline." if len(baselines) > 1
                                                            else "the baseline.")), ""]
    seg_cols = [("pearson", "none"), ("kendall", "none"), ("kendall", "item"), ("kendall_like", "none")]
    rows = [[v] + [with_ci(_corr(result, kind, v, full, "segment", m, not has_human, g)) for m, g in seg_cols]
            for v in variants]
    if any(any(cell for cell in row[1:]) for row in rows):
        judged, total = _judged_pairs(result, kind)
        on = f"all {total:,} (system, segment) pairs" if judged == total else \
            f"the {judged:,} judged (system, segment) pairs of {total:,}"
        out += [f"Segment level: {'segment scores' if mixed else 'sentence BLEU'} vs segment human scores"
                + (" (MT systems only)" if has_human else "")
                + f", on {on}; `none` pools all pairs, "
                "`item` correlates across systems per segment and averages; `kendall_like` is the WMT17-20 pairwise "
                "variant (metric ties count as discordant).", "",
                table(["variant"] + [f"{m} / {g}" for m, g in seg_cols], rows), ""]
    return "\n".join(out)


def _judged_pairs(result: JobResult, kind: str) -> tuple[int, int]:
    h = next(x for x in result.inputs.human if x.name == kind)
    systems = [s for s in result.inputs.systems if s.label in h.seg and (not s.human or _subset(result))]
    judged = sum(int(np.isfinite(h.seg[s.label]).sum()) for s in systems)
    return judged, len(systems) * result.inputs.n_segments


def paper_section(result: JobResult) -> str:
    if not result.spec.paper_protocol or not result.blocks:
        return ""
    same = result.same_as
    out = ["## The paper's protocol", ""]
    first = result.blocks[0].variant
    rows = [b for b in result.blocks if b.variant == first]
    n_blocks = len(rows[0].blocks)
    size = result.inputs.n_segments // n_blocks if n_blocks else 0
    out += [f"### Table 2 analogue: corpus BLEU on {n_blocks} contiguous blocks ({first}, {rows[0].refset})", "",
            f"Blocks of {min(size, 25)} segments, as the paper's 20 blocks of 25 sentences; all variants are in "
            "`significance.parquet` (test `block_t`).", "",
            table(["system", "mean", "std"], [[b.system.label, b.mean, b.std] for b in rows]), ""]
    t_rows = [c for c in result.differences if c.outcome.test == "block_t" and c.variant == first]
    df = n_blocks - 1
    out += [f"Paired t between neighbours in order of mean block BLEU (the paper: t = 6, 3.4, 24, 11; with {df} "
            "degrees of freedom |t| > 2.09 is significant at 95% for 20 blocks):", "",
            table(["system_a", "system_b", "delta", "t", "p"],
                  [[c.a.label, c.b.label, c.outcome.delta, c.outcome.statistic, fmt_p(c.outcome.p_value)]
                   for c in t_rows]), ""]
    agree = [a for a in result.agreement if a.variant not in same]
    if agree:
        kept = sum(1 for a in agree if a.agreement.identical_order)
        out += ["### One reference against all", "",
                "The paper found that BLEU ranks the systems alike with one reference or four. Here "
                f"{kept} of {len(agree)} single-reference rankings order every pair of systems as the full "
                "reference set does.", "",
                table(["variant", "refset", "vs", "Kendall tau", "same order", "discordant pairs"],
                      [[a.variant, a.refset, a.versus, a.agreement.kendall_tau, a.agreement.identical_order,
                        a.agreement.n_discordant] for a in agree]), ""]
    return "\n".join(out)


def best_vs_each(result: JobResult, kind: str) -> list[VariantDifference]:
    """The best variant's system-level r against each other variant's, for one human kind (not meta_eval's rank
    tests, which the ranking section reports)."""
    return [c for c in result.variant_differences if c.human_score == kind and c.statistic == BEST_VS_EACH]


def variant_difference_lines(comps: Sequence[VariantDifference]) -> tuple[list[str], list[tuple[str, float]]]:
    """Holm-corrected comparisons of the best variant with every other (``p_holm`` of the table): rows and
    (other, adjusted p)."""
    adjusted = [c.outcome.p_holm for c in comps]
    return ([f"| {c.outcome.a} | {c.outcome.b} | {c.outcome.value_a:.3f} | {c.outcome.value_b:.3f} | "
             f"{c.outcome.delta:.3f} | {fmt_p(c.outcome.p_value)} | {fmt_p(float(p))} | "
             f"[{fmt(c.outcome.ci_low, 3)}, {fmt(c.outcome.ci_high, 3)}] |" for c, p in zip(comps, adjusted)],
            [(c.outcome.b, float(p)) for c, p in zip(comps, adjusted)])


def discussion(result: JobResult) -> str:
    """What this job's numbers say, sentence by sentence from the tables."""
    if not result.correlations:
        return ""
    full = result.full_refset
    first = shown_variants(result)[0]
    subset = _subset(result)
    lines = ["## Discussion", ""]
    humans = [s for s in result.inputs.systems if s.human]
    for kind in dict.fromkeys(r.human_score for r in result.correlations):
        h = next(x for x in result.inputs.human if x.name == kind).oriented()
        r = _corr(result, kind, first, full, "system", "pearson", subset)
        tau = _corr(result, kind, first, full, "system", "kendall", subset)
        if r is None:
            continue
        who = "MT systems" if not subset else "systems"
        lines.append(f"- **System level ({kind}).** With {first} BLEU against {full}, Pearson r = {with_ci(r)} and "
                     f"Kendall tau = {with_ci(tau)} on the {r.correlation.n} {who}.")
        cells = {c.system.label: c.score.score for c in result.cells_of(full, first)}
        mt_scores = [cells[s.label] for s in result.inputs.systems if not s.human and s.label in h.sys]
        spread = (f"- **Spread.** The MT systems span {min(mt_scores):.2f} to {max(mt_scores):.2f} {first} BLEU "
                  f"({max(mt_scores) - min(mt_scores):.2f} points).") if len(mt_scores) >= 2 else ""
        if spread and spread not in lines:  # the same systems judged by another kind: said once
            lines.append(spread)
        if humans:
            allr = _corr(result, kind, first, full, "system", "pearson", True)
            if allr is not None and not math.isnan(allr.correlation.value) and not math.isnan(r.correlation.value):
                change = allr.correlation.value - r.correlation.value
                lines.append(f"- **With the human translation{'s' if len(humans) > 1 else ''}** "
                             f"({listing([s.label for s in humans])}) among the systems, r "
                             f"{'rises' if change > 0 else 'falls'} from {r.correlation.value:.3f} to "
                             f"{with_ci(allr)} ({change:+.3f}).")
            ranked = sorted((s for s in cells if s in h.sys), key=lambda s: -cells[s])
            judged = sorted((s for s in cells if s in h.sys), key=lambda s: -h.sys[s])
            for s in humans:
                if s.label not in ranked:
                    continue
                b, j = ranked.index(s.label) + 1, judged.index(s.label) + 1
                text = (f"- BLEU ranks {s.label} {_ordinal(b)} of {len(ranked)}, the judges ({kind}) rank it "
                        f"{_ordinal(j)}")
                if b > j:
                    text += ": BLEU puts the human translation lower than the judges do (BLEU rewards closeness to " \
                            "the references; Callison-Burch et al. 2006)."
                elif b < j:
                    text += ": BLEU puts it higher than the judges do."
                else:
                    text += ": BLEU and the judges agree on its rank."
                lines.append(text)
        seg = _corr(result, kind, first, full, "segment", "kendall", subset)
        pooled = _corr(result, kind, first, full, "segment", "pearson", subset)
        if seg is not None and pooled is not None:
            judged_pairs, total = _judged_pairs(result, kind)
            text = (f"- **Segment level ({kind}).** Sentence BLEU ({first}) vs segment scores, pooled over "
                    f"{judged_pairs:,} judged pairs" + (f" of {total:,}" if judged_pairs < total else "")
                    + f": Pearson r = {with_ci(pooled)}, Kendall tau-b = {with_ci(seg)}.")
            c = pooled.correlation
            if math.isfinite(c.ci_low) and c.ci_low <= 0 <= c.ci_high:
                text += (" The interval of r includes 0: on these judgments sentence BLEU shows no relation with the "
                         "humans, which is what judgments placed on the wrong segments look like; check how their "
                         "segment ids map to lines" + (" (seg_map.tsv)" if result.inputs.seg_map is not None else "")
                         + ".")
            lines.append(text)
        comps = best_vs_each(result, kind)
        if comps:
            best = comps[0].outcome.a
            _, adjusted = variant_difference_lines(comps)
            sig = [o for o, p in adjusted if p < ALPHA]
            text = (f"- **Best variant ({kind}):** {best} (system-level Pearson r = {comps[0].outcome.value_a:.3f}"
                    f" on the MT systems, all references). ")
            if sig:
                text += (f"After Holm's correction over {plural(len(comps), 'comparison')}, its r is significantly "
                         f"different from that of {listing(sig)}")
                rest = [o for o, _ in adjusted if o not in sig]
                text += (f", not from {listing(rest)}." if rest else ".")
            else:
                text += (f"After Holm's correction over {plural(len(comps), 'comparison')}, no other variant's r "
                         "differs significantly from it (p >= 0.05).")
            lines.append(text)
    if result.spec.paper_protocol:
        lines += ["", f"Papineni et al. (2002) report r = {PAPER_R['monolingual']} (monolingual judges) and "
                  f"{PAPER_R['bilingual']} (bilingual judges) over five systems (three MT systems of 2002 and two "
                  "human translators, far apart in quality, judged on a 1-5 scale, four references)."]
        r = next((x for x in (_corr(result, k, first, full, "system", "pearson", subset)
                              for k in dict.fromkeys(c.human_score for c in result.correlations)) if x), None)
        if r is not None and not math.isnan(r.correlation.value):
            inside = r.correlation.ci_low <= PAPER_R["bilingual"] <= r.correlation.ci_high
            lines.append(f"Here, r = {with_ci(r)} on {r.correlation.n} systems: the paper's 0.96 is "
                         f"{'inside' if inside else 'outside'} this interval.")
    return "\n".join(lines) + "\n"


def variant_differences_section(result: JobResult) -> str:
    kinds = dict.fromkeys(c.human_score for c in result.variant_differences if c.statistic == BEST_VS_EACH)
    if not kinds:
        return ""
    out = ["## Which variant agrees best", ""]
    for kind in kinds:
        comps = best_vs_each(result, kind)
        rows, _ = variant_difference_lines(comps)
        out += [f"System-level Pearson r ({kind}, MT systems, all references): the best variant against each "
                "other, paired bootstrap over segments "
                f"({max(c.outcome.n_samples for c in comps)} resamples, both variants on the same resamples); "
                "Holm's correction over the comparisons.", "",
                "| best | other | r best | r other | delta (other - best) | p | p (Holm) | 95% CI of delta |",
                "|---|---|---|---|---|---|---|---|", *rows, ""]
    return "\n".join(out)


def ranking_section(result: JobResult) -> str:
    """``meta_eval``: the variants ranked by each statistic, significance clusters as MTME's ``AssignRanks``."""
    if not result.rankings:
        return ""
    pair_swap = "; the pair-swap test for acc_eq" if any(r.statistic == "acc_eq" for r in result.rankings) else ""
    out = ["## Ranking of the variants", "",
           "Per statistic, variants by value (then name); rank 1 is the top significance cluster, and a new cluster "
           "starts at a variant that some variant of the current cluster is significantly better than (p <= 0.05; "
           f"MTME's AssignRanks), by MTME's tests of every pair (PERM-BOTH{pair_swap}; "
           f"{result.spec.n_samples} draws at most, early stopping in blocks of 100, seed {result.spec.seed}, all "
           "pairs on the same draws; `variant_significance.parquet` has every test). Variants with identical scores "
           "(to a relative 1e-12) share a rank. "
           + ("On the MT systems only." if any(s.human for s in result.inputs.systems) else ""), ""]
    stats = list(dict.fromkeys((r.level, r.statistic) for r in result.rankings))
    for kind in dict.fromkeys(r.human_score for r in result.rankings):
        by = {(r.level, r.statistic, r.variant): r for r in result.rankings if r.human_score == kind}
        variants = list(dict.fromkeys(r.variant for r in result.rankings if r.human_score == kind))
        top = {st: min((r.rank for k, r in by.items() if k[:2] == st), default=0) for st in stats}
        rows = []
        for v in sorted(variants, key=lambda v: sum(by[(st[0], st[1], v)].rank for st in stats if (st[0], st[1], v) in by)):
            row: list[Any] = [v]
            for st in stats:
                r = by.get((st[0], st[1], v))
                row.append("" if r is None else f"{r.value:.3f} ({r.rank})" + (" *" if r.rank == top[st] else ""))
            rows.append(row)
        out += [f"### {kind}", "", table(["variant"] + [f"{lvl} {st}" for lvl, st in stats], rows), "",
                "Value (rank); * = in the top cluster.", ""]
        out += where_bleu_stands(result, kind, stats)
    return "\n".join(out)


def where_bleu_stands(result: JobResult, kind: str, stats: Sequence[tuple[str, str]]) -> list[str]:
    """Per statistic: the best BLEU variant's cluster, and the other metrics above it or beside it."""
    family = {v.name: v for v in result.spec.variants}
    if all(v.is_bleu for v in family.values()) or not any(v.is_bleu for v in family.values()):
        return []
    lines = [f"Where BLEU stands ({kind}):", ""]
    for level, statistic in stats:
        rows = sorted((r for r in result.rankings if r.human_score == kind and r.level == level
                       and r.statistic == statistic), key=lambda r: (r.rank, -r.value))
        bleu = [r for r in rows if family[r.variant].is_bleu]
        if not bleu:
            continue
        best = bleu[0]
        n = max(r.rank for r in rows)
        above = [r.variant for r in rows if r.rank < best.rank]
        beside = [r.variant for r in rows if r.rank == best.rank and not family[r.variant].is_bleu]
        text = (f"- {level} {statistic}: BLEU's best, `{best.variant}` ({best.value:.3f}), is in cluster "
                f"{best.rank} of {n}")
        text += f", below {listing(above)}" if above else ", the top cluster"
        text += f"; beside it: {listing(beside)}." if beside else "; no other metric beside it."
        lines.append(text)
    return lines + [""]


#: Where a job writes the pages and tables of ``compare=[[A, B], ...]`` (a sub-folder of the job folder).
PAIRS_FOLDER = "compare"


def pairs_section(result: JobResult) -> str:
    """``compare=[[A, B], ...]``: the headline of each pair and its page."""
    if not result.pairs:
        return ""
    from .comparison import page_name

    first = result.pairs[0]
    out = ["## Where pairs of systems differ", "",
           f"{first.variant} against {first.refset}; delta = B - A with the 95% percentile interval of the paired "
           f"differences, paired bootstrap p ({first.n_samples} resamples, seed {first.seed}). Each page breaks the "
           "difference down by sentence length, sentence BLEU, word frequency and n-gram order, lists the n-grams "
           "and segments behind it" + (", and the human scores" if any(p.human for p in result.pairs) else "")
           + ".", ""]
    rows = []
    for pair in result.pairs:
        h = pair.headline
        page = f"{PAIRS_FOLDER}/{page_name(pair.a.label, pair.b.label)}"
        rows.append([pair.a.label, pair.b.label, h.a, h.b, f"{h.delta:+.2f} [{h.delta_low:+.2f}, {h.delta_high:+.2f}]",
                     fmt_p(h.p_value), f"[{page}]({page})"])
    out += [table(["A", "B", "BLEU A", "BLEU B", "delta [95% CI]", "p", "page"], rows), ""]
    return "\n".join(out)


def render(result: JobResult, figures: Sequence[str] = ()) -> str:
    """The whole ``report.md``."""
    body = [header(result), systems_section(result), significance_section(result)]
    body += [correlation_section(result, h.name) for h in result.inputs.human]
    body += [variant_differences_section(result), ranking_section(result), paper_section(result), pairs_section(result),
             discussion(result)]
    if result.notes:
        body.append("\n".join(["## Notes", "", *[f"- {n}" for n in result.notes], ""]))
    if figures:
        body.append("\n".join(["## Figures", "", *[f"![{name.rsplit('.', 1)[0]}]({name})" for name in figures], ""]))
    return "\n".join(b for b in body if b)
