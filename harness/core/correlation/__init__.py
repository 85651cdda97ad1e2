"""Correlation of BLEU with human judgments (Papineni et al. 2002, section 4; google-research/mt-metrics-eval).

System level (corpus BLEU per system vs the human system score) and segment level (sentence BLEU vs segment
scores, pooled or grouped by item), with bootstrap intervals over segments and tests of the difference between
two metrics' correlations. Pure core: numpy arrays in, numbers and small dataclasses out; scipy is imported inside
the functions that need it; resampling goes through :mod:`harness.core.resampling`.

Missing values never raise: pairs with a NaN on either side are dropped, and a correlation that is undefined
(too few pairs, a constant vector) is NaN, silently (no scipy warning leaks).

Every random procedure takes an explicit ``seed`` and draws from ``numpy.random.default_rng(seed)``; the same
seed gives the same resamples everywhere (all systems, all methods, both metrics of a comparison share one index
matrix, as in sacrebleu's paired bootstrap).

The package: :mod:`.vectors` (one correlation of two vectors, with its p-value; :mod:`.classic` computes it as
scipy.stats does, without importing scipy.stats), :mod:`.batched` (correlation values
of many resamples at once: the engine of every bootstrap), :mod:`.system` and :mod:`.segment` (the two levels, with
bootstrap intervals), :mod:`.difference` (is one metric's correlation higher than another's).

Array conventions (shared with :mod:`harness.core.stats` and :mod:`harness.core.bleu`):

- ``stats[S, n, K]`` float64 per-segment sufficient statistics of ``S`` systems on ``n`` segments, ``K = 2 + 2N``
  (hyp_len, ref_len, matches_1..N, totals_1..N). Corpus BLEU of a subset ``idx`` of segments is
  ``score_fn(stats[:, idx, :].sum(axis=1))``; ``score_fn`` maps summed statistics of any leading shape
  ``[..., K]`` to BLEU (0-100) of shape ``[...]``.
- ``human_seg[S, n]`` float64 human scores per system and segment, NaN where missing. Higher is better for both
  BLEU and the human score, so a good metric has a *positive* correlation.
- Segment-level metric scores are a matrix ``metric[S, n]`` (e.g. sentence BLEU), NaN where missing.
"""

from .difference import correlation_difference, system_correlation_difference, system_correlation_differences
from .segment import (
    KENDALL,
    MAX_TOTAL_WEIGHT,
    bootstrap_segment_correlation,
    pearson_from_sums,
    segment_correlation,
    segment_level,
    tau_b,
)
from .system import (
    Agreement,
    bootstrap_system_correlation,
    ranking_agreement,
    system_correlation,
    system_level,
    system_level_subsets,
)
from .vectors import (
    CORRELATIONS,
    DIFFERENCE_TESTS,
    GROUPINGS,
    METHODS,
    SEGMENT_METHODS,
    Correlation,
    FloatArray,
    ScoreFn,
    correlate,
)

__all__ = [
    "Agreement", "DIFFERENCE_TESTS", "CORRELATIONS", "Correlation", "FloatArray", "GROUPINGS", "KENDALL",
    "MAX_TOTAL_WEIGHT", "METHODS", "SEGMENT_METHODS", "ScoreFn", "bootstrap_segment_correlation",
    "bootstrap_system_correlation", "correlation_difference", "system_correlation_difference",
    "system_correlation_differences", "correlate", "pearson_from_sums", "ranking_agreement", "segment_correlation",
    "segment_level", "system_correlation", "system_level", "system_level_subsets", "tau_b",
]
