"""Reading and checking inputs: text files, dataset folders and human scores.

This is the first stage of the pipeline (DESIGN 2.1): everything after it can assume aligned, clean segments.
The policy follows FIELD_NOTES 1.1, which exists because the peers (sacreBLEU's API and CLI, pandas) silently
truncate, merge rows, keep BOMs glued to tokens or split on characters that are not line breaks. Here every
problem is either an :class:`~harness.errors.InputError` naming the file and the 1-based line, or a warning that
is recorded on the returned object (and logged), never silent.

Only the standard library and numpy are used, so that ``harness-score`` stays fast to start.
"""

from __future__ import annotations

import collections
import csv
import hashlib
import json
import logging
import math
import os
import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import ConfigError, InputError

__all__ = [
    "DEFAULT_MAX_EMPTY_SHARE",
    "Dataset",
    "HumanScores",
    "TextFile",
    "check_parallel",
    "load_dataset",
    "read_human_tsv",
    "read_seg_tsv",
    "read_sys_tsv",
    "read_text",
    "refset_name",
    "resolve_under",
    "safe_name",
]

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


def _hex_excerpt(data: bytes, start: int, end: int, context: int = 6) -> str:
    """Hex bytes around ``data[start:end]`` with the offending bytes in brackets, e.g. ``61 62 [e9] 20``."""
    end = max(end, start + 1)
    before = data[max(0, start - context) : start].hex(" ")
    bad = data[start:end].hex(" ")
    after = data[end : end + context].hex(" ")
    return " ".join(part for part in (before, f"[{bad}]", after) if part)


def _read_bytes(path: Path) -> bytes:
    """Read a whole file, turning the OS errors a user can cause into :class:`InputError`."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", path) from None
    except IsADirectoryError:
        raise InputError("file not found (this is a directory, expected a text file)", path) from None
    except PermissionError:
        raise InputError("cannot read file: permission denied", path) from None
    except OSError as exc:
        if path.is_dir():
            raise InputError("file not found (this is a directory, expected a text file)", path) from None
        raise InputError(f"cannot read file: {exc.strerror or exc}", path) from None


def read_text(
    path: str | os.PathLike[str],
    *,
    strict: bool = False,
    name: str | None = None,
    max_empty_share: float = DEFAULT_MAX_EMPTY_SHARE,
) -> TextFile:
    """Read a one-segment-per-line UTF-8 file safely (FIELD_NOTES 1.1).

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
    data = _read_bytes(p)
    digest = hashlib.sha256(data).hexdigest()
    warnings: list[str] = []

    if not data:
        raise InputError("empty file (0 bytes): expected one segment per line", p)

    bom = data.startswith(_BOM_BYTES)
    try:
        text = data.decode("utf-8")  # strict is the default error handler
    except UnicodeDecodeError as exc:
        start, end = exc.start, exc.end
        line = data.count(b"\n", 0, start) + 1
        col = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise InputError(
            f"invalid UTF-8 at byte column {col} of the line (byte offset {start} in the file): {exc.reason}; "
            f"bytes: {_hex_excerpt(data, start, end)}",
            p,
            line,
        ) from None

    if bom:
        if strict:
            raise InputError("UTF-8 byte order mark (BOM) at the start of the file (not allowed in strict mode)", p, 1)
        text = text[1:]
        warnings.append("UTF-8 BOM removed")
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
        total = len(_BAD_CHARS.findall(text))
        more = f"; {total - 1} more such character(s) in the file" if total > 1 else ""
        raise InputError(
            f"{_char_label(match.group())} at column {col}: control and line-separator characters are not "
            f"allowed inside a segment (lines are split on LF only){more}",
            p,
            line,
        )

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
            warnings.append("CRLF line endings converted to LF")
        if "\r" in text:
            pos = text.find("\r")
            line, col = _line_and_column(text, pos)
            if strict:
                raise InputError(f"stray carriage return (CR, U+000D) at column {col} inside a line", p, line)
            n_cr = text.count("\r")
            warnings.append(
                f"{n_cr} stray carriage return(s) (CR) kept inside lines, first at line {line} column {col}"
            )

    lines = text.split("\n")
    n_empty = lines.count("")
    if n_empty:
        share = n_empty / len(lines)
        note = f"{n_empty} empty line{'s' if n_empty != 1 else ''} ({share:.1%})"
        if share > max_empty_share:
            note += f", more than the {max_empty_share:.0%} threshold"
        warnings.append(note)

    for note in warnings:
        if note.startswith(("UTF-8 BOM", "CRLF")) or ("stray" in note) or ("threshold" in note):
            logger.warning("%s: %s", p, note)
        else:
            logger.info("%s: %s", p, note)

    return TextFile(
        path=p,
        name=name if name is not None else p.stem,
        lines=lines,
        sha256=digest,
        n_empty=n_empty,
        bom=bom,
        crlf=crlf,
        warnings=warnings,
        final_newline=final_newline,
    )


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


