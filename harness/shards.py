"""Statistics of one huge corpus, computed in shards on a Dask cluster and concatenated (``pip install
'bleu-harness[dask]'``).

The statistics of :mod:`harness.core.stats` are per segment and additive, so a corpus can be cut into line ranges
(shards), every shard counted anywhere, and the shards concatenated in order: the result is the very same
arrays a single process computes, hence exactly the same score (tested: identical arrays, difference 0).

The files never travel through the scheduler: the workers read them from the shared file system.

1. *Index* (in the workers): every file's size, first and last bytes, and the number of ``\\n`` (and ``\\r\\n``)
   in each 1 MiB block. From these the client knows each file's line count, whether it is a CRLF file (the
   whole-file rule of :func:`harness.text.reading.read_text`) and where every shard boundary lies. Unequal line
   counts are reported by :func:`harness.text.reading.check_parallel` (same message as a single process), before any
   tokenizing.
2. *Shards* (in the workers): each task reads its line range of the hypothesis and of every reference file (a
   seek and a read; at most one 1 MiB block is scanned to find each boundary), checks it with
   :func:`harness.text.reading.read_text` itself (strict UTF-8, BOM, control and separator characters, CRLF), then
   tokenizes and counts with :func:`harness.text.pipeline.lines_statistics`. Errors name the file and the *global*
   line number (and byte offset), as a single-process read would.
3. The client concatenates the shards in order (:meth:`SegmentStats.concat`) and scores
   (:func:`harness.core.bleu.corpus_score`).

Each shard is checked by :func:`harness.text.reading.parse_text` on its bytes with one line of padding (``\\n``,
or ``\\r\\n`` in a CRLF file) before it (after it for the first shard, whose BOM must stay at byte 0), so that a
U+FEFF at the start of a shard is "inside the file" and the CRLF decision is the whole file's, exactly as when the
whole file is read; its errors carry their line and byte offset as fields, which are moved to the file's terms.

    from distributed import Client
    from harness.shards import sharded_corpus_bleu

    client = Client("tcp://scheduler:8786")                      # or Client(LocalCluster(...)), or an address
    score = sharded_corpus_bleu("/shared/hyp.txt", ["/shared/ref1.txt", "/shared/ref2.txt"], client=client,
                                shard_segments=100_000, tokenize="13a")
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .core.bleu import BleuScore, corpus_score
from .core.options import BleuOptions, make_options
from .core.stats import SegmentStats
from .errors import HarnessError, InputError
from .text.pipeline import lines_statistics
from .text.reading import BadCharacterError, EncodingError, TextFile, check_parallel, hex_excerpt, parse_text, read_text

__all__ = ["DEFAULT_SHARD_SEGMENTS", "MissingExtraError", "sharded_corpus_bleu", "sharded_statistics"]

#: Segments per shard: the unit of work of one task (tokens of one shard live in one worker's memory).
DEFAULT_SHARD_SEGMENTS = 100_000
#: Bytes per newline-count block of the index (the most a worker scans to find a shard boundary).
INDEX_BLOCK = 1 << 20
#: Bytes scanned by one index task.
INDEX_RANGE = 64 << 20

_BOM_BYTES = b"\xef\xbb\xbf"
_EXTRA_HINT = "pip install 'bleu-harness[dask]'"

log = logging.getLogger(__name__)


class MissingExtraError(HarnessError, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it."""


def _distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise MissingExtraError(
            f"sharded statistics need Dask (dask.distributed), which is not installed: {_EXTRA_HINT}"
        ) from exc
    return distributed


# --------------------------------------------------------------------------------------------------------------
# Worker side (module-level functions: they are pickled by reference and imported in the workers)
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Failure:
    """A :class:`HarnessError` (bad input; an option a worker cannot honour) carried back from a worker: its class,
    message and fields. Pickling the exception itself would fail: unpickling calls the class with ``args`` (the
    message alone), which the located error classes (:class:`EncodingError`, :class:`ConfigError`...) do not
    accept."""

    cls: type[HarnessError]
    message: str
    fields: dict[str, Any]

    @classmethod
    def of(cls, exc: HarnessError) -> _Failure:
        return cls(type(exc), str(exc), dict(vars(exc)))

    def error(self) -> HarnessError:
        """The worker's error again: same class, same message, same fields (``path``, ``line``, ``byte_offset``...)."""
        exc = self.cls.__new__(self.cls)
        Exception.__init__(exc, self.message)
        vars(exc).update(self.fields)
        return exc


