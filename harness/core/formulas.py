"""The BLEU formula of each tool, as pure functions of summed sufficient statistics.

Every formula is vectorised over leading axes: ``stats[..., 2 + 2N]`` (summed statistics ``[hyp_len, ref_len,
matches_1..N, totals_1..N]``, see :mod:`.stats`) maps to arrays of scores, so one call scores a corpus, every
segment (sentence BLEU), or thousands of bootstrap resamples at once. Which profile uses which formula is
:mod:`.profiles`' business; NLTK's corpus BLEU is not a function of summed statistics (:mod:`.nltk_replay`).

Pure core: numpy in, numbers out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:  # the formulas read the options' fields only
    from .options import BleuOptions

# - ``sacrebleu`` (and ``multi-bleu``): sacrebleu 2.x ``BLEU.compute_bleu``, including its early exit when no n-gram
#   of any order matches (sacrebleu #141), stopping at the first order without hypothesis n-grams, ``exp`` = NIST
#   smoothing, ``floor``, ``add-k`` (orders >= 2 only), effective order, ``my_log(0) = -9999999999``. Its
#   arithmetic is a parameter: ``float64``, or ``float32``, which is how sacrebleu scores bootstrap resamples (it
#   sums float32 statistics, so ``100 * correct / total`` is a float32 operation); p-values equal sacrebleu's only
#   with the latter.
# - ``mteval-v13a``: NIST ``mteval-v13a.pl``: an order without hypothesis n-grams contributes ``log 1 = 0`` instead
#   of stopping, NIST smoothing of zero-match orders, no early exit.
# - ``hf``: tensorflow/nmt ``compute_bleu`` (HF ``evaluate`` "bleu"): add-k on *every* order, any zero precision
#   gives 0.

#: sacrebleu.utils.my_log: log(0) is floored to this, so a zero precision drives the score to exp(-huge) = 0.
LOG_ZERO = -9999999999.0

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class BleuArrays:
    """Vectorised results: every field has the leading shape of the statistics it came from.

    ``score`` and ``precisions`` are on the 0-100 scale (sacrebleu >= 2.0); ``precisions[..., n-1]`` is the
    (smoothed) precision of order ``n`` as the profile uses it.
    """

    score: FloatArray
    precisions: FloatArray
    bp: FloatArray
    ratio: FloatArray
    hyp_len: FloatArray
    ref_len: FloatArray

    def row(self, i: int) -> BleuArrays:
        return BleuArrays(*(getattr(self, f)[i] for f in BleuArrays.__dataclass_fields__))


def _checked(stats: Any, order: int) -> FloatArray:
    """``stats[..., 2 + 2N]`` as float64, its last axis checked."""
    stats = np.asarray(stats, dtype=np.float64)
    if stats.shape[-1] != 2 + 2 * order:
        raise ValueError(f"statistics have {stats.shape[-1]} columns, expected 2 + 2 * {order}")
    return stats


def _split(stats: Any, order: int) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    stats = _checked(stats, order)
    return stats[..., 0], stats[..., 1], stats[..., 2: 2 + order], stats[..., 2 + order: 2 + 2 * order]


def _brevity(c: FloatArray, r: FloatArray) -> tuple[FloatArray, FloatArray]:
    """BP = 1 if c >= r, exp(1 - r/c) if 0 < c < r, 0 if c = 0 < r (sacrebleu, mteval, multi-bleu agree)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.where(c < r, np.where(c > 0, np.exp(1.0 - r / np.where(c > 0, c, 1.0)), 0.0), 1.0)
        ratio = np.where(r > 0, c / np.where(r > 0, r, 1.0), 0.0)
    return bp, ratio


def _geometric(precisions: FloatArray, used: NDArray[np.bool_], weights: FloatArray | None,
               eff: NDArray[Any]) -> FloatArray:
    """exp of the (weighted) mean of ``my_log(p)`` over the used orders. The unweighted sum runs strictly left to
    right, as sacrebleu's ``sum(...)`` (numpy's reduction pairs terms from 8 orders on)."""
    return _geometric_by_order(np.moveaxis(precisions, -1, 0), np.moveaxis(used, -1, 0), weights, eff)


