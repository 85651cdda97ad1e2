"""Per-segment sufficient statistics of BLEU: the currency of the whole harness.

For every segment ``i`` and n-gram order ``n = 1..N``:

- ``matches[i, n-1]``: clipped matches, ``sum_g min(count_hyp(g), max_k count_ref_k(g))`` (Papineni et al. 2002,
  section 2.1: "modified n-gram precision"; sacrebleu ``_compute_segment_statistics``), where the maximum runs over
  the references *present* for that segment;
- ``totals[i, n-1]``: hypothesis n-grams, ``max(0, hyp_len - n + 1)``;
- ``hyp_len[i]`` and ``ref_lens[i, k]`` (``-1`` where reference ``k`` is absent, sacrebleu's ``None``).

Everything downstream (every smoothing, reference-length rule, bootstrap resample, block, correlation) is array
arithmetic on these arrays, and they are additive over segments, so shards computed anywhere can be concatenated.
Counting them from text is the text layer's job (:mod:`harness.text.counting`); this module only holds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError

#: How the reference length of a segment with several references is chosen.
REF_LENGTH_RULES: tuple[str, ...] = ("closest", "shortest", "average")


@dataclass(frozen=True)
class SegmentStats:
    """Sufficient statistics of one hypothesis stream against one reference set.

    Arrays (all ``int64``): ``hyp_len[n]``, ``ref_lens[n, R]`` (``-1`` = no reference ``k`` for segment ``i``),
    ``matches[n, N]`` and ``totals[n, N]`` for orders ``1..N``.
    """

    hyp_len: NDArray[np.int64]
    ref_lens: NDArray[np.int64]
    matches: NDArray[np.int64]
    totals: NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.hyp_len.shape[0])

    @property
    def max_order(self) -> int:
        return int(self.matches.shape[1])

    @property
    def n_refs(self) -> int:
        return int(self.ref_lens.shape[1])

    @property
    def variable_refs(self) -> bool:
        """True when some segment lacks some reference (sacrebleu's signature then says ``nrefs:var``)."""
        return bool((self.ref_lens < 0).any())

    def take(self, index: NDArray[np.intp] | slice) -> SegmentStats:
        """The statistics of a subset (or reordering) of segments."""
        return SegmentStats(self.hyp_len[index], self.ref_lens[index], self.matches[index], self.totals[index])

    def truncate_order(self, max_order: int) -> SegmentStats:
        """The same statistics for a lower maximum n-gram order (orders are independent counts)."""
        if max_order > self.max_order:
            raise ValueError(f"statistics have orders 1..{self.max_order}, cannot give order {max_order}")
        return SegmentStats(self.hyp_len, self.ref_lens, self.matches[:, :max_order], self.totals[:, :max_order])

    @staticmethod
    def concat(parts: Sequence[SegmentStats]) -> SegmentStats:
        """Concatenate shards of segments (the statistics are additive: shards may be computed anywhere)."""
        if not parts:
            raise ValueError("no statistics to concatenate")
        return SegmentStats(
            np.concatenate([p.hyp_len for p in parts]),
            np.concatenate([p.ref_lens for p in parts]),
            np.concatenate([p.matches for p in parts]),
            np.concatenate([p.totals for p in parts]),
        )

    def ref_len(self, rule: str | None = "closest") -> NDArray[np.float64]:
        """Effective reference length per segment under a brevity-penalty rule.

        ``closest``: the reference length closest to the hypothesis length, ties going to the shorter one
        (Papineni et al. 2002 section 2.2.2 "best match length"; sacrebleu ``_get_closest_ref_len``; mteval-v13a
        default). ``shortest``: the shortest reference (mteval-v11b; tensorflow-nmt / HF ``bleu``). ``average``:
        the mean length of the present references.
        """
        return effective_ref_len(self.hyp_len, self.ref_lens, rule)

    @property
    def nrefs_label(self) -> int | str:
        """``var`` when some segment lacks some reference (sacrebleu), else the number of reference streams."""
        return "var" if self.variable_refs else self.n_refs

    def matrix(self, rule: str | None = "closest") -> NDArray[np.float64]:
        """The ``[n, 2 + 2N]`` statistics matrix ``[hyp_len, ref_len, matches_1..N, totals_1..N]``.

        The corpus score is a function of ``matrix.sum(axis=0)``: this is sacrebleu's statistics vector.
        """
        return np.column_stack(
            [self.hyp_len.astype(np.float64), self.ref_len(rule), self.matches, self.totals]
        ).astype(np.float64, copy=False)


#: Rows per block of :func:`effective_ref_len`: its temporaries stay a few MB however many segments there are.
_BLOCK_ROWS = 1 << 16


def effective_ref_len(
    hyp_len: NDArray[np.int64], ref_lens: NDArray[np.int64], rule: str | None
) -> NDArray[np.float64]:
    """See :meth:`SegmentStats.ref_len`; segments without any reference are an error upstream. Computed in blocks
    of :data:`_BLOCK_ROWS` segments (the same numbers; a million segments with four references would otherwise
    need several temporary arrays of 32 MB)."""
    if rule not in REF_LENGTH_RULES:
        raise ConfigError("ref_length", f"unknown reference-length rule {rule!r}", REF_LENGTH_RULES)
    assert rule is not None
    n = hyp_len.shape[0]
    if n <= _BLOCK_ROWS:
        return _effective_ref_len(hyp_len, ref_lens, rule)
    out = np.empty(n, dtype=np.float64)
    for start in range(0, n, _BLOCK_ROWS):
        stop = min(n, start + _BLOCK_ROWS)
        out[start:stop] = _effective_ref_len(hyp_len[start:stop], ref_lens[start:stop], rule)
    return out


def _effective_ref_len(hyp_len: NDArray[np.int64], ref_lens: NDArray[np.int64], rule: str) -> NDArray[np.float64]:
    present = ref_lens >= 0
    if rule == "closest":
        diff = np.where(present, np.abs(ref_lens - hyp_len[:, None]), np.iinfo(np.int64).max)
        best = diff.min(axis=1, initial=np.iinfo(np.int64).max)
        candidates = np.where(present & (diff == best[:, None]), ref_lens, np.iinfo(np.int64).max)
        return candidates.min(axis=1, initial=np.iinfo(np.int64).max).astype(np.float64)
    if rule == "shortest":
        return np.where(present, ref_lens, np.iinfo(np.int64).max).min(
            axis=1, initial=np.iinfo(np.int64).max
        ).astype(np.float64)
    count = present.sum(axis=1)  # average
    return np.where(present, ref_lens, 0).sum(axis=1) / np.maximum(count, 1)
