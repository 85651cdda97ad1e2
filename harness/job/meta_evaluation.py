"""The WMT metrics-task statistics of a job's BLEU variants, and (``meta_eval``) their ranking with significance.

Since WMT23 metrics are ranked by system-level pairwise accuracy (Kocmi et al. 2021), soft pairwise accuracy
(Thompson et al. 2024) and segment-level tie-calibrated accuracy ``acc_eq`` (Deutsch et al. 2023), computed as
google-research/mt-metrics-eval (MTME) computes them (:mod:`harness.core.mtme`). For every variant against
the full reference set and every kind of human scores, with and without human translations among the systems
(each statistic's rules, and the ranking of ``meta_eval``, in the comment below). Reads the job's cells and human
scores; writes nothing.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Sequence

import numpy as np

from .. import native
from ..core import mtme
from ..core.correlation import Correlation
from ..core.significance import DifferenceTest
from .dataset import refset_name
from .human import HumanScores
from .inputs import Inputs
from .result import Cell, CorrelationResult, VariantDifference, VariantRank
from .spec import JobSpec

# - ``pairwise_accuracy`` (system level): on the systems with a system-level human score;
# - ``soft_pairwise_accuracy`` (system level): the variant's *sentence* BLEU (sentBLEU) as segment scores, as MTME
#   does for BLEU, on the segments every compared system has a human score for; ``soft_pairwise_accuracy_corpus``
#   permutes corpus-BLEU statistics instead (corpus BLEU is not a sum of sentence BLEU). MTME's permutation
#   p-values are one-sided for each pair (i, j), i < j, so its value depends on the order of the systems (two
#   identical systems, one before and one after a third, move it); the systems are taken in sorted order of their
#   names (``sorted``, code points), and the value is MTME's for that order;
# - ``acc_eq`` (segment level, grouped by item), with its tie threshold ``epsilon``.
#
# With ``meta_eval``, the variants are ranked by each statistic (and by system- and segment-level Pearson) into
# significance clusters as MTME's ``CompareMetrics*`` does: its paired test of every pair of variants sorted by value
# (then name) (PERM-BOTH for the correlations and accuracies, the pair-swap test for ``acc_eq``), seeded, with its
# early stopping in blocks of 100 draws (its WMT setting), all pairs on the same draws; then its ``AssignRanks``
# (:func:`assign_ranks`).

log = logging.getLogger(__name__)

NAN = math.nan
#: MTME's block size for early stopping in its WMT tasks.
BLOCK = 100
ALPHA = 0.05
#: (level, statistic) by which ``meta_eval`` ranks the variants.
RANKED: tuple[tuple[str, str], ...] = (("system", "pearson"), ("system", "pairwise_accuracy"),
                                       ("system", "soft_pairwise_accuracy"), ("segment", "pearson"),
                                       ("segment", "acc_eq"))


def _subset_cells(cells: Sequence[Cell], variant: str, full: str, include_human: bool) -> list[Cell]:
    return [c for c in cells if c.refset == full and c.variant.name == variant and (include_human or not c.system.human)]


def _subsets(inputs: Inputs) -> list[bool]:
    return [True, False] if any(s.human for s in inputs.systems) else [True]


@dataclass(frozen=True)
class _Block:
    """A variant's segment scores with human scores: its judged cells (sorted by system), their human scores
    ``hseg[S, n]`` and the complete block of them (:func:`~harness.core.mtme.complete_block`)."""

    judged: list[Cell]
    hseg: np.ndarray
    systems: np.ndarray
    segments: np.ndarray

    @property
    def key(self) -> tuple[tuple[str, ...], bytes]:
        """The block's systems and segments: what its human p-values and baselines depend on."""
        return tuple(self.judged[i].system.label for i in self.systems), self.segments.tobytes()


