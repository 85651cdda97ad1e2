"""The one pipeline from texts to statistics: validate, case, tokenize, encode the references once, count.

Used by the Python API, harness jobs, ``harness-score`` (:func:`files_statistics`) and the Dask shards. Must give
the same statistics on its two paths (compiled, Python) and, for files, the errors and notes of reading each file
whole, however the files are cut into chunks.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
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
from .reading import (
    DEFAULT_MAX_EMPTY_SHARE,
    LineChunks,
    NotStreamable,
    Source,
    TextFile,
    TextSummary,
    check_parallel,
)
from .tokenizers import case_and_tokenize

# The two paths.
# - compiled (.token_ids, .native): text -> ids -> statistics in a few kernel calls per chunk, no Python token
#   string, list or per-segment step. The corpus is cut into chunks of lines and the chunks run in a thread per
#   core (the kernels release the GIL): both cores work on one system, and every system of a chunk is counted
#   against its references while they are at hand. harness-score feeds the chunks straight from the files
#   (.reading.LineChunks), checked by the kernel as .reading.parse_text checks them, and keeps only the
#   statistics: memory does not grow with the corpus beyond the statistics arrays;
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
#: Bytes read from a file at a time when streaming (more when a chunk's lines need it).
READ_BLOCK = 1 << 20


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


# --------------------------------------------------------------------------------------------------------------
# files (harness-score): streamed in chunks, only the statistics kept
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileStatistics:
    """Statistics of hypothesis files against reference files, and what reading each file reported
    (:class:`.reading.TextFile` when read whole, :class:`.reading.TextSummary` when streamed: both have
    ``path``, ``name``, ``n_lines``, ``warnings``...)."""

    statistics: list[SegmentStats]
    references: list[Any]
    hypotheses: list[Any]
    streamed: bool = False


@dataclass
class _Parts:
    """Statistics of the chunks of a streamed job, kept compact until the end (int32 where the values fit)."""

    n_systems: int
    order: int
    ref_lens: list[NDArray[Any]] = field(default_factory=list)
    hyp_len: list[list[NDArray[Any]]] = field(default_factory=list)
    matches: list[list[NDArray[Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.hyp_len = [[] for _ in range(self.n_systems)]
        self.matches = [[] for _ in range(self.n_systems)]

    @staticmethod
    def _compact(a: NDArray[np.int64]) -> NDArray[Any]:
        return a.astype(np.int32) if a.size and int(a.max()) < 2**31 and int(a.min()) >= -(2**31) else a

    def add(self, ref_lens: NDArray[np.int64], systems: list[tuple[NDArray[np.int64], NDArray[np.int64]]]) -> None:
        self.ref_lens.append(self._compact(ref_lens))
        for k, (hyp_len, matches) in enumerate(systems):
            self.hyp_len[k].append(self._compact(hyp_len))
            self.matches[k].append(self._compact(matches))

    def statistics(self) -> list[SegmentStats]:
        def joined(parts: list[NDArray[Any]], shape: tuple[int, ...]) -> NDArray[np.int64]:
            out = np.empty(shape, dtype=np.int64)
            if parts:
                np.concatenate(parts, out=out, casting="same_kind")
            return out

        n = sum(p.shape[0] for p in self.ref_lens)
        n_refs = self.ref_lens[0].shape[1] if self.ref_lens else 0
        ref_lens = joined(self.ref_lens, (n, n_refs))
        self.ref_lens.clear()
        out = []
        for k in range(self.n_systems):
            hyp_len = joined(self.hyp_len[k], (n,))
            matches = joined(self.matches[k], (n, self.order))
            self.hyp_len[k].clear()
            self.matches[k].clear()
            totals = hyp_len[:, None] - np.arange(self.order)[None, :]
            np.maximum(totals, 0, out=totals)
            out.append(SegmentStats(hyp_len, ref_lens if k == 0 else ref_lens.copy(), matches, totals))
        return out


def _streamed_chunk(pieces: list[memoryview], n_lines: int, crlf: list[bool], n_refs: int, opts: BleuOptions,
                    order: int) -> tuple[NDArray[np.int64], list[tuple[NDArray[np.int64], NDArray[np.int64]]],
                                         NDArray[np.int64]]:
    """One chunk of every file (references first): checked and encoded by the kernel, counted; returns the
    reference lengths, (hypothesis lengths, matches) per system and the empty lines of every file."""
    table = _tables.get()
    flags = [token_ids.F_CRLF if c else 0 for c in crlf]
    ref_text = token_ids.cased(token_ids.Text.of_pieces(pieces[:n_refs], n_lines, stream_flags=flags[:n_refs]), opts)
    encoded = token_ids.encode_text(ref_text, opts, table, insert=True, validate=True, reuse="references")
    refs = token_ids.references_of(encoded, n_refs, n_lines, table)
    empty = [encoded.empty]
    systems = []
    for k in range(n_refs, len(pieces)):
        text = token_ids.cased(token_ids.Text.of_pieces([pieces[k]], n_lines, stream_flags=[flags[k]]), opts)
        hyp = token_ids.encode_text(text, opts, table, insert=False, validate=True, reuse="hypotheses")
        matches, _ = token_ids.count_ids(hyp.ids, hyp.offsets, refs, order)
        systems.append((np.diff(hyp.offsets), matches))
        empty.append(hyp.empty)
    return refs.lengths, systems, np.concatenate(empty)


def _stream(references: Sequence[Source], hypotheses: Sequence[Source], opts: BleuOptions, order: int,
            strict: bool, max_empty_share: float, chunk: int | None, block: int) -> FileStatistics:
    """The compiled path over files read in chunks; :class:`NotStreamable` for anything the whole-file reading
    must see (errors, stray carriage returns, line counts that differ)."""
    from . import kernels

    kern = kernels.loaded()
    if kern is None:
        raise NotStreamable("no compiled kernels")
    sources = [*references, *hypotheses]
    readers: list[LineChunks] = []
    pending: list[Future[Any]] = []
    parts = _Parts(len(hypotheses), order)
    empty = np.zeros(len(sources), dtype=np.int64)
    pool = _executor() if workers() > 1 else None

    def collect(result: tuple[Any, ...]) -> None:
        ref_lens, systems, chunk_empty = result
        parts.add(ref_lens, systems)
        empty[:] += chunk_empty

    def submit(taken: list[tuple[memoryview, int]]) -> bool:
        """Hand one chunk of every file to a thread; False once every file has ended."""
        counts = {n for _, n in taken}
        if len(counts) != 1:
            raise NotStreamable("line counts differ")
        n = counts.pop()
        if n == 0:
            return False
        args = ([piece for piece, _ in taken], n, [r.crlf for r in readers], len(references), opts, order)
        if pool is None:
            collect(_streamed_chunk(*args))
        else:
            pending.append(pool.submit(_streamed_chunk, *args))
            while len(pending) > workers() + 1:
                collect(pending.pop(0).result())
        return True

    try:
        for source in sources:
            readers.append(LineChunks(source, kern.lines_end, strict=strict, block=block))
        # the first lines of every file tell the bytes per segment, hence the chunk size
        taken = [r.take(MIN_CHUNK_LINES if chunk is None else max(1, min(chunk, MIN_CHUNK_LINES))) for r in readers]
        first_bytes, first_lines = len(taken[0][0]), max(taken[0][1], 1)
        per_segment = sum(len(piece) for piece, _ in taken) / first_lines
        expected = int(sources[0].size / max(first_bytes / first_lines, 1.0))
        lines = chunk_lines(expected, per_segment, chunk)
        if submit(taken):
            while submit([r.take(lines) for r in readers]):
                pass
        while pending:
            collect(pending.pop(0).result())
    except token_ids.IrregularText as exc:
        raise NotStreamable(str(exc)) from None
    finally:
        for job in pending:
            job.cancel()
        for r in readers:
            r.close()
    summaries: list[TextSummary] = [r.summary(int(e), max_empty_share=max_empty_share)
                                    for r, e in zip(readers, empty)]
    readers.clear()  # the readers' buffers (submit, a closure, still names the list)
    del taken
    _release_memory()
    statistics = parts.statistics()
    _release_memory()
    return FileStatistics(statistics, summaries[:len(references)], summaries[len(references):], True)


def _release_memory() -> None:
    """Give the memory the chunks freed back to the system before the statistics are assembled: glibc keeps
    freed blocks in the heaps of the threads that used them (its threshold for mapping large blocks rises as they
    are freed), 50-100 MB on a 1M-segment job, which would add to the peak (``malloc_trim``; elsewhere a no-op)."""
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


def files_statistics(references: Sequence[Source], hypotheses: Sequence[Source], opts: BleuOptions,
                     order: int | None = None, *, strict: bool = False, compiled: bool | None = None,
                     max_empty_share: float = DEFAULT_MAX_EMPTY_SHARE, chunk: int | None = None,
                     block: int = READ_BLOCK) -> FileStatistics:
    """Statistics of hypothesis files against reference files (one reference per file, one segment per line),
    with what :func:`.reading.read_text` reports about each file. ``chunk``: the most lines per chunk; ``block``:
    bytes read at a time (both for tests: chunks and reads cut the files anywhere).

    On the compiled path the files are read in chunks and only the statistics are kept. Whatever the chunked
    reading cannot settle by itself (an error, a stray carriage return, files of different lengths, a BOM in
    ``strict`` mode) sends the job to the whole-file reading, which reads every file in turn with
    :meth:`.reading.Source.read` (the errors, their order and the notes of :func:`.reading.read_text`), checks the
    line counts with :func:`.reading.check_parallel` and counts from the lines: the same numbers and the same
    messages either way. Nothing is logged before the path that succeeds is known.
    """
    if not hypotheses:
        raise ValueError("no hypothesis files to score")
    if not references:
        raise ValueError("no reference files")
    order = order or orders_needed(opts)
    size = sum(s.size for s in (*references, *hypotheses))
    use = decide_compiled(size, compiled) and token_ids.usable(opts, True)
    if use:
        try:
            return _stream(references, hypotheses, opts, order, strict, max_empty_share, chunk, block)
        except NotStreamable:
            pass
    texts: list[TextFile] = [s.read(strict=strict, max_empty_share=max_empty_share) for s in (*references,
                                                                                               *hypotheses)]
    check_parallel(texts)
    refs, hyps = texts[:len(references)], texts[len(references):]
    stats = systems_statistics([h.lines for h in hyps], [r.lines for r in refs], opts, order,
                               compiled=use if compiled is None else compiled)
    return FileStatistics(stats, list(refs), list(hyps), False)
