"""System level: corpus BLEU per system against the human system score, with bootstrap intervals over segments
(and over subsets of systems), and whether two metrics rank the systems alike (the paper's section 4.2)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...errors import InputError
from ..resampling import check_level, check_systems, exact_dtype, flat_systems, seeded_counts
from .batched import _batch_values, _checked, _interval
from .vectors import (
    METHODS,
    Correlation,
    FloatArray,
    ScoreFn,
    _as_vector,
    _check_choice,
    _check_matrix,
    _paired,
    correlate,
)


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
    """Corpus BLEU ``[B, S]`` and system human scores ``[B, S]`` of every bootstrap resample ``counts[B, n]`` (how
    often each segment is drawn: non-negative integers)."""
    # summed[s, k, b] = sum_i stats[s, i, k] * counts[b, i]: exact for integer-valued statistics, in float32 where
    # every partial sum is an integer below 2^24 (exact_dtype: the same sums, the product twice as fast), laid out
    # [S, K, B] as before, so that score_fn reads the same numbers in the same order
    s, n, k = stats.shape
    dtype = exact_dtype(stats, float(counts.sum(axis=1).max(initial=0.0)) * float(stats.max(initial=0.0)))
    product = counts.astype(dtype, copy=False) @ flat_systems(stats, dtype)  # [B, S * K]
    summed = np.ascontiguousarray(product.astype(np.float64, copy=False).reshape(-1, s, k).transpose(1, 2, 0))
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
    seed: int | None = 12345,
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
    seed: int | None = 12345,
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
    seed: int | None = 12345,
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
