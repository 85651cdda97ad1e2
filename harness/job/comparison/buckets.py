"""Buckets: the test set cut by reference length or by sentence BLEU (sub-test-sets), words by frequency, n-gram
precisions by order; each row a paired bootstrap test of B against A by the one resampling engine
(:mod:`harness.core.resampling` through :mod:`harness.core.significance`).

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
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ...core.bleu import ScoreFn
from ...core.significance import differences, paired_test, systems_ci
from ...core.stats import SegmentStats
from ...text.counting import GramCounts
from .result import (
    FREQUENCY_CUTOFFS,
    LENGTH_CUTOFFS,
    LEVEL,
    NAN,
    SENTENCE_BLEU_CUTOFFS,
    BucketGroup,
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


def paired_row(bucket: str, xa: Any, xb: Any, fn: Callable[[Any], FloatArray], n_samples: int,
               seed: int | None) -> PairedRow:
    """A and B on one set of segments: sacrebleu's paired bootstrap (``paired_test``) of ``fn`` over the
    statistics ``xa``/``xb`` (``SegmentStats`` with a BLEU score function, or ``[n, K]`` matrices)."""
    base, other = paired_test([("a", xa), ("b", xb)], fn, "bs", n_samples, seed)
    return PairedRow(bucket, len(xa), base.score, other.score, _f(base.ci_low), _f(base.ci_high), _f(other.ci_low),
                     _f(other.ci_high), other.score - base.score, _f(other.delta_low), _f(other.delta_high),
                     _f(other.p_value))


def _f(x: float | None) -> float:
    return NAN if x is None else float(x)


def ratio_rows(labels: Sequence[str], num_a: FloatArray, den_a: FloatArray, num_b: FloatArray, den_b: FloatArray,
               n_samples: int, seed: int | None, words: Sequence[WordCounts | None] | None = None
               ) -> list[PairedRow]:
    """Rows of ratios ``100 * sum(num) / sum(den)`` over the whole test set (``num_*[R, n]``): one draw of
    resamples shared by all rows, the paired test of each row's A and B (:func:`~harness.core.significance.differences`
    with pairs ``(2r, 2r + 1)``: p-values and difference intervals equal a two-system ``paired_test`` with the same
    seed) and each system's interval (:func:`~harness.core.significance.bootstrap_ci`)."""
    systems: list[tuple[str, FloatArray]] = []
    for r in range(len(labels)):
        systems.append((f"a{r}", np.column_stack([num_a[r], den_a[r]])))
        systems.append((f"b{r}", np.column_stack([num_b[r], den_b[r]])))
    if not systems:
        return []
    pairs = [(2 * r, 2 * r + 1) for r in range(len(labels))]
    comps = differences(systems, _ratio, "bs", pairs, n_samples, seed, ci=LEVEL)
    cis = systems_ci(systems, _ratio, n_samples, seed)
    n = num_a.shape[1]
    out = []
    for r, (label, c) in enumerate(zip(labels, comps)):
        ca, cb = cis[2 * r], cis[2 * r + 1]
        out.append(PairedRow(label, n, c.value_a, c.value_b, ca.ci_low, ca.ci_high, cb.ci_low, cb.ci_high, c.delta,
                             c.ci_low, c.ci_high, c.p_value, None if words is None else words[r]))
    return out


def subset_rows(labels: Sequence[str], index: IntArray, xa: Any, xb: Any, take: Callable[[Any, IntArray], Any],
                fn: Callable[[Any], FloatArray], n_samples: int, seed: int | None) -> list[PairedRow]:
    """One :func:`paired_row` per non-empty bucket (``index[i]``: the bucket of segment ``i``; ``-1``: none):
    each bucket is a sub-test-set, resampled on its own segments."""
    out = []
    for j, label in enumerate(labels):
        idx = np.flatnonzero(index == j)
        if idx.size:
            out.append(paired_row(label, take(xa, idx), take(xb, idx), fn, n_samples, seed))
    return out


def _take_stats(stats: SegmentStats, idx: IntArray) -> SegmentStats:
    return stats.take(idx)


def take_rows(x: FloatArray, idx: IntArray) -> FloatArray:
    return x[idx]


# BLEU, words and precisions of the whole comparison


