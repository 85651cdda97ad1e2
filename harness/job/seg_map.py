"""``seg_map.tsv``: how a dataset's lines map to the segment ids of its source, checked before judgments are used.

Segment-level human scores are only as good as their placement on lines. WMT21's to-English DA numbers a segment
by its place in the test set with the documents sorted by document id, not by its line in the released text
files; a copy that assumed line = id - 1 paired judgments with the wrong segments (sentence BLEU vs DA z:
Pearson 0.01 instead of 0.20), and nothing in the scores themselves says so. A dataset records the mapping in
``seg_map.tsv`` (header ``line<TAB>ID_NAME[<TAB>doc]``: the 0-based line, the segment's id in the source of the
judgments, its document), and :func:`check_seg_map` holds it to what a correct mapping must satisfy:

- one row per line, lines ``0..n-1`` in order (``n`` = the dataset's segment count);
- the ids are integers, each used once;
- with documents: each document's lines are contiguous, and within a document consecutive lines have consecutive
  ids (a document is numbered in reading order);
- the order in which the judgments number segments, when ``meta.json`` declares it (``"seg_map": {"id_order":
  ...}``): ``lines`` (the id grows by one from line to line) or ``documents_sorted`` (WMT21's to-English DA: the
  documents sorted by id, each numbered in reading order, one after the other). A map that assumed line = id - 1
  for judgments numbered in sorted-document order fails at the first document out of place.

Nothing in the scores themselves reveals a wrong mapping; the declared order is what a dataset's builder knows
about its source, and this check holds the map to it. The report shows the pooled segment-level correlation with
its interval, so a value indistinguishable from 0 is seen (:mod:`harness.job.report`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..text.reading import read_text

FILE = "seg_map.tsv"
#: ``meta.json`` ``seg_map.id_order`` values.
ID_ORDERS = ("lines", "documents_sorted")


@dataclass(frozen=True)
class SegMap:
    """A checked ``seg_map.tsv``: the name of its id column, every line's id and document (``""``: none)."""

    id_name: str
    ids: tuple[int, ...]
    docs: tuple[str, ...]

    @property
    def n_documents(self) -> int:
        return len({d for d in self.docs if d})


def check_seg_map(path: Path, n_segments: int, id_order: str | None = None) -> SegMap:
    """Read and check ``path`` against a dataset of ``n_segments`` lines and, when given, the order in which the
    judgments number segments (:data:`ID_ORDERS`; module docstring); an :class:`InputError` names the file, the
    line and what was expected."""
    if not path.is_file():
        raise InputError("not a regular file (a dataset holds regular files only)", path)
    text = read_text(path, name="seg_map")
    lines = list(text.lines)
    if not lines:
        raise InputError("empty file: expected a header 'line<TAB>ID[<TAB>doc]' and one row per segment", path)
    header = lines[0].split("\t")
    if len(header) not in (2, 3) or header[0] != "line" or (len(header) == 3 and header[2] != "doc"):
        raise InputError(f"header {lines[0]!r}: expected 'line<TAB>ID_NAME' or 'line<TAB>ID_NAME<TAB>doc'", path, 1)
    rows = lines[1:]
    if len(rows) != n_segments:
        raise InputError(f"{len(rows)} rows, expected one per segment ({n_segments})", path)
    ids: list[int] = []
    docs: list[str] = []
    seen_ids: dict[int, int] = {}
    for i, row in enumerate(rows):
        lineno = i + 2
        fields = row.split("\t")
        if len(fields) != len(header):
            raise InputError(f"{len(fields)} fields, expected {len(header)} like the header", path, lineno)
        if fields[0] != str(i):
            raise InputError(f"line column is {fields[0]!r}, expected {i} (rows in line order, 0-based)", path, lineno)
        try:
            sid = int(fields[1])
        except ValueError:
            raise InputError(f"{header[1]} {fields[1]!r} is not an integer", path, lineno) from None
        if sid in seen_ids:
            raise InputError(f"{header[1]} {sid} is also the id of line {seen_ids[sid]}", path, lineno)
        seen_ids[sid] = i
        ids.append(sid)
        docs.append(fields[2] if len(header) == 3 else "")
    closed: set[str] = set()
    for i in range(1, len(rows)):
        prev, doc = docs[i - 1], docs[i]
        if doc != prev:
            if prev:
                closed.add(prev)
            if doc and doc in closed:
                raise InputError(f"document {doc!r} continues here after other documents: a document's lines must "
                                 "be contiguous", path, i + 2)
        elif doc and ids[i] != ids[i - 1] + 1:
            raise InputError(f"{header[1]} {ids[i]} follows {ids[i - 1]} inside document {doc!r}: ids within a "
                             "document must be consecutive; the ids may come from another document order than the "
                             "lines (the judgments would sit on the wrong segments)", path, i + 2)
    if id_order is not None:
        _check_order(path, header[1], ids, docs, id_order)
    return SegMap(header[1], tuple(ids), tuple(docs))


def _check_order(path: Path, id_name: str, ids: list[int], docs: list[str], id_order: str) -> None:
    """The ids number the segments in the declared order: line by line, or document by document with the
    documents sorted by id."""
    if id_order == "lines":
        order = list(range(len(ids)))
    elif id_order == "documents_sorted":
        if not any(docs):
            raise InputError("id_order 'documents_sorted' needs the doc column", path)
        first = {d: i for i, d in reversed(list(enumerate(docs)))}
        order = [i for d in sorted(first) for i in range(first[d], first[d] + docs.count(d))]
    else:
        raise InputError(f"unknown seg_map id_order {id_order!r} in meta.json; expected one of {', '.join(ID_ORDERS)}",
                         path.parent / "meta.json")
    for prev, line in zip(order, order[1:]):
        if ids[line] != ids[prev] + 1:
            where = f"document {docs[line]!r}" if docs[line] else f"line {line}"
            raise InputError(f"{id_name} {ids[line]} at {where}, expected {ids[prev] + 1}: meta.json says the "
                             f"judgments number segments in order {id_order!r}, and this map does not (the judgments "
                             "would sit on the wrong segments)", path, line + 2)
