"""Counting, both paths (the compiled kernel and numpy, chosen by argument), against a transparent Counter-based
definition; the statistics' reference-length rules."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.stats import SegmentStats, effective_ref_len
from harness.text import counting, token_ids
from harness.text.counting import encode_references, token_statistics
from harness.text.encoded import EncodedReferences

PATHS = [pytest.param(True, id="compiled"), pytest.param(False, id="numpy")]


def job_statistics(hyps, streams, order=4, compiled=None):
    return token_statistics(hyps, encode_references(streams), order, compiled)


def reference_counts(hyp: list[str], refs: list[list[str] | None], order: int) -> tuple[list[int], list[int]]:
    """Papineni et al. 2002 section 2.1, written the obvious way: clip by the max count over present refs."""
    matches, totals = [], []
    for n in range(1, order + 1):
        grams = Counter(tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1))
        best: Counter = Counter()
        for ref in refs:
            if ref is not None:
                best |= Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
        matches.append(sum(min(c, best[g]) for g, c in grams.items()))
        totals.append(max(0, len(hyp) - n + 1))
    return matches, totals


words = st.lists(st.sampled_from(["a", "b", "c", "the", "cat", "Cat", "."]), max_size=12)
segment = st.tuples(words, st.lists(st.one_of(st.none(), words), min_size=1, max_size=4))


def build(segments: list) -> tuple[list, list]:
    """(hyps, ref streams) with every segment padded to the same number of reference slots."""
    n_refs = max(len(r) for _, r in segments)
    hyps = [h for h, _ in segments]
    streams = [[(r[k] if k < len(r) else None) for _, r in segments] for k in range(n_refs)]
    for i, (_, r) in enumerate(segments):  # a segment needs at least one reference
        if all(s[i] is None for s in streams):
            streams[0][i] = []
    return hyps, streams


@pytest.mark.slow
@pytest.mark.parametrize("compiled", PATHS)
@settings(max_examples=150, deadline=None)
@given(st.lists(segment, min_size=1, max_size=8), st.integers(1, 6))
def test_kernel_equals_counter_definition(compiled, segments, order):
    hyps, streams = build(segments)
    got = job_statistics(hyps, streams, order, compiled)
    for i, hyp in enumerate(hyps):
        refs = [s[i] for s in streams]
        m, t = reference_counts(hyp, refs, order)
        assert got.matches[i].tolist() == m
        assert got.totals[i].tolist() == t
        assert got.hyp_len[i] == len(hyp)
        assert got.ref_lens[i].tolist() == [-1 if r is None else len(r) for r in refs]


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.lists(segment, min_size=2, max_size=10), st.data())
def test_statistics_are_additive_over_splits(segments, data):
    hyps, streams = build(segments)
    cut = data.draw(st.integers(1, len(hyps) - 1))
    whole = job_statistics(hyps, streams)
    parts = SegmentStats.concat([job_statistics(hyps[:cut], [s[:cut] for s in streams]),
                                 job_statistics(hyps[cut:], [s[cut:] for s in streams])])
    for field in ("hyp_len", "ref_lens", "matches", "totals"):
        assert np.array_equal(getattr(whole, field), getattr(parts, field))
    assert np.array_equal(whole.matrix().sum(0), parts.matrix().sum(0))


@pytest.mark.parametrize("compiled", PATHS)
def test_unknown_hypothesis_tokens_never_match(compiled):
    got = job_statistics([["x", "y", "x", "y"]], [[["a", "b"]]], 2, compiled)
    assert got.matches[0].tolist() == [0, 0]
    assert got.totals[0].tolist() == [4, 3]


@pytest.mark.parametrize("compiled", PATHS)
def test_long_segments_and_repeated_ngrams(compiled):
    hyp = ["a"] * 500 + ["b"] * 300
    ref = ["a"] * 200 + ["b"] * 400
    got = job_statistics([hyp], [[ref]], 3, compiled)
    assert got.matches[0].tolist() == reference_counts(hyp, [ref], 3)[0]


def test_ref_length_rules():
    hyp_len = np.array([5, 5, 5, 0])
    ref_lens = np.array([[4, 6, -1], [7, 3, 8], [-1, 9, -1], [0, 2, 2]])
    # closest: ties go to the shorter reference (4 and 6 are both 1 away from 5)
    assert effective_ref_len(hyp_len, ref_lens, "closest").tolist() == [4, 3, 9, 0]  # 7 and 3 tie: 3
    assert effective_ref_len(hyp_len, ref_lens, "shortest").tolist() == [4, 3, 9, 0]
    assert effective_ref_len(hyp_len, ref_lens, "average").tolist() == [5, 6, 9, 4 / 3]


def test_unknown_rule_lists_choices():
    with pytest.raises(ValueError, match="closest, shortest, average"):
        effective_ref_len(np.array([1]), np.array([[1]]), "longest")


@pytest.mark.slow
@pytest.mark.usefixtures("native_on")
@settings(max_examples=200, deadline=None)
@given(st.lists(segment, min_size=1, max_size=8), st.integers(1, 6))
def test_numpy_path_equals_the_compiled_kernel(segments, order):
    hyps, streams = build(segments)
    refs = counting.encode_references(streams)
    h_ids, h_off = counting.encode_hypotheses(hyps, refs.vocab)
    m1, t1 = counting.count_numpy(h_ids, h_off, refs, order)
    m2, t2 = token_ids.count_ids(h_ids, h_off, refs, order)
    assert np.array_equal(m1, m2) and np.array_equal(t1, t2)


class _HugeVocabulary(dict):
    """A vocabulary of ``size`` token ids (only its size is read by the numpy path)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def __len__(self) -> int:
        return self.size


