"""Reading text inputs safely: strict UTF-8, lines split on LF only, every problem located.

The first stage of the pipeline: everything after it can assume aligned, clean segments. The policy exists
because the peers (sacreBLEU's API and CLI, pandas) silently truncate, merge rows, keep BOMs glued to tokens or
split on characters that are not line breaks. Here every problem is either an :class:`~harness.errors.InputError`
with the file, the 1-based line and (for bytes) the byte offset as fields, or a warning recorded on the returned
object (and logged), never silent. Only the standard library is used, so ``harness-score`` starts fast.
"""

from __future__ import annotations

import collections
import hashlib
import logging
import os
import re
import stat
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ..errors import ConfigError, InputError

logger = logging.getLogger(__name__)

#: Share of empty lines above which :func:`read_text` warns (empty hypotheses are valid, but many are suspicious).
DEFAULT_MAX_EMPTY_SHARE = 0.10

_BOM_BYTES = b"\xef\xbb\xbf"
_BOM = "\ufeff"

# Characters that are never allowed inside a segment: C0 controls except TAB (LF is the separator, CR is handled
# separately because CRLF files are accepted), NEL (U+0085) and the Unicode line/paragraph separators, which
# str.splitlines() and some tokenizers treat as line breaks and would therefore shift the alignment.
_BAD_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\u0085\u2028\u2029]")

_BAD_C0_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20)])
_BAD_NON_C0 = ("\u0085", "\u2028", "\u2029")

_CONTROL_NAMES = {
    0x00: "NUL",
    0x07: "BELL",
    0x08: "BACKSPACE",
    0x0B: "VERTICAL TAB",
    0x0C: "FORM FEED",
    0x1B: "ESCAPE",
    0x1C: "FILE SEPARATOR",
    0x1D: "GROUP SEPARATOR",
    0x1E: "RECORD SEPARATOR",
    0x1F: "UNIT SEPARATOR",
    0x85: "NEXT LINE (NEL)",
}

_SEG_HEADER = ("system", "seg_id", "score")
_SYS_HEADERS = (("system", "score"), ("system", "score", "n_segments"))
_INT_RE = re.compile(r"[+-]?[0-9]+")


# --------------------------------------------------------------------------------------------------------------
# text files


@dataclass(frozen=True, eq=False)
class TextFile:
    """One UTF-8 text file, one segment per line, after the checks of :func:`read_text`.

    ``lines`` never contain ``\\n``; a CRLF file has its ``\\r`` removed (``crlf`` is then true). ``sha256`` is the
    hash of the raw bytes on disk (before BOM/CRLF removal), so it identifies exactly what was scored.
    ``warnings`` holds the human-readable notes for the run metadata (BOM removed, CRLF converted, empty lines...).
    """

    path: Path
    name: str
    lines: list[str]
    sha256: str
    n_empty: int
    bom: bool
    crlf: bool
    warnings: list[str] = field(default_factory=list)
    final_newline: bool = True

    @property
    def n_lines(self) -> int:
        """Number of segments (lines) in the file."""
        return len(self.lines)

    def __len__(self) -> int:
        return len(self.lines)


def _char_label(ch: str) -> str:
    """'U+2028 LINE SEPARATOR' style label for error messages (control characters have no Unicode name)."""
    cp = ord(ch)
    name = _CONTROL_NAMES.get(cp) or unicodedata.name(ch, "")
    if not name and cp < 0x20:
        name = f"control character ^{chr(cp + 0x40)}"
    return f"U+{cp:04X}" + (f" {name}" if name else "")


def _line_and_column(text: str, pos: int) -> tuple[int, int]:
    """1-based line and 1-based character column of ``pos`` in ``text`` (lines split on LF only)."""
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, col


def hex_excerpt(data: bytes, start: int, end: int, context: int = 6) -> str:
    """Hex bytes around ``data[start:end]`` with the offending bytes in brackets, e.g. ``61 62 [e9] 20``."""
    end = max(end, start + 1)
    before = data[max(0, start - context) : start].hex(" ")
    bad = data[start:end].hex(" ")
    after = data[end : end + context].hex(" ")
    return " ".join(part for part in (before, f"[{bad}]", after) if part)


class EncodingError(InputError):
    """Bytes that are not UTF-8: ``line``, ``column`` (bytes into the line), ``byte_offset`` (in the file), the
    codec's ``detail`` and a hex ``excerpt`` with the bad bytes in brackets."""

    def __init__(self, path: str | Path, line: int, column: int, byte_offset: int, detail: str, excerpt: str,
                 bad_bytes: bytes) -> None:
        self.detail, self.excerpt = detail, excerpt
        super().__init__(f"invalid UTF-8 at byte column {column} of the line (byte offset {byte_offset} in the "
                         f"file): {detail}; bytes: {excerpt}", path, line, byte_offset=byte_offset, column=column,
                         expected="UTF-8", got=bad_bytes.hex(" "), bad_bytes=bad_bytes)


