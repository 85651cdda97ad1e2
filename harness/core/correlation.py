"""Correlation of BLEU with human judgments (Papineni et al. 2002, section 4; google-research/mt-metrics-eval).

System level (corpus BLEU per system vs the human system score) and segment level (sentence BLEU vs segment
scores, pooled or grouped by item), with bootstrap intervals over segments and tests of the difference between
two metrics' correlations. Pure core: numpy arrays in, numbers and small dataclasses out; scipy is imported inside
the functions that need it; resampling goes through :mod:`.resampling`.

Missing values never raise: pairs with a NaN on either side are dropped, and a correlation that is undefined
(too few pairs, a constant vector) is NaN, silently (no scipy warning leaks).

Every random procedure takes an explicit ``seed`` and draws from ``numpy.random.default_rng(seed)``; the same
seed gives the same resamples everywhere (all systems, all methods, both metrics of a comparison share one index
matrix, as in sacrebleu's paired bootstrap).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError, InputError
from .. import native
from .resampling import (
    bootstrap_counts,
    check_level,
    check_n_samples,
    check_seed,
    check_systems,
    generator,
    percentile_interval,
    seeded_counts,
)
from .significance import Comparison

# Array conventions (shared with ``harness.stats`` / ``harness.bleu``):
#
# - ``stats[S, n, K]`` float64 per-segment sufficient statistics of ``S`` systems on ``n`` segments, ``K = 2 + 2N``
#   (hyp_len, ref_len, matches_1..N, totals_1..N). Corpus BLEU of a subset ``idx`` of segments is
#   ``score_fn(stats[:, idx, :].sum(axis=1))``; ``score_fn`` maps summed statistics of any leading shape
#   ``[..., K]`` to BLEU (0-100) of shape ``[...]``.
# - ``human_seg[S, n]`` float64 human scores per system and segment, NaN where missing. Higher is better for both
#   BLEU and the human score, so a good metric has a *positive* correlation.
# - Segment-level metric scores are a matrix ``metric[S, n]`` (e.g. sentence BLEU), NaN where missing.

ScoreFn = Callable[[NDArray[np.float64]], NDArray[np.float64]]
FloatArray = NDArray[np.float64]

#: Correlation methods for vectors (system level, and segment level with any grouping).
METHODS: tuple[str, ...] = ("pearson", "spearman", "kendall")
#: Segment-level methods: the vector methods plus WMT's DARR "Kendall-like" tau.
SEGMENT_METHODS: tuple[str, ...] = (*METHODS, "kendall_like")
#: How a system x segment matrix becomes correlations (MTME ``average_by``; 'sys' is not offered).
GROUPINGS: tuple[str, ...] = ("none", "item")
#: Tests for the difference between two metrics' correlations with the human scores.
COMPARISON_TESTS: tuple[str, ...] = ("paired_bootstrap", "perm_both")

# Minimum number of valid pairs: a whole-vector correlation needs 3 (with 2 points Pearson is +-1 and scipy's
# p-value is degenerate); MTME's item grouping keeps every item with at least 2 (its ``len(filt) == 1`` skip).
_MIN_PAIRS = 3
_MIN_PAIRS_ITEM = 2

# Element budget of one vectorised chunk (resamples x values): bounded memory (tens of MB) whatever n_samples is.
_CHUNK_ELEMENTS = 1 << 20
# Up to this vector length Kendall's tau is computed vectorised from all pairwise signs (O(m^2) memory per
# vector); longer vectors go through scipy's O(m log m) kendalltau one at a time.
_PAIRWISE_MAX = 64


# ---------------------------------------------------------------------------------------------------------------
# Vector correlations (scipy, with p-values)
# ---------------------------------------------------------------------------------------------------------------


def _as_vector(x: Any, name: str) -> FloatArray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise InputError(f"{name} must be a 1-D vector, got shape {arr.shape}")
    return arr


def _paired(x: Any, y: Any) -> tuple[FloatArray, FloatArray]:
    """Both vectors as float64, with every pair that has a NaN on either side dropped."""
    xa, ya = _as_vector(x, "x"), _as_vector(y, "y")
    if xa.shape != ya.shape:
        raise InputError(f"x and y must have the same length, got {xa.shape[0]} and {ya.shape[0]}")
    keep = ~(np.isnan(xa) | np.isnan(ya))
    return xa[keep], ya[keep]


def _defined(x: FloatArray, y: FloatArray, min_pairs: int = _MIN_PAIRS) -> bool:
    return x.size >= min_pairs and np.ptp(x) > 0 and np.ptp(y) > 0


def _pearson(x: FloatArray, y: FloatArray) -> tuple[float, float]:
    from scipy import stats

    res = stats.pearsonr(x, y)
    return float(res.statistic), float(res.pvalue)


def _spearman(x: FloatArray, y: FloatArray) -> tuple[float, float]:
    from scipy import stats

    res = stats.spearmanr(x, y)
    return float(res.statistic), float(res.pvalue)


def _kendall(x: FloatArray, y: FloatArray) -> tuple[float, float]:
    from scipy import stats

    # tau-b: the variant MTME and WMT use by default; it corrects for ties on either side.
    res = stats.kendalltau(x, y, variant="b")
    return float(res.statistic), float(res.pvalue)


#: Registry: method name -> function of two clean (NaN-free, non-constant, >= 3 long) vectors -> (value, p).
CORRELATIONS: dict[str, Callable[[FloatArray, FloatArray], tuple[float, float]]] = {
    "pearson": _pearson,
    "spearman": _spearman,
    "kendall": _kendall,
}


@dataclass(frozen=True)
class Correlation:
    """One correlation of metric scores with human scores: ``level`` (``system``/``segment``), ``method``,
    ``grouping`` (``none``/``item``), ``value``, its ``p_value`` (NaN where none exists, e.g. an average over
    items), the bootstrap interval ``ci_low``/``ci_high`` (NaN without resampling) and ``n`` (systems, pairs or
    items used)."""

    level: str
    method: str
    grouping: str
    value: float
    p_value: float
    ci_low: float
    ci_high: float
    n: int


def _check_choice(key: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ConfigError(key, f"unknown {key} {value!r}", choices=list(choices))


def correlate(x: Any, y: Any, method: str = "pearson") -> tuple[float, float]:
    """Correlation of two vectors and its p-value, by scipy.stats.

    ``method`` is one of :data:`METHODS` (``kendall`` is tau-b). Pairs with a NaN on either side are dropped.
    Fewer than 3 remaining pairs, or a constant vector, give ``(nan, nan)`` without any warning. The p-value is
    scipy's two-sided one (for Pearson: exact t-distribution; Kendall: exact for small untied samples).
    """
    _check_choice("method", method, METHODS)
    xa, ya = _paired(x, y)
    if not _defined(xa, ya):
        return math.nan, math.nan
    with warnings.catch_warnings():
        # Pre-checked above; what is left (e.g. scipy's NearConstantInputWarning) must not leak to callers.
        warnings.simplefilter("ignore")
        return CORRELATIONS[method](xa, ya)


# ---------------------------------------------------------------------------------------------------------------
# Batched correlation values (no p-values): the engine of every bootstrap and permutation test
# ---------------------------------------------------------------------------------------------------------------


def _pearson_batch(x: FloatArray, y: FloatArray, valid: NDArray[np.bool_], min_pairs: int) -> FloatArray:
    """Pearson r along the last axis, only over entries where ``valid``; NaN where undefined.

    The deviations from the mean are scaled by their largest magnitude before they are multiplied (as
    ``scipy.stats.pearsonr``): values around 1e-229 (NLTK's sentence BLEU of segments without matches) have
    products that underflow to 0, which gave +-1 or NaN instead of scipy's r."""
    n = valid.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        xz = np.where(valid, x, 0.0)
        yz = np.where(valid, y, 0.0)
        dx = np.where(valid, x - (xz.sum(axis=-1) / n)[..., None], 0.0)
        dy = np.where(valid, y - (yz.sum(axis=-1) / n)[..., None], 0.0)
        dx = dx / np.abs(dx).max(axis=-1, keepdims=True)
        dy = dy / np.abs(dy).max(axis=-1, keepdims=True)
        r = (dx * dy).sum(axis=-1) / np.sqrt((dx * dx).sum(axis=-1) * (dy * dy).sum(axis=-1))
    const_x = np.where(valid, x, np.inf).min(axis=-1) == np.where(valid, x, -np.inf).max(axis=-1)
    const_y = np.where(valid, y, np.inf).min(axis=-1) == np.where(valid, y, -np.inf).max(axis=-1)
    r = np.clip(r, -1.0, 1.0)
    return np.where((n < min_pairs) | const_x | const_y, np.nan, r)


def _average_ranks(x: FloatArray) -> FloatArray:
    """Ranks 1..n along the last axis, ties sharing their average rank (scipy.stats.rankdata 'average'); NaN
    entries get NaN and do not take a rank. Vectorised over the leading axes (scipy's ``nan_policy='omit'`` loops
    over them one slice at a time)."""
    m = x.shape[-1]
    order = np.argsort(x, axis=-1, kind="stable")  # NaN sort last, so valid entries get ranks 1..n_valid
    xs = np.take_along_axis(x, order, axis=-1)
    pos = np.broadcast_to(np.arange(m), x.shape)
    new_group = np.ones(x.shape, dtype=bool)
    new_group[..., 1:] = xs[..., 1:] != xs[..., :-1]  # NaN != NaN: every NaN is its own group
    last_of_group = np.ones(x.shape, dtype=bool)
    last_of_group[..., :-1] = new_group[..., 1:]
    first = np.maximum.accumulate(np.where(new_group, pos, 0), axis=-1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(last_of_group, pos, m), -1), axis=-1), -1)
    ranks = np.empty(x.shape)
    np.put_along_axis(ranks, order, (first + last) / 2.0 + 1.0, axis=-1)
    return np.where(np.isnan(x), np.nan, ranks)


