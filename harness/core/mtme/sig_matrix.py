"""MTME's significance tests between metrics for many pairs of metrics at once (``ComputeSigMatrix``).

Each function takes the metrics stacked (``metrics[V, ...]``) and the pairs to test, ``(i, j)``: "is metric ``i``
better than metric ``j``?", ``delta = stat(i) - stat(j)``, ``p = #{stat(i') - stat(j') >= delta} / draws`` where a
draw swaps entries (or, for acc_eq, pairs' outcomes) between the two metrics. All pairs share their draws
(:mod:`.draws`), so every draw is computed once per *metric* rather than twice per pair wherever the statistic
allows it:

- Pearson r (system level, or pooled over segments): every sum Pearson needs is linear in the swap decisions
  ``s`` (``s*s = s``): the swapped metric ``i' = i + s*(j - i)`` has ``sum(i'y) = sum(iy) + s.(jy) - s.(iy)``,
  ``sum(i') = sum(i) + s.j - s.i`` and ``sum(i'^2) = sum(i^2) + s.j^2 - s.i^2``, so one matrix product of the
  draws with three vectors per metric gives every pair's two correlations;
- soft pairwise accuracy: the permuted sums of a swapped metric are linear too, ``signs @ i' = signs @ i +
  signs @ (s*j) - signs @ (s*i)``: one float32 product per metric and draw (MTME makes two per pair), by tables
  of signed sums, as ``signs`` is +-1 (``_signed_sums``: no multiplication, 2.6 times as fast as BLAS), then each
  swapped metric's permutation p-values and 1 - PCE as MTME computes them. The partial sums are MTME's up to the
  float32 rounding of that sum (MTME multiplies the swapped matrix itself);
- acc_eq (MTME's pair-swap test): an item's statistic depends on the swaps only through its counts of pair outcomes,
  and the counts a draw moves from ``i`` to ``j`` are ``X_j - X_i`` with ``X_m`` the outcomes of metric ``m`` on the
  swapped pairs (one integer product per metric and draw); the item averages of every pair's two metrics then in
  a C kernel (``acc_eq_draws``), which does the numpy path's float64 divisions and numpy's pairwise sums in
  numpy's order, without the ``[draws, pairs, items]`` arrays (the same values, to the last bit);
- pairwise accuracy (a handful of systems): the swapped vectors themselves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ... import native
from ..correlation import pearson_from_sums
from .accuracy import _agreement, _pairs
from .draws import draw_bits, run_pairs
from .inputs import _MAX_OPT_PAIRS, FloatArray, SigDiff, _check_average_by, _check_draw_args, _groups
from .kernels import KERNELS, SS_GROUP, grouped_bits
from .pce import _exceed_counts, _p_values, _restricted, mtme_sign_matrix, one_minus_pce
from .tau_optimization import _TXY, _TY, _categories, _mtme_average, acc_eq

Pairs = Sequence[tuple[int, int]]
#: The temporaries of a chunk of draws (they stay in the caches: a larger chunk was slower, not faster).
_CHUNK_BYTES = 16 * 2**20


def _pair_index(pairs: Pairs, n: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    arr = np.asarray(list(pairs), dtype=np.intp).reshape(-1, 2)
    if arr.size and (arr.min() < 0 or arr.max() >= n or (arr[:, 0] == arr[:, 1]).any()):
        raise ValueError(f"pairs must be (i, j) of two different metrics among {n}")
    return arr[:, 0], arr[:, 1]


def zscore(a: FloatArray) -> FloatArray:
    """``scipy.stats.zscore(a)`` of a vector (ddof=0) as scipy 1.17 computes it: ``(a - mean) / sqrt(mean((a -
    mean)^2))``, all NaN where the deviation is below the mean's rounding (a constant vector), without importing
    scipy.stats (0.65 s of CPU in every process that ranks variants; the tests compare with it)."""
    with np.errstate(all="ignore"):  # a constant vector (0 / 0) or an overflowing one: NaN or inf, as in scipy
        mean = a.mean(axis=0, keepdims=True)
        centred = a - mean
        std = (centred * centred).mean(axis=0, keepdims=True) ** 0.5
        z = (a - mean) / std
        return np.where(np.broadcast_to(std <= np.abs(np.finfo(np.float64).eps * mean), z.shape), np.nan, z)


def zscore_valid(metrics: FloatArray, valid: NDArray[np.bool_]) -> FloatArray:
    """Each metric (``metrics[V, ...]``) as ``scipy.stats.zscore`` (ddof=0, :func:`zscore`) of its entries where
    ``valid``, in system-major order, NaN elsewhere (MTME ``PermutationSigDiff`` z-scores the gold-filtered vectors;
    a constant metric becomes all NaN, as in scipy)."""
    out = np.full(metrics.shape, np.nan)
    if valid.any():
        for v in range(metrics.shape[0]):
            out[v][valid] = zscore(metrics[v][valid])
    return out


#: ``draw(rng, k, i, j)``: the next ``k`` draws' differences ``stat(i') - stat(j')`` of the pairs ``(i[q], j[q])``,
#: ``[k, len(i)]``, advancing ``rng`` by ``k`` draws whatever the pairs.
DrawFn = Callable[[np.random.Generator, int, NDArray[np.intp], NDArray[np.intp]], FloatArray]


@dataclass(frozen=True)
class Tester:
    """One statistic's tests between any pairs of the same metrics: what is computed once (each metric's value
    ``values[V]``, and what ``draw`` reads), then :meth:`run` for the pairs asked (the ranking asks for a few at a
    time: MTME's ``AssignRanks`` reads only the pairs of the current cluster). The result of a pair does not depend
    on the other pairs run with it (:mod:`.draws`)."""

    values: FloatArray
    draw: DrawFn
    bytes_per_draw: int  # a draw's temporaries shared by the pairs (a chunk of draws stays under _CHUNK_BYTES)
    bytes_per_pair_draw: int  # and those of each pair
    pairs_quirk: bool = False
    #: BLAS threads for the draws' products (None: one per core the kernels use): one where the products are small, as
    #: OpenBLAS's threads made them 5x slower on a 2-core machine with other work; the counts run on every core in
    #: the kernels' own threads
    blas_threads: int | None = 1

    def run(self, pairs: Pairs, *, n_draws: int = 1000, seed: int = 12345, block_size: int = 1000,
            early_min: float = 0.02, early_max: float = 0.5) -> list[SigDiff]:
        from threadpoolctl import threadpool_limits

        _check_draw_args(n_draws, block_size)
        pi, pj = _pair_index(pairs, self.values.size)
        rng = np.random.default_rng(seed)
        per_draw = self.bytes_per_draw + self.bytes_per_pair_draw * max(pi.size, 1)
        chunk = max(1, min(int(block_size), _CHUNK_BYTES // max(1, per_draw)))
        with threadpool_limits(limits=self.blas_threads or native.cpus(), user_api="blas"):
            return run_pairs(self.values[pi] - self.values[pj], int(n_draws), chunk,
                             lambda k, live: self.draw(rng, k, pi[live], pj[live]), int(block_size),
                             float(early_min), float(early_max), self.pairs_quirk)


# --------------------------------------------------------------------------------------------------------- Pearson


def pearson_tester(metrics: ArrayLike, human: ArrayLike, *, zscore: bool = True) -> Tester:
    """PERM-BOTH of Pearson r (system level ``human[S]`` or pooled segment level ``[S, n]``; ``metrics[V,
    *human.shape]``, NaN allowed only where the human score is missing). With ``zscore`` each metric is first
    z-scored over the human-scored entries (MTME); a constant metric has no r (its pairs: NaN, no draws). The
    metrics are shifted by one common constant (Pearson ignores it, and a common shift keeps the swapped metrics
    the swaps of the shifted ones) and the human scores centred, so no variance is a difference of large sums. A
    metric whose variance is below 1e-12 of its sum of squares counts as constant
    (:func:`harness.core.correlation.pearson_from_sums`)."""
    h = np.asarray(human, dtype=np.float64)
    m = _metric_stack(metrics, h.shape)
    valid = ~np.isnan(h)
    _check_present(m, valid)
    x = zscore_valid(m, valid) if zscore else m
    ok = valid.ravel()
    y = h.ravel()[ok]
    nv = m.shape[0]
    if y.size < 3 or np.ptp(y) == 0 or nv == 0:
        return Tester(np.full(nv, np.nan), _no_draws, 8, 8)
    xs = x.reshape(nv, -1)[:, ok]
    bad = np.asarray(~np.isfinite(xs).all(axis=1), dtype=bool)  # a constant metric z-scored: no r
    y = y - y.mean()
    syy = float(y @ y)
    xs = np.where(bad[:, None], 0.0, xs)
    good = xs[~bad]
    xs = xs - (good.mean() if good.size else 0.0)
    n = float(y.size)
    base = np.stack([xs @ y, xs.sum(axis=1), np.einsum("vn,vn->v", xs, xs)], axis=1)  # [V, 3]
    steps = np.concatenate([(xs * y).T, xs.T, (xs * xs).T], axis=1)  # [n, 3V]: how a swapped entry moves each sum

    def r(sums: FloatArray) -> FloatArray:  # sums[..., 3] -> r
        return np.asarray(pearson_from_sums(n, sums[..., 1], 0.0, sums[..., 2], syy, sums[..., 0]))

    values = r(base)
    values[bad] = np.nan

    def draw(rng: np.random.Generator, k: int, a: NDArray[np.intp], b: NDArray[np.intp]) -> FloatArray:
        s = draw_bits(rng, k, h.shape).reshape(k, -1)[:, ok].astype(np.float64)
        used, at = _used(a, b, nv)
        mine = steps if used.size == nv else steps[:, (np.arange(3)[:, None] * nv + used).ravel()]
        g = (s @ mine).reshape(k, 3, used.size).transpose(0, 2, 1)  # [k, U, 3]
        ga, gb = g[:, at[a]], g[:, at[b]]
        return r(base[a] + gb - ga) - r(base[b] + ga - gb)

    return Tester(values, draw, 8 * ok.size + h.size + 8 * 3 * nv, 8 * 12)


def _used(a: NDArray[np.intp], b: NDArray[np.intp], nv: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """The metrics the pairs ``(a[q], b[q])`` use, sorted, and where each metric is among them (-1: unused): a draw
    computes the used metrics only (pairs that stopped early leave theirs out)."""
    used = np.unique(np.concatenate([a, b]))
    at = np.full(nv, -1, dtype=np.intp)
    at[used] = np.arange(used.size)
    return used, at


def _no_draws(rng: np.random.Generator, k: int, a: NDArray[np.intp], b: NDArray[np.intp]) -> FloatArray:
    raise AssertionError("no test with a finite delta draws here")


def pearson_pairs(metrics: ArrayLike, human: ArrayLike, pairs: Pairs, *, n_draws: int = 1000, seed: int = 12345,
                  zscore: bool = True, block_size: int = 1000, early_min: float = 0.02, early_max: float = 0.5
                  ) -> list[SigDiff]:
    """:func:`pearson_tester` run on ``pairs``."""
    return pearson_tester(metrics, human, zscore=zscore).run(
        pairs, n_draws=n_draws, seed=seed, block_size=block_size, early_min=early_min, early_max=early_max)


def _metric_stack(metrics: ArrayLike, shape: tuple[int, ...]) -> FloatArray:
    m = np.asarray(metrics, dtype=np.float64)
    if m.ndim != len(shape) + 1 or m.shape[1:] != shape:
        raise ValueError(f"metrics must be [V, {', '.join(map(str, shape))}] (the human scores' shape), got {m.shape}")
    return m


def _check_present(m: FloatArray, valid: NDArray[np.bool_]) -> None:
    if np.isnan(m[:, valid]).any():
        raise ValueError("a metric has NaN where the human score is present")


# ----------------------------------------------------------------------------------------------- pairwise accuracy


def pairwise_accuracy_tester(metrics: ArrayLike, human_sys: ArrayLike, *, lp_sizes: Sequence[int] | None = None
                             ) -> Tester:
    """PERM-BOTH of (global) pairwise accuracy: ``metrics[V, S]`` against ``human_sys[S]``, each metric z-scored over
    the systems with a human score (MTME ``CompareMetricsWithGlobalAccuracy``); with ``lp_sizes`` the systems are
    several language pairs concatenated and the statistic pools their pairs."""
    h = np.asarray(human_sys, dtype=np.float64)
    if h.ndim != 1:
        raise ValueError("human_sys must be 1-dimensional")
    m = _metric_stack(metrics, h.shape)
    valid = ~np.isnan(h)
    _check_present(m, valid)
    sizes = (h.size,) if lp_sizes is None else tuple(int(s) for s in lp_sizes)
    if sum(sizes) != h.size:
        raise ValueError("lp_sizes must add up to the number of systems")
    bounds = np.r_[0, np.cumsum(sizes)]
    z = zscore_valid(m, valid)

    def accuracy(ms: FloatArray) -> FloatArray:  # ms[..., S]
        agree = np.zeros(ms.shape[:-1])
        n_pairs = 0
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            a, p, _ = _agreement(np.ascontiguousarray(ms[..., lo:hi]), h[lo:hi], counts=True)
            agree += a
            n_pairs += p
        with np.errstate(invalid="ignore", divide="ignore"):
            return agree / n_pairs if n_pairs else np.full(ms.shape[:-1], np.nan)

    def draw(rng: np.random.Generator, k: int, a: NDArray[np.intp], b: NDArray[np.intp]) -> FloatArray:
        s = (draw_bits(rng, k, h.shape) & valid)[:, None, :]  # [k, 1, S]
        za, zb = z[a][None], z[b][None]
        return accuracy(np.where(s, zb, za)) - accuracy(np.where(s, za, zb))

    return Tester(accuracy(z), draw, h.size, 8 * 4 * h.size)


def pairwise_accuracy_pairs(metrics: ArrayLike, human_sys: ArrayLike, pairs: Pairs, *,
                            lp_sizes: Sequence[int] | None = None, n_draws: int = 1000, seed: int = 12345,
                            block_size: int = 1000, early_min: float = 0.02, early_max: float = 0.5
                            ) -> list[SigDiff]:
    """:func:`pairwise_accuracy_tester` run on ``pairs``."""
    return pairwise_accuracy_tester(metrics, human_sys, lp_sizes=lp_sizes).run(
        pairs, n_draws=n_draws, seed=seed, block_size=block_size, early_min=early_min, early_max=early_max)


# ------------------------------------------------------------------------------------------ soft pairwise accuracy


def soft_pairwise_accuracy_tester(metrics: ArrayLike, human_seg: ArrayLike, *, n_permutations: int = 1000,
                                  pce_seed: int = 4) -> Tester:
    """PERM-BOTH of soft pairwise accuracy (1 - PCE): MTME ``CompareMetricsWithPairwiseConfidenceError``
    (``perm_test='scores'``). ``metrics[V, S, n]`` are restricted to the complete block of ``human_seg[S, n]``
    (:func:`~harness.core.mtme.complete_block`) and z-scored there; ``delta`` is MTME's exactly (each metric's
    1 - PCE on its z-scores, the human p-values computed once); a draw's statistics are MTME's float32 computation
    with the permuted sums of the swapped metrics from one product per metric (see the module docstring)."""
    h0 = np.asarray(human_seg, dtype=np.float64)
    m0 = _metric_stack(metrics, h0.shape)
    nv = m0.shape[0]
    restricted = _restricted(h0, *m0, names=tuple(f"metric {v}" for v in range(nv)))
    h = restricted[0]
    if h.shape[0] < 2 or h.shape[1] == 0 or nv == 0:
        return Tester(np.full(nv, np.nan), _no_draws, 8, 8)
    m = np.stack(restricted[1:])
    s_sys, n = h.shape
    z = zscore_valid(m, np.ones(h.shape, dtype=bool))
    hp = _p_values(h, n_permutations, pce_seed)
    hp_upper = hp[_pairs(s_sys)]
    values = np.array([one_minus_pce(hp, _p_values(zv, n_permutations, pce_seed)) if np.isfinite(zv).all()
                       else math.nan for zv in z])
    signs = mtme_sign_matrix(n, n_permutations, pce_seed)
    sign_bits = np.packbits(signs > 0, axis=1, bitorder="little")  # [P, ceil(n / 8)]: the draws' products
    sign_groups = grouped_bits(sign_bits)  # the kernel's layout of them, once for every draw
    z32 = np.ascontiguousarray(np.nan_to_num(z), dtype=np.float32)  # MTME casts each swapped matrix: elementwise
    # [V, S, P]: each metric's permuted sums, (signs @ metric.T).T computed as metric @ signs.T (the layout the
    # kernel reads, no transposed copy)
    whole = native.aligned_empty((nv, s_sys, n_permutations), np.float32)  # hybrid_counts streams through it
    np.matmul(z32.reshape(-1, n), signs.T, out=whole.reshape(-1, n_permutations))
    totals = np.sum(z32, axis=2)  # [V, S]: MTME's float32 system scores

    def draw(rng: np.random.Generator, k: int, a: NDArray[np.intp], b: NDArray[np.intp]) -> FloatArray:
        swap = draw_bits(rng, k, (s_sys, n))
        used, at = _used(a, b, nv)
        masked = z32[used][None] * swap[:, None]  # [k, U, S, n]: each used metric on the swapped entries
        moved = _signed_sums(masked.reshape(-1, n), sign_bits, sign_groups).reshape(-1, s_sys, n_permutations)  # [k * U, S, P]
        moved_totals = np.sum(masked, axis=3).reshape(-1, s_sys)  # [k * U, S]
        rows = np.arange(k)[:, None] * used.size  # the rows of moved of each draw's pairs
        p = _hybrid_counts(whole, moved, totals, moved_totals, a, b, (rows + at[a]).ravel(),
                           (rows + at[b]).ravel()) / n_permutations
        spa = (1.0 - np.mean(np.abs(hp_upper - p), axis=1)).reshape(k, a.size, 2)
        return spa[:, :, 0] - spa[:, :, 1]

    # per draw: the masked metrics and their moved sums ([U, S, n] and [U, S, P]); per pair: the counts
    return Tester(values, draw, 4 * nv * s_sys * (n + n_permutations), 16 * s_sys * s_sys)


#: :func:`_signed_sums`: a tile of the kernel is ``_SS_LANES`` columns (``SS_LANES`` of the kernel); a column's sums
#: are added up in groups of ``SS_GROUP`` blocks of 8 segments.
_SS_LANES = 16


def _signed_sums(x: NDArray[np.float32], bits: NDArray[np.uint8], grouped: NDArray[np.uint8] | None = None
                 ) -> NDArray[np.float32]:
    """``x[C, n] @ signs.T`` for a +-1 matrix ``signs[P, n]`` packed in ``bits[P, ceil(n / 8)]`` (``np.packbits(signs
    > 0, axis=1, bitorder="little")``), in float32, without multiplying: for every block of 8 segments the 256 signed
    sums of each column's 8 values are tabled (pairs ``(+-x0) + (+-x1)``, then fours ``pair01 + pair23``, then eights
    ``four0123 + four4567``), and a permutation's sum adds the entries its bytes pick: within each group of
    ``SS_GROUP`` blocks left to right, then the groups' sums left to right. The compiled ``signed_sums`` (one addition
    per 8 segments where the matrix product makes 8 multiply-adds; measured on 640 columns x 3000 segments x 1000
    permutations: 14 ms on one core, 8 ms on two, where OpenBLAS's float32 product takes 40 and 19 ms) or, without
    it, the same float32 operations in the same order in numpy (10 times slower than the product): the same sums to
    the last bit. They are the product's up to float32 rounding, which is all MTME's own sums of a swapped metric are
    (another BLAS, another order); the tables of ru-en's study came out identical with either. ``grouped``:
    ``grouped_bits(bits)``, when the caller has it (the same bits for every draw of a test)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    bits = np.ascontiguousarray(bits, dtype=np.uint8)
    n_c, n = x.shape
    n_p, nb = bits.shape
    if nb * 8 < n:
        raise ValueError(f"bits cover {nb * 8} segments, x has {n}")
    kern = native.kernels(KERNELS)
    if kern is not None:
        bits = grouped_bits(bits) if grouped is None else np.ascontiguousarray(grouped, dtype=np.uint8)
        out = native.aligned_empty((n_c, n_p), np.float32)  # hybrid_counts streams through its rows
        tiles = -(-n_c // _SS_LANES)
        threads = max(1, min(native.cpus(), tiles))
        size = n_p * _SS_LANES + SS_GROUP * 256 * _SS_LANES  # a multiple of 16 floats: every row 64-byte aligned
        buf = native.aligned_empty((threads, size), np.float32)  # the tables' 32-byte rows within cache lines
        starts = [tiles * t // threads for t in range(threads + 1)]

        def run(t0: int, t1: int) -> None:
            for t in range(t0, t1):
                params = np.array([n_c, n, n_p, nb, starts[t], starts[t + 1], size], dtype=np.int64)
                if kern.signed_sums(x, bits, params, buf[t], out) < 0:
                    raise RuntimeError("signed_sums: its scratch is smaller than the kernel's tables")

        native.in_threads(run, threads, threads)
        return out
    return _signed_sums_numpy(x, bits)


def _signed_sums_numpy(x: NDArray[np.float32], bits: NDArray[np.uint8]) -> NDArray[np.float32]:
    """:func:`_signed_sums` in numpy: the kernel's float32 operations, in its order (the columns as the last axis,
    so a permutation's table entries are whole rows)."""
    n_c, n = x.shape
    nb = bits.shape[1]
    v = np.zeros((nb * 8, n_c), dtype=np.float32)
    v[:n] = x.T
    v = v.reshape(nb, 8, n_c)
    e16, e256 = np.arange(16), np.arange(256)
    out = np.zeros((bits.shape[0], n_c), dtype=np.float32)
    for g0 in range(0, nb, SS_GROUP):
        a, c = v[g0:g0 + SS_GROUP, 0::2], v[g0:g0 + SS_GROUP, 1::2]  # [gb, h, C]: segments 2h, 2h + 1
        q = np.stack([-a - c, a - c, c - a, a + c], axis=2)  # [gb, h, signs (-,-), (+,-), (-,+), (+,+), C]
        lo = q[:, 0, e16 & 3] + q[:, 1, e16 >> 2]  # [gb, 16, C]
        hi = q[:, 2, e16 & 3] + q[:, 3, e16 >> 2]
        tab = lo[:, e256 & 15] + hi[:, e256 >> 4]  # [gb, 256, C]
        acc = tab[0][bits[:, g0]]  # [P, C]
        for b in range(1, tab.shape[0]):
            acc += tab[b][bits[:, g0 + b]]
        if g0 == 0:
            out = acc
        else:
            out += acc
    return np.ascontiguousarray(out.T)


def _hybrid_counts(whole: NDArray[np.float32], moved: NDArray[np.float32], totals: NDArray[np.float32],
                   moved_totals: NDArray[np.float32], a: NDArray[np.intp], b: NDArray[np.intp], ra: NDArray[np.intp],
                   rb: NDArray[np.intp]) -> NDArray[np.int64]:
    """The permutation counts of both swapped metrics of each test ``q`` (metrics ``a[q % L]``, ``b[q % L]``; their
    moved sums in rows ``ra[q]``, ``rb[q]`` of ``moved``): ``[Q * 2, pairs]``, ``[q, 0]`` for ``i'`` and ``[q, 1]``
    for ``j'``. The float32 operations of the compiled kernel (``hybrid_counts``: no swapped metric in memory) or,
    without it, the same operations in numpy and :func:`~harness.core.mtme.pce._exceed_counts`."""
    s_sys, n_p = whole.shape[1], whole.shape[2]
    q = ra.size
    aa, bb = np.tile(a, q // max(a.size, 1)), np.tile(b, q // max(b.size, 1))
    kern = native.kernels(KERNELS)
    if kern is not None and s_sys <= 512:
        idx = np.ascontiguousarray(np.stack([aa, bb, ra, rb], axis=1), dtype=np.int64)
        whole, moved = np.ascontiguousarray(whole, np.float32), np.ascontiguousarray(moved, np.float32)
        totals, moved_totals = np.ascontiguousarray(totals, np.float32), np.ascontiguousarray(moved_totals, np.float32)
        counts = np.empty((2 * q, s_sys * (s_sys - 1) // 2), dtype=np.int64)
        threads = max(1, min(native.cpus(), q))
        buf = native.aligned_empty((threads, 2 * s_sys * n_p), np.float32)
        starts = [q * t // threads for t in range(threads + 1)]

        def run(t0: int, t1: int) -> None:
            for t in range(t0, t1):
                params = np.array([s_sys, n_p, starts[t], starts[t + 1]], dtype=np.int64)
                kern.hybrid_counts(whole.ctypes.data, moved.ctypes.data, totals.ctypes.data, moved_totals.ctypes.data,
                                   idx.ctypes.data, params.ctypes.data, buf[t].ctypes.data, counts.ctypes.data)

        native.in_threads(run, threads, threads)
        return counts
    d = moved[rb] - moved[ra]  # [Q, S, P]
    dt = moved_totals[rb] - moved_totals[ra]
    partial = np.stack([whole[aa] + d, whole[bb] - d], axis=1)  # [Q, 2, S, P]
    sums = np.stack([totals[aa] + dt, totals[bb] - dt], axis=1)
    return _exceed_counts(partial.reshape(-1, s_sys, n_p), sums.reshape(-1, s_sys))


def soft_pairwise_accuracy_pairs(metrics: ArrayLike, human_seg: ArrayLike, pairs: Pairs, *, n_draws: int = 1000,
                                 seed: int = 12345, n_permutations: int = 1000, pce_seed: int = 4,
                                 block_size: int = 1000, early_min: float = 0.02, early_max: float = 0.5
                                 ) -> list[SigDiff]:
    """:func:`soft_pairwise_accuracy_tester` run on ``pairs``."""
    return soft_pairwise_accuracy_tester(metrics, human_seg, n_permutations=n_permutations, pce_seed=pce_seed).run(
        pairs, n_draws=n_draws, seed=seed, block_size=block_size, early_min=early_min, early_max=early_max)


# --------------------------------------------------------------------------------------------------------- acc_eq


#: What a variant's item value depends on, per pair outcome (concordant, discordant, metric tie, human tie, both
#: tie): acc23 and 23 on the correct pairs (concordant, or tied on both sides); tau-b on C - D and the metric ties.
_FEATURES = {"acc23": np.array([[1], [0], [0], [0], [1]], dtype=np.int64),
             "23": np.array([[1], [0], [0], [0], [1]], dtype=np.int64),
             "b": np.array([[1, 0], [-1, 0], [0, 1], [0, 0], [0, 1]], dtype=np.int64)}


def acc_eq_tester(metrics: ArrayLike, human: ArrayLike, *, variant: str = "acc23", average_by: str = "item",
                  epsilons: Sequence[float] | None = None, replace_nans_with_zeros: bool = False) -> Tester:
    """MTME's pair-swap test (``PairwisePermutationSigDiff``, ``perm_test='pairs'``; WMT averages by item) for every
    pair: each metric's tie threshold ``epsilon`` is optimised once on the real data (:func:`acc_eq`) unless given;
    each item's system pairs get fixed outcomes under each metric; a draw swaps, with a fair coin per pair of every
    item, the two metrics' outcomes, and both item averages are recomputed (MTME's float operations). Items with
    fewer than 2 human scores are left out (MTME would divide by zero on an item with exactly one). Groups are
    MTME's ``average_by`` groups ('item', 'sys' or 'none')."""
    if variant not in _FEATURES:
        raise ValueError(f"variant must be one of {tuple(_FEATURES)}, got {variant!r}")
    _check_average_by(average_by)
    h = np.asarray(human, dtype=np.float64)
    if h.ndim != 2:
        raise ValueError("human must be [S, n]")
    m = _metric_stack(metrics, h.shape)
    _check_present(m, ~np.isnan(h))
    nv = m.shape[0]
    if epsilons is None:
        if variant == "b":
            raise ValueError("variant 'b' needs explicit epsilons")
        epsilons = [acc_eq(mv, h, average_by=average_by, variant=variant).epsilon for mv in m]
    eps = [float(e) for e in epsilons]
    if len(eps) != nv or min(eps, default=0.0) < 0:
        raise ValueError("epsilons must be one non-negative threshold per metric")
    hg = _groups(h, average_by)
    valid = ~np.isnan(hg)
    keep = valid.sum(axis=1) >= 2
    hg, valid = hg[keep], valid[keep]
    g, s_sys = hg.shape
    if g * s_sys * max(s_sys - 1, 0) // 2 > _MAX_OPT_PAIRS:
        raise ValueError("too many pairs for the pairs test (use average_by='item' or 'sys')")
    i, j = _pairs(s_sys)
    pv = valid[:, i] & valid[:, j]  # [G, Q]: the item's pairs both humans scored
    feat = _FEATURES[variant]
    dims = feat.shape[1]
    outcome = np.zeros((g, i.size, nv * dims), dtype=np.float32)  # each metric's features of each pair's outcome
    counts = np.zeros((nv, g, dims), dtype=np.int64)
    ytie = None
    for v in range(nv):
        cat = _categories(_groups(m[v], average_by)[keep], hg, eps[v], i, j)
        f = np.where(pv[..., None], feat[cat], 0)  # [G, Q, D]
        outcome[:, :, v * dims:(v + 1) * dims] = f
        counts[v] = f.sum(axis=1)
        if ytie is None:
            ytie = (((cat == _TY) | (cat == _TXY)) & pv).sum(axis=1)
    tot = pv.sum(axis=1, dtype=np.int64)  # each item's scored pairs (a new, contiguous array)
    t = tot.astype(np.float64)  # and as the divisor of its value, once for every draw

    def averages(f: NDArray[np.int64]) -> FloatArray:  # features [..., G, D] -> the mean item value [...]
        with np.errstate(divide="ignore", invalid="ignore"):
            if variant == "acc23":
                vals = f[..., 0].astype(np.float64) / t
            elif variant == "23":
                vals = (2 * f[..., 0] - tot).astype(np.float64) / t
            else:
                cd, xtie = f[..., 0].astype(np.float64), f[..., 1]
                vals = np.where((xtie == tot) | (ytie == tot), np.nan, cd / np.sqrt(t - xtie) / np.sqrt(t - ytie))
        if not np.isnan(vals).any():  # np.average of each row: the same pairwise sums
            return vals.mean(axis=-1) if g else np.zeros(vals.shape[:-1])
        flat = vals.reshape(-1, g)
        return np.array([_mtme_average(row, replace_nans_with_zeros) for row in flat]).reshape(vals.shape[:-1])

    # compiled: each test's two averages without its [G] arrays (acc23 and 23, whose item values are never NaN)
    kern = native.kernels(KERNELS) if variant in ("acc23", "23") and g else None
    item_counts = np.ascontiguousarray(counts[:, :, 0]) if kern is not None else counts  # [V, G]

    def draw(rng: np.random.Generator, k: int, a: NDArray[np.intp], b: NDArray[np.intp]) -> FloatArray:
        coins = draw_bits(rng, k, (g, i.size)).transpose(1, 0, 2).astype(np.float32)  # [G, k, Q]
        used, at = _used(a, b, nv)
        cols = (used[:, None] * dims + np.arange(dims)).ravel()
        mine = outcome if used.size == nv else outcome[:, :, cols]
        moved = np.rint(np.matmul(coins, mine)).astype(np.int64)  # [G, k, U*D]: exact small integers
        moved = np.ascontiguousarray(moved.reshape(g, k, used.size, dims).transpose(1, 2, 0, 3))  # [k, U, G, D]
        if kern is not None:
            return _acc_eq_draws(kern, item_counts, moved, tot, t, a, b, at, variant)
        shift = moved[:, at[b]] - moved[:, at[a]]  # [k, L, G, D]: what a swap gives a from b
        return averages(counts[a][None] + shift) - averages(counts[b][None] - shift)

    per_pair = 8 * 6 if kern is not None else 8 * g * dims * 6
    return Tester(averages(counts), draw, 4 * g * i.size + 8 * 2 * g * nv * dims, per_pair, pairs_quirk=True)


def _acc_eq_draws(kern: Any, counts: NDArray[np.int64], moved: NDArray[np.int64], tot: NDArray[np.int64],
                  t: FloatArray, a: NDArray[np.intp], b: NDArray[np.intp], at: NDArray[np.intp], variant: str
                  ) -> FloatArray:
    """The compiled ``acc_eq_draws``: ``[k, L]``, what :func:`acc_eq_tester`'s numpy path computes for the tests
    ``(a[l], b[l])`` from the item counts ``counts[V, G]``, the items' pair counts ``tot[G]`` (int64, and as float64
    ``t``) and the draws' moved counts ``moved[k, U, G, 1]``, in the same float64 operations (numpy's pairwise sums),
    the tests split over the kernels' threads."""
    k, n_used, g = moved.shape[0], moved.shape[1], moved.shape[2]
    n_tests = a.size
    idx = np.ascontiguousarray(np.stack([a, b, at[a], at[b]], axis=1), dtype=np.int64)
    out = np.empty((k, n_tests), dtype=np.float64)
    code = 1 if variant == "23" else 0

    def run(l0: int, l1: int) -> None:
        params = np.array([g, n_used, k, n_tests, code, l0, l1], dtype=np.int64)
        kern.acc_eq_draws(counts, moved, tot, t, idx, params, out)

    native.in_threads(run, n_tests, max(1, min(native.cpus(), n_tests)))
    return out


def acc_eq_pairs(metrics: ArrayLike, human: ArrayLike, pairs: Pairs, *, variant: str = "acc23",
                 average_by: str = "item", epsilons: Sequence[float] | None = None,
                 replace_nans_with_zeros: bool = False, n_draws: int = 1000, seed: int = 12345,
                 block_size: int = 1000, early_min: float = 0.02, early_max: float = 0.5) -> list[SigDiff]:
    """:func:`acc_eq_tester` run on ``pairs``."""
    return acc_eq_tester(metrics, human, variant=variant, average_by=average_by, epsilons=epsilons,
                         replace_nans_with_zeros=replace_nans_with_zeros).run(
        pairs, n_draws=n_draws, seed=seed, block_size=block_size, early_min=early_min, early_max=early_max)
