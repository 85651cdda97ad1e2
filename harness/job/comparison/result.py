"""What a comparison finds: immutable results (tables, JSON, LaTeX and the page only read them), and the conventions
they follow (compare-mt's bucket cutoffs and n-gram smoothing, the interval level, sacrebleu's star).

Two systems give a :class:`ComparisonResult` (B against A). More give a :class:`ComparisonSet`: the first system is
the baseline, and the set holds one :class:`ComparisonResult` per other system (baseline against it, the numbers a
two-system comparison of that pair gives) and every breakdown with all systems side by side
(:class:`BucketTable`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...core.bleu import BleuScore
from ...core.options import BleuOptions

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: compare-mt ``LengthSentenceBucketer`` default cutoffs (tokens of the reference).
LENGTH_CUTOFFS: tuple[int, ...] = (10, 20, 30, 40, 50, 60)
#: compare-mt ``ScoreSentenceBucketer`` default cutoffs for BLEU on the 0-100 scale.
SENTENCE_BLEU_CUTOFFS: tuple[int, ...] = (10, 20, 30, 40, 50, 60, 70, 80, 90)
#: compare-mt ``LengthDiffSentenceBucketer`` default cutoffs: ``len(output) - len(reference)`` in tokens.
LENGTH_DIFF_CUTOFFS: tuple[int, ...] = (-20, -10, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 11, 21)
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

    Buckets of each system's own segments (by length difference) are not paired: ``n_segments`` counts A's
    segments in the bucket and ``n_segments_b`` B's, each value and interval is over the system's own segments
    (NaN without any), and there is no difference (``delta`` .. ``p_value`` NaN).
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
    n_segments_b: int | None = None

    @property
    def paired(self) -> bool:
        """Both systems on the same segments (every bucket but those of each system's own segments)."""
        return self.n_segments_b is None


@dataclass(frozen=True)
class BucketGroup:
    """Rows of one breakdown (``key``: ``length``, ``length_diff``, ``sentence_bleu``, ``word_frequency``,
    ``precision``, ``human_length``, ``human_sentence_bleu``), the ``metric`` they show (``bleu``, ``f_measure``,
    ``precision``, ``human``), a ``title`` and a ``note`` saying how the buckets are made."""

    key: str
    title: str
    metric: str
    rows: tuple[PairedRow, ...]
    note: str = ""


@dataclass(frozen=True)
class BucketLine:
    """One bucket of a breakdown with every system: ``rows[j]`` is the baseline against system ``j + 1`` (None
    where neither has a segment in the bucket: buckets of each system's own segments)."""

    bucket: str
    rows: tuple[PairedRow | None, ...]

    @property
    def first(self) -> PairedRow:
        """A row of this line (the baseline's numbers are the same in every row)."""
        return next(r for r in self.rows if r is not None)


@dataclass(frozen=True)
class BucketTable:
    """One breakdown with every system side by side: its ``lines`` (one per bucket any system has), the ``note``
    of the whole set and each pair's (``pair_notes``, naming only the two systems); ``per_system``: buckets of
    each system's own segments, not paired."""

    key: str
    title: str
    metric: str
    lines: tuple[BucketLine, ...]
    note: str
    pair_notes: tuple[str, ...]
    per_system: bool = False

    def pair(self, j: int) -> BucketGroup:
        """The breakdown of the baseline against system ``j + 1``: its rows, its note."""
        return BucketGroup(self.key, self.title, self.metric,
                           tuple(r for r in (line.rows[j] for line in self.lines) if r is not None),
                           self.pair_notes[j])

    @classmethod
    def of_group(cls, group: BucketGroup) -> BucketTable:
        """The table of one pair's breakdown."""
        return cls(group.key, group.title, group.metric, tuple(BucketLine(r.bucket, (r,)) for r in group.rows),
                   group.note, (group.note,), any(not r.paired for r in group.rows))


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
    """Everything :func:`~.engine.compare` found; read-only (tables, JSON and the page only read it).

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
    by_length_diff: BucketGroup
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
    #: the sentence BLEU of buckets and examples uses effective order (sacrebleu's sentence_bleu, WMT's sentBLEU)
    sentence_effective_order: bool = False

    @property
    def groups(self) -> tuple[BucketGroup, ...]:
        """Every breakdown in display order (BLEU ones, words, precisions, then the human ones)."""
        out = [*self.bleu_groups]
        if self.human is not None:
            out += [self.human.by_length, self.human.by_sentence_bleu]
        return tuple(out)

    @property
    def bleu_groups(self) -> tuple[BucketGroup, ...]:
        """The breakdowns of BLEU, words and precisions (not the human ones), in display order."""
        return self.by_length, self.by_length_diff, self.by_sentence_bleu, self.by_frequency, self.precisions

    @property
    def significant(self) -> bool:
        """sacrebleu's star: ``p <= 0.05``."""
        return not self.headline.p_value > ALPHA


@dataclass(frozen=True)
class ComparisonSet:
    """Several systems compared with the first, the baseline (sacrebleu's ``--paired-bs`` with several systems):
    ``pairs[j]`` is the baseline against system ``j + 1`` (exactly what comparing those two alone gives: every
    resample is drawn from the seed and the segment count, the same for every system) and ``tables`` every
    breakdown with all systems side by side. p-values are per comparison, not corrected for their number."""

    pairs: tuple[ComparisonResult, ...]
    tables: tuple[BucketTable, ...]

    @classmethod
    def of_pair(cls, result: ComparisonResult) -> ComparisonSet:
        """Two systems as a set (one pair)."""
        return cls((result,), tuple(BucketTable.of_group(g) for g in result.bleu_groups))

    @property
    def first(self) -> ComparisonResult:
        return self.pairs[0]

    @property
    def systems(self) -> tuple[SystemSummary, ...]:
        """The baseline, then every other system, in the order given."""
        return (self.pairs[0].a, *(p.b for p in self.pairs))

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(s.label for s in self.systems)

    @property
    def n_segments(self) -> int:
        return self.first.n_segments

    @property
    def ref_names(self) -> tuple[str, ...]:
        return self.first.ref_names

    @property
    def options(self) -> BleuOptions:
        return self.first.options

    @property
    def signature(self) -> str:
        return self.first.signature

    @property
    def n_samples(self) -> int:
        return self.first.n_samples

    @property
    def seed(self) -> int | None:
        return self.first.seed

    @property
    def dataset(self) -> str:
        return self.first.dataset

    @property
    def refset(self) -> str:
        return self.first.refset

    @property
    def variant(self) -> str:
        return self.first.variant