def meta_evaluate(spec: JobSpec, inputs: Inputs, cells: Sequence[Cell], human: HumanScores
                  ) -> list[CorrelationResult]:
    """The WMT statistics of every variant (full reference set), both subsets, one kind of human scores, each with
    its trivial baseline (:func:`baselines`)."""
    human = human.oriented()
    full = refset_name(inputs.full_refset)
    rows: list[CorrelationResult] = []
    corpus_p: dict[str, tuple[list[str], np.ndarray, np.ndarray]] = {}  # variant -> labels, segments, p-values
    for include_human in _subsets(inputs):
        # a variant without a score for a human translation is compared on the MT systems only
        variants = [v for v in spec.variants if v.complete or not include_human]
        groups = {v.name: [c for c in _subset_cells(cells, v.name, full, include_human) if c.system.label in human.sys]
                  for v in variants}
        labels = [c.system.label for c in groups[variants[0].name]]  # the same systems for every variant
        if len(labels) < 2:
            continue
        bleu = np.array([[c.score.score for c in groups[v.name]] for v in variants])
        human_sys = np.array([human.sys[s] for s in labels])
        accuracies, n_pairs = mtme.pairwise_accuracy(bleu, human_sys)
        random_order = random_order_accuracy(human_sys)
        # each variant's complete block of segment scores (in practice one block for all: they score the same
        # systems); the human p-values and the baselines are computed once per block
        blocks: dict[str, _Block] = {}
        for variant in variants:
            judged = sorted((c for c in groups[variant.name] if c.system.label in human.seg),
                            key=lambda c: c.system.label)
            if len(judged) < 2 or not variant.has_segments:
                continue
            hseg = np.stack([human.seg[c.system.label] for c in judged])
            systems, segments = mtme.complete_block(hseg)
            if systems.size >= 2 and segments.size > 0:
                blocks[variant.name] = _Block(judged, hseg, systems, segments)
        humans = {block.key: block for block in blocks.values()}
        human_p = {key: mtme.pairwise_p_values(block.hseg[np.ix_(block.systems, block.segments)])
                   for key, block in humans.items()}

        def statistics(variant: Any) -> list[tuple[str, str, float, int, dict[str, Any]]]:
            block = blocks[variant.name]
            hp = human_p[block.key]
            sent = np.stack([c.sentence for c in block.judged])
            n_block = int(block.systems.size * block.segments.size)
            out: list[tuple[str, str, float, int, dict[str, Any]]] = [
                ("system", "soft_pairwise_accuracy", mtme.soft_pairwise_accuracy(sent, block.hseg,
                                                                                   human_p_values=hp), n_block, {})]
            if variant.additive:
                block_labels = [block.judged[i].system.label for i in block.systems]
                metric_p = _corpus_p_values(corpus_p, variant, block_labels, block.segments,
                                            lambda: variant.stack([block.judged[i].stats for i in block.systems]))
                out.append(("system", "soft_pairwise_accuracy_corpus", mtme.one_minus_pce(hp, metric_p), n_block, {}))
            found = mtme.acc_eq(sent, block.hseg)
            n_items = int((np.isfinite(block.hseg).sum(axis=0) >= 2).sum())
            out.append(("segment", "acc_eq", found.value, n_items, {"grouping": "item", "epsilon": found.epsilon}))
            return out

        # the variants (each with its own entry of corpus_p) and the baselines at once, in threads
        tasks: list[Callable[[], Any]] = [partial(segment_baselines, human_p[key], block.hseg)
                                          for key, block in humans.items()]
        tasks += [partial(statistics, v) for v in variants if v.name in blocks]
        found = native.thread_map(lambda task: task(), tasks)
        baselines = dict(zip(humans, found[:len(humans)]))
        of_variant = dict(zip((v.name for v in variants if v.name in blocks), found[len(humans):]))
        for variant, acc in zip(variants, accuracies):
            rows.append(_row(full, variant.name, human.name, include_human, "system", "pairwise_accuracy", acc,
                             n_pairs, baseline=random_order))
            base = baselines[blocks[variant.name].key] if variant.name in blocks else {}
            rows += [_row(full, variant.name, human.name, include_human, level, method, value, n,
                          baseline=base.get(method, NAN), **kw)
                     for level, method, value, n, kw in of_variant.get(variant.name, [])]
    return rows


def random_order_accuracy(human_sys: np.ndarray) -> float:
    """The trivial baseline of pairwise accuracy: what ordering the systems at random scores on average, 0.5 of
    the pairs the humans order (a pair the humans tie is never matched by a strict order)."""
    i, j = np.triu_indices(human_sys.size, 1)
    return float(0.5 * np.count_nonzero(human_sys[i] != human_sys[j]) / i.size) if i.size else NAN


def segment_baselines(human_p: np.ndarray, human_seg: np.ndarray) -> dict[str, float]:
    """The trivial baselines of the statistics from segment scores, through the statistics' own code:
    soft pairwise accuracy of a metric undecided on every pair (every permutation p-value 0.5), and acc_eq of a
    metric that calls every pair a tie (a constant: acc_eq is then the humans' tie rate, averaged over items)."""
    undecided = mtme.one_minus_pce(human_p, np.full_like(human_p, 0.5))
    ties = mtme.acc_eq(np.where(np.isnan(human_seg), np.nan, 0.0), human_seg).value
    return {"soft_pairwise_accuracy": undecided, "soft_pairwise_accuracy_corpus": undecided, "acc_eq": ties}


