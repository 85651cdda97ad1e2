"""Counting chrF's per-segment statistics from text, exactly as sacrebleu 2.x's ``CHRF`` does.

Character n-grams of every order of the line without its whitespace (``str.split``'s, unless ``whitespace``);
word n-grams (chrF++) of the whitespace-split words, a punctuation character at the end (else at the start) of a
word of two or more characters split off (sacrebleu's ``_remove_punctuation``); ``str.lower`` when
``lowercase``. Per segment and order ``[hyp, ref, match]`` against each present reference (``hyp`` is 0 where the
reference has no n-gram of that order), and the segment keeps the reference with the best F-score (the first of
equals). The references are counted once (:class:`ChrfReferences`) for every system scored against them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from ..core.chrf import ChrfOptions, ChrfStats, f_score

#: sacrebleu's ``CHRF._PUNCTS`` (``string.punctuation``).
PUNCTUATION = frozenset('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~')


def words(line: str) -> list[str]:
    """sacrebleu's ``CHRF._remove_punctuation``: whitespace-split words, one punctuation character split off the
    end, else the start, of a word of two or more characters (``(hi)`` gives ``(hi`` and ``)``)."""
    out: list[str] = []
    for w in line.split():
        if len(w) == 1:
            out.append(w)
        elif w[-1] in PUNCTUATION:
            out += [w[:-1], w[-1]]
        elif w[0] in PUNCTUATION:
            out += [w[0], w[1:]]
        else:
            out.append(w)
    return out


def ngrams(line: str, opts: ChrfOptions) -> list[Counter[str]]:
    """The n-gram counters of one (cased) line: characters ``1..char_order``, then words ``1..word_order``."""
    chars = line if opts.whitespace else "".join(line.split())
    out = [Counter(chars[i:i + n] for i in range(len(chars) - n + 1)) for n in range(1, opts.char_order + 1)]
    if opts.word_order:
        toks = words(line)
        out += [Counter(" ".join(toks[i:i + n]) for i in range(len(toks) - n + 1))
                for n in range(1, opts.word_order + 1)]
    return out


@dataclass(frozen=True)
class GramTable:
    """The n-gram counts of a stream of lines: one row per (order, segment, n-gram) with its count, the n-grams
    numbered by a vocabulary shared by every table they are matched against; ``totals[i, j]``: n-grams of order
    ``j`` in segment ``i``; ``present[i]``: the segment has a line (a reference stream may lack some)."""

    order: NDArray[np.int64]
    segment: NDArray[np.int64]
    gram: NDArray[np.int64]
    count: NDArray[np.int64]
    totals: NDArray[np.int64]
    present: NDArray[np.bool_]

    @classmethod
    def count_lines(cls, lines: Sequence[str | None], opts: ChrfOptions, vocab: dict[str, int]) -> GramTable:
        n, k = len(lines), opts.order
        order: list[int] = []
        segment: list[int] = []
        gram: list[int] = []
        count: list[int] = []
        totals = np.zeros((n, k), dtype=np.int64)
        present = np.ones(n, dtype=bool)
        for i, line in enumerate(lines):
            if line is None:
                present[i] = False
                continue
            for j, counter in enumerate(ngrams(_cased(line, opts), opts)):
                if not counter:
                    continue
                m = len(counter)
                order += [j] * m
                segment += [i] * m
                gram += [vocab.setdefault(g, len(vocab)) for g in counter]
                values = list(counter.values())
                count += values
                totals[i, j] = sum(values)
        as_array = np.asarray
        return cls(as_array(order, dtype=np.int64), as_array(segment, dtype=np.int64), as_array(gram, dtype=np.int64),
                   as_array(count, dtype=np.int64), totals, present)

    def keys(self, vocab_size: int) -> NDArray[np.int64]:
        """One integer per row, unique: (order, segment, n-gram)."""
        return (self.order * len(self.totals) + self.segment) * vocab_size + self.gram


def match_statistics(hyp: GramTable, ref: GramTable, vocab_size: int) -> NDArray[np.int64]:
    """sacrebleu's ``_get_match_statistics`` of every segment against one reference stream, vectorised:
    ``[n, 3 * order]`` of (hypothesis n-grams, 0 where the reference has none of that order; reference n-grams;
    clipped matches)."""
    n, k = hyp.totals.shape
    _, hi, ri = np.intersect1d(hyp.keys(vocab_size), ref.keys(vocab_size), assume_unique=True, return_indices=True)
    matched = np.zeros((k, n), dtype=np.int64)
    np.add.at(matched, (hyp.order[hi], hyp.segment[hi]), np.minimum(hyp.count[hi], ref.count[ri]))
    out = np.empty((n, k, 3), dtype=np.int64)
    out[:, :, 0] = np.where(ref.totals > 0, hyp.totals, 0)
    out[:, :, 1] = ref.totals
    out[:, :, 2] = matched.T
    return out.reshape(n, 3 * k)


@dataclass(frozen=True)
class ChrfReferences:
    """Reference streams (``streams[k][i]``, None = absent) cased and counted once; :meth:`statistics` scores
    any number of systems against them. The statistics of a segment are those of its reference with the best
    F-score (sacrebleu's choice: the first of equals, scored by its own arithmetic, :func:`f_score`)."""

    tables: tuple[GramTable, ...]
    vocab: dict[str, int]
    opts: ChrfOptions

    @classmethod
    def build(cls, streams: Sequence[Sequence[str | None]], opts: ChrfOptions) -> ChrfReferences:
        vocab: dict[str, int] = {}
        return cls(tuple(GramTable.count_lines(s, opts, vocab) for s in streams), vocab, opts)

    def __len__(self) -> int:
        return len(self.tables[0].totals) if self.tables else 0

    def per_reference(self, hypotheses: Sequence[str]) -> list[NDArray[np.int64]]:
        """One system's match statistics against each reference stream (rows of absent references unused)."""
        if len(hypotheses) != len(self):
            raise ValueError(f"{len(hypotheses)} hypotheses but {len(self)} reference segments")
        hyp = GramTable.count_lines(hypotheses, self.opts, self.vocab)
        return [match_statistics(hyp, ref, len(self.vocab)) for ref in self.tables]

    def select(self, per_ref: Sequence[NDArray[np.int64]], which: Sequence[int] | None = None) -> ChrfStats:
        """The statistics against the references ``which`` (indices of the streams; None = all): per segment
        those of the present reference with the best F-score, the first of equals."""
        which = list(range(len(self.tables))) if which is None else list(which)
        tables = [self.tables[k] for k in which]
        present = np.array([t.present for t in tables]) if tables else np.zeros((0, len(self)), dtype=bool)
        counts = set(present.sum(axis=0).tolist())
        variable = len(counts) > 1
        n_refs = counts.pop() if len(counts) == 1 else len(which)
        if len(which) == 1 and present.all():
            return ChrfStats(per_ref[which[0]], 1, False)
        out = np.zeros_like(per_ref[0])
        for i in range(len(out)):
            best_f = -1.0
            for k, ok in zip(which, present[:, i]):
                if ok:
                    f = f_score(per_ref[k][i].tolist(), self.opts)
                    if f > best_f:
                        best_f, out[i] = f, per_ref[k][i]
        return ChrfStats(out, n_refs, variable)

    def statistics(self, hypotheses: Sequence[str]) -> ChrfStats:
        """The per-segment statistics ``[n, 3 * order]`` of one system against every reference."""
        return self.select(self.per_reference(hypotheses))


def _cased(line: str, opts: ChrfOptions) -> str:
    return line.lower() if opts.lowercase else line


def chrf_statistics(systems: Sequence[Sequence[str]], references: Sequence[Sequence[str | None]],
                    opts: ChrfOptions) -> list[ChrfStats]:
    """The chrF statistics of several systems against the same references (counted once)."""
    prepared = ChrfReferences.build(references, opts)
    return [prepared.statistics(h) for h in systems]
