"""Permutation p-values and soft pairwise accuracy (Thompson et al. 2024; MTME ``pce.py``): 1 - PCE between the
human and the metric p-values of every system pair, with MTME's own fixed generator (numbers equal MTME's bit for bit)."""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ... import native
from .accuracy import _pairs
from .inputs import _MAX_BYTES, FloatArray, ScoreFn, _as_float, _check_same_shape
from .kernels import KERNELS


@functools.lru_cache(maxsize=8)
def _sign_matrix_cached(n_permutations: int, n_segments: int, seed: int) -> NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    two_m_minus_one = rng.random(size=(n_permutations, n_segments), dtype=np.float32)
    np.rint(two_m_minus_one, out=two_m_minus_one, casting="same_kind")
    two_m_minus_one *= 2.0
    two_m_minus_one -= 1.0
    two_m_minus_one.setflags(write=False)
    return two_m_minus_one


def mtme_sign_matrix(n_segments: int, n_permutations: int = 1000, seed: int = 4) -> NDArray[np.float32]:
    """The +-1 float32 sign matrix ``[n_permutations, n_segments]`` of MTME ``pce.compute_pairwise_p_values``.

    Exactly MTME's calls: ``default_rng(seed).random(size=(P, n), dtype=np.float32)``, ``np.rint`` in place
    (round half to even, so a uniform of exactly 0.5 gives 0), ``*= 2.0``, ``-= 1.0``. Entry ``+1`` means
    segment ``k`` keeps its owner in permutation ``p`` (``m = 1``), ``-1`` means the two systems swap it. The same
    matrix serves every system pair, the human and the metric scores (same ``n`` and seed). Read-only (cached).
    """
    if n_permutations < 1 or n_segments < 0:
        raise ValueError("n_permutations must be >= 1 and n_segments >= 0")
    return _sign_matrix_cached(int(n_permutations), int(n_segments), int(seed))


def pairwise_p_values(scores: ArrayLike, n_permutations: int = 1000, seed: int = 4) -> FloatArray:
    """Paired permutation p-values for "system i is better than system j": MTME ``pce.compute_pairwise_p_values``.

    ``scores[S, n]`` segment scores. Reproduced exactly: float32 scores, the sign matrix of
    :func:`mtme_sign_matrix` (same generator, same draws, shared by all pairs), ``partial = matmul(signs,
    scores.T)`` (the very same float32 BLAS call, so the same rounding), system scores = float32 ``np.sum`` over
    segments, ``null_delta = partial[:, i] - partial[:, j]``, ``test_delta = sys[i] - sys[j]`` (float32), and
    ``p[i, j] = #{null_delta >= test_delta} / n_permutations``: one-sided (i better than j), ``>=`` so ties count,
    no ``+1`` smoothing, the identity permutation is not added. Returns ``[S, S]`` float64 with the upper triangle
    (``i < j``) filled and NaN elsewhere.
    """
    seg = _as_float(scores, "scores", 2)
    if np.isnan(seg).any():
        raise ValueError("scores must not contain NaN (restrict to complete segments first)")
    return _p_values(seg, n_permutations, seed)


def _p_values(seg: FloatArray, n_permutations: int, seed: int) -> FloatArray:
    """:func:`pairwise_p_values` of checked scores (``[S, n]`` float64, no NaN)."""
    num_systems, num_segments = seg.shape
    signs = mtme_sign_matrix(num_segments, n_permutations, seed)
    # C order, as MTME's matrix is (reshaped from lists): the BLAS call and numpy's pairwise float32 sum round by
    # memory layout, so an F-ordered input (``scores[:, cols]`` is one) would change the p-values
    seg32 = np.ascontiguousarray(seg, dtype=np.float32)
    sys_scores = np.sum(seg32, axis=1)
    # MTME's BLAS call, then each system's permuted sums as one contiguous row
    partial = np.ascontiguousarray(np.matmul(signs, seg32.T).T)
    p_vals = np.full((num_systems, num_systems), np.nan)
    p_vals[_pairs(num_systems)] = _exceed_counts(partial[None], sys_scores[None])[0] / n_permutations
    return p_vals


