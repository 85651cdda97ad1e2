"""Buckets: the test set cut by reference length, by length difference or by sentence BLEU (sub-test-sets), words
by frequency, n-gram precisions by order; each row a paired bootstrap test of every system against the baseline
(the first) by the one resampling engine (:mod:`harness.core.resampling` through :mod:`harness.core.significance`).
Every system is resampled on the same draws (they depend on the seed and the segments only), so the row of the
baseline against one system is the one a comparison of those two alone gives.

- BLEU by *reference* length (tokens of the first reference present; compare-mt's ``LengthSentenceBucketer``
  cutoffs 10..60) and by sentence-BLEU of system A (compare-mt's ``ScoreSentenceBucketer`` cutoffs 10..90, but
  computed for A only, so both systems are scored on the same segments). A bucket is a sub-test-set: its BLEU is
  :func:`~harness.core.bleu.corpus_score` of the statistics of its segments, which equals sacrebleu's
  ``corpus_bleu`` on those segments, and its paired test is the one sacrebleu would run on them (resamples of the
  bucket's segments, same seed).
- Word F-measure by word frequency (compare-mt's ``FreqWordBucketer``: cutoffs 1,2,3,4,5,10,100,1000; frequency
  counted in the reference matched against, as compare-mt, or in a training corpus; counting every reference would
  put a word found in only one of them into the rare buckets). Matching is compare-mt's with one reference: an
  output word matches an unused occurrence of it in the segment's first present reference, i.e.
  ``min(count_out(w), count_ref(w))`` per segment: the clipped unigram counts of
  :func:`harness.text.counting.count_grams` against that reference. ``F = 2m / (out + ref)`` is a ratio of additive
  per-segment counts, so whole-test-set resamples score it exactly (compare-mt resamples half the set, unseeded).
- n-gram precision per order (``100 * matches_n / totals_n`` from the BLEU statistics).
- BLEU by length difference (compare-mt's ``LengthDiffSentenceBucketer``: ``len(output) - len(reference)`` in
  tokens, the first reference present, cutoffs -20, -10, -5, -4 .. 5, 6, 11, 21): each system's segments are
  bucketed by its own output, so a bucket holds different segments for each system; it reports each system's
  count of segments and its BLEU on them (sacrebleu on those segments) with a bootstrap interval, and no paired
  difference.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ...core.bleu import ScoreFn
from ...core.significance import bootstrap_ci, differences, paired_test, systems_ci
from ...core.stats import SegmentStats
from ...text.counting import GramCounts
from .result import (
    FREQUENCY_CUTOFFS,
    LENGTH_CUTOFFS,
    LENGTH_DIFF_CUTOFFS,
    LEVEL,
    NAN,
    SENTENCE_BLEU_CUTOFFS,
    BucketLine,
    BucketTable,
    FloatArray,
    IntArray,
    PairedRow,
    WordCounts,
)


def bucket_labels(cutoffs: Sequence[float]) -> list[str]:
    """compare-mt's ``Bucketer.set_bucket_cutoffs`` labels: ``<c0``, ``[c_i-1,c_i)`` (``c_i - 1`` alone when the
    bucket holds one integer), ``>=c_last``."""
    out = []
    for i, x in enumerate(cutoffs):
        if i == 0:
            out.append(f"<{_num(x)}")
        elif x - 1 == cutoffs[i - 1]:
            out.append(_num(x - 1))
        else:
            out.append(f"[{_num(cutoffs[i - 1])},{_num(x)})")
    out.append(f">={_num(cutoffs[-1])}")
    return out


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def bucket_of(values: Any, cutoffs: Sequence[float]) -> IntArray:
    """compare-mt's ``cutoff_into_bucket``: the first ``i`` with ``value < cutoffs[i]``, else ``len(cutoffs)``."""
    return np.searchsorted(np.asarray(cutoffs, dtype=np.float64), np.asarray(values, dtype=np.float64),
                           side="right").astype(np.int64)


def primary_ref_len(stats: SegmentStats) -> IntArray:
    """Length of each segment's first present reference (the length compare-mt buckets by, for one reference)."""
    present = stats.ref_lens >= 0
    first = np.argmax(present, axis=1)
    return stats.ref_lens[np.arange(len(stats)), first].astype(np.int64)


# Paired tests of one metric (the one resampling engine, through harness.core.significance)


