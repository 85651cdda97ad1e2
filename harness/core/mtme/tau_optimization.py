"""Kendall's tau variants, tau optimization and acc_eq (Deutsch et al. 2023; MTME ``stats.py`` and
``tau_optimization.py``): the segment-level statistics, from MTME's pair categories."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .accuracy import _pairs
from .inputs import (
    _LONG_GROUP,
    _MAX_BYTES,
    _MAX_OPT_PAIRS,
    AccEq,
    FloatArray,
    _as_float,
    _check_average_by,
    _check_epsilon,
    _check_metric_present,
    _check_same_shape,
    _check_variant,
    _groups,
)

# Pair categories of MTME's Kendall sufficient statistics (tau_optimization.TauSufficientStats).
_CON, _DIS, _TX, _TY, _TXY = 0, 1, 2, 3, 4  # concordant, discordant, tie in metric only, human only, both


@dataclass(frozen=True)
class TauOptimization:
    """MTME ``tau_optimization.TauOptimizationResult``: every candidate threshold and its mean tau."""

    thresholds: FloatArray
    taus: FloatArray
    best_threshold: float
    best_tau: float


def _categories(m_rows: FloatArray, h_rows: FloatArray, epsilon: float, i: NDArray[np.intp],
                j: NDArray[np.intp]) -> NDArray[np.int8]:
    """Category of every pair ``(i[p], j[p])`` in every row (MTME ``_MatrixSufficientStatistics``).

    A metric difference with ``|d| <= epsilon`` is a tie (MTME ``PairwiseDiffs``); human ties are exact.
    """
    dm = m_rows[..., j] - m_rows[..., i]
    dh = h_rows[..., j] - h_rows[..., i]
    mt = np.abs(dm) <= epsilon
    ht = dh == 0
    con = (dm > 0) & (dh > 0) | (dm < 0) & (dh < 0)
    cat = np.where(con, _CON, _DIS).astype(np.int8)
    cat[mt & ~ht] = _TX
    cat[~mt & ht] = _TY
    cat[mt & ht] = _TXY
    return cat


def _value_from_counts(counts: NDArray[np.int64], variant: str, minclasses: NDArray[np.int64] | None = None,
                       sizes: NDArray[np.int64] | None = None) -> FloatArray:
    """MTME ``KendallVariants`` from sufficient statistics ``counts[..., 5]`` (same float operations)."""
    con, dis, tx, ty, txy = (counts[..., c].astype(np.float64) for c in range(5))
    tot = con + dis + tx + ty + txy
    xtie, ytie = tx + txy, ty + txy
    with np.errstate(divide="ignore", invalid="ignore"):
        if variant == "acc23":
            return (con + txy) / tot
        if variant == "23":
            return (con + txy - dis - tx - ty) / tot
        degenerate = (xtie == tot) | (ytie == tot)
        if variant == "b":
            val = (con - dis) / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
        else:  # 'c'
            assert minclasses is not None and sizes is not None
            mc = minclasses.astype(np.float64)
            size = sizes.astype(np.float64)
            val = 2 * (con - dis) / (size**2 * (mc - 1) / mc)
        return np.where(degenerate, np.nan, val)


def _vector_counts(h: FloatArray, m: FloatArray, epsilon: float) -> NDArray[np.int64]:
    """Sufficient statistics of two vectors, in row blocks (O(n^2) time, bounded memory)."""
    n = h.shape[0]
    counts = np.zeros(5, dtype=np.int64)
    block = max(1, _MAX_BYTES // (16 * max(n, 1)))
    cols = np.arange(n)
    for lo in range(0, n, block):
        rows = np.arange(lo, min(n, lo + block))
        upper = cols[None, :] > rows[:, None]
        dm = m[None, :] - m[rows, None]
        dh = h[None, :] - h[rows, None]
        mt = np.abs(dm) <= epsilon
        ht = dh == 0
        con = (dm > 0) & (dh > 0) | (dm < 0) & (dh < 0)
        counts[_CON] += int((con & ~mt & ~ht & upper).sum())  # con already excludes ties; masks kept for clarity
        counts[_TX] += int((mt & ~ht & upper).sum())
        counts[_TY] += int((~mt & ht & upper).sum())
        counts[_TXY] += int((mt & ht & upper).sum())
    counts[_DIS] = n * (n - 1) // 2 - counts[_CON] - counts[_TX] - counts[_TY] - counts[_TXY]
    return counts


def _mtme_minclasses(h: FloatArray, m: FloatArray) -> int:
    return min(len(set(m.tolist())), len(set(h.tolist())))


def kendall_variants(human: ArrayLike, metric: ArrayLike, variant: str = "b", epsilon: float = 0.0) -> float:
    """Kendall's tau variants of two vectors: MTME ``stats.KendallVariants(gold, metric, variant, epsilon=...)``.

    - 'b': ``(C - D) / sqrt(T - ties_metric) / sqrt(T - ties_human)`` (scipy's tau-b), NaN if either side is all
      ties; 'c': scipy's tau-c (``epsilon`` must be 0), NaN likewise;
    - '23': ``(C + T_hm - D - T_h - T_m) / T``; 'acc23': ``(C + T_hm) / T`` (Deutsch et al. 2023), where ``T_hm``
      are pairs tied in both, ``T_h``/``T_m`` pairs tied in the human/metric scores only.

    A metric difference ``|d| <= epsilon`` counts as a tie (``epsilon`` applies to the metric only, as MTME's).
    Entries with a NaN human score are dropped. The counts are exact integers and the final float operations are
    MTME's, so values equal MTME's (and scipy's for 'b'/'c'). O(n^2) time, bounded memory. NaN for < 2 entries.
    """
    _check_variant(variant)
    _check_epsilon(epsilon, variant)
    h = _as_float(human, "human", 1)
    m = _as_float(metric, "metric", 1)
    _check_same_shape(h, m, "human and metric")
    ok = ~np.isnan(h)
    _check_metric_present(m, ok, "metric")
    h, m = h[ok], m[ok]
    if h.shape[0] < 2:
        return math.nan
    counts = _vector_counts(h, m, float(epsilon))
    mc = np.array(_mtme_minclasses(h, m)) if variant == "c" else None
    return float(_value_from_counts(counts, variant, mc, np.array(h.shape[0])))


def _mtme_average(vals: FloatArray, replace_nans_with_zeros: bool) -> float:
    """``np.average`` of the non-NaN values, 0 if none (MTME ``PermutationSigDiff._Corr`` / pairs test)."""
    vals = np.nan_to_num(vals) if replace_nans_with_zeros else vals[~np.isnan(vals)]
    return float(np.average(vals)) if len(vals) else 0.0


def _grouped_counts(metric: FloatArray, human: FloatArray, epsilon: float, average_by: str
                    ) -> tuple[NDArray[np.int64], NDArray[np.int64], FloatArray, FloatArray, NDArray[np.bool_]]:
    """Per-group sufficient statistics over the groups with >= 2 human-scored entries (MTME filtering)."""
    hg, mg = _groups(human, average_by), _groups(metric, average_by)
    valid = ~np.isnan(hg)
    sizes = valid.sum(axis=1)
    keep = sizes >= 2
    hg, mg, valid, sizes = hg[keep], mg[keep], valid[keep], sizes[keep]
    n = hg.shape[1]
    counts = np.zeros((hg.shape[0], 5), dtype=np.int64)
    if n > _LONG_GROUP:  # few long groups ('none', 'sys'): row blocks per group, no pair index arrays
        for r, (hr, mr, v) in enumerate(zip(hg, mg, valid)):
            counts[r] = _vector_counts(hr[v], mr[v], epsilon)
        return counts, sizes, hg, mg, valid
    i, j = _pairs(n)
    step = max(1, _MAX_BYTES // (16 * max(hg.shape[0], 1)))
    for lo in range(0, i.shape[0], step):
        ii, jj = i[lo:lo + step], j[lo:lo + step]
        cat = _categories(mg, hg, epsilon, ii, jj)
        pv = valid[:, ii] & valid[:, jj]
        for c in range(5):
            counts[:, c] += ((cat == c) & pv).sum(axis=1)
    return counts, sizes, hg, mg, valid


def kendall_variants_grouped(
    metric: ArrayLike,
    human: ArrayLike,
    variant: str = "acc23",
    epsilon: float = 0.0,
    *,
    average_by: str = "item",
    replace_nans_with_zeros: bool = False,
) -> float:
    """Average of :func:`kendall_variants` over groups: MTME ``Correlation.KendallVariants(average_by, ...)``.

    ``metric[S, n]``, ``human[S, n]``. MTME ``AverageCorrelation``: per group drop human-NaN entries, skip groups
    with fewer than 2 left, drop NaN group values (or count them as 0 with ``replace_nans_with_zeros``), and take
    the plain mean accumulated left to right (``tot += value``; ``tot / n``). Returns 0.0 when no group has a value
    (MTME returns 0, not NaN). With ``variant='acc23'`` and the ``epsilon`` of :func:`acc_eq` this is acc_eq at
    that threshold.
    """
    _check_variant(variant)
    _check_average_by(average_by)
    _check_epsilon(epsilon, variant)
    m = _as_float(metric, "metric", 2)
    h = _as_float(human, "human", 2)
    _check_same_shape(m, h, "metric and human")
    _check_metric_present(m, ~np.isnan(h), "metric")
    counts, sizes, hg, mg, valid = _grouped_counts(m, h, float(epsilon), average_by)
    mc = None
    if variant == "c":
        mc = np.array([_mtme_minclasses(hr[v], mr[v]) for hr, mr, v in zip(hg, mg, valid)], dtype=np.int64)
    vals = _value_from_counts(counts, variant, mc, sizes)
    tot, n = 0.0, 0
    for v in vals.tolist():  # AverageCorrelation.Corr: sequential accumulation
        if not math.isnan(v):
            tot += v
            n += 1
        elif replace_nans_with_zeros:
            n += 1
    return tot / n if n else 0.0


def tau_optimization(metric_rows: ArrayLike, human_rows: ArrayLike, variant: str = "acc23") -> TauOptimization:
    """Tie-threshold optimisation of MTME ``tau_optimization.tau_optimization`` (``sample_rate=1.0``).

    Rows are the groups (MTME's matrix rows). Entries where either score is NaN are dropped (MTME drops ``None``
    in either matrix); rows without a pair are ignored. Candidate thresholds are 0 and every distinct ``|m_i -
    m_j|`` of a pair; at threshold ``e`` every pair with ``|m_i - m_j| <= e`` becomes a metric tie; the objective
    is the mean over rows of ``acc23`` (or ``23``). Reproduced float for float: the running total starts as
    Python's ``sum`` of the per-row values in MTME's row order (the iteration order of the ``set`` of row
    indices), then for each pair in stable order of ``|diff|`` subtracts the row's old value and adds its new one
    (one sequential ``np.add.accumulate``), dividing by the number of rows; equal thresholds keep the last value.
    ``best_threshold`` is the *first* maximum (``np.nanargmax``), i.e. the smallest threshold reaching it.
    If no row has a pair (MTME: ZeroDivisionError) the result is ``thresholds=[0.0], taus=[nan]``.
    """
    _check_variant(variant, ("23", "acc23"))
    m = _as_float(metric_rows, "metric_rows")
    h = _as_float(human_rows, "human_rows")
    if m.ndim == 1:
        m = m[None, :]
    if h.ndim == 1:
        h = h[None, :]
    if m.ndim != 2 or m.shape != h.shape:
        raise ValueError("human and metric scores must be matrices of the same shape")
    num_rows_total, n = m.shape
    if num_rows_total * n * max(n - 1, 0) // 2 > _MAX_OPT_PAIRS:
        raise ValueError("too many pairs for tau optimization (use average_by='item' or 'sys')")
    valid = ~(np.isnan(m) | np.isnan(h))
    i, j = _pairs(n)
    # Enumeration order of MTME's _enumerate_pairs: rows ascending, then pairs (i < j) lexicographically.
    pair_ok = (valid[:, i] & valid[:, j]).ravel()
    mi, mj, hi, hj = (a.ravel()[pair_ok] for a in (m[:, i], m[:, j], h[:, i], h[:, j]))
    row_of = np.repeat(np.arange(num_rows_total), i.shape[0])[pair_ok]
    if row_of.shape[0] == 0:
        return TauOptimization(np.array([0.0]), np.array([math.nan]), 0.0, math.nan)
    diff = np.abs(mi - mj)
    h_tie = hi == hj
    con = (hi > hj) & (mi > mj) | (hi < hj) & (mi < mj)
    correct0 = (con | (h_tie & (mi == mj))).astype(np.int64)  # con or ties_both before the pair is tied
    correct_tied = h_tie.astype(np.int64)  # ties_both after (tie_stats), else ties_metric
    n_pairs_row = np.bincount(row_of, minlength=num_rows_total)
    c0_row = np.bincount(row_of, weights=correct0, minlength=num_rows_total).astype(np.int64)

    def tau_fn(c: NDArray[np.int64], npairs: NDArray[np.int64]) -> FloatArray:
        num = c if variant == "acc23" else 2 * c - npairs  # integer numerators, as TauSufficientStats
        return num.astype(np.float64) / npairs.astype(np.float64)

    rows_set: set[int] = set()
    for r in np.flatnonzero(n_pairs_row).tolist():  # MTME: rows.add(row) in enumeration order
        rows_set.add(r)
    row_order = list(rows_set)  # dict/set iteration order used by MTME's initial sum
    init_vals = tau_fn(c0_row[row_order], n_pairs_row[row_order]).tolist()
    total0 = sum(init_vals)  # Python's sum, as MTME (compensated on Python >= 3.12, like MTME there)
    num_rows = len(row_order)

    order = np.argsort(diff, kind="stable")  # list.sort(key=diff) is stable
    d_sorted, r_sorted = diff[order], row_of[order]
    delta = (correct_tied - correct0)[order]
    # Running correct count of each pair's row, before/after that pair is turned into a tie. The rows as 16-bit
    # integers where they fit: numpy's stable sort of those is a radix sort (7 ms instead of 24 ms for 570,000 pairs),
    # and a stable order is unique, so the same order
    rank_rows = r_sorted.astype(np.uint16) if num_rows_total <= 2**16 else r_sorted
    by_row = np.argsort(rank_rows, kind="stable")
    cum = np.empty_like(delta)
    dr = delta[by_row]
    rr = r_sorted[by_row]
    cs = np.cumsum(dr)
    starts = np.r_[0, np.flatnonzero(np.diff(rr)) + 1]
    offset = np.repeat(cs[starts] - dr[starts], np.diff(np.r_[starts, rr.shape[0]]))
    cum[by_row] = cs - offset  # inclusive per-row cumulative sum in sorted order
    after = c0_row[r_sorted] + cum
    before = after - delta
    npr = n_pairs_row[r_sorted]
    seq = np.empty(1 + 2 * d_sorted.shape[0])
    seq[0] = total0
    seq[1::2] = -tau_fn(before, npr)
    seq[2::2] = tau_fn(after, npr)
    totals = np.add.accumulate(seq)  # sequential: total -= old; total += new
    tau0 = totals[0] / num_rows
    taus_k = totals[2::2] / num_rows
    prev = np.r_[0.0, d_sorted[:-1]]
    is_new = d_sorted != prev
    group = np.cumsum(is_new)
    thresholds = np.r_[0.0, d_sorted[is_new]]
    taus = np.empty(thresholds.shape[0])
    taus[0] = tau0
    last = np.r_[np.flatnonzero(np.diff(group)), group.shape[0] - 1]
    taus[group[last]] = taus_k[last]
    best = int(np.nanargmax(taus))
    return TauOptimization(thresholds, taus, float(thresholds[best]), float(taus[best]))


def acc_eq(
    metric: ArrayLike, human: ArrayLike, *, average_by: str = "item", variant: str = "acc23"
) -> AccEq:
    """Tie-calibrated pairwise accuracy acc_eq and its epsilon: MTME ``stats.KendallWithTiesOpt``.

    WMT23+ segment level: ``KendallWithTiesOpt(variant='acc23', average_by='item', sample_rate=1.0)`` on
    ``metric[S, n]``, ``human[S, n]``. One global epsilon for all items; the value is the mean over items (with at
    least one scored pair) of the per-item acc23 at that epsilon, as computed by :func:`tau_optimization`
    (its ``best_tau`` and ``best_threshold``, bit for bit). ``variant='23'`` gives the optimised tau_eq.
    """
    _check_average_by(average_by)
    m = _as_float(metric, "metric", 2)
    h = _as_float(human, "human", 2)
    _check_same_shape(m, h, "metric and human")
    res = tau_optimization(_groups(m, average_by), _groups(h, average_by), variant)
    return AccEq(res.best_tau, res.best_threshold)
