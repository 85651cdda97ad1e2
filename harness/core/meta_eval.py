"""WMT metrics-task meta-evaluation statistics, computed exactly as google-research/mt-metrics-eval (MTME) does.

A vectorised numpy re-implementation of MTME (commit ``68a481aea1a787392d55af8f76ac8ef40c5f4664``: ``stats.py``,
``pce.py``, ``tau_optimization.py``, ``tasks.py``) whose numbers equal MTME's own code on the same inputs (tests
carry MTME's cases). MTME is not a dependency. Pure core: arrays in, numbers out; no file I/O, no global RNG;
scipy only for ``zscore``, imported lazily; the pair counts of the permutation p-values and of pairwise accuracy
in compiled kernels (:mod:`._meta_eval_kernel`, mapped by :mod:`harness.native`) when they can be had, else numpy
(the same counts).
Conventions and randomness are described in the comment below.
"""

from __future__ import annotations

import ctypes
import functools
import math
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import native
from .correlation import pearson_from_sums

# Conventions
# -----------
# - Matrices are ``systems x items``: ``metric[S, n]``, ``human[S, n]``, float64; NaN = missing. Human scores may be
#   sparse; a metric score that is NaN where the human score is present is an input error (``ValueError``), except
#   in :func:`tau_optimization` / :func:`acc_eq`, which drop such entries as MTME's ``tau_optimization`` does.
# - Higher is better for both (callers orient error-like scores first, e.g. negate MQM penalties or TER).
# - MTME packs a matrix as a system-major vector (``Correlation.gold_scores``); ``metric.ravel()`` is that vector,
#   and ``average_by`` has MTME's meaning: 'item' = one group per item (column), 'sys' = one per system (row),
#   'none' = one group of everything.
# - Statistics WMT23/24/25 use (``tasks.WMT23``/``WMT24``/``WMT25``): system-level pairwise accuracy
#   (:func:`pairwise_accuracy`, :func:`global_pairwise_accuracy`), system-level soft pairwise accuracy = 1 - PCE
#   (:func:`soft_pairwise_accuracy`), segment-level acc_eq = ``KendallWithTiesOpt(variant='acc23',
#   sample_rate=1.0, average_by='item')`` (:func:`acc_eq`), and their significance tests
#   (:func:`pairwise_accuracy_test`, :func:`soft_pairwise_accuracy_test`: PERM-BOTH, ``perm_test='scores'``;
#   :func:`acc_eq_pairs_test`: ``perm_test='pairs'``).
#
# Randomness
# ----------
# - The permutation p-values behind soft pairwise accuracy use MTME's own fixed generator
#   (``default_rng(seed=4)``, float32 uniforms rounded to a +-1 sign matrix): numbers equal MTME's bit for bit.
# - Significance tests between two metrics draw from ``numpy.random.default_rng(seed)``; MTME uses the unseeded
#   global ``np.random`` there, so the *procedure* is MTME's but individual p-values are not MTME's.

__all__ = [
    "MTME_COMMIT", "VARIANTS",
    "AccEq", "SigDiff", "TauOptimization",
    "acc_eq", "acc_eq_pairs_test", "complete_block", "global_pairwise_accuracy", "kendall_variants",
    "kendall_variants_grouped", "mtme_sign_matrix", "one_minus_pce", "pairwise_accuracy",
    "pairwise_accuracy_test", "pairwise_agreement", "pairwise_p_values", "pairwise_p_values_corpus",
    "pearson_rows", "pearson_test", "perm_both_test", "soft_pairwise_accuracy", "soft_pairwise_accuracy_corpus",
    "soft_pairwise_accuracy_test", "tau_optimization",
]

#: The MTME commit this module was transcribed from and cross-checked against.
MTME_COMMIT = "68a481aea1a787392d55af8f76ac8ef40c5f4664"
#: Kendall variants of MTME ``stats.KendallVariants``.
VARIANTS: tuple[str, ...] = ("b", "c", "23", "acc23")

FloatArray = NDArray[np.float64]
ScoreFn = Callable[[FloatArray], FloatArray]
Stat = Callable[[FloatArray, FloatArray], "float | FloatArray"]

