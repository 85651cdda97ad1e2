"""chrF and chrF++ against sacrebleu's ``CHRF`` as the oracle: the formula on random statistics (float64 and the
float32 of its bootstrap), corpus and sentence scores on the shipped WMT21 data and on edge cases, and the paired
tests."""

from __future__ import annotations

import numpy as np
import pytest
from sacrebleu.metrics import CHRF

from harness import corpus_chrf, sentence_chrf
from harness.core.chrf import ChrfOptions, ChrfScoreFn, ChrfStats, chrf_formula
from harness.core.significance import paired_test
from harness.errors import ConfigError
from harness.text.chrf_counting import chrf_statistics, words
from tests.support import RUEN, read_lines

OPTION_SETS = [
    {},
    {"word_order": 2},
    {"lowercase": True, "word_order": 1},
    {"whitespace": True, "beta": 1},
    {"eps_smoothing": True},
    {"eps_smoothing": True, "word_order": 2, "char_order": 4},
]


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-12 * max(1.0, abs(b))


def random_stats(rng: np.random.Generator, rows: int, order: int) -> np.ndarray:
    """Statistics with every path of the formula: empty hypothesis or reference sides, zero matches."""
    ref = rng.integers(0, 6, (rows, order)) * (rng.random((rows, order)) > 0.2)
    hyp = rng.integers(0, 6, (rows, order)) * (rng.random((rows, order)) > 0.2)
    match = np.minimum(np.minimum(hyp, ref), rng.integers(0, 6, (rows, order)))
    hyp = np.where(ref > 0, hyp, 0)
    return np.stack([hyp, ref, match], axis=2).reshape(rows, 3 * order)


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_formula_equals_sacrebleu_in_float64_and_float32(options):
    chrf, opts = CHRF(**options), ChrfOptions(**options)
    rng = np.random.default_rng(7)
    stats = random_stats(rng, 2000, opts.order)
    ours = chrf_formula(stats, opts)
    ours32 = chrf_formula(stats, opts, "float32")
    for row, mine, mine32 in zip(stats, ours, ours32):
        theirs = chrf._compute_f_score(row.tolist())
        assert close(float(mine), theirs)
        # sacrebleu's bootstrap sums float32 statistics, and its formula then runs on numpy float32 scalars.
        assert float(mine32) == pytest.approx(chrf._compute_f_score(row.astype(np.float32)), rel=1e-12, abs=0)


@pytest.mark.parametrize("options", [OPTION_SETS[0]] + [pytest.param(o, marks=pytest.mark.slow)
                                                       for o in OPTION_SETS[1:4]],
                         ids=lambda o: ",".join(o) or "default")
def test_corpus_and_sentence_chrf_equal_sacrebleu_on_real_data(wmt21, options):
    chrf = CHRF(**options)
    refs = [wmt21["refs"][name] for name in sorted(wmt21["refs"])]
    for name, hyps in sorted(wmt21["systems"].items())[:2]:
        ours = corpus_chrf(hyps, refs, **options)
        theirs = chrf.corpus_score(hyps, refs)
        assert close(ours.score, theirs.score), name
        assert ours.name == theirs.name
        assert ours.format(signature=False) == theirs.format(signature=False)
    hyps = wmt21["systems"][sorted(wmt21["systems"])[0]]
    for i in range(0, len(hyps), 25):
        seg_refs = [r[i] for r in refs]
        assert close(sentence_chrf(hyps[i], seg_refs, **options).score, chrf.sentence_score(hyps[i], seg_refs).score)


@pytest.mark.slow
def test_statistics_equal_sacrebleus_and_keep_the_best_reference(wmt21):
    refs = [wmt21["refs"][name] for name in sorted(wmt21["refs"])]
    hyps = wmt21["systems"][sorted(wmt21["systems"])[1]]
    for options in ({}, {"word_order": 2}):
        chrf, opts = CHRF(**options), ChrfOptions(**options)
        stats = chrf_statistics([hyps], refs, opts)[0].stats
        theirs = chrf._extract_corpus_statistics(hyps, refs)
        assert stats.tolist() == [list(map(int, row)) for row in theirs]


