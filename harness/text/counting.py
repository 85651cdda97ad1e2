"""Counting n-gram statistics of token ids: references encoded once, hypotheses counted against them.

Two exact paths, chosen by the caller (``compiled``): the compiled kernel (:func:`.token_ids.count_ids`) and
numpy (:func:`count_numpy`), the fallback and the oracle of the tests. Must never depend on what ran before in the
process. :func:`count_grams` counts the same clipped matches per n-gram, for the comparison of two systems.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain, repeat
from typing import Iterator, Sequence

import numpy as np
from numpy.typing import NDArray

from ..core.stats import SegmentStats
from ..errors import ConfigError
from . import kernels
from .encoded import EncodedReferences, IntArray
from .token_ids import count_ids

# Per segment and order, clipped matches
# ``sum_g min(count_hyp(g), max_k count_ref_k(g))`` and totals are counted by
# - the compiled kernel (``count`` of harness/_kernels.c): per segment and order a small open-addressing hash table of the
#   reference n-grams keeps the maximum count over references, then the hypothesis n-grams stream through it; an
#   occurrence counts while its running count does not exceed that maximum. It releases the GIL;
# - numpy (sorting instead of hashing, count_numpy).

TokenLists = Sequence[Sequence[str]]

# Below this many tokens (all streams of all systems) the Python path is used: the compiled path's first use in a
# process builds the tokenizer's class table of every code point (12 ms for 13a, 45 ms for intl, measured; the
# extension itself loads in under a millisecond), which the Python tokenizers and numpy counting repay below a few
# thousand lines.
_COMPILED_MIN_TOKENS = 20_000


# --------------------------------------------------------------------------------------------------------------
# Encoding tokens as integer ids
# --------------------------------------------------------------------------------------------------------------


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


def encode_hypotheses(hypotheses: TokenLists, vocab: dict[str, int], insert: bool = False
                      ) -> tuple[IntArray, IntArray]:
    """Encode hypothesis tokens with a reference vocabulary: unknown tokens become ``-1`` (they never match), or
    with ``insert`` new ids added to ``vocab``."""
    lengths = np.fromiter(map(len, hypotheses), dtype=np.int64, count=len(hypotheses))
    offsets = np.zeros(len(hypotheses) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = chain.from_iterable(hypotheses)
    if insert:
        ids = np.fromiter((vocab.setdefault(t, len(vocab)) for t in flat), dtype=np.int64, count=int(offsets[-1]))
    else:
        ids = np.fromiter(map(vocab.get, flat, repeat(-1)), dtype=np.int64, count=int(offsets[-1]))
    return ids, offsets


# --------------------------------------------------------------------------------------------------------------
# The counting kernel
# --------------------------------------------------------------------------------------------------------------

def kernel_available() -> bool:
    """Whether the compiled kernels load in this process (:mod:`.kernels`; loads them)."""
    return kernels.loaded() is not None


def use_compiled(expected_tokens: int, compiled: bool | None = None) -> bool:
    """Whether to take the compiled path: ``compiled`` when given, else whether the work (all streams of all
    systems together, in tokens) is large enough to repay loading the kernels (~40 ms per process). Either
    path gives the same statistics; without loadable kernels the Python path is taken regardless."""
    return bool(compiled) if compiled is not None else expected_tokens >= _COMPILED_MIN_TOKENS


def tokens_of_text(characters: int) -> int:
    """Tokens in that many characters of text, at about six characters per token (word plus space) in the
    languages of the bundled data: what :func:`use_compiled` weighs before anything is tokenized."""
    return characters // 6


def token_statistics(hypotheses: TokenLists, references: EncodedReferences, max_order: int = 4,
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
        matches, totals = count_ids(h_ids, h_off, references, max_order)
    else:
        matches, totals = count_numpy(h_ids, h_off, references, max_order)
    hyp_len = np.diff(h_off)
    return SegmentStats(hyp_len, references.lengths.copy(), matches, totals)


def count_numpy(h_ids: IntArray, h_off: IntArray, references: EncodedReferences, max_order: int
                ) -> tuple[IntArray, IntArray]:
    """The same counts with sorting instead of hashing (no compilation: the fast path for small inputs).

    All tokens (hypotheses, then references) form one flat array and the n-grams get ids by :func:`_gram_ids`.
    Then, with keys ``segment * G + gram``: hypothesis counts, the maximum count over references, and
    ``sum min(.,.)`` per segment. Unknown hypothesis tokens (``-1``) share one id that no reference token has.
    """
    n_seg = h_off.shape[0] - 1
    refs = references.segment_major()
    n_refs = refs.n_refs
    h_len = np.diff(h_off)
    flat = _Flat.of([(h_ids, h_off)], refs)
    matches = np.zeros((n_seg, max_order), dtype=np.int64)
    totals = np.maximum(h_len[:, None] - np.arange(max_order)[None, :], 0)
    room = 2 ** 63 // (max(n_seg, 1) * max(n_refs, 1))  # gram ids below this keep every key below in int64
    n_h = h_ids.size
    for n, gram, valid, bound in _gram_ids(flat.tokens, flat.ends, max_order, flat.base, room):
        key = flat.owner * bound + gram
        hyp_keys, hyp_counts = np.unique(key[:n_h][valid[:n_h]], return_counts=True)
        ref_keys, ref_max = _reference_max(key[n_h:], valid[n_h:], flat.ref_stream, n_refs)
        if hyp_keys.size == 0 or ref_keys.size == 0:
            continue
        clipped = np.minimum(hyp_counts, _lookup(hyp_keys, ref_keys, ref_max))
        matches[:, n - 1] = np.bincount(hyp_keys // bound, weights=clipped, minlength=n_seg).astype(np.int64)
    return matches, totals.astype(np.int64)


# --------------------------------------------------------------------------------------------------------------
# Counts per n-gram (what the comparison of two systems reads)
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GramCounts:
    """The n-grams of one order in several hypothesis streams, with ids shared by all streams (dense,
    ``0..n_grams-1``; n-gram ``g`` is the tokens ``tokens[first[g]:first[g] + order]`` of :class:`NgramCounts`).

    Per hypothesis stream ``k``, one entry per (segment, n-gram) pair that occurs: ``segment[k]``, ``gram[k]``,
    its ``count[k]`` and its ``clipped[k]`` count ``min(count, max over references of their count)``: BLEU's
    modified n-gram matches, so summing ``clipped[k]`` per segment gives the ``matches`` of the statistics. The
    reference side: ``ref_segment``, ``ref_gram`` and ``ref_max``, the maximum count over the references."""

    order: int
    n_grams: int
    first: IntArray
    segment: tuple[IntArray, ...]
    gram: tuple[IntArray, ...]
    count: tuple[IntArray, ...]
    clipped: tuple[IntArray, ...]
    ref_segment: IntArray
    ref_gram: IntArray
    ref_max: IntArray

    def per_gram(self, k: int) -> tuple[IntArray, IntArray]:
        """``(count, clipped)`` of stream ``k`` per n-gram id, summed over segments."""
        return (np.bincount(self.gram[k], weights=self.count[k], minlength=self.n_grams).astype(np.int64),
                np.bincount(self.gram[k], weights=self.clipped[k], minlength=self.n_grams).astype(np.int64))


@dataclass(frozen=True)
class NgramCounts:
    """:class:`GramCounts` of the orders ``1..max_order`` (``orders[n - 1]``), the token ids they index
    (``tokens``) and, per hypothesis stream, its sufficient statistics (:meth:`statistics`)."""

    tokens: IntArray
    orders: tuple[GramCounts, ...]
    hyp_lens: tuple[IntArray, ...]
    ref_lens: IntArray

    def statistics(self, k: int) -> SegmentStats:
        """The sufficient statistics of hypothesis stream ``k``: the arrays :func:`count_numpy` and the compiled
        kernel give for it."""
        n_seg = self.ref_lens.shape[0]
        h_len = self.hyp_lens[k]
        order = len(self.orders)
        matches = np.zeros((n_seg, order), dtype=np.int64)
        for g in self.orders:
            matches[:, g.order - 1] = np.bincount(g.segment[k], weights=g.clipped[k], minlength=n_seg)
        totals = np.maximum(h_len[:, None] - np.arange(order)[None, :], 0).astype(np.int64)
        return SegmentStats(h_len.copy(), self.ref_lens.copy(), matches, totals)

    def gram_tokens(self, order: int, gram: int) -> IntArray:
        """The token ids of n-gram ``gram`` of that order."""
        start = int(self.orders[order - 1].first[gram])
        return self.tokens[start:start + order]


def count_grams(hypotheses: Sequence[tuple[IntArray, IntArray]], references: EncodedReferences, max_order: int
                ) -> NgramCounts:
    """Clipped counts of every n-gram of orders ``1..max_order`` in several hypothesis streams (``(ids,
    offsets)`` each) against the same references, by the n-gram ids of :func:`count_numpy` made dense over all
    streams. Hypothesis tokens should be encoded into the references' vocabulary with insertion (so that every
    n-gram has a text); ``-1`` (unknown) tokens all share one id, as in :func:`count_numpy`."""
    if max_order < 1:
        raise ConfigError("max_ngram_order", f"must be >= 1, got {max_order}")
    refs = references.segment_major()
    n_seg, n_refs = refs.lengths.shape
    for ids, offsets in hypotheses:
        if offsets.shape[0] - 1 != n_seg:
            raise ValueError(f"{offsets.shape[0] - 1} hypotheses but {n_seg} reference segments")
    flat = _Flat.of(hypotheses, refs)
    starts = np.cumsum([0] + [ids.size for ids, _ in hypotheses])
    n_h = int(starts[-1])
    pos = np.arange(flat.tokens.size, dtype=np.int64)
    out = []
    for n, gram, valid, _ in _gram_ids(flat.tokens, flat.ends, max_order, flat.base, 2 ** 63):
        where = pos[valid]
        values, first_at, dense = np.unique(gram[valid], return_index=True, return_inverse=True)
        n_grams = int(values.size)
        if (n_seg + 1) * (n_grams + 1) * max(n_refs, 1) >= 2 ** 63:
            raise ValueError("too many n-grams to count per gram in one call")
        g = np.full(flat.tokens.size, -1, dtype=np.int64)
        g[where] = dense.reshape(-1)
        key = flat.owner * max(n_grams, 1) + g
        ref_keys, ref_max = _reference_max(key[n_h:], valid[n_h:], flat.ref_stream, n_refs)
        width = max(n_grams, 1)
        segment, gram_id, count, clipped = [], [], [], []
        for k in range(len(hypotheses)):
            a, b = int(starts[k]), int(starts[k + 1])
            keys, counts = np.unique(key[a:b][valid[a:b]], return_counts=True)
            segment.append(keys // width)
            gram_id.append(keys % width)
            count.append(counts.astype(np.int64))
            clipped.append(np.minimum(counts, _lookup(keys, ref_keys, ref_max)))
        out.append(GramCounts(n, n_grams, where[first_at], tuple(segment), tuple(gram_id), tuple(count),
                              tuple(clipped), ref_keys // width, ref_keys % width, ref_max))
    return NgramCounts(flat.tokens, tuple(out), tuple(np.diff(off) for _, off in hypotheses),
                       refs.lengths)


# --------------------------------------------------------------------------------------------------------------
# What both numpy counters share: one flat array of tokens, the n-gram ids, the reference maxima, the clipping
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Flat:
    """The tokens of every hypothesis stream, then of the references (segment-major), in one array: ``owner``
    the segment of each token, ``ends`` the end of its line, ``ref_stream`` the reference stream of each
    reference token; token ids are below ``base`` (unknown hypothesis tokens become ``base - 1``)."""

    tokens: IntArray
    owner: IntArray
    ends: IntArray
    ref_stream: IntArray
    base: int

    @classmethod
    def of(cls, hypotheses: Sequence[tuple[IntArray, IntArray]], refs: EncodedReferences) -> _Flat:
        n_seg, n_refs = refs.lengths.shape
        unknown = len(refs.vocab)
        r_len = np.diff(refs.offsets)
        tokens, owner, ends = [], [], []
        start = 0
        for ids, offsets in hypotheses:
            h_len = np.diff(offsets)
            tokens.append(np.where(ids < 0, unknown, ids))
            owner.append(np.repeat(np.arange(n_seg), h_len))
            ends.append(np.repeat(offsets[1:] + start, h_len))
            start += ids.size
        tokens.append(refs.ids)
        owner.append(np.repeat(np.repeat(np.arange(n_seg), n_refs), r_len))
        ends.append(np.repeat(refs.offsets[1:] + start, r_len))
        flat = np.concatenate(tokens).astype(np.int64, copy=False)
        base = max(unknown, int(flat.max(initial=-1))) + 1  # ids inserted beyond the references' vocabulary too
        return cls(flat, np.concatenate(owner), np.concatenate(ends),
                   np.repeat(np.tile(np.arange(n_refs), n_seg), r_len), base)


def _gram_ids(tokens: IntArray, ends: IntArray, max_order: int, base: int, room: int
              ) -> Iterator[tuple[int, IntArray, NDArray[np.bool_], int]]:
    """For ``n = 1..max_order``: ``(n, gram, valid, bound)``, where ``gram[p]`` identifies the n-gram starting at
    position ``p`` (equal ids, equal token sequences), ``valid[p]`` says it ends inside its line (``p + n <=
    ends[p]``) and every id is below ``bound < room``. Order n pairs the id of the (n-1)-gram at a position with
    the token n-1 places on: ``gram * base + token`` for token ids below ``base``; the ids are renumbered densely
    (a sort) only where they or the keys built on them would not fit in int64."""
    size = tokens.size
    pos = np.arange(size)
    gram, bound = tokens, base
    for n in range(1, max_order + 1):
        if n > 1:
            if bound * base >= 2 ** 63:
                gram, bound = _dense(gram)
            gram = gram * base + tokens[np.minimum(pos + n - 1, size - 1)]
            bound *= base
        if bound >= room:
            gram, bound = _dense(gram)
        yield n, gram, pos + n <= ends, bound


def _reference_max(keys: IntArray, valid: NDArray[np.bool_], stream: IntArray, n_refs: int
                   ) -> tuple[IntArray, IntArray]:
    """Sorted distinct ``keys`` (``segment * G + gram``) of the valid reference positions, each with the maximum of
    its count over the reference streams (BLEU's clipping count)."""
    per_stream, counts = np.unique(keys[valid] * n_refs + stream[valid], return_counts=True)
    ref_keys = per_stream // n_refs
    if not ref_keys.size:
        return ref_keys, counts.astype(np.int64)
    starts = np.flatnonzero(np.r_[True, ref_keys[1:] != ref_keys[:-1]])
    return ref_keys[starts], np.maximum.reduceat(counts, starts).astype(np.int64)


def _lookup(keys: IntArray, table_keys: IntArray, table_counts: IntArray) -> IntArray:
    """``table_counts`` at ``keys`` (0 where a key is not in the sorted ``table_keys``)."""
    if not table_keys.size:
        return np.zeros(keys.size, dtype=np.int64)
    at = np.minimum(np.searchsorted(table_keys, keys), table_keys.size - 1)
    return np.where(table_keys[at] == keys, table_counts[at], 0)


def _dense(ids: IntArray) -> tuple[IntArray, int]:
    """``ids`` renumbered ``0..k-1`` in their order (equal ids stay equal: a sort), and ``k``."""
    dense = np.unique(ids, return_inverse=True)[1].astype(np.int64).reshape(-1)
    return dense, (int(dense.max()) + 1 if dense.size else 1)