_AVERAGE_BY = ("item", "sys", "none")
_MAX_BYTES = 64 * 2**20  # temporaries per chunk of draws
_MAX_OPT_PAIRS = 50_000_000  # tau optimization sorts all pairs at once; the pairs test indexes all pairs
_LONG_GROUP = 2000  # groups longer than this are counted block-wise

# Pair categories of MTME's Kendall sufficient statistics (tau_optimization.TauSufficientStats).
_CON, _DIS, _TX, _TY, _TXY = 0, 1, 2, 3, 4  # concordant, discordant, tie in metric only, human only, both


class SigDiff(NamedTuple):
    """Result of a significance test "is metric B better than metric A" (MTME ``PermutationSigDiff``)."""

    delta: float  #: statistic(B) - statistic(A)
    p_value: float  #: #{delta' >= delta} / n_draws (one-sided, H1: B better); NaN if delta is not finite
    n_draws: int  #: draws actually used (fewer than requested after early stopping)


class AccEq(NamedTuple):
    """acc_eq (tie-calibrated pairwise accuracy) and the global tie threshold that maximises it."""

    value: float
    epsilon: float


@dataclass(frozen=True)
class TauOptimization:
    """MTME ``tau_optimization.TauOptimizationResult``: every candidate threshold and its mean tau."""

    thresholds: FloatArray
    taus: FloatArray
    best_threshold: float
    best_tau: float


# ----------------------------------------------------------------------------------------------------------------
# Input helpers
# ----------------------------------------------------------------------------------------------------------------


def _as_float(a: ArrayLike, name: str, ndim: int | None = None, copy: bool = True) -> FloatArray:
    """``a`` as float64 (None -> NaN: object lists of floats and None convert fine), ``ndim``-dimensional if given;
    a copy unless ``copy=False`` (for callers that only read it)."""
    arr = (np.array if copy else np.asarray)(a, dtype=np.float64)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    return arr


def _check_same_shape(a: FloatArray, b: FloatArray, names: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{names} must have the same shape, got {a.shape} and {b.shape}")


def _check_metric_present(metric: FloatArray, valid: NDArray[np.bool_], name: str) -> None:
    if np.isnan(metric).any() and np.isnan(metric[valid]).any():  # the first test is the cheap one
        raise ValueError(f"{name} has NaN where the human score is present")


def _check_average_by(average_by: str) -> None:
    if average_by not in _AVERAGE_BY:
        raise ValueError(f"average_by must be one of {_AVERAGE_BY}, got {average_by!r}")


def _check_variant(variant: str, allowed: tuple[str, ...] = VARIANTS) -> None:
    if variant not in allowed:
        raise ValueError(f"variant must be one of {allowed}, got {variant!r}")


def _check_epsilon(epsilon: float, variant: str) -> None:
    if epsilon < 0:
        raise ValueError("epsilon must be non-negative")
    if epsilon > 0 and variant == "c":
        raise ValueError("non-zero epsilon with tau-c is not supported (as in MTME)")


def _groups(a: FloatArray, average_by: str) -> FloatArray:
    """MTME ``stats._Reshape`` of a ``[S, n]`` matrix: rows of the result are the groups."""
    if average_by == "item":
        return a.T
    if average_by == "sys":
        return a
    return a.reshape(1, -1)


def _check_draw_args(n_draws: int, block_size: int) -> None:
    if int(n_draws) < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws}")
    if int(block_size) < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")


# ----------------------------------------------------------------------------------------------------------------
# 0. The compiled kernels
# ----------------------------------------------------------------------------------------------------------------


