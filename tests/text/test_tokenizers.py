"""harness.text.tokenizers must give exactly sacrebleu 2.6's tokens; sacrebleu itself is the oracle throughout.

The oracle for a line is ``BLEU(tokenize=name, lowercase=lc)._preprocess_segment(line).split()``, i.e. what
sacrebleu's n-gram code sees.  Evidence, from broad to sharp:

* every file of the real WMT21 en-de data, every built-in tokenizer, cased and lowercased;
* every BMP code point in punctuation/number contexts (pins zh's CJK table and intl's \\p{P}/\\p{N}/\\p{S});
* every string up to a length over small alphabets of the characters the context rules look at (the
  punctuation runs, digits, separators, line breaks), which enumerates the cases the fast paths reason about;
* hypothesis: random Unicode lines salted with entities, ``<skipped>``, every kind of whitespace, digits
  around '.', ',' and '-', CJK, non-BMP characters and the fast path's reserved characters;
* edge cases and the error contract.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sacrebleu.metrics.bleu import BLEU

from harness.errors import ConfigError
from harness.text import tokenizers
from harness.text.tokenizers import available_tokenizers, tokenize_corpus, tokenize_unique, tokenizer_signature
from tokenizer_cases import EDGE_LINES, PIECES, _all_strings, _data_files, _read, oracle

FAST = ("13a", "intl", "zh", "char", "none")
def assert_same(lines: list[str], name: str, lowercase: bool, where: str = "") -> None:
    """tokenize_corpus == sacrebleu, reporting the first differing line."""
    expected = oracle(lines, name, lowercase)
    got = tokenize_corpus(lines, name, lowercase)
    assert len(got) == len(expected)
    for i, (e, g) in enumerate(zip(expected, got)):
        assert g == e, f"{where}line {i}: {lines[i]!r} (tokenize={name}, lowercase={lowercase})"


# ---------------------------------------------------------------------------------------------------------------
# real data
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("lowercase", [False, True])
@pytest.mark.parametrize("name", FAST)
@pytest.mark.parametrize("path", _data_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_data_matches_sacrebleu(path: Path, name: str, lowercase: bool) -> None:
    assert_same(_read(path), name, lowercase, where=f"{path.name} ")


@pytest.mark.slow
@pytest.mark.parametrize("name", FAST)
def test_real_corpus_with_duplicates(name: str) -> None:
    """Several files at once, twice (the de-duplicating path), equal sacrebleu."""
    lines = [line for path in _data_files()[:3] for line in _read(path)] * 2
    expected = oracle(lines, name, False)
    got = tokenize_corpus(lines, name)
    assert got == expected
    half = len(lines) // 2
    assert all(got[i] is got[i + half] for i in range(half))  # documented: identical lines share a list
    unique_tokens, index = tokenize_unique(lines, name)
    assert [unique_tokens[k] for k in index] == expected
    assert len(unique_tokens) == len(set(lines))


# ---------------------------------------------------------------------------------------------------------------
# every code point
# ---------------------------------------------------------------------------------------------------------------

BMP = [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF]


@pytest.mark.slow
def test_zh_cjk_table_every_bmp_code_point() -> None:
    """sacrebleu's _is_chinese_char compares strings with buggy two-character bounds (u'\\u20000' ...); the
    effective table is pinned by tokenizing every BMP character between two letters."""
    assert_same([f"a{c}b" for c in BMP], "zh", False)


@pytest.mark.slow
def test_intl_classes_every_bmp_code_point() -> None:
    """intl's \\p{P}/\\p{N}/\\p{S} (``regex`` module tables) for every BMP character: 'a<c>1' splits P and S,
    '1<c>1' keeps P glued between numbers but not S, '<c>.1' glues the '.' only if c is a number."""
    assert_same([f"a{c}1 1{c}1 {c}.1" for c in BMP], "intl", False)


def test_intl_non_bmp_classes() -> None:
    """Non-BMP punctuation, symbols and numbers (emoji, math digits, Aegean, ...) take the ``regex`` path."""
    import regex

    astral = "".join(map(chr, range(0x10000, 0x30000)))
    special = regex.findall(r"[\p{P}\p{S}\p{N}]", astral)[::5] + ["\U0001f600", "\U0001d7ce", "\U00010100"]
    lines = [t.format(c) for c in special for t in ("a{}1", "1{}1", "1{}", "{}.")]
    assert_same(lines, "intl", False)
    assert_same(lines, "intl", True)


def test_13a_every_ascii_and_latin1_pair() -> None:
    chars = [chr(c) for c in range(1, 0x100)]
    lines = [a + b for a in chars for b in "a1.,-&;<>/ \n"] + [f"1{a}.{a}1" for a in chars]
    assert_same(lines, "13a", False)
    assert_same(lines, "13a", True)


# ---------------------------------------------------------------------------------------------------------------
# exhaustive small alphabets: the punctuation-run cases the fast paths reason about
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "alphabet", "max_len"),
    [
        ("13a", "a1.,- !\n", 5),  # runs of . and , between digits/letters, '-' after digits, line breaks
        ("13a", "1a.,", 6),  # long runs: the parity rule for a run followed by a digit
        ("13a", ["&lt;", "&amp;", "&gt;", "&quot;", "lt;", "&", "1", ".", "-", "<skipped>", "\n"], 3),
        ("zh", "a1.,-\u4e2d ", 5),  # no padding in zh: runs at the line start/end
        ("zh", "1a.,", 6),
        ("intl", "a1.-$ \u0663", 5),  # '-' is \\p{P} in intl; U+0663 is an Arabic-Indic digit (\\p{N})
        ("intl", "1a.-", 6),
        ("intl", "a\U0001d7ce\U00010100.\U0001f600 ", 5),  # non-BMP digit, punctuation and symbol
    ],
)
@pytest.mark.slow
def test_exhaustive_small_alphabets(name: str, alphabet: str | list[str], max_len: int) -> None:
    assert_same(_all_strings(alphabet, max_len), name, False)


# ---------------------------------------------------------------------------------------------------------------
# hypothesis: random Unicode corpora
# ---------------------------------------------------------------------------------------------------------------

line_strategy = st.lists(
    st.one_of(st.sampled_from(PIECES), st.text(max_size=3), st.characters()), max_size=10
).map("".join)
corpus_strategy = st.lists(line_strategy, max_size=6)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=corpus_strategy)
def test_random_corpora_match_sacrebleu(lines: list[str]) -> None:
    for name in FAST:
        for lowercase in (False, True):
            assert tokenize_corpus(lines, name, lowercase) == oracle(lines, name, lowercase), (name, lowercase)


@settings(max_examples=60, deadline=None)
@given(lines=corpus_strategy, name=st.sampled_from(FAST), lowercase=st.booleans())
def test_random_corpora_with_duplicates(lines: list[str], name: str, lowercase: bool) -> None:
    doubled = lines + lines[::-1] + lines
    expected = oracle(doubled, name, lowercase)
    assert tokenize_corpus(doubled, name, lowercase) == expected
    tokens, index = tokenize_unique(doubled, name, lowercase)
    assert [tokens[k] for k in index] == expected


# ---------------------------------------------------------------------------------------------------------------
# edge cases
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", FAST)
@pytest.mark.parametrize("lowercase", [False, True])
def test_edge_lines(name: str, lowercase: bool) -> None:
    assert_same(EDGE_LINES, name, lowercase)
    for line in EDGE_LINES:  # alone too: first and last line of a corpus have no neighbour line
        assert_same([line], name, lowercase)


@pytest.mark.parametrize("name", FAST)
def test_empty_inputs(name: str) -> None:
    assert tokenize_corpus([], name) == []
    assert tokenize_corpus([""], name) == [[]]
    assert tokenize_corpus(["", "", " "], name, True) == [[], [], []]
    assert tokenize_unique([], name) == ([], [])
    assert tokenize_corpus(("a b", "a b"), name) == oracle(["a b", "a b"], name, False)  # any sequence


def test_reserved_characters_fall_back_per_line() -> None:
    """Lines holding the separator/place-holders are exact too, and do not disturb their neighbours."""
    lines = ["a.\x00b", "1.5", "x\x01,y", "plain line.", "\x02", "1\x00.5", "end."]
    for name in FAST:
        assert_same(lines, name, False)
        assert_same(lines, name, True)


def test_fallback_does_not_fill_sacrebleus_cache() -> None:
    """The per-line path calls the undecorated __call__, so sacrebleu's shared lru_cache (issue #217) is untouched."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    before = Tokenizer13a.__call__.cache_info().currsize
    tokenize_corpus([f"unique {i} \x00 line." for i in range(50)], "13a")
    assert Tokenizer13a.__call__.cache_info().currsize == before


