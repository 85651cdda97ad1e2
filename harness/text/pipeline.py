"""The one pipeline from texts to statistics: validate, case, tokenize, encode the references once, count.

Used by the Python API (:mod:`harness.api`), harness jobs (:mod:`harness.job.statistics`), ``harness-score`` and
the Dask shards. Whether the compiled kernels count (and, for ``13a`` and ``none``, go from text straight to
token ids, :mod:`.token_ids`) is an argument, ``compiled``: ``None`` decides by the size of the whole work, the
same way for the same input whatever ran before in the process. Both paths give identical statistics.

Work goes chunk by chunk (:data:`CHUNK_SEGMENTS` segments): the references of a chunk are encoded once, every
system's segments of that chunk are counted against them (in a thread per core on the compiled path, whose
kernels release the GIL), then the chunk is dropped, so memory beyond the input strings stays bounded.

Unlike sacrebleu's API, which silently truncates streams of different lengths (sacrebleu #220, #275, #256), a
length mismatch is a ``ValueError`` naming both lengths, and references passed per segment instead of per stream
(the most common silent error in sacrebleu's tracker) are detected and explained.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Sequence

from ..core.options import BleuOptions, orders_needed
from ..core.stats import SegmentStats
from . import token_ids
from .counting import (
    EncodedReferences,
    count_encoded,
    count_statistics,
    encode_references,
    tokens_of_text,
    use_compiled,
)
from .tokenizers import case_and_tokenize

# Segments per chunk.  On the string path the tokens of one chunk live as Python strings (~60 bytes each), so
# this bounds memory (~150 MB at 4 references); on the text-to-ids path a chunk is a few arrays.
CHUNK_SEGMENTS = 25_000


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


def encode_chunk(streams: Sequence[Sequence[str | None]], opts: BleuOptions, compiled: bool) -> EncodedReferences:
    """Reference streams of one chunk, cased, tokenized and encoded (None = absent): straight from text to ids
    on the compiled path for 13a/none, else through token lists."""
    if token_ids.usable(opts, compiled):
        return token_ids.encode_references(streams, opts)
    token_streams = []
    for part in streams:
        tokens = iter(case_and_tokenize([line for line in part if line is not None], opts))
        token_streams.append([None if line is None else next(tokens) for line in part])
    return encode_references(token_streams)


def count_chunk(hypotheses: Sequence[str], encoded: EncodedReferences, opts: BleuOptions, order: int,
                compiled: bool) -> SegmentStats:
    """Statistics of hypothesis lines against a chunk encoded by :func:`encode_chunk` (on the same path)."""
    if isinstance(encoded.vocab, token_ids.TokenTable):
        h_ids, h_off = token_ids.encode_hypotheses(hypotheses, encoded, opts)
        return count_encoded(h_ids, h_off, encoded, order, compiled)
    return count_statistics(case_and_tokenize(hypotheses, opts), encoded, order, compiled)


def _in_threads(fn: Callable[[Any], SegmentStats], items: Sequence[Any], compiled: bool) -> list[SegmentStats]:
    """``[fn(x) for x in items]``, in a thread per core on the compiled path (its kernels release the GIL; the
    string path would only contend for it)."""
    workers = min(os.cpu_count() or 1, len(items))
    if workers < 2 or not compiled:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


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
        the references it decides the compiled path when ``compiled`` is None (speed only, never a number)."""
        n = len(streams[0])
        chars = sum(len(line) for line in streams[0] if line is not None)
        use = decide_compiled(chars * (len(streams) + systems), compiled)
        chunks = tuple(encode_chunk([s[start:min(n, start + chunk)] for s in streams], opts, use)
                       for start in range(0, max(n, 1), chunk))
        return cls(chunks, n, opts, order or orders_needed(opts), use)

    def statistics_of(self, streams: Sequence[Sequence[str]]) -> list[SegmentStats]:
        """Statistics of several hypothesis streams (validated strings), in a thread per core on the compiled
        path; the same arrays as ``[self.statistics(s) for s in streams]``."""
        return _in_threads(self.statistics, streams, self.compiled)

    def statistics(self, hypotheses: Sequence[str]) -> SegmentStats:
        """Statistics of one hypothesis stream (validated strings) against these references."""
        if len(hypotheses) != self.n_segments:
            raise ValueError(f"{len(hypotheses)} hypotheses but {self.n_segments} reference segments")
        parts = []
        start = 0
        for refs in self.chunks:
            stop = start + len(refs)
            parts.append(count_chunk(hypotheses[start:stop], refs, self.opts, self.order, self.compiled))
            start = stop
        return SegmentStats.concat(parts)


def _count_slice(hypotheses: Sequence[str], start: int, stop: int, encoded: EncodedReferences, opts: BleuOptions,
                 order: int, compiled: bool) -> SegmentStats:
    return count_chunk(hypotheses[start:stop], encoded, opts, order, compiled)


def systems_statistics(systems: Sequence[Sequence[str]], references: Sequence[Sequence[str | None]],
                       opts: BleuOptions, order: int | None = None, chunk: int = CHUNK_SEGMENTS,
                       compiled: bool | None = None) -> list[SegmentStats]:
    """Per-segment statistics of several hypothesis streams against the same references (orders ``1..order``,
    default the options' order): one :class:`SegmentStats` per system, inputs validated as by the API."""
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
    refs = check_references(references, n)
    order = order or orders_needed(opts)
    use = decide_compiled(sum(map(len, hyps[0])) * (len(hyps) + len(refs)), compiled)
    parts: list[list[SegmentStats]] = [[] for _ in hyps]
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        encoded = encode_chunk([s[start:stop] for s in refs], opts, use)
        counted = _in_threads(partial(_count_slice, start=start, stop=stop, encoded=encoded, opts=opts,
                                      order=order, compiled=use), hyps, use)
        for k, st in enumerate(counted):
            parts[k].append(st)
        del encoded, counted
    return [SegmentStats.concat(p) for p in parts]


def segment_statistics(hypotheses: Sequence[str], references: Sequence[Sequence[str | None]],
                       opts: BleuOptions, order: int | None = None, chunk: int = CHUNK_SEGMENTS,
                       compiled: bool | None = None) -> SegmentStats:
    """Validated inputs -> per-segment statistics of one system (see :func:`systems_statistics`)."""
    return systems_statistics([hypotheses], references, opts, order, chunk, compiled)[0]
