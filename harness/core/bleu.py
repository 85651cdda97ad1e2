"""BLEU as pure functions of sufficient statistics: the formulas of each profile, scores, score functions.

Every formula is vectorised over leading axes: ``stats[..., 2 + 2N]`` (summed statistics ``[hyp_len, ref_len,
matches_1..N, totals_1..N]``, see :mod:`.stats`) maps to arrays of scores, so one call scores a corpus, every
segment (sentence BLEU), or thousands of bootstrap resamples at once.

Pure core: numpy in, numbers out.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from .options import BleuOptions, get_profile, nltk_weights, orders_needed
from .signature import signature
from .stats import SegmentStats

# sacrebleu.utils.my_log: log(0) is floored to this, so a zero precision drives the score to exp(-huge) = 0.
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
# - ``nltk``: NLTK ``corpus_bleu``, replayed by :mod:`.nltk_replay` (not a function of summed statistics).

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


@dataclass(frozen=True)
class BleuScore:
    """One BLEU score with everything needed to check and reproduce it."""

    score: float
    precisions: list[float]
    bp: float
    ratio: float
    hyp_len: int | float
    ref_len: int | float
    counts: list[int]
    totals: list[int]
    signature: str
    options: BleuOptions = field(repr=False, compare=False, default_factory=BleuOptions)

    @property
    def sys_len(self) -> int | float:
        """sacrebleu's name for ``hyp_len``."""
        return self.hyp_len

    def format(self, width: int = 2, signature: bool = True, score_only: bool = False) -> str:
        """sacrebleu's score line: ``BLEU|sig = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = ...)``."""
        if score_only:
            return f"{self.score:.{width}f}"
        prec = "/".join(f"{p:.1f}" for p in self.precisions)
        name = f"BLEU|{self.signature}" if signature else "BLEU"
        return (
            f"{name} = {self.score:.{width}f} {prec} (BP = {self.bp:.3f} ratio = {self.ratio:.3f} "
            f"hyp_len = {_fmt_len(self.hyp_len)} ref_len = {_fmt_len(self.ref_len)})"
        )

    def __str__(self) -> str:
        return self.format()

    def as_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "precisions": list(self.precisions),
            "bp": self.bp,
            "ratio": self.ratio,
            "hyp_len": self.hyp_len,
            "ref_len": self.ref_len,
            "counts": list(self.counts),
            "totals": list(self.totals),
            "signature": self.signature,
        }


def _fmt_len(value: int | float) -> str:
    return f"{int(value):d}" if float(value).is_integer() else f"{value:.1f}"


# --------------------------------------------------------------------------------------------------------------
# Formulas (vectorised over leading axes)
# --------------------------------------------------------------------------------------------------------------


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
    method, k = opts.smooth_method, opts.smooth_value
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
            precisions = (correct + opts.smooth_value) / (total + opts.smooth_value)
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


def _weights(opts: BleuOptions) -> FloatArray | None:
    return None if opts.weights is None else np.asarray(opts.weights, dtype=np.float64)


#: The formula of each profile whose corpus score is a function of summed statistics.
FORMULAS: dict[str, Callable[[Any, BleuOptions], BleuArrays]] = {
    "sacrebleu": sacrebleu_formula,
    "multi-bleu": sacrebleu_formula,
    "mteval-v13a": mteval_formula,
    "hf": hf_formula,
}


def from_sums(sums: Any, opts: BleuOptions) -> BleuArrays:
    """Scores from summed statistics ``[..., 2 + 2N]`` under a profile that has a formula (vectorised)."""
    formula = FORMULAS.get(opts.profile)
    if formula is None:
        from ..errors import ConfigError

        raise ConfigError("profile", f"profile {opts.profile!r} is not a function of summed statistics (its corpus "
                          "score depends on segment order); resampling is not available", list(FORMULAS))
    return formula(sums, opts)


