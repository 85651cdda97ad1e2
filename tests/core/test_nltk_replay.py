"""``harness.core.nltk_replay`` against its oracle, nltk's own ``corpus_bleu``/``sentence_bleu`` (|diff| <= 1e-9).

The statistics come from a small Counter-based helper below, not from the harness's counting, so these tests check the
NLTK arithmetic alone. nltk's smoothing function is wrapped to record the precisions it hands to ``math.log``.
"""

from __future__ import annotations

import random
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.core.nltk_replay import (
    METHOD_NUMBERS as NLTK_METHODS,
)
from harness.core.nltk_replay import (
    NltkResult,
    nltk_bleu,
    nltk_orders_needed,
    nltk_sentence_bleu,
)
from support import DEMO

TOL = 1e-9
MAX_ORDER = 6  # covers 6 weights and method 5/7's order-5 look-up
WEIGHTS = [(0.25, 0.25, 0.25, 0.25), (0.5, 0.5), (1 / 3, 1 / 3, 1 / 3), (0.1, 0.2, 0.3, 0.4), (1 / 6,) * 6]
# What nltk raises where nltk_compat raises ValueError (method6 on short weights / zero trigram precision, ...).
NLTK_ERRORS = (AssertionError, IndexError, ZeroDivisionError, KeyError, ValueError)


#: ``nltk.translate.bleu_score``, imported when the first test of this file runs (importing nltk pulls in
#: scikit-learn: about a second that only the worker running this file should pay, not every worker collecting it).
bleu_score = None


@pytest.fixture(autouse=True, scope="module")
def _import_nltk():
    global bleu_score
    bleu_score = pytest.importorskip("nltk.translate.bleu_score")


# --------------------------------------------------------------------------------------------------------------
# Helpers: statistics from token lists, and the nltk oracle
# --------------------------------------------------------------------------------------------------------------


def ngram_counts(tokens: list[str], n: int) -> Counter:
    return Counter(zip(*(tokens[i:] for i in range(n))))


def max_ref_counts(refs: list[list[str]], n: int) -> Counter:
    out: Counter = Counter()
    for ref in refs:
        out |= ngram_counts(ref, n)  # Counter union = element-wise max
    return out


def make_stats(hyps, refs_per_seg, max_order=MAX_ORDER, ref_max=None):
    """(hyp_len, ref_lens, matches, totals) as harness.stats defines them; refs_per_seg[i] = references of seg i.

    ``ref_max[i][j]`` may hold precomputed ``max_ref_counts(refs_per_seg[i], j + 1)``."""
    n = len(hyps)
    n_refs = max(1, max(len(r) for r in refs_per_seg)) if n else 1
    hyp_len = np.array([len(h) for h in hyps], dtype=np.int64)
    ref_lens = np.full((n, n_refs), -1, dtype=np.int64)
    matches = np.zeros((n, max_order), dtype=np.int64)
    totals = np.zeros((n, max_order), dtype=np.int64)
    for i, (hyp, refs) in enumerate(zip(hyps, refs_per_seg)):
        for k, ref in enumerate(refs):
            ref_lens[i, k] = len(ref)
        for j in range(max_order):
            maxref = ref_max[i][j] if ref_max is not None else max_ref_counts(refs, j + 1)
            matches[i, j] = sum(min(c, maxref[g]) for g, c in ngram_counts(hyp, j + 1).items())
            totals[i, j] = max(0, len(hyp) - j)
    return hyp_len, ref_lens, matches, totals


def nltk_oracle(list_of_refs, hyps, weights, method, *, epsilon=0.1, alpha=5, k=5, auto_reweigh=False,
                sentence=False):
    """(score, smoothed precisions or None) from nltk, or (exception, None) if nltk raises."""
    smooth = getattr(bleu_score.SmoothingFunction(epsilon, alpha, k), f"method{method}")
    seen: list[list[float]] = []

    def recording(p_n, *args, **kwargs):
        out = smooth(p_n, *args, **kwargs)
        seen.append([float(p) for p in out])
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # method0's "contains 0 counts of n-gram overlaps"
        try:
            if sentence:
                score = bleu_score.sentence_bleu(list_of_refs[0], hyps[0], weights, recording, auto_reweigh)
            else:
                score = bleu_score.corpus_bleu(list_of_refs, hyps, weights, recording, auto_reweigh)
        except NLTK_ERRORS as exc:
            return exc, None
    return score, (seen[0] if seen else None)


