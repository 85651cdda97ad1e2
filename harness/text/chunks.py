"""The files of ``harness-score`` read in chunks of whole lines (the compiled path of :mod:`.files`), with the
decisions and checks of the whole-file reading (:func:`.reading.read_text`): a BOM, CRLF, a final newline, empty
lines, the hash. Anything only the whole-file reading can report hands the file back to it (:class:`NotStreamable`).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import InputError
from .reading import (
    _BOM_BYTES,
    BOM_NOTE,
    CRLF_NOTE,
    DEFAULT_MAX_EMPTY_SHARE,
    STDIN,
    TextFile,
    check_stdin,
    empty_lines_note,
    log_text_notes,
    parse_text,
    read_bytes,
    read_stream,
    read_text,
)


class NotStreamable(Exception):
    """A file that the chunked reading (:class:`LineChunks`) hands back to the whole-file reading
    (:meth:`Source.read`), which then reports it exactly as :func:`read_text` does: an error opening or reading
    it, an empty file, a BOM in strict mode, bytes the compiled check stops at, or line counts that differ. Never
    shown to users."""


@dataclass(frozen=True)
class Source:
    """A text input: a regular file (read in chunks), bytes already read (standard input, a pipe: they can be
    read once only), or the error reading it gave (raised by :meth:`read` when the whole-file reading comes to
    it, so that errors come in the order :func:`read_text` on each file in turn gives them)."""

    path: Path
    name: str
    data: bytes | None = None
    error: InputError | None = None

    @classmethod
    def of_path(cls, path: str | os.PathLike[str], name: str | None = None) -> Source:
        p = Path(path)
        stem = name if name is not None else p.stem
        try:
            regular = stat.S_ISREG(os.stat(p).st_mode)
        except OSError:
            regular = False
        if regular:
            return cls(p, stem)
        try:
            return cls(p, stem, data=read_bytes(p))
        except InputError as exc:
            return cls(p, stem, error=exc)

    @classmethod
    def of_stdin(cls, name: str = STDIN, max_lines: int | None = None) -> Source:
        """Standard input, read at once (``max_lines``: see :func:`read_stream`)."""
        try:
            check_stdin()
            return cls(Path(STDIN), name, data=read_stream(sys.stdin.buffer, max_lines=max_lines))
        except InputError as exc:
            return cls(Path(STDIN), name, error=exc)

    @property
    def size(self) -> int:
        """Bytes (0 if unknown)."""
        if self.data is not None:
            return len(self.data)
        try:
            return os.path.getsize(self.path) if self.error is None else 0
        except OSError:
            return 0

    def read(self, *, strict: bool = False, max_empty_share: float = DEFAULT_MAX_EMPTY_SHARE) -> TextFile:
        """The whole text, checked by :func:`parse_text` (errors and notes as :func:`read_text` gives them)."""
        if self.error is not None:
            raise self.error
        if self.data is not None:
            return parse_text(self.data, self.path, strict=strict, name=self.name, max_empty_share=max_empty_share)
        return read_text(self.path, strict=strict, name=self.name, max_empty_share=max_empty_share)


@dataclass(frozen=True)
class TextSummary:
    """What :func:`read_text` reports about a text read in chunks (whose lines are not kept): the fields of
    :class:`TextFile` but ``lines`` and ``sha256`` (``sha256`` here only when asked for)."""

    path: Path
    name: str
    n_lines: int
    n_empty: int
    bom: bool
    crlf: bool
    warnings: list[str]
    final_newline: bool = True
    sha256: str | None = None


class LineChunks:
    """A :class:`Source` read as chunks of whole lines (bytes), with the BOM and line-ending decisions of
    :func:`read_text`: a BOM at byte 0 is skipped (:class:`NotStreamable` in ``strict`` mode), and the first
    line's ending says whether this is a CRLF file (the compiled check then holds every other line to it).
    ``lines_end(address, start, end, n)`` is the compiled scan for the ``n``-th LF of a buffer.

    The lines themselves are checked where they are tokenized (:func:`harness.text.token_ids.encode_text` with
    ``validate``); this class only cuts them. Reads ``block`` bytes at a time (more for long lines)."""

    def __init__(self, source: Source, lines_end: Any, *, strict: bool = False, block: int = 1 << 22,
                 digest: bool = False) -> None:
        self.source = source
        self._lines_end = lines_end
        self._block = block
        self._file: BinaryIO | None = None
        self._buf = b""
        self._pos = 0
        self._eof = False
        self._hash = hashlib.sha256() if digest else None
        self.bom = False
        self.crlf = False
        self.n_lines = 0
        self.n_empty = 0
        self.final_newline = True
        if source.error is not None:
            raise NotStreamable(str(source.error))
        if source.data is not None:
            self._buf, self._eof = source.data, True
            if self._hash is not None:
                self._hash.update(source.data)
        else:
            try:
                self._file = open(source.path, "rb")  # noqa: SIM115 - closed at the end of the data
            except OSError as exc:
                raise NotStreamable(str(exc)) from None
            while len(self._buf) < len(_BOM_BYTES) and self._fill():  # enough bytes to see a BOM
                pass
        if not self._buf:
            raise NotStreamable("empty file")
        if self._buf.startswith(_BOM_BYTES):
            if strict:
                raise NotStreamable("BOM in strict mode")
            self.bom, self._pos = True, 3
        newline = self._buf.find(b"\n", self._pos)
        while newline < 0 and self._fill():
            newline = self._buf.find(b"\n", self._pos)
        if self._pos >= len(self._buf):
            raise NotStreamable("only a BOM")
        self.crlf = newline > self._pos and self._buf[newline - 1] == 13

    def _fill(self, at_least: int = 0) -> bool:
        """Read more (at least ``at_least`` bytes if the file has them); False at the end of the file."""
        if self._eof or self._file is None:
            self._eof = True
            return False
        size = max(self._block, at_least)
        try:
            data = self._file.read(size)
        except OSError as exc:
            raise NotStreamable(str(exc)) from None
        if self._hash is not None and data:
            self._hash.update(data)
        if len(data) < size:
            self._eof = True
            self._file.close()
            self._file = None
        if not data:
            return False
        self._buf = self._buf[self._pos:] + data if self._pos < len(self._buf) else data
        self._pos = 0
        return True

    def take(self, n: int) -> tuple[memoryview, int]:
        """The bytes of the next ``n`` lines (fewer at the end of the file) and how many lines they hold; the
        last line of the file may lack its LF."""
        while True:
            buf = self._buf
            address = ctypes.cast(ctypes.c_char_p(buf), ctypes.c_void_p).value or 0
            end = int(self._lines_end(address, self._pos, len(buf), n))
            if end >= 0:
                lines = n
                break
            found = -1 - end
            if self._eof:
                end = len(buf)
                unterminated = end > self._pos and buf[end - 1] != 10
                lines = found + (1 if unterminated else 0)
                if unterminated:
                    self.final_newline = False
                break
            per_line = max(64, (len(buf) - self._pos) // max(found, 1))
            self._fill(per_line * (n - found) + per_line)
        start, self._pos = self._pos, end
        self.n_lines += lines
        return memoryview(buf)[start:end], lines

    @property
    def exhausted(self) -> bool:
        return self._eof and self._pos >= len(self._buf)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def summary(self, n_empty: int, *, max_empty_share: float = DEFAULT_MAX_EMPTY_SHARE,
                log_notes: bool = True) -> TextSummary:
        """The notes :func:`read_text` gives for this file (logged as it logs them), once it has been read."""
        notes: list[tuple[int, str]] = []
        if self.bom:
            notes.append(BOM_NOTE)
        if self.crlf:
            notes.append(CRLF_NOTE)
        note = empty_lines_note(n_empty, self.n_lines, max_empty_share)
        if note is not None:
            notes.append(note)
        if log_notes:
            log_text_notes(self.source.path, notes)
        return TextSummary(self.source.path, self.source.name, self.n_lines, n_empty, self.bom, self.crlf,
                           [note for _, note in notes], self.final_newline,
                           self._hash.hexdigest() if self._hash is not None else None)