# --------------------------------------------------------------------------------------------------------------
# NLTK (not a function of summed statistics: per-segment floors, the last segment in smoothing)
# --------------------------------------------------------------------------------------------------------------


def _nltk_corpus(stats: SegmentStats, opts: BleuOptions) -> BleuArrays:
    from .nltk_replay import nltk_bleu

    order = opts.max_ngram_order
    kwargs: dict[str, Any] = {"weights": nltk_weights(opts), "method": opts.nltk_method,
                              "auto_reweigh": opts.auto_reweigh}
    if opts.smooth_value is not None:
        kwargs["epsilon"] = opts.smooth_value
    res = nltk_bleu(stats.hyp_len, stats.ref_lens, stats.matches, stats.totals, **kwargs)
    prec = np.zeros(order)
    prec[: len(res.precisions)] = [100.0 * float(p) for p in res.precisions][:order]
    ratio = res.hyp_len / res.ref_len if res.ref_len else 0.0
    return BleuArrays(np.float64(100.0 * res.score), prec, np.float64(res.bp), np.float64(ratio),
                      np.float64(res.hyp_len), np.float64(res.ref_len))


def _nltk_sentences(stats: SegmentStats, opts: BleuOptions) -> BleuArrays:
    """nltk ``sentence_bleu`` of every segment: vectorised for methods 0-3 (their smoothing only reads the
    segment's own counts), one replay per segment otherwise."""
    method = opts.nltk_method
    if method > 3 or opts.auto_reweigh:
        rows = [_nltk_corpus(stats.take(slice(i, i + 1)), opts) for i in range(len(stats))]
        return BleuArrays(*(np.stack([getattr(r, f) for r in rows]) for f in BleuArrays.__dataclass_fields__))
    weights = np.asarray(nltk_weights(opts), dtype=np.float64)
    n = len(weights)
    m = stats.matches[:, :n].astype(np.float64)
    d = np.maximum(stats.totals[:, :n], 1).astype(np.float64)  # nltk: max(1, count) per segment
    zero = m == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        p = m / d
        if method == 0:
            p = np.where(zero, sys.float_info.min, p)
        elif method == 1:
            p = np.where(zero, (m + (0.1 if opts.smooth_value is None else opts.smooth_value)) / d, p)
        elif method == 2:
            p[:, 1:] = (m[:, 1:] + 1) / (d[:, 1:] + 1)
        else:
            p = np.where(zero, 1.0 / (np.exp2(np.cumsum(zero, axis=1)) * d), p)
        logs = np.where(p > 0, np.log(np.where(p > 0, p, 1.0)), 0.0)  # nltk skips p <= 0
        c = stats.hyp_len.astype(np.float64)
        r = stats.ref_len("closest")
        bp = np.where(c > r, 1.0, np.where(c == 0, 0.0, np.exp(1.0 - r / np.where(c > 0, c, 1.0))))
        score = np.where(zero[:, 0], 0.0, bp * np.exp((weights * logs).sum(axis=1)))
        ratio = np.where(r > 0, c / np.where(r > 0, r, 1.0), 0.0)
    return BleuArrays(100.0 * score, 100.0 * p[:, : opts.max_ngram_order], bp, ratio, c, r)


# --------------------------------------------------------------------------------------------------------------
# Scores from statistics
# --------------------------------------------------------------------------------------------------------------


def corpus_arrays(stats: SegmentStats, opts: BleuOptions) -> BleuArrays:
    """The corpus score of a statistics block, as arrays of shape ``()``."""
    stats = stats.truncate_order(orders_needed(opts))
    if opts.profile == "nltk":
        return _nltk_corpus(stats, opts)
    return from_sums(stats.truncate_order(opts.max_ngram_order).matrix(opts.ref_length).sum(axis=0), opts)


