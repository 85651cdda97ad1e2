"""Is one metric's correlation with the humans higher than another's? The paired bootstrap and the PERM-BOTH
test of the difference, at either level."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from ...errors import ConfigError, InputError
from ..resampling import bootstrap_counts, check_systems, generator, seeded_counts
from ..significance import DifferenceTest
from .batched import _batch_values, _checked, _chunks, _interval, _matrix_values
from .segment import _segment_resampled_values
from .system import _system_inputs, _system_resamples
from .vectors import (
    DIFFERENCE_TESTS,
    GROUPINGS,
    METHODS,
    SEGMENT_METHODS,
    FloatArray,
    ScoreFn,
    _check_choice,
    _check_matrix,
    correlate,
)


def _bootstrap_p(diffs: FloatArray, delta: float) -> tuple[float, int]:
    """Two-sided paired-bootstrap p-value: ``min(1, 2 (F + 1) / (B + 1))``.

    ``B`` = resamples where both correlations are defined, ``F`` = those among them where the difference does not
    have the sign of the observed ``delta`` (``d * sign(delta) <= 0``: flipped or zero). The +1 keeps p > 0 (the
    smallest reportable p is ``2 / (B + 1)``); the factor 2 makes it two-sided. ``delta == 0`` gives p = 1.
    """
    d = diffs[np.isfinite(diffs)]
    b = int(d.size)
    if b == 0 or not math.isfinite(delta):
        return math.nan, b
    if delta == 0:
        return 1.0, b
    flips = int((d * np.sign(delta) <= 0).sum())
    return min(1.0, 2.0 * (flips + 1) / (b + 1)), b


def _zscore(a: FloatArray, ok: NDArray[np.bool_]) -> FloatArray:
    # PERM-BOTH z-scores each metric over all its valid entries (scipy.stats.zscore, ddof=0, as MTME), so that
    # swapping scores between metrics on different scales is meaningful.
    v = a[ok]
    sd = v.std()
    z = (a - v.mean()) / (sd if sd > 0 else 1.0)
    return np.where(ok, z, np.nan)


def correlation_difference(
    metric_a: Any,
    metric_b: Any,
    human: Any,
    *,
    method: str = "pearson",
    grouping: str = "none",
    test: str = "perm_both",
    n_samples: int = 1000,
    seed: int | None = 12345,
    alpha: float = 0.05,
    threshold: float = 0.0,
    names: tuple[str, str] = ("a", "b"),
) -> DifferenceTest:
    """Compare two metrics' correlations with the same human scores (``names`` label them in the result).

    Inputs are score matrices ``[S, n]`` (segment level, e.g. sentence BLEU of two variants) or vectors ``[S]``
    (system-level scores; then the items are systems and only ``perm_both`` is possible: for a paired bootstrap
    over segments of corpus BLEU use :func:`system_correlation_difference`). Entries with a NaN in any of the three
    are dropped.

    - ``paired_bootstrap``: resample segments (columns) with replacement, the same resamples for both metrics,
      recompute both correlations; p-value as :func:`_bootstrap_p` (two-sided, +1 smoothed), CI = percentile
      interval of the resampled differences.
    - ``perm_both`` (Deutsch et al. 2021, arXiv 2104.00054; MTME ``PermutationSigDiff``): z-score each metric,
      then in each of ``n_samples`` draws swap every entry's two metric scores with probability 1/2, recompute
      both correlations; ``p = #{corr_b' - corr_a' >= delta} / n_samples``: *one-sided*, H1 = "B correlates
      better than A", no +1 and no early stopping (MTME's defaults otherwise). Draws are vectorised and come from
      ``default_rng(seed)``, never the global RNG.
    """
    _check_choice("method", method, SEGMENT_METHODS)
    _check_choice("grouping", grouping, GROUPINGS)
    _check_choice("test", test, DIFFERENCE_TESTS)
    n_samples, seed = _checked(n_samples, seed, alpha)
    a = np.asarray(metric_a, dtype=np.float64)
    if a.ndim == 1:
        if test == "paired_bootstrap":
            raise ConfigError(
                "test", "paired_bootstrap needs segment matrices [S, n]; for system-level corpus BLEU use "
                "system_correlation_difference", choices=["perm_both"])
        if grouping != "none" or method == "kendall_like":
            raise ConfigError("grouping", "system-level vectors take grouping 'none' and a vector method",
                              choices=["none"])
        a = a[:, None]
        b = _check_matrix(np.asarray(metric_b, dtype=np.float64).reshape(-1, 1), "metric_b", a.shape)
        h = _check_matrix(np.asarray(human, dtype=np.float64).reshape(-1, 1), "human", a.shape)
    else:
        a = _check_matrix(a, "metric_a")
        b = _check_matrix(metric_b, "metric_b", a.shape)
        h = _check_matrix(human, "human", a.shape)
    ok = ~(np.isnan(a) | np.isnan(b) | np.isnan(h))
    a, b, h = np.where(ok, a, np.nan), np.where(ok, b, np.nan), np.where(ok, h, np.nan)
    rng = generator(seed)

    if test == "paired_bootstrap":
        va = float(_matrix_values(method, grouping, a, h, threshold))
        vb = float(_matrix_values(method, grouping, b, h, threshold))
        counts = bootstrap_counts(rng, a.shape[1], n_samples)
        diffs = _segment_resampled_values(b, h, method, grouping, threshold, counts) - _segment_resampled_values(
            a, h, method, grouping, threshold, counts)
        p, used = _bootstrap_p(diffs, vb - va)
        lo, hi = _interval(diffs, alpha)
        return DifferenceTest(test, names[0], names[1], va, vb, vb - va, math.nan, p, lo, hi, used, seed)

    za, zb = _zscore(a, ok), _zscore(b, ok)
    va = float(_matrix_values(method, grouping, za, h, threshold))
    vb = float(_matrix_values(method, grouping, zb, h, threshold))
    delta = vb - va
    per_draw = a.size * (max(1, a.shape[0] - 1) if method in ("kendall", "kendall_like") else 1)
    large = 0
    for sl in _chunks(n_samples, per_draw):
        swap = rng.random((sl.stop - sl.start, *a.shape)) < 0.5
        m1 = np.where(swap, zb, za)
        m2 = np.where(swap, za, zb)
        d = _matrix_values(method, grouping, m2, h, threshold) - _matrix_values(method, grouping, m1, h, threshold)
        large += int((d >= delta).sum())  # NaN draws never count as "large"
    p = large / n_samples if math.isfinite(delta) else math.nan
    return DifferenceTest(test, names[0], names[1], va, vb, delta, math.nan, p, math.nan, math.nan, int(n_samples),
                      seed)


def system_correlation_difference(
    stats_a: Any,
    score_fn_a: ScoreFn,
    stats_b: Any,
    score_fn_b: ScoreFn,
    human_seg: Any | None,
    *,
    method: str = "pearson",
    human_sys: Any | None = None,
    n_samples: int = 1000,
    seed: int | None = 12345,
    alpha: float = 0.05,
    names: tuple[str, str] = ("a", "b"),
) -> DifferenceTest:
    """Paired bootstrap over segments for two BLEU variants' *system-level* correlations.

    ``stats_a[S, n, Ka]`` / ``stats_b[S, n, Kb]`` (K may differ, e.g. other max order) with their score functions;
    both share every resample (and hence the resampled human system scores, as in
    :func:`bootstrap_system_correlation`). ``delta = value_b - value_a``, p-value two-sided with +1 smoothing
    (:func:`_bootstrap_p`), CI = percentile interval of the resampled deltas. ``test='paired_bootstrap'``.
    """
    return system_correlation_differences(stats_a, score_fn_a, [(stats_b, score_fn_b, names[1])], human_seg,
                                          method=method, human_sys=human_sys, n_samples=n_samples, seed=seed,
                                          alpha=alpha, name_a=names[0])[0]


def system_correlation_differences(
    stats_a: Any,
    score_fn_a: ScoreFn,
    others: Sequence[tuple[Any, ScoreFn, str]],
    human_seg: Any | None,
    *,
    method: str = "pearson",
    human_sys: Any | None = None,
    n_samples: int = 1000,
    seed: int | None = 12345,
    alpha: float = 0.05,
    name_a: str = "a",
) -> list[DifferenceTest]:
    """:func:`system_correlation_difference` of variant ``a`` against each of ``others`` (``(stats_b, score_fn_b,
    name_b)``), every test on the same resamples: ``a``'s resampled correlations are computed once."""
    _check_choice("method", method, METHODS)
    n_samples, seed = _checked(n_samples, seed, alpha)
    sa, hs, point = _system_inputs(stats_a, human_seg, human_sys)
    va, _ = correlate(np.asarray(score_fn_a(sa.sum(axis=1)), dtype=np.float64), point, method)
    counts = seeded_counts(seed, sa.shape[1], n_samples)
    ra = _batch_values(method, *_system_resamples(sa, hs, point, score_fn_a, counts))
    out = []
    for stats_b, score_fn_b, name_b in others:
        sb = check_systems(stats_b, "stats_b")
        if sb.shape[:2] != sa.shape[:2]:
            raise InputError(f"stats_b must cover the same systems and segments {sa.shape[:2]}, got {sb.shape[:2]}")
        vb, _ = correlate(np.asarray(score_fn_b(sb.sum(axis=1)), dtype=np.float64), point, method)
        rb = _batch_values(method, *_system_resamples(sb, hs, point, score_fn_b, counts))
        diffs = rb - ra
        p, used = _bootstrap_p(diffs, vb - va)
        lo, hi = _interval(diffs, alpha)
        out.append(DifferenceTest("paired_bootstrap", name_a, name_b, va, vb, vb - va, math.nan, p, lo, hi, used,
                                  seed))
    return out