EDGE_CASES = {
    "empty lines": (["", "a", ""], [["", "a", "b"]]),
    "empty hypothesis everywhere": (["", ""], [["the cat", "a dog"]]),
    "no match": (["xyz qqq"], [["abc def"]]),
    "shorter than the order": (["ab", "a"], [["ab", "a"]]),
    "punctuation words": (["(hi) there, you. !", "-- a-b ."], [["(hi) there , you.", "-- a-b."]]),
    "unicode whitespace": (["a\u00a0b\u3000c  d\te", "Ünïcödé  Straße"], [["a b c d e", "ünïcödé strasse"]]),
    "several references": (["the cat sat", "a dog ran off"], [["the cat sat", "a cat"], ["a cat sat", "a dog ran"],
                                                              ["cats", "dog ran off a"]]),
}


@pytest.mark.parametrize("case", EDGE_CASES, ids=str)
@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: ",".join(o) or "default")
def test_edge_cases_equal_sacrebleu(case, options):
    hyps, refs = EDGE_CASES[case]
    chrf = CHRF(**options)
    assert close(corpus_chrf(hyps, refs, **options).score, chrf.corpus_score(hyps, refs).score)
    for i, hyp in enumerate(hyps):
        seg_refs = [r[i] for r in refs]
        assert close(sentence_chrf(hyp, seg_refs, **options).score, chrf.sentence_score(hyp, seg_refs).score)


@pytest.mark.parametrize("options", [{}] + [pytest.param(o, marks=pytest.mark.slow) for o in
                                          ({"word_order": 2}, {"lowercase": True, "word_order": 2}, {"whitespace": True})],
                         ids=lambda o: ",".join(o) or "default")
def test_compiled_and_numpy_counts_equal_sacrebleus(wmt21, options):
    """The two counting paths of chrf_counting: the compiled count of clipped matches (code points and word ids,
    one reference at a time) and numpy's sorted keys. Both must give sacrebleu's statistics, integer for integer,
    on the edge cases, on text none of the bundled data has (CJK, emoji beyond the BMP, combining marks, a line of
    one long word) and on real data (100 segments of two systems against both references, one reference absent
    on some lines)."""
    from harness.text import chrf_counting, kernels

    if kernels.loaded() is None:
        pytest.skip("the compiled kernels are not built here")
    chrf, opts = CHRF(**options), ChrfOptions(**options)
    refs = [wmt21["refs"][name][:100] for name in sorted(wmt21["refs"])]
    refs[1] = [None if i % 7 == 3 else line for i, line in enumerate(refs[1])]
    cases = [*EDGE_CASES.values(),
             (["日本語の文です。", "😀 emoji 🎉🎉", "e\u0301te\u0301", "x" * 300], [["日本語の文だ。", "emoji 🎉", "été", "x" * 299]]),
             *[(wmt21["systems"][name][:100], refs) for name in sorted(wmt21["systems"])[:2]]]
    for hyps, case_refs in cases:
        compiled = chrf_counting.ChrfReferences.build(case_refs, opts, compiled=True).statistics(hyps).stats
        with_numpy = chrf_counting.ChrfReferences.build(case_refs, opts, compiled=False).statistics(hyps).stats
        assert np.array_equal(compiled, with_numpy)
        theirs = chrf._extract_corpus_statistics(hyps, case_refs)
        assert compiled.tolist() == [list(map(int, row)) for row in theirs]


def test_absent_references_count_like_sacrebleus():
    hyps = ["the cat sat", "a dog", "birds sing"]
    refs = [["the cat sat", None, "birds sang"], ["a cat sat", "a dog", None]]
    ours = corpus_chrf(hyps, refs, word_order=2)
    assert close(ours.score, CHRF(word_order=2).corpus_score(hyps, refs).score)
    assert "nrefs:var" in ours.signature


def test_words_split_punctuation_as_sacrebleu():
    chrf = CHRF(word_order=2)
    for line in ["(hi) there, you.", "a . b", "!x x! !! ...", "", "  "]:
        assert words(line) == chrf._remove_punctuation(line)


def test_signature_fields_follow_sacrebleus():
    ours = corpus_chrf(["a b"], [["a b"]], word_order=2, lowercase=True)
    theirs = CHRF(word_order=2, lowercase=True)
    theirs.corpus_score(["a b"], [["a b"]])
    sacre = dict(f.split(":") for f in str(theirs.get_signature()).split("|"))
    mine = dict(f.split(":") for f in ours.signature.split("|"))
    assert {k: mine[k] for k in sacre if k != "version"} == {k: v for k, v in sacre.items() if k != "version"}
    assert ours.name == "chrF2++"


def test_bad_options_are_one_clear_error():
    with pytest.raises(ConfigError, match="char_order"):
        corpus_chrf(["a"], [["a"]], char_order=0)
    with pytest.raises(ConfigError, match="word_ordr"):
        corpus_chrf(["a"], [["a"]], word_ordr=2)


