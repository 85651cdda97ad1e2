"""BLEU scores as pure functions of sufficient statistics: smoothing, brevity penalty, profiles, signatures.

Every function here is vectorised over leading axes: ``stats[..., 2 + 2N]`` (summed statistics
``[hyp_len, ref_len, matches_1..N, totals_1..N]``, see :mod:`harness.stats`) maps to arrays of scores, so one
call scores a corpus, every segment (sentence BLEU), or thousands of bootstrap resamples at once.

A *profile* reproduces another tool's formula exactly:

- ``sacrebleu`` (default): sacrebleu 2.x ``BLEU.compute_bleu``, including its early exit when no n-gram of any
  order matches (sacrebleu #141), stopping at the first order without hypothesis n-grams, ``exp`` = NIST
  smoothing, ``floor``, ``add-k`` (orders >= 2 only), effective order, ``my_log(0) = -9999999999``.
- ``multi-bleu``: Moses ``multi-bleu.perl``: whitespace tokens, no smoothing (any zero precision gives 0).
- ``mteval-v13a``: NIST ``mteval-v13a.pl``: 13a tokens, ASCII-only lowercasing unless case is preserved
  (``tr/[A-Z]/[a-z]/``), NIST smoothing of zero-match orders, an order without hypothesis n-grams contributes
  ``log 1 = 0`` instead of stopping, and no early exit.
- ``hf``: tensorflow/nmt ``compute_bleu`` as used by HF ``evaluate``'s ``bleu``: shortest reference length,
  add-k on *every* order (k = 1 there), any zero precision gives 0.
- ``nltk``: NLTK ``corpus_bleu`` with its SmoothingFunction ``method0``..``method7`` (see
  :mod:`harness.nltk_compat`).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from . import __version__
from .errors import ConfigError
from .stats import REF_LENGTH_RULES, SegmentStats

# sacrebleu.utils.my_log: log(0) is floored to this, so a zero precision drives the score to exp(-huge) = 0.
_LOG_ZERO = -9999999999.0

SMOOTH_DEFAULTS: dict[str, float | None] = {"none": None, "floor": 0.1, "add-k": 1.0, "exp": None}
NLTK_METHODS: tuple[str, ...] = tuple(f"method{i}" for i in range(8))
PROFILES: tuple[str, ...] = ("sacrebleu", "nltk", "hf", "multi-bleu", "mteval-v13a")


# --------------------------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------------------------


#: ``str.translate`` table of the ``ascii-lc`` case mode: A-Z only, like mteval's ``tr/[A-Z]/[a-z]/``.
ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


@dataclass(frozen=True)
class BleuOptions:
    """Every knob that changes a BLEU number. ``None`` means "the profile's default" until :meth:`resolved`.

    Names follow sacrebleu where sacrebleu has the option (``tokenize``, ``lowercase``, ``smooth_method``,
    ``smooth_value``, ``max_ngram_order``, ``effective_order``); ours: ``ref_length``, ``weights``, ``profile``
    and, for the ``nltk`` profile, ``auto_reweigh``.
    """

    tokenize: str | None = None
    lowercase: bool | None = None
    smooth_method: str | None = None
    smooth_value: float | None = None
    max_ngram_order: int = 4
    effective_order: bool = False
    ref_length: str | None = None
    weights: tuple[float, ...] | None = None
    profile: str = "sacrebleu"
    auto_reweigh: bool = False

    def resolved(self) -> BleuOptions:
        """Fill in the profile's defaults and validate everything (a :class:`ConfigError` names the key)."""
        profile = get_profile(self.profile)
        opts = replace(
            self,
            tokenize=profile.defaults["tokenize"] if self.tokenize is None else self.tokenize,
            lowercase=profile.defaults["lowercase"] if self.lowercase is None else bool(self.lowercase),
            smooth_method=profile.defaults["smooth_method"] if self.smooth_method is None else self.smooth_method,
            ref_length=profile.defaults["ref_length"] if self.ref_length is None else self.ref_length,
            weights=None if self.weights is None else tuple(float(w) for w in self.weights),
        )
        if opts.smooth_value is None and opts.smooth_method == profile.defaults["smooth_method"]:
            opts = replace(opts, smooth_value=profile.defaults.get("smooth_value"))
        if opts.smooth_value is None and opts.smooth_method in SMOOTH_DEFAULTS:
            opts = replace(opts, smooth_value=SMOOTH_DEFAULTS[opts.smooth_method])
        profile.validate(opts)
        return opts

    @property
    def case_mode(self) -> str:
        """How text is cased before tokenizing: ``mixed``, ``lc`` (``str.lower``) or ``ascii-lc`` (mteval)."""
        if not self.lowercase:
            return "mixed"
        return "ascii-lc" if self.profile == "mteval-v13a" else "lc"

    def as_params(self) -> dict[str, Any]:
        """Flat, stringifiable view (MLflow params, Parquet metadata)."""
        return {
            "profile": self.profile,
            "tokenize": self.tokenize,
            "lowercase": self.lowercase,
            "smooth_method": self.smooth_method,
            "smooth_value": self.smooth_value,
            "max_ngram_order": self.max_ngram_order,
            "effective_order": self.effective_order,
            "ref_length": self.ref_length,
            "weights": None if self.weights is None else list(self.weights),
            "auto_reweigh": self.auto_reweigh,
        }