@pytest.mark.slow
@pytest.mark.parametrize("bits", [40, 60])
@settings(max_examples=60, deadline=None)
@given(st.lists(segment, min_size=1, max_size=8), st.integers(1, 6))
def test_numpy_path_renumbers_ids_that_would_not_fit(bits, segments, order):
    """Token ids spread over 2**40 or 2**60 values: the n-gram ids (from the second order) or the keys built on
    them (2**60: from the first) overflow int64 unless renumbered; the counts are those of the dense ids."""
    from dataclasses import replace

    hyps, streams = build(segments)
    refs = counting.encode_references(streams)
    h_ids, h_off = counting.encode_hypotheses(hyps, refs.vocab)
    assert len(refs.vocab) <= 16
    spread = 2 ** (bits - 4)  # ids 0, spread, 2 * spread, ... below 2**bits (-1 stays): unrenumbered, they wrap
    huge = replace(refs, ids=refs.ids * spread, vocab=_HugeVocabulary(2 ** bits))
    m1, t1 = counting.count_numpy(h_ids, h_off, refs, order)
    m2, t2 = counting.count_numpy(np.where(h_ids < 0, -1, h_ids * spread), h_off, huge, order)
    assert np.array_equal(m1, m2) and np.array_equal(t1, t2)


def test_both_paths_on_real_data(wmt21):
    hyps = [h.split() for h in wmt21["systems"]["UEdin"]]
    refs = [[r.split() for r in lines] for lines in wmt21["refs"].values()]
    small = job_statistics(hyps, refs, compiled=False)
    big = job_statistics(hyps, refs, compiled=True)
    assert np.array_equal(small.matches, big.matches) and np.array_equal(small.totals, big.totals)


@pytest.mark.usefixtures("native_on")
def test_the_path_is_decided_by_size_not_by_history():
    assert counting.use_compiled(10) is False and counting.use_compiled(10, compiled=True) is True
    assert counting.use_compiled(counting._COMPILED_MIN_TOKENS) is True
    assert counting.use_compiled(counting._COMPILED_MIN_TOKENS, compiled=False) is False
    assert counting.kernel_available()  # loading the kernels changes nothing about later decisions
    assert counting.use_compiled(10) is False


@pytest.mark.usefixtures("native_on")
@settings(max_examples=100, deadline=None)
@given(st.lists(segment, min_size=1, max_size=8), st.integers(1, 6))
def test_stream_major_references_count_alike(segments, order):
    """The compiled path's references (stream-major) count as the segment-major ones, on both paths."""
    hyps, streams = build(segments)
    refs = counting.encode_references(streams)
    n, r = refs.lengths.shape
    starts = refs.offsets[:-1].reshape(n, r).T.reshape(-1)
    sizes = refs.offsets[1:].reshape(n, r).T.reshape(-1) - starts
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    ids = np.concatenate([refs.ids[a:a + b] for a, b in zip(starts, sizes)] + [np.zeros(0, np.int64)])
    stream = EncodedReferences(ids, offsets, refs.lengths, refs.vocab, layout="stream")
    h_ids, h_off = counting.encode_hypotheses(hyps, refs.vocab)
    expected = counting.count_numpy(h_ids, h_off, refs, order)
    for got in (counting.count_numpy(h_ids, h_off, stream, order), token_ids.count_ids(h_ids, h_off, stream, order)):
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])


# ------------------------------------------------------------------------------ counts per n-gram (comparisons)


def gram_counter(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(words, words, st.lists(st.one_of(st.none(), words), min_size=1, max_size=3)),
                min_size=1, max_size=8), st.integers(1, 5))
