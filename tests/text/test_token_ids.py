"""The compiled path (harness.text.token_ids and its kernels) must give exactly sacrebleu's tokens, hence statistics.

Tokens are decoded back from the ids through the vocabulary and compared with sacrebleu's own
``_preprocess_segment(line).split()``, for every built-in tokenizer, cased and lowercased: on the real data, on
every BMP code point in the contexts the rules look at (the class tables), on astral characters, exhaustively over
small alphabets of the characters the punctuation rules look at, on random Unicode corpora, and through the
statistics (identical arrays) and scores (== sacrebleu). The kernel's check of file bytes is held to Python's own
strict decoder and to read_text's rules on random bytes.
"""

from __future__ import annotations

import numpy as np
import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

from harness.core.options import make_options
from harness.text import pipeline as scoring
from harness.text import token_ids
from harness.text.counting import count_encoded, encode_references, token_statistics
from harness.text.token_ids import TokenTable, encode_lines
from harness.text.tokenizers import case_and_tokenize
from support import sacrebleu_score
from tokenizer_cases import EDGE_LINES, PIECES, _all_strings, _data_files, _read, oracle

pytestmark = pytest.mark.usefixtures("text_kernels")  # skipped only with HARNESS_NATIVE=0

NAMES = ("13a", "intl", "zh", "char", "none")
CASES = [(name, lc) for name in NAMES for lc in (False, True)]
BMP = [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF]


def decoded(lines: list[str], name: str, lowercase: bool) -> list[list[str]]:
    table = TokenTable.empty()
    ids, offsets = encode_lines(lines, make_options(tokenize=name, lowercase=lowercase), table, insert=True)
    assert offsets.shape == (len(lines) + 1,) and offsets[-1] == ids.size
    assert (ids >= 0).all() and (ids < len(table)).all()
    return table.decode(ids, offsets)


def assert_same(lines: list[str], name: str, lowercase: bool) -> None:
    expected = oracle(lines, name, lowercase)
    got = decoded(lines, name, lowercase)
    for i, (e, g) in enumerate(zip(expected, got)):
        assert g == e, f"line {i}: {lines[i]!r} (tokenize={name}, lowercase={lowercase})"
    assert len(got) == len(expected)


# ------------------------------------------------------------------------------------------------ class table


@pytest.mark.slow
def test_class_table_is_built_from_the_tokenizers_own_sources() -> None:
    """Whitespace = str.isspace (none beyond the BMP), the 13a rule characters = rule 1's class plus '.', ',',
    '-', CJK = TokenizerZh._is_chinese_char, P/N/S = the regex module's categories, for every code point."""
    table = token_ids.class_table(intl=True)
    every = range(0x110000)
    assert [c for c in range(0x10000) if table[c] & token_ids.WS] == [c for c in range(0x10000) if chr(c).isspace()]
    assert not any(chr(c).isspace() for c in range(0x10000, 0x110000)) and not (table[0x10000:] & token_ids.WS).any()
    rule1 = regex.compile(r"[\{-\~\[-\` -\&\(-\+\:-\@\/]")
    assert [c for c in range(0x80) if table[c] & token_ids.RULES_13A] == sorted(
        c for c in range(0x80) if (rule1.match(chr(c)) and c != 0x20) or chr(c) in ".,-")
    assert not (table[0x80:] & token_ids.RULES_13A).any()
    assert [c for c in range(0x10000) if table[c] & token_ids.CJK] == [
        ord(c) for c in BMP if TokenizerZh._is_chinese_char(c)]
    assert not (table[0x10000:] & token_ids.CJK).any()
    chars = "".join(chr(c) for c in every if not 0xD800 <= c <= 0xDFFF)
    for bit, prop in ((token_ids.PUNCT, r"\p{P}"), (token_ids.NUMBER, r"\p{N}"), (token_ids.SYMBOL, r"\p{S}")):
        assert np.flatnonzero(table & bit).tolist() == [ord(c) for c in regex.findall(prop, chars)], prop
    assert np.flatnonzero(table & token_ids.BAD).tolist() == [
        *range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x85, 0x2028, 0x2029, 0xFEFF]


def test_whitespace_table_is_str_split() -> None:
    table = token_ids.whitespace_table()
    every = "".join(chr(c) for c in range(0x10000) if table[c])
    assert ("a" + every + "b").split() == ["a", "b"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["zh", "intl", "13a"])