def _ratio(sums: Any) -> FloatArray:
    """``100 * num / den`` of summed ``[num, den]`` statistics per system slot (NaN where ``den = 0``)."""
    s = np.asarray(sums, dtype=np.float64)
    num, den = s[..., 0], s[..., 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, 100.0 * num / np.where(den > 0, den, 1.0), NAN)


def mean_of(sums: Any) -> FloatArray:
    """``num / den`` (a mean of per-segment scores from ``[score, 1]`` rows)."""
    s = np.asarray(sums, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s[..., 1] > 0, s[..., 0] / np.where(s[..., 1] > 0, s[..., 1], 1.0), NAN)


def paired_rows(bucket: str, xs: Sequence[Any], fn: Callable[[Any], FloatArray], n_samples: int,
                seed: int | None) -> tuple[PairedRow, ...]:
    """The baseline ``xs[0]`` against each other system on one set of segments: sacrebleu's paired bootstrap
    (``paired_test``, baseline first) of ``fn`` over the statistics (``SegmentStats`` with a BLEU score function,
    or ``[n, K]`` matrices); one row per other system."""
    base, *others = paired_test([(f"s{k}", x) for k, x in enumerate(xs)], fn, "bs", n_samples, seed)
    return tuple(PairedRow(bucket, len(xs[0]), base.score, other.score, _f(base.ci_low), _f(base.ci_high),
                           _f(other.ci_low), _f(other.ci_high), other.score - base.score, _f(other.delta_low),
                           _f(other.delta_high), _f(other.p_value)) for other in others)


def paired_row(bucket: str, xa: Any, xb: Any, fn: Callable[[Any], FloatArray], n_samples: int,
               seed: int | None) -> PairedRow:
    """A and B on one set of segments (:func:`paired_rows` of two systems)."""
    return paired_rows(bucket, [xa, xb], fn, n_samples, seed)[0]


def _f(x: float | None) -> float:
    return NAN if x is None else float(x)


def ratio_lines(labels: Sequence[str], nums: Sequence[FloatArray], dens: Sequence[FloatArray], n_samples: int,
                seed: int | None, words: Sequence[Sequence[WordCounts]] | None = None) -> list[BucketLine]:
    """Lines of ratios ``100 * sum(num) / sum(den)`` over the whole test set (``nums[k][r, n]``: system ``k``,
    row ``r``): one draw of resamples shared by all rows and systems, the paired test of the baseline against each
    other system in each row (:func:`~harness.core.significance.differences`: p-values and difference intervals
    equal a two-system ``paired_test`` with the same seed) and each system's interval
    (:func:`~harness.core.significance.bootstrap_ci`). ``words[r][j]``: the word counts of row ``r``, pair ``j``."""
    s = len(nums)
    systems: list[tuple[str, FloatArray]] = []
    for r in range(len(labels)):
        systems += [(f"s{k}r{r}", np.column_stack([nums[k][r], dens[k][r]])) for k in range(s)]
    if not systems:
        return []
    pairs = [(r * s, r * s + k) for r in range(len(labels)) for k in range(1, s)]
    comps = differences(systems, _ratio, "bs", pairs, n_samples, seed, ci=LEVEL)
    cis = systems_ci(systems, _ratio, n_samples, seed)
    n = nums[0].shape[1]
    out = []
    for r, label in enumerate(labels):
        ca = cis[r * s]
        rows = []
        for k in range(1, s):
            c, cb = comps[r * (s - 1) + k - 1], cis[r * s + k]
            rows.append(PairedRow(label, n, c.value_a, c.value_b, ca.ci_low, ca.ci_high, cb.ci_low, cb.ci_high,
                                  c.delta, c.ci_low, c.ci_high, c.p_value, None if words is None else words[r][k - 1]))
        out.append(BucketLine(label, tuple(rows)))
    return out


def subset_lines(labels: Sequence[str], index: IntArray, xs: Sequence[Any], take: Callable[[Any, IntArray], Any],
                 fn: Callable[[Any], FloatArray], n_samples: int, seed: int | None) -> list[BucketLine]:
    """One line per non-empty bucket (``index[i]``: the bucket of segment ``i``; ``-1``: none): each bucket is a
    sub-test-set, resampled on its own segments, every system on the same ones (:func:`paired_rows`)."""
    out = []
    for j, label in enumerate(labels):
        idx = np.flatnonzero(index == j)
        if idx.size:
            out.append(BucketLine(label, paired_rows(label, [take(x, idx) for x in xs], fn, n_samples, seed)))
    return out