def check_parallel(files: Sequence[TextFile]) -> int:
    """Check that all files have the same number of lines and return it.

    sacreBLEU's API silently truncates to the shorter stream; here a mismatch is an :class:`InputError` naming both
    files and both counts. The most common count is taken as the expected one, so that one odd file is blamed
    rather than every file after it.
    """
    if not files:
        raise InputError("no files to check: expected at least one text file")
    counts = [f.n_lines for f in files]
    tally = collections.Counter(counts)
    expected = max(tally, key=lambda n: (tally[n], -counts.index(n)))
    if len(tally) == 1:
        return expected
    names, common = _display_paths(files)
    i_ok = counts.index(expected)
    i_bad = next(i for i, n in enumerate(counts) if n != expected)
    bad, ok = files[i_bad], files[i_ok]
    msg = f"{names[i_bad]} has {bad.n_lines} lines but {names[i_ok]} has {ok.n_lines}"
    if common is not None:
        msg += f" (in {common})"
    n_bad = sum(1 for n in counts if n != expected)
    if n_bad > 1:
        msg += f"; {n_bad} of {len(files)} files differ from {expected} lines"
    if bad.n_lines == expected + 1 and bad.lines[-1] == "":
        msg += "; the extra last line is empty (a blank line at the end of the file?)"
    elif bad.n_lines < expected:
        msg += f"; {names[i_bad]} ends after line {bad.n_lines}"
    raise InputError(msg)


# --------------------------------------------------------------------------------------------------------------
# names and paths


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


def resolve_under(root: str | os.PathLike[str], relative: str | os.PathLike[str], what: str) -> Path:
    """Resolve ``root/relative`` (following symlinks) and refuse it if it lands outside ``root``.

    Dataset folders are self-contained; a ``meta.json`` entry or a symlink must not make the harness read (or
    later write) files elsewhere. Returns the resolved path; raises :class:`ConfigError` under key ``what``.
    """
    base = Path(root).resolve()
    target = (base / Path(relative)).resolve()
    if target != base and not target.is_relative_to(base):
        raise ConfigError(what, f"path {str(relative)!r} resolves to {target}, outside the dataset folder {base}")
    return target


def refset_name(stems: Iterable[str]) -> str:
    """The name of a reference set in the output tables (DESIGN 1.7): stems joined with ``+`` in the given order."""
    return "+".join(stems)


# --------------------------------------------------------------------------------------------------------------
# human scores


@dataclass(frozen=True, eq=False)
class HumanScores:
    """Human judgments for the systems of one dataset.

    ``seg`` maps a system to a read-only float64 array with one entry per segment (NaN where the system has no
    score); ``sys`` maps a system to its system-level score (from ``sys.tsv`` when given, else the mean of its
    segment scores). The numbers are kept as found; :meth:`oriented` gives the "higher is better" view that the
    correlations use. ``missing`` lists the systems of the dataset that have no human score at all: allowed, but
    reported.
    """

    name: str
    seg: dict[str, np.ndarray]
    sys: dict[str, float]
    higher_is_better: bool = True
    missing: tuple[str, ...] = ()
    n_scored: dict[str, int] = field(default_factory=dict)
    seg_path: Path | None = None
    sys_path: Path | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def systems(self) -> list[str]:
        """Systems with any human score (segment or system level)."""
        return list(dict.fromkeys([*self.seg, *self.sys]))

    def oriented(self) -> HumanScores:
        """A copy where higher is better: the scores negated if ``higher_is_better`` is false, else unchanged."""
        if self.higher_is_better:
            return self
        seg = {k: _readonly(-v) for k, v in self.seg.items()}
        return replace(self, seg=seg, sys={k: -v for k, v in self.sys.items()}, higher_is_better=True)


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