def _spearman_batch(x: FloatArray, y: FloatArray, valid: NDArray[np.bool_], min_pairs: int) -> FloatArray:
    # Spearman rho = Pearson r of the average ranks of the jointly valid entries, as scipy.stats.spearmanr.
    rx = _average_ranks(np.where(valid, x, np.nan))
    if y.shape != valid.shape and np.all(np.isnan(y) | ~np.isnan(x)):
        # x is missing nothing that y has: y's valid entries are the same in every row, rank them once.
        ry = np.broadcast_to(_average_ranks(y), valid.shape)
    else:
        ry = _average_ranks(np.where(valid, y, np.nan))
    return _pearson_batch(rx, ry, valid, min_pairs)


def _kendall_batch(x: FloatArray, y: FloatArray, valid: NDArray[np.bool_], min_pairs: int) -> FloatArray:
    m = x.shape[-1]
    if m <= _PAIRWISE_MAX:
        # tau-b = sum(sign dx * sign dy) / sqrt(#pairs untied in x * #pairs untied in y), over valid pairs.
        i, j = np.triu_indices(m, 1)
        ok = valid[..., i] & valid[..., j]
        sx = np.where(ok, np.sign(x[..., i] - x[..., j]), 0.0)
        sy = np.where(ok, np.sign(y[..., i] - y[..., j]), 0.0)  # y may be smaller (broadcast): signs once
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = (sx * sy).sum(axis=-1) / np.sqrt(np.count_nonzero(sx, axis=-1) * np.count_nonzero(sy, axis=-1))
        n = valid.sum(axis=-1)
        return np.where(n < min_pairs, np.nan, np.clip(tau, -1.0, 1.0))
    from scipy import stats

    lead = x.shape[:-1]
    y = np.broadcast_to(y, x.shape)
    xs, ys, vs = x.reshape(-1, m), y.reshape(-1, m), valid.reshape(-1, m)
    out = np.full(xs.shape[0], np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for b in range(xs.shape[0]):
            xb, yb = xs[b][vs[b]], ys[b][vs[b]]
            if _defined(xb, yb, min_pairs):
                out[b] = stats.kendalltau(xb, yb, variant="b").statistic
    return out.reshape(lead)


_BATCH: dict[str, Callable[[FloatArray, FloatArray, NDArray[np.bool_], int], FloatArray]] = {
    "pearson": _pearson_batch,
    "spearman": _spearman_batch,
    "kendall": _kendall_batch,
}


def _batch_values(method: str, x: Any, y: Any, min_pairs: int = _MIN_PAIRS) -> FloatArray:
    """Correlation values along the last axis of ``x`` and ``y`` (``y`` broadcastable to ``x``, e.g. the one
    human matrix against many resampled metric matrices), pairs with a NaN on either side dropped."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    valid = ~(np.isnan(x) | np.isnan(y))
    if valid.shape != x.shape:
        x = np.broadcast_to(x, valid.shape)
    return _BATCH[method](x, y, valid, min_pairs)


def _kendall_like_counts(
    metric: FloatArray, human: FloatArray, threshold: float
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Concordant and discordant system pairs along the last axis (the systems of one segment).

    WMT17-20 DARR "Kendall-like" tau (Ma et al. 2018/2019; MTME ``stats.KendallLike``): a pair of systems counts
    only if their human scores differ by more than ``threshold``; it is concordant when the metric orders them the
    same way and discordant otherwise, metric ties included (WMT penalises ties). ``human`` may have fewer
    leading axes than ``metric`` (broadcast); a NaN on either side removes the pair.
    """
    if not threshold >= 0:
        raise ConfigError("threshold", f"must be a non-negative human-score difference, got {threshold}")
    m = metric.shape[-1]
    i, j = np.triu_indices(m, 1)
    hd = human[..., i] - human[..., j]
    with np.errstate(invalid="ignore"):
        hs = np.where(np.abs(hd) > threshold, np.sign(hd), 0.0)  # NaN compares False: not counted
    md = metric[..., i] - metric[..., j]
    with np.errstate(invalid="ignore"):
        con = np.count_nonzero(md * hs > 0, axis=-1)  # NaN metric difference is never concordant
    if np.isnan(metric).any():
        counted = np.count_nonzero((hs != 0) & ~np.isnan(md), axis=-1)
    else:
        counted = np.broadcast_to(np.count_nonzero(hs, axis=-1), con.shape)
    return con, counted - con


def _nanmean_last(v: FloatArray) -> FloatArray:
    ok = ~np.isnan(v)
    cnt = ok.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, np.where(ok, v, 0.0).sum(axis=-1) / cnt, np.nan)


