"""From texts to statistics to scores: the Python API (``harness.corpus_bleu``, ``harness.sentence_bleu``).

The flow is one direction: validate the inputs, case and tokenize them (:mod:`harness.tokenizers`), encode the
references once, count statistics per chunk of segments (:mod:`harness.stats`; chunking keeps memory bounded on
corpora of millions of segments), then compute scores from the statistics (:mod:`harness.bleu`).

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

from . import token_ids
from .bleu import (
    ASCII_LOWER,
    BleuOptions,
    BleuScore,
    corpus_score,
    make_options,
    orders_needed,
)
from .stats import (
    SegmentStats,
    compiled_loaded,
    count_encoded,
    count_statistics,
    encode_references,
    prefer_compiled_for_text,
)
from .tokenizers import tokenize_corpus

# Segments per chunk.  On the string path the tokens of one chunk live as Python strings (~60 bytes each), so
# this bounds memory (~150 MB at 4 references); on the text-to-ids path a chunk is a few arrays.  Per-chunk
# overhead stays negligible either way.
CHUNK_SEGMENTS = 25_000


def case_and_tokenize(lines: Sequence[str], opts: BleuOptions) -> list[list[str]]:
    """Tokens of every line under the options' tokenizer and case mode.

    ``ascii-lc`` (the ``mteval-v13a`` profile) lowercases A-Z only, like mteval's ``tr/[A-Z]/[a-z]/``; the 13a
    punctuation rules do not involve letters, so lowering before tokenizing equals mteval's order.
    """
    mode = opts.case_mode
    if mode == "ascii-lc":
        return tokenize_corpus([line.translate(ASCII_LOWER) for line in lines], str(opts.tokenize), False)
    return tokenize_corpus(lines, str(opts.tokenize), mode == "lc")


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


@dataclass(frozen=True)
class PreparedReferences:
    """References cased, tokenized and encoded once per chunk, reusable for every system scored against them."""

    chunks: tuple[Any, ...]
    n_segments: int
    opts: BleuOptions
    order: int

    @classmethod
    def build(cls, streams: Sequence[Sequence[str | None]], opts: BleuOptions, order: int | None = None,
              chunk: int = CHUNK_SEGMENTS, systems: int = 1) -> PreparedReferences:
        """``systems``: how many hypothesis streams will be scored against these references.  With the size of
        the references it decides whether loading the compiled kernels (~1 s, once per process) pays off
        (:func:`harness.stats.prefer_compiled`); it changes speed only, never a number."""
        n = len(streams[0])
        chars = sum(len(line) for line in streams[0] if line is not None)
        prefer_compiled_for_text(chars * (len(streams) + systems))
        chunks = tuple(_encode_chunk(streams, start, min(n, start + chunk), opts) for start in range(0, max(n, 1), chunk))
        return cls(chunks, n, opts, order or orders_needed(opts))

    def statistics_of(self, streams: Sequence[Sequence[str]]) -> list[SegmentStats]:
        """Statistics of several hypothesis streams (validated strings), in a thread per core when the compiled
        kernels are loaded (they release the GIL); the same arrays as ``[self.statistics(s) for s in streams]``."""
        return _in_threads(self.statistics, streams)

    def statistics(self, hypotheses: Sequence[str]) -> SegmentStats:
        """Statistics of one hypothesis stream (validated strings) against these references."""
        if len(hypotheses) != self.n_segments:
            raise ValueError(f"{len(hypotheses)} hypotheses but {self.n_segments} reference segments")
        parts = []
        start = 0
        for refs in self.chunks:
            stop = start + len(refs)
            parts.append(_count_chunk(hypotheses[start:stop], refs, self.opts, self.order))
            start = stop
        return SegmentStats.concat(parts)


def _encode_chunk(streams: Sequence[Sequence[str | None]], start: int, stop: int, opts: BleuOptions) -> Any:
    """Segments ``start:stop`` of every reference stream, cased, tokenized and encoded (None = absent).

    Straight from text to ids (:mod:`harness.token_ids`) when the compiled kernel is loaded and the tokenizer
    has that path; else through token lists (:mod:`harness.tokenizers`).
    """
    if token_ids.usable(opts):
        return token_ids.encode_references([stream[start:stop] for stream in streams], opts)
    token_streams = []
    for stream in streams:
        part = stream[start:stop]
        tokens = iter(case_and_tokenize([line for line in part if line is not None], opts))
        token_streams.append([None if line is None else next(tokens) for line in part])
    return encode_references(token_streams)


def _count_chunk(hypotheses: Sequence[str], encoded: Any, opts: BleuOptions, order: int) -> SegmentStats:
    """Statistics of hypothesis lines against a chunk encoded by :func:`_encode_chunk` (on the same path)."""
    if isinstance(encoded.vocab, token_ids.TokenTable):
        h_ids, h_off = token_ids.encode_hypotheses(hypotheses, encoded, opts)
        return count_encoded(h_ids, h_off, encoded, order)
    return count_statistics(case_and_tokenize(hypotheses, opts), encoded, order)


def _count_slice(hypotheses: Sequence[str], start: int, stop: int, encoded: Any, opts: BleuOptions,
                 order: int) -> SegmentStats:
    return _count_chunk(hypotheses[start:stop], encoded, opts, order)


def _in_threads(fn: Callable[[Any], SegmentStats], items: Sequence[Any]) -> list[SegmentStats]:
    """``[fn(x) for x in items]``, in a thread per core when the compiled kernels are loaded (they release the
    GIL; the string path would only contend for it)."""
    workers = min(os.cpu_count() or 1, len(items))
    if workers < 2 or not compiled_loaded():
        return [fn(x) for x in items]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


def systems_statistics(systems: Sequence[Sequence[str]], references: Sequence[Sequence[str | None]],
                       opts: BleuOptions, order: int | None = None, chunk: int = CHUNK_SEGMENTS
                       ) -> list[SegmentStats]:
    """Per-segment statistics of several hypothesis streams against the same references (orders ``1..order``,
    default the options' order): one :class:`SegmentStats` per system, validated as in :func:`corpus_bleu`.

    Streams chunk by chunk: the references of a chunk are encoded once, every system's segments of that chunk
    are counted against them (in a thread per core on the compiled path), then the chunk is dropped, so memory
    beyond the input strings stays bounded on corpora of millions of segments.  The size of the whole job
    decides whether loading the compiled kernels pays off (:func:`harness.stats.prefer_compiled`).
    """
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
    prefer_compiled_for_text(sum(map(len, hyps[0])) * (len(hyps) + len(refs)))
    parts: list[list[SegmentStats]] = [[] for _ in hyps]
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        encoded = _encode_chunk(refs, start, stop, opts)
        counted = _in_threads(partial(_count_slice, start=start, stop=stop, encoded=encoded, opts=opts,
                                      order=order), hyps)
        for k, st in enumerate(counted):
            parts[k].append(st)
        del encoded, counted
    return [SegmentStats.concat(p) for p in parts]


def segment_statistics(hypotheses: Sequence[str], references: Sequence[Sequence[str | None]],
                       opts: BleuOptions, order: int | None = None, chunk: int = CHUNK_SEGMENTS) -> SegmentStats:
    """Validated inputs -> per-segment statistics of one system (see :func:`systems_statistics`)."""
    return systems_statistics([hypotheses], references, opts, order, chunk)[0]


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str | None]], **options: Any) -> BleuScore:
    """Corpus BLEU, sacrebleu's layout and option names (``tokenize``, ``lowercase``, ``smooth_method``,
    ``smooth_value``, ``max_ngram_order``, ``effective_order``) plus ``ref_length``, ``weights``, ``profile``.

    >>> corpus_bleu(["the cat sat on the mat"], [["the cat sat on the mat"]]).score
    100.0
    """
    opts = make_options(**options)
    return corpus_score(segment_statistics(hypotheses, references, opts), opts)


def sentence_bleu(hypothesis: str, references: Sequence[str], **options: Any) -> BleuScore:
    """Sentence BLEU of one hypothesis against its references (a list of strings for this one segment).

    ``effective_order`` defaults to True, as in sacrebleu's ``sentence_bleu`` and ``--sentence-level``.
    """
    if not isinstance(hypothesis, str):
        raise TypeError(f"hypothesis must be a str, got {type(hypothesis).__name__}")
    if isinstance(references, str):
        raise TypeError("references must be a list of strings (the references of this one segment), not a str")
    refs = list(references)
    for k, ref in enumerate(refs):
        if not isinstance(ref, str):
            raise TypeError(f"references[{k}] is {type(ref).__name__}, expected str")
    if not refs:
        raise ValueError("references: at least one reference is needed")
    options.setdefault("effective_order", options.get("profile", "sacrebleu") == "sacrebleu")
    opts = make_options(**options)
    return corpus_score(segment_statistics([hypothesis], [[r] for r in refs], opts), opts)