def _tsv_rows(path: Path) -> tuple[TextFile, list[list[str]]]:
    """Read a TSV with the text checks of :func:`read_text` and split it with ``csv`` (no quoting, no NA magic).

    ``csv.QUOTE_NONE`` keeps a leading ``"`` literal (pandas' default would merge rows), and the csv module never
    turns ``NA``/``null``/``None``/``nan`` into missing values. Row ``i`` of the result is line ``i + 1``.
    """
    tf = read_text(path)
    reader = csv.reader(tf.lines, delimiter="\t", quoting=csv.QUOTE_NONE, strict=True)
    rows: list[list[str]] = []
    try:
        for row in reader:
            rows.append(row)
    except csv.Error as exc:
        raise InputError(f"cannot split the line into tab-separated fields: {exc}", path, len(rows) + 1) from None
    return tf, rows


def _check_header(path: Path, rows: list[list[str]], allowed: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    header = tuple(c.strip() for c in rows[0])
    if header not in allowed:
        want = " or ".join("<TAB>".join(h) for h in allowed)
        raise InputError(f"header row is {'<TAB>'.join(rows[0])!r}, expected {want}", path, 1)
    return header


def _parse_score(path: Path, line: int, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"score {text!r} is not a number", path, line) from None
    if not math.isfinite(value):
        raise InputError(f"score {text!r} is not a finite number", path, line)
    return value


def _check_system(path: Path, line: int, system: str, systems: Collection[str]) -> None:
    if system not in systems:
        known = sorted(systems)
        shown = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
        raise InputError(f"unknown system {system!r} (not in systems/; known: {shown})", path, line)


def read_seg_tsv(path: str | os.PathLike[str], *, systems: Collection[str], n_segments: int) -> dict[str, np.ndarray]:
    """Read ``human/seg.tsv`` (``system<TAB>seg_id<TAB>score``, header row) into per-system score arrays.

    Every row is checked and any problem is an :class:`InputError` naming the file and line: column count,
    a non-numeric or non-finite score, a seg_id that is not an integer in ``[0, n_segments)``, a duplicate
    ``(system, seg_id)``, or a system that is not in ``systems``. Missing segments stay NaN.
    """
    p = Path(path)
    _, rows = _tsv_rows(p)
    _check_header(p, rows, [_SEG_HEADER])
    out: dict[str, np.ndarray] = {}
    seen: dict[tuple[str, int], int] = {}
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != 3:
            raise InputError(f"expected 3 tab-separated fields (system, seg_id, score), got {len(row)}", p, i)
        system, seg_text, score_text = row
        _check_system(p, i, system, systems)
        if not _INT_RE.fullmatch(seg_text.strip()):
            raise InputError(f"seg_id {seg_text!r} is not an integer", p, i)
        seg_id = int(seg_text)
        if not 0 <= seg_id < n_segments:
            raise InputError(
                f"seg_id {seg_id} out of range: expected 0 <= seg_id < {n_segments} (0-based line index)", p, i
            )
        first = seen.get((system, seg_id))
        if first is not None:
            raise InputError(f"duplicate score for system {system!r}, seg_id {seg_id} (first on line {first})", p, i)
        seen[(system, seg_id)] = i
        value = _parse_score(p, i, score_text)
        arr = out.get(system)
        if arr is None:
            arr = out[system] = np.full(n_segments, np.nan, dtype=np.float64)
        arr[seg_id] = value
    return {k: _readonly(v) for k, v in out.items()}


def read_sys_tsv(
    path: str | os.PathLike[str], *, systems: Collection[str], n_segments: int | None = None
) -> dict[str, tuple[float, int | None]]:
    """Read ``human/sys.tsv`` (``system<TAB>score[<TAB>n_segments]``, header row).

    Returns ``system -> (score, n_segments or None)``. Same strictness as :func:`read_seg_tsv`: column count,
    finite numeric score, integer ``n_segments`` in ``[0, n_segments]``, no duplicate or unknown system.
    """
    p = Path(path)
    _, rows = _tsv_rows(p)
    header = _check_header(p, rows, _SYS_HEADERS)
    width = len(header)
    out: dict[str, tuple[float, int | None]] = {}
    seen: dict[str, int] = {}
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != width:
            raise InputError(f"expected {width} tab-separated fields ({', '.join(header)}), got {len(row)}", p, i)
        system = row[0]
        _check_system(p, i, system, systems)
        if system in seen:
            raise InputError(f"duplicate system {system!r} (first on line {seen[system]})", p, i)
        seen[system] = i
        value = _parse_score(p, i, row[1])
        count: int | None = None
        if width == 3:
            if not _INT_RE.fullmatch(row[2].strip()):
                raise InputError(f"n_segments {row[2]!r} is not an integer", p, i)
            count = int(row[2])
            if count < 0 or (n_segments is not None and count > n_segments):
                raise InputError(f"n_segments {count} out of range [0, {n_segments}]", p, i)
        out[system] = (value, count)
    return out


def read_human_tsv(
    seg_path: str | os.PathLike[str] | None = None,
    sys_path: str | os.PathLike[str] | None = None,
    *,
    systems: Sequence[str],
    n_segments: int,
    name: str = "human",
    higher_is_better: bool = True,
) -> HumanScores:
    """Read segment- and/or system-level human scores into :class:`HumanScores`.

    System scores come from ``sys.tsv`` where it has the system, else from the mean of the segment scores.
    Systems without any score are listed in ``missing`` (and logged); inconsistencies between the two files
    (different ``n_segments`` or mean) are recorded in ``warnings``.
    """
    if seg_path is None and sys_path is None:
        raise InputError(f"human scores {name!r}: neither a segment nor a system score file was given")
    seg = read_seg_tsv(seg_path, systems=systems, n_segments=n_segments) if seg_path is not None else {}
    sys_rows = read_sys_tsv(sys_path, systems=systems, n_segments=n_segments) if sys_path is not None else {}
    warnings: list[str] = []
    n_scored = {k: int(np.count_nonzero(~np.isnan(v))) for k, v in seg.items()}
    sys_scores: dict[str, float] = {}
    for system in systems:
        if system in sys_rows:
            value, count = sys_rows[system]
            sys_scores[system] = value
            if system in seg:
                if count is not None and count != n_scored[system]:
                    warnings.append(
                        f"{name}: {system}: sys.tsv says n_segments={count} but seg.tsv scores {n_scored[system]}"
                    )
                mean = float(np.nanmean(seg[system])) if n_scored[system] else math.nan
                if count in (None, n_scored[system]) and not math.isclose(value, mean, rel_tol=1e-6, abs_tol=1e-6):
                    warnings.append(
                        f"{name}: {system}: sys.tsv score {value:g} differs from the mean of its segment scores "
                        f"{mean:g}"
                    )
            elif count is not None:
                n_scored[system] = count
        elif n_scored.get(system):
            sys_scores[system] = float(np.nanmean(seg[system]))
    for system, count in n_scored.items():
        if system in seg and 0 < count < n_segments:
            warnings.append(f"{name}: {system} has segment scores for {count} of {n_segments} segments")
    missing = tuple(s for s in systems if s not in sys_scores and not n_scored.get(s))
    if missing:
        warnings.append(f"{name}: no human score for system(s): {', '.join(missing)}")
    for note in warnings:
        logger.warning("%s", note)
    return HumanScores(
        name=name,
        seg=seg,
        sys=sys_scores,
        higher_is_better=higher_is_better,
        missing=missing,
        n_scored=n_scored,
        seg_path=None if seg_path is None else Path(seg_path),
        sys_path=None if sys_path is None else Path(sys_path),
        warnings=warnings,
    )


# --------------------------------------------------------------------------------------------------------------
# dataset folders


@dataclass(frozen=True, eq=False)
class Dataset:
    """A dataset folder (DESIGN 1.6) after every check: aligned texts plus optional human scores.

    ``refs`` holds the references in use (in order), ``available_refs`` every stem under ``refs/``. ``systems`` is
    ordered as in ``meta.json`` then the remaining files by name. ``human_systems`` are the human translations
    among the systems (``meta.json`` ``human_systems`` plus any system named like a reference file).
    ``human`` is the first (primary) human score, ``human_scores`` all of them by name.
    """

    name: str
    root: Path
    source_lang: str | None
    target_lang: str | None
    refs: dict[str, TextFile]
    systems: dict[str, TextFile]
    human_systems: frozenset[str]
    source: TextFile | None
    n_segments: int
    human: HumanScores | None
    meta: dict[str, Any]
    primary_ref: str | None = None
    available_refs: tuple[str, ...] = ()
    human_scores: dict[str, HumanScores] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def mt_systems(self) -> list[str]:
        """Systems that are not human translations, in system order."""
        return [s for s in self.systems if s not in self.human_systems]

    def refs_for(self, system: str, refset: Sequence[str] | None = None) -> list[str]:
        """The reference stems ``system`` must be scored against, out of ``refset`` (default: all refs in use).

        A human translation that is also a reference is scored against the *other* references (leave-one-out, like
        the BLEU paper's H1/H2): its own stem is dropped from the refset, nothing else, so that every system's refset
        is predictable from its name. Raises :class:`InputError` if nothing remains.
        """
        if system not in self.systems:
            raise ConfigError("system", f"unknown system {system!r}", list(self.systems))
        stems = list(self.refs) if refset is None else [refset] if isinstance(refset, str) else list(refset)
        for stem in stems:
            if stem not in self.refs:
                raise ConfigError("refset", f"unknown reference {stem!r}", list(self.refs))
        kept = [s for s in stems if s != system]
        if not kept:
            raise InputError(
                f"system {system!r} is itself the only reference in refset {refset_name(stems)!r}: a human "
                "translation is scored against the other references (leave-one-out), so this refset needs at "
                "least one more reference",
                self.root,
            )
        return kept


def _meta_str(meta: Mapping[str, Any], key: str, path: Path) -> str | None:
    value = meta.get(key)
    if value is not None and not isinstance(value, str):
        raise InputError(f"'{key}' must be a string, got {type(value).__name__}", path)
    return value


def _meta_names(meta: Mapping[str, Any], key: str, path: Path) -> list[str] | None:
    value = meta.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"'{key}' must be a list of names", path)
    for v in value:
        try:
            safe_name(v, key)
        except ConfigError as exc:
            raise InputError(str(exc), path) from None
    dupes = [k for k, n in collections.Counter(value).items() if n > 1]
    if dupes:
        raise InputError(f"'{key}' lists {', '.join(dupes)} more than once", path)
    return list(value)


