"""The compiled text-to-ids path (harness.text.token_ids) must give exactly sacrebleu's tokens, hence statistics.

Tokens are decoded back from the ids through the vocabulary and compared with sacrebleu's own
``_preprocess_segment(line).split()``, on the real data, exhaustively over small alphabets of the characters
13a's rules look at, on random Unicode corpora (Latin-1 ones take the 1-byte code-point path, the others the
4-byte one), and through the statistics: arrays identical to the token-list path's, scores == sacrebleu.
"""

from __future__ import annotations

import numpy as np
import pytest
import sacrebleu
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizer_cases import EDGE_LINES, PIECES, _all_strings, _data_files, _read, oracle

from harness.core.options import make_options
from harness.text import pipeline as scoring
from harness.text import token_ids
from harness.text.counting import count_encoded, count_statistics, encode_references
from harness.text.tokenizers import case_and_tokenize
from harness.text.token_ids import TokenTable, encode_lines

CASES = [("13a", False), ("13a", True), ("none", False), ("none", True)]


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


def test_whitespace_table_is_str_split() -> None:
    """The kernel splits on table[c] for BMP code points and never beyond: that is str.isspace/str.split."""
    table = token_ids.whitespace_table()
    assert [c for c in range(0x10000) if table[c]] == [c for c in range(0x10000) if chr(c).isspace()]
    assert not any(chr(c).isspace() for c in range(0x10000, 0x110000))
    every = "".join(chr(c) for c in range(0x10000) if table[c])
    assert ("a" + every + "b").split() == ["a", "b"]


@pytest.mark.parametrize(("name", "lowercase"), CASES)
@pytest.mark.parametrize("path", _data_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_data_matches_sacrebleu(path, name: str, lowercase: bool) -> None:
    assert_same(_read(path), name, lowercase)


@pytest.mark.parametrize(("name", "lowercase"), CASES)
def test_edge_lines(name: str, lowercase: bool) -> None:
    assert_same(EDGE_LINES, name, lowercase)
    assert_same(EDGE_LINES + ["\u4e2d\U0001f600"], name, lowercase)  # the same through the 4-byte path
    assert_same([], name, lowercase)
    assert_same([""], name, lowercase)


@pytest.mark.parametrize(
    ("alphabet", "max_len"),
    [("a1.,- !\n", 5), ("1a.,", 6), ("1.,-\t\u2028", 5),
     (["&lt;", "&amp;", "&gt;", "&quot;", "lt;", "&", "1", ".", "-", "<skipped>", "\n", " "], 3)],
)
def test_exhaustive_small_alphabets(alphabet: str | list[str], max_len: int) -> None:
    lines = _all_strings(alphabet, max_len)
    assert_same(lines, "13a", False)
    assert_same(lines, "13a", True)


def test_every_ascii_and_latin1_pair_and_padding_class() -> None:
    chars = [chr(c) for c in range(0x100)]
    lines = [a + b for a in chars for b in "a1.,-&;<>/ \n"] + [f"1{a}.{a}1" for a in chars] + [f"{a}.-1{a}-" for a in chars]
    assert_same(lines, "13a", False)
    assert_same(lines, "none", False)
    assert_same(lines + ["\u20ac"], "13a", True)


line_strategy = st.lists(
    st.one_of(st.sampled_from(PIECES), st.text(max_size=3), st.characters()), max_size=12
).map("".join)
latin1_strategy = st.lists(
    st.one_of(st.sampled_from([p for p in PIECES if all(ord(c) < 256 for c in p)]),
              st.characters(max_codepoint=255)), max_size=12
).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(st.one_of(line_strategy, latin1_strategy), max_size=6))
def test_random_corpora_match_sacrebleu(lines: list[str]) -> None:
    for name, lowercase in CASES:
        assert decoded(lines, name, lowercase) == oracle(lines, name, lowercase), (name, lowercase)