OPTION_NAMES: tuple[str, ...] = tuple(BleuOptions.__dataclass_fields__)


def orders_needed(opts: BleuOptions) -> int:
    """How many n-gram orders of statistics a score under ``opts`` reads (NLTK's method5/7 read order 5 too)."""
    if opts.profile == "nltk":
        from .nltk_compat import nltk_orders_needed

        return max(opts.max_ngram_order,
                   nltk_orders_needed(_nltk_weights(opts), int(str(opts.smooth_method)[-1])))
    return opts.max_ngram_order


def _nltk_weights(opts: BleuOptions) -> tuple[float, ...]:
    order = opts.max_ngram_order
    return opts.weights if opts.weights is not None else (1.0 / order,) * order


def make_options(**options: Any) -> BleuOptions:
    """Build resolved options from keyword arguments, rejecting unknown names with the valid ones listed."""
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise ConfigError(unknown[0], "unknown BLEU option", OPTION_NAMES)
    return BleuOptions(**options).resolved()


# --------------------------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BleuArrays:
    """Vectorised results: every field has the leading shape of the statistics it came from.

    ``score`` and ``precisions`` are on the 0-100 scale (sacrebleu >= 2.0); ``precisions[..., n-1]`` is the
    (smoothed) precision of order ``n`` as the profile uses it.
    """

    score: NDArray[np.float64]
    precisions: NDArray[np.float64]
    bp: NDArray[np.float64]
    ratio: NDArray[np.float64]
    hyp_len: NDArray[np.float64]
    ref_len: NDArray[np.float64]


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

    def format(self, width: int = 2, signature: bool = True) -> str:
        """sacrebleu's score line: ``BLEU|sig = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = ...)``."""
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


def _split(stats: NDArray[np.float64], order: int) -> tuple[NDArray, NDArray, NDArray, NDArray]:
    stats = np.asarray(stats, dtype=np.float64)
    if stats.shape[-1] != 2 + 2 * order:
        raise ValueError(f"statistics have {stats.shape[-1]} columns, expected 2 + 2 * {order}")
    return stats[..., 0], stats[..., 1], stats[..., 2 : 2 + order], stats[..., 2 + order : 2 + 2 * order]