def _read_meta(root: Path) -> tuple[dict[str, Any], Path]:
    path = root / "meta.json"
    if not path.exists():
        return {}, path
    resolve_under(root, "meta.json", "meta.json")
    raw = _read_bytes(path)
    try:
        meta = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(f"invalid UTF-8 at byte offset {exc.start}", path, line) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path, exc.lineno) from None
    if not isinstance(meta, dict):
        raise InputError(f"expected a JSON object at the top level, got {type(meta).__name__}", path)
    return meta, path


def _list_stems(root: Path, sub: str, warnings: list[str]) -> dict[str, Path]:
    """``NAME -> path`` for every ``root/sub/NAME.txt``, refusing unsafe names and files escaping ``root``."""
    folder = root / sub
    if not folder.is_dir():
        return {}
    found: dict[str, Path] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.startswith("."):
            continue  # hidden files: editor swap files, .DS_Store, ...
        if not entry.name.endswith(".txt"):
            if entry.is_file():
                warnings.append(f"{sub}/{entry.name}: ignored (not a .txt file)")
            continue
        stem = entry.name[: -len(".txt")]
        safe_name(stem, f"{sub}/{entry.name}")
        resolve_under(root, Path(sub) / entry.name, f"{sub}/{entry.name}")
        found[stem] = entry
    return found