def _matrix_values(
    method: str, grouping: str, metric: FloatArray, human: FloatArray, threshold: float
) -> FloatArray:
    """Segment-level correlation of ``metric[..., S, n]`` with ``human[..., S, n]`` (broadcastable, e.g. one
    ``[S, n]`` human matrix for many metric matrices), one value per leading index. A NaN in either matrix drops
    that (system, segment) entry."""
    metric = np.asarray(metric, dtype=np.float64)
    human = np.asarray(human, dtype=np.float64)
    if method == "kendall_like":
        # Pairs are always formed among the systems of one segment (WMT's definition), so swap to [..., n, S].
        con, dis = _kendall_like_counts(np.swapaxes(metric, -1, -2), np.swapaxes(human, -1, -2), threshold)
        with np.errstate(invalid="ignore", divide="ignore"):
            if grouping == "none":
                c, d = con.sum(axis=-1), dis.sum(axis=-1)
                return np.where(c + d > 0, (c - d) / (c + d), np.nan)
            per_item = np.where(con + dis > 0, (con - dis) / (con + dis), np.nan)
        return _nanmean_last(per_item)
    if grouping == "none":
        flat_m = metric.reshape(*metric.shape[:-2], -1)
        flat_h = human.reshape(*human.shape[:-2], -1)
        return _batch_values(method, flat_m, flat_h, _MIN_PAIRS)
    per_item = _batch_values(method, np.swapaxes(metric, -1, -2), np.swapaxes(human, -1, -2), _MIN_PAIRS_ITEM)
    return _nanmean_last(per_item)


def _interval(values: FloatArray, alpha: float) -> tuple[float, float]:
    """Percentile interval at level ``1 - alpha`` of the finite resampled values."""
    return percentile_interval(values, 1.0 - alpha)


def _checked(n_samples: int, seed: int | None, alpha: float) -> tuple[int, int | None]:
    check_level(alpha, "alpha")
    return check_n_samples(n_samples), check_seed(seed)


