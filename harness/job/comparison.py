"""Where two systems differ: the analysis behind ``harness-compare`` and a job's ``compare=[[A, B], ...]``.

A BLEU difference with a p-value says *that* two systems differ; this module says *where*, in the spirit of
compare-mt (Neubig et al., NAACL 2019 demo, ``neulab/compare-mt``) and MT-Telescope, but from the per-segment
sufficient statistics the harness already has, seeded, and with every resample done by the one engine
(:mod:`harness.core.resampling` through :mod:`harness.core.significance`); nothing is re-tokenised per resample.

Pure of I/O: texts and statistics in, an immutable :class:`ComparisonResult` out; :func:`comparison_tables` and
:func:`to_json` only read it. Writing files is :mod:`harness.sinks.pages`'s job, rendering the page
:mod:`.comparison_page`'s. No mlflow, hydra or pandas here.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from dataclasses import dataclass
from itertools import chain
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from ..core.bleu import BleuScore, corpus_score, score_fn, sentence_scores
from ..core.options import BleuOptions, get_profile, sentence_options
from ..core.resampling import DEFAULT_SEED, check_n_samples, check_seed
from ..core.significance import bootstrap_ci, compare, paired_test, signature_extra
from ..core.stats import SegmentStats
from ..errors import ConfigError, InputError
from ..text.reading import TextFile
from ..text.tokenizers import case_and_tokenize
from .human import HumanScores

# What :func:`compare_systems` computes (``delta`` is always B minus A, DESIGN 1.7):
#
# 1. The headline: corpus BLEU of A and B with bootstrap intervals (sacrebleu's ``--confidence`` convention), the
#    paired bootstrap test (sacrebleu ``--paired-bs``, exact p-value), the signature.
# 2. Buckets, each with the paired bootstrap interval of the difference:
#
#    - BLEU by *reference* length (tokens of the first reference present; compare-mt's
#      ``LengthSentenceBucketer`` cutoffs 10..60) and by sentence-BLEU of system A (compare-mt's
#      ``ScoreSentenceBucketer`` cutoffs 10..90, but computed for A only, so both systems are scored on the same
#      segments). A bucket is a sub-test-set: its BLEU is :func:`~harness.core.bleu.corpus_score` of the statistics
#      of its segments, which equals sacrebleu's ``corpus_bleu`` on those segments, and its paired test is the
#      one sacrebleu would run on them (resamples of the bucket's segments, same seed).
#    - Word F-measure by word frequency (compare-mt's ``FreqWordBucketer``: cutoffs 1,2,3,4,5,10,100,1000;
#      frequency counted in the reference matched against, as compare-mt, or in a training corpus; counting every
#      reference would put a word found in only one of them into the rare buckets). Matching is compare-mt's with
#      one reference:
#      an output word matches an unused occurrence of it in the segment's first present reference, i.e.
#      ``min(count_out(w), count_ref(w))`` per segment. ``F = 2m / (out + ref)`` is a ratio of additive
#      per-segment counts, so whole-test-set resamples score it exactly (compare-mt resamples half the set,
#      unseeded).
#    - n-gram precision per order (``100 * matches_n / totals_n`` from the BLEU statistics).
#
# 3. n-grams (orders 1..N) that A gets right more often than B (and the reverse), and those each over-produces
#    (in its output, beyond the clipped reference count), ranked as compare-mt's ``extract_salient_features``:
#    compare-mt sorts by ``(c_A + alpha) / (c_A + c_B + 2 alpha)``; we report the smoothed log ratio
#    ``log((c_A + alpha) / (c_B + alpha))``, which is that score's logit and so gives the same order (ties: more
#    frequent first, then alphabetical). Clipped matches are BLEU's (maximum over the present references); the
#    per-segment sums of the counted matches are checked against the statistics, so the texts and the statistics
#    provably belong together.
# 4. The segments where sentence BLEU differs most, both directions, with source, references, both outputs and the
#    words where the two outputs differ (a word diff of the whitespace-split outputs).
# 5. With human segment scores: the mean human score by the same buckets (segments judged for both systems) and
#    the segments where BLEU and the humans disagree most about which system is better.

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: compare-mt ``LengthSentenceBucketer`` default cutoffs (tokens of the reference).
LENGTH_CUTOFFS: tuple[int, ...] = (10, 20, 30, 40, 50, 60)
#: compare-mt ``ScoreSentenceBucketer`` default cutoffs for BLEU on the 0-100 scale.
SENTENCE_BLEU_CUTOFFS: tuple[int, ...] = (10, 20, 30, 40, 50, 60, 70, 80, 90)
#: compare-mt ``FreqWordBucketer`` default cutoffs (occurrences of the word).
FREQUENCY_CUTOFFS: tuple[int, ...] = (1, 2, 3, 4, 5, 10, 100, 1000)
#: compare-mt's smoothing of the n-gram ranking (``--compare_ngrams alpha``, default 1).
NGRAM_ALPHA = 1.0
#: Level of every interval.
LEVEL = 0.95
#: Significance level of the headline verdict (sacrebleu stars ``p <= 0.05``).
ALPHA = 0.05
DEFAULT_SAMPLES = 1000
DEFAULT_TOP = 20
DEFAULT_EXAMPLES = 20
NAN = math.nan


# --------------------------------------------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WordCounts:
    """Word counts of one frequency bucket: reference words, each system's output words and matched words."""

    ref: int
    out_a: int
    out_b: int
    matched_a: int
    matched_b: int


@dataclass(frozen=True)
class PairedRow:
    """One metric of A and B on one set of segments, with bootstrap intervals.

    ``a``/``b``: the values on the actual segments; ``a_low``.. ``b_high``: each system's interval (sacrebleu's
    ``mean -+ half-width``); ``delta = b - a`` with the percentile interval of the paired differences
    (``delta_low``, ``delta_high``) and the paired bootstrap ``p_value``. ``n_segments``: segments in the set.
    """

    bucket: str
    n_segments: int
    a: float
    b: float
    a_low: float
    a_high: float
    b_low: float
    b_high: float
    delta: float
    delta_low: float
    delta_high: float
    p_value: float
    words: WordCounts | None = None


@dataclass(frozen=True)
class BucketGroup:
    """Rows of one breakdown (``key``: ``length``, ``sentence_bleu``, ``word_frequency``, ``precision``,
    ``human_length``, ``human_sentence_bleu``), the ``metric`` they show (``bleu``, ``f_measure``,
    ``precision``, ``human``), a ``title`` and a ``note`` saying how the buckets are made."""

    key: str
    title: str
    metric: str
    rows: tuple[PairedRow, ...]
    note: str = ""