def bleu_buckets(st_a: SegmentStats, st_b: SegmentStats, sentence_a: FloatArray, label_a: str, label_b: str,
                 fn: ScoreFn, n_samples: int, seed: int | None) -> tuple[BucketGroup, BucketGroup]:
    """BLEU by reference length and by the sentence BLEU of A (sub-test-sets)."""
    len_bucket = bucket_of(primary_ref_len(st_a), LENGTH_CUTOFFS)
    bleu_bucket = bucket_of(sentence_a, SENTENCE_BLEU_CUTOFFS)
    by_length = BucketGroup(
        "length", "BLEU by reference length", "bleu",
        tuple(subset_rows(bucket_labels(LENGTH_CUTOFFS), len_bucket, st_a, st_b, _take_stats, fn, n_samples,
                          seed)),
        "Segments bucketed by the length in tokens of their first reference (compare-mt's buckets); each bucket's "
        "BLEU is corpus BLEU of its segments (sacrebleu on those segments) and its test resamples them.")
    by_bleu = BucketGroup(
        "sentence_bleu", f"BLEU by sentence BLEU of {label_a}", "bleu",
        tuple(subset_rows(bucket_labels(SENTENCE_BLEU_CUTOFFS), bleu_bucket, st_a, st_b, _take_stats, fn,
                          n_samples, seed)),
        f"Segments bucketed by the sentence BLEU of {label_a} (compare-mt's buckets, one system's, so both systems "
        f"are scored on the same segments). Selecting by {label_a}'s own scores favours {label_b} in the low "
        f"buckets and {label_a} in the high ones (regression to the mean).")
    return by_length, by_bleu


def precision_rows(st_a: SegmentStats, st_b: SegmentStats, n_samples: int, seed: int | None) -> BucketGroup:
    """Modified n-gram precision of every order, whole test set."""
    f = np.float64
    order = st_a.max_order
    rows = ratio_rows([f"{k}-gram" for k in range(1, order + 1)], st_a.matches.T.astype(f), st_a.totals.T.astype(f),
                      st_b.matches.T.astype(f), st_b.totals.T.astype(f), n_samples, seed)
    return BucketGroup("precision", "n-gram precision by order", "precision", tuple(rows),
                       "Modified (clipped) n-gram precision of the whole test set, 100 x matches / "
                       "hypothesis n-grams, unsmoothed.")


def word_buckets(words: GramCounts, frequency: IntArray, n_segments: int, n_samples: int, seed: int | None,
                 source: str, labels_ab: tuple[str, str]) -> BucketGroup:
    """Word F-measure by word frequency: ``words`` the unigram counts of A (stream 0) and B (stream 1) against the
    first present reference, ``frequency`` of each of its word ids (``source``: ``reference`` or the training
    corpus's name)."""
    labels = bucket_labels(FREQUENCY_CUTOFFS)
    nb = len(labels)
    bucket = bucket_of(frequency, FREQUENCY_CUTOFFS)

    def by_bucket(segment: IntArray, gram: IntArray, weights: IntArray) -> IntArray:
        flat = segment * nb + bucket[gram]
        return np.bincount(flat, weights=weights, minlength=n_segments * nb).astype(np.int64).reshape(n_segments,
                                                                                                     nb)

    ref_total = by_bucket(words.ref_segment, words.ref_gram, words.ref_max)
    (out_a, match_a), (out_b, match_b) = [
        (by_bucket(words.segment[k], words.gram[k], words.count[k]),
         by_bucket(words.segment[k], words.gram[k], words.clipped[k])) for k in (0, 1)]
    # A bucket without reference words has no recall (compare-mt prints F = 0 for it): left out, its output
    # words are counted in the note instead.
    keep = [j for j in range(nb) if ref_total[:, j].sum() > 0]
    unseen_a, unseen_b = int(out_a[:, 0].sum()), int(out_b[:, 0].sum())
    counts = [WordCounts(int(ref_total[:, j].sum()), int(out_a[:, j].sum()), int(out_b[:, j].sum()),
                         int(match_a[:, j].sum()), int(match_b[:, j].sum())) for j in keep]
    f = np.float64
    rows = ratio_rows([labels[j] for j in keep], 2.0 * match_a.T[keep].astype(f),
                      (out_a + ref_total).T[keep].astype(f), 2.0 * match_b.T[keep].astype(f),
                      (out_b + ref_total).T[keep].astype(f), n_samples, seed, counts)
    where = "in the reference" if source == "reference" else f"in the training corpus {source}"
    note = (f"Words bucketed by their frequency {where} (compare-mt's buckets). F-measure = 2 x matched / (output "
            "words + reference words) of the bucket; an output word matches an unused occurrence of it in the "
            "segment's first reference.")
    if ref_total[:, 0].sum() == 0 and unseen_a + unseen_b:
        note += (f" Output words never seen {where} (no reference word to recall, so no F-measure): "
                 f"{unseen_a:,} of {labels_ab[0]}'s, {unseen_b:,} of {labels_ab[1]}'s.")
    return BucketGroup("word_frequency", "Word F-measure by word frequency", "f_measure", tuple(rows), note)


def word_frequency(words: GramCounts, names: Sequence[str] | None, train_counts: Mapping[str, int] | None
                   ) -> IntArray:
    """The frequency of each word id of ``words`` (``names``: its text): in ``train_counts`` when given, else in
    the first present reference (the one matched against, as compare-mt counts)."""
    if train_counts is not None:
        assert names is not None
        return np.fromiter((train_counts.get(w, 0) for w in names), dtype=np.int64, count=len(names))
    return np.bincount(words.ref_gram, weights=words.ref_max, minlength=words.n_grams).astype(np.int64)
