"""Raw text straight to token ids, for the ``13a`` and ``none`` tokenizers: the compiled fast path.

Scoring only needs to know which tokens are *equal*, so on large inputs we never build Python token strings:
lines are cased in Python exactly as sacrebleu does (``str.lower``), joined into one array of code points, and a
compiled kernel (:mod:`._token_kernel`) applies the tokenizer's rules per line, splits on the whitespace of
``str.split`` and looks every token up in a hash table of the reference tokens (compared in full: ids are exact).
Building and hashing Python token strings and lists cost 70 % of the time of the string path
(:mod:`.tokenizers`) on 100k segments x 4 references; here it is gone.

Exactness: ``decode(ids) == tokenize_corpus(lines)`` token for token -- tested on the shared data, on random
Unicode text with every character the rules look at, and through the statistics (identical arrays) and scores
(== sacrebleu).  13a's string replacements (``<skipped>``, ``-\\n``, ``\\n``, the four entities) run in Python,
line by line, only on lines that contain one of their triggers; sacrebleu's ``rstrip`` is applied to those lines
too and skipped elsewhere, where it cannot change a token (trailing whitespace is whitespace before and after
the 13a rules, and no rule matches a whitespace character next to another one or to the line's padding).

The pipeline takes this path when it counts with the compiled kernel (:func:`.counting.use_compiled`): below
that size the numba start-up would cost more than it saves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..core.options import BleuOptions
from .counting import EncodedReferences
from .tokenizers import cased

#: Tokenizers with a compiled text-to-ids path (the others go through :mod:`harness.tokenizers`).
SUPPORTED: tuple[str, ...] = ("13a", "none")

_13A_TRIGGERS = ("<skipped>", "\n", "&")

_kernel_module: Any = None
_whitespace: NDArray[np.uint8] | None = None


def usable(opts: BleuOptions, compiled: bool) -> bool:
    """Whether ``opts`` take this path when counting with the compiled kernel (``compiled``): 13a and none."""
    return compiled and str(opts.tokenize) in SUPPORTED


def _kernel() -> Any:
    global _kernel_module
    if _kernel_module is None:
        from . import _token_kernel

        _kernel_module = _token_kernel
    return _kernel_module


def whitespace_table() -> NDArray[np.uint8]:
    """``table[c] == 1`` iff ``chr(c).isspace()``, for the BMP; ``str.split`` splits on exactly these (CPython's
    ``Py_UNICODE_ISSPACE``), and no code point beyond the BMP is whitespace (a test checks both)."""
    global _whitespace
    if _whitespace is None:
        table = np.zeros(0x10000, dtype=np.uint8)
        table[[c for c in range(0x10000) if chr(c).isspace()]] = 1
        _whitespace = table
    return _whitespace


@dataclass
class TokenTable:
    """The vocabulary of a reference set: an open-addressing hash table (``slots``: ``(key, id)`` pairs, see
    :func:`harness._token_kernel.encode_lines`) over the distinct tokens, stored as code points
    (``chars[starts[t]:starts[t] + lens[t]]`` is token ``t``)."""

    slots: NDArray[np.int64]
    starts: NDArray[np.int64]
    lens: NDArray[np.int64]
    chars: NDArray[np.uint32]
    n_vocab: int = 0
    n_chars: int = 0

    @classmethod
    def empty(cls) -> TokenTable:
        """A table of 1,024 slots; the kernel doubles it whenever it gets half full."""
        return cls(np.full(2 * 1024, -1, np.int64), np.zeros(256, np.int64), np.zeros(256, np.int64),
                   np.zeros(4096, np.uint32))

    def __len__(self) -> int:
        return self.n_vocab

    def reserve(self, new_tokens: int) -> None:
        """Room for ``new_tokens`` more tokens of up to that many code points in all, at load factor <= 1/2."""
        from . import _token_kernel

        size = self.slots.size // 2
        if 2 * (self.n_vocab + new_tokens) > size:
            while 2 * (self.n_vocab + new_tokens) > size:
                size *= 2
            self.slots = _token_kernel.rehash(self.slots, size)
        self.chars = _grown(self.chars, self.n_chars + new_tokens)
        self.starts = _grown(self.starts, self.n_vocab + new_tokens)
        self.lens = _grown(self.lens, self.n_vocab + new_tokens)

    def token(self, index: int) -> str:
        start = int(self.starts[index])
        return "".join(map(chr, self.chars[start:start + int(self.lens[index])].tolist()))

    def decode(self, ids: NDArray[np.int64], offsets: NDArray[np.int64]) -> list[list[str]]:
        """Token strings of every line (for tests and debugging; ``-1`` = a token unknown to the table)."""
        words = [self.token(t) for t in range(self.n_vocab)]
        return [[words[t] if t >= 0 else "<unk>" for t in ids[offsets[i]:offsets[i + 1]].tolist()]
                for i in range(offsets.shape[0] - 1)]


def _preprocess_13a(line: str) -> str:
    """sacrebleu's ``rstrip`` and ``Tokenizer13a`` string replacements, in its order."""
    line = line.rstrip().replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    return line


