"""Statistics of files (``harness-score``): streamed in chunks on the compiled path, only the statistics kept.

The files are cut into chunks of whole lines (:class:`.chunks.LineChunks`), checked by the kernel as
:func:`.reading.parse_text` checks them, and every system of a chunk counted against its references while they
are at hand, in a thread per core: memory does not grow with the corpus beyond the statistics arrays. Anything
the whole-file reading must see (an error, a stray carriage return, line counts that differ) makes it read the
files whole instead, through :mod:`.pipeline`, which reports it; either way the statistics are the same.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from ..core.options import BleuOptions, orders_needed
from ..core.stats import SegmentStats
from . import token_ids
from .chunks import LineChunks, NotStreamable, Source, TextSummary
from .pipeline import (
    MIN_CHUNK_LINES,
    _executor,
    _tables,
    chunk_lines,
    decide_compiled,
    systems_statistics,
    workers,
)
from .reading import DEFAULT_MAX_EMPTY_SHARE, TextFile, check_parallel

#: Bytes read from a file at a time when streaming (more when a chunk's lines need it).
READ_BLOCK = 1 << 20


@dataclass(frozen=True)
class FileStatistics:
    """Statistics of hypothesis files against reference files, and what reading each file reported
    (:class:`.reading.TextFile` when read whole, :class:`.chunks.TextSummary` when streamed: both have
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
    :meth:`.chunks.Source.read` (the errors, their order and the notes of :func:`.reading.read_text`), checks the
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