def _brevity(c: NDArray, r: NDArray) -> tuple[NDArray, NDArray]:
    """BP = 1 if c >= r, exp(1 - r/c) if 0 < c < r, 0 if c = 0 < r (sacrebleu, mteval, multi-bleu agree)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.where(c < r, np.where(c > 0, np.exp(1.0 - r / np.where(c > 0, c, 1.0)), 0.0), 1.0)
        ratio = np.where(r > 0, c / np.where(r > 0, r, 1.0), 0.0)
    return bp, ratio


def _geometric(precisions: NDArray, used: NDArray, weights: NDArray | None, eff: NDArray) -> NDArray:
    """exp of the (weighted) mean of ``my_log(p)`` over the used orders (sacrebleu: ``sum(...) / eff``)."""
    with np.errstate(divide="ignore"):
        logs = np.where(precisions > 0, np.log(np.where(precisions > 0, precisions, 1.0)), _LOG_ZERO)
    logs = np.where(used, logs, 0.0)
    if weights is None:
        return np.exp(logs.sum(axis=-1) / eff)
    w = np.where(used, weights, 0.0)
    return np.exp((logs * w).sum(axis=-1) / w.sum(axis=-1))


def sacrebleu_formula(stats: NDArray[np.float64], opts: BleuOptions) -> BleuArrays:
    """sacrebleu 2.x ``BLEU.compute_bleu`` on ``stats[..., 2 + 2N]``, without mutating anything."""
    order = opts.max_ngram_order
    c, r, correct, total = _split(stats, order)
    bp, ratio = _brevity(c, r)
    method, k = opts.smooth_method, opts.smooth_value
    nothing = ~(correct > 0).any(axis=-1)  # sacrebleu #141: no match of any order -> 0.0, precisions 0
    if method == "add-k":
        bump = np.zeros(order)
        bump[1:] = k
        correct = correct + bump
        total = total + bump
    stopped = np.logical_or.accumulate(total == 0, axis=-1)  # the loop `break`s at the first empty order
    zero = (correct == 0) & ~stopped
    with np.errstate(divide="ignore", invalid="ignore"):
        safe_total = np.where(total > 0, total, 1.0)
        plain = 100.0 * correct / safe_total
        if method == "exp":
            smoothed = 100.0 / (np.exp2(np.cumsum(zero, axis=-1)) * safe_total)
        elif method == "floor":
            smoothed = 100.0 * k / safe_total
        else:
            smoothed = np.zeros_like(plain)
    precisions = np.where(stopped, 0.0, np.where(zero, smoothed, plain))
    if opts.effective_order:
        n_used = (~stopped).sum(axis=-1)
        eff = np.where(n_used > 0, n_used, order)
    else:
        eff = np.full(c.shape, order)
    used = np.arange(order) < eff[..., None]
    score = bp * _geometric(precisions, used, _weights(opts), eff)
    score = np.where(nothing, 0.0, score)
    precisions = np.where(nothing[..., None], 0.0, precisions)
    return BleuArrays(score, precisions, bp, ratio, c, r)


def mteval_formula(stats: NDArray[np.float64], opts: BleuOptions) -> BleuArrays:
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


def hf_formula(stats: NDArray[np.float64], opts: BleuOptions) -> BleuArrays:
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


def _weights(opts: BleuOptions) -> NDArray[np.float64] | None:
    return None if opts.weights is None else np.asarray(opts.weights, dtype=np.float64)


# --------------------------------------------------------------------------------------------------------------
# Profiles
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """A tool whose numbers we reproduce: its defaults, what it accepts, and its formula."""

    name: str
    defaults: Mapping[str, Any]
    smooth_methods: tuple[str, ...]
    ref_lengths: tuple[str, ...] = REF_LENGTH_RULES
    effective_order: bool = True
    formula: Callable[[NDArray[np.float64], BleuOptions], BleuArrays] | None = None

    @property
    def additive(self) -> bool:
        """True when the corpus score is a function of summed statistics (resampling can use :meth:`from_sums`)."""
        return self.formula is not None

    def validate(self, opts: BleuOptions) -> None:
        from .tokenizers import available_tokenizers

        if opts.smooth_method not in self.smooth_methods:
            raise ConfigError("smooth_method", f"{opts.smooth_method!r} is not available in profile "
                              f"{self.name!r}", self.smooth_methods)
        if opts.ref_length not in self.ref_lengths:
            raise ConfigError("ref_length", f"{opts.ref_length!r} is not available in profile {self.name!r}",
                              self.ref_lengths)
        if opts.effective_order and not self.effective_order:
            raise ConfigError("effective_order", f"profile {self.name!r} has no effective order", ["false"])
        if not isinstance(opts.max_ngram_order, int) or isinstance(opts.max_ngram_order, bool) \
                or opts.max_ngram_order < 1:
            raise ConfigError("max_ngram_order", f"must be a positive integer, got {opts.max_ngram_order!r}")
        if opts.weights is not None:
            w = opts.weights
            if len(w) != opts.max_ngram_order:
                raise ConfigError("weights", f"{len(w)} weights for max_ngram_order={opts.max_ngram_order}; "
                                  "give one weight per order")
            if any(not math.isfinite(x) or x < 0 for x in w) or sum(w) <= 0:
                raise ConfigError("weights", f"weights must be finite, non-negative and not all zero: {list(w)}")
        if opts.smooth_value is not None and (not math.isfinite(opts.smooth_value) or opts.smooth_value < 0):
            raise ConfigError("smooth_value", f"must be a finite non-negative number, got {opts.smooth_value!r}")
        if opts.auto_reweigh and self.name != "nltk":
            raise ConfigError("auto_reweigh", "only the 'nltk' profile has auto_reweigh", ["false"])
        if opts.tokenize not in available_tokenizers():
            raise ConfigError("tokenize", f"unknown tokenizer {opts.tokenize!r}", available_tokenizers())

    def from_sums(self, sums: NDArray[np.float64], opts: BleuOptions) -> BleuArrays:
        """Scores from summed statistics ``[..., 2 + 2N]`` (vectorised; for resampling and sentence BLEU)."""
        if self.formula is None:
            raise ConfigError("profile", f"profile {self.name!r} is not a function of summed statistics "
                              "(its corpus score depends on segment order); resampling is not available",
                              [p for p in PROFILES if _PROFILES[p].additive])
        return self.formula(sums, opts)

    def corpus(self, stats: SegmentStats, opts: BleuOptions) -> BleuArrays:
        """The corpus score of a whole statistics block."""
        return self.from_sums(stats.truncate_order(opts.max_ngram_order).matrix(opts.ref_length).sum(axis=0), opts)

    def sentences(self, stats: SegmentStats, opts: BleuOptions) -> BleuArrays:
        """Sentence BLEU of every segment, vectorised from the statistics."""
        return self.from_sums(stats.truncate_order(opts.max_ngram_order).matrix(opts.ref_length), opts)


@dataclass(frozen=True)
class NltkProfile(Profile):
    """NLTK ``corpus_bleu``: depends on per-segment floors and (methods 4-7) on the last segment."""

    def _call(self, stats: SegmentStats, opts: BleuOptions) -> BleuArrays:
        from .nltk_compat import nltk_bleu

        order = opts.max_ngram_order
        kwargs: dict[str, Any] = {"weights": _nltk_weights(opts), "method": int(str(opts.smooth_method)[-1]),
                                  "auto_reweigh": opts.auto_reweigh}
        if opts.smooth_value is not None:
            kwargs["epsilon"] = opts.smooth_value
        res = nltk_bleu(stats.hyp_len, stats.ref_lens, stats.matches, stats.totals, **kwargs)
        prec = np.zeros(order)
        prec[: len(res.precisions)] = [100.0 * float(p) for p in res.precisions][:order]
        ratio = res.hyp_len / res.ref_len if res.ref_len else 0.0
        return BleuArrays(np.float64(100.0 * res.score), prec, np.float64(res.bp), np.float64(ratio),
                          np.float64(res.hyp_len), np.float64(res.ref_len))

    def corpus(self, stats: SegmentStats, opts: BleuOptions) -> BleuArrays:
        return self._call(stats, opts)

    def sentences(self, stats: SegmentStats, opts: BleuOptions) -> BleuArrays:
        """nltk ``sentence_bleu`` of every segment: vectorised for methods 0-3 (their smoothing only reads the
        segment's own counts), a loop over :func:`~harness.nltk_compat.nltk_bleu` otherwise."""
        method = int(str(opts.smooth_method)[-1])
        if method <= 3 and not opts.auto_reweigh:
            return self._sentences_vectorised(stats, opts, method)
        rows = [self._call(stats.take(slice(i, i + 1)), opts) for i in range(len(stats))]
        return BleuArrays(*(np.stack([getattr(r, f) for r in rows]) for f in BleuArrays.__dataclass_fields__))

    @staticmethod
    def _sentences_vectorised(stats: SegmentStats, opts: BleuOptions, method: int) -> BleuArrays:
        weights = np.asarray(_nltk_weights(opts), dtype=np.float64)
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


_SACREBLEU_SMOOTH = ("none", "floor", "add-k", "exp")
_PROFILES: dict[str, Profile] = {
    "sacrebleu": Profile("sacrebleu", {"tokenize": "13a", "lowercase": False, "smooth_method": "exp",
                                       "ref_length": "closest"}, _SACREBLEU_SMOOTH, formula=sacrebleu_formula),
    "multi-bleu": Profile("multi-bleu", {"tokenize": "none", "lowercase": False, "smooth_method": "none",
                                         "ref_length": "closest"}, ("none",), ("closest",),
                          effective_order=False, formula=sacrebleu_formula),
    "mteval-v13a": Profile("mteval-v13a", {"tokenize": "13a", "lowercase": True, "smooth_method": "exp",
                                           "ref_length": "closest"}, ("exp", "none"), ("closest", "shortest"),
                           effective_order=False, formula=mteval_formula),
    "hf": Profile("hf", {"tokenize": "13a", "lowercase": False, "smooth_method": "add-k", "smooth_value": 1.0,
                         "ref_length": "shortest"}, ("add-k", "none"), effective_order=False, formula=hf_formula),
    "nltk": NltkProfile("nltk", {"tokenize": "none", "lowercase": False, "smooth_method": "method0",
                                 "ref_length": "closest"}, NLTK_METHODS, ("closest",), effective_order=False),
}


def get_profile(name: str) -> Profile:
    """The profile registered under ``name`` (a :class:`ConfigError` lists the valid names)."""
    try:
        return _PROFILES[name]
    except (KeyError, TypeError):
        raise ConfigError("profile", f"unknown profile {name!r}", PROFILES) from None


# --------------------------------------------------------------------------------------------------------------
# Signatures
# --------------------------------------------------------------------------------------------------------------

_SIGNATURE_ABBR = {"nrefs": "#", "bs": "bs", "ar": "ar", "seed": "rs", "case": "c", "eff": "e", "tok": "tok",
                   "smooth": "s", "order": "n", "reflen": "r", "w": "w", "reweigh": "rw", "profile": "p",
                   "harness": "v"}


def smooth_label(opts: BleuOptions) -> str:
    """``exp``, ``none``, ``floor[0.10]``, ``add-k[1.00]`` (sacrebleu), ``method1[0.10]`` (nltk epsilon)."""
    if opts.smooth_method in ("floor", "add-k") or (opts.smooth_method == "method1" and opts.smooth_value
                                                    is not None):
        value = opts.smooth_value if opts.smooth_value is not None else 0.1
        return f"{opts.smooth_method}[{value:.2f}]"
    return str(opts.smooth_method)


def signature_fields(opts: BleuOptions, nrefs: int | str, extra: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The signature as ordered fields: sacrebleu's (``nrefs``, ``case``, ``eff``, ``tok``, ``smooth``) and ours
    where sacrebleu leaves out what changes the number: n-gram ``order`` (sacrebleu #251), ``reflen`` rule,
    ``w`` (weights, when not uniform), ``profile``; ``harness`` (our version) last, where sacrebleu has
    ``version``. ``extra`` (e.g. ``bs``, ``ar``, ``seed``) goes after ``nrefs`` as in sacrebleu."""
    from .tokenizers import tokenizer_signature

    fields: dict[str, str] = {"nrefs": str(nrefs)}
    for key, value in (extra or {}).items():
        fields[key] = str(value)
    fields["case"] = "lc" if opts.lowercase else "mixed"
    fields["eff"] = "yes" if opts.effective_order else "no"
    fields["tok"] = tokenizer_signature(str(opts.tokenize))
    fields["smooth"] = smooth_label(opts)
    fields["order"] = str(opts.max_ngram_order)
    fields["reflen"] = str(opts.ref_length)
    if opts.weights is not None:
        fields["w"] = ",".join(f"{w:g}" for w in opts.weights)
    if opts.auto_reweigh:
        fields["reweigh"] = "yes"
    fields["profile"] = opts.profile
    fields["harness"] = __version__
    return fields


def format_signature(fields: Mapping[str, str], short: bool = False) -> str:
    return "|".join(f"{_SIGNATURE_ABBR.get(k, k) if short else k}:{v}" for k, v in fields.items())


def signature(opts: BleuOptions, nrefs: int | str, extra: Mapping[str, Any] | None = None,
              short: bool = False) -> str:
    """The reproducibility signature, e.g.
    ``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|order:4|reflen:closest|profile:sacrebleu|harness:0.1.0``."""
    return format_signature(signature_fields(opts, nrefs, extra), short)


def parse_signature(text: str) -> dict[str, Any]:
    """Options that reproduce a score from its signature (long or short form); inverse of :func:`signature`.

    Returns keyword arguments for :func:`make_options` plus ``nrefs`` and ``harness`` (the version).
    """
    from .tokenizers import available_tokenizers, tokenizer_signature

    long_of = {v: k for k, v in _SIGNATURE_ABBR.items()}
    fields: dict[str, str] = {}
    for part in text.split("|"):
        key, sep, value = part.partition(":")
        if not sep:
            raise ConfigError("signature", f"malformed field {part!r} in {text!r}")
        fields[long_of.get(key, key) if key not in _SIGNATURE_ABBR else key] = value
    tok_of = {tokenizer_signature(t): t for t in available_tokenizers()}
    smooth = fields.get("smooth", "exp")
    method, _, value = smooth.partition("[")
    options: dict[str, Any] = {
        "profile": fields.get("profile", "sacrebleu"),
        "tokenize": tok_of.get(fields.get("tok", "13a"), fields.get("tok", "13a")),
        "lowercase": fields.get("case", "mixed") == "lc",
        "effective_order": fields.get("eff", "no") == "yes",
        "smooth_method": method,
        "smooth_value": float(value.rstrip("]")) if value else None,
        "max_ngram_order": int(fields.get("order", "4")),
        "ref_length": fields.get("reflen", "closest"),
    }
    if "w" in fields:
        options["weights"] = tuple(float(w) for w in fields["w"].split(","))
    if fields.get("reweigh") == "yes":
        options["auto_reweigh"] = True
    return {"options": options, "nrefs": fields.get("nrefs"), "harness": fields.get("harness")}


# --------------------------------------------------------------------------------------------------------------
# Scores from statistics
# --------------------------------------------------------------------------------------------------------------


def nrefs_label(stats: SegmentStats) -> int | str:
    """``var`` when some segment lacks some reference (sacrebleu), else the number of reference streams."""
    return "var" if stats.variable_refs else stats.n_refs


def corpus_score(stats: SegmentStats, opts: BleuOptions, extra: Mapping[str, Any] | None = None) -> BleuScore:
    """The corpus BLEU of a statistics block under resolved options."""
    arrays = get_profile(opts.profile).corpus(stats.truncate_order(orders_needed(opts)), opts)
    return _to_score(arrays, stats.matches[:, : opts.max_ngram_order].sum(axis=0),
                     stats.totals[:, : opts.max_ngram_order].sum(axis=0), signature(opts, nrefs_label(stats), extra),
                     opts)


def sentence_scores(stats: SegmentStats, opts: BleuOptions) -> BleuArrays:
    """Sentence BLEU of every segment (vectorised from the statistics; no per-segment re-tokenization)."""
    return get_profile(opts.profile).sentences(stats.truncate_order(orders_needed(opts)), opts)


def _to_score(arrays: BleuArrays, counts: NDArray, totals: NDArray, sig: str, opts: BleuOptions) -> BleuScore:
    hyp_len, ref_len = float(arrays.hyp_len), float(arrays.ref_len)
    return BleuScore(
        score=float(arrays.score),
        precisions=[float(p) for p in np.atleast_1d(arrays.precisions)],
        bp=float(arrays.bp),
        ratio=float(arrays.ratio),
        hyp_len=int(hyp_len) if hyp_len.is_integer() else hyp_len,
        ref_len=int(ref_len) if ref_len.is_integer() else ref_len,
        counts=[int(x) for x in counts],
        totals=[int(x) for x in totals],
        signature=sig,
        options=opts,
    )


def score_at(arrays: BleuArrays, i: int, counts: Sequence[int], totals: Sequence[int], sig: str,
             opts: BleuOptions) -> BleuScore:
    """Row ``i`` of vectorised results as a :class:`BleuScore`."""
    row = BleuArrays(*(getattr(arrays, f)[i] for f in BleuArrays.__dataclass_fields__))
    return _to_score(row, np.asarray(counts), np.asarray(totals), sig, opts)