def test_every_bmp_code_point_in_context(name: str) -> None:
    """Every BMP character between letters, digits and a period: pins the CJK table (zh), the P/N/S tables
    (intl) and rule 1's class (13a)."""
    lines = [f"a{c}b 1{c}1 {c}.1 1.{c}" for c in BMP]
    assert_same(lines, name, False)


@pytest.mark.slow
def test_astral_punctuation_symbols_and_numbers() -> None:
    astral = "".join(map(chr, range(0x10000, 0x30000)))
    special = regex.findall(r"[\p{P}\p{S}\p{N}]", astral)[::5] + ["\U0001f600", "\U0001d7ce", "\U00010100",
                                                                  "\U00020000", "\U0010fffd"]
    lines = [t.format(c) for c in special for t in ("a{0}1", "1{0}1", "1{0}", "{0}.", "{0}{0}.{0}")]
    for name, lowercase in CASES:
        assert_same(lines, name, lowercase)


# ------------------------------------------------------------------------------------------------ sacrebleu


@pytest.mark.slow
@pytest.mark.parametrize(("name", "lowercase"), CASES)
@pytest.mark.parametrize("path", _data_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_data_matches_sacrebleu(path, name: str, lowercase: bool) -> None:
    assert_same(_read(path), name, lowercase)


@pytest.mark.parametrize(("name", "lowercase"), CASES)
def test_edge_lines(name: str, lowercase: bool) -> None:
    assert_same(EDGE_LINES, name, lowercase)
    for line in EDGE_LINES:  # alone too: the first and last line of a chunk have no neighbour
        assert_same([line], name, lowercase)
    assert_same([], name, lowercase)
    assert_same(["", "", " "], name, lowercase)


@pytest.mark.parametrize(
    ("names", "alphabet", "max_len"),
    [
        (("13a", "zh"), "a1.,- !\n", 5),  # runs of . and , between digits/letters, '-' after digits, line breaks
        (("13a", "zh"), "1a.,", 6),  # long runs: the parity rule for a run followed by a digit
        (("13a",), ["&lt;", "&amp;", "&gt;", "&quot;", "lt;", "&", "1", ".", "-", "<skipped>", "\n", " "], 3),
        (("13a",), ["<", "skipped>", "<skip", "ped>", "&amp;", "quot;", "&"], 4),  # replacements made by replacing
        (("zh",), "a1.,-\u4e2d \u3000", 5),  # no padding in zh: runs at the line start/end, CJK, strip()
        (("intl",), "a1.-$ \u0663", 5),  # '-' is \\p{P} in intl; U+0663 is an Arabic-Indic digit (\\p{N})
        (("intl",), "1a.-", 6),
        (("intl",), "a\U0001d7ce\U00010100.\U0001f600 ", 5),  # astral digit, punctuation and symbol
        (("char", "none"), "a \u00a0\u3000\U0001f600\t.", 5),
    ],
)
@pytest.mark.slow
def test_exhaustive_small_alphabets(names: tuple[str, ...], alphabet: str | list[str], max_len: int) -> None:
    lines = _all_strings(alphabet, max_len)
    for name in names:
        assert_same(lines, name, False)
        assert_same(lines, name, True)


def test_lowercasing_beyond_ascii() -> None:
    """str.lower of the whole joined text equals lowering each line: final sigma at line ends, dotted I (two
    code points), Kelvin sign, a line break inside a string (pre-tokenized)."""
    lines = ["\u039f\u0394\u039f\u03a3", "\u03a3\u0391", "\u0130stanbul \u212a", "A\u03a3\nB\u03a3", "\u00c4RGER.",
             "ASCII ONLY"]
    for name in NAMES:
        assert_same(lines, name, True)
        assert_same(lines[-1:], name, True)  # the ASCII-only chunk lowered in the kernel


line_strategy = st.lists(
    st.one_of(st.sampled_from(PIECES), st.text(max_size=3), st.characters()), max_size=12
).map("".join)
latin1_strategy = st.lists(
    st.one_of(st.sampled_from([p for p in PIECES if all(ord(c) < 256 for c in p)]),
              st.characters(max_codepoint=255)), max_size=12
).map("".join)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(st.one_of(line_strategy, latin1_strategy), max_size=6))
def test_random_corpora_match_sacrebleu(lines: list[str]) -> None:
    """Random Unicode (astral characters, categories P* and S*, every kind of whitespace and line break, the
    entities, <skipped>, digits around '.', ',' and '-')."""
    for name, lowercase in CASES:
        assert decoded(lines, name, lowercase) == oracle(lines, name, lowercase), (name, lowercase)


# ------------------------------------------------------------------------------------------------ the table