def _order(meta_names: list[str] | None, found: Mapping[str, Path], key: str, meta_path: Path, sub: str) -> list[str]:
    """Names in ``meta.json`` order (each must exist on disk), then the remaining files sorted."""
    if meta_names is None:
        return sorted(found)
    absent = [n for n in meta_names if n not in found]
    if absent:
        raise InputError(
            f"'{key}' lists {', '.join(absent)} but there is no {sub}/NAME.txt for "
            f"{'it' if len(absent) == 1 else 'them'} (found: {', '.join(sorted(found)) or 'none'})",
            meta_path,
        )
    return meta_names + sorted(n for n in found if n not in meta_names)


def _human_entries(
    meta: Mapping[str, Any], meta_path: Path, root: Path
) -> list[tuple[str, Path | None, Path | None, bool]]:
    """(name, seg file, sys file, higher_is_better) for each human score the dataset declares or contains."""
    top_hib = meta.get("higher_is_better", True)
    if not isinstance(top_hib, bool):
        raise InputError("'higher_is_better' must be true or false", meta_path)
    declared = meta.get("human_scores") or {}
    if not isinstance(declared, dict):
        raise InputError("'human_scores' must be an object mapping a score name to its description", meta_path)
    entries: list[tuple[str, Path | None, Path | None, bool]] = []
    default_files = ("human/seg.tsv", "human/sys.tsv")
    if not declared:
        seg = root / default_files[0]
        sys_ = root / default_files[1]
        if seg.exists() or sys_.exists():
            hname = _meta_str(meta, "human_score", meta_path) or "human"
            entries.append((
                hname,
                resolve_under(root, default_files[0], "human/seg.tsv") if seg.exists() else None,
                resolve_under(root, default_files[1], "human/sys.tsv") if sys_.exists() else None,
                top_hib,
            ))
        return entries
    for i, (hname, spec) in enumerate(declared.items()):
        if not isinstance(spec, dict):
            raise InputError(f"'human_scores.{hname}' must be an object", meta_path)
        hib = spec.get("higher_is_better", top_hib)
        if not isinstance(hib, bool):
            raise InputError(f"'human_scores.{hname}.higher_is_better' must be true or false", meta_path)
        files: list[Path | None] = []
        for key, default in zip(("file_seg", "file_sys"), default_files):
            rel = spec.get(key)
            if rel is not None and not isinstance(rel, str):
                raise InputError(f"'human_scores.{hname}.{key}' must be a path string", meta_path)
            if rel is None:
                # Only the first declared score may use the default file names.
                rel = default if i == 0 and key not in spec else None
                if rel is None or not (root / rel).exists():
                    files.append(None)
                    continue
            target = resolve_under(root, rel, f"human_scores.{hname}.{key}")
            if not target.is_file():
                raise InputError(f"'human_scores.{hname}.{key}' names {rel!r}, which is not a file", meta_path)
            files.append(target)
        if files[0] is None and files[1] is None:
            raise InputError(f"'human_scores.{hname}' names no existing file_seg or file_sys", meta_path)
        entries.append((hname, files[0], files[1], hib))
    return entries


