"""Types, conventions and input checks shared by the meta-evaluation statistics (see the package docstring)."""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

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


class SigDiff(NamedTuple):
    """Result of a significance test "is metric B better than metric A" (MTME ``PermutationSigDiff``)."""

    delta: float  #: statistic(B) - statistic(A)
    p_value: float  #: #{delta' >= delta} / n_draws (one-sided, H1: B better); NaN if delta is not finite
    n_draws: int  #: draws actually used (fewer than requested after early stopping)


class AccEq(NamedTuple):
    """acc_eq (tie-calibrated pairwise accuracy) and the global tie threshold that maximises it."""

    value: float
    epsilon: float


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