def test_many_distinct_tokens_grow_the_table() -> None:
    """50,000 distinct tokens (the table starts at 1,024 slots and the character store at 4,096): every id is
    right after the rehashes, and equal tokens share one id."""
    words = [f"w{i}" for i in range(50_000)]
    lines = [" ".join(words[i:i + 50]) for i in range(0, 50_000, 50)] * 2
    table = TokenTable.empty()
    ids, offsets = encode_lines(lines, make_options(tokenize="none"), table, insert=True)
    assert len(table) == 50_000
    assert table.decode(ids, offsets) == [line.split() for line in lines]
    assert (ids[: ids.size // 2] == ids[ids.size // 2:]).all()


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
    with pytest.raises(TypeError, match="token lists"):
        token_ids.encode_hypotheses(["x"], encode_references([[["x"]]]), opts)


@pytest.mark.parametrize("n_refs", [1, 2])
@pytest.mark.parametrize(("name", "lowercase"), CASES)
def test_statistics_equal_the_token_list_path_on_real_data(wmt21: dict, name: str, lowercase: bool,
                                                           n_refs: int) -> None:
    opts = make_options(tokenize=name, lowercase=lowercase)
    ref_lines = [wmt21["refs"][r] for r in sorted(wmt21["refs"])[:n_refs]]
    ref_lines = [[None if (i + k) % 7 == 0 and n_refs > 1 else line for i, line in enumerate(s)]
                 for k, s in enumerate(ref_lines)]  # absent references too
    by_tokens = encode_references([[None if x is None else t for x, t in zip(s, case_and_tokenize(
        [x or "" for x in s], opts))] for s in ref_lines])
    by_ids = token_ids.encode_references(ref_lines, opts)
    assert (by_ids.lengths == by_tokens.lengths).all()
    for system, hyps in wmt21["systems"].items():
        expected = count_statistics(case_and_tokenize(hyps, opts), by_tokens, 6)
        h_ids, h_off = token_ids.encode_hypotheses(hyps, by_ids, opts)
        got = count_encoded(h_ids, h_off, by_ids, 6, compiled=True)
        for field in ("hyp_len", "ref_lens", "matches", "totals"):
            assert np.array_equal(getattr(got, field), getattr(expected, field)), (system, field)


def test_scoring_api_takes_the_path_and_equals_sacrebleu(wmt21: dict) -> None:
    """On the compiled path, PreparedReferences go through token ids: still == sacrebleu."""
    import harness

    refs = [wmt21["refs"][r] for r in sorted(wmt21["refs"])[:2]]
    prepared = scoring.PreparedReferences.build(refs, make_options(), chunk=200, compiled=True)  # several chunks
    assert all(isinstance(chunk.vocab, TokenTable) for chunk in prepared.chunks)
    for lowercase in (False, True):
        for hyps in list(wmt21["systems"].values())[:3]:
            ours = harness.corpus_bleu(hyps, refs, lowercase=lowercase, tokenize="13a")
            theirs = sacrebleu.corpus_bleu(hyps, refs, lowercase=lowercase, tokenize="13a")
            assert abs(ours.score - theirs.score) <= 1e-9
    for hyps in wmt21["systems"].values():
        got = prepared.statistics(hyps)
        expected = count_statistics(case_and_tokenize(hyps, make_options()),
                                    encode_references([case_and_tokenize(s, make_options())
                                                       for s in refs]), 4)
        assert np.array_equal(got.matches, expected.matches) and np.array_equal(got.hyp_len, expected.hyp_len)


def test_one_long_line_long_and_non_latin1_tokens() -> None:
    """A single line longer than every initial capacity (the kernel stops, the caller grows, it resumes), with
    tokens of 8+ code points and beyond Latin-1 (hashed keys, confirmed by comparing code points)."""
    words = [f"Wort{i}\u00e4\u00df-{i}" if i % 3 else f"\u4e2d{i}\U0001f600{i}." for i in range(30_000)]
    lines = ["short line .", " ".join(words), " ".join(reversed(words)), "1.5 , 2-3"]
    assert_same(lines, "13a", False)
    assert_same(lines, "none", True)


def test_job_statistics_equal_the_token_list_path(tmp_path) -> None:
    """A job's statistics (every system x refset x token key of the demo) are the same arrays whether it goes
    through token lists (numpy) or straight through ids (compiled)."""
    from harness.job.inputs import layout_of, load_inputs
    from harness.job.spec import build_spec, bundled_data
    from harness.job.statistics import StatisticsCache, compute_statistics

    from support import base_config

    config = base_config(tmp_path, bleu=["sacrebleu", "none", "lowercase", "mteval-v13a", "intl"],
                         dataset={"root": bundled_data("wmt21_news_ende"), "refsets": "each"})
    spec = build_spec(config)
    inputs = load_inputs(spec, layout_of(spec))
    assert token_ids.usable(make_options(), True) and not token_ids.usable(make_options(), False)
    fast = compute_statistics(inputs, spec.variants, StatisticsCache(tmp_path, enabled=False), compiled=True)
    slow = compute_statistics(inputs, spec.variants, StatisticsCache(tmp_path, enabled=False), compiled=False)
    assert fast.blocks.keys() == slow.blocks.keys() and len(fast.blocks) >= 9 * 3 * 4
    for key in fast.blocks:
        for field in ("hyp_len", "ref_lens", "matches", "totals"):
            assert np.array_equal(getattr(fast.blocks[key], field), getattr(slow.blocks[key], field)), (key, field)


def test_many_systems_in_threads_equal_one_by_one(wmt21: dict) -> None:
    """systems_statistics (streaming, chunk by chunk, systems in threads) and PreparedReferences.statistics_of
    give, per system, exactly what segment_statistics gives for that system alone."""
    refs = [wmt21["refs"][r] for r in sorted(wmt21["refs"])[:2]]
    opts = make_options()
    outputs = list(wmt21["systems"].values())
    streamed = scoring.systems_statistics(outputs, refs, opts, chunk=200)
    prepared = scoring.PreparedReferences.build(refs, opts, systems=len(outputs)).statistics_of(outputs)
    for hyps, a, b in zip(outputs, streamed, prepared):
        one = scoring.segment_statistics(hyps, refs, opts)
        for f in ("hyp_len", "ref_lens", "matches", "totals"):
            assert np.array_equal(getattr(a, f), getattr(one, f)) and np.array_equal(getattr(b, f), getattr(one, f))
    with pytest.raises(ValueError, match="system 1 has 526 segments but system 0 has 527"):
        scoring.systems_statistics([outputs[0], outputs[1][:-1]], refs, opts)
    with pytest.raises(TypeError, match=r"hypotheses of system 1\[3\] is int"):
        scoring.systems_statistics([outputs[0], [*outputs[1][:3], 7, *outputs[1][4:]]], refs, opts)
    with pytest.raises(ValueError, match="no hypothesis streams"):
        scoring.systems_statistics([], refs, opts)


def test_job_size_decides_on_the_compiled_path() -> None:
    """In a fresh process: one small system keeps numba unimported (fast start-up); the same references with
    many systems announced take the compiled path (text to ids); forced either way by argument."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from harness.core.options import make_options\n"
        "from harness.text.pipeline import PreparedReferences\n"
        "from harness.text.token_ids import TokenTable\n"
        "refs = [' '.join(f'w{i % 97} w{i % 13}' for i in range(j, j + 12)) for j in range(3000)]\n"
        "small = PreparedReferences.build([refs], make_options(), systems=1)\n"
        "print('numba' in sys.modules, isinstance(small.chunks[0].vocab, TokenTable))\n"
        "big = PreparedReferences.build([refs], make_options(), systems=50)\n"
        "print('numba' in sys.modules, isinstance(big.chunks[0].vocab, TokenTable))\n"
        "again = PreparedReferences.build([refs], make_options(), systems=1)\n"
        "forced = PreparedReferences.build([refs], make_options(), systems=1, compiled=True)\n"
        "print(isinstance(again.chunks[0].vocab, TokenTable), isinstance(forced.chunks[0].vocab, TokenTable))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "True", "True", "False", "True"]