def check(stats, list_of_refs, hyps, weights, method, *, sentence=False, **kw):
    """Compare nltk_compat with nltk on one configuration."""
    expected, precisions = nltk_oracle(list_of_refs, hyps, weights, method, sentence=sentence, **kw)
    hyp_len, ref_lens, matches, totals = stats

    def call() -> NltkResult:
        if sentence:
            return nltk_sentence_bleu(int(hyp_len[0]), ref_lens[0], matches[0], totals[0], weights=weights,
                                      method=method, **kw)
        return nltk_bleu(hyp_len, ref_lens, matches, totals, weights=weights, method=method, **kw)

    if isinstance(expected, Exception):
        with pytest.raises(ValueError):
            call()
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nltk_compat must not warn
        got = call()
    ctx = f"method={method} weights={weights} kw={kw} sentence={sentence}"
    assert abs(got.score - expected) <= TOL, f"{ctx}: score {got.score!r} != nltk {expected!r}"
    if precisions is not None:
        assert len(got.precisions) == len(precisions), ctx
        for a, b in zip(got.precisions, precisions):
            assert abs(a - b) <= TOL, f"{ctx}: precisions {got.precisions} != nltk {precisions}"
    else:  # nltk returned before smoothing: corpus unigram numerator 0
        assert expected == 0 and got.score == 0.0, ctx
    assert got.hyp_len == sum(len(h) for h in hyps), ctx
    if len(hyps) < 100:  # the real-data test checks lengths once per system instead
        check_lengths(got, list_of_refs, hyps)
    return got


def check_lengths(got, list_of_refs, hyps):
    ref_len = sum(bleu_score.closest_ref_length(refs, len(h)) for refs, h in zip(list_of_refs, hyps))
    assert got.ref_len == ref_len
    assert got.bp == pytest.approx(bleu_score.brevity_penalty(ref_len, got.hyp_len), rel=1e-12, abs=0)


def check_all(hyps, refs_per_seg, weights_list=WEIGHTS, sentence=True, **kw):
    stats = make_stats(hyps, refs_per_seg)
    for weights in weights_list:
        for method in NLTK_METHODS:
            check(stats, refs_per_seg, hyps, weights, method, **kw)
            if sentence:
                for i in range(len(hyps)):
                    one = tuple(a[i:i + 1] for a in stats)
                    check(one, refs_per_seg[i:i + 1], hyps[i:i + 1], weights, method, sentence=True, **kw)


# --------------------------------------------------------------------------------------------------------------
# Real data: WMT21 news en-de, 9 systems x {1, 2} references x 8 methods x 5 weight sets
# --------------------------------------------------------------------------------------------------------------


def _read(path: Path) -> list[list[str]]:
    with open(path, encoding="utf-8", newline="\n") as f:
        return [line.split() for line in f.read().split("\n")[:-1]]


@pytest.fixture(scope="module")
def wmt():
    ref_c, ref_d = _read(DEMO / "refs" / "ref-C.txt"), _read(DEMO / "refs" / "ref-D.txt")  # the shipped demo
    refsets = {1: [[c] for c in ref_c], 2: [[c, d] for c, d in zip(ref_c, ref_d)]}
    ref_max = {n: [[max_ref_counts(refs, j + 1) for j in range(MAX_ORDER)] for refs in lor]
               for n, lor in refsets.items()}
    systems = {p.stem: _read(p) for p in sorted((DEMO / "systems").glob("*.txt"))}
    assert systems and all(len(h) == len(ref_c) for h in systems.values())
    return refsets, ref_max, systems


@pytest.fixture(scope="module")
def memoized_nltk():
    """Memoize nltk's pure ``modified_precision`` by argument identity, so the 40 configurations per system do
    not recount the same n-grams 40 times (the oracle's arithmetic is untouched). Values keep the arguments
    alive, so ids cannot be reused."""
    original = bleu_score.modified_precision
    cache: dict = {}

    def cached(references, hypothesis, n):
        key = (id(references), id(hypothesis), n)
        try:
            return cache[key][2]
        except KeyError:
            value = cache[key] = (references, hypothesis, original(references, hypothesis, n))
            return value[2]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bleu_score, "modified_precision", cached)
        yield


@pytest.mark.slow
@pytest.mark.parametrize("n_refs", [1, 2])
def test_real_data_corpus_and_sentence(wmt, memoized_nltk, n_refs):
    """Corpus level: every system x weights x method. Sentence level: 50 sampled segments per system, each with
    every method and one of the weight sets (cycling, so each weight set sees 10 segments per system)."""
    refsets, ref_max, systems = wmt
    list_of_refs = refsets[n_refs]
    for name, hyps in systems.items():
        stats = make_stats(hyps, list_of_refs, ref_max=ref_max[n_refs])
        for weights in WEIGHTS:
            for method in NLTK_METHODS:
                got = check(stats, list_of_refs, hyps, weights, method)
                if got is not None and method == 0 and weights == WEIGHTS[0]:
                    check_lengths(got, list_of_refs, hyps)
                # nltk raises only for method6 with fewer than 3 weights (IndexError at `assert p_n[2]`).
                assert (got is None) == (method == 6 and len(weights) < 3), (name, weights, method)
                assert got is None or got.score > 0, (name, weights, method)
        sample = random.Random(f"{name}/{n_refs}").sample(range(len(hyps)), 50)
        for n, i in enumerate(sample):
            one = tuple(a[i:i + 1] for a in stats)
            for method in NLTK_METHODS:
                check(one, list_of_refs[i:i + 1], hyps[i:i + 1], WEIGHTS[n % len(WEIGHTS)], method, sentence=True)


