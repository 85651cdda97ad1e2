"""Token ids of a reference set: what both encoders (:mod:`.counting` from token lists, :mod:`.token_ids` from
raw text) produce and both counters (:mod:`.counting`'s numpy, :mod:`.token_ids`'s compiled kernel) read.

Tokens become integer ids from a vocabulary built on the references: a hypothesis token unknown to them gets id
``-1`` and can never match, unless the caller encodes the hypotheses into the same vocabulary
(:func:`harness.text.pipeline.encode_corpus`, for counts that name every n-gram).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class EncodedReferences:
    """A reference set encoded once and reused for every hypothesis stream scored against it.

    ``ids`` holds every reference token, segment-major (``layout="segment"``: segment 0: ref 0, ref 1, ...;
    segment 1: ...; reference ``k`` of segment ``i`` is ``ids[offsets[i * R + k] : offsets[i * R + k + 1]]``)
    or stream-major (``layout="stream"``, as the compiled path encodes them: ``offsets[k * n + i]``);
    ``lengths[i, k]`` is its length, ``-1`` when absent. ``vocab`` maps tokens to ids: a dict when built from
    token lists, a :class:`harness.text.token_ids.TokenTable` when built from raw text.
    """

    ids: IntArray
    offsets: IntArray
    lengths: IntArray
    vocab: Any
    layout: str = "segment"

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    @property
    def n_refs(self) -> int:
        return int(self.lengths.shape[1])

    def segment_major(self) -> EncodedReferences:
        """The same references in the segment-major layout (what the numpy counters read)."""
        if self.layout == "segment":
            return self
        n, r = self.lengths.shape
        starts = self.offsets[:-1].reshape(r, n).T.reshape(-1)
        ends = self.offsets[1:].reshape(r, n).T.reshape(-1)
        return self._gather(starts, ends, self.lengths)

    def first_present(self) -> EncodedReferences:
        """One reference per segment: the first present one (the reference compare-mt matches words against)."""
        ref = self.segment_major()
        n, r = ref.lengths.shape
        first = np.argmax(ref.lengths >= 0, axis=1)
        row = np.arange(n, dtype=np.int64) * r + first
        return self._gather(ref.offsets[row], ref.offsets[row + 1], ref.lengths[np.arange(n), first][:, None],
                            ref.ids)

    def _gather(self, starts: IntArray, ends: IntArray, lengths: IntArray, ids: IntArray | None = None
                ) -> EncodedReferences:
        sizes = ends - starts
        offsets = np.zeros(sizes.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        index = np.repeat(starts - offsets[:-1], sizes) + np.arange(int(offsets[-1]))
        source = self.ids if ids is None else ids
        return EncodedReferences(source[index], offsets, np.ascontiguousarray(lengths), self.vocab, "segment")