def test_many_distinct_tokens_grow_the_table() -> None:
    """50,000 distinct tokens (the table starts at 1,024 slots): every id is right after the rehashes, and equal
    tokens share one id."""
    words = [f"w{i}" for i in range(50_000)]
    lines = [" ".join(words[i:i + 50]) for i in range(0, 50_000, 50)] * 2
    table = TokenTable.empty()
    ids, offsets = encode_lines(lines, make_options(tokenize="none"), table, insert=True)
    assert len(table) == 50_000
    assert table.decode(ids, offsets) == [line.split() for line in lines]
    assert (ids[: ids.size // 2] == ids[ids.size // 2:]).all()


@pytest.mark.slow
def test_one_long_line_long_and_non_latin1_tokens() -> None:
    """A single line longer than every initial capacity (the kernel stops, the caller grows, it resumes), with
    tokens of 8+ code points and beyond Latin-1 (hashed keys, confirmed by comparing code points)."""
    words = [f"Wort{i}\u00e4\u00df-{i}" if i % 3 else f"\u4e2d{i}\U0001f600{i}." for i in range(30_000)]
    lines = ["short line .", " ".join(words), " ".join(reversed(words)), "1.5 , 2-3"]
    for name in NAMES:
        assert_same(lines, name, name == "none")


def test_ascii_lowercase_mode_of_mteval_profile() -> None:
    opts = make_options(profile="mteval-v13a")
    lines = ["\u00c4RGER \u0130stanbul A.B.", "Caf\u00c9 1.5-2"]
    table = TokenTable.empty()
    ids, offsets = encode_lines(lines, opts, table, insert=True)
    assert table.decode(ids, offsets) == case_and_tokenize(lines, opts)


def test_hypothesis_tokens_unknown_to_the_references_get_minus_one() -> None:
    opts = make_options()
    refs = token_ids.encode_references([["the cat sat .", None], ["a cat", "the dog"]], opts)
    assert refs.lengths.tolist() == [[4, 2], [-1, 2]]
    ids, offsets = token_ids.encode_hypotheses(["the cat, sat", "the bird"], refs, opts)
    words = [refs.vocab.token(t) if t >= 0 else None for t in ids.tolist()]
    assert words == ["the", "cat", None, "sat", "the", None]
    assert offsets.tolist() == [0, 4, 6]
    assert refs.vocab.decode(ids, offsets) == [["the", "cat", "<unk>", "sat"], ["the", "<unk>"]]
    with pytest.raises(TypeError, match="token lists"):
        token_ids.encode_hypotheses(["x"], encode_references([[["x"]]]), opts)


# ------------------------------------------------------------------------------------------------ file bytes

bytes_strategy = st.lists(st.one_of(
    st.binary(max_size=4),
    st.sampled_from([b"\xc2\x80", b"\xdf\xbf", b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xee\x80\x80", b"\xef\xbf\xbf",
                     b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xc0\x80", b"\xe0\x80\x80", b"\xed\xa0\x80",
                     b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xef\xbb\xbf", b"\xe2\x80\xa8", b"\xc2\x85", b"\r",
                     b"\t", b"\x00", b"\x1b", b"a", b" "]),
    st.text(max_size=3).map(lambda t: t.encode("utf-8", "surrogatepass")),
), max_size=10).map(b"".join)


def _irregular(line: bytes) -> bool:
    """What parse_text would report or note in a line of a LF file: bytes that do not decode, a control or
    separator character, a BOM, a carriage return."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return any(c in text for c in "\r\ufeff\u0085\u2028\u2029") or any(ord(c) < 0x20 and c != "\t" for c in text)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(lines=st.lists(bytes_strategy.filter(lambda b: b"\n" not in b), min_size=1, max_size=5))
def test_the_kernel_checks_bytes_as_python_and_read_text_do(lines: list[bytes]) -> None:
    """IRREGULAR exactly when strict UTF-8 decoding fails or read_text would report or note something; the tokens
    of what passes are the tokens of the decoded text."""
    text = token_ids.Text.of_pieces([b"\n".join(lines) + b"\n"], len(lines))
    irregular = any(_irregular(line) for line in lines)
    table = TokenTable.empty()
    opts = make_options()
    if irregular:
        with pytest.raises(token_ids.IrregularText):
            token_ids.encode_text(text, opts, table, insert=True, validate=True)
        return
    encoded = token_ids.encode_text(text, opts, table, insert=True, validate=True)
    assert table.decode(encoded.ids, encoded.offsets) == oracle([x.decode() for x in lines], "13a", False)
    assert encoded.empty.tolist() == [sum(1 for x in lines if not x)]


def test_crlf_streams_and_their_last_line() -> None:
    """In a CRLF stream every LF must follow a CR (the CR is not part of the line), and a last line without LF
    may end in a CR; a LF without CR there, or a CR anywhere else, stops the kernel."""
    opts = make_options()

    def encode(data: bytes, n: int) -> list[list[str]]:
        table = TokenTable.empty()
        text = token_ids.Text.of_pieces([data], n, stream_flags=[token_ids.F_CRLF])
        encoded = token_ids.encode_text(text, opts, table, insert=True, validate=True)
        return table.decode(encoded.ids, encoded.offsets)

    assert encode(b"a b\r\n\r\nc\r", 3) == [["a", "b"], [], ["c"]]
    assert encode(b"a b\r\nc", 2) == [["a", "b"], ["c"]]
    for bad in (b"a\r\nb\nc\r\n", b"a\r\nb\rc\r\n", b"a\r\r\n"):
        with pytest.raises(token_ids.IrregularText):
            encode(bad, bad.count(b"\n") + (0 if bad.endswith(b"\n") else 1))


def test_streams_with_fewer_or_more_lines_stop_the_kernel() -> None:
    opts = make_options()
    for pieces, n in (([b"a\nb\n", b"a\n"], 2), ([b"a\nb\n", b"a\nb\nc\n"], 2), ([b"a\nb"], 3)):
        with pytest.raises(token_ids.IrregularText) as info:
            token_ids.encode_text(token_ids.Text.of_pieces(pieces, n), opts, TokenTable.empty(), True, True)
        assert info.value.lines_differ


# ------------------------------------------------------------------------------------------------ statistics


@pytest.mark.slow
@pytest.mark.parametrize("n_refs", [1, 2])
@pytest.mark.parametrize(("name", "lowercase"), CASES)
def test_statistics_equal_the_token_list_path_on_real_data(wmt21: dict, name: str, lowercase: bool,
                                                           n_refs: int) -> None:
    """Three systems (two MT systems and the human translation; test_api holds every system's statistics on the
    ids path to sacrebleu's, and the tokens of every file are sacrebleu's above), absent references too."""
    opts = make_options(tokenize=name, lowercase=lowercase)
    ref_lines = [wmt21["refs"][r] for r in sorted(wmt21["refs"])[:n_refs]]
    ref_lines = [[None if (i + k) % 7 == 0 and n_refs > 1 else line for i, line in enumerate(s)]
                 for k, s in enumerate(ref_lines)]  # absent references too
    by_tokens = encode_references([[None if x is None else t for x, t in zip(s, case_and_tokenize(
        [x or "" for x in s], opts))] for s in ref_lines])
    by_ids = token_ids.encode_references(ref_lines, opts)
    assert (by_ids.lengths == by_tokens.lengths).all()
    for system in ("Nemo", "Online-W", "ref-A"):
        hyps = wmt21["systems"][system]
        expected = token_statistics(case_and_tokenize(hyps, opts), by_tokens, 6, compiled=False)
        h_ids, h_off = token_ids.encode_hypotheses(hyps, by_ids, opts)
        got = count_encoded(h_ids, h_off, by_ids, 6, compiled=True)
        for field in ("hyp_len", "ref_lens", "matches", "totals"):
            assert np.array_equal(getattr(got, field), getattr(expected, field)), (system, field)


@pytest.mark.slow
def test_scoring_api_takes_the_path_and_equals_sacrebleu(wmt21: dict, sacrebleu_stats) -> None:
    """On the compiled path, PreparedReferences go through token ids: still == sacrebleu."""
    import harness

    ref_names = sorted(wmt21["refs"])[:2]
    refs = [wmt21["refs"][r] for r in ref_names]
    prepared = scoring.PreparedReferences.build(refs, make_options(), chunk=200, compiled=True)  # several chunks
    assert len(prepared.chunks) > 1 and all(isinstance(chunk.vocab, TokenTable) for chunk in prepared.chunks)
    for name in NAMES:
        for lowercase in (False, True):
            # sacrebleu.corpus_bleu(hyps, refs, lowercase=lowercase, tokenize=name), from sacrebleu's statistics
            systems = list(wmt21["systems"].items())[:1]
            oracle = sacrebleu_stats(wmt21["root"], tuple(ref_names), name, lowercase, tuple(s for s, _ in systems))
            for system, hyps in systems:
                ours = harness.corpus_bleu(hyps, refs, lowercase=lowercase, tokenize=name)
                theirs = sacrebleu_score(oracle[system])
                assert abs(ours.score - theirs.score) <= 1e-9
    for hyps in wmt21["systems"].values():
        got = prepared.statistics(hyps)
        expected = token_statistics(case_and_tokenize(hyps, make_options()),
                                    encode_references([case_and_tokenize(s, make_options()) for s in refs]), 4,
                                    compiled=False)
        assert np.array_equal(got.matches, expected.matches) and np.array_equal(got.hyp_len, expected.hyp_len)


@pytest.mark.slow
def test_job_statistics_equal_the_token_list_path(tmp_path) -> None:
    """A job's statistics (two of the demo's MT systems and its human translation x every refset x token key, cut
    to the first 600 segments: three chunks of the compiled path) are the same arrays whether it goes through token
    lists (numpy) or straight through ids (compiled)."""
    from harness.job.inputs import layout_of, load_inputs
    from harness.job.spec import build_spec
    from harness.job.statistics import StatisticsCache, job_statistics
    from support import base_config, make_dataset

    cut = make_dataset(tmp_path / "cut", n=600, systems=("Nemo", "UEdin", "ref-A"), refs=("ref-C", "ref-D"))
    config = base_config(tmp_path, bleu=["sacrebleu", "none", "lowercase", "mteval-v13a", "intl", "zh", "char"],
                         dataset={"root": str(cut), "refsets": "each"}, allowed_roots=[str(tmp_path)])
    spec = build_spec(config)
    inputs = load_inputs(spec, layout_of(spec))
    assert token_ids.usable(make_options(), True) and not token_ids.usable(make_options(), False)
    fast = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path, enabled=False), compiled=True)
    slow = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path, enabled=False), compiled=False)
    assert fast.blocks.keys() == slow.blocks.keys() and len(fast.blocks) == 3 * 3 * 7  # 7 token keys
    for key in fast.blocks:
        for field in ("hyp_len", "ref_lens", "matches", "totals"):
            assert np.array_equal(getattr(fast.blocks[key], field), getattr(slow.blocks[key], field)), (key, field)


def test_many_systems_in_threads_equal_one_by_one(wmt21: dict) -> None:
    """systems_statistics (chunks in threads, every system of a chunk counted against its references) and
    PreparedReferences.statistics_of give, per system, exactly what lines_statistics gives for that system
    alone, on either path."""
    refs = [wmt21["refs"][r] for r in sorted(wmt21["refs"])[:2]]
    opts = make_options()
    outputs = list(wmt21["systems"].values())
    streamed = scoring.systems_statistics(outputs, refs, opts, chunk=50, compiled=True)
    prepared = scoring.PreparedReferences.build(refs, opts, systems=len(outputs), chunk=100,
                                                compiled=True).statistics_of(outputs)
    for hyps, a, b in zip(outputs, streamed, prepared):
        one = scoring.lines_statistics(hyps, refs, opts, compiled=False)
        for f in ("hyp_len", "ref_lens", "matches", "totals"):
            assert np.array_equal(getattr(a, f), getattr(one, f)) and np.array_equal(getattr(b, f), getattr(one, f))
    with pytest.raises(ValueError, match="system 1 has 526 segments but system 0 has 527"):
        scoring.systems_statistics([outputs[0], outputs[1][:-1]], refs, opts)
    with pytest.raises(TypeError, match=r"hypotheses of system 1\[3\] is int"):
        scoring.systems_statistics([outputs[0], [*outputs[1][:3], 7, *outputs[1][4:]]], refs, opts)
    with pytest.raises(ValueError, match="no hypothesis streams"):
        scoring.systems_statistics([], refs, opts)


def test_the_work_size_decides_the_path() -> None:
    """The same references: one small system stays on the Python path; many systems announced, or forcing it,
    take the compiled one; the decision does not depend on what ran before."""
    refs = [" ".join(f"w{i % 97} w{i % 13}" for i in range(j, j + 12)) for j in range(300)]
    small = scoring.PreparedReferences.build([refs], make_options(), systems=1)
    big = scoring.PreparedReferences.build([refs], make_options(), systems=100)
    again = scoring.PreparedReferences.build([refs], make_options(), systems=1)
    forced = scoring.PreparedReferences.build([refs], make_options(), systems=1, compiled=True)
    paths = [isinstance(p.chunks[0].vocab, TokenTable) for p in (small, big, again, forced)]
    assert paths == [False, True, False, True]