# --------------------------------------------------------------------------------------------------------------
# Edge cases
# --------------------------------------------------------------------------------------------------------------

REF1 = "the cat sat on the mat today".split()
REF2 = "a cat was sitting on the mat".split()
HYP_GOOD = "the cat sat on a mat today".split()


def test_empty_hypothesis_in_the_middle():
    check_all([HYP_GOOD, [], "the cat".split()], [[REF1], [REF1, REF2], [REF2]])


def test_empty_hypothesis_as_last_segment():
    # Methods 4-7 look at the last segment: here its length 0, its 5-gram precision 0/1 and its n-gram count 0.
    check_all([HYP_GOOD, "cat sat on the mat".split(), []], [[REF1], [REF2], [REF1]])


def test_empty_reference():
    check_all([HYP_GOOD, "the mat".split(), []], [[REF1, []], [[]], [[], REF2]])


def test_hypotheses_shorter_than_four_tokens():
    check_all([["the"], "the cat".split(), "cat sat on".split()], [[REF1], [REF1, REF2], [REF2]])
    check_all(["the cat sat".split()], [[REF1]])


def test_no_matches_at_all():
    hyps, refs = ["x y z w v".split(), ["q"]], [[REF1], [REF2]]
    check_all(hyps, refs)
    res = nltk_bleu(*make_stats(hyps, refs), method=6)  # early return beats method6's assertion, as in nltk
    assert res.score == 0.0 and res.precisions == [0.0] * 4


@pytest.mark.parametrize("hyps,refs", [
    ([["the"]], [[["the"]]]),
    ([["the"]], [[REF1]]),
    ([["cat", "the"]], [[REF1]]),
    ([["the"], ["cat", "sat"]], [[REF1], [REF2]]),
    ([["the", "cat", "sat"]], [[REF1, ["the", "cat", "sat"]]]),
])
def test_tiny_corpora_with_auto_reweigh(hyps, refs):
    for auto in (False, True):
        check_all(hyps, refs, weights_list=WEIGHTS + [[0.25] * 4, (1.0,)], auto_reweigh=auto)
    res = nltk_bleu(*make_stats([["the"]], [[["the"]]]), auto_reweigh=True)
    assert res.score == 1.0 and res.weights == (1.0,)
    # nltk compares with a tuple literal: a list of 0.25s is never re-weighted.
    assert nltk_bleu(*make_stats([["the"]], [[["the"]]]), weights=[0.25] * 4, auto_reweigh=True).score < 1e-100


def test_several_references_of_different_lengths_and_ties():
    hyp = "the cat sat on the mat".split()  # 6 tokens
    refs = [["a"] * 5 + ["cat"], ["x"] * 4, "the cat sat on the mat too".split(), ["the"] * 9]  # 6, 4, 7, 9
    refs_tie = ["the cat sat on mat".split(), "the cat sat on the red mat".split()]  # 5 vs 7: tie -> 5
    hyps = [hyp, hyp, hyp, "the cat".split()]
    refsets = [refs[1:], refs_tie, [refs_tie[1], refs_tie[0]], [["cat"], ["the", "cat", "x"]]]  # 2: 1 vs 3 -> 1
    check_all(hyps, refsets)
    stats = make_stats(hyps, refsets)
    assert stats[1].shape == (4, 3) and stats[1][1, 2] == -1  # absent references are -1
    res = nltk_bleu(*stats)
    assert res.ref_len == 7 + 5 + 5 + 1 and res.hyp_len == 20
    assert res.ref_len == sum(bleu_score.closest_ref_length(r, len(h)) for r, h in zip(refsets, hyps))


def test_smoothing_parameters():
    hyps, refs = [HYP_GOOD, "the cat sat".split(), ["mat"]], [[REF1], [REF2], [REF1, REF2]]
    # k=0 / alpha=0 make nltk divide by zero (method4 with a zero order; method6 with a short last hypothesis).
    for kw in ({"epsilon": 0.5}, {"alpha": 2}, {"k": 3}, {"epsilon": 1, "alpha": 1, "k": 1},
               {"alpha": 2.5, "k": 0.5}, {"k": 0, "alpha": 0}):
        check_all(hyps, refs, weights_list=WEIGHTS[:2] + WEIGHTS[-1:], **kw)