def _geometric_by_order(precisions: FloatArray, used: NDArray[np.bool_] | None, weights: FloatArray | None,
                        eff: NDArray[Any] | int) -> FloatArray:
    """:func:`_geometric` of ``precisions[order, ...]`` (the order first: each order's values are one contiguous
    block); ``used`` None: every order."""
    positive = precisions > 0
    if positive.all():
        logs = np.log(precisions)
    else:
        with np.errstate(divide="ignore"):
            logs = np.where(positive, np.log(np.where(positive, precisions, 1.0)), LOG_ZERO)
    if used is not None:
        logs = np.where(used, logs, 0.0)
    if weights is None:
        acc = logs[0]
        for j in range(1, logs.shape[0]):
            acc = acc + logs[j]
        return np.exp(acc / eff)
    w = np.reshape(weights, (-1,) + (1,) * (logs.ndim - 1))
    w = np.broadcast_to(w, logs.shape) if used is None else np.where(used, w, 0.0)
    return np.exp((logs * w).sum(axis=0) / w.sum(axis=0))


def sacrebleu_formula(stats: Any, opts: BleuOptions, arithmetic: str = "float64") -> BleuArrays:
    """sacrebleu 2.x ``BLEU.compute_bleu`` on ``stats[..., 2 + 2N]``, without mutating anything.

    ``arithmetic='float32'`` computes the precisions as sacrebleu does on float32 summed statistics (its bootstrap
    resamples, ``_compute_score_from_stats``): lengths and the brevity penalty stay float64; sums must be integers
    below 2**24, where float32 holds them exactly. Custom weights are float64 only (sacrebleu has none).

    Computed with the n-gram order as the first axis (one transposing copy of the statistics: every step then
    reads contiguous blocks); the cases that need no mending (every order has n-grams and matches, as most
    corpus-level sums and their resamples) skip the smoothing and masking steps. The arithmetic of each value is
    the same either way.
    """
    dtype = np.float32 if arithmetic == "float32" else np.float64
    order = opts.max_ngram_order
    columns = np.ascontiguousarray(np.moveaxis(_checked(stats, order), -1, 0))  # [2 + 2N, ...]
    c, r = columns[0], columns[1]
    correct, total = columns[2:2 + order].astype(dtype, copy=False), columns[2 + order:].astype(dtype, copy=False)
    bp, ratio = _brevity(c, r)
    method, k = opts.smooth_method, _smooth_value(opts)
    if method == "add-k":
        bump = np.zeros((order,) + (1,) * (correct.ndim - 1), dtype=dtype)
        bump[1:] = k
        correct_k, total = correct + bump, total + bump
    else:
        correct_k = correct
    empty = total == 0
    hundred = dtype(100.0)
    if not empty.any() and (correct > 0).all():  # nothing to smooth, no order stopped, nothing to mask
        precisions = (hundred * correct_k / total).astype(np.float64, copy=False)
        score = bp * _geometric_by_order(precisions, None, _weights(opts), order)
        return BleuArrays(score, np.moveaxis(precisions, 0, -1), bp, ratio, c, r)
    nothing = ~(correct > 0).any(axis=0)  # sacrebleu #141: no match of any order -> 0.0, precisions 0
    correct = correct_k
    stopped = np.logical_or.accumulate(empty, axis=0)  # the loop `break`s at the first empty order
    zero = (correct == 0) & ~stopped
    with np.errstate(divide="ignore", invalid="ignore"):
        safe_total = np.where(total > 0, total, dtype(1.0))
        plain = hundred * correct / safe_total
        if method == "exp":
            smoothed = hundred / (np.exp2(np.cumsum(zero, axis=0)).astype(dtype) * safe_total)
        elif method == "floor":
            smoothed = dtype(100.0 * k) / safe_total
        else:
            smoothed = np.zeros_like(plain)
    precisions = np.where(stopped, dtype(0.0), np.where(zero, smoothed, plain)).astype(np.float64, copy=False)
    if opts.effective_order:
        n_used = (~stopped).sum(axis=0)
        eff: NDArray[Any] | int = np.where(n_used > 0, n_used, order)
        used = np.arange(order).reshape((-1,) + (1,) * (precisions.ndim - 1)) < eff
    else:
        eff, used = order, None
    score = bp * _geometric_by_order(precisions, used, _weights(opts), eff)
    score = np.where(nothing, 0.0, score)
    precisions = np.where(nothing, 0.0, precisions)
    return BleuArrays(score, np.moveaxis(precisions, 0, -1), bp, ratio, c, r)


