"""What a comparison finds: immutable results (tables, JSON and the page only read them), and the conventions
they follow (compare-mt's bucket cutoffs and n-gram smoothing, the interval level, sacrebleu's star)."""

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
        out = [self.by_length, self.by_sentence_bleu, self.by_frequency, self.precisions]
        if self.human is not None:
            out += [self.human.by_length, self.human.by_sentence_bleu]
        return tuple(out)

    @property
    def significant(self) -> bool:
        """sacrebleu's star: ``p <= 0.05``."""
        return not self.headline.p_value > ALPHA