def test_unknown_tokenizer_lists_choices() -> None:
    with pytest.raises(ConfigError) as info:
        tokenize_corpus(["a"], "13b")
    err = info.value
    assert err.key == "tokenize"
    assert "unknown tokenizer '13b'" in str(err)
    assert err.choices is not None and set(FAST) <= set(err.choices)
    assert set(err.choices) == set(BLEU.TOKENIZERS)  # every name sacrebleu accepts
    with pytest.raises(ConfigError):
        tokenizer_signature("13b")
    with pytest.raises(ConfigError):
        tokenize_unique(["a"], "")


@pytest.mark.parametrize("bad", [None, b"bytes", 3, ["a"]])
def test_non_str_entry_raises_type_error_naming_index(bad: object) -> None:
    with pytest.raises(TypeError, match=r"lines\[2\]"):
        tokenize_corpus(["a", "b", bad, "d"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"lines\[0\]"):
        tokenize_unique([bad], "char")  # type: ignore[list-item]


def test_single_string_is_rejected() -> None:
    with pytest.raises(TypeError, match="not a single str"):
        tokenize_corpus("a whole text")


# ---------------------------------------------------------------------------------------------------------------
# names, signatures, optional tokenizers
# ---------------------------------------------------------------------------------------------------------------


def test_names_mirror_sacrebleu() -> None:
    from sacrebleu.metrics.bleu import _TOKENIZERS

    assert {name: f"{m}.{c}" for name, (m, c) in tokenizers._SACREBLEU_CLASSES.items()} == _TOKENIZERS
    available = available_tokenizers()
    assert set(FAST) <= set(available) <= set(_TOKENIZERS)


@pytest.mark.parametrize("name", FAST)
@pytest.mark.parametrize("lowercase", [False, True])
def test_signature_matches_sacrebleu(name: str, lowercase: bool) -> None:
    bleu = BLEU(tokenize=name, lowercase=lowercase)
    assert tokenizer_signature(name) == bleu.tokenizer_signature
    bleu.corpus_score(["a b"], [["a b"]])  # sacrebleu only prints a signature after scoring
    assert f"|tok:{tokenizer_signature(name)}|" in str(bleu.get_signature())


OPTIONAL = ["ja-mecab", "ko-mecab", "spm", "flores101", "flores200", "spBLEU-1K"]


@pytest.mark.parametrize("name", OPTIONAL)
def test_optional_tokenizers_explain_what_is_missing(name: str) -> None:
    if name in available_tokenizers():
        assert tokenize_corpus(["Hello, world."], name) == oracle(["Hello, world."], name, False)
        return
    with pytest.raises(ConfigError) as info:
        tokenize_corpus(["a"], name)
    message = str(info.value)
    assert ("pip install" in message) or ("download" in message)
    with pytest.raises(ConfigError):
        tokenizer_signature(name)


def test_spm_model_is_never_downloaded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With sentencepiece 'installed' but no cached model, the SentencePiece tokenizers are refused, offline."""
    import sacrebleu.tokenizers.tokenizer_spm as spm_module
    import sacrebleu.utils

    def no_download(*args: object, **kwargs: object) -> None:
        raise AssertionError("a download was attempted")

    monkeypatch.setattr(spm_module, "download_file", no_download)
    monkeypatch.setattr(sacrebleu.utils, "download_file", no_download)
    monkeypatch.setattr(sacrebleu.utils, "SACREBLEU_DIR", str(tmp_path))
    monkeypatch.setattr(tokenizers, "_missing_modules", lambda name: [])
    monkeypatch.setattr(tokenizers, "_instances", {})
    for name in ("spm", "flores101", "flores200", "spBLEU-1K"):
        assert name not in available_tokenizers()
        with pytest.raises(ConfigError, match="download") as info:
            tokenize_corpus(["a"], name)
        assert str(tmp_path / "models") in str(info.value)
