"""Compatibility profiles: the tools whose BLEU numbers we reproduce (sacrebleu, NLTK, tensorflow-nmt/HF ``bleu``,
Moses multi-bleu.perl, NIST mteval-v13a), each a :class:`Profile` that says what it accepts and what it does.

Callers ask the profile (``get_profile(opts.profile).additive``, ``.corpus(stats, opts)``, ``.case_mode(...)``)
and never test its name: a new profile is one entry of :data:`_PROFILES`. This is sacrebleu's pattern of a metric
object with hooks. Pure core: no I/O.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from ..errors import ConfigError
from .formulas import BleuArrays, hf_formula, mteval_formula, sacrebleu_formula
from .nltk_replay import METHOD_NUMBERS, nltk_bleu, nltk_orders_needed
from .stats import REF_LENGTH_RULES, SegmentStats

if TYPE_CHECKING:  # profiles read the options' fields; options.py asks profiles for defaults
    from .options import BleuOptions

#: A BLEU formula of summed statistics ``[..., 2 + 2N]`` (:mod:`.formulas`).
Formula = Callable[[Any, "BleuOptions"], BleuArrays]
#: A score of per-segment statistics (a profile that is not a function of summed statistics).
Replay = Callable[[SegmentStats, "BleuOptions"], BleuArrays]

NLTK_METHODS: tuple[str, ...] = tuple(f"method{i}" for i in METHOD_NUMBERS)
#: The default ``smooth_value`` of each sacrebleu smoothing method.
SMOOTH_DEFAULTS: dict[str, float | None] = {"none": None, "floor": 0.1, "add-k": 1.0, "exp": None}


@dataclass(frozen=True)
class Profile:
    """A tool whose numbers we reproduce: its defaults, what it accepts, and how it computes.

    ``language_tokenizer``: the tool picks its tokenizer from the target language when none is given
    (sacrebleu's ``-l``; :data:`harness.core.options.LANGUAGE_RULES`). ``effective_order``: the tool has
    sacrebleu's effective order, and its segment level uses it by default
    (sacrebleu's ``sentence_bleu``, WMT's sentBLEU). ``formula``: its BLEU of summed statistics, or None when its
    corpus score is not one (then ``corpus_replay`` and ``sentence_replay`` score per-segment statistics, and
    nothing resamples it). ``resample_formula``: how bootstrap resamples are scored when it differs
    (sacrebleu sums float32 statistics), for default weights. ``ascii_lowercase``: ``lowercase`` lowers A-Z only
    (mteval's ``tr/[A-Z]/[a-z]/``), else ``str.lower``. ``auto_reweigh``: it has NLTK's ``auto_reweigh``.
    """

    name: str
    defaults: Mapping[str, Any]
    smooth_methods: tuple[str, ...]
    ref_lengths: tuple[str, ...] = REF_LENGTH_RULES
    language_tokenizer: bool = False
    effective_order: bool = False
    formula: Formula | None = sacrebleu_formula
    resample_formula: Formula | None = None
    corpus_replay: Replay | None = None
    sentence_replay: Replay | None = None
    ascii_lowercase: bool = False
    auto_reweigh: bool = False
    orders: Callable[[BleuOptions], int] | None = None

    @property
    def additive(self) -> bool:
        """The corpus score is a function of summed statistics: resampling, intervals and paired tests apply."""
        return self.formula is not None

    def case_mode(self, lowercase: bool | None) -> str:
        """How text is cased before tokenizing: ``mixed``, ``lc`` (``str.lower``) or ``ascii-lc`` (mteval)."""
        if not lowercase:
            return "mixed"
        return "ascii-lc" if self.ascii_lowercase else "lc"

    def orders_needed(self, opts: BleuOptions) -> int:
        """How many n-gram orders of statistics a score reads (NLTK's method5/7 read one more)."""
        return opts.max_ngram_order if self.orders is None else self.orders(opts)

    def from_sums(self, sums: Any, opts: BleuOptions) -> BleuArrays:
        """Scores of summed statistics ``[..., 2 + 2N]`` (vectorised); a :class:`ConfigError` without a formula."""
        if self.formula is None:
            raise ConfigError("profile", f"profile {self.name!r} is not a function of summed statistics (its corpus "
                              "score depends on segment order); resampling is not available", additive_profiles(),
                              got=self.name)
        return self.formula(sums, opts)

    def resampled(self, sums: Any, opts: BleuOptions) -> BleuArrays:
        """Scores of bootstrap resamples as the tool scores them (sacrebleu: float32 sums, default weights)."""
        if self.resample_formula is not None and opts.weights is None:
            return self.resample_formula(sums, opts)
        return self.from_sums(sums, opts)

    def corpus(self, stats: SegmentStats, opts: BleuOptions) -> BleuArrays:
        """The corpus score of per-segment statistics, as arrays of shape ``()``."""
        stats = stats.truncate_order(self.orders_needed(opts))
        if self.corpus_replay is not None:
            return self.corpus_replay(stats, opts)
        return self.from_sums(stats.truncate_order(opts.max_ngram_order).matrix(opts.ref_length).sum(axis=0), opts)

    def sentences(self, stats: SegmentStats, opts: BleuOptions) -> BleuArrays:
        """The score of every segment (vectorised; the tool's own sentence-level function where it has one)."""
        stats = stats.truncate_order(self.orders_needed(opts))
        if self.sentence_replay is not None:
            return self.sentence_replay(stats, opts)
        return self.from_sums(stats.truncate_order(opts.max_ngram_order).matrix(opts.ref_length), opts)

    def validate(self, opts: BleuOptions) -> None:
        """What this tool accepts (the options' own ranges are checked by :meth:`BleuOptions.resolved`)."""
        if opts.smooth_method not in self.smooth_methods:
            raise ConfigError("smooth_method", f"{opts.smooth_method!r} is not available in profile "
                              f"{self.name!r}", self.smooth_methods, got=opts.smooth_method)
        if opts.ref_length not in self.ref_lengths:
            raise ConfigError("ref_length", f"{opts.ref_length!r} is not available in profile {self.name!r}",
                              self.ref_lengths, got=opts.ref_length)
        if opts.effective_order and not self.effective_order:
            raise ConfigError("effective_order", f"profile {self.name!r} has no effective order", ["false"])

    def validate_knobs(self, opts: BleuOptions) -> None:
        """The tool-specific knobs, checked after the options' ranges."""
        if opts.auto_reweigh and not self.auto_reweigh:
            raise ConfigError("auto_reweigh", f"only the {_with('auto_reweigh')} profile has auto_reweigh",
                              ["false"])


# --------------------------------------------------------------------------------------------------------------
# NLTK (not a function of summed statistics: per-segment floors, the last segment in smoothing)
# --------------------------------------------------------------------------------------------------------------


def _nltk_corpus(stats: SegmentStats, opts: BleuOptions) -> BleuArrays:
    order = opts.max_ngram_order
    kwargs: dict[str, Any] = {"weights": _nltk_weights(opts), "method": _nltk_method(opts),
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
    method = _nltk_method(opts)
    if method > 3 or opts.auto_reweigh:
        rows = [_nltk_corpus(stats.take(slice(i, i + 1)), opts) for i in range(len(stats))]
        return BleuArrays(*(np.stack([getattr(r, f) for r in rows]) for f in BleuArrays.__dataclass_fields__))
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


def _nltk_weights(opts: BleuOptions) -> tuple[float, ...]:
    """The weights NLTK applies: the given ones, else uniform over ``max_ngram_order``."""
    order = opts.max_ngram_order
    return opts.weights if opts.weights is not None else (1.0 / order,) * order


def _nltk_method(opts: BleuOptions) -> int:
    """The NLTK SmoothingFunction method number (``method3`` -> 3)."""
    return int(str(opts.smooth_method)[len("method"):])


def _nltk_orders(opts: BleuOptions) -> int:
    return max(opts.max_ngram_order, nltk_orders_needed(_nltk_weights(opts), _nltk_method(opts)))


# --------------------------------------------------------------------------------------------------------------
# The profiles
# --------------------------------------------------------------------------------------------------------------

_SACREBLEU_SMOOTH = ("none", "floor", "add-k", "exp")
_FLOAT32 = partial(sacrebleu_formula, arithmetic="float32")
_PROFILES: dict[str, Profile] = {
    "sacrebleu": Profile("sacrebleu", {"tokenize": "13a", "lowercase": False, "smooth_method": "exp",
                                       "ref_length": "closest"}, _SACREBLEU_SMOOTH, language_tokenizer=True,
                         effective_order=True, resample_formula=_FLOAT32),
    "nltk": Profile("nltk", {"tokenize": "none", "lowercase": False, "smooth_method": "method0",
                             "ref_length": "closest"}, NLTK_METHODS, ("closest",), formula=None,
                    corpus_replay=_nltk_corpus, sentence_replay=_nltk_sentences, auto_reweigh=True,
                    orders=_nltk_orders),
    "hf": Profile("hf", {"tokenize": "13a", "lowercase": False, "smooth_method": "add-k", "smooth_value": 1.0,
                         "ref_length": "shortest"}, ("add-k", "none"), formula=hf_formula),
    "multi-bleu": Profile("multi-bleu", {"tokenize": "none", "lowercase": False, "smooth_method": "none",
                                         "ref_length": "closest"}, ("none",), ("closest",),
                          resample_formula=_FLOAT32),
    "mteval-v13a": Profile("mteval-v13a", {"tokenize": "13a", "lowercase": True, "smooth_method": "exp",
                                           "ref_length": "closest"}, ("exp", "none"), ("closest", "shortest"),
                           formula=mteval_formula, ascii_lowercase=True),
}
PROFILES: tuple[str, ...] = tuple(_PROFILES)


def get_profile(name: str) -> Profile:
    """The profile registered under ``name`` (a :class:`ConfigError` lists the valid names)."""
    try:
        return _PROFILES[name]
    except (KeyError, TypeError):
        raise ConfigError("profile", f"unknown profile {name!r}", PROFILES, got=name) from None


def additive_profiles() -> list[str]:
    """The profiles whose corpus score is a function of summed statistics."""
    return [name for name, p in _PROFILES.items() if p.additive]


def _with(knob: str) -> str:
    return ", ".join(repr(name) for name, p in _PROFILES.items() if getattr(p, knob))
