"""Is metric B better than metric A? MTME's significance tests of the difference of two statistics (PERM-BOTH
over scores, and over pairs for acc_eq), seeded (``numpy.random.default_rng(seed)``) where MTME draws from the global
generator, with early stopping."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..correlation import pearson_from_sums
from .accuracy import _agreement, _pairs
from .inputs import (
    _MAX_BYTES,
    _MAX_OPT_PAIRS,
    FloatArray,
    SigDiff,
    Stat,
    _as_float,
    _check_average_by,
    _check_draw_args,
    _check_metric_present,
    _check_same_shape,
    _check_variant,
    _groups,
)
from .pce import _exceed_counts, _restricted, mtme_sign_matrix, pairwise_p_values, soft_pairwise_accuracy
from .tau_optimization import _TXY, _TY, _categories, _mtme_average, acc_eq


def _early_stop_scan(large: NDArray[np.bool_], done: int, count: int, block_size: int, early_min: float,
                     early_max: float, pairs_quirk: bool) -> tuple[int, int, bool]:
    """Advance MTME's draw loop over one chunk; returns (count, draws, stopped)."""
    idx = done + 1 + np.arange(large.shape[0])
    cum = count + np.cumsum(large)
    check = idx % block_size == 0
    if pairs_quirk:  # PairwisePermutationSigDiff checks only inside ``if c2 - c1 >= delta:``
        check &= large
    pval = cum / idx
    stop = np.flatnonzero(check & ((pval < early_min) | (pval > early_max)))
    if stop.size:
        t = int(stop[0])
        return int(cum[t]), int(idx[t]), True
    return int(cum[-1]), done + large.shape[0], False


def _run_draws(
    n_draws: int, chunk: int, draw: Callable[[int], FloatArray], delta: float, block_size: int, early_min: float,
    early_max: float, pairs_quirk: bool = False,
) -> SigDiff:
    if not math.isfinite(delta):
        return SigDiff(delta, math.nan, 0)
    done = count = 0
    while done < n_draws:
        b = min(chunk, n_draws - done)
        diffs = np.asarray(draw(b), dtype=np.float64)
        large = diffs >= delta  # NaN draws never count, as in MTME
        count, done, stopped = _early_stop_scan(large, done, count, block_size, early_min, early_max,
                                                pairs_quirk)
        if stopped:
            break
    return SigDiff(float(delta), count / done, int(done))


def _zscore_valid(a: FloatArray, valid: NDArray[np.bool_]) -> FloatArray:
    """``scipy.stats.zscore`` (ddof=0) of the valid entries in system-major order; NaN elsewhere (MTME
    ``PermutationSigDiff`` z-scores the gold-filtered vector; a constant metric becomes all NaN, as in scipy)."""
    import warnings

    import scipy.stats  # lazy: pure-core rule

    out = np.full(a.shape, np.nan)
    if valid.any():
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")  # constant metric: scipy's precision/invalid warnings
            out[valid] = scipy.stats.zscore(a[valid])
    return out


def _perm_both_inputs(metric_a: ArrayLike, metric_b: ArrayLike, human: ArrayLike, n_draws: int, block_size: int,
                      zscore: bool) -> tuple[FloatArray, FloatArray, FloatArray, NDArray[np.bool_], int]:
    """Checked PERM-BOTH inputs: ``(a, b, human, valid, extra)`` (``extra`` trailing metric dimensions)."""
    _check_draw_args(n_draws, block_size)
    h = np.asarray(human, dtype=np.float64)
    a = np.asarray(metric_a, dtype=np.float64)
    b = np.asarray(metric_b, dtype=np.float64)
    _check_same_shape(a, b, "metric_a and metric_b")
    if a.shape[:h.ndim] != h.shape:
        raise ValueError(f"metrics must have the shape of human {h.shape} (+ trailing dims), got {a.shape}")
    valid = ~np.isnan(h)
    extra = a.ndim - h.ndim
    vfull = valid.reshape(valid.shape + (1,) * extra)
    for arr, name in ((a, "metric_a"), (b, "metric_b")):
        if np.isnan(np.where(vfull, arr, 0.0)).any():
            raise ValueError(f"{name} has NaN where the human score is present")
    if zscore:
        if extra:
            raise ValueError("zscore needs metrics of the human's shape (pass zscore=False for statistics)")
        a, b = _zscore_valid(a, valid), _zscore_valid(b, valid)
    return a, b, h, valid, extra