def _smoke_test(kern: Any) -> None:
    """The two kernels on small inputs, against counts worked out by hand."""
    partial = np.array([[[1, 2, 3, 4], [0, 2, 5, 1], [4, 4, 4, 4]],
                        [[0, 0, 0, 0], [1, -1, 1, -1], [0, 1, 0, 1]]], dtype=np.float32)
    sys_scores = np.array([[1, 0, 2], [0, 1, 0]], dtype=np.float32)
    counts = np.full((2, 3), -1, dtype=np.int64)
    kern.exceed_counts(partial.ctypes.data, sys_scores.ctypes.data,
                       np.array([3, 4, 0, 2], dtype=np.int64).ctypes.data, counts.ctypes.data)
    # b=0: pair 0,1: 1,0,-2,3 >= 1: 2; pair 0,2: -3,-2,-1,0 >= -1: 2; pair 1,2: -4,-2,1,-3 >= -2: 2
    # b=1: pair 0,1: -1,1,-1,1 >= -1: 4; pair 0,2: 0,-1,0,-1 >= 0: 2; pair 1,2: 1,-2,1,-2 >= 1: 2
    if counts.tolist() != [[2, 2, 2], [4, 2, 2]]:
        raise RuntimeError(f"the loaded permutation p-value kernel does not compute what it should ({counts.tolist()})")
    human = np.array([1.0, 2.0, 2.0, np.nan])
    metric = np.array([[3.0, 1.0, 1.0, 0.0], [1.0, 2.0, 3.0, np.nan], [1.0, np.nan, 0.0, 5.0]])
    agree = np.full(8, -1.0)
    kern.agreement(metric.ctypes.data, human.ctypes.data, 3, 4, agree.ctypes.data)
    # pairs (0,1), (0,2), (1,2); human signs -, -, 0. Row 0: +, +, 0: 1 agrees; row 1: -, -, -: 2;
    # row 2: NaN, +, NaN: 0. Three pairs; one NaN metric where a human score is (row 2, system 1)
    if agree.tolist() != [1 / 3, 2 / 3, 0.0, 1.0, 2.0, 0.0, 3.0, 1.0]:
        raise RuntimeError(f"the loaded pairwise agreement kernel does not compute what it should ({agree.tolist()})")


#: The compiled meta-evaluation counts (``exceed_counts``, ``agreement`` of ``harness/_kernels.c``): the pair
#: counts of the permutation p-values behind soft pairwise accuracy, and the agreeing system pairs of pairwise
#: accuracy.
KERNELS = native.KernelSet(name="meta_eval", what="meta-evaluation kernels", functions=("exceed_counts", "agreement"),
                           smoke_test=_smoke_test)


# ----------------------------------------------------------------------------------------------------------------
# 1. Pairwise accuracy (Kocmi et al. 2021)
# ----------------------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _pairs(n: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """``np.triu_indices(n, 1)``, read-only and cached (the statistics of small system sets are called often)."""
    i, j = np.triu_indices(n, 1)
    i.flags.writeable = j.flags.writeable = False
    return i, j


def _agreement(metric: FloatArray, human: FloatArray, counts: bool = False) -> tuple[FloatArray, int, bool]:
    """Pairwise accuracy of float64 ``metric[..., S]`` against ``human[S]`` (leading dims are a batch) over the
    pairs ``i < j`` of systems with a human score (not NaN): the accuracies (NaN without a pair), or with ``counts``
    the agreeing pairs (float64, exact), in the shape of the leading dims; the number of pairs; whether a metric
    score is NaN where a human score is (its pairs disagree: a permutation test may pass one, the public functions
    refuse it). Compiled (:data:`KERNELS`: one pass, no temporaries), or numpy when the kernel cannot be had (the
    same numbers)."""
    lead = metric.shape[:-1]
    kern = native.kernels(KERNELS)
    if kern is not None:
        v = lead[0] if len(lead) == 1 else math.prod(lead)
        out = (ctypes.c_double * (2 * v + 2))()
        # their bytes (C-order copies, of any view): ctypes passes their addresses at a fraction of numpy's .ctypes
        # cost, and frombuffer's arguments are positional (keywords cost it 0.3 us): a call takes microseconds for
        # the few systems of one language pair
        kern.agreement(metric.tobytes(), human.tobytes(), v, human.shape[0], out)
        values = np.frombuffer(out, np.float64, v, 8 * v if counts else 0)
        return (values if len(lead) == 1 else values.reshape(lead)), int(out[2 * v]), bool(out[2 * v + 1])
    present = ~np.isnan(human)
    missing = bool(np.isnan(metric).any() and np.isnan(metric[..., present]).any())  # the first test is cheap
    h, m = (human, metric) if present.all() else (human[present], metric[..., present])
    i, j = _pairs(h.shape[0])
    with np.errstate(invalid="ignore"):  # inf - inf, and 0 / 0 without a pair: NaN, as the kernel gives quietly
        agree = np.count_nonzero(np.sign(h[i] - h[j]) == np.sign(m[..., i] - m[..., j]), axis=-1).astype(np.float64)
        return (agree if counts else agree / i.size), i.size, missing


