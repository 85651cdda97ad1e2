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


def _match(hyp: Counter[str], ref: Counter[str]) -> tuple[int, int, int]:
    """sacrebleu's ``_get_match_statistics``: ``(hyp n-grams or 0 without reference n-grams, reference n-grams,
    clipped matches)``."""
    matched = hyp_count = 0
    for gram, count in hyp.items():
        hyp_count += count
        if gram in ref:
            matched += min(count, ref[gram])
    return (hyp_count if ref else 0), sum(ref.values()), matched


@dataclass(frozen=True)
class ChrfReferences:
    """Reference streams (``streams[k][i]``, None = absent) cased and counted once; :meth:`statistics` scores
    any number of systems against them."""

    refs: tuple[tuple[list[Counter[str]], ...], ...]  # per segment, the counters of each present reference
    opts: ChrfOptions
    n_refs: int
    variable_refs: bool

    @classmethod
    def build(cls, streams: Sequence[Sequence[str | None]], opts: ChrfOptions) -> ChrfReferences:
        n = len(streams[0]) if streams else 0
        per: list[tuple[list[Counter[str]], ...]] = []
        counts = set()
        for i in range(n):
            present = [s[i] for s in streams if s[i] is not None]
            counts.add(len(present))
            per.append(tuple(ngrams(_cased(line, opts), opts) for line in present))  # type: ignore[arg-type]
        variable = len(counts) > 1
        return cls(tuple(per), opts, counts.pop() if len(counts) == 1 else len(streams), variable)

    def __len__(self) -> int:
        return len(self.refs)

    def statistics(self, hypotheses: Sequence[str]) -> ChrfStats:
        """The per-segment statistics ``[n, 3 * order]`` of one system."""
        if len(hypotheses) != len(self.refs):
            raise ValueError(f"{len(hypotheses)} hypotheses but {len(self.refs)} reference segments")
        opts = self.opts
        out = np.zeros((len(self.refs), 3 * opts.order), dtype=np.int64)
        for i, (line, refs) in enumerate(zip(hypotheses, self.refs)):
            hyp = ngrams(_cased(line, opts), opts)
            best: list[int] = []
            best_f = -1.0
            for ref in refs:
                stats = [x for h, r in zip(hyp, ref) for x in _match(h, r)]
                f = f_score(stats, opts)
                if f > best_f:
                    best_f, best = f, stats
            if best:
                out[i] = best
        return ChrfStats(out, self.n_refs, self.variable_refs)


def _cased(line: str, opts: ChrfOptions) -> str:
    return line.lower() if opts.lowercase else line


def chrf_statistics(systems: Sequence[Sequence[str]], references: Sequence[Sequence[str | None]],
                    opts: ChrfOptions) -> list[ChrfStats]:
    """The chrF statistics of several systems against the same references (counted once)."""
    prepared = ChrfReferences.build(references, opts)
    return [prepared.statistics(h) for h in systems]