def subset_rows(labels: Sequence[str], index: IntArray, xa: Any, xb: Any, take: Callable[[Any, IntArray], Any],
                fn: Callable[[Any], FloatArray], n_samples: int, seed: int | None) -> list[PairedRow]:
    """:func:`subset_lines` of two systems, as rows."""
    return [line.first for line in subset_lines(labels, index, [xa, xb], take, fn, n_samples, seed)]


def _take_stats(stats: SegmentStats, idx: IntArray) -> SegmentStats:
    return stats.take(idx)


def take_rows(x: FloatArray, idx: IntArray) -> FloatArray:
    return x[idx]


def _table(key: str, title: str, metric: str, lines: Sequence[BucketLine], note: str,
           pair_notes: Sequence[str] | None = None, per_system: bool = False) -> BucketTable:
    n_pairs = len(lines[0].rows) if lines else 0
    notes = tuple(pair_notes) if pair_notes is not None else (note,) * max(n_pairs, 1)
    return BucketTable(key, title, metric, tuple(lines), note, notes, per_system)


# BLEU, words and precisions of the whole comparison


def sentence_bleu_note(a: str, others: Sequence[str]) -> str:
    """The note of the buckets by the baseline's sentence BLEU: selecting by one system's scores favours it."""
    who, both = (others[0], "both") if len(others) == 1 else ("the other systems", "all")
    return (f"Segments bucketed by the sentence BLEU of {a} (compare-mt's buckets, one system's, so {both} systems "
            f"are scored on the same segments). Selecting by {a}'s own scores favours {who} in the low buckets and "
            f"{a} in the high ones (regression to the mean).")


def bleu_buckets(stats: Sequence[SegmentStats], sentence_a: FloatArray, labels: Sequence[str], fn: ScoreFn,
                 n_samples: int, seed: int | None) -> tuple[BucketTable, BucketTable]:
    """BLEU by reference length and by the sentence BLEU of the baseline (sub-test-sets); ``labels``: the
    systems' names."""
    len_bucket = bucket_of(primary_ref_len(stats[0]), LENGTH_CUTOFFS)
    bleu_bucket = bucket_of(sentence_a, SENTENCE_BLEU_CUTOFFS)
    a, others = labels[0], labels[1:]
    by_length = _table(
        "length", "BLEU by reference length", "bleu",
        subset_lines(bucket_labels(LENGTH_CUTOFFS), len_bucket, stats, _take_stats, fn, n_samples, seed),
        "Segments bucketed by the length in tokens of their first reference (compare-mt's buckets); each bucket's "
        "BLEU is corpus BLEU of its segments (sacrebleu on those segments) and its test resamples them.")
    by_bleu = _table(
        "sentence_bleu", f"BLEU by sentence BLEU of {a}", "bleu",
        subset_lines(bucket_labels(SENTENCE_BLEU_CUTOFFS), bleu_bucket, stats, _take_stats, fn, n_samples, seed),
        sentence_bleu_note(a, others), [sentence_bleu_note(a, [b]) for b in others])
    return by_length, by_bleu


def length_diff_buckets(stats: Sequence[SegmentStats], fn: ScoreFn, n_samples: int, seed: int | None
                        ) -> BucketTable:
    """BLEU by length difference, ``len(output) - len(reference)`` in tokens (the first reference present), with
    compare-mt's ``LengthDiffSentenceBucketer`` cutoffs: each system's segments bucketed by its own output, each
    system's count and BLEU (its bootstrap interval, sacrebleu's ``--confidence``) on its own segments."""
    ref_len = primary_ref_len(stats[0])
    labels = bucket_labels(LENGTH_DIFF_CUTOFFS)
    index = [bucket_of(st.hyp_len.astype(np.int64) - ref_len, LENGTH_DIFF_CUTOFFS) for st in stats]
    lines = []
    for j, label in enumerate(labels):
        idx = [np.flatnonzero(b == j) for b in index]
        if not any(i.size for i in idx):
            continue
        own = []
        for st, i in zip(stats, idx):
            if i.size:
                ci = bootstrap_ci(st.take(i), fn, n_samples, seed)
                assert not isinstance(ci, list)
                own.append((int(i.size), ci.score, ci.ci_low, ci.ci_high))
            else:
                own.append((0, NAN, NAN, NAN))
        (na, va, la, ha) = own[0]
        rows = tuple(None if na == 0 and nb == 0 else
                     PairedRow(label, na, va, vb, la, ha, lb, hb, NAN, NAN, NAN, NAN, n_segments_b=nb)
                     for (nb, vb, lb, hb) in own[1:])
        lines.append(BucketLine(label, rows))
    return _table(
        "length_diff", "BLEU by length difference (output - reference)", "bleu", lines,
        "Segments bucketed by each system's own length difference: the tokens of its output minus those of the "
        "first reference (compare-mt's lengthdiff buckets, len(output) - len(reference)). A bucket holds different "
        "segments for each system: each system's count of segments, and its BLEU on them (sacrebleu on those "
        "segments) with a bootstrap interval over them; no paired difference.", per_system=True)


