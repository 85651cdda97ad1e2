"""System-level pairwise accuracy (Kocmi et al. 2021; MTME ``stats.PairwiseAgreement``), per metric and global."""

from __future__ import annotations

import ctypes
import functools
import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ... import native
from .inputs import FloatArray, _as_float
from .kernels import KERNELS


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
        values = np.frombuffer(out, np.float64, v, 8 * v if counts else 0)  # type: ignore[call-overload]
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