def _checked_agreement(metric_sys: ArrayLike, human_sys: ArrayLike, batch: bool,
                       counts: bool) -> tuple[FloatArray, int]:
    """:func:`_agreement` of checked inputs: ``metric_sys[S]`` (with ``batch``, ``[..., S]``) against
    ``human_sys[S]``, no NaN metric where a human score is: the accuracies or ``counts``, the number of pairs."""
    m = _as_float(metric_sys, "metric_sys", None if batch else 1, copy=False)  # only read: the kernel gets a copy
    h = _as_float(human_sys, "human_sys", 1, copy=False)
    if m.ndim == 0 or m.shape[-1:] != h.shape:
        raise ValueError(f"metric_sys must end in the shape of human_sys, got {m.shape} and {h.shape}")
    values, n_pairs, missing = _agreement(m, h, counts)
    if missing:
        raise ValueError("metric_sys has NaN where the human score is present")
    return values, n_pairs


def pairwise_agreement(metric_sys: ArrayLike, human_sys: ArrayLike) -> tuple[int, int]:
    """Number of agreeing system pairs and number of pairs: MTME ``stats.Agreement``.

    A pair ``i < j`` agrees iff ``np.sign(human_i - human_j) == np.sign(metric_i - metric_j)``: a tie counts as
    agreement only if *both* sides tie (a metric tie on a human non-tie, or the reverse, is a disagreement).
    Systems whose human score is NaN are dropped (MTME skips pairs with a ``None`` gold score).
    """
    agree, n_pairs = _checked_agreement(metric_sys, human_sys, batch=False, counts=True)
    return int(agree), n_pairs


def pairwise_accuracy(metric_sys: ArrayLike, human_sys: ArrayLike) -> tuple[Any, int]:
    """System-level pairwise accuracy (Kocmi et al. 2021) and the number of system pairs it is over.

    MTME ``stats.Agreement`` divided by its pair count (as ``data.CompareMetricsWithGlobalAccuracy._Accuracy`` does
    for one language pair). Ties: see :func:`pairwise_agreement`. NaN if there are fewer than 2 systems with a
    human score (MTME would divide by zero). ``metric_sys[..., S]`` may have leading dimensions (say one row per
    variant against the same human scores): then the accuracies are an array of that shape, from one vectorised
    comparison.
    """
    accuracy, n_pairs = _checked_agreement(metric_sys, human_sys, batch=True, counts=False)
    return (float(accuracy) if accuracy.ndim == 0 else accuracy), n_pairs


def global_pairwise_accuracy(
    metric_sys: list[ArrayLike] | tuple[ArrayLike, ...], human_sys: list[ArrayLike] | tuple[ArrayLike, ...]
) -> tuple[float, int]:
    """Pairwise accuracy pooled over several language pairs (WMT22/23 "global accuracy").

    MTME ``data.CompareMetricsWithGlobalAccuracy._Accuracy``: ``sum(agree) / sum(n_pairs)`` where each language
    pair contributes only its own (within-LP) system pairs.
    """
    if len(metric_sys) != len(human_sys):
        raise ValueError("metric_sys and human_sys must list the same number of language pairs")
    agree = n_pairs = 0
    for m, h in zip(metric_sys, human_sys):
        a, p = pairwise_agreement(m, h)
        agree += a
        n_pairs += p
    return (agree / n_pairs if n_pairs else math.nan), n_pairs


# ----------------------------------------------------------------------------------------------------------------
# 2. Permutation p-values and soft pairwise accuracy (Thompson et al. 2024, MTME pce.py)
# ----------------------------------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------------------------------
# 3. Kendall variants, tau optimization, acc_eq (Deutsch et al. 2023, MTME stats.py / tau_optimization.py)
# ----------------------------------------------------------------------------------------------------------------


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
    # Running correct count of each pair's row, before/after that pair is turned into a tie.
    by_row = np.argsort(r_sorted, kind="stable")
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


# ----------------------------------------------------------------------------------------------------------------
# 4. Significance of the difference between two metrics
# ----------------------------------------------------------------------------------------------------------------


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
