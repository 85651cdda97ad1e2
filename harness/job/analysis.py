"""The analysis of a job: scores, intervals, paired tests, clusters, correlations with the human scores and the
paper's protocol, from the statistics alone (nothing is re-tokenized), into one immutable :class:`JobResult`.

- Every system x reference set x variant: corpus BLEU and sentence BLEU from its statistics block.
- Per reference set and variant whose score is a function of summed statistics: sacrebleu's bootstrap interval
  of every system (all systems on the same resamples), all-pairs paired bootstrap tests and significance clusters.
- With human scores, per kind: system- and segment-level correlations, with and without human translations
  among the systems, the WMT statistics (:mod:`.meta_evaluation`), which variant agrees best with the humans
  (paired bootstrap of system-level Pearson r); with ``meta_eval``, the variants ranked by each statistic with
  significance clusters; with ``paper_protocol``: the 20-block protocol with paired t between neighbours and the
  ranking with one reference against all.
- With ``compare=[[A, B], ...]``: where each pair of systems differs (:mod:`.comparison`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from functools import partial
from typing import Any, Sequence

import numpy as np

from .. import native
from ..core.blocks import block_protocol
from ..core.correlation import (
    Correlation,
    correlate,
    ranking_agreement,
    segment_level,
    system_correlation_differences,
    system_level_subsets,
)
from ..core.significance import all_differences, holm, holm_samples, significance_clusters, systems_ci
from ..errors import HarnessError
from .aside import in_shares
from .comparison import ComparisonRequest, ComparisonResult, compare
from .dataset import refset_name
from .human import HumanScores
from .inputs import Inputs, comparison_pairs
from .meta_evaluation import meta_evaluate, rank_variants
from .result import (
    BEST_VS_EACH,
    BlockSummary,
    Cell,
    Cluster,
    CorrelationResult,
    JobResult,
    RankingAgreement,
    SystemDifference,
    VariantDifference,
    VariantRank,
    identical_variants,
)
from .spec import JobSpec
from .statistics import Statistics

log = logging.getLogger(__name__)

#: The level of every test of the job: clusters, the report's "significant", the resamples Holm needs.
ALPHA = 0.05
#: Segment-level intervals: each resample re-ranks thousands of pairs; 200 resamples keep a job fast.
SEGMENT_CI_SAMPLES = 200
PAPER_BLOCKS, PAPER_BLOCK_SIZE = 20, 25


def score_cells(spec: JobSpec, inputs: Inputs, statistics: Statistics) -> list[Cell]:
    """Corpus and sentence BLEU of every system x reference set x variant (sentence BLEU under the variant's
    segment-level options, ``variant.sentence``: WMT's sentBLEU by default)."""
    cells = []
    full = inputs.full_refset
    for refset in inputs.refsets:
        for variant in spec.variants:
            if variant.family == "scores" and refset != full:  # imported scores: as given, once
                continue
            for system in inputs.systems:
                used = inputs.refs_for(system, refset)
                stats = statistics.of_variant(system, used, variant)
                sentence = np.array(variant.sentences(stats), dtype=np.float64)
                sentence.flags.writeable = False
                cells.append(Cell(system, refset_name(refset), used, variant, stats, variant.corpus(stats), sentence))
    return cells


def _additive(variant: Any) -> bool:
    """Whether the variant's score is a function of summed statistics (then it gets intervals and tests)."""
    return bool(variant.additive)


def _not_additive_note(variant: Any, correlated: bool) -> str:
    """What the report says of a variant that gets no intervals or tests (:func:`_additive`), so that its empty
    cells are explained where they are read; its correlations are named only when the job computes them
    (``correlated``)."""
    if variant.family == "scores":
        level = "system and segment scores" if variant.has_segments else "system scores only"
        return (f"Metric `{variant.name}` is imported ({variant.options.source}; {level}"
                + (", negated: its files say lower is better" if variant.options.negated else "")
                + "): its scores are taken as given, so it has no bootstrap intervals or paired tests between "
                  "systems" + ("; its correlations, accuracies and ranks are computed like every variant's."
                               if correlated else "."))
    return (f"Variant `{variant.name}` (profile {variant.options.profile}) is not a function of summed segment "
            "statistics, so it has no bootstrap intervals and is left out of every test that resamples or permutes "
            f"corpus scores; its point scores{' and correlations' if correlated else ''} are shown.")


def resample(spec: JobSpec, cells: list[Cell], progress: Any = None
             ) -> tuple[list[Cell], list[SystemDifference], list[Cluster]]:
    """Bootstrap intervals of every score and all-pairs paired bootstrap tests, per reference set x variant."""
    by_label = {c.system.label: c.system for c in cells}
    out: dict[int, Cell] = {}
    differences: list[SystemDifference] = []
    clusters: list[Cluster] = []
    groups: dict[tuple[str, str], list[int]] = {}
    for i, c in enumerate(cells):
        groups.setdefault((c.refset, c.variant.name), []).append(i)
    n_systems = max((len(idx) for idx in groups.values()), default=0)
    pair_samples = system_pair_samples(spec, n_systems, "paired tests between systems") if spec.significance \
        else spec.n_samples

    def one(item: tuple[tuple[str, str], list[int]]) -> tuple[dict[int, Cell], list[SystemDifference], list[Cluster]]:
        (refset, variant), idx = item
        group = [cells[i] for i in idx]
        found: dict[int, Cell] = {}
        comps: list[Any] = []
        if _additive(group[0].variant):
            fn = group[0].variant.score_fn()
            systems = [(c.system.label, c.stats) for c in group]
            for i, c, ci in zip(idx, group, systems_ci(systems, fn, spec.n_samples, spec.seed)):
                found[i] = Cell(c.system, c.refset, c.refs_used, c.variant, c.stats, c.score, c.sentence, ci.ci_low,
                                ci.ci_high)
            if spec.significance and len(systems) > 1:
                comps = all_differences(systems, fn, "bs", pair_samples, spec.seed)
        if progress is not None:
            progress.update(1)
        return (found, [SystemDifference(refset, variant, by_label[k.a], by_label[k.b], k) for k in comps],
                [Cluster(refset, variant, row) for row in significance_clusters(comps, alpha=ALPHA, holm_adjusted=True)]
                if comps else [])

    # each reference set x variant on its own (explicit seeds), in threads (native.thread_map)
    for found, group_differences, group_clusters in native.thread_map(one, list(groups.items())):
        out.update(found)
        differences += group_differences
        clusters += group_clusters
    return [out.get(i, c) for i, c in enumerate(cells)], differences, clusters


def samples_for_holm(spec: JobSpec, n_tests: int, what: str | None, smallest: int) -> int:
    """The resamples of a family of ``n_tests`` tests corrected by Holm: ``n_samples``, raised to the fewest
    with which an adjusted p can reach ``ALPHA`` (:func:`~harness.core.significance.holm_samples`); said once,
    before the work, when ``what`` names the family."""
    need = holm_samples(n_tests, ALPHA, smallest)
    if need <= spec.n_samples:
        return spec.n_samples
    if what is not None:
        log.info("%s: Holm's correction over %d comparisons needs more than %d resamples to reach p < %s; using %d "
                 "(n_samples=%d)", what, n_tests, holm_samples(n_tests, ALPHA, smallest, step=1) - 1,
                 ALPHA, need, spec.n_samples)
    return need


def system_pair_samples(spec: JobSpec, n_systems: int, what: str | None = None) -> int:
    """The resamples of the paired tests between the systems of a reference set and variant (all pairs, one Holm
    family); the comparison pages of ``compare=`` use them too, so a page's p-value is its table row's."""
    return samples_for_holm(spec, n_systems * (n_systems - 1) // 2, what, 1)


def _human_matrix(cells: Sequence[Cell], human: HumanScores) -> np.ndarray:
    return np.stack([human.seg[c.system.label] for c in cells])


def _point_rows(cells: Sequence[Cell], hsys: np.ndarray, mask: Any) -> list[Correlation]:
    """System-level correlations without intervals, for profiles whose score is not a function of summed
    statistics."""
    bleu = np.array([c.score.score for c in cells])
    hum = hsys
    if mask is not None:
        bleu, hum = bleu[mask], hum[mask]
    rows = []
    for method in ("pearson", "spearman", "kendall"):
        value, p = correlate(bleu, hum, method)
        rows.append(Correlation("system", method, "none", value, p, math.nan, math.nan, int(len(bleu))))
    return rows


def correlations(spec: JobSpec, inputs: Inputs, cells: Sequence[Cell], human: HumanScores, progress: Any = None
                 ) -> tuple[list[CorrelationResult], list[str]]:
    """Correlations of every reference set x variant with one kind of human scores (oriented so that higher is
    better); returns the rows and the systems left out (no human score).

    System level: corpus BLEU against the published system scores (``sys.tsv``; else the mean of the system's
    judged segments), with bootstrap intervals over segments: the human system scores are resampled with the
    segments when they are those means (``sys.tsv`` agreeing within 1e-6 counts), else held fixed (metric-only
    uncertainty). Segment level (systems with segment scores): sentence BLEU against the judged segments only.
    """
    human = human.oriented()
    labels = [s.label for s in inputs.systems]
    scored = [s for s in labels if s in human.sys]
    dropped = [s for s in labels if s not in scored]
    if dropped:
        log.warning("%s: systems without human scores are left out of the correlations: %s", human.name,
                    ", ".join(dropped))
    if len(scored) < 3:
        log.warning("%s: fewer than 3 systems with human scores: no correlations", human.name)
        return [], dropped
    full = refset_name(inputs.full_refset)
    rows: list[CorrelationResult] = []
    groups: dict[tuple[str, str], list[Cell]] = {}
    for c in cells:
        if c.system.label in scored:
            groups.setdefault((c.refset, c.variant.name), []).append(c)

    def correlate(item: tuple[tuple[str, str], list[Cell]]) -> list[CorrelationResult]:
        (refset, variant), group = item
        used = group[0].variant
        is_human = np.array([c.system.human for c in group])
        hsys = np.array([human.sys[c.system.label] for c in group])
        with_seg = [c.system.label in human.seg for c in group]
        resample_human = all(with_seg) and not human.differs
        hseg = _human_matrix(group, human) if resample_human else None
        masks = [(True, None)] + ([(False, ~is_human)] if is_human.any() else [])
        if _additive(group[0].variant):  # one resampling serves both subsets
            subsets = system_level_subsets(used.stack([c.stats for c in group]), hseg, used.score_fn(),
                                           [mask for _, mask in masks], human_sys=hsys, n_samples=spec.n_samples,
                                           seed=spec.seed)
        else:
            subsets = [_point_rows(group, hsys, mask) for _, mask in masks]
        out: list[CorrelationResult] = []
        for (include_human, _), found in zip(masks, subsets):
            if include_human and is_human.any() and not used.complete:
                continue  # it has no score for a human translation
            seg_cells = [c for c, ok in zip(group, with_seg) if ok and (include_human or not c.system.human)]
            if len(seg_cells) >= 2 and used.has_segments:
                seg_samples = min(spec.n_samples, SEGMENT_CI_SAMPLES) if refset == full else 0
                found += segment_level(np.stack([c.sentence for c in seg_cells]), _human_matrix(seg_cells, human),
                                       n_samples=seg_samples, seed=spec.seed)
            out += [CorrelationResult(refset, variant, human.name, include_human, r) for r in found]
        if progress is not None:
            progress.update(1)
        return out

    # each reference set x variant on its own (explicit seeds): in threads, so that one's Python runs while
    # another's kernels use the cores
    for found in native.thread_map(correlate, list(groups.items())):
        rows += found
    return rows, dropped


def paper_protocol(spec: JobSpec, inputs: Inputs, cells: Sequence[Cell]
                   ) -> tuple[list[SystemDifference], list[BlockSummary], list[RankingAgreement]]:
    """The paper's protocol: blocks with paired t between neighbours, and one reference against all."""
    full = refset_name(inputs.full_refset)
    by_label = {s.label: s for s in inputs.systems}
    differences: list[SystemDifference] = []
    blocks: list[BlockSummary] = []
    for variant in spec.variants:
        group = [c for c in cells if c.refset == full and c.variant.name == variant.name]
        if not group or not _additive(group[0].variant):
            continue
        n_blocks, size = PAPER_BLOCKS, PAPER_BLOCK_SIZE
        if inputs.n_segments < n_blocks * size:
            size = max(1, inputs.n_segments // n_blocks)
        res = block_protocol(variant.stack([c.stats for c in group]), variant.score_fn(), n_blocks,
                             size, systems=[c.system.label for c in group])
        differences += [SystemDifference(full, variant.name, by_label[k.a], by_label[k.b], k) for k in res.pairs]
        blocks += [BlockSummary(full, variant.name, by_label[res.systems[s]], float(res.mean[s]), float(res.std[s]),
                                tuple(float(v) for v in res.block_scores[s])) for s in res.order]
    agreement = []
    for variant in spec.variants:
        if variant.family == "scores":  # imported scores have no other reference sets
            continue
        full_scores = {c.system.label: c.score.score for c in cells if c.refset == full and
                       c.variant.name == variant.name}
        for refset in inputs.refsets:
            name = refset_name(refset)
            if name == full:
                continue
            group = [c for c in cells if c.refset == name and c.variant.name == variant.name]
            agree = ranking_agreement([c.score.score for c in group], [full_scores[c.system.label] for c in group])
            agreement.append(RankingAgreement(variant.name, name, full, agree))
    return differences, blocks, agreement


def best_variant_differences(spec: JobSpec, inputs: Inputs, cells: Sequence[Cell], rows: Sequence[CorrelationResult],
                             human: HumanScores) -> list[VariantDifference]:
    """Paired bootstrap over segments: the best variant's system-level Pearson r (MT systems, all references)
    against each other variant's, on the same resamples."""
    human = human.oriented()
    full = refset_name(inputs.full_refset)
    with_human = not any(s.human for s in inputs.systems)  # MT systems only when humans are among them
    corr = {r.variant: r.correlation.value for r in rows
            if r.human_score == human.name and r.refset == full and r.correlation.level == "system"
            and r.correlation.method == "pearson" and r.include_human == with_human}
    twins = identical_variants(cells, rows)  # a variant identical to an earlier one is compared once, as that one
    candidates = [v for v in spec.variants if v.additive and v.name in corr
                  and np.isfinite(corr[v.name]) and v.name not in twins]
    if len(candidates) < 2:
        return []
    best = max(candidates, key=lambda v: corr[v.name])

    def group_of(variant: Any) -> list[Cell]:
        return [c for c in cells if c.refset == full and c.variant.name == variant.name
                and c.system.label in human.sys and (with_human or not c.system.human)]

    def stats_of(variant: Any) -> tuple[np.ndarray, Any, str]:
        return variant.stack([c.stats for c in group_of(variant)]), variant.score_fn(), variant.name

    group = group_of(best)  # the human scores: the same systems for every variant
    resample_human = all(c.system.label in human.seg for c in group) and not human.differs
    hseg = _human_matrix(group, human) if resample_human else None
    hsys = np.array([human.sys[c.system.label] for c in group])
    sa, fa = best.stack([c.stats for c in group]), best.score_fn()
    samples = samples_for_holm(spec, len(candidates) - 1, f"{human.name}: the best variant's r against each other's", 2)
    others = [stats_of(other) for other in candidates if other.name != best.name]
    out = [VariantDifference(human.name, BEST_VS_EACH, comp) for comp in system_correlation_differences(
        sa, fa, others, hseg, human_sys=hsys, method="pearson", n_samples=samples, seed=spec.seed, name_a=best.name)]
    adjusted = holm([c.outcome.p_value for c in out])  # one family: the best variant against each other
    return [dataclasses.replace(c, outcome=dataclasses.replace(c.outcome, p_holm=float(p)))
            for c, p in zip(out, adjusted)]


def primary_variant(spec: JobSpec) -> Any:
    """The first BLEU variant whose score is a function of summed statistics (the one comparisons of pairs
    use)."""
    return next((v for v in spec.variants if v.is_bleu and _additive(v)), None)


def pair_comparisons(spec: JobSpec, inputs: Inputs, cells: Sequence[Cell]) -> list[ComparisonResult]:
    """``compare=[[A, B], ...]``: where each pair differs (:func:`~harness.job.comparison.compare`), under the
    primary variant against the largest reference set (less either system if it is a reference), with the first
    kind of human scores that has segment scores. The comparison counts both texts itself; where the job scored
    both systems against exactly those references (not when one of them is a reference, compared against the
    others), the job's statistics are checked against its counts."""
    if not spec.compare:
        return []
    variant = primary_variant(spec)
    if variant is None:  # refused by build_spec
        return []
    systems = {s.label: s for s in inputs.systems}
    full = refset_name(inputs.full_refset)
    by_key = {(c.system.label, c.refset, c.variant.name): c for c in cells}
    human = next((h for h in inputs.human if h.has_segments), None)
    where = "the job" if inputs.layout is None else str(inputs.layout.root / "systems")
    samples = system_pair_samples(spec, len(inputs.systems)) if spec.significance else spec.n_samples
    out = []
    for a, b, refs in comparison_pairs(spec, [(s.label, s.name) for s in inputs.systems], inputs.full_refset,
                                       where):
        ca, cb = by_key[(a, full, variant.name)], by_key[(b, full, variant.name)]
        given = (ca.stats, cb.stats) if ca.refs_used == refs and cb.refs_used == refs else None
        out.append(compare(ComparisonRequest.of_files(
            systems[a].text, systems[b].text, [inputs.refs[r] for r in refs], variant.options, labels=(a, b),
            source=inputs.source, human=human, statistics=given, seed=spec.seed, n_samples=samples,
            dataset=inputs.dataset, refset=refset_name(refs), variant=variant.name,
            sentence_options=variant.sentence)))
    return out


def _judged(spec: JobSpec, inputs: Inputs, cells: Sequence[Cell], human: HumanScores, progress: Any = None
            ) -> tuple[list[CorrelationResult], list[str], list[VariantDifference], list[VariantRank]]:
    """Everything of one kind of human scores: its correlations and WMT statistics, the systems left out, the best
    variant against each other and, with ``meta_eval``, the variants' ranking and its tests (nothing without
    correlations)."""
    found, left_out = correlations(spec, inputs, cells, human, progress)
    if not found:
        return [], [], [], []
    found += meta_evaluate(spec, inputs, cells, human)
    differences = best_variant_differences(spec, inputs, cells, found, human)
    ranked: list[VariantRank] = []
    if spec.meta_eval:
        ranked, tested = rank_variants(spec, inputs, cells, human, found, progress)
        differences += tested
    return found, left_out, differences, ranked


def analyse(spec: JobSpec, inputs: Inputs, statistics: Statistics, experiment: str, progress: Any = None
            ) -> JobResult:
    """Everything the job computes, as one :class:`JobResult`."""
    cells = score_cells(spec, inputs, statistics)
    cells, differences, clusters = resample(spec, cells, progress)
    rows: list[CorrelationResult] = []
    blocks: list[BlockSummary] = []
    agreement: list[RankingAgreement] = []
    variant_differences: list[VariantDifference] = []
    rankings: list[VariantRank] = []
    dropped: list[str] = []
    if (spec.correlation or spec.paper_protocol) and not inputs.human:
        log.info("no human judgments in this job: no correlations")
    if spec.correlation or spec.paper_protocol:
        # each kind of human scores on its own: the kinds are split over the cores (forked copies of this process),
        # which all need scipy.special (the correlations' p-values): imported here once, before the fork, not once in
        # every copy (0.15 s of CPU each)
        if len(inputs.human) > 1:
            import scipy.special  # noqa: F401
        judged = in_shares(partial(_judged, spec, inputs, cells), inputs.human, "correlating with the human scores",
                           progress, raises=(HarnessError,))
        for found, left_out, differences_of_kind, ranked in judged:
            rows += found
            dropped += [s for s in left_out if s not in dropped]
            variant_differences += differences_of_kind
            rankings += ranked
    # what is left out for a variant that gets no intervals or tests, said once per variant, not per reference set;
    # its correlations named only if the job has some (human scores of 3 systems or more)
    variant_notes = [_not_additive_note(v, bool(rows)) for v in spec.variants if not _additive(v)]
    for note in variant_notes:
        log.info("%s", note.replace("`", ""))
    notes = list(inputs.warnings) + variant_notes
    if spec.paper_protocol:  # blocks and one reference against all need no human scores
        pc, blocks, agreement = paper_protocol(spec, inputs, cells)
        differences += pc
    pairs = pair_comparisons(spec, inputs, cells)
    return JobResult(spec, inputs, experiment, tuple(cells), tuple(differences), tuple(clusters), tuple(rows),
                     tuple(blocks), tuple(agreement), tuple(variant_differences), tuple(notes),
                     statistics.hits, statistics.misses, tuple(dropped), tuple(rankings), tuple(pairs))