@dataclass(frozen=True)
class NgramRow:
    """An n-gram with its count in A and in B and ``log_ratio = log((count_a + alpha) / (count_b + alpha))``."""

    ngram: str
    order: int
    count_a: int
    count_b: int
    log_ratio: float


@dataclass(frozen=True)
class NgramList:
    """Top n-grams of one kind (``match``: produced correctly; ``over``: over-produced) in favour of one system
    (``favours``: ``a`` or ``b``; for ``over`` the system that over-produces them)."""

    kind: str
    favours: str
    rows: tuple[NgramRow, ...]


@dataclass(frozen=True)
class Example:
    """One segment shown side by side: sentence BLEU of A and B (``delta = b - a``), the reference length that
    buckets it, the texts, and each output as ``(word, differs)`` pairs (``differs``: the word is not part of
    what the two outputs share, by a word diff). ``human_a``/``human_b``: human scores (NaN when not judged)."""

    seg_id: int
    ref_len: int
    sentence_a: float
    sentence_b: float
    source: str | None
    references: tuple[str | None, ...]
    words_a: tuple[tuple[str, bool], ...]
    words_b: tuple[tuple[str, bool], ...]
    human_a: float = NAN
    human_b: float = NAN

    @property
    def delta(self) -> float:
        return self.sentence_b - self.sentence_a

    @property
    def output_a(self) -> str:
        return " ".join(w for w, _ in self.words_a)

    @property
    def output_b(self) -> str:
        return " ".join(w for w, _ in self.words_b)


@dataclass(frozen=True)
class ExampleList:
    """Examples of one kind: ``b_better``, ``a_better`` (by sentence BLEU) or ``disagree`` (BLEU and the human
    scores prefer different systems)."""

    key: str
    items: tuple[Example, ...]


@dataclass(frozen=True)
class SystemSummary:
    """One side of the comparison: its corpus BLEU (``score``, signature with the bootstrap fields) and its
    bootstrap interval; ``human``: mean human score on the segments judged for both systems (NaN without)."""

    name: str
    version: str | None
    sha256: str
    score: BleuScore
    ci_low: float
    ci_high: float
    human: float = NAN

    @property
    def label(self) -> str:
        """``NAME@VERSION`` or ``NAME``."""
        return self.name if self.version is None else f"{self.name}@{self.version}"


@dataclass(frozen=True)
class HumanComparison:
    """The human-score side: ``name`` of the kind, segments judged for both systems, the paired test of the
    means, the buckets, and where BLEU and the humans disagree most."""

    name: str
    n_judged: int
    overall: PairedRow
    by_length: BucketGroup
    by_sentence_bleu: BucketGroup
    disagreements: ExampleList


@dataclass(frozen=True)
class ComparisonResult:
    """Everything :func:`compare_systems` found; read-only (tables, JSON and the page only read it).

    ``headline``: the corpus-BLEU paired test (``bucket`` = ``all``). ``signature``: the BLEU signature with the
    bootstrap fields (``bs``, ``seed``). ``frequency_source``: ``reference`` or the training corpus's name.
    """

    a: SystemSummary
    b: SystemSummary
    n_segments: int
    ref_names: tuple[str, ...]
    options: BleuOptions
    signature: str
    n_samples: int
    seed: int | None
    headline: PairedRow
    by_length: BucketGroup
    by_sentence_bleu: BucketGroup
    by_frequency: BucketGroup
    precisions: BucketGroup
    ngrams: tuple[NgramList, ...]
    examples: tuple[ExampleList, ...]
    human: HumanComparison | None
    frequency_source: str
    has_source: bool
    dataset: str = ""
    refset: str = ""
    variant: str = ""
    top: int = DEFAULT_TOP
    ngram_alpha: float = NGRAM_ALPHA

    @property
    def groups(self) -> tuple[BucketGroup, ...]:
        """Every breakdown in display order (BLEU ones, words, precisions, then the human ones)."""
        out = [self.by_length, self.by_sentence_bleu, self.by_frequency, self.precisions]
        if self.human is not None:
            out += [self.human.by_length, self.human.by_sentence_bleu]
        return tuple(out)

    @property
    def significant(self) -> bool:
        """sacrebleu's star: ``p <= 0.05``."""
        return not self.headline.p_value > ALPHA


@dataclass(frozen=True, eq=False)
class Side:
    """One system as input: its ``name`` (and ``version``), output ``lines``, statistics against the references
    of the comparison, the hash of its text, and its per-segment human scores (higher is better, NaN where not
    judged) or None."""

    name: str
    lines: Sequence[str]
    stats: SegmentStats
    version: str | None = None
    sha256: str = ""
    human: FloatArray | None = None

    @property
    def label(self) -> str:
        return self.name if self.version is None else f"{self.name}@{self.version}"


# --------------------------------------------------------------------------------------------------------------
# Buckets
# --------------------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------------------
# Paired tests of one metric (the one resampling engine, through harness.core.significance)
# --------------------------------------------------------------------------------------------------------------


def _ratio(sums: Any) -> FloatArray:
    """``100 * num / den`` of summed ``[num, den]`` statistics per system slot (NaN where ``den = 0``)."""
    s = np.asarray(sums, dtype=np.float64)
    num, den = s[..., 0], s[..., 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, 100.0 * num / np.where(den > 0, den, 1.0), NAN)


def _mean(sums: Any) -> FloatArray:
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
    resamples shared by all rows, the paired test of each row's A and B (:func:`~harness.core.significance.compare`
    with pairs ``(2r, 2r + 1)``: p-values and difference intervals equal a two-system ``paired_test`` with the same
    seed) and each system's interval (:func:`~harness.core.significance.bootstrap_ci`)."""
    systems: list[tuple[str, FloatArray]] = []
    for r in range(len(labels)):
        systems.append((f"a{r}", np.column_stack([num_a[r], den_a[r]])))
        systems.append((f"b{r}", np.column_stack([num_b[r], den_b[r]])))
    if not systems:
        return []
    pairs = [(2 * r, 2 * r + 1) for r in range(len(labels))]
    comps = compare(systems, _ratio, "bs", pairs, n_samples, seed, ci=LEVEL)
    cis = bootstrap_ci(systems, _ratio, n_samples, seed)
    assert isinstance(cis, list)  # a list of (name, stats) gives one interval per system
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


def _take_rows(x: FloatArray, idx: IntArray) -> FloatArray:
    return x[idx]


# --------------------------------------------------------------------------------------------------------------
# Token ids and n-gram counting (vectorised; once, never per resample)
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Stream:
    """Token ids of one stream, flat, with per-segment offsets; absent segments (a missing reference) have no
    tokens and ``present`` false."""

    ids: IntArray
    offsets: IntArray
    present: NDArray[np.bool_]

    @property
    def lengths(self) -> IntArray:
        return np.diff(self.offsets)