def _chunks(total: int, per_item: int) -> list[slice]:
    step = max(1, _CHUNK_ELEMENTS // max(1, per_item))
    return [slice(s, min(total, s + step)) for s in range(0, total, step)]


# ---------------------------------------------------------------------------------------------------------------
# System level
# ---------------------------------------------------------------------------------------------------------------


def _check_matrix(a: Any, name: str, shape: tuple[int, ...] | None = None) -> FloatArray:
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim != 2:
        raise InputError(f"{name} must have shape [n_systems, n_segments], got {arr.shape}")
    if shape is not None and arr.shape != shape:
        raise InputError(f"{name} must have shape {shape} (n_systems, n_segments), got {arr.shape}")
    return arr


def _human_means(human_seg: FloatArray) -> FloatArray:
    """Per-system mean over the segments that have a human score (NaN for a system without any)."""
    ok = ~np.isnan(human_seg)
    cnt = ok.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, np.where(ok, human_seg, 0.0).sum(axis=1) / cnt, np.nan)


def system_correlation(bleu: Any, human: Any, method: str = "pearson") -> tuple[float, float]:
    """System-level correlation of corpus BLEU ``bleu[S]`` with system human scores ``human[S]``: ``(value, p)``.

    Systems with a NaN on either side are left out; see :func:`correlate`.
    """
    return correlate(bleu, human, method)


def _system_inputs(
    stats: Any, human_seg: Any | None, human_sys: Any | None
) -> tuple[FloatArray, FloatArray | None, FloatArray]:
    st = check_systems(stats)
    s, n, _ = st.shape
    hs = None if human_seg is None else _check_matrix(human_seg, "human_seg", (s, n))
    if human_sys is not None:
        point = _as_vector(human_sys, "human_sys")
        if point.shape[0] != s:
            raise InputError(f"human_sys must have one score per system ({s}), got {point.shape[0]}")
    elif hs is not None:
        point = _human_means(hs)
    else:
        raise InputError("system-level correlation needs human_seg (segment scores) or human_sys (system scores)")
    return st, hs, point


