"""Human judgments: reading ``seg.tsv`` / ``sys.tsv`` strictly, and the scores a correlation study uses.

A dataset may hold several *kinds* of human scores (``meta.json`` ``human_scores``: each kind its files and its
direction). For each kind, the system-level score of a system is the published one (``sys.tsv``) where given,
else the mean of the system's judged segments; where both exist and differ by more than 1e-6 the published one
is used and this is said once (a warning and a note in the report). Segment scores may be sparse: a system
judged on some segments only has NaN elsewhere.

TSVs are read with the csv module (``csv.QUOTE_NONE``: a leading ``"`` stays literal; ``NA``/``null`` stay
names), every row checked, every problem an :class:`~harness.errors.InputError` naming the file and line.
"""

from __future__ import annotations

import csv
import dataclasses
import logging
import math
import os
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..text.reading import TextFile, read_text

logger = logging.getLogger(__name__)

_SEG_HEADER = ("system", "seg_id", "score")
_SYS_HEADERS = (("system", "score"), ("system", "score", "n_segments"))
_INT_RE = re.compile(r"[+-]?[0-9]+")
#: Published system scores farther than this from the mean of the segment scores are reported as different.
SYS_TOLERANCE = 1e-6


@dataclass(frozen=True, eq=False)
class HumanScores:
    """One kind of human judgments for the systems of a dataset (systems named by their file stem).

    ``seg`` maps a system to a read-only float64 array with one entry per segment (NaN where not judged);
    ``sys`` maps a system to its system-level score and ``sys_source`` says where each came from (the name of the
    system-level file, e.g. ``sys.tsv``, or ``segments``, the mean of its judged segments). ``differs`` lists the
    systems whose ``sys.tsv`` score is not the mean of their segment scores. The numbers are kept as found;
    :meth:`oriented` gives the "higher is better" view that correlations use. ``missing``: systems of the dataset
    without any score.
    """

    name: str
    seg: dict[str, np.ndarray]
    sys: dict[str, float]
    higher_is_better: bool = True
    missing: tuple[str, ...] = ()
    n_scored: dict[str, int] = field(default_factory=dict)
    seg_path: Path | None = None
    sys_path: Path | None = None
    warnings: tuple[str, ...] = ()
    sys_source: dict[str, str] = field(default_factory=dict)
    differs: tuple[str, ...] = ()

    @property
    def systems(self) -> list[str]:
        """Systems with any human score (segment or system level)."""
        return list(dict.fromkeys([*self.seg, *self.sys]))

    @property
    def has_segments(self) -> bool:
        return bool(self.seg)

    def oriented(self) -> HumanScores:
        """A copy where higher is better: the scores negated if ``higher_is_better`` is false, else unchanged."""
        if self.higher_is_better:
            return self
        return HumanScores(self.name, {k: _readonly(-v) for k, v in self.seg.items()},
                           {k: -v for k, v in self.sys.items()}, True, self.missing, self.n_scored, self.seg_path,
                           self.sys_path, self.warnings, self.sys_source, self.differs)


    def without(self, systems: Sequence[str]) -> HumanScores:
        """A copy without the scores of ``systems`` (they belong to another text of the same name)."""
        drop = set(systems)
        return dataclasses.replace(self, seg={k: v for k, v in self.seg.items() if k not in drop},
                                   sys={k: v for k, v in self.sys.items() if k not in drop},
                                   n_scored={k: v for k, v in self.n_scored.items() if k not in drop},
                                   sys_source={k: v for k, v in self.sys_source.items() if k not in drop},
                                   differs=tuple(s for s in self.differs if s not in drop))


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


def _tsv_rows(path: Path) -> tuple[TextFile, list[list[str]]]:
    """Read a TSV with the text checks of :func:`read_text` and split it with ``csv`` (no quoting, no NA magic).

    ``csv.QUOTE_NONE`` keeps a leading ``"`` literal (pandas' default would merge rows), and the csv module never
    turns ``NA``/``null``/``None``/``nan`` into missing values. Row ``i`` of the result is line ``i + 1``.
    """
    tf = read_text(path)  # the text checks: strict UTF-8, LF lines, no control characters
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
        if "_" in text:  # float() reads "1_5" as 15.0 (Python literal syntax); no score file means that
            raise ValueError(text)
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
    """Read segment- and/or system-level human scores of one kind into :class:`HumanScores` (see the module)."""
    if seg_path is None and sys_path is None:
        raise InputError(f"human scores {name!r}: neither a segment nor a system score file was given")
    seg = read_seg_tsv(seg_path, systems=systems, n_segments=n_segments) if seg_path is not None else {}
    sys_rows = read_sys_tsv(sys_path, systems=systems, n_segments=n_segments) if sys_path is not None else {}
    warnings: list[str] = []
    sys_name = "sys.tsv" if sys_path is None else Path(sys_path).name  # the file as the dataset names it
    n_scored = {k: int(np.count_nonzero(~np.isnan(v))) for k, v in seg.items()}
    sys_scores: dict[str, float] = {}
    source: dict[str, str] = {}
    differs: list[str] = []
    counts_differ: list[str] = []
    for system in systems:
        if system in sys_rows:
            value, count = sys_rows[system]
            sys_scores[system], source[system] = value, sys_name
            if system in seg:
                if count is not None and count != n_scored[system]:
                    counts_differ.append(f"{system} ({count} vs {n_scored[system]})")
                mean = float(np.nanmean(seg[system])) if n_scored[system] else math.nan
                if not math.isclose(value, mean, rel_tol=SYS_TOLERANCE, abs_tol=SYS_TOLERANCE):
                    differs.append(system)
            elif count is not None:
                n_scored[system] = count
        elif n_scored.get(system):
            sys_scores[system], source[system] = float(np.nanmean(seg[system])), "segments"
    if differs:
        warnings.append(f"{name}: the published system scores ({sys_name}) of {', '.join(differs)} differ from the "
                        f"mean of their segment scores by more than 1e-6; the system-level correlations use {sys_name}")
    if counts_differ:
        warnings.append(f"{name}: {sys_name} n_segments differs from the segments scored in "
                        f"{Path(seg_path).name if seg_path is not None else 'seg.tsv'} for " + ", ".join(counts_differ))
    sparse = [f"{s} ({c} of {n_segments})" for s, c in n_scored.items() if s in seg and 0 < c < n_segments]
    if sparse:
        warnings.append(f"{name}: segment scores for part of the segments only: {', '.join(sparse)}")
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
        warnings=tuple(warnings),
        sys_source=source,
        differs=tuple(differs),
    )