def load_dataset(
    root: str | os.PathLike[str],
    *,
    refs: Sequence[str] | None = None,
    strict: bool = False,
) -> Dataset:
    """Load and check a dataset folder in the layout of DESIGN 1.6.

    Reference order: ``refs`` if given (unknown stems are a :class:`ConfigError` listing the available ones),
    else ``meta.json`` ``refs`` then the other files sorted, else sorted. System order: ``meta.json`` ``systems``
    then the other files sorted. Every text file (references in use, ``src.txt``, systems) is read with
    :func:`read_text` and checked parallel, and against ``meta.json`` ``n_segments`` when given; human scores
    are checked against the systems and the segment count.
    """
    given = Path(root)
    if not given.is_dir():
        raise ConfigError("dataset.root", f"{given} is not a directory" if given.exists() else f"{given} not found")
    meta, meta_path = _read_meta(given)
    warnings: list[str] = []

    found_refs = _list_stems(given, "refs", warnings)
    found_systems = _list_stems(given, "systems", warnings)
    if not found_refs:
        raise InputError("no reference files: expected refs/NAME.txt", given / "refs")
    if not found_systems:
        raise InputError("no system outputs: expected systems/NAME.txt", given / "systems")

    all_refs = _order(_meta_names(meta, "refs", meta_path), found_refs, "refs", meta_path, "refs")
    system_order = _order(_meta_names(meta, "systems", meta_path), found_systems, "systems", meta_path, "systems")

    if refs is None:
        used_refs = all_refs
    else:
        chosen = [refs] if isinstance(refs, str) else list(refs)
        if not chosen:
            raise ConfigError("dataset.refs", "empty list of references", all_refs)
        for stem in chosen:
            safe_name(stem, "dataset.refs")
            if stem not in found_refs:
                raise ConfigError("dataset.refs", f"unknown reference {stem!r} in {given / 'refs'}", all_refs)
        dupes = [k for k, n in collections.Counter(chosen).items() if n > 1]
        if dupes:
            raise ConfigError("dataset.refs", f"{', '.join(dupes)} listed more than once", all_refs)
        used_refs = chosen

    primary = _meta_str(meta, "primary_ref", meta_path)
    if primary is not None and primary not in found_refs:
        raise InputError(
            f"'primary_ref' {primary!r} is not a file under refs/ (found: {', '.join(all_refs)})", meta_path
        )
    if primary is None or primary not in used_refs:
        primary = used_refs[0]

    human_meta = _meta_names(meta, "human_systems", meta_path) or []
    unknown_human = [s for s in human_meta if s not in found_systems]
    if unknown_human:
        raise InputError(
            f"'human_systems' lists {', '.join(unknown_human)}, which {'is' if len(unknown_human) == 1 else 'are'} "
            f"not under systems/",
            meta_path,
        )
    human_systems = frozenset(human_meta) | frozenset(s for s in found_systems if s in found_refs)

    ref_files = {stem: read_text(found_refs[stem], strict=strict, name=stem) for stem in used_refs}
    src_path = given / "src.txt"
    source = None
    if src_path.exists():
        resolve_under(given, "src.txt", "src.txt")
        source = read_text(src_path, strict=strict, name="src")
    system_files = {s: read_text(found_systems[s], strict=strict, name=s) for s in system_order}

    texts = [*ref_files.values(), *([source] if source is not None else []), *system_files.values()]
    n_segments = check_parallel(texts)
    declared_n = meta.get("n_segments")
    if declared_n is not None and (isinstance(declared_n, bool) or declared_n != n_segments):
        raise InputError(f"'n_segments' is {declared_n!r} but the text files have {n_segments} lines", meta_path)

    for tf in texts:
        rel = os.path.relpath(tf.path, given)
        warnings.extend(f"{rel}: {w}" for w in tf.warnings)
    by_hash: dict[str, str] = {}
    for stem, tf in ref_files.items():
        by_hash.setdefault(tf.sha256, stem)
    for s, tf in system_files.items():
        twin = by_hash.get(tf.sha256)
        if twin is not None and twin != s:
            warnings.append(
                f"systems/{s}.txt is byte-identical to refs/{twin}.txt (it would score 100 against it); "
                f"name it {twin}.txt if it is that human translation, to get leave-one-out scoring"
            )

    human_scores: dict[str, HumanScores] = {}
    for hname, seg_file, sys_file, hib in _human_entries(meta, meta_path, given):
        hs = read_human_tsv(
            seg_file, sys_file, systems=system_order, n_segments=n_segments, name=hname, higher_is_better=hib
        )
        human_scores[hname] = hs
        warnings.extend(hs.warnings)

    name = _meta_str(meta, "name", meta_path) or given.resolve().name
    return Dataset(
        name=name,
        root=given,
        source_lang=_meta_str(meta, "source_lang", meta_path),
        target_lang=_meta_str(meta, "target_lang", meta_path),
        refs=ref_files,
        systems=system_files,
        human_systems=human_systems,
        source=source,
        n_segments=n_segments,
        human=next(iter(human_scores.values()), None),
        meta=meta,
        primary_ref=primary,
        available_refs=tuple(all_refs),
        human_scores=human_scores,
        warnings=warnings,
    )