def _corpus_p_values(done: dict[str, tuple[list[str], np.ndarray, np.ndarray]], variant: Any, labels: list[str],
                     segments: np.ndarray, stats: Callable[[], np.ndarray]) -> np.ndarray:
    """:func:`~harness.core.mtme.pairwise_p_values_corpus` of the variant's corpus BLEU on the complete block
    (the systems ``labels``, the ``segments``; ``stats()``: their statistics ``[S, n, K]``), as
    :func:`~harness.core.mtme.soft_pairwise_accuracy_corpus` computes them. The p-value of a pair depends on
    its two systems and on the segments only (the permutations are drawn for the number of segments), so when the
    MT-only block has the segments of the block with the human translations, its p-values are read from that
    block's matrix instead of being computed again; ``done`` keeps each variant's last matrix."""
    kept = done.get(variant.name)
    if kept is not None and np.array_equal(kept[1], segments) and set(labels) <= set(kept[0]):
        at = [kept[0].index(label) for label in labels]
        if at == sorted(at):  # the same order: the upper triangle stays the upper triangle
            return kept[2][np.ix_(at, at)]
    block = stats()
    p = mtme.pairwise_p_values_corpus(block[:, segments], variant.score_fn())
    done[variant.name] = (labels, segments, p)
    return p


def _row(refset: str, variant: str, kind: str, include_human: bool, level: str, method: str, value: float, n: int,
         grouping: str = "none", epsilon: float = NAN, baseline: float = NAN) -> CorrelationResult:
    return CorrelationResult(refset, variant, kind, include_human,
                             Correlation(level, method, grouping, float(value), NAN, NAN, NAN, int(n)), epsilon,
                             baseline)


# ---------------------------------------------------------------------------------------------------------------
# ranking the variants (meta_eval)
# ---------------------------------------------------------------------------------------------------------------


def tester(statistic: str, metrics: np.ndarray, human: np.ndarray, epsilons: Sequence[float] | None = None
           ) -> mtme.Tester:
    """MTME's test of "metric i better than metric j" for one statistic, between any pairs of ``metrics[V, ...]``
    (:mod:`harness.core.mtme.sig_matrix`: every pair on the same draws)."""
    if statistic == "acc_eq":
        return mtme.acc_eq_tester(metrics, human, epsilons=epsilons)
    if statistic == "pairwise_accuracy":
        return mtme.pairwise_accuracy_tester(metrics, human)
    if statistic == "soft_pairwise_accuracy":
        return mtme.soft_pairwise_accuracy_tester(metrics, human)
    return mtme.pearson_tester(metrics, human)


def _sig_matrix(statistic: str, stacked: np.ndarray, target: np.ndarray, epsilons: Sequence[float] | None,
                spec: JobSpec) -> tuple[list[tuple[int, int]], list[mtme.SigDiff]]:
    """MTME's ``ComputeSigMatrix``: every pair ``i < j`` of the variants (sorted best first), all on the same draws
    (one pass computes them all)."""
    pairs = [(i, j) for i in range(stacked.shape[0]) for j in range(i + 1, stacked.shape[0])]
    if not pairs:
        return pairs, []
    return pairs, tester(statistic, stacked, target, epsilons).run(pairs, n_draws=spec.n_samples, seed=spec.seed,
                                                                   block_size=min(BLOCK, spec.n_samples))


def assign_ranks(p_values: np.ndarray, alpha: float = ALPHA) -> list[int]:
    """MTME ``AssignRanks`` of metrics sorted best first, from ``p_values[i, j]`` (``i < j``: the p-value of "``i``
    better than ``j``"): going down the metrics, a new cluster starts at ``j`` (and ``j`` heads it) where a metric
    ``i`` of the current cluster is significantly better (``p <= alpha``); rank 1 is the top cluster."""
    ranks: list[int] = []
    rank, start = 1, 0
    for j in range(p_values.shape[0]):
        if np.any(p_values[start:j, j] <= alpha):
            rank += 1
            start = j
        ranks.append(rank)
    return ranks


def _identical(metric: dict[str, np.ndarray]) -> dict[str, str]:
    """``{variant: the earlier variant whose scores it equals}``: every score equal to a relative 1e-12, NaN where
    it is NaN. Rounding is not a difference: ``nltk``'s and ``multi-bleu``'s sentence scores differ by at most 1e-13
    on ru-en, and testing them against each other gave a delta of -5.6e-17 with a p-value made of rounding (MTME's
    delta: 0)."""
    out: dict[str, str] = {}
    names = list(metric)
    for i, v in enumerate(names):
        for earlier in names[:i]:
            if earlier not in out and metric[v].shape == metric[earlier].shape and np.allclose(
                    metric[v], metric[earlier], rtol=1e-12, atol=0.0, equal_nan=True):
                out[v] = earlier
                break
    return out


