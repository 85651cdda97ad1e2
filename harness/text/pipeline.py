"""The one pipeline from texts to statistics: validate, case, tokenize, encode the references once, count.

Used by the Python API, harness jobs, ``harness-score`` (through :mod:`.files`, which streams files in chunks),
comparisons and the Dask shards. Must give the same statistics on its two paths (compiled, Python).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from ..core.options import BleuOptions, orders_needed
from ..core.stats import SegmentStats
from . import token_ids
from .counting import (
    encode_hypotheses,
    encode_references,
    token_statistics,
    tokens_of_text,
    use_compiled,
)
from .encoded import EncodedReferences
from .tokenizers import case_and_tokenize

# The two paths.
# - compiled (.token_ids, .kernels): text -> ids -> statistics in a few kernel calls per chunk, no Python token
#   string, list or per-segment step. The corpus is cut into chunks of lines and the chunks run in a thread per
#   core (the kernels release the GIL): both cores work on one system, and every system of a chunk is counted
#   against its references while they are at hand (harness-score feeds the chunks straight from the files: .files);
# - Python (.tokenizers, numpy counting): where the kernels cannot load, for the tokenizers they do not have
#   (MeCab, SentencePiece), and for small inputs (below .counting._COMPILED_MIN_TOKENS, loading the kernels would
#   cost more than it saves). It works in chunks of CHUNK_SEGMENTS segments so that the token strings of one
#   chunk at a time are alive.
# ``compiled=None`` decides by the size of the whole work, the same way for the same input whatever ran before
# in the process.
#
# Unlike sacrebleu's API, which silently truncates streams of different lengths (sacrebleu #220, #275, #256), a
# length mismatch is a ValueError naming both lengths, and references passed per segment instead of per stream
# (the most common silent error in sacrebleu's tracker) are detected and explained.

#: Segments per chunk on the Python path: the token strings of one chunk (~60 bytes each) live at a time.
CHUNK_SEGMENTS = 25_000
#: Text per chunk on the compiled path (all streams of a chunk together): small enough that a chunk's
#: vocabulary stays in the caches and that both cores get several chunks, large enough that the Python work
#: per chunk (a join, an encode, a few kernel calls) is noise.
CHUNK_BYTES = 1 << 19
#: Fewest and most lines per compiled chunk.
MIN_CHUNK_LINES, MAX_CHUNK_LINES = 256, 16_384


def check_hypotheses(hypotheses: Any, what: str = "hypotheses") -> list[str]:
    """A list of strings, or a ``TypeError`` that says what came instead."""
    if isinstance(hypotheses, (str, bytes)):
        raise TypeError(f"{what} must be a sequence of strings (one per segment), not a single "
                        f"{type(hypotheses).__name__}; wrap it in a list")
    try:
        items = list(hypotheses)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of strings, got {type(hypotheses).__name__}") from None
    if not set(map(type, items)) <= {str}:
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise TypeError(f"{what}[{i}] is {type(item).__name__}, expected str")
    return items


def check_references(references: Any, n_hyps: int) -> list[list[str | None]]:
    """Reference *streams* (``references[k][i]``: reference ``k`` of segment ``i``, ``None`` = absent).

    Raises ``TypeError`` for a bare string, a flat list of strings or non-string entries, and ``ValueError`` for
    streams of the wrong length (naming both lengths, and explaining the per-segment layout when that is what
    the lengths suggest) or a segment left without any reference.
    """
    if isinstance(references, (str, bytes)):
        raise TypeError("references must be a list of reference streams, e.g. [refs] for one reference; "
                        "got a single string")
    try:
        streams = list(references)
    except TypeError:
        raise TypeError(f"references must be a list of reference streams, got {type(references).__name__}") from None
    if not streams:
        raise ValueError("references: at least one reference stream is needed")
    if all(isinstance(s, str) for s in streams):
        raise TypeError(
            "references must be a list of reference *streams* (each a list of strings, one per segment); got a "
            f"flat list of {len(streams)} strings. For one reference per segment pass [refs], not refs")
    out: list[list[str | None]] = []
    for k, stream in enumerate(streams):
        if isinstance(stream, (str, bytes)) or stream is None:
            raise TypeError(f"references[{k}] is {type(stream).__name__}, expected a list of strings (a stream)")
        items = list(stream)
        if not set(map(type, items)) <= {str, type(None)}:
            for i, item in enumerate(items):
                if item is not None and not isinstance(item, str):
                    raise TypeError(f"references[{k}][{i}] is {type(item).__name__}, expected str or None")
        out.append(items)
    lengths = [len(s) for s in out]
    if any(n != n_hyps for n in lengths):
        bad = next(k for k, n in enumerate(lengths) if n != n_hyps)
        message = (f"reference stream {bad} has {lengths[bad]} segments but there are {n_hyps} hypotheses "
                   "(streams must be as long as the hypotheses; nothing is truncated)")
        if len(out) == n_hyps and n_hyps > 1:
            message += (f". The references look per-segment: a list of {n_hyps} lists, one per hypothesis. "
                        "Reference streams are expected instead (references[k][i] = k-th reference of segment "
                        "i): pass list(map(list, zip(*references))) for a fixed number of references per segment")
        raise ValueError(message)
    if all(None in s for s in out):  # only then can a segment be left without any reference
        for i in range(n_hyps):
            if all(s[i] is None for s in out):
                raise ValueError(f"segment {i} has no reference (every stream is None there)")
    return out


def decide_compiled(characters: int, compiled: bool | None = None) -> bool:
    """The compiled path for a work of that many characters (all streams of all systems), or as forced."""
    return use_compiled(tokens_of_text(characters), compiled)


# --------------------------------------------------------------------------------------------------------------
# threads
# --------------------------------------------------------------------------------------------------------------

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def workers() -> int:
    """Threads of the compiled path: one per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(workers(), thread_name_prefix="harness-text")
    return _pool