def precision_rows(stats: Sequence[SegmentStats], n_samples: int, seed: int | None) -> BucketTable:
    """Modified n-gram precision of every order, whole test set."""
    f = np.float64
    order = stats[0].max_order
    lines = ratio_lines([f"{k}-gram" for k in range(1, order + 1)], [st.matches.T.astype(f) for st in stats],
                        [st.totals.T.astype(f) for st in stats], n_samples, seed)
    return _table("precision", "n-gram precision by order", "precision", lines,
                  "Modified (clipped) n-gram precision of the whole test set, 100 x matches / hypothesis n-grams, "
                  "unsmoothed.")


def word_buckets(words: GramCounts, frequency: IntArray, n_segments: int, n_samples: int, seed: int | None,
                 source: str, labels: Sequence[str]) -> BucketTable:
    """Word F-measure by word frequency: ``words`` the unigram counts of every system (stream ``k``: system
    ``k``) against the first present reference, ``frequency`` of each of its word ids (``source``: ``reference``
    or the training corpus's name)."""
    names = bucket_labels(FREQUENCY_CUTOFFS)
    nb = len(names)
    bucket = bucket_of(frequency, FREQUENCY_CUTOFFS)

    def by_bucket(segment: IntArray, gram: IntArray, weights: IntArray) -> IntArray:
        flat = segment * nb + bucket[gram]
        return np.bincount(flat, weights=weights, minlength=n_segments * nb).astype(np.int64).reshape(n_segments,
                                                                                                     nb)

    ref_total = by_bucket(words.ref_segment, words.ref_gram, words.ref_max)
    out = [by_bucket(words.segment[k], words.gram[k], words.count[k]) for k in range(len(labels))]
    match = [by_bucket(words.segment[k], words.gram[k], words.clipped[k]) for k in range(len(labels))]
    # A bucket without reference words has no recall (compare-mt prints F = 0 for it): left out, its output
    # words are counted in the note instead.
    keep = [j for j in range(nb) if ref_total[:, j].sum() > 0]
    unseen = [int(o[:, 0].sum()) for o in out]
    counts = [[WordCounts(int(ref_total[:, j].sum()), int(out[0][:, j].sum()), int(out[k][:, j].sum()),
                          int(match[0][:, j].sum()), int(match[k][:, j].sum())) for k in range(1, len(labels))]
              for j in keep]
    f = np.float64
    lines = ratio_lines([names[j] for j in keep], [2.0 * m.T[keep].astype(f) for m in match],
                        [(o + ref_total).T[keep].astype(f) for o in out], n_samples, seed, counts)
    where = "in the reference" if source == "reference" else f"in the training corpus {source}"
    note = (f"Words bucketed by their frequency {where} (compare-mt's buckets). F-measure = 2 x matched / (output "
            "words + reference words) of the bucket; an output word matches an unused occurrence of it in the "
            "segment's first reference.")
    no_ref = ref_total[:, 0].sum() == 0

    def with_unseen(ks: Sequence[int]) -> str:
        if not (no_ref and any(unseen[k] for k in ks)):
            return note
        return note + (f" Output words never seen {where} (no reference word to recall, so no F-measure): "
                       + ", ".join(f"{unseen[k]:,} of {labels[k]}'s" for k in ks) + ".")

    return _table("word_frequency", "Word F-measure by word frequency", "f_measure", lines,
                  with_unseen(range(len(labels))), [with_unseen((0, k)) for k in range(1, len(labels))])


def word_frequency(words: GramCounts, names: Sequence[str] | None, train_counts: Mapping[str, int] | None
                   ) -> IntArray:
    """The frequency of each word id of ``words`` (``names``: its text): in ``train_counts`` when given, else in
    the first present reference (the one matched against, as compare-mt counts)."""
    if train_counts is not None:
        assert names is not None
        return np.fromiter((train_counts.get(w, 0) for w in names), dtype=np.int64, count=len(names))
    return np.bincount(words.ref_gram, weights=words.ref_max, minlength=words.n_grams).astype(np.int64)