def _encode(streams: Sequence[Sequence[Sequence[str] | None]], vocab: dict[str, int]) -> list[_Stream]:
    out = []
    for stream in streams:
        lengths = np.fromiter((0 if seg is None else len(seg) for seg in stream), dtype=np.int64, count=len(stream))
        offsets = np.zeros(len(stream) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        setdefault = vocab.setdefault
        flat = chain.from_iterable(seg for seg in stream if seg is not None)
        ids = np.fromiter((setdefault(t, len(vocab)) for t in flat), dtype=np.int64, count=int(offsets[-1]))
        present = np.fromiter((seg is not None for seg in stream), dtype=bool, count=len(stream))
        out.append(_Stream(ids, offsets, present))
    return out


@dataclass(frozen=True)
class _Ngrams:
    """n-gram ids of every order over several streams: ``gid[n-1]`` (one entry per token position, ``-1`` where
    no n-gram of order n starts) and the ``names`` of the ids of each order (filled lazily)."""

    gid: tuple[IntArray, ...]
    n_ids: tuple[int, ...]
    first_pos: tuple[IntArray, ...]
    tokens: IntArray
    starts: IntArray  # start of each stream in the concatenation


def _ngram_ids(streams: Sequence[_Stream], max_order: int) -> _Ngrams:
    """Ids of the n-grams of orders ``1..max_order`` shared by all streams: order ``n`` pairs the id of the
    ``(n-1)``-gram at a position with the token ``n - 1`` positions later (one ``np.unique`` per order)."""
    tokens = np.concatenate([s.ids for s in streams]) if streams else np.zeros(0, np.int64)
    starts = np.cumsum([0] + [len(s.ids) for s in streams])
    seg_end = np.concatenate([np.repeat(s.offsets[1:], s.lengths) + starts[k] for k, s in enumerate(streams)])
    pos = np.arange(tokens.size, dtype=np.int64)
    vocab_size = int(tokens.max(initial=-1)) + 1
    gids: list[IntArray] = []
    n_ids: list[int] = []
    first: list[IntArray] = []
    uniq, first_at, inv = np.unique(tokens, return_index=True, return_inverse=True)
    gids.append(inv.astype(np.int64).reshape(-1))
    n_ids.append(int(uniq.size))
    first.append(first_at.astype(np.int64))
    for n in range(2, max_order + 1):
        prev = gids[-1]
        valid = (pos + n <= seg_end) & (prev >= 0)
        g = np.full(tokens.size, -1, dtype=np.int64)
        if valid.any():
            p = pos[valid]
            key = prev[p] * max(vocab_size, 1) + tokens[p + n - 1]
            _, first_at, inv = np.unique(key, return_index=True, return_inverse=True)
            g[p] = inv.reshape(-1)
            first.append(p[first_at])
            n_ids.append(int(first_at.size))
        else:
            first.append(np.zeros(0, np.int64))
            n_ids.append(0)
        gids.append(g)
    return _Ngrams(tuple(gids), tuple(n_ids), tuple(first), tokens, starts)


def _segment_counts(ng: _Ngrams, k: int, stream: _Stream, order: int) -> tuple[IntArray, IntArray]:
    """Sorted keys ``seg * n_ids + gid`` and counts of the n-grams of one order in stream ``k``."""
    g = ng.gid[order - 1][ng.starts[k]: ng.starts[k + 1]]
    seg = np.repeat(np.arange(len(stream.present), dtype=np.int64), stream.lengths)
    ok = g >= 0
    keys = seg[ok] * max(ng.n_ids[order - 1], 1) + g[ok]
    uniq, counts = np.unique(keys, return_counts=True)
    return uniq, counts.astype(np.int64)


def _max_counts(parts: Sequence[tuple[IntArray, IntArray]]) -> tuple[IntArray, IntArray]:
    """Per key, the maximum count over several (sorted keys, counts) pairs (BLEU's max over references)."""
    keys = np.concatenate([k for k, _ in parts]) if parts else np.zeros(0, np.int64)
    counts = np.concatenate([c for _, c in parts]) if parts else np.zeros(0, np.int64)
    if not keys.size:
        return keys, counts
    order = np.argsort(keys, kind="stable")
    keys, counts = keys[order], counts[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return keys[starts], np.maximum.reduceat(counts, starts)


def _lookup(keys: IntArray, table_keys: IntArray, table_counts: IntArray) -> IntArray:
    """``table_counts`` at ``keys`` (0 where a key is not in the sorted ``table_keys``)."""
    if not table_keys.size:
        return np.zeros(keys.size, dtype=np.int64)
    at = np.minimum(np.searchsorted(table_keys, keys), table_keys.size - 1)
    return np.where(table_keys[at] == keys, table_counts[at], 0)


@dataclass(frozen=True)
class _OrderCounts:
    """Per n-gram id of one order, summed over segments: totals and clipped matches of A and B."""

    total_a: IntArray
    match_a: IntArray
    total_b: IntArray
    match_b: IntArray


def _count_orders(ng: _Ngrams, hyp: Sequence[_Stream], refs: Sequence[_Stream], n_segments: int,
                  stats: Sequence[SegmentStats], names: Sequence[str]) -> list[_OrderCounts]:
    """Clipped matches per n-gram (``min(count_hyp, max_k count_ref_k)`` per segment, summed), checking that the
    per-segment sums equal the BLEU statistics of each hypothesis stream."""
    out = []
    for order in range(1, len(ng.gid) + 1):
        n_ids = max(ng.n_ids[order - 1], 1)
        ref_keys, ref_counts = _max_counts([_segment_counts(ng, len(hyp) + k, s, order) for k, s in enumerate(refs)])
        per: list[IntArray] = []
        for k, stream in enumerate(hyp):
            keys, counts = _segment_counts(ng, k, stream, order)
            match = np.minimum(counts, _lookup(keys, ref_keys, ref_counts))
            seg = keys // n_ids
            seg_match = np.bincount(seg, weights=match, minlength=n_segments).astype(np.int64)
            seg_total = np.bincount(seg, weights=counts, minlength=n_segments).astype(np.int64)
            st = stats[k]
            if order <= st.max_order and (not np.array_equal(seg_total, st.totals[:, order - 1])
                                          or not np.array_equal(seg_match, st.matches[:, order - 1])):
                bad = int(np.flatnonzero((seg_total != st.totals[:, order - 1])
                                         | (seg_match != st.matches[:, order - 1]))[0])
                raise InputError(f"the statistics of system {names[k]!r} do not belong to its text and these "
                                 f"references under the given options (segment {bad}, order {order}: "
                                 f"{seg_match[bad]}/{seg_total[bad]} counted, {st.matches[bad, order - 1]}/"
                                 f"{st.totals[bad, order - 1]} in the statistics)")
            gid = keys % n_ids
            per.append(np.bincount(gid, weights=counts, minlength=n_ids).astype(np.int64))
            per.append(np.bincount(gid, weights=match, minlength=n_ids).astype(np.int64))
        out.append(_OrderCounts(per[0], per[1], per[2], per[3]))
    return out


def _ngram_text(ng: _Ngrams, order: int, gid: int, words: Sequence[str]) -> str:
    p = int(ng.first_pos[order - 1][gid])
    return " ".join(words[int(t)] for t in ng.tokens[p: p + order])


def rank_ngrams(count_a: IntArray, count_b: IntArray, top: int, alpha: float = NGRAM_ALPHA
                ) -> tuple[IntArray, IntArray, FloatArray]:
    """compare-mt's salient n-grams: ``log((c_a + alpha) / (c_b + alpha))`` over ids seen in either system; the
    ``top`` ids in favour of A (largest log ratio first) and of B (smallest first). Ties: the more frequent
    first; ties at the cut are all kept, for the caller to order by text)."""
    seen = np.flatnonzero((count_a + count_b) > 0)
    score = np.log((count_a[seen] + alpha) / (count_b[seen] + alpha))
    freq = count_a[seen] + count_b[seen]
    order_a = np.lexsort((seen, -freq, -score))
    order_b = np.lexsort((seen, -freq, score))
    keep_a = _with_ties(order_a[score[order_a] > 0], score, freq, top)
    keep_b = _with_ties(order_b[score[order_b] < 0], score, freq, top)
    full = np.full(count_a.size, NAN)
    full[seen] = score
    return seen[keep_a], seen[keep_b], full


def _with_ties(ranked: IntArray, score: FloatArray, freq: IntArray, top: int) -> IntArray:
    """The first ``top`` of ``ranked``, and every later one tied with the last of them on (score, frequency), so a
    final sort by text can pick among ties independently of the ids."""
    if ranked.size <= top:
        return ranked
    last = ranked[top - 1]
    k = top
    while k < ranked.size and score[ranked[k]] == score[last] and freq[ranked[k]] == freq[last]:
        k += 1
    return ranked[:k]


def _ngram_lists(ng: _Ngrams, counts: Sequence[_OrderCounts], words: Sequence[str], top: int, alpha: float
                 ) -> tuple[NgramList, ...]:
    """The four compare-mt lists (matches and over-productions, each direction), all orders ranked together:
    one ranking over the n-grams of every order, text built only for the top ones and the ties at the cut."""
    out = []
    orders = np.concatenate([np.full(len(c.total_a), n, dtype=np.int64) for n, c in enumerate(counts, start=1)])
    gids = np.concatenate([np.arange(len(c.total_a), dtype=np.int64) for c in counts])
    for kind in ("match", "over"):
        ca = np.concatenate([c.match_a if kind == "match" else c.total_a - c.match_a for c in counts])
        cb = np.concatenate([c.match_b if kind == "match" else c.total_b - c.match_b for c in counts])
        ids_a, ids_b, score = rank_ngrams(ca, cb, top, alpha)
        for side, ids in (("a", ids_a), ("b", ids_b)):
            rows = [NgramRow(_ngram_text(ng, int(orders[i]), int(gids[i]), words), int(orders[i]), int(ca[i]),
                             int(cb[i]), float(score[i])) for i in ids]
            sign = -1.0 if side == "a" else 1.0
            rows.sort(key=lambda r: (sign * r.log_ratio, -(r.count_a + r.count_b), r.ngram))
            out.append(NgramList(kind, side, tuple(rows[:top])))
    return tuple(out)


# --------------------------------------------------------------------------------------------------------------
# Words by frequency (compare-mt's FreqWordBucketer, one reference)
# --------------------------------------------------------------------------------------------------------------


def word_counts(lines: Sequence[str], opts: BleuOptions) -> Counter[str]:
    """Word frequencies of a corpus (e.g. the training data) under the options' case and tokenizer, so they
    count the same words the comparison sees."""
    return Counter(chain.from_iterable(case_and_tokenize(list(lines), opts.resolved())))


def _primary_tokens(refs: Sequence[Sequence[Sequence[str] | None]]) -> list[Sequence[str]]:
    """Per segment, the tokens of the first present reference."""
    out: list[Sequence[str]] = []
    for i in range(len(refs[0])):
        out.append(next(seg for seg in (r[i] for r in refs) if seg is not None))
    return out


def _word_buckets(tok_a: Sequence[Sequence[str]], tok_b: Sequence[Sequence[str]],
                  refs: Sequence[Sequence[Sequence[str] | None]], freq: Mapping[str, int], n_samples: int,
                  seed: int | None, source: str, labels_ab: tuple[str, str]) -> BucketGroup:
    labels = bucket_labels(FREQUENCY_CUTOFFS)
    nb = len(labels)
    vocab: dict[str, int] = {}
    primary = _primary_tokens(refs)
    sa, sb, sr = _encode([tok_a, tok_b, primary], vocab)
    words = list(vocab)
    bucket = bucket_of(np.fromiter((freq.get(w, 0) for w in words), dtype=np.int64, count=len(words)),
                       FREQUENCY_CUTOFFS)
    n = len(tok_a)
    v = max(len(words), 1)

    def per_segment(stream: _Stream) -> tuple[IntArray, IntArray]:
        seg = np.repeat(np.arange(n, dtype=np.int64), stream.lengths)
        keys, counts = np.unique(seg * v + stream.ids, return_counts=True)
        return keys, counts.astype(np.int64)

    def by_bucket(keys: IntArray, weights: IntArray) -> IntArray:
        flat = (keys // v) * nb + bucket[keys % v]
        return np.bincount(flat, weights=weights, minlength=n * nb).astype(np.int64).reshape(n, nb)

    rk, rc = per_segment(sr)
    ref_total = by_bucket(rk, rc)
    sides = []
    for stream in (sa, sb):
        k, c = per_segment(stream)
        m = np.minimum(c, _lookup(k, rk, rc))
        sides.append((by_bucket(k, c), by_bucket(k, m)))
    (out_a, match_a), (out_b, match_b) = sides
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


# --------------------------------------------------------------------------------------------------------------
# Examples
# --------------------------------------------------------------------------------------------------------------


def word_diff(a: str, b: str) -> tuple[tuple[tuple[str, bool], ...], tuple[tuple[str, bool], ...]]:
    """Both outputs as ``(word, differs)`` pairs: a word differs when it is not in a block the two share
    (``difflib.SequenceMatcher`` over whitespace-split words, no junk heuristic)."""
    wa, wb = a.split(), b.split()
    da, db = [True] * len(wa), [True] * len(wb)
    for block in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            da[block.a + k] = False
            db[block.b + k] = False
    return tuple(zip(wa, da)), tuple(zip(wb, db))


def _example(i: int, a: Side, b: Side, sa: FloatArray, sb: FloatArray, ref_len: IntArray,
             refs: Sequence[Sequence[str | None]], source: Sequence[str] | None) -> Example:
    wa, wb = word_diff(a.lines[i], b.lines[i])
    ha = NAN if a.human is None else float(a.human[i])
    hb = NAN if b.human is None else float(b.human[i])
    return Example(i, int(ref_len[i]), float(sa[i]), float(sb[i]), None if source is None else source[i],
                   tuple(r[i] for r in refs), wa, wb, ha, hb)


def _top(values: FloatArray, k: int, mask: NDArray[np.bool_]) -> IntArray:
    """Indices of the ``k`` largest ``values`` where ``mask`` (ties: lower index first)."""
    idx = np.flatnonzero(mask)
    order = np.lexsort((idx, -values[idx]))
    return idx[order[:k]]


# --------------------------------------------------------------------------------------------------------------
# The analysis
# --------------------------------------------------------------------------------------------------------------


def _check_inputs(a: Side, b: Side, references: Sequence[Sequence[str | None]], source: Sequence[str] | None,
                  opts: BleuOptions) -> None:
    if not get_profile(opts.profile).additive:
        raise ConfigError("profile", f"profile {opts.profile!r} is not a function of summed statistics, so its "
                          "buckets cannot be resampled; compare with another profile",
                          [p for p in ("sacrebleu", "hf", "multi-bleu", "mteval-v13a")], got=opts.profile)
    n = len(a.lines)
    if n == 0:
        raise InputError("no segments to compare")
    if a.label == b.label:
        raise ConfigError("systems", f"a system cannot be compared with itself ({a.label!r} twice)", got=a.label)
    for side in (a, b):
        if len(side.lines) != n or len(side.stats) != n:
            raise InputError(f"system {side.label!r} has {len(side.lines)} lines and {len(side.stats)} segments of "
                             f"statistics; expected {n} like {a.label!r}")
        if side.human is not None and len(side.human) != n:
            raise InputError(f"human scores of {side.label!r} cover {len(side.human)} segments, expected {n}")
        if side.stats.max_order < opts.max_ngram_order:
            raise InputError(f"statistics of {side.label!r} have orders 1..{side.stats.max_order}, the options need "
                             f"{opts.max_ngram_order}")
    if not references:
        raise InputError("no references")
    for k, stream in enumerate(references):
        if len(stream) != n:
            raise InputError(f"reference stream {k} has {len(stream)} segments, expected {n}")
    if any(None in stream for stream in references):
        for i in range(n):
            if all(stream[i] is None for stream in references):
                raise InputError(f"segment {i} has no reference (every stream is None there)")
    if source is not None and len(source) != n:
        raise InputError(f"the source has {len(source)} lines, expected {n}")


def compare_systems(a: Side, b: Side, references: Sequence[Sequence[str | None]], opts: BleuOptions, *,
                    ref_names: Sequence[str] = (), source: Sequence[str] | None = None,
                    human_name: str | None = None, train_counts: Mapping[str, int] | None = None,
                    train_name: str = "training corpus", n_samples: int = DEFAULT_SAMPLES,
                    seed: int | None = DEFAULT_SEED, top: int = DEFAULT_TOP, n_examples: int = DEFAULT_EXAMPLES,
                    dataset: str = "", refset: str = "", variant: str = "",
                    sentence_opts: BleuOptions | None = None) -> ComparisonResult:
    """Compare system B with system A (see the module docstring): ``references`` are reference streams
    (``references[k][i]``, None = absent) that both systems' ``stats`` were counted against under ``opts``;
    ``source`` the source lines or None; ``train_counts`` word frequencies of a training corpus (else the
    first reference's); ``sentence_opts`` the options of the sentence BLEU of buckets and examples (default
    :func:`~harness.core.options.sentence_options` of ``opts``: WMT's sentBLEU). Seeded: the same inputs and seed
    give the same result."""
    opts = opts.resolved()
    sent = sentence_options(opts) if sentence_opts is None else sentence_opts
    n_samples = check_n_samples(n_samples)
    seed = check_seed(seed)
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ConfigError("top", f"must be a positive integer, got {top!r}", got=top)
    if isinstance(n_examples, bool) or not isinstance(n_examples, int) or n_examples < 0:
        raise ConfigError("examples", f"must be a non-negative integer, got {n_examples!r}", got=n_examples)
    _check_inputs(a, b, references, source, opts)
    n = len(a.lines)
    order = opts.max_ngram_order
    st_a, st_b = a.stats.truncate_order(order), b.stats.truncate_order(order)
    if not np.array_equal(st_a.ref_lens, st_b.ref_lens):
        raise InputError(f"systems {a.label!r} and {b.label!r} were not scored against the same references "
                         "(their reference lengths differ)")
    fn = score_fn(opts)
    extra = signature_extra("bs", n_samples, seed)

    # 1. headline
    headline = paired_row("all", st_a, st_b, fn, n_samples, seed)
    score_a, score_b = corpus_score(st_a, opts, extra), corpus_score(st_b, opts, extra)

    # 2. BLEU buckets (sub-test-sets)
    ref_len = primary_ref_len(st_a)
    sa = np.asarray(sentence_scores(st_a, sent).score, dtype=np.float64)
    sb = np.asarray(sentence_scores(st_b, sent).score, dtype=np.float64)
    len_bucket = bucket_of(ref_len, LENGTH_CUTOFFS)
    bleu_bucket = bucket_of(sa, SENTENCE_BLEU_CUTOFFS)
    len_labels, bleu_labels = bucket_labels(LENGTH_CUTOFFS), bucket_labels(SENTENCE_BLEU_CUTOFFS)
    by_length = BucketGroup(
        "length", "BLEU by reference length", "bleu",
        tuple(subset_rows(len_labels, len_bucket, st_a, st_b, _take_stats, fn, n_samples, seed)),
        "Segments bucketed by the length in tokens of their first reference (compare-mt's buckets); each bucket's "
        "BLEU is corpus BLEU of its segments (sacrebleu on those segments) and its test resamples them.")
    by_bleu = BucketGroup(
        "sentence_bleu", f"BLEU by sentence BLEU of {a.label}", "bleu",
        tuple(subset_rows(bleu_labels, bleu_bucket, st_a, st_b, _take_stats, fn, n_samples, seed)),
        f"Segments bucketed by the sentence BLEU of {a.label} (compare-mt's buckets, one system's, so both systems "
        f"are scored on the same segments). Selecting by {a.label}'s own scores favours {b.label} in the low "
        f"buckets and {a.label} in the high ones (regression to the mean).")

    # tokens, once: n-grams of every order, word buckets
    tok_a = case_and_tokenize(list(a.lines), opts)
    tok_b = case_and_tokenize(list(b.lines), opts)
    tok_refs: list[list[Sequence[str] | None]] = []
    for stream in references:
        present = [line for line in stream if line is not None]
        it = iter(case_and_tokenize(present, opts))
        tok_refs.append([None if line is None else next(it) for line in stream])
    vocab: dict[str, int] = {}
    streams = _encode([tok_a, tok_b, *tok_refs], vocab)
    ng = _ngram_ids(streams, order)
    counts = _count_orders(ng, streams[:2], streams[2:], n, [st_a, st_b], [a.label, b.label])
    ngram_lists = _ngram_lists(ng, counts, list(vocab), top, NGRAM_ALPHA)

    if train_counts is not None:
        freq, freq_source = train_counts, train_name
    else:  # compare-mt counts in the reference it matches against (counting every reference would mix them)
        freq, freq_source = Counter(chain.from_iterable(_primary_tokens(tok_refs))), "reference"
    by_freq = _word_buckets(tok_a, tok_b, tok_refs, freq, n_samples, seed, freq_source, (a.label, b.label))

    f = np.float64
    prec_rows = ratio_rows([f"{k}-gram" for k in range(1, order + 1)], st_a.matches.T.astype(f),
                           st_a.totals.T.astype(f), st_b.matches.T.astype(f), st_b.totals.T.astype(f), n_samples,
                           seed)
    precisions = BucketGroup("precision", "n-gram precision by order", "precision", tuple(prec_rows),
                             "Modified (clipped) n-gram precision of the whole test set, 100 x matches / "
                             "hypothesis n-grams, unsmoothed.")

    # 4. examples
    delta = sb - sa
    examples = (
        ExampleList("b_better", tuple(_example(int(i), a, b, sa, sb, ref_len, references, source)
                                      for i in _top(delta, n_examples, delta > 0))),
        ExampleList("a_better", tuple(_example(int(i), a, b, sa, sb, ref_len, references, source)
                                      for i in _top(-delta, n_examples, delta < 0))),
    )

    # 5. human scores
    human = None
    human_a = human_b = NAN
    if a.human is not None and b.human is not None:
        judged = np.isfinite(a.human) & np.isfinite(b.human)
        if judged.any():
            human = _human(a, b, judged, len_bucket, bleu_bucket, len_labels, bleu_labels, sa, sb, ref_len,
                           references, source, human_name or "human", n_samples, seed, n_examples)
            human_a, human_b = human.overall.a, human.overall.b

    return ComparisonResult(
        SystemSummary(a.name, a.version, a.sha256, score_a, headline.a_low, headline.a_high, human_a),
        SystemSummary(b.name, b.version, b.sha256, score_b, headline.b_low, headline.b_high, human_b),
        n, tuple(ref_names) or tuple(f"ref{k}" for k in range(len(references))), opts, score_a.signature,
        n_samples, seed, headline, by_length, by_bleu, by_freq, precisions, ngram_lists, examples, human,
        freq_source, source is not None, dataset, refset, variant, top, NGRAM_ALPHA)


def _human(a: Side, b: Side, judged: NDArray[np.bool_], len_bucket: IntArray, bleu_bucket: IntArray,
           len_labels: Sequence[str], bleu_labels: Sequence[str], sa: FloatArray, sb: FloatArray, ref_len: IntArray,
           references: Sequence[Sequence[str | None]], source: Sequence[str] | None, name: str, n_samples: int,
           seed: int | None, n_examples: int) -> HumanComparison:
    """Mean human scores (segments judged for both) overall and by bucket, and the BLEU-vs-human disagreements."""
    assert a.human is not None and b.human is not None
    ones = np.ones(len(judged))
    xa = np.column_stack([np.where(judged, a.human, 0.0), ones])
    xb = np.column_stack([np.where(judged, b.human, 0.0), ones])
    idx = np.flatnonzero(judged)
    overall = paired_row("all", xa[idx], xb[idx], _mean, n_samples, seed)
    note = f"Mean {name} score (higher is better) on the segments judged for both systems, by the buckets above."
    by_len = BucketGroup("human_length", f"{name} by reference length", "human",
                         tuple(subset_rows(len_labels, np.where(judged, len_bucket, -1), xa, xb, _take_rows, _mean,
                                           n_samples, seed)), note)
    by_bleu = BucketGroup("human_sentence_bleu", f"{name} by sentence BLEU of {a.label}", "human",
                          tuple(subset_rows(bleu_labels, np.where(judged, bleu_bucket, -1), xa, xb, _take_rows,
                                            _mean, n_samples, seed)), note)
    # Disagreement: BLEU and the humans prefer different systems; ranked by the product of the two standardised
    # differences, so a segment ranks high when both disagree strongly.
    d_bleu = sb - sa
    d_human = np.where(judged, b.human - a.human, 0.0)
    sd_bleu = float(np.std(d_bleu[judged])) or 1.0
    sd_human = float(np.std(d_human[judged])) or 1.0
    strength = -(d_bleu / sd_bleu) * (d_human / sd_human)
    mask = judged & (np.sign(d_bleu) * np.sign(d_human) < 0)
    items = tuple(_example(int(i), a, b, sa, sb, ref_len, references, source) for i in _top(strength, n_examples, mask))
    return HumanComparison(name, int(judged.sum()), overall, by_len, by_bleu, ExampleList("disagree", items))


def compare_job(stats_a: SegmentStats, stats_b: SegmentStats, text_a: TextFile, text_b: TextFile,
                refs: Sequence[TextFile], source: TextFile | None, human: HumanScores | None, opts: BleuOptions, *,
                seed: int | None = DEFAULT_SEED, n_samples: int = DEFAULT_SAMPLES, label_a: str | None = None,
                label_b: str | None = None, train_counts: Mapping[str, int] | None = None,
                train_name: str = "training corpus", top: int = DEFAULT_TOP, n_examples: int = DEFAULT_EXAMPLES,
                dataset: str = "", refset: str = "", variant: str = "", human_name: str | None = None,
                sentence_opts: BleuOptions | None = None) -> ComparisonResult:
    """The comparison of a harness job (or ``harness-compare``): the job's already-computed statistics of the two
    systems against ``refs`` (in that order, under ``opts``), their texts, the source or None, and one kind of
    human scores or None (looked up by ``label_a``/``label_b``, ``NAME@VERSION``, default the texts' names;
    oriented so that higher is better; ``human_name`` is its display name, default the kind's name). Versions are
    taken from the labels (``NAME@VERSION``)."""
    la, lb = label_a or text_a.name, label_b or text_b.name
    oriented = None if human is None else human.oriented()

    def side(label: str, text: TextFile, stats: SegmentStats) -> Side:
        name, at, version = label.partition("@")
        seg = None if oriented is None else oriented.seg.get(label)
        return Side(name if at else label, text.lines, stats, version if at else None, text.sha256,
                    None if seg is None else np.asarray(seg, dtype=np.float64))

    return compare_systems(side(la, text_a, stats_a), side(lb, text_b, stats_b), [r.lines for r in refs], opts,
                           ref_names=[r.name for r in refs], source=None if source is None else source.lines,
                           human_name=None if human is None else (human_name or human.name),
                           train_counts=train_counts,
                           train_name=train_name, n_samples=n_samples, seed=seed, top=top, n_examples=n_examples,
                           dataset=dataset, refset=refset, variant=variant, sentence_opts=sentence_opts)


# --------------------------------------------------------------------------------------------------------------
# Which pair, and the files of a comparison
# --------------------------------------------------------------------------------------------------------------

_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]+")


def choose_pair(items: Sequence[str], systems: Sequence[tuple[str, str]], where: str,
                key: str = "systems") -> tuple[str, str]:
    """The two systems to compare: ``[A, B]`` (each ``NAME@VERSION``, or ``NAME`` when it has one version), or
    ``[NAME]`` for the last two versions of ``NAME``. ``systems``: the ``(label, name)`` of every system there is,
    versions in their order (natural order of ``systems/NAME@VERSION.txt``); ``where`` names them in errors and
    ``key`` is the option that asked."""
    labels = [label for label, _ in systems]
    if len(items) == 1:
        versions = [label for label, name in systems if name == items[0]]
        if len(versions) < 2:
            raise ConfigError(key, f"{items[0]!r} has {len(versions)} version(s) in {where}; one NAME compares its "
                              "last two versions (systems/NAME@VERSION.txt), else give two systems", labels,
                              got=items[0])
        return versions[-2], versions[-1]
    if len(items) != 2:
        raise ConfigError(key, f"expected two systems (A B) or one NAME with versions, got {len(items)}", labels)
    out = []
    for item in items:
        if item in labels:
            out.append(item)
            continue
        versions = [label for label, name in systems if name == item]
        if versions:
            raise ConfigError(key, f"{item!r} has several versions; name one (NAME@VERSION)", versions, got=item)
        raise ConfigError(key, f"unknown system {item!r} in {where}", labels, got=item)
    if out[0] == out[1]:
        raise ConfigError(key, f"{out[0]!r} is given twice; a system cannot be compared with itself")
    return out[0], out[1]


def page_name(label_a: str, label_b: str) -> str:
    """``compare-A-vs-B.html`` (labels made safe for a file name)."""
    safe = [_UNSAFE.sub("_", x).strip("._") or "system" for x in (label_a, label_b)]
    return f"compare-{safe[0]}-vs-{safe[1]}.html"


def table_files(page: str) -> dict[str, str]:
    """``<page stem>.<table>.parquet`` for every comparison table of the page ``page`` (a file name)."""
    stem = page.rsplit(".", 1)[0]
    return {name: f"{stem}.{name}.parquet" for name in TABLE_NAMES}


def table_metadata(result: ComparisonResult, page: str) -> dict[str, str]:
    """The Parquet schema metadata of a comparison's tables: the signature, the resampling, the pair, the page."""
    return {"signature": result.signature, "seed": str(result.seed), "n_samples": str(result.n_samples),
            "system_a": result.a.label, "system_b": result.b.label, "page": page}


# --------------------------------------------------------------------------------------------------------------
# Tables and JSON (read the result only)
# --------------------------------------------------------------------------------------------------------------

#: The tables of a comparison: ``<page stem>.<name>.parquet``.
TABLE_NAMES: tuple[str, ...] = ("systems", "buckets", "ngrams", "examples")


def _none(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else float(x)


def _pair_columns(result: ComparisonResult) -> dict[str, str]:
    return {"dataset": result.dataset, "refset": result.refset, "variant": result.variant,
            "system_a": result.a.name, "system_version_a": result.a.version or "",
            "system_b": result.b.name, "system_version_b": result.b.version or ""}


def _row_dict(group: str, title: str, metric: str, position: int, row: PairedRow) -> dict[str, Any]:
    w = row.words
    return {"group": group, "title": title, "metric": metric, "position": position, "bucket": row.bucket,
            "n_segments": row.n_segments, "value_a": _none(row.a), "value_b": _none(row.b),
            "ci_low_a": _none(row.a_low), "ci_high_a": _none(row.a_high), "ci_low_b": _none(row.b_low),
            "ci_high_b": _none(row.b_high), "delta": _none(row.delta), "ci_low": _none(row.delta_low),
            "ci_high": _none(row.delta_high), "p_value": _none(row.p_value),
            "ref_words": None if w is None else w.ref, "words_a": None if w is None else w.out_a,
            "words_b": None if w is None else w.out_b, "matched_a": None if w is None else w.matched_a,
            "matched_b": None if w is None else w.matched_b}


def bucket_records(result: ComparisonResult) -> list[dict[str, Any]]:
    """Every paired row: the headline (group ``overall``), the BLEU buckets, words, precisions, human buckets."""
    out = [_row_dict("overall", "Corpus BLEU", "bleu", 0, result.headline)]
    if result.human is not None:
        out.append(_row_dict("human_overall", f"Mean {result.human.name}", "human", 0, result.human.overall))
    for g in result.groups:
        out += [_row_dict(g.key, g.title, g.metric, i, r) for i, r in enumerate(g.rows)]
    return out


def _system_dict(side: str, s: SystemSummary, result: ComparisonResult) -> dict[str, Any]:
    sc = s.score
    return {"side": side, "system": s.name, "system_version": s.version or "", "bleu": sc.score,
            "ci_low": _none(s.ci_low), "ci_high": _none(s.ci_high), "precisions": list(sc.precisions), "bp": sc.bp,
            "ratio": sc.ratio, "hyp_len": float(sc.hyp_len), "ref_len": float(sc.ref_len), "counts": list(sc.counts),
            "totals": list(sc.totals), "signature": sc.signature, "sha256": s.sha256, "human": _none(s.human),
            "n_segments": result.n_segments}


def _example_dict(lst: str, rank: int, e: Example) -> dict[str, Any]:
    return {"list": lst, "rank": rank, "seg_id": e.seg_id, "ref_len": e.ref_len, "sentence_bleu_a": e.sentence_a,
            "sentence_bleu_b": e.sentence_b, "delta": e.delta, "human_a": _none(e.human_a),
            "human_b": _none(e.human_b), "source": e.source, "references": list(e.references),
            "output_a": e.output_a, "output_b": e.output_b, "differs_a": [d for _, d in e.words_a],
            "differs_b": [d for _, d in e.words_b]}


def example_lists(result: ComparisonResult) -> tuple[ExampleList, ...]:
    """The example lists in display order (the human disagreements last, when there are human scores)."""
    return result.examples + ((result.human.disagreements,) if result.human is not None else ())


def comparison_tables(result: ComparisonResult) -> dict[str, Any]:
    """The numbers of the page as Arrow tables (:data:`TABLE_NAMES`): ``systems`` (one row per side),
    ``buckets`` (every paired row, long format: ``group``, ``bucket``, ``value_a``/``value_b`` with their
    intervals, ``delta`` = b - a with ``ci_low``/``ci_high`` and ``p_value``), ``ngrams`` and ``examples``;
    every row carries ``system_a``/``system_b`` and their versions."""
    import pyarrow as pa

    pair = _pair_columns(result)

    def table(rows: list[dict[str, Any]], schema: list[tuple[str, Any]]) -> Any:
        cols = {k: [r[k] for r in rows] for k, _ in schema}
        fields = [pa.field(k, t) for k, t in schema]
        lead = {k: pa.array([v] * len(rows), pa.string()) for k, v in pair.items()}
        body = {k: pa.array(cols[k], t) for k, t in schema}
        return pa.Table.from_pydict({**lead, **body}, schema=pa.schema(
            [pa.field(k, pa.string()) for k in pair] + fields))

    f64, i64, s = pa.float64(), pa.int64(), pa.string()
    systems = [_system_dict("a", result.a, result), _system_dict("b", result.b, result)]
    system_schema = [("side", s), ("system", s), ("system_version", s), ("bleu", f64), ("ci_low", f64),
                     ("ci_high", f64), ("precisions", pa.list_(f64)), ("bp", f64), ("ratio", f64),
                     ("hyp_len", f64), ("ref_len", f64), ("counts", pa.list_(i64)), ("totals", pa.list_(i64)),
                     ("signature", s), ("sha256", s), ("human", f64), ("n_segments", i64)]
    bucket_schema = [("group", s), ("title", s), ("metric", s), ("position", i64), ("bucket", s),
                     ("n_segments", i64), ("value_a", f64), ("value_b", f64), ("ci_low_a", f64), ("ci_high_a", f64),
                     ("ci_low_b", f64), ("ci_high_b", f64), ("delta", f64), ("ci_low", f64), ("ci_high", f64),
                     ("p_value", f64), ("ref_words", i64), ("words_a", i64), ("words_b", i64), ("matched_a", i64),
                     ("matched_b", i64)]
    ngram_rows = [{"kind": lst.kind, "favours": result.a.label if lst.favours == "a" else result.b.label,
                   "favours_side": lst.favours, "rank": i, "ngram": r.ngram, "order": r.order,
                   "count_a": r.count_a, "count_b": r.count_b, "log_ratio": r.log_ratio}
                  for lst in result.ngrams for i, r in enumerate(lst.rows, start=1)]
    ngram_schema = [("kind", s), ("favours", s), ("favours_side", s), ("rank", i64), ("ngram", s), ("order", i64),
                    ("count_a", i64), ("count_b", i64), ("log_ratio", f64)]
    example_rows = [_example_dict(lst.key, i, e) for lst in example_lists(result)
                    for i, e in enumerate(lst.items, start=1)]
    example_schema = [("list", s), ("rank", i64), ("seg_id", i64), ("ref_len", i64), ("sentence_bleu_a", f64),
                      ("sentence_bleu_b", f64), ("delta", f64), ("human_a", f64), ("human_b", f64), ("source", s),
                      ("references", pa.list_(s)), ("output_a", s), ("output_b", s),
                      ("differs_a", pa.list_(pa.bool_())), ("differs_b", pa.list_(pa.bool_()))]
    return {"systems": table(systems, system_schema), "buckets": table(bucket_records(result), bucket_schema),
            "ngrams": table(ngram_rows, ngram_schema), "examples": table(example_rows, example_schema)}


def to_json(result: ComparisonResult) -> dict[str, Any]:
    """The numbers as JSON-ready values (NaN -> null): systems, the headline test, every bucket group, the n-gram
    lists and the examples."""
    def group(g: BucketGroup) -> dict[str, Any]:
        return {"key": g.key, "title": g.title, "metric": g.metric, "note": g.note,
                "rows": [{k: v for k, v in _row_dict(g.key, g.title, g.metric, i, r).items()
                          if k not in ("group", "title", "metric")} for i, r in enumerate(g.rows)]}

    head = _row_dict("overall", "Corpus BLEU", "bleu", 0, result.headline)
    out: dict[str, Any] = {
        **_pair_columns(result),
        "n_segments": result.n_segments,
        "references": list(result.ref_names),
        "signature": result.signature,
        "n_samples": result.n_samples,
        "seed": result.seed,
        "systems": [_system_dict("a", result.a, result), _system_dict("b", result.b, result)],
        "paired_bs": {"delta": head["delta"], "ci_low": head["ci_low"], "ci_high": head["ci_high"],
                      "p_value": head["p_value"], "significant": result.significant},
        "frequency_source": result.frequency_source,
        "groups": [group(g) for g in result.groups],
        "ngrams": [{"kind": lst.kind, "favours": result.a.label if lst.favours == "a" else result.b.label,
                    "rows": [{"ngram": r.ngram, "order": r.order, "count_a": r.count_a, "count_b": r.count_b,
                              "log_ratio": r.log_ratio} for r in lst.rows]} for lst in result.ngrams],
        "examples": {lst.key: [_example_dict(lst.key, i, e) for i, e in enumerate(lst.items, start=1)]
                     for lst in example_lists(result)},
        "human": None,
    }
    if result.human is not None:
        h = _row_dict("human_overall", "", "human", 0, result.human.overall)
        out["human"] = {"name": result.human.name, "n_judged": result.human.n_judged,
                        "mean_a": h["value_a"], "mean_b": h["value_b"], "delta": h["delta"],
                        "ci_low": h["ci_low"], "ci_high": h["ci_high"], "p_value": h["p_value"]}
    return out
