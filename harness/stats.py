"""Per-segment sufficient statistics of BLEU: the currency of the whole harness.

For every segment ``i`` and n-gram order ``n = 1..N`` we count

- ``matches[i, n-1]``: clipped matches, ``sum_g min(count_hyp(g), max_k count_ref_k(g))`` (Papineni et al. 2002,
  section 2.1: "modified n-gram precision"; sacrebleu ``_compute_segment_statistics``), where the maximum runs over
  the references *present* for that segment;
- ``totals[i, n-1]``: hypothesis n-grams, ``max(0, hyp_len - n + 1)``;
- ``hyp_len[i]`` and ``ref_lens[i, k]`` (``-1`` where reference ``k`` is absent, sacrebleu's ``None``).

Everything downstream (every smoothing, reference-length rule, bootstrap resample, block, correlation) is array
arithmetic on these arrays, and they are additive over segments, so shards computed anywhere can be concatenated.

The counting kernel is compiled with numba (``cache=True``: compiled once per machine, then loaded from the
cache). Per segment and order it builds a small open-addressing hash table of the reference n-grams, keeping
per n-gram the maximum count over references, then streams the hypothesis n-grams through it: an occurrence
counts as a match while its running count does not exceed that maximum, which is exactly
``sum_g min(count_hyp(g), maxref(g))`` without ever materialising n-gram tuples. Tokens are integer ids from a
vocabulary built on the references only: a hypothesis token unknown to the references gets id ``-1`` and can
never match, which is what it should do.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any, Literal, Sequence

import numpy as np
from numpy.typing import NDArray

from .errors import ConfigError

RefLengthRule = Literal["closest", "shortest", "average"]
REF_LENGTH_RULES: tuple[str, ...] = ("closest", "shortest", "average")

TokenLists = Sequence[Sequence[str]]

# Segments per thread-pool task: below this the kernel runs in the calling thread.
_PARALLEL_MIN_SEGMENTS = 20_000
# Below this many tokens (hypothesis + references) the numpy path is used, unless the compiled kernel is loaded
# already (see prefer_compiled): importing numba and loading its cached kernel costs ~1 s, far more than counting
# one test set of a few thousand segments with numpy.
_NUMBA_MIN_TOKENS = 400_000


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

    def ref_len(self, rule: RefLengthRule = "closest") -> NDArray[np.float64]:
        """Effective reference length per segment under a brevity-penalty rule.

        ``closest``: the reference length closest to the hypothesis length, ties going to the shorter one
        (Papineni et al. 2002 section 2.2.2 "best match length"; sacrebleu ``_get_closest_ref_len``; mteval-v13a
        default). ``shortest``: the shortest reference (mteval-v11b; tensorflow-nmt / HF ``bleu``). ``average``:
        the mean length of the present references.
        """
        return effective_ref_len(self.hyp_len, self.ref_lens, rule)

    def matrix(self, rule: RefLengthRule = "closest") -> NDArray[np.float64]:
        """The ``[n, 2 + 2N]`` statistics matrix ``[hyp_len, ref_len, matches_1..N, totals_1..N]``.

        The corpus score is a function of ``matrix.sum(axis=0)``: this is sacrebleu's statistics vector.
        """
        return np.column_stack(
            [self.hyp_len.astype(np.float64), self.ref_len(rule), self.matches, self.totals]
        ).astype(np.float64, copy=False)


def effective_ref_len(
    hyp_len: NDArray[np.int64], ref_lens: NDArray[np.int64], rule: RefLengthRule
) -> NDArray[np.float64]:
    """See :meth:`SegmentStats.ref_len`; segments without any reference are an error upstream."""
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
    if rule == "average":
        count = present.sum(axis=1)
        return np.where(present, ref_lens, 0).sum(axis=1) / np.maximum(count, 1)
    raise ConfigError("ref_length", f"unknown reference-length rule {rule!r}", REF_LENGTH_RULES)


# --------------------------------------------------------------------------------------------------------------
# Encoding tokens as integer ids
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EncodedReferences:
    """A reference set encoded once and reused for every hypothesis stream scored against it.

    ``ids`` holds every reference token, segment-major (segment 0: ref 0, ref 1, ...; segment 1: ...);
    reference ``k`` of segment ``i`` is ``ids[offsets[i * R + k] : offsets[i * R + k + 1]]``;
    ``lengths[i, k]`` is its length, ``-1`` when absent. ``vocab`` maps reference tokens to ids: a dict when
    built from token lists here, a :class:`harness.token_ids.TokenTable` when built from raw text there.
    """

    ids: NDArray[np.int64]
    offsets: NDArray[np.int64]
    lengths: NDArray[np.int64]
    vocab: Any

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

_KERNEL = None


def _kernel():  # noqa: ANN202 - returns a numba dispatcher
    """Compile (or load from numba's on-disk cache) the counting kernel on first use."""
    global _KERNEL
    if _KERNEL is None:
        from ._kernel import count_ngrams

        _KERNEL = count_ngrams
    return _KERNEL


def prefer_compiled(expected_tokens: int) -> bool:
    """Load the compiled kernel now if the whole job (all systems together) is large enough to amortise its
    ~1 s start-up; once loaded, every later count uses it. Returns whether it is loaded."""
    if _KERNEL is None and expected_tokens >= _NUMBA_MIN_TOKENS:
        _kernel()
    return _KERNEL is not None


def prefer_compiled_for_text(characters: int) -> bool:
    """:func:`prefer_compiled` for a job of that many characters of text (all streams, all systems), at about
    six characters per token (word plus space) in the languages of the shared data."""
    return prefer_compiled(characters // 6)


def compiled_loaded() -> bool:
    """Whether the compiled kernel is loaded (then every count, and the text-to-ids path, use compiled code)."""
    return _KERNEL is not None


def count_statistics(
    hypotheses: TokenLists, references: EncodedReferences, max_order: int = 4
) -> SegmentStats:
    """Sufficient statistics of one hypothesis stream (token lists) against encoded references."""
    h_ids, h_off = encode_hypotheses(hypotheses, references.vocab)
    return count_encoded(h_ids, h_off, references, max_order)


def count_encoded(h_ids: NDArray[np.int64], h_off: NDArray[np.int64], references: EncodedReferences,
                  max_order: int = 4) -> SegmentStats:
    """Sufficient statistics of hypothesis token ids (``h_ids[h_off[i]:h_off[i+1]]`` = segment ``i``, ``-1`` =
    unknown to the references) against encoded references."""
    if max_order < 1:
        raise ConfigError("max_ngram_order", f"must be >= 1, got {max_order}")
    if h_off.shape[0] - 1 != len(references):
        raise ValueError(f"{h_off.shape[0] - 1} hypotheses but {len(references)} reference segments")
    if _KERNEL is None and h_ids.size + references.ids.size < _NUMBA_MIN_TOKENS:
        matches, totals = count_numpy(h_ids, h_off, references, max_order)
    else:
        matches, totals = _count_numba(h_ids, h_off, references, max_order)
    hyp_len = np.diff(h_off)
    return SegmentStats(hyp_len, references.lengths.copy(), matches, totals)


def _count_numba(h_ids: NDArray[np.int64], h_off: NDArray[np.int64], references: EncodedReferences,
                 max_order: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The compiled kernel, over segment ranges in threads (it releases the GIL)."""
    n = h_off.shape[0] - 1
    matches = np.zeros((n, max_order), dtype=np.int64)
    totals = np.zeros((n, max_order), dtype=np.int64)
    kernel = _kernel()
    r = references.n_refs
    workers = min(os.cpu_count() or 1, 4)
    if n < _PARALLEL_MIN_SEGMENTS or workers < 2:
        kernel(h_ids, h_off, references.ids, references.offsets, r, max_order, 0, n, matches, totals)
        return matches, totals
    bounds = np.linspace(0, n, workers + 1).astype(np.int64)
    with ThreadPoolExecutor(workers) as pool:
        jobs = [pool.submit(kernel, h_ids, h_off, references.ids, references.offsets, r, max_order,
                            int(bounds[j]), int(bounds[j + 1]), matches, totals) for j in range(workers)]
        for job in jobs:
            job.result()
    return matches, totals


def count_numpy(h_ids: NDArray[np.int64], h_off: NDArray[np.int64], references: EncodedReferences,
                max_order: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The same counts with sorting instead of hashing (no compilation: the fast path for small inputs).

    All tokens (hypotheses, then references) form one flat array. The order-n n-gram starting at a position gets
    a dense id from the pair (id of the (n-1)-gram there, token n-1 places on), so equal ids mean equal token
    sequences; n-grams running past the end of their segment are masked out. Then, with keys
    ``segment * G + gram``: hypothesis counts, the maximum count over references, and ``sum min(.,.)`` per segment.
    Unknown hypothesis tokens (``-1``) share one id that no reference token has.
    """
    n_seg = h_off.shape[0] - 1
    n_refs = references.n_refs
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
    gram = tokens
    for n in range(1, max_order + 1):
        if n > 1:
            following = tokens[np.minimum(pos + n - 1, size - 1)]
            gram = np.unique(gram * (unknown + 1) + following, return_inverse=True)[1].astype(np.int64)
        valid = pos + n <= ends
        width = int(gram.max()) + 1 if size else 1
        key = owner * width + gram
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
        matches[:, n - 1] = np.bincount(hyp_keys // width, weights=clipped, minlength=n_seg).astype(np.int64)
    return matches, totals.astype(np.int64)


def compute_statistics(
    hypotheses: TokenLists,
    references: Sequence[Sequence[Sequence[str] | None]],
    max_order: int = 4,
) -> SegmentStats:
    """Convenience: encode ``references`` (token streams) and count ``hypotheses`` (token lists) against them."""
    return count_statistics(hypotheses, encode_references(references), max_order)
