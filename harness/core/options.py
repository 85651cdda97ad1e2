"""BLEU options: every knob that changes a BLEU number, validated, in one list.

The ``profile`` option names another tool whose numbers we reproduce (:mod:`.profiles`): its defaults fill the
options left unset, and it says what it accepts. :data:`OPTION_NAMES` is the one list of option names: the config
schema, the command line, MLflow params and signatures are derived from it.

Pure core: no I/O, no tokenizing. Tokenizer *names* are validated here (:data:`TOKENIZERS`); whether an optional
tokenizer is installed is the text layer's question (:func:`harness.text.tokenizers.check_usable`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

from ..errors import ConfigError
from .profiles import SMOOTH_DEFAULTS, get_profile

#: Every tokenizer name sacrebleu's ``BLEU(tokenize=...)`` accepts, in sacrebleu's order.
TOKENIZERS: tuple[str, ...] = ("none", "zh", "13a", "intl", "char", "ja-mecab", "ko-mecab", "spm", "flores101",
                               "flores200", "spBLEU-1K")


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
        if opts.tokenize not in TOKENIZERS:
            raise ConfigError("tokenize", f"unknown tokenizer {opts.tokenize!r}", TOKENIZERS, got=opts.tokenize)
        profile.validate(opts)
        opts._validate_ranges()
        profile.validate_knobs(opts)
        return opts

    def _validate_ranges(self) -> None:
        if not isinstance(self.max_ngram_order, int) or isinstance(self.max_ngram_order, bool) \
                or self.max_ngram_order < 1:
            raise ConfigError("max_ngram_order", f"must be a positive integer, got {self.max_ngram_order!r}",
                              expected="a positive integer", got=self.max_ngram_order)
        if self.weights is not None:
            w = self.weights
            if len(w) != self.max_ngram_order:
                raise ConfigError("weights", f"{len(w)} weights for max_ngram_order={self.max_ngram_order}; "
                                  "give one weight per order")
            if any(not math.isfinite(x) or x < 0 for x in w) or sum(w) <= 0:
                raise ConfigError("weights", f"weights must be finite, non-negative and not all zero: {list(w)}")
        if self.smooth_value is not None and (not math.isfinite(self.smooth_value) or self.smooth_value < 0):
            raise ConfigError("smooth_value", f"must be a finite non-negative number, got {self.smooth_value!r}",
                              expected="a finite non-negative number", got=self.smooth_value)

    @property
    def case_mode(self) -> str:
        """How text is cased before tokenizing: ``mixed``, ``lc`` (``str.lower``) or ``ascii-lc`` (mteval)."""
        return get_profile(self.profile).case_mode(self.lowercase)

    def as_params(self) -> dict[str, Any]:
        """Flat view in :data:`OPTION_NAMES` order (MLflow params, Parquet metadata)."""
        out = {name: getattr(self, name) for name in OPTION_NAMES}
        out["weights"] = None if self.weights is None else list(self.weights)
        return out


#: The one list of BLEU option names (config keys, ``harness-score`` flags, MLflow params, signature fields).
OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in fields(BleuOptions))


#: The config key of a variant that chooses effective order for its segment level (null: the profile's default).
SENTENCE_EFFECTIVE_ORDER = "sentence_effective_order"

#: The tokenizer each rule picks for a target language (13a for every language not listed). ``sacrebleu``: what
#: sacrebleu picks given the target language (``sacrebleu -l SRC-TGT``, ``BLEU(trg_lang=...)``); ``wmt21``: what
#: WMT21's official automatic scores used (character BLEU for Japanese, not MeCab's words).
LANGUAGE_RULES: dict[str, dict[str, str]] = {
    "sacrebleu": {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"},
    "wmt21": {"zh": "zh", "ja": "char"},
}


def language_of(code: str) -> str:
    """The language a code names for the rules: its primary subtag, lowercased (``ja``, ``zh-Hans`` -> ``zh``,
    ``pt_BR`` -> ``pt``); sacrebleu compares the part after ``-`` of ``-l SRC-TGT`` the same way."""
    return str(code).strip().replace("_", "-").split("-")[0].lower()


def language_tokenizer(target_lang: str, rule: str = "sacrebleu") -> str:
    """The tokenizer ``rule`` (:data:`LANGUAGE_RULES`) picks for ``target_lang`` (a :class:`ConfigError` lists the
    rules)."""
    if rule not in LANGUAGE_RULES:
        raise ConfigError("language_tokenizer", f"unknown rule {rule!r}", list(LANGUAGE_RULES), got=rule)
    return LANGUAGE_RULES[rule].get(language_of(target_lang), "13a")


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
    return get_profile(opts.profile).orders_needed(opts)
