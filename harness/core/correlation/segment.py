"""Segment level: sentence BLEU against segment scores, pooled (``none``) or grouped by item, with bootstrap
intervals (resampled correlations from weighted counts: pooled Pearson from sums, Kendall from the compiled kernel)."""

from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from ... import native
from ...errors import InputError
from ..resampling import check_level, seeded_counts
from .batched import _CHUNK_ELEMENTS, _batch_values, _checked, _chunks, _interval, _kendall_like_counts, _matrix_values
from .vectors import (
    _MIN_PAIRS,
    _MIN_PAIRS_ITEM,
    GROUPINGS,
    SEGMENT_METHODS,
    Correlation,
    FloatArray,
    _check_choice,
    _check_matrix,
    correlate,
)


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
    if method == "kendall":
        return _weighted_kendall(x, y, counts, seg)
    for sl in _chunks(counts.shape[0], x.size):
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
    the items' weights are gathered in the order and layout the kernel reads them, a chunk of resamples at a time;
    the items are sorted once for all of them). Compiled (:data:`KENDALL`, the resamples split between the cores;
    the counts checked first, :func:`_check_counts`), or scipy on each resample's repeated items when the compiled
    kernel cannot be had (the same values, far slower)."""
    order = np.lexsort((y, x))  # by x, then y
    xs, ys = x[order], y[order]
    index = order if columns is None else columns[order]
    kern = native.kernels(KENDALL)
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1], True]).astype(np.int64)
    y_rank = np.unique(ys, return_inverse=True)[1].astype(np.int64)
    out = np.empty(w.shape[0])
    if kern is not None:
        _check_counts(w, None if columns is None else np.bincount(columns, minlength=w.shape[1]))
    step = TAU_LANES * max(1, _CHUNK_ELEMENTS // max(1, index.size * TAU_LANES))  # whole blocks of resamples
    for b0 in range(0, w.shape[0], step):
        chunk = w[b0:b0 + step]
        if kern is None:
            reps = np.take(chunk, index, axis=1).astype(np.int64)
            out[b0:b0 + step] = [_scipy_tau_b(np.repeat(xs, row), np.repeat(ys, row)) for row in reps]
        else:
            out[b0:b0 + len(chunk)] = np.clip(_tau_b_blocks(kern, y_rank, starts, _blocked(chunk, index)),
                                             -1.0, 1.0)[:len(chunk)]
    return out


def _scipy_tau_b(x: FloatArray, y: FloatArray) -> float:
    from scipy.stats import kendalltau

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(kendalltau(x, y).statistic) if x.size >= 2 else math.nan


#: Resamples the Kendall kernel computes side by side (``TAU_LANES`` of ``harness/_kernels.c``).
TAU_LANES = 16
#: The largest total weight of a resample the kernel takes: its sums are exact 32-bit integers.
MAX_TOTAL_WEIGHT = 2**31 - 1


def _check_counts(w: FloatArray, multiplicity: NDArray[np.intp] | None = None) -> None:
    """Raise ``ValueError`` unless every row of ``w`` is non-negative integer counts whose total (item ``k`` counted
    ``multiplicity[k]`` times: the items gathered from it) is at most :data:`MAX_TOTAL_WEIGHT` (the compiled
    ``tau_b`` sums them as 32-bit integers)."""
    w = np.asarray(w, dtype=np.float64)
    if w.size == 0:
        return
    if not (w.min() >= 0 and (np.floor(w) == w).all()):  # NaN fails here, infinity at the total
        raise ValueError("the Kendall kernel's weights must be counts: non-negative integers")
    totals = w.sum(axis=1) if multiplicity is None else w @ multiplicity.astype(np.float64)
    if totals.max() > MAX_TOTAL_WEIGHT:
        raise ValueError(f"a resample's total weight ({totals.max():.0f}) exceeds the Kendall kernel's "
                         f"{MAX_TOTAL_WEIGHT} (its sums are 32-bit integers)")


def _blocked(w: FloatArray, index: NDArray[np.intp] | None = None) -> NDArray[np.int32]:
    """Counts ``w[b, k]`` (or ``w[b, index[k]]``) in the kernel's layout: ``[block, item, lane]`` as int32, resample
    ``b`` in block ``b // TAU_LANES``, lane ``b % TAU_LANES``; the last block padded with zero weights. The gather
    and the transposition are one copy."""
    n_b = w.shape[0]
    padded = -(-n_b // TAU_LANES) * TAU_LANES
    lanes = np.zeros((padded, w.shape[1]), dtype=np.int32)
    lanes[:n_b] = w
    lanes = lanes.reshape(padded // TAU_LANES, TAU_LANES, w.shape[1]).transpose(0, 2, 1)  # [block, column, lane]
    if index is None:
        return np.ascontiguousarray(lanes)
    return np.take(lanes, index, axis=1)  # C order: [block, item, lane]


def tau_b(kern: Any, y_rank: NDArray[np.int64], starts: NDArray[np.int64], weights: FloatArray,
          threads: int | None = None) -> FloatArray:
    """The compiled ``tau_b`` of every row of ``weights`` (a resample's count of each item, the items sorted by x;
    ``y_rank`` their dense y ranks, ``starts`` where each group tied in x starts, and their end), in ``threads``
    threads (default: one per core, at most one per block of resamples); the kernel releases the GIL, so they run
    at once. ``ValueError`` unless the weights are counts with totals of at most :data:`MAX_TOTAL_WEIGHT`."""
    weights = np.asarray(weights, dtype=np.float64)
    _check_counts(weights)
    return _tau_b_blocks(kern, y_rank, starts, _blocked(weights), threads)[:weights.shape[0]]


def _tau_b_blocks(kern: Any, y_rank: NDArray[np.int64], starts: NDArray[np.int64], blocked: NDArray[np.int32],
                  threads: int | None = None) -> FloatArray:
    """:func:`tau_b` of counts already in the kernel's layout (:func:`_blocked`): one value per lane of every
    block (the padding's NaN)."""
    y_rank, starts = (np.ascontiguousarray(a, dtype=np.int64) for a in (y_rank, starts))
    blocked = np.ascontiguousarray(blocked, dtype=np.int32)  # the kernel reads raw memory: these types, dense
    n_blocks, n, _ = blocked.shape
    n_y = int(y_rank.max()) + 1 if y_rank.size else 0
    out = np.full(n_blocks * TAU_LANES, np.nan)

    def run(k0: int, k1: int) -> None:
        params = np.array([n_y, starts.size, n, k0, k1], dtype=np.int64)
        tree = native.aligned_empty(((n_y + 1) * TAU_LANES,), np.int32)  # one cache line a node
        y_before = native.aligned_empty((max(n_y, 1) * TAU_LANES,), np.int32)
        kern.tau_b(y_rank.ctypes.data, starts.ctypes.data, blocked.ctypes.data, params.ctypes.data,
                   out.ctypes.data, tree.ctypes.data, y_before.ctypes.data)

    native.in_threads(run, n_blocks, threads or max(1, min(native.cpus(), n_blocks)))
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
    seed: int | None = 12345,
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
    seed: int | None = 12345,
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