def _code_points(text: str) -> NDArray[Any]:
    """One array element per code point: ``uint8`` when the text is Latin-1 (a copy), else ``uint32``."""
    try:
        return np.frombuffer(text.encode("latin-1"), dtype=np.uint8)
    except UnicodeEncodeError:
        return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def encode_lines(lines: Sequence[str], opts: BleuOptions, table: TokenTable, insert: bool
                 ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``(ids, offsets)``: the token ids of line ``i`` are ``ids[offsets[i]:offsets[i+1]]``.

    With ``insert`` new tokens are added to ``table`` (references); without, they get ``-1`` (hypotheses).
    """
    name = str(opts.tokenize)
    if name not in SUPPORTED:
        raise ValueError(f"no compiled text-to-ids path for tokenizer {name!r} (only {', '.join(SUPPORTED)})")
    kernel = _kernel()
    prepared = cased(list(lines), opts.case_mode)
    joined = "".join(prepared)
    mode = kernel.MODE_13A if name == "13a" else kernel.MODE_SPLIT
    if name == "13a" and any(trigger in joined for trigger in _13A_TRIGGERS):
        prepared = [_preprocess_13a(line) if ("\n" in line or "&" in line or "<skipped>" in line) else line
                    for line in prepared]
        joined = "".join(prepared)
    lengths = np.fromiter(map(len, prepared), dtype=np.int64, count=len(prepared))
    line_off = np.zeros(len(prepared) + 1, dtype=np.int64)
    np.cumsum(lengths, out=line_off[1:])
    cps = _code_points(joined)
    del joined
    longest = int(lengths.max()) if lengths.size else 0
    scratch_a = np.empty(kernel.scratch_size(longest), dtype=np.uint32)
    scratch_b = np.empty_like(scratch_a)
    ids = np.empty(max(1024, cps.size // 3), dtype=np.int64)  # ~4 code points per token and space, usually
    tok_off = np.zeros(len(prepared) + 1, dtype=np.int64)
    line, n_ids = 0, 0
    while True:
        # Without ``insert`` the table is only read (hypotheses may be encoded in several threads at once).
        line, n_vocab, n_chars, n_ids = (int(x) for x in kernel.encode_lines(
            cps, line_off, line, mode, whitespace_table(), insert, table.slots, table.starts, table.lens,
            table.chars, table.n_vocab, table.n_chars, ids, n_ids, tok_off, scratch_a, scratch_b))
        if insert:
            table.n_vocab, table.n_chars = n_vocab, n_chars
        if line == len(prepared):
            return ids[:n_ids].copy(), tok_off
        worst = int(lengths[line])  # the kernel stopped before this line: make room for its worst case, and more
        ids = _grown(ids, n_ids + worst)
        if insert:
            table.reserve(worst)


def _grown(array: NDArray[Any], need: int) -> NDArray[Any]:
    """``array`` with room for at least ``need`` elements (doubling), contents kept."""
    if need <= array.size:
        return array
    out = np.empty(max(need, 2 * array.size), dtype=array.dtype)
    out[: array.size] = array
    return out


def encode_references(streams: Sequence[Sequence[str | None]], opts: BleuOptions) -> EncodedReferences:
    """Reference streams (``streams[k][i]``, ``None`` = absent) -> :class:`.counting.EncodedReferences`, in its
    segment-major layout, with a :class:`TokenTable` as vocabulary."""
    n_refs = len(streams)
    n = len(streams[0])
    # segment-major: segment 0: ref 0, ref 1, ...; segment 1: ...
    ordered = list(streams[0]) if n_refs == 1 else [line for segment in zip(*streams) for line in segment]
    absent = np.zeros(len(ordered), dtype=bool)
    if ordered.count(None):
        absent[[i for i, line in enumerate(ordered) if line is None]] = True
        ordered = ["" if line is None else line for line in ordered]
    table = TokenTable.empty()
    ids, offsets = encode_lines(ordered, opts, table, insert=True)
    lengths = np.diff(offsets)
    lengths[absent] = -1
    return EncodedReferences(ids, offsets, lengths.reshape(n, n_refs), table)


def encode_hypotheses(lines: Sequence[str], references: EncodedReferences, opts: BleuOptions
                      ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Hypothesis lines -> ids in the references' vocabulary (``-1`` = a token no reference has)."""
    if not isinstance(references.vocab, TokenTable):
        raise TypeError("references were encoded from token lists; use harness.text.counting.encode_hypotheses")
    return encode_lines(lines, opts, references.vocab, insert=False)
