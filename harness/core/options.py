"""BLEU options and compatibility profiles: every knob that changes a BLEU number, validated, in one list.

A *profile* names another tool whose numbers we reproduce (sacrebleu, NLTK, tensorflow-nmt/HF ``bleu``, Moses
multi-bleu.perl, NIST mteval-v13a): its defaults and what it accepts. :data:`OPTION_NAMES` is the one list of
option names: the config schema, the command line, MLflow params and signatures are derived from it.

Pure core: no I/O, no tokenizing. Tokenizer *names* are validated here (:data:`TOKENIZERS`); whether an optional
tokenizer is installed is the text layer's question (:func:`harness.text.tokenizers.check_usable`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

from ..errors import ConfigError

#: Every tokenizer name sacrebleu's ``BLEU(tokenize=...)`` accepts, in sacrebleu's order.
TOKENIZERS: tuple[str, ...] = ("none", "zh", "13a", "intl", "char", "ja-mecab", "ko-mecab", "spm", "flores101",
                               "flores200", "spBLEU-1K")
REF_LENGTH_RULES: tuple[str, ...] = ("closest", "shortest", "average")
SMOOTH_DEFAULTS: dict[str, float | None] = {"none": None, "floor": 0.1, "add-k": 1.0, "exp": None}
NLTK_METHODS: tuple[str, ...] = tuple(f"method{i}" for i in range(8))


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

    @property
    def nltk_method(self) -> int:
        """The NLTK SmoothingFunction method number (``method3`` -> 3); the ``nltk`` profile only."""
        return int(str(self.smooth_method)[len("method"):])

    def as_params(self) -> dict[str, Any]:
        """Flat view in :data:`OPTION_NAMES` order (MLflow params, Parquet metadata)."""
        out = {name: getattr(self, name) for name in OPTION_NAMES}
        out["weights"] = None if self.weights is None else list(self.weights)
        return out


#: The one list of BLEU option names (config keys, ``harness-score`` flags, MLflow params, signature fields).
OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in fields(BleuOptions))


@dataclass(frozen=True)
class Profile:
    """A tool whose numbers we reproduce: its defaults and what it accepts (its formula is in :mod:`.bleu`)."""

    name: str
    defaults: Mapping[str, Any]
    smooth_methods: tuple[str, ...]
    ref_lengths: tuple[str, ...] = REF_LENGTH_RULES
    effective_order: bool = True
    #: True when the corpus score is a function of summed statistics (resampling, CIs and paired tests apply).
    additive: bool = True

    def validate(self, opts: BleuOptions) -> None:
        if opts.tokenize not in TOKENIZERS:
            raise ConfigError("tokenize", f"unknown tokenizer {opts.tokenize!r}", TOKENIZERS, got=opts.tokenize)
        if opts.smooth_method not in self.smooth_methods:
            raise ConfigError("smooth_method", f"{opts.smooth_method!r} is not available in profile "
                              f"{self.name!r}", self.smooth_methods, got=opts.smooth_method)
        if opts.ref_length not in self.ref_lengths:
            raise ConfigError("ref_length", f"{opts.ref_length!r} is not available in profile {self.name!r}",
                              self.ref_lengths, got=opts.ref_length)
        if opts.effective_order and not self.effective_order:
            raise ConfigError("effective_order", f"profile {self.name!r} has no effective order", ["false"])
        if not isinstance(opts.max_ngram_order, int) or isinstance(opts.max_ngram_order, bool) \
                or opts.max_ngram_order < 1:
            raise ConfigError("max_ngram_order", f"must be a positive integer, got {opts.max_ngram_order!r}",
                              expected="a positive integer", got=opts.max_ngram_order)
        if opts.weights is not None:
            w = opts.weights
            if len(w) != opts.max_ngram_order:
                raise ConfigError("weights", f"{len(w)} weights for max_ngram_order={opts.max_ngram_order}; "
                                  "give one weight per order")
            if any(not math.isfinite(x) or x < 0 for x in w) or sum(w) <= 0:
                raise ConfigError("weights", f"weights must be finite, non-negative and not all zero: {list(w)}")
        if opts.smooth_value is not None and (not math.isfinite(opts.smooth_value) or opts.smooth_value < 0):
            raise ConfigError("smooth_value", f"must be a finite non-negative number, got {opts.smooth_value!r}",
                              expected="a finite non-negative number", got=opts.smooth_value)
        if opts.auto_reweigh and self.name != "nltk":
            raise ConfigError("auto_reweigh", "only the 'nltk' profile has auto_reweigh", ["false"])


_SACREBLEU_SMOOTH = ("none", "floor", "add-k", "exp")
_PROFILES: dict[str, Profile] = {
    "sacrebleu": Profile("sacrebleu", {"tokenize": "13a", "lowercase": False, "smooth_method": "exp",
                                       "ref_length": "closest"}, _SACREBLEU_SMOOTH),
    "nltk": Profile("nltk", {"tokenize": "none", "lowercase": False, "smooth_method": "method0",
                             "ref_length": "closest"}, NLTK_METHODS, ("closest",), effective_order=False,
                    additive=False),
    "hf": Profile("hf", {"tokenize": "13a", "lowercase": False, "smooth_method": "add-k", "smooth_value": 1.0,
                         "ref_length": "shortest"}, ("add-k", "none"), effective_order=False),
    "multi-bleu": Profile("multi-bleu", {"tokenize": "none", "lowercase": False, "smooth_method": "none",
                                         "ref_length": "closest"}, ("none",), ("closest",), effective_order=False),
    "mteval-v13a": Profile("mteval-v13a", {"tokenize": "13a", "lowercase": True, "smooth_method": "exp",
                                           "ref_length": "closest"}, ("exp", "none"), ("closest", "shortest"),
                           effective_order=False),
}
PROFILES: tuple[str, ...] = tuple(_PROFILES)

#: The config key of a variant that chooses effective order for its segment level (null: the profile's default).
SENTENCE_EFFECTIVE_ORDER = "sentence_effective_order"


def get_profile(name: str) -> Profile:
    """The profile registered under ``name`` (a :class:`ConfigError` lists the valid names)."""
    try:
        return _PROFILES[name]
    except (KeyError, TypeError):
        raise ConfigError("profile", f"unknown profile {name!r}", PROFILES, got=name) from None


def sentence_options(opts: BleuOptions, effective_order: bool | None = None) -> BleuOptions:
    """The options of a variant's segment level: its corpus options with effective order on by default where the
    profile has it, as sacrebleu's ``sentence_bleu`` (``use_effective_order=True``), which is WMT's segment-level
    BLEU baseline ("sentBLEU", mt-metrics-eval's ``sentBLEU`` scores). ``effective_order`` True/False chooses
    otherwise (config key ``sentence_effective_order`` of a variant). Profiles without effective order (nltk, hf,
    multi-bleu, mteval-v13a) score segments with their own formula, as their tools' sentence-level functions do.

    Without effective order a hypothesis shorter than the n-gram order has no n-grams of the highest orders and
    scores ~0 (sacrebleu stops at the first empty order and takes the log of 0), whatever its matches."""
    profile = get_profile(opts.profile)
    eff = profile.effective_order if effective_order is None else bool(effective_order)
    if eff and not profile.effective_order:
        raise ConfigError(SENTENCE_EFFECTIVE_ORDER, f"profile {opts.profile!r} has no effective order", ["false",
                                                                                                        "null"])
    return replace(opts, effective_order=eff)


def make_options(**options: Any) -> BleuOptions:
    """Build resolved options from keyword arguments, rejecting unknown names with the valid ones listed."""
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise ConfigError(unknown[0], "unknown BLEU option", OPTION_NAMES)
    return BleuOptions(**options).resolved()


def orders_needed(opts: BleuOptions) -> int:
    """How many n-gram orders of statistics a score under ``opts`` reads (NLTK's method5/7 read order 5 too)."""
    if opts.profile == "nltk":
        from .nltk_replay import nltk_orders_needed

        return max(opts.max_ngram_order, nltk_orders_needed(nltk_weights(opts), opts.nltk_method))
    return opts.max_ngram_order


def nltk_weights(opts: BleuOptions) -> tuple[float, ...]:
    """The weights NLTK applies: the given ones, else uniform over ``max_ngram_order``."""
    order = opts.max_ngram_order
    return opts.weights if opts.weights is not None else (1.0 / order,) * order