def mteval_formula(stats: Any, opts: BleuOptions) -> BleuArrays:
    """NIST ``mteval-v13a.pl`` ``bleu_score``: an order with no hypothesis n-grams adds ``log 1``; k-th zero-match
    order gets ``1 / (2^k * total)`` (``--no-smoothing`` / ``smooth_method='none'``: a zero precision gives 0)."""
    order = opts.max_ngram_order
    c, r, correct, total = _split(stats, order)
    bp, ratio = _brevity(c, r)
    empty = total == 0
    zero = (correct == 0) & ~empty
    with np.errstate(divide="ignore", invalid="ignore"):
        safe_total = np.where(total > 0, total, 1.0)
        if opts.smooth_method == "exp":
            smoothed = 100.0 / (np.exp2(np.cumsum(zero, axis=-1)) * safe_total)
        else:
            smoothed = np.zeros_like(safe_total)
        precisions = np.where(empty, 100.0, np.where(zero, smoothed, 100.0 * correct / safe_total))
    used = np.ones(precisions.shape, dtype=bool)
    score = bp * _geometric(precisions, used, _weights(opts), np.full(c.shape, order))
    return BleuArrays(score, precisions, bp, ratio, c, r)


def hf_formula(stats: Any, opts: BleuOptions) -> BleuArrays:
    """tensorflow/nmt ``compute_bleu`` (HF ``evaluate`` "bleu"): ``smooth`` adds k to the numerator and the
    denominator of every order (k = 1 there); without it an empty order has precision 0; any zero precision
    gives 0; ``bp = exp(1 - 1/ratio)`` when ``ratio <= 1``. Where tensorflow/nmt divides by zero (empty
    hypotheses or references in total) we return bp 0 (ratio 0) or bp 1 (empty references) instead of raising."""
    order = opts.max_ngram_order
    c, r, correct, total = _split(stats, order)
    with np.errstate(divide="ignore", invalid="ignore"):
        if opts.smooth_method == "add-k":
            k = _smooth_value(opts)
            precisions = (correct + k) / (total + k)
        else:
            precisions = np.where(total > 0, correct / np.where(total > 0, total, 1.0), 0.0)
        ratio = np.where(r > 0, c / np.where(r > 0, r, 1.0), np.inf)
        bp = np.where(ratio > 1.0, 1.0, np.where(ratio > 0, np.exp(1.0 - 1.0 / np.where(ratio > 0, ratio, 1.0)), 0.0))
        weights = _weights(opts)
        w = np.full(order, 1.0 / order) if weights is None else weights
        logs = np.log(np.where(precisions > 0, precisions, 1.0))
        geo = np.where((precisions > 0).all(axis=-1), np.exp((w * logs).sum(axis=-1)), 0.0)
    ratio = np.where(np.isinf(ratio), 0.0, ratio)
    return BleuArrays(100.0 * geo * bp, 100.0 * precisions, bp, ratio, c, r)


def _smooth_value(opts: BleuOptions) -> float:
    """The smoothing value of resolved options (every method that reads one has it; 0 for the others)."""
    return 0.0 if opts.smooth_value is None else float(opts.smooth_value)


def _weights(opts: BleuOptions) -> FloatArray | None:
    return None if opts.weights is None else np.asarray(opts.weights, dtype=np.float64)
