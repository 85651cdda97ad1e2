"""The comparison itself: a :class:`~.request.ComparisonRequest` in, a :class:`~.result.ComparisonResult` (two
systems) or a :class:`~.result.ComparisonSet` (two or more: the first is the baseline) out.

The texts go through the one text pipeline once (:func:`harness.text.pipeline.encode_corpus`: the tokens of the
statistics, in one vocabulary) and are counted once per n-gram (:func:`harness.text.counting.count_grams`), every
system in the same count; the statistics of each system are the per-segment sums of those counts, so the
headline, the buckets, the n-grams and the words all come from one count. Then every number is a paired bootstrap
test over those statistics (:mod:`.buckets`), the n-gram lists rank the counts (:mod:`.ngrams`) and the examples
show segments (:mod:`.examples`), for the baseline against each other system. Pure of I/O.
"""

from __future__ import annotations

import numpy as np

from ...core.bleu import corpus_score, score_fn, sentence_scores
from ...core.options import sentence_options
from ...core.significance import signature_extra
from ...core.stats import SegmentStats
from ...errors import ConfigError, InputError
from ...text.counting import count_grams
from ...text.pipeline import encode_corpus
from .buckets import (
    bleu_buckets,
    length_diff_buckets,
    paired_rows,
    precision_rows,
    primary_ref_len,
    word_buckets,
    word_frequency,
)
from .examples import Segments, bleu_examples, human_comparison
from .ngrams import ngram_lists
from .request import ComparisonRequest
from .result import NAN, NGRAM_ALPHA, ComparisonResult, ComparisonSet, SystemSummary


def compare(request: ComparisonRequest) -> ComparisonResult:
    """Where system B differs from system A (see the package docstring); seeded: the same request gives the same
    result. A request of more systems: :func:`compare_systems`."""
    if request.others:
        raise ConfigError("systems", f"compare() compares two systems, got {len(request.systems)}; "
                          "compare_systems() compares more", got=[s.label for s in request.systems])
    return compare_systems(request).pairs[0]


def compare_systems(request: ComparisonRequest) -> ComparisonSet:
    """Where each system differs from the baseline (``request.a``): one :class:`ComparisonResult` per other
    system, equal to what comparing that pair alone gives, and every breakdown with all systems side by side."""
    req = request.checked()
    sides = req.systems
    labels = [s.label for s in sides]
    opts = req.options
    sent = sentence_options(opts) if req.sentence_options is None else req.sentence_options
    order = opts.max_ngram_order
    corpus = encode_corpus([s.lines for s in sides], req.references, opts)
    counts = count_grams(corpus.systems, corpus.references, order)
    stats = [counts.statistics(k) for k in range(len(sides))]
    if req.statistics is not None:
        for side, given, counted in zip(sides, req.statistics, stats):
            _check_statistics(side.label, given.truncate_order(order), counted)
    fn = score_fn(opts)
    n_samples, seed = req.n_samples, req.seed
    extra = signature_extra("bs", n_samples, seed)

    headlines = paired_rows("all", stats, fn, n_samples, seed)
    scores = [corpus_score(st, opts, extra) for st in stats]
    sentence = [np.asarray(sentence_scores(st, sent).score, dtype=np.float64) for st in stats]
    by_length, by_bleu = bleu_buckets(stats, sentence[0], labels, fn, n_samples, seed)
    by_diff = length_diff_buckets(stats, fn, n_samples, seed)

    unigrams = count_grams(corpus.systems, corpus.references.first_present(), 1)
    words = unigrams.orders[0]
    names = None if req.train_counts is None else corpus.words(unigrams.tokens[words.first].tolist())
    frequency = word_frequency(words, names, req.train_counts)
    source_name = "reference" if req.train_counts is None else req.train_name
    by_freq = word_buckets(words, frequency, len(req.a.lines), n_samples, seed, source_name, labels)
    precisions = precision_rows(stats, n_samples, seed)
    tables = (by_length, by_diff, by_bleu, by_freq, precisions)

    ref_len = primary_ref_len(stats[0])
    ref_names = tuple(req.ref_names) or tuple(f"ref{k}" for k in range(len(req.references)))
    a = req.a
    pairs = []
    for j in range(1, len(sides)):
        b, head = sides[j], headlines[j - 1]
        segments = Segments(a, b, sentence[0], sentence[j], ref_len, req.references, req.source)
        human = human_comparison(segments, req.human_name or "human", n_samples, seed, req.n_examples)
        human_a, human_b = (NAN, NAN) if human is None else (human.overall.a, human.overall.b)
        pairs.append(ComparisonResult(
            SystemSummary(a.name, a.version, a.sha256, scores[0], head.a_low, head.a_high, human_a),
            SystemSummary(b.name, b.version, b.sha256, scores[j], head.b_low, head.b_high, human_b),
            len(a.lines), ref_names, opts, scores[0].signature, n_samples, seed, head, by_length.pair(j - 1),
            by_diff.pair(j - 1), by_bleu.pair(j - 1), by_freq.pair(j - 1), precisions.pair(j - 1),
            ngram_lists(counts, corpus.words, req.top, NGRAM_ALPHA, (0, j)), bleu_examples(segments, req.n_examples),
            human, source_name, req.source is not None, req.dataset, req.refset, req.variant, req.top, NGRAM_ALPHA,
            sent.effective_order))
    return ComparisonSet(tuple(pairs), tables)


def _check_statistics(label: str, given: SegmentStats, counted: SegmentStats) -> None:
    """The caller's statistics of a system must be the ones its text gives against these references."""
    for name in ("hyp_len", "ref_lens", "matches", "totals"):
        mine, theirs = getattr(counted, name), getattr(given, name)
        if mine.shape != theirs.shape or not np.array_equal(mine, theirs):
            bad = (int(np.flatnonzero((mine != theirs).reshape(len(mine), -1).any(axis=1))[0])
                   if mine.shape == theirs.shape else 0)
            raise InputError(f"the statistics of system {label!r} do not belong to its text and these references "
                             f"under the given options ({name} differ at segment {bad})")