def rank_variants(spec: JobSpec, inputs: Inputs, cells: Sequence[Cell], human: HumanScores,
                  rows: Sequence[CorrelationResult], progress: Any = None
                  ) -> tuple[list[VariantRank], list[VariantDifference]]:
    """Every (level, statistic) of :data:`RANKED`: the variants ranked into significance clusters (on the MT
    systems when human translations are among the systems, else all), one kind of human scores."""
    human = human.oriented()
    full = refset_name(inputs.full_refset)
    include_human = not any(s.human for s in inputs.systems)
    by_variant = {v.name: _subset_cells(cells, v.name, full, include_human) for v in spec.variants}
    segmented = {v.name: v.has_segments for v in spec.variants}
    first = next(iter(by_variant.values()))
    sys_labels = sorted(c.system.label for c in first if c.system.label in human.sys)
    seg_labels = sorted(c.system.label for c in first if c.system.label in human.seg)  # SPA's order (see above)
    ranks: list[VariantRank] = []
    differences: list[VariantDifference] = []
    mine = [r for r in rows if r.human_score == human.name and r.refset == full and r.include_human == include_human
            and r.correlation.grouping == ("item" if r.correlation.method == "acc_eq" else "none")]
    value_of = {(r.variant, r.correlation.level, r.correlation.method): r.correlation.value for r in mine}
    epsilon_of = {(r.variant, r.correlation.level, r.correlation.method): r.epsilon for r in mine}
    asked = []  # (level, statistic, the variants' scores, their twins, their values, their order, the test)
    for level, statistic in RANKED:
        by_system = level == "system" and statistic != "soft_pairwise_accuracy"  # SPA reads segment scores
        labels = sys_labels if by_system else seg_labels
        if len(labels) < 3:
            continue
        if by_system:
            metric = {v: np.array([next(c.score.score for c in g if c.system.label == s) for s in labels])
                      for v, g in by_variant.items()}
            target = np.array([human.sys[s] for s in labels])
        else:
            metric = {v: np.stack([next(c.sentence for c in g if c.system.label == s) for s in labels])
                      for v, g in by_variant.items() if segmented[v]}
            target = np.stack([human.seg[s] for s in labels])
            if statistic == "pearson":  # pooled over the judged pairs only
                target = target.copy()
                for v in metric:
                    metric[v] = np.where(np.isnan(target), np.nan, metric[v])
        twin = _identical(metric)  # a variant with the very scores of an earlier one is ranked as that one
        values = {v: value_of.get((v, level, statistic), NAN) for v in metric if v not in twin}
        # MTME's order: by value, best first, then by name; a variant without a value is not ranked
        order = sorted((v for v in values if math.isfinite(values[v])), key=lambda v: (-values[v], v))
        epsilons = ([epsilon_of[(v, level, statistic)] for v in order] if statistic == "acc_eq" else None)
        stacked = np.stack([metric[v] for v in order]) if order else np.zeros((0, *target.shape))
        asked.append((level, statistic, metric, twin, values, order,
                      partial(_sig_matrix, statistic, stacked, target, epsilons, spec)))
    # the statistics' tests at once (threads: one's Python runs while another's kernels use the cores)
    def run(test: Callable[[], Any]) -> Any:
        found = test()
        if progress is not None:
            progress.update(1)
        return found

    tested = native.thread_map(run, [test for *_, test in asked])
    for (level, statistic, metric, twin, values, order, _), (pairs, tests) in zip(asked, tested):
        p_values = np.full((len(order), len(order)), NAN)
        for (i, j), sig in zip(pairs, tests):
            p_values[i, j] = sig.p_value
        found = dict(zip(order, assign_ranks(p_values)))
        found.update({v: found[t] for v, t in twin.items() if t in found})
        ranks += [VariantRank(human.name, level, statistic, v, value_of.get((v, level, statistic), NAN), found[v])
                  for v in metric if v in found]
        test_name = "pairs" if statistic == "acc_eq" else "perm_both"
        for (i, j), sig in zip(pairs, tests):  # b = the better-ranked variant i, a = j; delta = value of b - a
            a, b = order[j], order[i]
            differences.append(VariantDifference(human.name, f"{level}.{statistic}", DifferenceTest(
                test_name, a, b, values[a], values[b], sig.delta, sig.delta, sig.p_value, NAN, NAN, sig.n_draws,
                spec.seed)))
    return ranks, differences