def _map(fn: Callable[[Any], Any], items: Sequence[Any], parallel: bool) -> list[Any]:
    """``[fn(x) for x in items]``, in the thread pool when ``parallel`` (the compiled kernels release the GIL; the
    Python path would only contend for it)."""
    if not parallel or len(items) < 2 or workers() < 2:
        return [fn(x) for x in items]
    return list(_executor().map(fn, items))


def chunk_lines(n_segments: int, bytes_per_segment: float, limit: int | None = None) -> int:
    """Lines per compiled chunk: about :data:`CHUNK_BYTES` of text, and at least four chunks per thread when the
    corpus allows (between :data:`MIN_CHUNK_LINES` and :data:`MAX_CHUNK_LINES`; at most ``limit``)."""
    lines = int(CHUNK_BYTES / max(bytes_per_segment, 1.0))
    lines = min(lines, -(-n_segments // (4 * workers())))
    lines = max(MIN_CHUNK_LINES, min(MAX_CHUNK_LINES, lines))
    return max(1, min(lines, limit)) if limit else lines


# --------------------------------------------------------------------------------------------------------------
# chunks on either path
# --------------------------------------------------------------------------------------------------------------


class _ThreadTable(threading.local):
    """One token table per thread, emptied for every chunk (its memory reused)."""

    table: token_ids.TokenTable | None = None

    def get(self) -> token_ids.TokenTable:
        if self.table is None:
            self.table = token_ids.TokenTable.empty(1 << 12)
        else:
            self.table.clear()
        return self.table


_tables = _ThreadTable()


def encode_chunk(streams: Sequence[Sequence[str | None]], opts: BleuOptions, compiled: bool,
                 table: token_ids.TokenTable | None = None, reuse: bool = False) -> EncodedReferences:
    """Reference streams of one chunk, cased, tokenized and encoded (None = absent): straight from text to ids
    on the compiled path (``table``, ``reuse``: this thread's, for a chunk dropped right away), else through token
    lists."""
    if token_ids.usable(opts, compiled):
        return token_ids.encode_references(streams, opts, table, reuse)
    token_streams = []
    for part in streams:
        tokens = iter(case_and_tokenize([line for line in part if line is not None], opts))
        token_streams.append([None if line is None else next(tokens) for line in part])
    return encode_references(token_streams)


def count_chunk(hypotheses: Sequence[str], encoded: EncodedReferences, opts: BleuOptions, order: int,
                compiled: bool) -> SegmentStats:
    """Statistics of hypothesis lines against a chunk encoded by :func:`encode_chunk` (on the same path)."""
    if isinstance(encoded.vocab, token_ids.TokenTable):
        h_ids, h_off = token_ids.encode_hypotheses(hypotheses, encoded, opts, reuse=True)
        matches, totals = token_ids.count_ids(h_ids, h_off, encoded, order)
        return SegmentStats(np.diff(h_off), encoded.lengths.copy(), matches, totals)
    return token_statistics(case_and_tokenize(hypotheses, opts), encoded, order, compiled)


def _chunk_of_lines(bounds: tuple[int, int], systems: Sequence[Sequence[str]],
                    references: Sequence[Sequence[str | None]], opts: BleuOptions, order: int
                    ) -> list[SegmentStats]:
    """The compiled path on one chunk of the API's lines: references encoded once (this thread's table), every
    system counted against them."""
    start, stop = bounds
    encoded = encode_chunk([s[start:stop] for s in references], opts, True, _tables.get(), reuse=True)
    return [count_chunk(h[start:stop], encoded, opts, order, True) for h in systems]


def _concat_systems(chunks: list[list[SegmentStats]], n_systems: int) -> list[SegmentStats]:
    out = []
    for k in range(n_systems):
        parts = [c[k] for c in chunks]
        stats = parts[0] if len(parts) == 1 else SegmentStats.concat(parts)
        out.append(stats)
    return out


# --------------------------------------------------------------------------------------------------------------
# references prepared once, systems later (harness jobs)
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PreparedReferences:
    """References cased, tokenized and encoded once per chunk, reusable for every system scored against them."""

    chunks: tuple[EncodedReferences, ...]
    n_segments: int
    opts: BleuOptions
    order: int
    compiled: bool

    @classmethod
    def build(cls, streams: Sequence[Sequence[str | None]], opts: BleuOptions, order: int | None = None,
              chunk: int = CHUNK_SEGMENTS, systems: int = 1, compiled: bool | None = None) -> PreparedReferences:
        """``systems``: how many hypothesis streams will be scored against these references; with the size of
        the references it decides the compiled path when ``compiled`` is None (speed only, never a number).
        ``chunk``: the most segments per chunk."""
        n = len(streams[0])
        chars = sum(map(len, filter(None, streams[0])))
        use = decide_compiled(chars * (len(streams) + systems), compiled) and token_ids.usable(opts, True)
        if use:
            chunk = chunk_lines(n, (chars + n) * (len(streams) + 1) / max(n, 1), chunk)
        ranges = [(start, min(n, start + chunk)) for start in range(0, max(n, 1), chunk)]
        chunks = _map(lambda r: encode_chunk([s[r[0]:r[1]] for s in streams], opts, use), ranges, use)
        return cls(tuple(chunks), n, opts, order or orders_needed(opts), use)

    def _ranges(self) -> list[tuple[int, int, EncodedReferences]]:
        out, start = [], 0
        for refs in self.chunks:
            out.append((start, start + len(refs), refs))
            start += len(refs)
        return out

    def statistics_of(self, streams: Sequence[Sequence[str]]) -> list[SegmentStats]:
        """Statistics of several hypothesis streams (validated strings), every (system, chunk) in a thread per core
        on the compiled path; the same arrays as ``[self.statistics(s) for s in streams]``."""
        for hypotheses in streams:
            if len(hypotheses) != self.n_segments:
                raise ValueError(f"{len(hypotheses)} hypotheses but {self.n_segments} reference segments")
        ranges = self._ranges()
        jobs = [(k, start, stop, refs) for k in range(len(streams)) for start, stop, refs in ranges]
        counted = _map(lambda j: count_chunk(streams[j[0]][j[1]:j[2]], j[3], self.opts, self.order, self.compiled),
                       jobs, self.compiled)
        per = len(ranges)
        return [SegmentStats.concat(counted[k * per:(k + 1) * per]) for k in range(len(streams))]

    def statistics(self, hypotheses: Sequence[str]) -> SegmentStats:
        """Statistics of one hypothesis stream (validated strings) against these references."""
        return self.statistics_of([hypotheses])[0]


# --------------------------------------------------------------------------------------------------------------
# lines in memory (the Python API)
# --------------------------------------------------------------------------------------------------------------


def _count_slice(hypotheses: Sequence[str], start: int, stop: int, encoded: EncodedReferences, opts: BleuOptions,
                 order: int, compiled: bool) -> SegmentStats:
    return count_chunk(hypotheses[start:stop], encoded, opts, order, compiled)


def systems_statistics(systems: Sequence[Sequence[str]], references: Sequence[Sequence[str | None]],
                       opts: BleuOptions, order: int | None = None, chunk: int = CHUNK_SEGMENTS,
                       compiled: bool | None = None) -> list[SegmentStats]:
    """Per-segment statistics of several hypothesis streams against the same references (orders ``1..order``,
    default the options' order): one :class:`SegmentStats` per system, inputs validated as by the API.
    ``chunk``: the most segments per chunk."""
    hyps, refs = check_systems(systems, references)
    n = len(hyps[0])
    order = order or orders_needed(opts)
    chars = sum(map(len, hyps[0]))
    use = decide_compiled(chars * (len(hyps) + len(refs)), compiled)
    if use and token_ids.usable(opts, True):
        lines = chunk_lines(n, (chars + n) * (len(hyps) + len(refs)) / n, chunk)
        ranges = [(start, min(n, start + lines)) for start in range(0, n, lines)]
        chunks = _map(partial(_chunk_of_lines, systems=hyps, references=refs, opts=opts, order=order), ranges, True)
        return _concat_systems(chunks, len(hyps))
    parts: list[list[SegmentStats]] = [[] for _ in hyps]
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        encoded = encode_chunk([s[start:stop] for s in refs], opts, use)
        for k, h in enumerate(hyps):
            parts[k].append(_count_slice(h, start, stop, encoded, opts, order, use))
        del encoded
    return [SegmentStats.concat(p) for p in parts]


def check_systems(systems: Sequence[Sequence[str]], references: Sequence[Sequence[str | None]]
                  ) -> tuple[list[list[str]], list[list[str | None]]]:
    """Several hypothesis streams of one length (at least one segment) and their reference streams, validated as
    by the API (:func:`check_hypotheses`, :func:`check_references`)."""
    if not systems:
        raise ValueError("no hypothesis streams to score")
    hyps = [check_hypotheses(h, "hypotheses" if len(systems) == 1 else f"hypotheses of system {k}")
            for k, h in enumerate(systems)]
    n = len(hyps[0])
    if not n:
        raise ValueError("hypotheses: no segments to score")
    for k, h in enumerate(hyps):
        if len(h) != n:
            raise ValueError(f"system {k} has {len(h)} segments but system 0 has {n}")
    return hyps, check_references(references, n)


def lines_statistics(hypotheses: Sequence[str], references: Sequence[Sequence[str | None]],
                     opts: BleuOptions, order: int | None = None, chunk: int = CHUNK_SEGMENTS,
                     compiled: bool | None = None) -> SegmentStats:
    """Validated inputs -> per-segment statistics of one system (see :func:`systems_statistics`)."""
    return systems_statistics([hypotheses], references, opts, order, chunk, compiled)[0]


# --------------------------------------------------------------------------------------------------------------
# one vocabulary for every stream (counts that name their n-grams: the comparison of two systems)
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EncodedCorpus:
    """Hypothesis streams and their references encoded with one vocabulary: the references' tokens first, then
    every new token of the systems (so every n-gram of every stream has a text, :meth:`words`). ``systems[k]``:
    ``(ids, offsets)`` of system ``k``, the token ids of segment ``i`` being ``ids[offsets[i]:offsets[i+1]]``."""

    references: EncodedReferences
    systems: tuple[tuple[NDArray[np.int64], NDArray[np.int64]], ...]

    def words(self, ids: Sequence[int]) -> list[str]:
        """The tokens of these ids."""
        vocab = self.references.vocab
        if isinstance(vocab, token_ids.TokenTable):
            return [vocab.token(int(i)) for i in ids]
        names = _names_of(vocab)
        return [names[int(i)] for i in ids]


def _names_of(vocab: dict[str, int]) -> list[str]:
    names = [""] * len(vocab)
    for word, index in vocab.items():
        names[index] = word
    return names


def encode_corpus(systems: Sequence[Sequence[str]], references: Sequence[Sequence[str | None]], opts: BleuOptions,
                  compiled: bool | None = None) -> EncodedCorpus:
    """Systems and references (validated as by the API) cased, tokenized and encoded as for their statistics
    (the same tokens on either path), in one vocabulary and one piece: the input of
    :func:`.counting.count_grams`, whose per-segment sums are the statistics :func:`systems_statistics` gives."""
    hyps, refs = check_systems(systems, references)
    chars = sum(map(len, hyps[0]))
    use = decide_compiled(chars * (len(hyps) + len(refs)), compiled)
    if token_ids.usable(opts, use):
        table = token_ids.TokenTable.empty(chars // 12 + 16)
        encoded = token_ids.encode_references(refs, opts, table)
        streams = [token_ids.encode_lines(h, opts, table, insert=True) for h in hyps]
        return EncodedCorpus(encoded, tuple(streams))
    encoded = encode_chunk(refs, opts, False)
    return EncodedCorpus(encoded, tuple(encode_hypotheses(case_and_tokenize(h, opts), encoded.vocab, insert=True)
                                        for h in hyps))