class BadCharacterError(InputError):
    """A control or line-separator character inside a segment: its ``label`` (``U+2028 LINE SEPARATOR``),
    ``line``, ``column``, and how many more there are (``n_more``) in ``scope`` (``the file``, or a line range)."""

    def __init__(self, path: str | Path, line: int, column: int, label: str, n_more: int,
                 scope: str = "the file") -> None:
        self.label, self.n_more, self.scope = label, n_more, scope
        more = f"; {n_more} more such character(s) in {scope}" if n_more else ""
        super().__init__(f"{label} at column {column}: control and line-separator characters are not allowed "
                         f"inside a segment (lines are split on LF only){more}", path, line, column=column,
                         expected="no control characters", got=label)


#: Largest input read from a stream that is not a regular file (a FIFO, standard input): 4 GiB.
MAX_STREAM_BYTES = 4 << 30
#: Name under which standard input appears in messages and tables.
STDIN = "<stdin>"
#: The notes (log level, text) of a removed BOM and of converted CRLF line endings, whole or chunked reading.
BOM_NOTE = (logging.WARNING, "UTF-8 BOM removed")
CRLF_NOTE = (logging.WARNING, "CRLF line endings converted to LF")


def read_bytes(path: Path) -> bytes:
    """Read a whole file, turning the OS errors a user can cause into :class:`InputError`. Regular files and
    FIFOs only (a device such as ``/dev/zero`` would never end); a FIFO at most :data:`MAX_STREAM_BYTES`."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError("file not found", path, expected="an existing text file") from None
    except PermissionError:
        raise InputError("cannot read file: permission denied", path) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path) from None
    if stat.S_ISDIR(mode):
        raise InputError("file not found (this is a directory, expected a text file)", path,
                         expected="a text file", got="a directory")
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        raise InputError("not a regular file or a pipe (a device or socket never ends like a text file)", path,
                         expected="a text file or a pipe", got="a device or socket")
    try:
        if stat.S_ISREG(mode):
            return path.read_bytes()
        with open(path, "rb") as stream:
            return read_stream(stream, path)
    except PermissionError:
        raise InputError("cannot read file: permission denied", path) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path) from None


def read_stream(stream: BinaryIO, name: str | Path = STDIN, limit: int = MAX_STREAM_BYTES,
                max_lines: int | None = None) -> bytes:
    """All bytes of a stream (standard input, a pipe), refusing more than ``limit`` bytes, or more than
    ``max_lines`` line breaks (the lines its references have: an endless stream stops there, not at ``limit``)."""
    chunks: list[bytes] = []
    size = breaks = 0
    while True:
        chunk = stream.read(1 << 20)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise InputError(f"more than {limit >> 20:,} MiB from a stream; write it to a file first", name,
                             expected=f"at most {limit >> 20:,} MiB", got="more")
        if max_lines is not None:
            breaks += chunk.count(b"\n")
            if breaks > max_lines:
                raise InputError(f"more than {max_lines:,} lines, more than the references have", name,
                                 expected=f"at most {max_lines:,} lines", got="more")
        chunks.append(chunk)


def check_stdin() -> None:
    """Refuse standard input that is a device other than a terminal (``< /dev/zero`` would never end), as
    :func:`read_bytes` refuses such a path."""
    if sys.stdin is None:  # started with standard input closed (``<&-``)
        raise InputError("standard input is closed: give the hypothesis with -i FILE", STDIN,
                         expected="a text file or a pipe", got="nothing")
    try:
        fd = sys.stdin.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError):  # no real standard input (replaced, closed): read what it gives
        return
    if (stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode)) and not os.isatty(fd):
        raise InputError("standard input is not a regular file or a pipe (a device or socket never ends like a "
                         "text file)", STDIN, expected="a text file or a pipe", got="a device or socket")


def read_stdin(*, strict: bool = False, name: str = STDIN) -> TextFile:
    """Standard input as a :class:`TextFile` (the hypothesis of ``harness-score`` without ``-i``)."""
    check_stdin()
    return parse_text(read_stream(sys.stdin.buffer), STDIN, strict=strict, name=name)


def read_text(
    path: str | os.PathLike[str],
    *,
    strict: bool = False,
    name: str | None = None,
    max_empty_share: float = DEFAULT_MAX_EMPTY_SHARE,
) -> TextFile:
    """Read a one-segment-per-line UTF-8 file safely, naming the line and byte of anything wrong.

    - Strict UTF-8; an undecodable byte raises :class:`InputError` with the 1-based line, the byte column, the
      byte offset and a hex excerpt.
    - A BOM at byte 0 is removed and reported (``strict``: an error). A BOM anywhere else is an error (usually
      two files concatenated).
    - Lines are split on ``\\n`` only; a final ``\\n`` does not add an empty line, a missing one is fine.
    - ``\\r`` before every ``\\n`` (a CRLF file) is removed and reported. Any other ``\\r`` is kept as-is with a
      warning (``strict``: an error).
    - NUL and other C0 controls except TAB, U+0085, U+2028 and U+2029 are errors naming line, column and code point;
      they are never treated as line breaks.
    - Empty lines are allowed (an empty hypothesis is valid output) but counted; above ``max_empty_share`` the
      note says so explicitly and is logged as a warning.
    - A zero-byte file (or one holding only a BOM) is an error; so are a missing file and a directory.

    The work is done with whole-text C-level operations (decode, regex search, split, count); Python only loops
    when it has already found something to report.
    """
    p = Path(path)
    return parse_text(read_bytes(p), p, strict=strict, name=name, max_empty_share=max_empty_share)


def parse_text(data: bytes, path: str | os.PathLike[str], *, strict: bool = False, name: str | None = None,
               max_empty_share: float = DEFAULT_MAX_EMPTY_SHARE, log_notes: bool = True) -> TextFile:
    """The checks of :func:`read_text` on bytes already read (``path`` names them in errors and notes; the notes
    are logged unless ``log_notes`` is false)."""
    p = Path(path)
    digest = hashlib.sha256(data).hexdigest()
    notes: list[tuple[int, str]] = []  # (log level, note), in the order found

    if not data:
        raise InputError("empty file (0 bytes): expected one segment per line", p)

    bom = data.startswith(_BOM_BYTES)
    try:
        text = data.decode("utf-8")  # strict is the default error handler
    except UnicodeDecodeError as exc:
        start, end = exc.start, exc.end
        line = data.count(b"\n", 0, start) + 1
        col = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise EncodingError(p, line, col, start, exc.reason, hex_excerpt(data, start, end), data[start:end]) from None

    if bom:
        if strict:
            raise InputError("UTF-8 byte order mark (BOM) at the start of the file (not allowed in strict mode)", p, 1)
        text = text[1:]
        notes.append(BOM_NOTE)
        if not text:
            raise InputError("empty file (only a byte order mark): expected one segment per line", p)

    pos = text.find(_BOM)
    if pos >= 0:
        line, col = _line_and_column(text, pos)
        raise InputError(
            f"U+FEFF byte order mark inside the file at column {col} (were two files concatenated?)", p, line
        )

    # Fast screen (C-level bytes.translate and str.find); the slower regex only runs to locate a hit.
    has_bad = len(data.translate(None, _BAD_C0_BYTES)) != len(data) or any(c in text for c in _BAD_NON_C0)
    match = _BAD_CHARS.search(text) if has_bad else None
    if match is not None:
        pos = match.start()
        line, col = _line_and_column(text, pos)
        raise BadCharacterError(p, line, col, _char_label(match.group()), len(_BAD_CHARS.findall(text)) - 1)

    final_newline = text.endswith("\n")
    if final_newline:
        text = text[:-1]

    crlf = False
    if "\r" in text:
        n_lf = text.count("\n")
        n_terminated = n_lf + 1 if final_newline else n_lf  # lines that were followed by a LF in the file
        body_crlf = text.count("\r\n")
        last_cr = text.endswith("\r")
        # A CRLF file: every LF-terminated line ends in CR (the last line, if unterminated, may lack one).
        if n_terminated > 0 and body_crlf + (1 if final_newline and last_cr else 0) == n_terminated:
            crlf = True
            text = text.replace("\r\n", "\n")
            if last_cr:
                text = text[:-1]
            notes.append(CRLF_NOTE)
        if "\r" in text:
            pos = text.find("\r")
            line, col = _line_and_column(text, pos)
            if strict:
                raise InputError(f"stray carriage return (CR, U+000D) at column {col} inside a line", p, line)
            n_cr = text.count("\r")
            notes.append((logging.WARNING,
                          f"{n_cr} stray carriage return(s) (CR) kept inside lines, first at line {line} column {col}"))

    lines = text.split("\n")
    n_empty = lines.count("")
    note = empty_lines_note(n_empty, len(lines), max_empty_share)
    if note is not None:
        notes.append(note)

    if log_notes:
        log_text_notes(p, notes)

    return TextFile(
        path=p,
        name=name if name is not None else p.stem,
        lines=lines,
        sha256=digest,
        n_empty=n_empty,
        bom=bom,
        crlf=crlf,
        warnings=[note for _, note in notes],
        final_newline=final_newline,
    )


def empty_lines_note(n_empty: int, n_lines: int, max_empty_share: float = DEFAULT_MAX_EMPTY_SHARE
                     ) -> tuple[int, str] | None:
    """The (log level, note) about empty lines of a file :func:`read_text` records, or None if there are none."""
    if not n_empty:
        return None
    share = n_empty / n_lines
    note = f"{n_empty} empty line{'s' if n_empty != 1 else ''} ({share:.1%})"
    if share > max_empty_share:
        return logging.WARNING, f"{note}, more than the {max_empty_share:.0%} threshold"
    return logging.INFO, note


def log_text_notes(path: Path, notes: Sequence[tuple[int, str]]) -> None:
    """Log the notes of a file as :func:`read_text` does (``path: note`` at each note's level)."""
    for level, note in notes:
        logger.log(level, "%s: %s", path, note)


def _display_paths(files: Sequence[TextFile]) -> tuple[list[str], str | None]:
    """Short names for messages: paths relative to the files' common folder (and that folder), if there is one."""
    try:
        parents = [str(f.path.parent.absolute()) for f in files]
        common = os.path.commonpath(parents)
    except ValueError:  # different drives
        return [str(f.path) for f in files], None
    if common in ("", os.sep):
        return [str(f.path) for f in files], None
    return [os.path.relpath(f.path.absolute(), common) for f in files], common


def check_parallel(files: Sequence[TextFile], names: Sequence[str] | None = None) -> int:
    """Check that all files have the same number of lines and return it.

    sacreBLEU's API silently truncates to the shorter stream; here a mismatch is an :class:`InputError` naming both
    files and both counts (``names``: as the user gave them; else relative to their common folder). The most
    common count is taken as the expected one, so that one odd file is blamed rather than every file after it.
    """
    if not files:
        raise InputError("no files to check: expected at least one text file")
    counts = [f.n_lines for f in files]
    tally = collections.Counter(counts)
    expected = max(tally, key=lambda n: (tally[n], -counts.index(n)))
    if len(tally) == 1:
        return expected
    shown, common = (list(names), None) if names is not None else _display_paths(files)
    i_ok = counts.index(expected)
    i_bad = next(i for i, n in enumerate(counts) if n != expected)
    bad, ok = files[i_bad], files[i_ok]
    msg = f"{shown[i_bad]} has {bad.n_lines} lines but {shown[i_ok]} has {ok.n_lines}"
    if common is not None:
        msg += f" (in {common})"
    n_bad = sum(1 for n in counts if n != expected)
    if n_bad > 1:
        msg += f"; {n_bad} of {len(files)} files differ from {expected} lines"
    if bad.n_lines == expected + 1 and bad.lines[-1] == "":
        msg += "; the extra last line is empty (a blank line at the end of the file?)"
    elif bad.n_lines < expected:
        msg += f"; {shown[i_bad]} ends after line {bad.n_lines}"
    raise InputError(msg)


# --------------------------------------------------------------------------------------------------------------
# names


def safe_name(name: object, what: str) -> str:
    """Return ``name`` if it is a plain system/reference name, else raise :class:`ConfigError` under key ``what``.

    Names become file names (``systems/NAME.txt``) and table values, so they must not be able to point elsewhere:
    no path separators, no ``..``, no leading dot (hidden files, ``.``), no control characters, not empty.
    """
    if not isinstance(name, str):
        raise ConfigError(what, f"expected a name (string), got {type(name).__name__} {name!r}")
    if not name or not name.strip():
        raise ConfigError(what, "empty name")
    if "/" in name or "\\" in name:
        raise ConfigError(what, f"{name!r} is not a plain name: path separators are not allowed")
    if ".." in name:
        raise ConfigError(what, f"{name!r} is not a plain name: '..' is not allowed")
    if name.startswith("."):
        raise ConfigError(what, f"{name!r} is not a plain name: a leading dot is not allowed")
    if any(unicodedata.category(c) == "Cc" for c in name) or _BAD_CHARS.search(name):
        raise ConfigError(what, f"{name!r} contains control characters")
    if name != name.strip():
        raise ConfigError(what, f"{name!r} has leading or trailing whitespace")
    return name