def _system_resamples(
    stats: FloatArray,
    human_seg: FloatArray | None,
    human_sys: FloatArray,
    score_fn: ScoreFn,
    counts: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """Corpus BLEU ``[B, S]`` and system human scores ``[B, S]`` of every bootstrap resample ``counts[B, n]``."""
    # summed[s, k, b] = sum_i stats[s, i, k] * counts[b, i]: exact for integer-valued statistics.
    summed = np.tensordot(stats, counts, axes=([1], [1]))  # [S, K, B]
    bleu = np.asarray(score_fn(np.moveaxis(summed, 1, 2)), dtype=np.float64).T  # [B, S]
    if human_seg is None:
        human = np.broadcast_to(human_sys, bleu.shape)
    else:
        ok = ~np.isnan(human_seg)
        with np.errstate(invalid="ignore", divide="ignore"):
            human = (counts @ np.where(ok, human_seg, 0.0).T) / (counts @ ok.T.astype(np.float64))
    return bleu, human


def bootstrap_system_correlation(
    stats: Any,
    human_seg: Any | None,
    score_fn: ScoreFn,
    method: str = "pearson",
    n_samples: int = 1000,
    seed: int = 12345,
    alpha: float = 0.05,
    *,
    human_sys: Any | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap CI ``(low, high)`` at level ``1 - alpha`` of the system-level correlation.

    Segments are resampled with replacement, the same index matrix for every system; each resample gets corpus
    BLEU recomputed from its summed statistics and human system scores as the nanmean of ``human_seg`` over the
    resampled segments (or, when ``human_seg`` is None, the fixed ``human_sys``: metric-only uncertainty).
    Resamples whose correlation is undefined are dropped; all undefined gives ``(nan, nan)``.
    """
    _check_choice("method", method, METHODS)
    n_samples, seed = _checked(n_samples, seed, alpha)
    st, hs, point = _system_inputs(stats, human_seg, human_sys)
    counts = seeded_counts(seed, st.shape[1], n_samples)
    bleu_b, human_b = _system_resamples(st, hs, point, score_fn, counts)
    return _interval(_batch_values(method, bleu_b, human_b), alpha)


def system_level(
    stats: Any,
    human_seg: Any | None,
    score_fn: ScoreFn,
    *,
    methods: Sequence[str] = METHODS,
    system_mask: Any | None = None,
    human_sys: Any | None = None,
    n_samples: int = 1000,
    seed: int = 12345,
    alpha: float = 0.05,
) -> list[Correlation]:
    """Rows of the ``correlations`` table at system level, one per method.

    ``system_mask[S]`` (bool) selects the systems that take part (e.g. ``~is_human`` for ``include_human=False``).
    The human system score is ``human_sys`` when given (e.g. the dataset's ``human/sys.tsv``), else the nanmean of
    ``human_seg`` per system. Each row: ``level='system'``, ``method``, ``grouping='none'``, ``value``,
    ``p_value``, ``ci_low``, ``ci_high`` (bootstrap over segments, see :func:`bootstrap_system_correlation`: with
    ``human_seg`` the human system scores are resampled too, with only ``human_sys`` they stay fixed; NaN when
    ``n_samples == 0``), ``n`` (systems with both scores). All methods share one index matrix. The caller adds
    ``dataset``, ``refset``, ``variant``, ``human_score``, ``include_human``.
    """
    return system_level_subsets(stats, human_seg, score_fn, [system_mask], methods=methods, human_sys=human_sys,
                                n_samples=n_samples, seed=seed, alpha=alpha)[0]


def system_level_subsets(
    stats: Any,
    human_seg: Any | None,
    score_fn: ScoreFn,
    system_masks: Sequence[Any | None],
    *,
    methods: Sequence[str] = METHODS,
    human_sys: Any | None = None,
    n_samples: int = 1000,
    seed: int = 12345,
    alpha: float = 0.05,
) -> list[list[Correlation]]:
    """:func:`system_level` for several subsets of the systems (a mask each, None for all), e.g. with and without
    the human translations: one resampling of every system serves all subsets (a system's resampled BLEU and human
    score do not depend on the other systems), so each subset gets the rows :func:`system_level` gives it."""
    for m in methods:
        _check_choice("method", m, METHODS)
    check_level(alpha, "alpha")
    st, hs, point = _system_inputs(stats, human_seg, human_sys)
    masks = []
    for system_mask in system_masks:
        mask = np.ones(st.shape[0], dtype=bool) if system_mask is None else np.asarray(system_mask, dtype=bool)
        if mask.shape != (st.shape[0],):
            raise InputError(f"system_mask must have one entry per system ({st.shape[0]}), got {mask.shape}")
        masks.append(mask)
    bleu_all = np.asarray(score_fn(st.sum(axis=1)), dtype=np.float64)
    resampled = None
    if n_samples:
        n_samples, seed = _checked(n_samples, seed, alpha)
        counts = seeded_counts(seed, st.shape[1], n_samples)
        resampled = _system_resamples(st, hs, point, score_fn, counts)
    out = []
    for mask in masks:
        bleu, human = bleu_all[mask], point[mask]
        n_valid = int((~(np.isnan(bleu) | np.isnan(human))).sum())
        rows = []
        for m in methods:
            value, p = correlate(bleu, human, m)
            lo, hi = ((math.nan, math.nan) if resampled is None else
                      _interval(_batch_values(m, resampled[0][:, mask], resampled[1][:, mask]), alpha))
            rows.append(Correlation("system", m, "none", value, p, lo, hi, n_valid))
        out.append(rows)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Segment level
# ---------------------------------------------------------------------------------------------------------------


def _segment_inputs(metric: Any, human: Any) -> tuple[FloatArray, FloatArray]:
    mt = _check_matrix(metric, "metric")
    hm = _check_matrix(human, "human", mt.shape)
    return mt, hm


def _segment_point(
    metric: FloatArray, human: FloatArray, method: str, grouping: str, threshold: float
) -> tuple[float, float, int]:
    """(value, p_value, n) of one segment-level correlation; see :func:`segment_correlation`."""
    valid = ~(np.isnan(metric) | np.isnan(human))
    if grouping == "none":
        if method == "kendall_like":
            value = float(_matrix_values(method, grouping, metric, human, threshold))
            return value, math.nan, int(valid.sum())
        value, p = correlate(metric.ravel(), human.ravel(), method)
        return value, p, int(valid.sum())
    if method == "kendall_like":
        con, dis = _kendall_like_counts(metric.T, human.T, threshold)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_item = np.where(con + dis > 0, (con - dis) / (con + dis), np.nan)
    else:
        per_item = _batch_values(method, metric.T, human.T, _MIN_PAIRS_ITEM)
    used = int((~np.isnan(per_item)).sum())
    return (float(np.nanmean(per_item)) if used else math.nan), math.nan, used


def segment_correlation(
    metric: Any,
    human: Any,
    method: str = "pearson",
    grouping: str = "none",
    *,
    threshold: float = 0.0,
) -> tuple[float, float]:
    """Segment-level correlation of ``metric[S, n]`` with ``human[S, n]``: ``(value, p_value)``.

    ``grouping``:

    - ``'none'``: one correlation over all (system, segment) pairs pooled (MTME ``average_by='none'``); the
      p-value is scipy's. For ``kendall_like`` the system *pairs* are still formed within each segment only (how
      WMT defines it: comparing outputs of different source sentences is meaningless), concordant/discordant
      counts are pooled over segments, and the p-value is NaN. This equals MTME's ``KendallLike`` with its
      default item averaging (which weights items by their number of pairs).
    - ``'item'``: correlate across systems within each segment, then the plain mean of the per-segment values
      (MTME ``average_by='item'``, macro average); segments with fewer than 2 valid pairs or an undefined value
      (constant column, no human-distinguishable pair) are skipped. p-value NaN (an average has none).

    ``method`` is one of :data:`SEGMENT_METHODS`; ``kendall_like`` counts a pair only when the human scores differ
    by strictly more than ``threshold`` (default 0: any difference; human ties never count). Note MTME/WMT raw-DA
    uses ``abs(diff) >= 25``; for integer-valued scores that is ``threshold=24``.
    """
    _check_choice("method", method, SEGMENT_METHODS)
    _check_choice("grouping", grouping, GROUPINGS)
    mt, hm = _segment_inputs(metric, human)
    value, p, _ = _segment_point(mt, hm, method, grouping, threshold)
    return value, p


def _segment_resampled_values(
    metric: FloatArray,
    human: FloatArray,
    method: str,
    grouping: str,
    threshold: float,
    counts: FloatArray,
) -> FloatArray:
    """Segment-level correlation on every segment resample ``counts[B, n]`` -> ``[B]``."""

    if grouping == "item" or method == "kendall_like":
        # Per-segment quantities do not change under resampling: each resample is a count-weighted sum of them
        # (exactly the value computed on the resample with its repeated columns).
        if method == "kendall_like":
            con, dis = _kendall_like_counts(metric.T, human.T, threshold)
            if grouping == "none":
                c, d = counts @ con, counts @ dis
                with np.errstate(invalid="ignore", divide="ignore"):
                    return np.where(c + d > 0, (c - d) / (c + d), np.nan)
            with np.errstate(invalid="ignore", divide="ignore"):
                per_item = np.where(con + dis > 0, (con - dis) / (con + dis), np.nan)
        else:
            per_item = _batch_values(method, metric.T, human.T, _MIN_PAIRS_ITEM)
        ok = ~np.isnan(per_item)
        used = counts @ ok.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(used > 0, (counts @ np.where(ok, per_item, 0.0)) / used, np.nan)
    return _pooled_resampled(method, metric, human, counts)


def _pooled_resampled(method: str, metric: FloatArray, human: FloatArray, counts: FloatArray) -> FloatArray:
    """Pooled (``grouping='none'``) Pearson / Spearman / Kendall tau-b on every segment resample ``counts[B, n]``,
    from weights: an item (a valid system x segment pair) occurs in resample ``b`` as often as its segment does,
    ``counts[b, segment]``. Weighted moments give Pearson; weighted average ranks (the rank a value has in the
    resample with its repeated items) give Spearman; a compiled weighted tau-b gives Kendall. The same values as
    recomputing scipy's statistics on each resample's repeated arrays, without building them."""
    valid = ~(np.isnan(metric) | np.isnan(human))
    seg = np.nonzero(valid)[1]
    x, y = metric[valid], human[valid]
    out = np.empty(counts.shape[0])
    if x.size < _MIN_PAIRS:
        out[:] = np.nan
        return out
    if method == "pearson":
        return _pooled_pearson(x, y, seg, counts)
    for sl in _chunks(counts.shape[0], x.size):
        if method == "kendall":
            out[sl] = _weighted_kendall(x, y, counts[sl], seg)
            continue
        w = np.take(counts[sl], seg, axis=1)  # [b, items], C order
        if method == "spearman":
            out[sl] = _weighted_pearson(_weighted_ranks(x, w), _weighted_ranks(y, w), w)
        else:
            out[sl] = _weighted_pearson(np.broadcast_to(x, w.shape), np.broadcast_to(y, w.shape), w)
    return out


def _weighted_pearson(x: FloatArray, y: FloatArray, w: FloatArray) -> FloatArray:
    """Pearson r per row of weights ``w[b, k]`` over items ``x[b, k]``, ``y[b, k]`` (NaN where undefined)."""
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = x - ((w * x).sum(axis=1) / total)[:, None]
        dy = y - ((w * y).sum(axis=1) / total)[:, None]
        sxy, sxx, syy = (w * dx * dy).sum(axis=1), (w * dx * dx).sum(axis=1), (w * dy * dy).sum(axis=1)
        r = np.clip(sxy / np.sqrt(sxx * syy), -1.0, 1.0)
    constant = (sxx <= 0) | (syy <= 0) | (np.count_nonzero(w, axis=1) < 2) | (total < _MIN_PAIRS)
    return np.where(constant, np.nan, r)


def _pooled_pearson(x: FloatArray, y: FloatArray, seg: NDArray[np.intp], counts: FloatArray) -> FloatArray:
    """Pooled Pearson r on every segment resample ``counts[B, n]`` of the items ``x``, ``y`` (item ``k`` belongs to
    segment ``seg[k]``): an item's weight in a resample is its segment's count, so every weighted sum Pearson needs
    is ``counts @ (that sum over each segment's items)``: one matrix product, no ``[B, items]`` arrays
    (:func:`pearson_from_sums`). Fewer than 2 items or a total weight under the minimum number of pairs give NaN,
    as in :func:`_weighted_pearson`."""
    n = counts.shape[1]
    x, y = x - x.mean(), y - y.mean()
    columns = (None, x, y, x * x, y * y, x * y)
    per_segment = np.stack([np.bincount(seg, weights=c, minlength=n) for c in columns], axis=1)  # [n, 6]
    total, sx, sy, sxx, syy, sxy = (counts @ per_segment).T
    items = (counts > 0) @ per_segment[:, 0]
    r = pearson_from_sums(total, sx, sy, sxx, syy, sxy)
    return np.where((items < 2) | (total < _MIN_PAIRS), np.nan, r)


def pearson_from_sums(n: Any, sx: Any, sy: Any, sxx: Any, syy: Any, sxy: Any) -> FloatArray:
    """Pearson r from (weighted) sums: count ``n``, ``sum x``, ``sum y``, ``sum x^2``, ``sum y^2``, ``sum xy``
    (arrays broadcast). Centre x and y before summing (Pearson ignores shifts), so the variances are not
    differences of large sums; a variance below 1e-12 of its sum of squares is a constant side: NaN."""
    with np.errstate(invalid="ignore", divide="ignore"):
        vx, vy = sxx - sx * sx / n, syy - sy * sy / n
        r = np.clip((sxy - sx * sy / n) / np.sqrt(vx * vy), -1.0, 1.0)
    return np.where((vx <= 1e-12 * sxx) | (vy <= 1e-12 * syy), np.nan, r)


def _weighted_ranks(v: FloatArray, w: FloatArray) -> FloatArray:
    """Average ranks (scipy's ``rankdata``) of every item in every resample, ``[b, k]``: the weight of the
    smaller values plus (the weight of the equal ones + 1) / 2."""
    order = np.argsort(v, kind="stable")
    vs = v[order]
    first = np.r_[True, vs[1:] != vs[:-1]]
    group = np.cumsum(first) - 1  # group of each sorted item
    starts = np.flatnonzero(first)
    g_weight = np.add.reduceat(w[:, order], starts, axis=1)  # [b, groups]
    before = np.cumsum(g_weight, axis=1) - g_weight
    ranks_g = before + (g_weight + 1.0) / 2.0
    out = np.empty(w.shape)
    out[:, order] = ranks_g[:, group]
    return out


def _weighted_kendall(x: FloatArray, y: FloatArray, w: FloatArray,
                      columns: NDArray[np.intp] | None = None) -> FloatArray:
    """Kendall tau-b of the items ``x``, ``y`` under every row of weights ``w[b, k]`` (integer counts), or, with
    ``columns``, of weights ``w[b, columns[k]]`` (item ``k`` weighs as often as its segment ``columns[k]`` occurs:
    the items' weights are gathered once, in the order the kernel reads them). Compiled (:data:`KENDALL`, the
    resamples split between the cores), or scipy on each resample's repeated items when the compiled kernel
    cannot be had (the same values, far slower)."""
    order = np.lexsort((y, x))  # by x, then y
    xs, ys = x[order], y[order]
    # np.take along axis 1 writes C order; w[:, index] would be Fortran order, and copied again for the kernel
    weights = np.ascontiguousarray(np.take(w, order if columns is None else columns[order], axis=1), dtype=np.float64)
    kern = native.kernels(KENDALL)
    if kern is None:
        return np.array([_scipy_tau_b(np.repeat(xs, row.astype(np.int64)), np.repeat(ys, row.astype(np.int64)))
                         for row in weights])
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1], True]).astype(np.int64)
    y_rank = np.unique(ys, return_inverse=True)[1].astype(np.int64)
    return np.clip(tau_b(kern, y_rank, starts, weights), -1.0, 1.0)


def _scipy_tau_b(x: FloatArray, y: FloatArray) -> float:
    from scipy.stats import kendalltau

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(kendalltau(x, y).statistic) if x.size >= 2 else math.nan


def tau_b(kern: Any, y_rank: NDArray[np.int64], starts: NDArray[np.int64], weights: FloatArray,
          threads: int | None = None) -> FloatArray:
    """The compiled ``tau_b`` of every row of ``weights`` (C-contiguous float64), in ``threads`` threads (default:
    one per core, at most one per 8 rows); the kernel releases the GIL, so they run at once."""
    y_rank, starts = (np.ascontiguousarray(a, dtype=np.int64) for a in (y_rank, starts))
    weights = np.ascontiguousarray(weights, dtype=np.float64)  # the kernel reads raw memory: these types, dense
    n_b, n = weights.shape
    n_y = int(y_rank.max()) + 1 if y_rank.size else 0
    out = np.full(n_b, np.nan)

    def run(b0: int, b1: int) -> None:
        params = np.array([n_y, starts.size, n, b0, b1], dtype=np.int64)
        tree, y_sum = np.zeros(n_y + 1), np.zeros(max(n_y, 1))
        kern.tau_b(y_rank.ctypes.data, starts.ctypes.data, weights.ctypes.data, params.ctypes.data,
                   out.ctypes.data, tree.ctypes.data, y_sum.ctypes.data)

    native.in_threads(run, n_b, threads or max(1, min(native.cpus(), n_b // 8)))
    return out


def _kendall_smoke_test(kern: Any) -> None:
    """Three items in x order with y ranks 0, 2, 1 (two concordant pairs, one discordant), once each and with
    the last one twice: tau-b 1/3 and 1/5."""
    weights = np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 2.0]])
    got = tau_b(kern, np.array([0, 2, 1], dtype=np.int64), np.arange(4, dtype=np.int64), weights, threads=1)
    if not (abs(got[0] - 1 / 3) < 1e-12 and abs(got[1] - 1 / 5) < 1e-12):
        raise RuntimeError(f"the loaded Kendall kernel does not compute what it should ({got})")


#: The compiled Kendall tau-b of resamples (``tau_b`` of ``harness/_kernels.c``).
KENDALL = native.KernelSet(name="kendall", what="Kendall kernel", functions=("tau_b",),
                           smoke_test=_kendall_smoke_test)


def bootstrap_segment_correlation(
    metric: Any,
    human: Any,
    method: str = "pearson",
    grouping: str = "none",
    n_samples: int = 1000,
    seed: int = 12345,
    alpha: float = 0.05,
    *,
    threshold: float = 0.0,
) -> tuple[float, float]:
    """Percentile bootstrap CI ``(low, high)`` of :func:`segment_correlation`, resampling segments (columns)."""
    _check_choice("method", method, SEGMENT_METHODS)
    _check_choice("grouping", grouping, GROUPINGS)
    n_samples, seed = _checked(n_samples, seed, alpha)
    mt, hm = _segment_inputs(metric, human)
    counts = seeded_counts(seed, mt.shape[1], n_samples)
    return _interval(_segment_resampled_values(mt, hm, method, grouping, threshold, counts), alpha)


def segment_level(
    metric: Any,
    human: Any,
    *,
    methods: Sequence[str] = ("pearson", "kendall", "kendall_like"),
    groupings: Sequence[str] = GROUPINGS,
    system_mask: Any | None = None,
    threshold: float = 0.0,
    n_samples: int = 1000,
    seed: int = 12345,
    alpha: float = 0.05,
) -> list[Correlation]:
    """Rows of the ``correlations`` table at segment level, one per method x grouping.

    Row keys as :func:`system_level` with ``level='segment'``; ``n`` is the number of valid (system, segment)
    pairs for ``grouping='none'`` and the number of segments averaged for ``'item'``. One index matrix (one
    ``seed``) serves every method and grouping.
    """
    for m in methods:
        _check_choice("method", m, SEGMENT_METHODS)
    for g in groupings:
        _check_choice("grouping", g, GROUPINGS)
    check_level(alpha, "alpha")
    mt, hm = _segment_inputs(metric, human)
    if system_mask is not None:
        mask = np.asarray(system_mask, dtype=bool)
        if mask.shape != (mt.shape[0],):
            raise InputError(f"system_mask must have one entry per system ({mt.shape[0]}), got {mask.shape}")
        mt, hm = mt[mask], hm[mask]
    counts = None
    if n_samples:
        n_samples, seed = _checked(n_samples, seed, alpha)
        counts = seeded_counts(seed, mt.shape[1], n_samples)
    rows = []
    for g in groupings:
        for m in methods:
            value, p, n = _segment_point(mt, hm, m, g, threshold)
            lo, hi = (math.nan, math.nan)
            if counts is not None:
                lo, hi = _interval(_segment_resampled_values(mt, hm, m, g, threshold, counts), alpha)
            rows.append(Correlation("segment", m, g, value, p, lo, hi, n))
    return rows


# ---------------------------------------------------------------------------------------------------------------
# Comparing two metrics' correlations
# ---------------------------------------------------------------------------------------------------------------


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


def compare_correlations(
    metric_a: Any,
    metric_b: Any,
    human: Any,
    *,
    method: str = "pearson",
    grouping: str = "none",
    test: str = "perm_both",
    n_samples: int = 1000,
    seed: int = 12345,
    alpha: float = 0.05,
    threshold: float = 0.0,
    names: tuple[str, str] = ("a", "b"),
) -> Comparison:
    """Compare two metrics' correlations with the same human scores (``names`` label them in the result).

    Inputs are score matrices ``[S, n]`` (segment level, e.g. sentence BLEU of two variants) or vectors ``[S]``
    (system-level scores; then the items are systems and only ``perm_both`` is possible: for a paired bootstrap
    over segments of corpus BLEU use :func:`compare_system_correlations`). Entries with a NaN in any of the three
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
    _check_choice("test", test, COMPARISON_TESTS)
    n_samples, seed = _checked(n_samples, seed, alpha)
    a = np.asarray(metric_a, dtype=np.float64)
    if a.ndim == 1:
        if test == "paired_bootstrap":
            raise ConfigError(
                "test", "paired_bootstrap needs segment matrices [S, n]; for system-level corpus BLEU use "
                "compare_system_correlations", choices=["perm_both"])
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
        return Comparison(test, names[0], names[1], va, vb, vb - va, math.nan, p, lo, hi, used, seed)

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
    return Comparison(test, names[0], names[1], va, vb, delta, math.nan, p, math.nan, math.nan, int(n_samples),
                      seed)


def compare_system_correlations(
    stats_a: Any,
    score_fn_a: ScoreFn,
    stats_b: Any,
    score_fn_b: ScoreFn,
    human_seg: Any | None,
    *,
    method: str = "pearson",
    human_sys: Any | None = None,
    n_samples: int = 1000,
    seed: int = 12345,
    alpha: float = 0.05,
    names: tuple[str, str] = ("a", "b"),
) -> Comparison:
    """Paired bootstrap over segments for two BLEU variants' *system-level* correlations.

    ``stats_a[S, n, Ka]`` / ``stats_b[S, n, Kb]`` (K may differ, e.g. other max order) with their score functions;
    both share every resample (and hence the resampled human system scores, as in
    :func:`bootstrap_system_correlation`). ``delta = value_b - value_a``, p-value two-sided with +1 smoothing
    (:func:`_bootstrap_p`), CI = percentile interval of the resampled deltas. ``test='paired_bootstrap'``.
    """
    _check_choice("method", method, METHODS)
    n_samples, seed = _checked(n_samples, seed, alpha)
    sa, hs, point = _system_inputs(stats_a, human_seg, human_sys)
    sb = check_systems(stats_b, "stats_b")
    if sb.shape[:2] != sa.shape[:2]:
        raise InputError(f"stats_b must cover the same systems and segments {sa.shape[:2]}, got {sb.shape[:2]}")
    va, _ = correlate(np.asarray(score_fn_a(sa.sum(axis=1)), dtype=np.float64), point, method)
    vb, _ = correlate(np.asarray(score_fn_b(sb.sum(axis=1)), dtype=np.float64), point, method)
    counts = seeded_counts(seed, sa.shape[1], n_samples)
    ra = _batch_values(method, *_system_resamples(sa, hs, point, score_fn_a, counts))
    rb = _batch_values(method, *_system_resamples(sb, hs, point, score_fn_b, counts))
    diffs = rb - ra
    p, used = _bootstrap_p(diffs, vb - va)
    lo, hi = _interval(diffs, alpha)
    return Comparison("paired_bootstrap", names[0], names[1], va, vb, vb - va, math.nan, p, lo, hi, used, seed)


# ---------------------------------------------------------------------------------------------------------------
# Ranking agreement ("1 vs all references keep the ranking", the paper's section 4.2)
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    """How two scorings rank the same systems: ``kendall_tau`` (tau-b) and its ``p_value`` (scipy; NaN if
    undefined), ``identical_order`` (every pair ordered the same way by both, ties included), ``n_discordant``
    (pairs ordered strictly oppositely), ``n_pairs`` and ``n`` (systems compared)."""

    kendall_tau: float
    p_value: float
    identical_order: bool
    n_discordant: int
    n_pairs: int
    n: int


def ranking_agreement(scores_a: Any, scores_b: Any) -> Agreement:
    """How far two scorings of the same systems rank them alike (systems with a NaN in either are left out)."""
    xa, ya = _paired(scores_a, scores_b)
    i, j = np.triu_indices(xa.size, 1)
    sx, sy = np.sign(xa[i] - xa[j]), np.sign(ya[i] - ya[j])
    tau, p = correlate(xa, ya, "kendall") if xa.size >= 2 else (math.nan, math.nan)
    if xa.size == 2 and math.isnan(tau) and sx[0] != 0 and sy[0] != 0:
        tau = float(sx[0] * sy[0])  # two systems: tau is +-1, only scipy's p-value is undefined
    return Agreement(tau, p, bool(np.all(sx == sy)), int((sx * sy < 0).sum()), int(i.size), int(xa.size))
