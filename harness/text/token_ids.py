"""Text straight to token ids with the compiled kernels (:mod:`.native`), for every built-in tokenizer.

No Python token string, list or per-segment step: chunks of lines go to the kernel as UTF-8 buffers. Must give
exactly the tokens of :mod:`.tokenizers` (and sacrebleu): the tests hold it to that.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from ..core.options import BleuOptions
from . import kernels
from .encoded import EncodedReferences

# Two kinds of input:
# - strings (the Python API): the lines of a chunk are joined with LF (one ``str.join``), cased with one
#   ``str.lower`` of the joined text where it is not ASCII (``str.lower`` never looks across a LF, so this equals
#   casing each line; ASCII text is cased in the kernel), and encoded once (text_of_lines). The rare API string
#   that holds a LF itself (13a gives '-\n' and '\n' a meaning) is tokenized by .tokenizers and passed as its
#   tokens joined by spaces, marked so that the kernel only splits it;
# - bytes (files, .reading): chunks of whole lines straight from the file, which the kernel checks as
#   .reading.parse_text does while it decodes them (``validate``); anything irregular stops it (IrregularText),
#   and the caller reads the files whole.
# The class table (class_table) comes from the sources sacrebleu's tokenizers use: ``str.isspace``, the ``regex``
# module's \p{P}, \p{N}, \p{S}, and TokenizerZh's effective CJK ranges (.tokenizers._CJK_ZH).

#: Tokenizers with a compiled path (the others go through :mod:`.tokenizers`).
SUPPORTED: tuple[str, ...] = ("13a", "none", "intl", "zh", "char")

# the constants of harness/_kernels.c (kept equal to them: the tests run every flag and status)
WS, PUNCT, NUMBER, SYMBOL, CJK, BAD, RULES_13A = 1, 2, 4, 8, 16, 32, 64
MODES = {"none": 0, "13a": 1, "intl": 2, "zh": 3, "char": 4}
F_VALIDATE, F_CRLF, F_LOWER_ASCII, F_INSERT, F_LINE_FLAGS = 1, 2, 4, 8, 16
LF_ABSENT, LF_PRETOKENIZED = 1, 2
OK, NEED_IDS, NEED_TABLE, NEED_SCRATCH, IRREGULAR, FEWER_LINES, MORE_LINES = range(7)
S_LINE, S_POS, S_IDS, S_VOCAB, S_CHARS, S_NEED, S_STREAM, S_OFFSET = range(8)
STATE_SIZE = 8
PARAMS_SIZE = 11
COUNT_PARAMS = 9

N_CODE_POINTS = 0x110000
#: What 13a's and zh's rules look at: rule 1's class r'[\{-\~\[-\` -\&\(-\+\:-\@\/]' (the space is whitespace
#: anyway), and '.', ',', '-'.
_RULES_13A = "{|}~[\\]^_`!\"#$%&()*+:;<=>?@/.,-"
_BAD_CODE_POINTS = [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x85, 0x2028, 0x2029, 0xFEFF]


class IrregularText(Exception):
    """The kernel met bytes that :func:`.reading.parse_text` would report or treat specially (``stream``,
    ``offset`` of the line in the buffer), or a stream with fewer or more lines than expected
    (``lines_differ``). Not an error for users: the caller reads the careful way, which reports it."""

    def __init__(self, stream: int, offset: int = -1, lines_differ: bool = False) -> None:
        super().__init__(f"stream {stream}: " + ("line counts differ" if lines_differ else f"at byte {offset}"))
        self.stream, self.offset, self.lines_differ = stream, offset, lines_differ


def usable(opts: BleuOptions, compiled: bool) -> bool:
    """Whether ``opts`` take this path when the work is large enough to compile (``compiled``): a supported
    tokenizer, and kernels that load on this machine."""
    return compiled and str(opts.tokenize) in SUPPORTED and kernels.loaded() is not None


# ---------------------------------------------------------------------------------------------- class table

_tables: dict[bool, NDArray[np.uint8]] = {}
_tables_lock = threading.Lock()


def _bmp_text() -> str:
    """Every BMP code point but the surrogates, as one string."""
    cps = np.concatenate([np.arange(0xD800, dtype=np.uint32), np.arange(0xE000, 0x10000, dtype=np.uint32)])
    return cps.tobytes().decode("utf-32-le")


def _all_text() -> str:
    """Every code point but the surrogates, as one string."""
    cps = np.concatenate([np.arange(0xD800, dtype=np.uint32), np.arange(0xE000, N_CODE_POINTS, dtype=np.uint32)])
    return cps.tobytes().decode("utf-32-le")


def _members(pattern: Any, text: str) -> NDArray[np.int64]:
    """Code points of ``text`` in the maximal runs matched by ``pattern`` (a compiled ``X+`` pattern)."""
    spans = [m.span() for m in pattern.finditer(text)]
    if not spans:
        return np.zeros(0, dtype=np.int64)
    cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    return np.concatenate([cps[a:b] for a, b in spans]).astype(np.int64)


def _cjk_code_points() -> NDArray[np.int64]:
    from .tokenizers import _CJK_ZH

    ranges = []
    i = 0
    while i < len(_CJK_ZH):
        lo = ord(_CJK_ZH[i])
        if i + 2 < len(_CJK_ZH) and _CJK_ZH[i + 1] == "-":
            hi = ord(_CJK_ZH[i + 2])
            i += 3
        else:
            hi = lo
            i += 1
        ranges.append(np.arange(lo, hi + 1, dtype=np.int64))
    return np.concatenate(ranges)


def class_table(intl: bool = False) -> NDArray[np.uint8]:
    """``table[c]``: the bits of code point ``c`` (``WS``: ``str.isspace``; ``BAD``: not allowed in a line of
    a file; ``CJK``: padded by TokenizerZh; with ``intl``, ``PUNCT``/``NUMBER``/``SYMBOL``: the ``regex``
    module's ``\\p{P}``/``\\p{N}``/``\\p{S}``, as TokenizerV14International matches them). Built once."""
    table = _tables.get(intl)
    if table is not None:
        return table
    with _tables_lock:
        table = _tables.get(intl)
        if table is None:
            import re

            table = np.zeros(N_CODE_POINTS, dtype=np.uint8)
            table[_members(re.compile(r"\s+"), _bmp_text())] |= WS  # str.isspace; none beyond the BMP (tested)
            table[_BAD_CODE_POINTS] |= BAD
            table[_cjk_code_points()] |= CJK
            table[[ord(c) for c in _RULES_13A]] |= RULES_13A
            if intl:
                import regex

                every = _all_text()
                for bit, prop in ((PUNCT, r"\p{P}+"), (NUMBER, r"\p{N}+"), (SYMBOL, r"\p{S}+")):
                    table[_members(regex.compile(prop), every)] |= bit
            table.flags.writeable = False
            _tables[intl] = table
    return table


def whitespace_table() -> NDArray[np.uint8]:
    """``table[c] == 1`` iff ``chr(c).isspace()``, for the BMP (what ``str.split`` splits on)."""
    return (class_table()[:0x10000] & WS).astype(np.uint8)


# ---------------------------------------------------------------------------------------------- buffers


def _address(array: NDArray[Any]) -> int:
    return int(array.__array_interface__["data"][0])


def _grown(array: NDArray[Any], need: int) -> NDArray[Any]:
    """``array`` with room for at least ``need`` elements (doubling), contents kept."""
    if need <= array.size:
        return array
    out = np.empty(max(need, 2 * array.size), dtype=array.dtype)
    out[: array.size] = array
    return out


class _Scratch(threading.local):
    """Per-thread buffers of the kernels, reused from call to call."""

    def __init__(self) -> None:
        self.a, self.bnd = np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.int64)
        self.ids: dict[str, NDArray[np.int64]] = {}
        self.cap = 0
        self.slots: list[NDArray[np.int64]] = []
        self.h_gram = np.zeros(1024, dtype=np.int64)

    def text(self, need: int) -> tuple[NDArray[np.uint32], NDArray[np.int64]]:
        """The code points of a line and its token boundaries (``need`` elements each)."""
        if need > self.a.size:
            size = max(need, 2 * self.a.size, 1 << 16)
            self.a, self.bnd = np.empty(size, dtype=np.uint32), np.empty(size, dtype=np.int64)
        return self.a, self.bnd

    def ids_buffer(self, key: str, need: int) -> NDArray[np.int64]:
        """A reusable ids buffer of at least ``need`` elements (one per ``key``: references, hypotheses)."""
        buf = self.ids.get(key)
        if buf is None or buf.size < need:
            buf = self.ids[key] = np.empty(max(need, 2 * (0 if buf is None else buf.size)), dtype=np.int64)
        return buf

    def release(self, keep: int = 1 << 22) -> None:
        """Drop buffers grown beyond ``keep`` elements by a long line."""
        if self.a.size > keep:
            self.a, self.bnd = np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.int64)
        if self.cap > keep:
            self.cap, self.slots = 0, []

    def count(self, cap: int, hyp_cap: int) -> list[NDArray[np.int64]]:
        """The counting kernel's scratch: ``slot_key`` (-1), ``slot_ref``, ``slot_cur``, ``slot_max``,
        ``slot_hyp`` (0), ``used``, ``r_gram`` (``cap`` each) and ``h_gram`` (``hyp_cap``)."""
        if cap > self.cap:
            self.cap = cap
            self.slots = [np.full(cap, -1, dtype=np.int64), *(np.zeros(cap, dtype=np.int64) for _ in range(6))]
        if hyp_cap > self.h_gram.size:
            self.h_gram = np.zeros(max(hyp_cap, 2 * self.h_gram.size), dtype=np.int64)
        return [*self.slots, self.h_gram]