def test_method0_warns_in_nltk_but_not_here():
    hyps, refs = [["the", "dog"]], [[REF1]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bleu_score.corpus_bleu(refs, hyps)
    assert [str(w.message).count("0 counts of") for w in caught] == [1, 1, 1]  # orders 2, 3, 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = nltk_bleu(*make_stats(hyps, refs))
    assert res.precisions[1] == res.precisions[3] == 2.2250738585072014e-308


def test_orders_needed_and_extra_columns_ignored():
    assert nltk_orders_needed() == 4
    assert nltk_orders_needed((0.5, 0.5), 5) == 5 and nltk_orders_needed((0.5, 0.5), 7) == 5
    assert nltk_orders_needed((0.5, 0.5), 6) == 2 and nltk_orders_needed((1 / 6,) * 6, 5) == 6
    stats = make_stats([HYP_GOOD], [[REF1]], max_order=4)
    assert nltk_bleu(*stats).score == nltk_bleu(*make_stats([HYP_GOOD], [[REF1]], max_order=6)).score
    with pytest.raises(ValueError, match="need 5 n-gram orders"):
        nltk_bleu(*stats, method=5)
    with pytest.raises(ValueError, match="need 6 n-gram orders"):
        nltk_bleu(*stats, weights=(1 / 6,) * 6)


def test_errors_where_nltk_raises_or_input_is_bad():
    stats = make_stats([HYP_GOOD, ["cat"]], [[REF1], [REF2]])
    with pytest.raises(ValueError, match="IndexError"):
        nltk_bleu(*stats, method=6, weights=(0.5, 0.5))
    with pytest.raises(ValueError, match="AssertionError"):
        nltk_bleu(*make_stats([["the", "cat", "x", "y"]], [[REF1]]), method=6)
    with pytest.raises(ValueError, match="0-7"):
        nltk_bleu(*stats, method=8)
    with pytest.raises(ValueError, match="list of weight tuples"):
        nltk_bleu(*stats, weights=[(0.5, 0.5), (0.25,) * 4])
    with pytest.raises(ValueError, match="ZeroDivisionError"):
        nltk_bleu(*[a[:0] for a in stats])
    hyp_len, ref_lens, matches, totals = stats
    with pytest.raises(ValueError, match="no reference"):
        nltk_bleu(hyp_len, np.full_like(ref_lens, -1), matches, totals)
    with pytest.raises(ValueError, match="totals"):
        nltk_bleu(hyp_len, ref_lens, matches, np.maximum(totals, 1))
    with pytest.raises(ValueError, match="rows"):
        nltk_bleu(hyp_len[:1], ref_lens, matches, totals)
    with pytest.raises(ValueError, match="integer"):
        nltk_bleu(hyp_len.astype(float), ref_lens, matches, totals)
    assert nltk_bleu(*stats, weights=()).score == 0.0  # nltk: no precisions, unigram counter empty -> 0


def test_result_is_frozen():
    res = nltk_bleu(*make_stats([HYP_GOOD], [[REF1]]))
    assert isinstance(res, NltkResult) and isinstance(res.precisions, list)
    with pytest.raises(AttributeError):
        res.score = 1.0  # type: ignore[misc]


# --------------------------------------------------------------------------------------------------------------
# Property test: random small corpora over a 3-token vocabulary, every method
# --------------------------------------------------------------------------------------------------------------

tokens = st.lists(st.sampled_from("abc"), max_size=7)
segment = st.tuples(tokens, st.lists(tokens, min_size=1, max_size=3))
corpus = st.lists(segment, min_size=1, max_size=4)


@pytest.mark.parametrize("method", NLTK_METHODS)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=corpus, weights=st.sampled_from(WEIGHTS + [(1.0,), (0.2,) * 5]), auto_reweigh=st.booleans(),
       params=st.sampled_from([{}, {"epsilon": 0.3, "alpha": 2, "k": 3}]))
@pytest.mark.slow
def test_property_against_nltk(method, data, weights, auto_reweigh, params):
    hyps = [h for h, _ in data]
    refs = [r for _, r in data]
    stats = make_stats(hyps, refs)
    check(stats, refs, hyps, weights, method, auto_reweigh=auto_reweigh, **params)
    one = tuple(a[-1:] for a in stats)
    check(one, refs[-1:], hyps[-1:], weights, method, sentence=True, auto_reweigh=auto_reweigh, **params)