def _draw_chunk(n_draws: int, batched: bool, size: int) -> int:
    """Draws per chunk: the swap decisions of a chunk are drawn at once, so this fixes the random stream."""
    return max(1, min(n_draws, 64 if not batched else n_draws, _MAX_BYTES // (3 * 8 * max(size, 1))))


def _swaps(rng: np.random.Generator, k: int, valid: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """The swap decisions of ``k`` draws (``[k, *valid.shape]``): fair coins, never on an entry without a human
    score."""
    return _fair_bits(rng, (k, *valid.shape)) & valid


def perm_both_test(
    metric_a: ArrayLike,
    metric_b: ArrayLike,
    human: ArrayLike,
    stat: Stat,
    *,
    n_draws: int = 1000,
    seed: int = 12345,
    zscore: bool = True,
    batched: bool = False,
    block_size: int = 1000,
    early_min: float = 0.02,
    early_max: float = 0.5,
) -> SigDiff:
    """PERM-BOTH permutation test (Deutsch et al. 2021): MTME ``stats.PermutationSigDiff``.

    Is ``stat(B)`` better than ``stat(A)``? ``human`` has the shape of the items (``[S, n]`` segments or ``[S]``
    systems); ``metric_a``/``metric_b`` have that shape, or that shape plus trailing dimensions (e.g. sufficient
    statistics ``[S, n, K]``, then pass ``zscore=False``). MTME's procedure:

    1. with ``zscore`` each metric is z-scored (``scipy.stats.zscore``, ddof=0) over its entries with a human score,
       taken in MTME's packed system-major order; entries without a human score become NaN (never swapped);
    2. ``delta = stat(B) - stat(A)``;
    3. each draw swaps every (human-scored) entry's two metric scores independently with probability 1/2 and
       recomputes both statistics; ``p = #{stat(B') - stat(A') >= delta} / draws``: one-sided, no ``+1``;
    4. early stopping as MTME's ``PermutationSigDiffParams``: after every ``block_size`` draws stop if the running
       p-value is ``< early_min`` or ``> early_max`` (MTME's default ``block_size=1000`` with 1000 draws never stops
       early; WMT tasks use ``block_size=100``).

    ``stat(metric, human) -> float``; with ``batched=True``, ``stat(metric[B, ...], human) -> [B]`` and draws are
    evaluated in chunks. Draws come from ``default_rng(seed)`` (MTME: global ``np.random.binomial``), so p-values
    are not MTME's bit for bit. A non-finite ``delta`` gives ``p = NaN`` (MTME would report 0). For Pearson use
    :func:`pearson_test` (the same draws and p-values, without building the swapped metrics).
    """
    a, b, h, valid, extra = _perm_both_inputs(metric_a, metric_b, human, n_draws, block_size, zscore)

    def evaluate(ms: FloatArray) -> FloatArray:  # ms[B, ...]
        if batched:
            return np.asarray(stat(ms, h), dtype=np.float64).reshape(ms.shape[0])
        return np.array([float(stat(x, h)) for x in ms])

    delta = float(evaluate(b[None])[0] - evaluate(a[None])[0])
    rng = np.random.default_rng(seed)

    def draw(k: int) -> FloatArray:
        swap = _swaps(rng, k, valid)
        swap = swap.reshape(swap.shape + (1,) * extra)
        ma, mb = np.where(swap, b, a), np.where(swap, a, b)
        return evaluate(mb) - evaluate(ma)

    return _run_draws(int(n_draws), _draw_chunk(n_draws, batched, a.size), draw, delta, int(block_size), early_min,
                      early_max)


def pearson_test(
    metric_a: ArrayLike,
    metric_b: ArrayLike,
    human: ArrayLike,
    *,
    n_draws: int = 1000,
    seed: int = 12345,
    zscore: bool = True,
    block_size: int = 1000,
    early_min: float = 0.02,
    early_max: float = 0.5,
) -> SigDiff:
    """PERM-BOTH of Pearson r (system level ``[S]`` or pooled segment level ``[S, n]``): :func:`perm_both_test`
    with :func:`pearson_rows` (``batched=True``), the same draws and hence the same p-values, without building the
    swapped metrics.

    Over the entries with a human score, with ``d = a - b`` and a draw's swap decisions ``s`` (0 or 1 per entry),
    the swapped metrics are ``B' = b + s*d`` and ``A' = a - s*d``. Every sum Pearson needs is linear in ``s``
    (``s*s = s``): ``sum(B'y) = sum(b y) + s.(d y)``, ``sum(B') = sum(b) + s.d``, ``sum(B'^2) = sum(b^2) +
    s.(2bd + d^2)``, and for ``A'`` the same with ``-d``. One matrix product of the draws' decisions with those
    vectors gives both correlations of every draw. ``y`` is the centred human score and the metrics are shifted
    by their common mean (Pearson ignores both shifts), so the variances are not differences of large sums. The
    values agree with :func:`pearson_rows` to about 1e-13, and a draw that swaps nothing gives ``delta`` exactly.
    A metric whose variance is below 1e-12 of its sum of squares counts as constant (r is NaN:
    :func:`harness.core.correlation.pearson_from_sums`).
    """
    a, b, h, valid, _ = _perm_both_inputs(metric_a, metric_b, human, n_draws, block_size, zscore)
    ok = valid & np.isfinite(a) & np.isfinite(b)
    y = h[ok]
    if y.size < 3 or np.ptp(y) == 0:
        return SigDiff(math.nan, math.nan, 0)
    y = y - y.mean()
    syy = float(y @ y)
    shift = 0.5 * (a[ok].mean() + b[ok].mean())
    av, bv = a[ok] - shift, b[ok] - shift
    d = av - bv
    n = float(y.size)
    base = np.array([bv @ y, bv.sum(), bv @ bv, av @ y, av.sum(), av @ av])
    # how a swap of each entry changes each of the six sums
    step = np.zeros((a.size, 6))  # entries without both scores stay 0: their swaps change no sum
    step[ok.ravel()] = np.stack([d * y, d, 2 * bv * d + d * d, -d * y, -d, d * d - 2 * av * d], axis=1)

    def correlations(sums: FloatArray) -> tuple[FloatArray, FloatArray]:  # sums[k, 6] -> r(B'), r(A')
        # y is centred: sum y = 0 (a variance lost in rounding is a constant metric: NaN, as pearson_rows)
        rb, ra = (pearson_from_sums(n, sx, 0.0, sxx, syy, sxy) for sxy, sx, sxx in (sums[:, 0:3].T, sums[:, 3:6].T))
        return rb, ra

    rb, ra = correlations(base[None])
    delta = float(rb[0] - ra[0])
    rng = np.random.default_rng(seed)

    def draw(k: int) -> FloatArray:
        rb, ra = correlations(base + _swaps(rng, k, valid).reshape(k, -1).astype(np.float64) @ step)
        return rb - ra

    return _run_draws(int(n_draws), _draw_chunk(n_draws, True, a.size), draw, delta, int(block_size), early_min,
                      early_max)


def pearson_rows(ms: ArrayLike, human: ArrayLike) -> FloatArray:
    """Pearson r of every row of ``ms[B, ...]`` (each of ``human``'s shape) with ``human``, over the entries where
    both are finite (the rows share their NaN positions, as :func:`perm_both_test`'s draws do); NaN with fewer than
    3 entries or a constant side. The ``batched`` statistic of :func:`perm_both_test` for Pearson: np.corrcoef's
    value to a few ulps, each row reduced alone (its value does not depend on the other rows of the batch)."""
    h = np.asarray(human, dtype=np.float64).ravel()
    m = np.asarray(ms, dtype=np.float64)
    x = m.reshape(m.shape[0], -1)
    ok = np.isfinite(h) & np.isfinite(x).all(axis=0)
    out = np.full(x.shape[0], np.nan)
    y = h[ok]
    if y.size < 3 or np.ptp(y) == 0:
        return out
    x = x[:, ok]
    xm = x - x.mean(axis=1, keepdims=True)
    ym = y - y.mean()
    sxx = (xm * xm).sum(axis=1)
    live = sxx > 0
    out[live] = np.clip((xm[live] * ym).sum(axis=1) / np.sqrt(sxx[live] * (ym @ ym)), -1.0, 1.0)
    return out


def _fair_bits(rng: np.random.Generator, shape: tuple[int, ...]) -> NDArray[np.bool_]:
    """Independent fair coin flips (the swap decisions), 8 per random byte."""
    size = int(np.prod(shape))
    raw = rng.integers(0, 256, size=-(-size // 8), dtype=np.uint8)
    return np.unpackbits(raw, count=size).view(bool).reshape(shape)


def _accuracy_batched(lp_sizes: tuple[int, ...]) -> Callable[[FloatArray, FloatArray], FloatArray]:
    bounds = np.r_[0, np.cumsum(lp_sizes)]

    def stat(ms: FloatArray, h: FloatArray) -> FloatArray:
        agree = np.zeros(ms.shape[0])
        pairs = 0
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            a, p, _ = _agreement(ms[:, lo:hi], h[lo:hi], counts=True)
            agree += a
            pairs += p
        with np.errstate(invalid="ignore", divide="ignore"):
            return agree / pairs if pairs else np.full(ms.shape[0], np.nan)

    return stat


def pairwise_accuracy_test(
    metric_a_sys: ArrayLike,
    metric_b_sys: ArrayLike,
    human_sys: ArrayLike,
    *,
    lp_sizes: tuple[int, ...] | list[int] | None = None,
    n_draws: int = 1000,
    seed: int = 12345,
    block_size: int = 1000,
    early_min: float = 0.02,
    early_max: float = 0.5,
) -> SigDiff:
    """PERM-BOTH test of (global) pairwise accuracy: MTME ``CompareMetricsWithGlobalAccuracy`` significance.

    System-level vectors ``[S]``; with ``lp_sizes`` they are several language pairs concatenated (as MTME's merged
    correlations), z-scored jointly, and the statistic is :func:`global_pairwise_accuracy`. See
    :func:`perm_both_test` (vectorised here).
    """
    h = _as_float(human_sys, "human_sys", 1)
    sizes = (h.shape[0],) if lp_sizes is None else tuple(int(s) for s in lp_sizes)
    if sum(sizes) != h.shape[0]:
        raise ValueError("lp_sizes must add up to the number of systems")
    return perm_both_test(
        _as_float(metric_a_sys, "metric_a_sys", 1), _as_float(metric_b_sys, "metric_b_sys", 1), h,
        _accuracy_batched(sizes), n_draws=n_draws, seed=seed, zscore=True, batched=True, block_size=block_size,
        early_min=early_min, early_max=early_max)


def _spa_batch(m32: NDArray[np.float32], signs: NDArray[np.float32], hp_upper: FloatArray,
               n_permutations: int) -> FloatArray:
    """1 - PCE of every float32 metric matrix in ``m32[B, S, n]``, as :func:`soft_pairwise_accuracy` computes it.

    All matrices go through one float32 matrix product ``signs @ [every matrix's columns]`` (one BLAS call for
    the whole batch: the draws of a significance test are thousands of pseudo-metrics), so the permuted sums may
    round differently from MTME's one call per matrix in the last float32 bit; the pair counts
    (:func:`_exceed_counts`) do MTME's float32 subtraction and comparison.
    """
    bsz, s, n = m32.shape
    sys_scores = np.sum(m32, axis=2)  # [B, S]
    columns = np.ascontiguousarray(m32.transpose(2, 0, 1).reshape(n, bsz * s))
    partial = np.ascontiguousarray((signs @ columns).reshape(-1, bsz, s).transpose(1, 2, 0))  # [B, S, P]
    p = _exceed_counts(partial, sys_scores) / n_permutations
    return 1.0 - np.mean(np.abs(hp_upper - p), axis=1)


def soft_pairwise_accuracy_test(
    metric_a_seg: ArrayLike,
    metric_b_seg: ArrayLike,
    human_seg: ArrayLike,
    *,
    n_draws: int = 1000,
    seed: int = 12345,
    n_permutations: int = 1000,
    pce_seed: int = 4,
    block_size: int = 1000,
    early_min: float = 0.02,
    early_max: float = 0.5,
) -> SigDiff:
    """PERM-BOTH test of soft pairwise accuracy: MTME ``CompareMetricsWithPairwiseConfidenceError`` significance.

    MTME (``perm_test='scores'``) runs ``PermutationSigDiff`` with ``PairwiseConfidenceError`` as the statistic
    and ``average_by='none'``: it keeps the human-scored entries (here the :func:`complete_block`), z-scores each
    metric over them, and each draw swaps entries between the two z-scored metrics and recomputes both soft
    pairwise accuracies (each with MTME's fixed seed-4 sign matrix; the human p-values never change). ``delta``
    is computed exactly as MTME does (on the z-scored metrics); each draw's pair of statistics is MTME's float32
    computation with all pseudo-metrics of a chunk in one matrix product (:func:`_spa_batch`: the same up to the
    rounding of the sum order, 30 times faster than one BLAS call per pseudo-metric). The swap masks come from
    ``default_rng(seed)`` instead of MTME's global ``np.random``.
    """
    _check_draw_args(n_draws, block_size)
    h, a, b = _restricted(human_seg, metric_a_seg, metric_b_seg, names=("metric_a_seg", "metric_b_seg"))
    if h.shape[0] < 2 or h.shape[1] == 0:
        return SigDiff(math.nan, math.nan, 0)
    ok = np.ones(h.shape, dtype=bool)
    za, zb = _zscore_valid(a, ok), _zscore_valid(b, ok)
    hp = pairwise_p_values(h, n_permutations, pce_seed)
    delta = (soft_pairwise_accuracy(zb, h, n_permutations=n_permutations, seed=pce_seed, human_p_values=hp)
             - soft_pairwise_accuracy(za, h, n_permutations=n_permutations, seed=pce_seed, human_p_values=hp))
    rng = np.random.default_rng(seed)
    s, n = h.shape
    signs = mtme_sign_matrix(n, n_permutations, pce_seed)
    hp_upper = hp[_pairs(s)]
    per_draw = 2 * (3 * 4 * n_permutations * s + 2 * 4 * s * n) + s * n
    chunk = max(1, min(n_draws, _MAX_BYTES // per_draw))
    za32, zb32 = za.astype(np.float32), zb.astype(np.float32)  # MTME casts each hybrid; the cast is elementwise
    both = np.empty((2 * chunk, s, n), dtype=np.float32)

    def draw(k: int) -> FloatArray:
        swap = _fair_bits(rng, (k, s, n))
        np.copyto(both[:k], za32)
        np.copyto(both[:k], zb32, where=swap)
        np.copyto(both[k:2 * k], zb32)
        np.copyto(both[k:2 * k], za32, where=swap)
        spa = _spa_batch(both[:2 * k], signs, hp_upper, n_permutations)
        return spa[k:] - spa[:k]

    return _run_draws(int(n_draws), chunk, draw, delta, int(block_size), early_min, early_max)


def _binomial_half(rng: np.random.Generator, counts: NDArray[np.int64], k: int) -> NDArray[np.int64]:
    """``k`` independent draws of ``Binomial(counts, 1/2)`` (elementwise), as popcounts of fair random bits."""
    if not hasattr(np, "bitwise_count") or counts.size == 0:  # numpy < 2.0
        return rng.binomial(counts, 0.5, size=(k, *counts.shape)).astype(np.int64)
    words = max(1, int(-(-int(counts.max()) // 64)))
    bits = np.clip(counts[..., None] - 64 * np.arange(words), 0, 64).astype(np.uint64)  # [..., W]
    full = np.uint64(0xFFFFFFFFFFFFFFFF)
    masks = np.where(bits == 64, full, (np.uint64(1) << np.minimum(bits, np.uint64(63))) - np.uint64(1))
    raw = rng.integers(0, full, size=(k, *masks.shape), dtype=np.uint64, endpoint=True)
    return np.bitwise_count(raw & masks).sum(axis=-1, dtype=np.int64)


def acc_eq_pairs_test(
    metric_a: ArrayLike,
    metric_b: ArrayLike,
    human: ArrayLike,
    *,
    variant: str = "acc23",
    average_by: str = "item",
    epsilon_a: float | None = None,
    epsilon_b: float | None = None,
    n_draws: int = 1000,
    seed: int = 12345,
    replace_nans_with_zeros: bool = False,
    block_size: int = 1000,
    early_min: float = 0.02,
    early_max: float = 0.5,
) -> SigDiff:
    """Pair-swap permutation test for acc_eq: MTME ``stats.PairwisePermutationSigDiff`` (``perm_test='pairs'``).

    MTME's procedure, which WMT23/24/25 use for segment-level acc_eq:

    1. each metric's epsilon is optimised *once*, on the real data (:func:`acc_eq` = ``KendallWithTiesOpt`` with
       ``sample_rate=1.0``), unless given; it is **not** re-optimised per draw;
    2. per group (item), every system pair's outcome under each metric is fixed: metric differences with
       ``|d| <= epsilon`` are ties (``PairwiseDiffs``); groups are the human-scored entries of each item;
    3. ``delta = mean_items(variant(B)) - mean_items(variant(A))`` (``np.average`` of the non-NaN item values);
    4. each draw swaps, independently with probability 1/2 for every pair of every item, the two metrics'
       *pairwise outcomes* (not their scores) and recomputes both means; ``p = #{delta' >= delta} / draws``.

    Vectorised exactly in distribution: an item's statistics depend on the swaps only through how many pairs of
    each kind (outcome under A, outcome under B) are swapped, so each draw samples those counts as
    ``Binomial(count, 1/2)`` (popcounts of fair random bits) instead of one coin per pair. Early stopping reproduces MTME's quirk: the block check
    runs only on draws that counted as ``>= delta``. Items with fewer than 2 human scores are skipped (MTME would
    divide by zero on an item with exactly one). ``variant`` may be 'acc23', '23' or 'b' ('c' is undefined here,
    as in MTME); explicit epsilons are required for 'b'.
    """
    _check_variant(variant, ("b", "23", "acc23"))
    _check_average_by(average_by)
    _check_draw_args(n_draws, block_size)
    a = _as_float(metric_a, "metric_a", 2)
    b = _as_float(metric_b, "metric_b", 2)
    h = _as_float(human, "human", 2)
    _check_same_shape(a, h, "metric_a and human")
    _check_same_shape(b, h, "metric_b and human")
    valid_all = ~np.isnan(h)
    _check_metric_present(a, valid_all, "metric_a")
    _check_metric_present(b, valid_all, "metric_b")
    if epsilon_a is None or epsilon_b is None:
        if variant == "b":
            raise ValueError("variant 'b' needs explicit epsilon_a and epsilon_b")
        if epsilon_a is None:
            epsilon_a = acc_eq(a, h, average_by=average_by, variant=variant).epsilon
        if epsilon_b is None:
            epsilon_b = acc_eq(b, h, average_by=average_by, variant=variant).epsilon
    if epsilon_a < 0 or epsilon_b < 0:
        raise ValueError("epsilon must be non-negative")

    hg, ag, bg = _groups(h, average_by), _groups(a, average_by), _groups(b, average_by)
    valid = ~np.isnan(hg)
    keep = valid.sum(axis=1) >= 2
    hg, ag, bg, valid = hg[keep], ag[keep], bg[keep], valid[keep]
    g, n = hg.shape
    if g * n * max(n - 1, 0) // 2 > _MAX_OPT_PAIRS:
        raise ValueError("too many pairs for the pairs test (use average_by='item' or 'sys')")
    i, j = _pairs(n)
    # Feature vectors per category: what the variant's value depends on.
    if variant == "b":
        feat = np.array([[1, 0], [-1, 0], [0, 1], [0, 0], [0, 1]], dtype=np.int64)  # (C - D, metric ties)
    else:
        feat = np.array([[1], [0], [0], [0], [1]], dtype=np.int64)  # correct = C + T_hm
    counts_a = np.zeros((g, 5), dtype=np.int64)
    counts_b = np.zeros((g, 5), dtype=np.int64)
    kinds: dict[tuple[int, ...], NDArray[np.int64]] = {}
    step = max(1, _MAX_BYTES // (32 * max(g, 1)))
    for lo in range(0, i.shape[0], step):
        ii, jj = i[lo:lo + step], j[lo:lo + step]
        pv = valid[:, ii] & valid[:, jj]
        ca = _categories(ag, hg, float(epsilon_a), ii, jj)
        cb = _categories(bg, hg, float(epsilon_b), ii, jj)
        for c in range(5):
            counts_a[:, c] += ((ca == c) & pv).sum(axis=1)
            counts_b[:, c] += ((cb == c) & pv).sum(axis=1)
        for x in range(5):
            for y in range(5):
                d = tuple((feat[y] - feat[x]).tolist())  # swapping gives A category y instead of x
                if not any(d):
                    continue
                cnt = ((ca == x) & (cb == y) & pv).sum(axis=1)
                if cnt.any():
                    kinds[d] = kinds.get(d, np.zeros(g, dtype=np.int64)) + cnt
    kind_vecs = np.array(list(kinds), dtype=np.int64).reshape(len(kinds), feat.shape[1])
    kind_counts = np.array(list(kinds.values()), dtype=np.int64).reshape(len(kinds), g).T  # [G, T]

    tot = counts_a.sum(axis=1)  # == counts_b.sum(axis=1): pairs per item
    ytie = counts_a[:, _TY] + counts_a[:, _TXY]

    def values(f: NDArray[np.int64]) -> FloatArray:
        """Item values from features f[..., G, D] (same float operations as MTME's KendallVariants)."""
        t = tot.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            if variant == "acc23":
                return f[..., 0].astype(np.float64) / t
            if variant == "23":
                return (2 * f[..., 0] - tot).astype(np.float64) / t
            cd, xtie = f[..., 0].astype(np.float64), f[..., 1]
            val = cd / np.sqrt(t - xtie) / np.sqrt(t - ytie)
            return np.where((xtie == tot) | (ytie == tot), np.nan, val)

    fa, fb = counts_a @ feat, counts_b @ feat  # [G, D]: exact integers, so the same values as KendallVariants
    va, vb = values(fa), values(fb)
    delta = _mtme_average(vb, replace_nans_with_zeros) - _mtme_average(va, replace_nans_with_zeros)
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_draws, _MAX_BYTES // (8 * max(g, 1) * (kind_vecs.shape[0] + 4 * feat.shape[1]))))

    def draw(k: int) -> FloatArray:
        if kind_vecs.shape[0] == 0:
            shift = np.zeros((k, g, feat.shape[1]), dtype=np.int64)
        else:
            swapped = _binomial_half(rng, kind_counts, k)  # [k, G, T]
            shift = swapped @ kind_vecs  # [k, G, D]
        ya, yb = values(fa + shift), values(fb - shift)
        return np.array([_mtme_average(y2, replace_nans_with_zeros) - _mtme_average(y1, replace_nans_with_zeros)
                         for y1, y2 in zip(ya, yb)])

    return _run_draws(int(n_draws), chunk, draw, delta, int(block_size), early_min, early_max, pairs_quirk=True)
