"""The comparison itself: a :class:`~.request.ComparisonRequest` in, a :class:`~.result.ComparisonResult` out.

The texts go through the one text pipeline once (:func:`harness.text.pipeline.encode_corpus`: the tokens of the
statistics, in one vocabulary) and are counted once per n-gram (:func:`harness.text.counting.count_grams`); the
statistics of both systems are the per-segment sums of those counts, so the headline, the buckets, the n-grams and
the words all come from one count. Then every number is a paired bootstrap test over those statistics
(:mod:`.buckets`), the n-gram lists rank the counts (:mod:`.ngrams`) and the examples show segments
(:mod:`.examples`). Pure of I/O.
"""

from __future__ import annotations

import numpy as np

from ...core.bleu import corpus_score, score_fn, sentence_scores
from ...core.options import sentence_options
from ...core.significance import signature_extra
from ...core.stats import SegmentStats
from ...errors import InputError
from ...text.counting import count_grams
from ...text.pipeline import encode_corpus
from .buckets import bleu_buckets, paired_row, precision_rows, primary_ref_len, word_buckets, word_frequency
from .examples import Segments, bleu_examples, human_comparison
from .ngrams import ngram_lists
from .request import ComparisonRequest
from .result import NAN, NGRAM_ALPHA, ComparisonResult, SystemSummary


def compare(request: ComparisonRequest) -> ComparisonResult:
    """Where system B differs from system A (see the package docstring); seeded: the same request gives the same
    result."""
    req = request.checked()
    a, b, opts = req.a, req.b, req.options
    sent = sentence_options(opts) if req.sentence_options is None else req.sentence_options
    order = opts.max_ngram_order
    corpus = encode_corpus([a.lines, b.lines], req.references, opts)
    counts = count_grams(corpus.systems, corpus.references, order)
    st_a, st_b = counts.statistics(0), counts.statistics(1)
    if req.statistics is not None:
        for side, given, counted in zip((a, b), req.statistics, (st_a, st_b)):
            _check_statistics(side.label, given.truncate_order(order), counted)
    fn = score_fn(opts)
    n_samples, seed = req.n_samples, req.seed
    extra = signature_extra("bs", n_samples, seed)

    headline = paired_row("all", st_a, st_b, fn, n_samples, seed)
    score_a, score_b = corpus_score(st_a, opts, extra), corpus_score(st_b, opts, extra)
    sa = np.asarray(sentence_scores(st_a, sent).score, dtype=np.float64)
    sb = np.asarray(sentence_scores(st_b, sent).score, dtype=np.float64)
    by_length, by_bleu = bleu_buckets(st_a, st_b, sa, a.label, b.label, fn, n_samples, seed)

    unigrams = count_grams(corpus.systems, corpus.references.first_present(), 1)
    words = unigrams.orders[0]
    names = None if req.train_counts is None else corpus.words(unigrams.tokens[words.first].tolist())
    frequency = word_frequency(words, names, req.train_counts)
    source_name = "reference" if req.train_counts is None else req.train_name
    by_freq = word_buckets(words, frequency, len(a.lines), n_samples, seed, source_name, (a.label, b.label))
    precisions = precision_rows(st_a, st_b, n_samples, seed)

    segments = Segments(a, b, sa, sb, primary_ref_len(st_a), req.references, req.source)
    human = human_comparison(segments, req.human_name or "human", n_samples, seed, req.n_examples)
    human_a, human_b = (NAN, NAN) if human is None else (human.overall.a, human.overall.b)
    return ComparisonResult(
        SystemSummary(a.name, a.version, a.sha256, score_a, headline.a_low, headline.a_high, human_a),
        SystemSummary(b.name, b.version, b.sha256, score_b, headline.b_low, headline.b_high, human_b),
        len(a.lines), tuple(req.ref_names) or tuple(f"ref{k}" for k in range(len(req.references))), opts,
        score_a.signature, n_samples, seed, headline, by_length, by_bleu, by_freq, precisions,
        ngram_lists(counts, corpus.words, req.top, NGRAM_ALPHA), bleu_examples(segments, req.n_examples), human,
        source_name, req.source is not None, req.dataset, req.refset, req.variant, req.top, NGRAM_ALPHA,
        sent.effective_order)


def _check_statistics(label: str, given: SegmentStats, counted: SegmentStats) -> None:
    """The caller's statistics of a system must be the ones its text gives against these references."""
    for name in ("hyp_len", "ref_lens", "matches", "totals"):
        mine, theirs = getattr(counted, name), getattr(given, name)
        if mine.shape != theirs.shape or not np.array_equal(mine, theirs):
            bad = (int(np.flatnonzero((mine != theirs).reshape(len(mine), -1).any(axis=1))[0])
                   if mine.shape == theirs.shape else 0)
            raise InputError(f"the statistics of system {label!r} do not belong to its text and these references "
                             f"under the given options ({name} differ at segment {bad})")