@pytest.mark.slow
def test_count_grams_equals_the_counter_definition(segments, order):
    """Per (segment, n-gram) of each of two hypothesis streams: its count and ``min(count, max over the present
    references)``, n-grams named by their tokens; the reference maxima; the per-segment sums are the statistics
    of both counters."""
    hyps_a = [a for a, _, _ in segments]
    hyps_b = [b for _, b, _ in segments]
    _, streams = build([(a, r) for a, _, r in segments])
    refs = counting.encode_references(streams)
    vocab = dict(refs.vocab)
    encoded = [counting.encode_hypotheses(h, vocab, insert=True) for h in (hyps_a, hyps_b)]
    refs = EncodedReferences(refs.ids, refs.offsets, refs.lengths, vocab)
    names = {i: w for w, i in vocab.items()}
    counts = counting.count_grams(encoded, refs, order)
    for k, hyps in enumerate((hyps_a, hyps_b)):
        stats = counts.statistics(k)
        h_ids, h_off = counting.encode_hypotheses(hyps, counting.encode_references(streams).vocab)
        expected = counting.count_numpy(h_ids, h_off, counting.encode_references(streams), order)
        assert np.array_equal(stats.matches, expected[0]) and np.array_equal(stats.totals, expected[1])
        for g in counts.orders:
            got = {}
            for seg, gram, c, m in zip(g.segment[k], g.gram[k], g.count[k], g.clipped[k]):
                text = tuple(names[int(t)] for t in counts.gram_tokens(g.order, int(gram)))
                got[(int(seg), text)] = (int(c), int(m))
            want = {}
            for i, hyp in enumerate(hyps):
                best: Counter = Counter()
                for s in streams:
                    if s[i] is not None:
                        best |= gram_counter(s[i], g.order)
                for gram, c in gram_counter(hyp, g.order).items():
                    want[(i, gram)] = (c, min(c, best[gram]))
            assert got == want
            total, clipped = g.per_gram(k)
            assert total.sum() == sum(c for c, _ in want.values())
            assert clipped.sum() == stats.matches[:, g.order - 1].sum()
    for g in counts.orders:  # the reference side: the maximum count over the present references
        got = {(int(s), tuple(names[int(t)] for t in counts.gram_tokens(g.order, int(gr)))): int(m)
               for s, gr, m in zip(g.ref_segment, g.ref_gram, g.ref_max)}
        want = {}
        for i in range(len(segments)):
            best = Counter()
            for s in streams:
                if s[i] is not None:
                    best |= gram_counter(s[i], g.order)
            want.update({(i, gram): c for gram, c in best.items()})
        assert got == want


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.lists(segment, min_size=1, max_size=8))
def test_first_present_keeps_the_first_reference_of_each_segment(segments):
    _, streams = build(segments)
    refs = counting.encode_references(streams)
    names = {i: w for w, i in refs.vocab.items()}
    first = refs.first_present()
    assert first.n_refs == 1 and len(first) == len(segments)
    for i in range(len(segments)):
        want = next(s[i] for s in streams if s[i] is not None)
        got = [names[int(t)] for t in first.ids[first.offsets[i]:first.offsets[i + 1]]]
        assert got == want and first.lengths[i, 0] == len(want)


@pytest.mark.parametrize("compiled", PATHS)
@pytest.mark.parametrize("options", [{}, {"tokenize": "intl", "lowercase": True}, {"tokenize": "char"},
                                     {"tokenize": "zh", "max_ngram_order": 6}])
@pytest.mark.slow
def test_one_vocabulary_for_every_stream_gives_the_statistics_on_real_data(compiled, options, wmt21, request):
    """The comparison's corpus (systems and references in one vocabulary, on either path) counted per n-gram sums
    to exactly the statistics of the pipeline; every token of every stream has its text."""
    from harness.core.options import make_options
    from harness.text.pipeline import encode_corpus, systems_statistics
    from harness.text.tokenizers import case_and_tokenize

    if compiled:
        request.getfixturevalue("native_on")
    opts = make_options(**options)
    systems = [wmt21["systems"]["Nemo"][:300], wmt21["systems"]["UEdin"][:300]]
    refs = [lines[:300] for lines in wmt21["refs"].values()]
    corpus = encode_corpus(systems, refs, opts, compiled=compiled)
    counts = counting.count_grams(corpus.systems, corpus.references, opts.max_ngram_order)
    expected = systems_statistics(systems, refs, opts, order=opts.max_ngram_order, compiled=False)
    for k in range(2):
        got = counts.statistics(k)
        for field in ("hyp_len", "ref_lens", "matches", "totals"):
            assert np.array_equal(getattr(got, field), getattr(expected[k], field)), field
        ids, offsets = corpus.systems[k]
        assert corpus.words(ids[offsets[7]:offsets[8]].tolist()) == case_and_tokenize([systems[k][7]], opts)[0]