def _exceed_counts(partial: NDArray[np.float32], sys_scores: NDArray[np.float32]) -> NDArray[np.int64]:
    """``counts[b, pair]``: for each matrix ``b`` and system pair ``i < j`` (:func:`_pairs` order), the number of
    permutations ``p`` with ``partial[b, i, p] - partial[b, j, p] >= sys_scores[b, i] - sys_scores[b, j]``, in
    float32 as MTME computes it (``partial[B, S, P]``, ``sys_scores[B, S]``). Compiled (:data:`KERNELS`: one pass, the
    matrices split between the cores), or numpy, row against the rows below it, when the kernel cannot be had
    (the same counts)."""
    partial = np.ascontiguousarray(partial, dtype=np.float32)  # the kernel reads raw memory: this type, dense
    sys_scores = np.ascontiguousarray(sys_scores, dtype=np.float32)
    bsz, s, n_p = partial.shape
    counts = np.empty((bsz, s * (s - 1) // 2), dtype=np.int64)
    kern = native.kernels(KERNELS)
    if kern is not None:
        def run(b0: int, b1: int) -> None:
            params = np.array([s, n_p, b0, b1], dtype=np.int64)
            kern.exceed_counts(partial.ctypes.data, sys_scores.ctypes.data, params.ctypes.data, counts.ctypes.data)

        native.in_threads(run, bsz, max(1, min(native.cpus(), bsz // 8, bsz * counts.shape[1] * n_p // 2**20)))
        return counts
    buf = np.empty((bsz, max(s - 1, 1), n_p), dtype=np.float32)
    flags = np.empty(buf.shape, dtype=bool)
    k = 0
    for a in range(s - 1):  # pairs (a, a+1..S-1): np.triu_indices order, on contiguous permutation vectors
        w = s - a - 1
        np.subtract(partial[:, a:a + 1], partial[:, a + 1:], out=buf[:, :w])
        test_delta = sys_scores[:, a:a + 1] - sys_scores[:, a + 1:]
        np.greater_equal(buf[:, :w], test_delta[:, :, None], out=flags[:, :w])
        counts[:, k:k + w] = np.count_nonzero(flags[:, :w], axis=2)
        k += w
    return counts


def one_minus_pce(human_p_values: ArrayLike, metric_p_values: ArrayLike) -> float:
    """1 - pairwise confidence error: MTME ``pce.compute_one_minus_pce``.

    ``1 - mean(|p_human - p_metric|)`` over the upper triangle (``i < j``) of the two ``[S, S]`` p-value matrices.
    NaN for fewer than 2 systems.
    """
    hp = _as_float(human_p_values, "human_p_values", 2)
    mp = _as_float(metric_p_values, "metric_p_values", 2)
    _check_same_shape(hp, mp, "human_p_values and metric_p_values")
    idx = _pairs(hp.shape[0])
    if idx[0].shape[0] == 0:
        return math.nan
    return float(1.0 - np.mean(np.abs(hp - mp)[idx]))


def complete_block(human_seg: ArrayLike) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Systems and segments soft pairwise accuracy is computed on: ``(system_idx, segment_idx)``.

    MTME keeps the systems that have at least one human score (``data.GetCorrelations``), then
    ``stats.PairwiseConfidenceError`` drops every (system, segment) entry whose gold score is None and reshapes
    the rest to ``[num_sys, -1]``; that is only well defined when the missing scores are whole segments (the WMT
    data), and then it equals keeping the segments scored for *every* kept system. We do exactly that for any
    pattern of NaN: drop all-NaN systems, then every segment with a NaN among the remaining systems.
    """
    return _complete_block(_as_float(human_seg, "human_seg", 2))


def _complete_block(h: FloatArray) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    ok = ~np.isnan(h)
    rows = np.flatnonzero(ok.any(axis=1))
    cols = np.flatnonzero(ok[rows].all(axis=0)) if rows.size else np.zeros(0, dtype=np.intp)
    return rows, cols


def _restricted(human_seg: ArrayLike, *metrics: ArrayLike, names: tuple[str, ...]) -> tuple[FloatArray, ...]:
    """The human scores and each metric (``[S, n]``, or ``[S, n, K]`` statistics) on the :func:`complete_block`
    of the human scores, a metric NaN there refused; the arrays themselves when the block is all of them (dense
    human scores, as the demo's MQM: no gathering), so the callers only read what they get."""
    h = _as_float(human_seg, "human_seg", 2)
    rows, cols = _complete_block(h)
    whole = rows.size == h.shape[0] and cols.size == h.shape[1]

    def block(a: FloatArray) -> FloatArray:  # two takes: a third of the time of a[np.ix_(rows, cols)]
        return a if whole else (a if rows.size == a.shape[0] else a.take(rows, axis=0)).take(cols, axis=1)

    out = [block(h)]
    for m, name in zip(metrics, names):
        arr = np.asarray(m, dtype=np.float64)
        if arr.shape[:2] != h.shape:
            raise ValueError(f"{name} must have shape {h.shape} (+ trailing dims), got {arr.shape}")
        sub = block(arr)
        if np.isnan(sub).any():
            raise ValueError(f"{name} has NaN where the human score is present")
        out.append(sub)
    return tuple(out)


def soft_pairwise_accuracy(
    metric_seg: ArrayLike,
    human_seg: ArrayLike,
    *,
    n_permutations: int = 1000,
    seed: int = 4,
    human_p_values: ArrayLike | None = None,
) -> float:
    """System-level soft pairwise accuracy (1 - PCE): MTME ``stats.PairwiseConfidenceError`` (WMT24 'pce').

    ``p_human = pairwise_p_values(human)``, ``p_metric = pairwise_p_values(metric)`` (both seed 4, hence the same
    sign matrix) on the :func:`complete_block` of the human scores, then :func:`one_minus_pce`. Values equal
    MTME's bit for bit. ``human_p_values`` may pass a precomputed ``pairwise_p_values`` of that block (it is the
    same for every metric). NaN if fewer than 2 systems or no complete segment remain.
    """
    h, m = _restricted(human_seg, metric_seg, names=("metric_seg",))
    if h.shape[0] < 2 or h.shape[1] == 0:
        return math.nan
    hp = _p_values(h, n_permutations, seed) if human_p_values is None else human_p_values
    return one_minus_pce(hp, _p_values(m, n_permutations, seed))


def pairwise_p_values_corpus(
    stats: ArrayLike, score_fn: ScoreFn, n_permutations: int = 1000, seed: int = 4
) -> FloatArray:
    """:func:`pairwise_p_values` for a corpus-level metric computed from per-segment sufficient statistics.

    ``stats[S, n, K]``; ``score_fn(sums[..., K]) -> scores[...]`` (e.g. corpus BLEU). Corpus BLEU is not a sum of
    segment scores, so the permutation acts on the statistics: with MTME's sign matrix ``s`` (same draws as
    :func:`mtme_sign_matrix`, so the same permutations as for the human scores) and ``m = (s == +1)``, permutation
    ``p`` of pair ``(i, j)`` builds two pseudo-systems by swapping the two systems' *segment statistics* on the
    segments where ``m[p, k] == 0``: ``A' = sum_k m*stats_i + (1-m)*stats_j`` and ``B' = sum_k (1-m)*stats_i +
    m*stats_j`` (MTME's ``scores0`` / ``scores1``), ``null_delta = score_fn(A') - score_fn(B')``, ``test_delta =
    score_fn(sum stats_i) - score_fn(sum stats_j)``, ``p[i, j] = #{null_delta >= test_delta} / n_permutations``.
    With ``score_fn = sum`` this is MTME's statistic exactly. Sums are float64 matrix products (exact for integer
    statistics), not float32. Returns ``[S, S]`` with the upper triangle filled, NaN elsewhere.
    """
    st = np.asarray(stats, dtype=np.float64)
    if st.ndim != 3:
        raise ValueError(f"stats must be [S, n, K], got shape {st.shape}")
    if np.isnan(st).any():
        raise ValueError("stats must not contain NaN")
    num_systems, num_segments, k = st.shape
    m01 = (mtme_sign_matrix(num_segments, n_permutations, seed) > 0).astype(np.float64)
    totals = st.sum(axis=1)  # [S, K]
    kept = (m01 @ st.transpose(1, 0, 2).reshape(num_segments, num_systems * k)).reshape(-1, num_systems, k)
    sys_scores = np.asarray(score_fn(totals), dtype=np.float64)
    p_vals = np.full((num_systems, num_systems), np.nan)
    i, j = _pairs(num_systems)
    step = max(1, _MAX_BYTES // (8 * 4 * n_permutations * max(k, 1)))
    for lo in range(0, i.shape[0], step):
        ii, jj = i[lo:lo + step], j[lo:lo + step]
        a = kept[:, ii] + (totals[jj] - kept[:, jj])  # A': i's kept segments + j's swapped-in ones
        b = kept[:, jj] + (totals[ii] - kept[:, ii])  # B'
        null_delta = np.asarray(score_fn(a), dtype=np.float64) - np.asarray(score_fn(b), dtype=np.float64)
        test_delta = sys_scores[ii] - sys_scores[jj]
        p_vals[ii, jj] = np.sum(null_delta >= test_delta, axis=0) / n_permutations
    return p_vals


def soft_pairwise_accuracy_corpus(
    stats: ArrayLike,
    score_fn: ScoreFn,
    human_seg: ArrayLike,
    *,
    n_permutations: int = 1000,
    seed: int = 4,
    human_p_values: ArrayLike | None = None,
) -> float:
    """Soft pairwise accuracy of a corpus-level metric (e.g. corpus BLEU) from sufficient statistics.

    As :func:`soft_pairwise_accuracy` (same :func:`complete_block`, same human p-values, same seed and hence the
    same permutations), but the metric's p-values come from :func:`pairwise_p_values_corpus` on
    ``stats[S, n, K]`` restricted to that block: corpus BLEU of the kept segments, and of the pseudo-systems that
    swap segment statistics.
    """
    h, st = _restricted(human_seg, stats, names=("stats",))
    if st.ndim != 3:
        raise ValueError("stats must be [S, n, K]")
    if h.shape[0] < 2 or h.shape[1] == 0:
        return math.nan
    hp = pairwise_p_values(h, n_permutations, seed) if human_p_values is None else human_p_values
    return one_minus_pce(hp, pairwise_p_values_corpus(st, score_fn, n_permutations, seed))
