"""One correlation of two vectors with its p-value (Pearson, Spearman and Kendall tau-b as scipy.stats computes them:
:mod:`.classic`), NaN when undefined; the choices of methods, groupings and tests."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from ...errors import ConfigError, InputError
from . import classic

ScoreFn = Callable[[NDArray[np.float64]], NDArray[np.float64]]

FloatArray = NDArray[np.float64]

#: Correlation methods for vectors (system level, and segment level with any grouping).
METHODS: tuple[str, ...] = ("pearson", "spearman", "kendall")

#: Segment-level methods: the vector methods plus WMT's DARR "Kendall-like" tau.
SEGMENT_METHODS: tuple[str, ...] = (*METHODS, "kendall_like")

#: How a system x segment matrix becomes correlations (MTME ``average_by``; 'sys' is not offered).
GROUPINGS: tuple[str, ...] = ("none", "item")

#: Tests for the difference between two metrics' correlations with the human scores.
DIFFERENCE_TESTS: tuple[str, ...] = ("paired_bootstrap", "perm_both")

# Minimum number of valid pairs: a whole-vector correlation needs 3 (with 2 points Pearson is +-1 and scipy's
# p-value is degenerate); MTME's item grouping keeps every item with at least 2 (its ``len(filt) == 1`` skip).
_MIN_PAIRS = 3

_MIN_PAIRS_ITEM = 2


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
    return bool(x.size >= min_pairs and np.ptp(x) > 0 and np.ptp(y) > 0)


#: Registry: method name -> function of two clean (NaN-free, non-constant, >= 3 long) vectors -> (value, p).
CORRELATIONS: dict[str, Callable[[FloatArray, FloatArray], tuple[float, float]]] = {
    "pearson": classic.pearson,
    "spearman": classic.spearman,
    "kendall": classic.kendall,  # tau-b: the variant MTME and WMT use by default; it corrects for ties on either side
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
    """Correlation of two vectors and its p-value, as scipy.stats computes them (:mod:`.classic`).

    ``method`` is one of :data:`METHODS` (``kendall`` is tau-b). Pairs with a NaN on either side are dropped.
    Fewer than 3 remaining pairs, or a constant vector, give ``(nan, nan)`` without any warning. The p-value is
    scipy's two-sided one (for Pearson: exact t-distribution; Kendall: exact for small untied samples).
    """
    _check_choice("method", method, METHODS)
    xa, ya = _paired(x, y)
    if not _defined(xa, ya):
        return math.nan, math.nan
    with warnings.catch_warnings():
        # Pre-checked above; what is left (numpy's at r = +-1, where t is infinite) must not leak to callers.
        warnings.simplefilter("ignore")
        return CORRELATIONS[method](xa, ya)


def _check_matrix(a: Any, name: str, shape: tuple[int, ...] | None = None) -> FloatArray:
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim != 2:
        raise InputError(f"{name} must have shape [n_systems, n_segments], got {arr.shape}")
    if shape is not None and arr.shape != shape:
        raise InputError(f"{name} must have shape {shape} (n_systems, n_segments), got {arr.shape}")
    return arr
