"""Segments shown side by side: where sentence BLEU differs most in each direction, and, with human segment scores,
the mean human score by the BLEU buckets and the segments where BLEU and the humans disagree most about which
system is better. Each output is shown with the words where the two differ (a word diff of the whitespace-split
outputs)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from .buckets import bucket_labels, bucket_of, mean_of, paired_row, subset_rows, take_rows
from .request import Side
from .result import (
    LENGTH_CUTOFFS,
    NAN,
    SENTENCE_BLEU_CUTOFFS,
    BucketGroup,
    Example,
    ExampleList,
    FloatArray,
    HumanComparison,
    IntArray,
)


@dataclass(frozen=True)
class Segments:
    """What every example of a comparison shows: both sides, their sentence BLEU, the reference length that buckets
    each segment, the references and the source."""

    a: Side
    b: Side
    sentence_a: FloatArray
    sentence_b: FloatArray
    ref_len: IntArray
    references: Sequence[Sequence[str | None]]
    source: Sequence[str] | None

    def example(self, i: int) -> Example:
        wa, wb = word_diff(self.a.lines[i], self.b.lines[i])
        ha = NAN if self.a.human is None else float(self.a.human[i])
        hb = NAN if self.b.human is None else float(self.b.human[i])
        return Example(i, int(self.ref_len[i]), float(self.sentence_a[i]), float(self.sentence_b[i]),
                       None if self.source is None else self.source[i], tuple(r[i] for r in self.references), wa,
                       wb, ha, hb)

    def examples(self, key: str, values: FloatArray, k: int, mask: NDArray[np.bool_]) -> ExampleList:
        """The ``k`` segments with the largest ``values`` where ``mask`` (ties: lower index first)."""
        return ExampleList(key, tuple(self.example(int(i)) for i in _top(values, k, mask)))


def bleu_examples(seg: Segments, k: int) -> tuple[ExampleList, ExampleList]:
    """The segments where sentence BLEU favours B most, and A most."""
    delta = seg.sentence_b - seg.sentence_a
    return seg.examples("b_better", delta, k, delta > 0), seg.examples("a_better", -delta, k, delta < 0)


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


def _top(values: FloatArray, k: int, mask: NDArray[np.bool_]) -> IntArray:
    """Indices of the ``k`` largest ``values`` where ``mask`` (ties: lower index first)."""
    idx = np.flatnonzero(mask)
    order = np.lexsort((idx, -values[idx]))
    return idx[order[:k]]


def human_comparison(seg: Segments, name: str, n_samples: int, seed: int | None, n_examples: int
                     ) -> HumanComparison | None:
    """Mean human scores (segments judged for both) overall and by the BLEU buckets, and the BLEU-vs-human
    disagreements; None unless both sides have human scores of some common segment."""
    a, b = seg.a, seg.b
    if a.human is None or b.human is None:
        return None
    judged = np.isfinite(a.human) & np.isfinite(b.human)
    if not judged.any():
        return None
    len_bucket = bucket_of(seg.ref_len, LENGTH_CUTOFFS)
    bleu_bucket = bucket_of(seg.sentence_a, SENTENCE_BLEU_CUTOFFS)
    len_labels, bleu_labels = bucket_labels(LENGTH_CUTOFFS), bucket_labels(SENTENCE_BLEU_CUTOFFS)
    ones = np.ones(len(judged))
    xa = np.column_stack([np.where(judged, a.human, 0.0), ones])
    xb = np.column_stack([np.where(judged, b.human, 0.0), ones])
    idx = np.flatnonzero(judged)
    overall = paired_row("all", xa[idx], xb[idx], mean_of, n_samples, seed)
    note = f"Mean {name} score (higher is better) on the segments judged for both systems, by the buckets above."
    by_len = BucketGroup("human_length", f"{name} by reference length", "human",
                         tuple(subset_rows(len_labels, np.where(judged, len_bucket, -1), xa, xb, take_rows, mean_of,
                                           n_samples, seed)), note)
    by_bleu = BucketGroup("human_sentence_bleu", f"{name} by sentence BLEU of {a.label}", "human",
                          tuple(subset_rows(bleu_labels, np.where(judged, bleu_bucket, -1), xa, xb, take_rows,
                                            mean_of, n_samples, seed)), note)
    # Disagreement: BLEU and the humans prefer different systems; ranked by the product of the two standardised
    # differences, so a segment ranks high when both disagree strongly.
    d_bleu = seg.sentence_b - seg.sentence_a
    d_human = np.where(judged, b.human - a.human, 0.0)
    sd_bleu = float(np.std(d_bleu[judged])) or 1.0
    sd_human = float(np.std(d_human[judged])) or 1.0
    strength = -(d_bleu / sd_bleu) * (d_human / sd_human)
    mask = judged & (np.sign(d_bleu) * np.sign(d_human) < 0)
    return HumanComparison(name, int(judged.sum()), overall, by_len, by_bleu,
                           seg.examples("disagree", strength, n_examples, mask))