@pytest.mark.parametrize("method", ["bs", "ar"])
@pytest.mark.parametrize("options", [{}, {"word_order": 2}], ids=["chrF", "chrF++"])
def test_paired_tests_equal_sacrebleus(method, options, monkeypatch):
    """p-values equal sacrebleu's ``PairedTest`` for chrF (its bootstrap in float32), on real ru-en outputs."""
    from sacrebleu.significance import PairedTest

    monkeypatch.setenv("SACREBLEU_SEED", "12345")
    refs = [read_lines(p)[:300] for p in sorted((RUEN / "refs").glob("*.txt"))][:1]
    names = sorted(p.stem for p in (RUEN / "systems").glob("*.txt"))[:3]
    systems = {n_: read_lines(RUEN / "systems" / f"{n_}.txt")[:300] for n_ in names}
    n = 200 if method == "bs" else 300
    chrf = CHRF(references=refs, **options)
    _signatures, results = PairedTest(list(systems.items()), {"chrF": chrf}, None, test_type=method, n_samples=n)()
    opts = ChrfOptions(**options)
    sacre = results[opts.name]  # sacrebleu keys its results by the score's name (chrF2, chrF2++)
    stats = chrf_statistics([systems[n_] for n_ in names], refs, opts)
    ours = paired_test(list(zip(names, stats)), ChrfScoreFn(opts), method, n_samples=n, seed=12345)
    assert len(ours) == len(sacre) == 3
    for mine, theirs in zip(ours, sacre):
        assert close(mine.score, theirs.score)
        assert mine.p_value == theirs.p_value, mine.name
        if method == "bs":
            assert close(mine.mean, theirs.mean) and close(mine.ci, theirs.ci)


def test_chrf_stats_concat_and_take():
    stats = ChrfStats(np.arange(36).reshape(2, 18), 2, False)
    both = ChrfStats.concat([stats.take(slice(0, 1)), stats.take(slice(1, 2))])
    assert both.stats.tolist() == stats.stats.tolist() and both.n_refs == 2


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_the_best_reference_is_sacrebleus_choice(options):
    """Per segment the statistics of the present reference with the best F-score under sacrebleu's own
    ``_compute_f_score``, the first of equals (many here: small random counts, a reference repeated), zeros where
    no reference is present; the oracle is sacrebleu's function, called segment by segment."""
    from harness.text.chrf_counting import ChrfReferences

    chrf, opts = CHRF(**options), ChrfOptions(**options)
    rng = np.random.default_rng(11)
    n = 3000
    per_ref = [random_stats(rng, n, opts.order) for _ in range(3)]
    per_ref.append(per_ref[1].copy())  # an exact tie with reference 1 on every segment
    present = rng.random((4, n)) > 0.25
    present[:, :5] = False  # segments without any reference
    refs = ChrfReferences(opts, n, present, np.zeros(0, np.int64), {}, ([],), ())
    got = refs.select(per_ref).stats
    for i in range(n):
        best, chosen = -1.0, [0] * (3 * opts.order)
        for k in range(4):
            if present[k, i]:
                f = chrf._compute_f_score(per_ref[k][i].tolist())
                if f > best:
                    best, chosen = f, per_ref[k][i].tolist()
        assert got[i].tolist() == chosen, i


def test_chrf_read_from_the_counts_of_chrf_plus_plus_is_chrf():
    """The job counts chrF and chrF++ together (the same character n-grams): chrF's statistics read from chrF++'s
    counts, with chrF's own choice of the best reference, equal chrF counted alone; a variant whose characters
    differ cannot be read from them."""
    from harness.text.chrf_counting import ChrfReferences

    refs = [["the cat sat on the mat", "a dog ran", "x"], ["a cat sat on a mat", "the dog ran off", "y z"]]
    hyps = ["the cat sat on a mat", "dog ran", "x y"]
    plus = ChrfReferences.build(refs, ChrfOptions(word_order=2))
    per_ref = plus.per_reference(hyps)
    for opts in (ChrfOptions(), ChrfOptions(word_order=1, beta=1)):
        alone = ChrfReferences.build(refs, opts).statistics(hyps)
        assert plus.select(per_ref, None, opts).stats.tolist() == alone.stats.tolist()
    with pytest.raises(ValueError, match="cannot be read"):
        plus.select(per_ref, None, ChrfOptions(lowercase=True))
