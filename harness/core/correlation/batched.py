"""Correlation values of many vectors at once, without p-values: the engine of every bootstrap and permutation
test (chunked, so memory stays bounded whatever the number of resamples)."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray

from ...errors import ConfigError
from ..resampling import check_level, check_n_samples, check_seed, percentile_interval
from .classic import average_ranks
from .vectors import _MIN_PAIRS, _MIN_PAIRS_ITEM, FloatArray, _defined

# Element budget of one vectorised chunk (resamples x values): bounded memory (tens of MB) whatever n_samples is.
_CHUNK_ELEMENTS = 1 << 20

# Up to this vector length Kendall's tau is computed vectorised from all pairwise signs (O(m^2) memory per
# vector); longer vectors go through scipy's O(m log m) kendalltau one at a time.
_PAIRWISE_MAX = 64


def _pearson_batch(x: FloatArray, y: FloatArray, valid: NDArray[np.bool_], min_pairs: int) -> FloatArray:
    """Pearson r along the last axis, only over entries where ``valid``; NaN where undefined.

    The deviations from the mean are scaled by their largest magnitude before they are multiplied (as
    ``scipy.stats.pearsonr``): values around 1e-229 (NLTK's sentence BLEU of segments without matches) have
    products that underflow to 0, which gave +-1 or NaN instead of scipy's r."""
    n = valid.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        xz = np.where(valid, x, 0.0)
        yz = np.where(valid, y, 0.0)
        dx = np.where(valid, x - (xz.sum(axis=-1) / n)[..., None], 0.0)
        dy = np.where(valid, y - (yz.sum(axis=-1) / n)[..., None], 0.0)
        dx = dx / np.abs(dx).max(axis=-1, keepdims=True)
        dy = dy / np.abs(dy).max(axis=-1, keepdims=True)
        r = (dx * dy).sum(axis=-1) / np.sqrt((dx * dx).sum(axis=-1) * (dy * dy).sum(axis=-1))
    const_x = np.where(valid, x, np.inf).min(axis=-1) == np.where(valid, x, -np.inf).max(axis=-1)
    const_y = np.where(valid, y, np.inf).min(axis=-1) == np.where(valid, y, -np.inf).max(axis=-1)
    r = np.clip(r, -1.0, 1.0)
    return np.where((n < min_pairs) | const_x | const_y, np.nan, r)


def _spearman_batch(x: FloatArray, y: FloatArray, valid: NDArray[np.bool_], min_pairs: int) -> FloatArray:
    # Spearman rho = Pearson r of the average ranks of the jointly valid entries, as scipy.stats.spearmanr.
    rx = average_ranks(np.where(valid, x, np.nan))
    if y.shape != valid.shape and np.all(np.isnan(y) | ~np.isnan(x)):
        # x is missing nothing that y has: y's valid entries are the same in every row, rank them once.
        ry = np.broadcast_to(average_ranks(y), valid.shape)
    else:
        ry = average_ranks(np.where(valid, y, np.nan))
    return _pearson_batch(rx, ry, valid, min_pairs)


def _kendall_batch(x: FloatArray, y: FloatArray, valid: NDArray[np.bool_], min_pairs: int) -> FloatArray:
    m = x.shape[-1]
    if m <= _PAIRWISE_MAX:
        # tau-b = sum(sign dx * sign dy) / sqrt(#pairs untied in x * #pairs untied in y), over valid pairs.
        i, j = np.triu_indices(m, 1)
        ok = valid[..., i] & valid[..., j]
        sx = np.where(ok, np.sign(x[..., i] - x[..., j]), 0.0)
        sy = np.where(ok, np.sign(y[..., i] - y[..., j]), 0.0)  # y may be smaller (broadcast): signs once
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = (sx * sy).sum(axis=-1) / np.sqrt(np.count_nonzero(sx, axis=-1) * np.count_nonzero(sy, axis=-1))
        n = valid.sum(axis=-1)
        return np.where(n < min_pairs, np.nan, np.clip(tau, -1.0, 1.0))
    from scipy import stats

    lead = x.shape[:-1]
    y = np.broadcast_to(y, x.shape)
    xs, ys, vs = x.reshape(-1, m), y.reshape(-1, m), valid.reshape(-1, m)
    out = np.full(xs.shape[0], np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for b in range(xs.shape[0]):
            xb, yb = xs[b][vs[b]], ys[b][vs[b]]
            if _defined(xb, yb, min_pairs):
                out[b] = stats.kendalltau(xb, yb, variant="b").statistic
    return out.reshape(lead)


_BATCH: dict[str, Callable[[FloatArray, FloatArray, NDArray[np.bool_], int], FloatArray]] = {
    "pearson": _pearson_batch,
    "spearman": _spearman_batch,
    "kendall": _kendall_batch,
}


def _batch_values(method: str, x: Any, y: Any, min_pairs: int = _MIN_PAIRS) -> FloatArray:
    """Correlation values along the last axis of ``x`` and ``y`` (``y`` broadcastable to ``x``, e.g. the one
    human matrix against many resampled metric matrices), pairs with a NaN on either side dropped."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    valid = ~(np.isnan(x) | np.isnan(y))
    if valid.shape != x.shape:
        x = np.broadcast_to(x, valid.shape)
    return _BATCH[method](x, y, valid, min_pairs)


def _kendall_like_counts(
    metric: FloatArray, human: FloatArray, threshold: float
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Concordant and discordant system pairs along the last axis (the systems of one segment).

    WMT17-20 DARR "Kendall-like" tau (Ma et al. 2018/2019; MTME ``stats.KendallLike``): a pair of systems counts
    only if their human scores differ by more than ``threshold``; it is concordant when the metric orders them the
    same way and discordant otherwise, metric ties included (WMT penalises ties). ``human`` may have fewer
    leading axes than ``metric`` (broadcast); a NaN on either side removes the pair.
    """
    if not threshold >= 0:
        raise ConfigError("threshold", f"must be a non-negative human-score difference, got {threshold}")
    m = metric.shape[-1]
    i, j = np.triu_indices(m, 1)
    hd = human[..., i] - human[..., j]
    with np.errstate(invalid="ignore"):
        hs = np.where(np.abs(hd) > threshold, np.sign(hd), 0.0)  # NaN compares False: not counted
    md = metric[..., i] - metric[..., j]
    with np.errstate(invalid="ignore"):
        con = np.count_nonzero(md * hs > 0, axis=-1)  # NaN metric difference is never concordant
    if np.isnan(metric).any():
        counted = np.count_nonzero((hs != 0) & ~np.isnan(md), axis=-1)
    else:
        counted = np.broadcast_to(np.count_nonzero(hs, axis=-1), con.shape)
    return con, counted - con


def _nanmean_last(v: FloatArray) -> FloatArray:
    ok = ~np.isnan(v)
    cnt = ok.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, np.where(ok, v, 0.0).sum(axis=-1) / cnt, np.nan)


def _matrix_values(
    method: str, grouping: str, metric: FloatArray, human: FloatArray, threshold: float
) -> FloatArray:
    """Segment-level correlation of ``metric[..., S, n]`` with ``human[..., S, n]`` (broadcastable, e.g. one
    ``[S, n]`` human matrix for many metric matrices), one value per leading index. A NaN in either matrix drops
    that (system, segment) entry."""
    metric = np.asarray(metric, dtype=np.float64)
    human = np.asarray(human, dtype=np.float64)
    if method == "kendall_like":
        # Pairs are always formed among the systems of one segment (WMT's definition), so swap to [..., n, S].
        con, dis = _kendall_like_counts(np.swapaxes(metric, -1, -2), np.swapaxes(human, -1, -2), threshold)
        with np.errstate(invalid="ignore", divide="ignore"):
            if grouping == "none":
                c, d = con.sum(axis=-1), dis.sum(axis=-1)
                return np.where(c + d > 0, (c - d) / (c + d), np.nan)
            per_item = np.where(con + dis > 0, (con - dis) / (con + dis), np.nan)
        return _nanmean_last(per_item)
    if grouping == "none":
        flat_m = metric.reshape(*metric.shape[:-2], -1)
        flat_h = human.reshape(*human.shape[:-2], -1)
        return _batch_values(method, flat_m, flat_h, _MIN_PAIRS)
    per_item = _batch_values(method, np.swapaxes(metric, -1, -2), np.swapaxes(human, -1, -2), _MIN_PAIRS_ITEM)
    return _nanmean_last(per_item)


def _interval(values: FloatArray, alpha: float) -> tuple[float, float]:
    """Percentile interval at level ``1 - alpha`` of the finite resampled values."""
    return percentile_interval(values, 1.0 - alpha)


def _checked(n_samples: int, seed: int | None, alpha: float) -> tuple[int, int | None]:
    check_level(alpha, "alpha")
    return check_n_samples(n_samples), check_seed(seed)


def _chunks(total: int, per_item: int) -> list[slice]:
    step = max(1, _CHUNK_ELEMENTS // max(1, per_item))
    return [slice(s, min(total, s + step)) for s in range(0, total, step)]
