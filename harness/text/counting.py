"""Counting n-gram statistics of token ids: references encoded once, hypotheses counted against them.

Two exact paths, chosen by the caller (``compiled``): the compiled kernel (:mod:`.native`) and numpy, the
fallback and the oracle of the tests. Must never depend on what ran before in the process.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from ..core.stats import SegmentStats
from ..errors import ConfigError

# Tokens become integer ids from a vocabulary built on the references only (a hypothesis token unknown to the
# references gets id -1 and can never match). Per segment and order, clipped matches
# ``sum_g min(count_hyp(g), max_k count_ref_k(g))`` and totals are counted by
# - the compiled kernel (``count`` of harness/_kernels.c): per segment and order a small open-addressing hash table of the
#   reference n-grams keeps the maximum count over references, then the hypothesis n-grams stream through it; an
#   occurrence counts while its running count does not exceed that maximum. It releases the GIL;
# - numpy (sorting instead of hashing, count_numpy).

TokenLists = Sequence[Sequence[str]]

# Below this many tokens (all streams of all systems) the Python path is used: loading the compiled kernels costs
# ~40 ms per process (llvmlite and the class table, benchmarks/RESULTS.md), which the Python tokenizers and numpy
# counting repay below a few thousand lines.
_COMPILED_MIN_TOKENS = 20_000


# --------------------------------------------------------------------------------------------------------------
# Encoding tokens as integer ids
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EncodedReferences:
    """A reference set encoded once and reused for every hypothesis stream scored against it.

    ``ids`` holds every reference token, segment-major (``layout="segment"``: segment 0: ref 0, ref 1, ...;
    segment 1: ...; reference ``k`` of segment ``i`` is ``ids[offsets[i * R + k] : offsets[i * R + k + 1]]``)
    or stream-major (``layout="stream"``, as the compiled path encodes them: ``offsets[k * n + i]``);
    ``lengths[i, k]`` is its length, ``-1`` when absent. ``vocab`` maps reference tokens to ids: a dict when
    built from token lists here, a :class:`harness.text.token_ids.TokenTable` when built from raw text there.
    """

    ids: NDArray[np.int64]
    offsets: NDArray[np.int64]
    lengths: NDArray[np.int64]
    vocab: Any
    layout: str = "segment"

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    @property
    def n_refs(self) -> int:
        return int(self.lengths.shape[1])


def encode_references(streams: Sequence[Sequence[Sequence[str] | None]]) -> EncodedReferences:
    """Encode reference token streams (``streams[k][i]`` = tokens of reference ``k`` for segment ``i``, or None)."""
    n_refs = len(streams)
    if n_refs == 0:
        raise ValueError("at least one reference stream is needed")
    n = len(streams[0])
    missing: list[int] = []
    ordered: list[Sequence[str]] = []
    for i in range(n):
        for k in range(n_refs):
            tokens = streams[k][i]
            if tokens is None:
                missing.append(i * n_refs + k)
                ordered.append(())
            else:
                ordered.append(tokens)
    lengths = np.fromiter(map(len, ordered), dtype=np.int64, count=len(ordered))
    offsets = np.zeros(len(ordered) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = list(chain.from_iterable(ordered))
    vocab = {token: index for index, token in enumerate(dict.fromkeys(flat))}
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    if missing:
        lengths[np.asarray(missing)] = -1
    return EncodedReferences(ids, offsets, lengths.reshape(n, n_refs), vocab)


def encode_hypotheses(
    hypotheses: TokenLists, vocab: dict[str, int]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Encode hypothesis tokens with a reference vocabulary (unknown tokens become ``-1``: they never match)."""
    lengths = np.fromiter(map(len, hypotheses), dtype=np.int64, count=len(hypotheses))
    offsets = np.zeros(len(hypotheses) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = chain.from_iterable(hypotheses)
    ids = np.fromiter(map(vocab.get, flat, repeat(-1)), dtype=np.int64, count=int(offsets[-1]))
    return ids, offsets


# --------------------------------------------------------------------------------------------------------------
# The counting kernel
# --------------------------------------------------------------------------------------------------------------

def kernel_available() -> bool:
    """Whether the compiled kernels load in this process (:mod:`.native`; loads them)."""
    from . import native

    return native.kernels() is not None


def use_compiled(expected_tokens: int, compiled: bool | None = None) -> bool:
    """Whether to take the compiled path: ``compiled`` when given, else whether the work (all streams of all
    systems together, in tokens) is large enough to repay loading the kernels (~40 ms per process). Either
    path gives the same statistics; without loadable kernels the Python path is taken regardless."""
    return bool(compiled) if compiled is not None else expected_tokens >= _COMPILED_MIN_TOKENS


def tokens_of_text(characters: int) -> int:
    """Tokens in that many characters of text, at about six characters per token (word plus space) in the
    languages of the bundled data: what :func:`use_compiled` weighs before anything is tokenized."""
    return characters // 6


def count_statistics(hypotheses: TokenLists, references: EncodedReferences, max_order: int = 4,
                     compiled: bool | None = None) -> SegmentStats:
    """Sufficient statistics of one hypothesis stream (token lists) against encoded references."""
    h_ids, h_off = encode_hypotheses(hypotheses, references.vocab)
    return count_encoded(h_ids, h_off, references, max_order, compiled)


def count_encoded(h_ids: NDArray[np.int64], h_off: NDArray[np.int64], references: EncodedReferences,
                  max_order: int = 4, compiled: bool | None = None) -> SegmentStats:
    """Sufficient statistics of hypothesis token ids (``h_ids[h_off[i]:h_off[i+1]]`` = segment ``i``, ``-1`` =
    unknown to the references) against encoded references."""
    if max_order < 1:
        raise ConfigError("max_ngram_order", f"must be >= 1, got {max_order}")
    if h_off.shape[0] - 1 != len(references):
        raise ValueError(f"{h_off.shape[0] - 1} hypotheses but {len(references)} reference segments")
    if use_compiled(h_ids.size + references.ids.size, compiled) and kernel_available():
        from .token_ids import count_ids

        matches, totals = count_ids(h_ids, h_off, references, max_order)
    else:
        matches, totals = count_numpy(h_ids, h_off, references, max_order)
    hyp_len = np.diff(h_off)
    return SegmentStats(hyp_len, references.lengths.copy(), matches, totals)


def count_numpy(h_ids: NDArray[np.int64], h_off: NDArray[np.int64], references: EncodedReferences,
                max_order: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The same counts with sorting instead of hashing (no compilation: the fast path for small inputs).

    All tokens (hypotheses, then references) form one flat array. The order-n n-gram starting at a position gets
    an id from the pair (id of the (n-1)-gram there, token n-1 places on): ``gram * T + token`` for ``T`` token
    ids, so equal ids mean equal token sequences; the ids are renumbered densely (a sort) only where they or the
    keys built on them would not fit in int64. N-grams running past the end of their segment are masked out.
    Then, with keys ``segment * G + gram``: hypothesis counts, the maximum count over references, and
    ``sum min(.,.)`` per segment. Unknown hypothesis tokens (``-1``) share one id that no reference token has.
    """
    n_seg = h_off.shape[0] - 1
    n_refs = references.n_refs
    if references.layout == "stream":
        references = _segment_major(references)
    h_len, r_len = np.diff(h_off), np.diff(references.offsets)
    unknown = len(references.vocab)
    tokens = np.concatenate([np.where(h_ids < 0, unknown, h_ids), references.ids])
    n_h, size = h_ids.size, tokens.size
    owner = np.concatenate([np.repeat(np.arange(n_seg), h_len),
                            np.repeat(np.repeat(np.arange(n_seg), n_refs), r_len)])  # segment of each token
    stream = np.repeat(np.tile(np.arange(n_refs), n_seg), r_len)  # reference stream of each reference token
    ends = np.concatenate([np.repeat(h_off[1:], h_len), np.repeat(references.offsets[1:] + n_h, r_len)])
    pos = np.arange(size)
    matches = np.zeros((n_seg, max_order), dtype=np.int64)
    totals = np.maximum(h_len[:, None] - np.arange(max_order)[None, :], 0)
    base = unknown + 1  # token ids are below it
    room = 2 ** 63 // (max(n_seg, 1) * max(n_refs, 1))  # gram ids below this keep every key below in int64
    gram, bound = tokens, base  # the n-gram ids and a bound on them
    for n in range(1, max_order + 1):
        if n > 1:
            if bound * base >= 2 ** 63:
                gram, bound = _dense(gram)
            gram = gram * base + tokens[np.minimum(pos + n - 1, size - 1)]
            bound *= base
        if bound >= room:
            gram, bound = _dense(gram)
        valid = pos + n <= ends
        key = owner * bound + gram
        hyp_keys, hyp_counts = np.unique(key[:n_h][valid[:n_h]], return_counts=True)
        ref_ok = valid[n_h:]
        per_stream, counts = np.unique(key[n_h:][ref_ok] * n_refs + stream[ref_ok], return_counts=True)
        if hyp_keys.size == 0 or per_stream.size == 0:
            continue
        ref_keys = per_stream // n_refs
        starts = np.flatnonzero(np.r_[True, ref_keys[1:] != ref_keys[:-1]])
        ref_keys, ref_max = ref_keys[starts], np.maximum.reduceat(counts, starts)
        at = np.minimum(np.searchsorted(ref_keys, hyp_keys), ref_keys.size - 1)
        clipped = np.where(ref_keys[at] == hyp_keys, np.minimum(hyp_counts, ref_max[at]), 0)
        matches[:, n - 1] = np.bincount(hyp_keys // bound, weights=clipped, minlength=n_seg).astype(np.int64)
    return matches, totals.astype(np.int64)


def _dense(ids: NDArray[np.int64]) -> tuple[NDArray[np.int64], int]:
    """``ids`` renumbered ``0..k-1`` in their order (equal ids stay equal: a sort), and ``k``."""
    dense = np.unique(ids, return_inverse=True)[1].astype(np.int64)
    return dense, (int(dense.max()) + 1 if dense.size else 1)


def _segment_major(references: EncodedReferences) -> EncodedReferences:
    """The same references in the segment-major layout (for :func:`count_numpy`)."""
    n, r = references.lengths.shape
    starts = references.offsets[:-1].reshape(r, n).T.reshape(-1)
    ends = references.offsets[1:].reshape(r, n).T.reshape(-1)
    sizes = ends - starts
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    index = np.repeat(starts - offsets[:-1], sizes) + np.arange(int(offsets[-1]))
    return EncodedReferences(references.ids[index], offsets, references.lengths, references.vocab, "segment")