_scratch = _Scratch()


@dataclass
class TokenTable:
    """The vocabulary of a reference set: an open-addressing hash table (``slots``: ``(key, id)`` pairs, see
    ``harness/_kernels.c``) over the distinct tokens, stored as code points (``chars[starts[t]:starts[t] + lens[t]]``
    is token ``t``)."""

    slots: NDArray[np.int64]
    starts: NDArray[np.int64]
    lens: NDArray[np.int64]
    chars: NDArray[np.uint32]
    n_vocab: int = 0
    n_chars: int = 0

    @classmethod
    def empty(cls, expected_tokens: int = 1024) -> TokenTable:
        """A table for about ``expected_tokens`` distinct tokens (it grows when needed)."""
        size = 1024
        while size < 2 * expected_tokens:
            size *= 2
        return cls(np.full(2 * size, -1, np.int64), np.zeros(size // 2, np.int64), np.zeros(size // 2, np.int64),
                   np.zeros(4 * size, np.uint32))

    def __len__(self) -> int:
        return self.n_vocab

    @property
    def size(self) -> int:
        return self.slots.size // 2

    def clear(self) -> None:
        """Empty the table, keeping its memory (a thread reuses one table chunk after chunk)."""
        self.slots.fill(-1)
        self.n_vocab = self.n_chars = 0

    def reserve(self, new_tokens: int) -> None:
        """Room for ``new_tokens`` more tokens of up to that many code points in all, at load factor <= 1/2."""
        size = self.size
        if 2 * (self.n_vocab + new_tokens) > size:
            while 2 * (self.n_vocab + new_tokens) > size:
                size *= 2
            out = np.full(2 * size, -1, np.int64)
            kern = kernels.loaded()
            assert kern is not None
            kern.rehash(_address(self.slots), self.size, _address(out), size)
            self.slots = out
        self.chars = _grown(self.chars, self.n_chars + new_tokens)
        self.starts = _grown(self.starts, self.n_vocab + new_tokens)
        self.lens = _grown(self.lens, self.n_vocab + new_tokens)

    def token(self, index: int) -> str:
        start = int(self.starts[index])
        return self.chars[start:start + int(self.lens[index])].tobytes().decode("utf-32-le", "surrogatepass")

    def decode(self, ids: NDArray[np.int64], offsets: NDArray[np.int64]) -> list[list[str]]:
        """Token strings of every line (for tests and debugging; ``-1`` = a token unknown to the table)."""
        text = self.chars[:self.n_chars].tobytes().decode("utf-32-le", "surrogatepass")  # every token's characters
        words = [text[a:a + n] for a, n in zip(self.starts[:self.n_vocab].tolist(), self.lens[:self.n_vocab].tolist())]
        words.append("<unk>")  # id -1
        flat = [words[t] for t in ids.tolist()]
        bounds = offsets.tolist()
        return [flat[a:b] for a, b in zip(bounds, bounds[1:])]


# ---------------------------------------------------------------------------------------------- encoding


@dataclass(frozen=True)
class Text:
    """A chunk of ``n_streams`` streams of ``n_lines`` lines each, ready for the kernel: ``data`` (UTF-8), the
    streams' byte ranges and flags (``bounds``: starts, ends, per-stream flags), the call's flags (casing,
    validation) and, if any line needs one, per-line flags (absent reference, pre-tokenized)."""

    data: bytes
    bounds: NDArray[np.int64]
    n_lines: int
    flags: int = 0
    line_flags: NDArray[np.uint8] | None = None

    @property
    def n_streams(self) -> int:
        return self.bounds.size // 3

    @classmethod
    def of_pieces(cls, pieces: Sequence[bytes | memoryview], n_lines: int, flags: int = 0,
                  stream_flags: Sequence[int] | None = None) -> Text:
        """Streams already in bytes (chunks of files), concatenated into one buffer."""
        sizes = np.fromiter((len(p) for p in pieces), dtype=np.int64, count=len(pieces))
        ends = np.cumsum(sizes)
        extra = np.zeros(len(pieces), np.int64) if stream_flags is None else np.asarray(stream_flags, np.int64)
        return cls(b"".join(pieces), np.concatenate([ends - sizes, ends, extra]), n_lines, flags)


def cased(text: Text, opts: BleuOptions) -> Text:
    """A :class:`Text` of bytes (files) cased as :func:`text_of_lines` cases lines: ``ascii-lc`` and ASCII text
    in the kernel, other text with ``str.lower`` of each stream here (bytes that do not decode are left to the
    kernel's check, which stops at them)."""
    case = opts.case_mode
    if case == "mixed":
        return text
    flags = text.flags | F_LOWER_ASCII
    if case == "ascii-lc" or text.data.isascii():
        return Text(text.data, text.bounds, text.n_lines, flags, text.line_flags)
    n = text.n_streams
    parts = []
    for s in range(n):
        piece = text.data[int(text.bounds[s]):int(text.bounds[n + s])]
        try:
            parts.append(piece.decode("utf-8").lower().encode("utf-8"))
        except UnicodeDecodeError:
            raise IrregularText(s, int(text.bounds[s])) from None
    return Text.of_pieces(parts, text.n_lines, flags, text.bounds[2 * n:].tolist())


def text_of_lines(streams: Sequence[Sequence[str | None]], opts: BleuOptions) -> Text:
    """Streams of lines (``None`` = an absent reference) as one :class:`Text`: joined with ``\\n`` (every line
    terminated), cased as sacrebleu (``lc``: ``str.lower``) or mteval (``ascii-lc``: A-Z only) does, UTF-8.

    ``lc``: A-Z are lowered in the kernel; a stream that is not ASCII is lowered here first with one
    ``str.lower`` of its joined text, which equals lowering each line (``\\n`` is neither cased nor
    case-ignorable, so no context crosses it) and leaves nothing for the kernel to change (``str.lower`` is
    idempotent and never yields A-Z: tested over every code point)."""
    n_lines = len(streams[0]) if streams else 0
    case = opts.case_mode
    flags = F_LOWER_ASCII if case in ("lc", "ascii-lc") else 0
    line_flags: NDArray[np.uint8] | None = None
    parts = []
    for s, stream in enumerate(streams):
        given = stream if isinstance(stream, list) else list(stream)
        if None in given:
            if line_flags is None:
                line_flags = np.zeros(len(streams) * n_lines, dtype=np.uint8)
            absent = [i for i, line in enumerate(given) if line is None]
            line_flags[s * n_lines + np.asarray(absent, dtype=np.int64)] |= LF_ABSENT
            given = ["" if line is None else line for line in given]
        lines = cast("list[str]", given)  # no None left (the list is not copied when there was none)
        joined = "\n".join(lines) + "\n"
        if joined.count("\n") != n_lines:  # a line holds a '\n' itself: it goes in as its tokens
            from .tokenizers import case_and_tokenize

            inner = [i for i, line in enumerate(lines) if "\n" in line]
            lines = list(lines)
            for i, tokens in zip(inner, case_and_tokenize([lines[i] for i in inner], opts)):
                lines[i] = " ".join(tokens)
            if line_flags is None:
                line_flags = np.zeros(len(streams) * n_lines, dtype=np.uint8)
            line_flags[s * n_lines + np.asarray(inner, dtype=np.int64)] |= LF_PRETOKENIZED
            joined = "\n".join(lines) + "\n"
        if joined.isascii():
            parts.append(joined.encode("ascii"))
        else:
            if case == "lc":
                joined = joined.lower()
            parts.append(joined.encode("utf-8", "surrogatepass"))
    sizes = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    ends = np.cumsum(sizes)
    bounds = np.concatenate([ends - sizes, ends, np.zeros(len(parts), np.int64)])
    if line_flags is not None:
        flags |= F_LINE_FLAGS
    return Text(b"".join(parts), bounds, n_lines, flags, line_flags)


@dataclass(frozen=True)
class Encoded:
    """Token ids of a :class:`Text`: line ``g`` (stream ``g // n_lines``) is ``ids[offsets[g]:offsets[g+1]]``;
    ``empty[s]``: empty lines of stream ``s``."""

    ids: NDArray[np.int64]
    offsets: NDArray[np.int64]
    empty: NDArray[np.int64]


def encode_text(text: Text, opts: BleuOptions, table: TokenTable, insert: bool, validate: bool = False,
                reuse: str | None = None) -> Encoded:
    """Token ids of every line of ``text`` under the options' tokenizer; ``insert`` adds unknown tokens to
    ``table`` (references), else they get ``-1`` (hypotheses). ``validate``: check the bytes as
    :func:`.reading.parse_text` does (raises :class:`IrregularText`). ``reuse``: write the ids into this thread's
    buffer of that name (valid until the thread's next call with the same name: for chunks that are dropped
    right away; allocating per chunk would leave the freed memory scattered over the threads' heaps)."""
    kern = kernels.loaded()
    if kern is None:
        raise RuntimeError("the compiled text kernels are not available")
    name = str(opts.tokenize)
    if name not in MODES:
        raise ValueError(f"no compiled path for tokenizer {name!r} (only {', '.join(SUPPORTED)})")
    classes = class_table(intl=name == "intl")
    n_streams, n_lines = text.n_streams, text.n_lines
    total = n_streams * n_lines
    flags = text.flags | (F_VALIDATE if validate else 0) | (F_INSERT if insert else 0)
    data = np.frombuffer(text.data, dtype=np.uint8) if text.data else np.zeros(1, np.uint8)
    bounds = np.ascontiguousarray(text.bounds, dtype=np.int64)
    line_flags = text.line_flags if text.line_flags is not None else np.zeros(1, np.uint8)
    estimate = max(1024, len(text.data) // 3)  # about one token per 6 bytes, usually
    ids = _scratch.ids_buffer(reuse, estimate) if reuse else np.empty(estimate, dtype=np.int64)
    tok_off = np.zeros(total + 1, dtype=np.int64)
    state = np.zeros(STATE_SIZE, dtype=np.int64)
    empty = np.zeros(max(n_streams, 1), dtype=np.int64)
    state[S_VOCAB], state[S_CHARS] = table.n_vocab, table.n_chars
    a, bnd = _scratch.text(1 << 16)
    params = np.zeros(PARAMS_SIZE, dtype=np.int64)
    while True:
        params[:] = (n_streams, n_lines, MODES[name], flags, classes.size, table.size, table.starts.size,
                     table.chars.size, ids.size, a.size, len(text.data))
        status = kern.encode(_address(data), _address(bounds), _address(params), _address(classes),
                             _address(line_flags), _address(table.slots), _address(table.starts),
                             _address(table.lens), _address(table.chars), _address(ids), _address(tok_off),
                             _address(a), _address(bnd), _address(state), _address(empty))
        if insert:
            table.n_vocab, table.n_chars = int(state[S_VOCAB]), int(state[S_CHARS])
        if status == OK:
            n_ids = int(state[S_IDS])
            return Encoded(ids[:n_ids] if reuse or 2 * n_ids > ids.size else ids[:n_ids].copy(), tok_off,
                           empty[:n_streams])
        if status == NEED_IDS:
            ids = _grown(ids, int(state[S_NEED]))
            if reuse:
                _scratch.ids[reuse] = ids
        elif status == NEED_TABLE:
            table.reserve(int(state[S_NEED]))
        elif status == NEED_SCRATCH:
            a, bnd = _scratch.text(int(state[S_NEED]))
        elif status == IRREGULAR:
            raise IrregularText(int(state[S_STREAM]), int(state[S_OFFSET]))
        else:  # FEWER_LINES, MORE_LINES
            raise IrregularText(int(state[S_STREAM]), lines_differ=True)


def encode_lines(lines: Sequence[str], opts: BleuOptions, table: TokenTable, insert: bool,
                 reuse: str | None = None) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``(ids, offsets)`` of lines of the API (the token ids of line ``i`` are ``ids[offsets[i]:offsets[i+1]]``);
    ``insert`` adds new tokens to ``table`` (references), else they get ``-1`` (hypotheses)."""
    if not lines:
        return np.zeros(0, np.int64), np.zeros(1, np.int64)
    encoded = encode_text(text_of_lines([lines], opts), opts, table, insert, reuse=reuse)
    return encoded.ids, encoded.offsets


def references_of(encoded: Encoded, n_refs: int, n_lines: int, table: TokenTable,
                  absent: NDArray[np.uint8] | None = None) -> EncodedReferences:
    """The :class:`.encoded.EncodedReferences` (stream-major) of references encoded in one call."""
    lengths = np.diff(encoded.offsets).reshape(n_refs, n_lines).T.copy()
    if absent is not None:
        lengths[(absent.reshape(n_refs, n_lines).T & LF_ABSENT) != 0] = -1
    return EncodedReferences(encoded.ids, encoded.offsets, lengths, table, layout="stream")


def encode_references(streams: Sequence[Sequence[str | None]], opts: BleuOptions,
                      table: TokenTable | None = None, reuse: bool = False) -> EncodedReferences:
    """Reference streams (``streams[k][i]``, ``None`` = absent) -> :class:`.encoded.EncodedReferences` with a
    :class:`TokenTable` as vocabulary (stream-major layout)."""
    n = len(streams[0])
    table = TokenTable.empty(sum(len(line) for line in streams[0] if line) // 12 + 16) if table is None else table
    text = text_of_lines(streams, opts)
    encoded = encode_text(text, opts, table, insert=True, reuse="references" if reuse else None)
    return references_of(encoded, len(streams), n, table, text.line_flags)


def encode_hypotheses(lines: Sequence[str], references: EncodedReferences, opts: BleuOptions,
                      reuse: bool = False) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Hypothesis lines -> ids in the references' vocabulary (``-1`` = a token no reference has)."""
    if not isinstance(references.vocab, TokenTable):
        raise TypeError("references were encoded from token lists; use harness.text.counting.encode_hypotheses")
    return encode_lines(lines, opts, references.vocab, insert=False, reuse="hypotheses" if reuse else None)


# ---------------------------------------------------------------------------------------------- counting


def count_capacity(references: EncodedReferences) -> int:
    """Slots of the counting kernel's table: a power of two above twice the reference tokens of any segment."""
    most = int(np.maximum(references.lengths, 0).sum(axis=1).max()) if len(references) else 0
    cap = 16
    while cap < 2 * most + 2:
        cap *= 2
    return cap


def count_ids(h_ids: NDArray[np.int64], h_off: NDArray[np.int64], references: EncodedReferences, max_order: int
              ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``(matches, totals)`` ``[n, max_order]`` of hypothesis ids against encoded references, with the compiled
    kernel (either layout of the references)."""
    kern = kernels.loaded()
    if kern is None:
        raise RuntimeError("the compiled text kernels are not available")
    n = h_off.shape[0] - 1
    r = references.n_refs
    matches = np.zeros((n, max_order), dtype=np.int64)
    totals = np.zeros((n, max_order), dtype=np.int64)
    if n == 0:
        return matches, totals
    cap = count_capacity(references)
    h_len = np.diff(h_off)
    slots = _scratch.count(cap, int(h_len.max()) if h_len.size else 1)
    stride_k, stride_i = (n, 1) if references.layout == "stream" else (1, r)
    h_ids = np.ascontiguousarray(h_ids, dtype=np.int64)
    h_off = np.ascontiguousarray(h_off, dtype=np.int64)
    r_ids = np.ascontiguousarray(references.ids, dtype=np.int64)
    r_off = np.ascontiguousarray(references.offsets, dtype=np.int64)
    params = np.array([r, n, max_order, slots[0].size, h_ids.size, r_ids.size, stride_k, stride_i,
                       slots[-1].size], np.int64)
    keep = (h_ids, h_off, r_ids, r_off)
    one = np.zeros(1, np.int64)
    kern.count(_address(h_ids if h_ids.size else one), _address(h_off), _address(r_ids if r_ids.size else one),
               _address(r_off), _address(params), _address(matches), _address(totals),
               *(_address(x) for x in slots))
    del keep
    return matches, totals


def kernel_info() -> dict[str, Any]:
    """Whether the kernels are in use in this process and where from (for the benchmarks)."""
    from .. import native as core

    kern = kernels.loaded()
    return {"loaded": kern is not None, "source": None if kern is None else kern.source, "path": core.path()}


__all__ = ["SUPPORTED", "Encoded", "IrregularText", "Text", "TokenTable", "class_table", "count_ids",
           "encode_hypotheses", "encode_lines", "encode_references", "encode_text", "references_of",
           "text_of_lines", "usable", "whitespace_table"]