def sentence_scores(stats: SegmentStats, opts: BleuOptions) -> BleuArrays:
    """Sentence BLEU of every segment (vectorised from the statistics; no per-segment re-tokenization)."""
    stats = stats.truncate_order(orders_needed(opts))
    if opts.profile == "nltk":
        return _nltk_sentences(stats, opts)
    return from_sums(stats.truncate_order(opts.max_ngram_order).matrix(opts.ref_length), opts)


def corpus_score(stats: SegmentStats, opts: BleuOptions, extra: Mapping[str, Any] | None = None) -> BleuScore:
    """The corpus BLEU of a statistics block under resolved options."""
    order = opts.max_ngram_order
    return to_score(corpus_arrays(stats, opts), stats.matches[:, :order].sum(axis=0),
                    stats.totals[:, :order].sum(axis=0), signature(opts, stats.nrefs_label, extra), opts)


def to_score(arrays: BleuArrays, counts: Any, totals: Any, sig: str, opts: BleuOptions) -> BleuScore:
    """A :class:`BleuScore` from 0-d arrays (a corpus score or one row of vectorised results)."""
    hyp_len, ref_len = float(arrays.hyp_len), float(arrays.ref_len)
    return BleuScore(
        score=float(arrays.score),
        precisions=[float(p) for p in np.atleast_1d(arrays.precisions)],
        bp=float(arrays.bp),
        ratio=float(arrays.ratio),
        hyp_len=int(hyp_len) if hyp_len.is_integer() else hyp_len,
        ref_len=int(ref_len) if ref_len.is_integer() else ref_len,
        counts=[int(x) for x in np.asarray(counts)],
        totals=[int(x) for x in np.asarray(totals)],
        signature=sig,
        options=opts,
    )


def segment_score(arrays: BleuArrays, stats: SegmentStats, i: int, opts: BleuOptions) -> BleuScore:
    """Segment ``i`` of :func:`sentence_scores` as a :class:`BleuScore` (its signature counts its references)."""
    order = opts.max_ngram_order
    nrefs = int((stats.ref_lens[i] >= 0).sum())
    return to_score(arrays.row(i), stats.matches[i, :order], stats.totals[i, :order], signature(opts, nrefs), opts)


# --------------------------------------------------------------------------------------------------------------
# Score functions (for resampling)
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreFn:
    """BLEU of summed statistics under resolved options: ``fn(sums[..., K]) -> scores[...]`` (float64).

    :meth:`resampled` is what bootstrap resamples are scored with: sacrebleu's float32 arithmetic when
    ``sacrebleu_float32`` and the profile uses sacrebleu's formula without custom weights (so p-values equal
    sacrebleu's), else the same function.
    """

    opts: BleuOptions
    sacrebleu_float32: bool = True

    def __call__(self, sums: Any) -> FloatArray:
        return np.asarray(from_sums(sums, self.opts).score, dtype=np.float64)

    @property
    def emulates_float32(self) -> bool:
        return (self.sacrebleu_float32 and self.opts.weights is None
                and FORMULAS.get(self.opts.profile) is sacrebleu_formula)

    def resampled(self, sums: Any) -> FloatArray:
        if self.emulates_float32:
            return np.asarray(sacrebleu_formula(sums, self.opts, "float32").score, dtype=np.float64)
        return self(sums)


def score_fn(opts: BleuOptions, *, sacrebleu_float32: bool = True) -> ScoreFn:
    """The score function of resolved options (see :class:`ScoreFn`)."""
    get_profile(opts.profile)
    return ScoreFn(opts, sacrebleu_float32)


def stats_matrix(stats: SegmentStats, opts: BleuOptions) -> FloatArray:
    """The ``[n, 2 + 2N]`` matrix a score function of ``opts`` reads (its order, its reference-length rule)."""
    return stats.truncate_order(opts.max_ngram_order).matrix(opts.ref_length)


def stack(stats: Sequence[SegmentStats], opts: BleuOptions) -> FloatArray:
    """``X[S, n, K]`` of several systems' statistics under ``opts``."""
    return np.stack([stats_matrix(s, opts) for s in stats])