def _guarded(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except HarnessError as exc:
        return _Failure.of(exc)


def _probe_impl(path: str) -> tuple[int, bytes, bytes]:
    """Size, first 3 and last 8 bytes; unreadable, empty or BOM-only files get read_text's own error."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(3)
            f.seek(max(0, size - 8))
            tail = f.read(8)
    except OSError:
        read_text(path)  # raises the InputError a single-process read gives (not found, a directory, ...)
        raise
    if size == 0 or (size == 3 and head == _BOM_BYTES):
        read_text(path)  # the empty-file errors
    return size, head, tail


def _count_impl(path: str, start: int, stop: int, block: int) -> tuple[list[int], int]:
    """Newlines per ``block`` bytes in ``[start, stop)`` and the CRLF pairs whose LF lies there."""
    with open(path, "rb") as f:
        f.seek(max(0, start - 1))
        data = f.read(stop - max(0, start - 1))
    base = 1 if start > 0 else 0
    counts = [data.count(b"\n", base + a, base + min(a + block, stop - start)) for a in range(0, stop - start, block)]
    return counts, data.count(b"\r\n")


@dataclass(frozen=True)
class _Boundary:
    """Where a line starts: byte ``offset`` if known, else just after the ``k``-th LF of ``[lo, hi)``."""

    offset: int | None = None
    lo: int = 0
    hi: int = 0
    k: int = 0


@dataclass(frozen=True)
class _Span:
    """Lines ``[first, stop)`` (0-based) of one file."""

    path: str
    first: int
    stop: int
    start: _Boundary
    end: _Boundary
    crlf: bool
    size: int


def _offset(f: Any, b: _Boundary) -> int:
    if b.offset is not None:
        return b.offset
    f.seek(b.lo)
    block = np.frombuffer(f.read(b.hi - b.lo), dtype=np.uint8)
    return b.lo + int(np.flatnonzero(block == 10)[b.k - 1]) + 1


def _read_span(span: _Span, strict: bool) -> list[str]:
    """The span's lines, checked by :func:`parse_text`; its errors are given in the file's lines and offsets."""
    try:
        with open(span.path, "rb") as f:
            start, end = _offset(f, span.start), _offset(f, span.end)
            f.seek(start)
            data = f.read(end - start)
    except OSError:
        read_text(span.path)  # the file went away or became unreadable since the index: read_text's error
        raise
    # One line of padding makes parse_text's whole-file decisions the file's: before the shard (a U+FEFF there is
    # then inside the file; LF or CRLF as the file's rule says) or, for the first shard, after it (a BOM stays at
    # byte 0). The first shard of a one-shard file is the whole file and needs none.
    line_pad = b"\r\n" if span.crlf else b"\n"
    pad, tail_pad = (line_pad, b"") if span.first > 0 else (b"", line_pad if span.end.offset != span.size else b"")
    shift = span.first - (1 if pad else 0)  # file line = line in the padded span + shift
    try:
        lines = parse_text(pad + data + tail_pad, span.path, strict=strict, log_notes=False).lines
    except EncodingError as exc:  # the file's byte offset, and the excerpt from the file's own bytes
        at = exc.byte_offset - len(pad) + start  # type: ignore[operator]
        n_bad = len(exc.bad_bytes or b"")
        with open(span.path, "rb") as f:
            f.seek(max(0, at - 6))
            window = f.read(at - max(0, at - 6) + n_bad + 6)
        k = at - max(0, at - 6)
        raise EncodingError(span.path, int(exc.line) + shift, int(exc.column), at, exc.detail,  # type: ignore[arg-type]
                            hex_excerpt(window, k, k + n_bad), exc.bad_bytes or b"") from None
    except BadCharacterError as exc:
        raise BadCharacterError(span.path, int(exc.line) + shift, int(exc.column), exc.label,  # type: ignore[arg-type]
                                exc.n_more, f"lines {span.first + 1}-{span.stop}") from None
    except InputError as exc:  # the other located errors (a BOM inside the file, a stray CR in strict mode, ...)
        raise exc.relocated(span.path, shift, start - len(pad)) from None
    if pad:
        lines = lines[1:]
    if tail_pad:
        lines = lines[:-1]
    if len(lines) != span.stop - span.first:  # the file changed since it was indexed
        raise InputError(f"lines {span.first + 1}-{span.stop} changed while being read "
                         f"({len(lines)} lines found there)", span.path)
    return lines


def _shard_impl(spans: Sequence[_Span], opts: BleuOptions, strict: bool) -> SegmentStats:
    lines = [_read_span(span, strict) for span in spans]
    return lines_statistics(lines[0], lines[1:], opts)


def _probe(path: str) -> tuple[int, bytes, bytes] | _Failure:
    return _guarded(_probe_impl, path)


def _count(path: str, start: int, stop: int, block: int) -> tuple[list[int], int] | _Failure:
    return _guarded(_count_impl, path, start, stop, block)


def _shard(spans: Sequence[_Span], opts: BleuOptions, strict: bool) -> SegmentStats | _Failure:
    return _guarded(_shard_impl, spans, opts, strict)


# --------------------------------------------------------------------------------------------------------------
# Client side
# --------------------------------------------------------------------------------------------------------------


class _Lines:
    """Stand-in for a TextFile's lines for :func:`check_parallel`: the count, and whether the last is empty."""

    def __init__(self, n: int, last_empty: bool) -> None:
        self.n, self.last_empty = n, last_empty

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> str:
        if index != -1:
            raise IndexError(index)
        return "" if self.last_empty else "?"


@dataclass(frozen=True)
class _FileIndex:
    path: str
    size: int
    n_lines: int
    crlf: bool
    bom: bool
    block: int
    cum: np.ndarray  # cum[b] = LFs before block b (bytes [b * block, (b + 1) * block))

    def boundary(self, line: int) -> _Boundary:
        """Where 0-based line ``line`` starts (``n_lines`` = end of file)."""
        if line == 0:
            return _Boundary(offset=0)
        if line >= self.n_lines:
            return _Boundary(offset=self.size)
        b = int(np.searchsorted(self.cum, line, side="left")) - 1  # cum[b] < line <= cum[b + 1]
        lo = b * self.block
        return _Boundary(lo=lo, hi=min(lo + self.block, self.size), k=line - int(self.cum[b]))


def _last_line_empty(tail: bytes, size: int, bom: bool, crlf: bool) -> bool:
    whole = size <= len(tail)
    t = tail[3:] if whole and bom else tail
    if t.endswith(b"\n"):
        t = t[:-1]
    if crlf and t.endswith(b"\r"):
        t = t[:-1]
    return t.endswith(b"\n") or (whole and not t)


class _Runner:
    """Submits module-level tasks to a Dask client and brings results (or the first task's error) back in order."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def map(self, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
        futures = [self.client.submit(fn, *args, pure=False) for args in calls]
        out = []
        try:
            for fut in futures:  # in order: the error reported is the earliest one, whatever finished first
                result = fut.result()
                if isinstance(result, _Failure):
                    raise result.error()
                out.append(result)
        finally:
            self.client.cancel(futures)
        return out


@contextlib.contextmanager
def _client(client: Any) -> Iterator[Any]:
    """The given client; a new one for an address; the default client; else a temporary local cluster."""
    distributed = _distributed()
    if client is not None and not isinstance(client, str):
        yield client
        return
    if isinstance(client, str):
        with distributed.Client(client) as c:
            yield c
        return
    try:
        yield distributed.default_client()
        return
    except ValueError:
        pass
    log.info("no Dask client given or active: starting a local cluster (one process per core)")
    with distributed.LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


def _index(runner: _Runner, paths: Sequence[str]) -> list[_FileIndex]:
    block = int(INDEX_BLOCK)
    span = block * max(1, int(INDEX_RANGE) // block)  # whole blocks per task, so block numbers are the file's
    probes = runner.map(_probe, [(p,) for p in paths])
    calls, owners = [], []
    for i, (p, (size, _, _)) in enumerate(zip(paths, probes)):
        for a in range(0, size, span):
            calls.append((p, a, min(a + span, size), block))
            owners.append(i)
    results = runner.map(_count, calls)
    indexes, stand_ins = [], []
    for i, (p, (size, head, tail)) in enumerate(zip(paths, probes)):
        mine = [r for r, o in zip(results, owners) if o == i]
        counts = np.array([c for r in mine for c in r[0]], dtype=np.int64)
        n_lf, n_crlf = int(counts.sum()), sum(r[1] for r in mine)
        crlf = n_lf > 0 and n_crlf == n_lf  # read_text's rule: every LF of the file preceded by CR
        bom = head == _BOM_BYTES
        n_lines = n_lf if tail.endswith(b"\n") else n_lf + 1
        indexes.append(_FileIndex(p, size, n_lines, crlf, bom, block, np.concatenate([[0], np.cumsum(counts)])))
        stand_ins.append(TextFile(path=Path(p), name=Path(p).stem,
                                  lines=_Lines(n_lines, _last_line_empty(tail, size, bom, crlf)),  # type: ignore[arg-type]
                                  sha256="", n_empty=0, bom=bom, crlf=crlf))
    check_parallel(stand_ins)
    for ix in indexes:
        if ix.bom:
            log.warning("%s: UTF-8 BOM removed", ix.path)
        if ix.crlf:
            log.warning("%s: CRLF line endings converted to LF", ix.path)
    return indexes


def sharded_statistics(hyp_path: str | os.PathLike[str], ref_paths: Sequence[str | os.PathLike[str]],
                       opts: BleuOptions | None = None, *, shard_segments: int = DEFAULT_SHARD_SEGMENTS,
                       client: Any = None, strict: bool = False) -> SegmentStats:
    """Per-segment statistics of a hypothesis file against reference files (one reference per file, one segment
    per line), computed in shards of ``shard_segments`` lines on a Dask cluster and concatenated in order:
    identical to ``lines_statistics(read_text(hyp).lines, [read_text(r).lines ...], opts)``.

    ``client``: a ``distributed.Client``, a scheduler address (``"tcp://host:8786"``: connected for this call),
    or ``None`` (the current default client, else a temporary local cluster with one process per core).
    Paths are made absolute here and must name the same files on every worker (a shared file system).
    ``strict`` is :func:`harness.text.reading.read_text`'s. Bad input raises :class:`InputError` naming the file and
    the line of the file; unequal line counts are reported before any tokenizing.
    """
    opts = make_options() if opts is None else opts.resolved()
    if isinstance(ref_paths, (str, os.PathLike)):
        raise TypeError("ref_paths must be a list of reference files, e.g. [ref] for one reference")
    if not ref_paths:
        raise ValueError("ref_paths: at least one reference file is needed")
    if int(shard_segments) < 1:
        raise ValueError(f"shard_segments must be >= 1, got {shard_segments}")
    paths = [os.path.abspath(os.fspath(p)) for p in [hyp_path, *ref_paths]]
    with _client(client) as c:
        runner = _Runner(c)
        indexes = _index(runner, paths)
        n = indexes[0].n_lines
        calls = []
        for first in range(0, n, int(shard_segments)):
            stop = min(n, first + int(shard_segments))
            spans = [_Span(ix.path, first, stop, ix.boundary(first), ix.boundary(stop), ix.crlf, ix.size)
                     for ix in indexes]
            calls.append((spans, opts, strict))
        parts = runner.map(_shard, calls)
    return SegmentStats.concat(parts)


def sharded_corpus_bleu(hyp_path: str | os.PathLike[str], ref_paths: Sequence[str | os.PathLike[str]],
                        opts: BleuOptions | None = None, *, shard_segments: int = DEFAULT_SHARD_SEGMENTS,
                        client: Any = None, strict: bool = False, **options: Any) -> BleuScore:
    """Corpus BLEU of a hypothesis file from :func:`sharded_statistics`; options as in ``harness.corpus_bleu``
    (``tokenize=``, ``lowercase=``, ``profile=``, ...) or a :class:`BleuOptions` (not both). The score equals
    ``harness.corpus_bleu`` on the files' lines exactly."""
    if opts is not None and options:
        raise TypeError("pass either opts (BleuOptions) or keyword options, not both")
    opts = make_options(**options) if opts is None else opts.resolved()
    stats = sharded_statistics(hyp_path, ref_paths, opts, shard_segments=shard_segments, client=client,
                               strict=strict)
    return corpus_score(stats, opts)
