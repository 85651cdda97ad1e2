"""seg_map.tsv: the mapping of lines to the judgments' segment ids is checked before segment judgments are used.

The de-en judgments the project once shipped were placed with line = SID - 1 while WMT21's to-English DA numbers
segments with the documents sorted by id; nothing in the scores said so. These tests build such a mapping and
expect it refused, naming the file and the line.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.job.dataset import load_dataset, read_layout
from harness.job.seg_map import check_seg_map
from support import DEEN, DEMO, RUEN, read_lines, write_lines


@pytest.mark.parametrize("root,docs", [(RUEN, 107), (DEEN, 0), (DEMO, 0)])
def test_the_bundled_maps_pass(root, docs):
    m = check_seg_map(root / "seg_map.tsv", len(read_lines(root / "refs" / "ref-A.txt"))
                      if (root / "refs" / "ref-A.txt").exists() else 527)
    assert m.n_documents == docs and len(set(m.ids)) == len(m.ids)


def _ruen_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "ruen"
    shutil.copytree(RUEN, copy)
    return copy


def _rows(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in read_lines(path)]


def test_ids_from_another_document_order_are_refused(tmp_path):
    """The ru-en map rebuilt as the de-en copy was (SID = line + 1, the documents in file order, not sorted): its
    ids are consecutive within every document, so only the order meta.json declares (``documents_sorted``, WMT21's
    to-English DA) can show it wrong; it is refused at the first document out of place."""
    copy = _ruen_copy(tmp_path)
    rows = _rows(copy / "seg_map.tsv")
    header, body = rows[0], rows[1:]
    docs = [r[2] for r in body]
    order = sorted(dict.fromkeys(docs))  # the documents sorted by id: where DA's SIDs come from
    first_of = {d: docs.index(d) for d in order}
    sid, base = {}, 1
    for d in order:  # a correct map numbers each document from its start in sorted order
        n = docs.count(d)
        for k in range(n):
            sid[first_of[d] + k] = base + k
        base += n
    assert [int(r[1]) for r in body] == [sid[i] for i in range(len(body))]  # the shipped map is this one
    wrong = [header] + [[r[0], str(i + 1), r[2]] for i, r in enumerate(body)]  # line = SID - 1
    write_lines(copy / "seg_map.tsv", ["\t".join(r) for r in wrong])
    with pytest.raises(InputError) as err:
        load_dataset(read_layout(copy), human=["da_z"])
    msg = str(err.value)
    assert "seg_map.tsv" in msg and "'documents_sorted'" in msg and "wrong segments" in msg
    assert err.value.line is not None and err.value.line > 2


@pytest.mark.parametrize("edit,expected", [
    (lambda rows: rows[:-1], "rows, expected one per segment"),
    (lambda rows: [rows[0], rows[2], rows[1], *rows[3:]], "line column is"),
    (lambda rows: [rows[0], rows[1], [rows[2][0], rows[1][1], rows[2][2]], *rows[3:]], "is also the id of line 0"),
    (lambda rows: [rows[0], [rows[1][0], "x", rows[1][2]], *rows[2:]], "is not an integer"),
    (lambda rows: [["line", "sid"], *rows[1:]], "header"),
])
@pytest.mark.slow
def test_malformed_maps_name_the_file_and_line(tmp_path, edit, expected):
    copy = _ruen_copy(tmp_path)
    rows = edit(_rows(copy / "seg_map.tsv"))
    write_lines(copy / "seg_map.tsv", ["\t".join(r) for r in rows])
    with pytest.raises(InputError) as err:
        load_dataset(read_layout(copy), human=["da_z"])
    assert expected in str(err.value) and str(copy / "seg_map.tsv") in str(err.value)


def test_a_map_without_a_declared_order_is_checked_for_consistency_only(tmp_path):
    copy = _ruen_copy(tmp_path)
    rows = _rows(copy / "seg_map.tsv")
    write_lines(copy / "seg_map.tsv", ["\t".join(r) for r in [rows[0]] + [[r[0], str(i + 1), r[2]]
                                                                         for i, r in enumerate(rows[1:])]])
    meta = (copy / "meta.json").read_text(encoding="utf-8").replace('"id_order": "documents_sorted"',
                                                                    '"id_order": "lines"')
    (copy / "meta.json").write_text(meta, encoding="utf-8")
    assert load_dataset(read_layout(copy), human=["da_z"]).seg_map.n_documents == 107
    (copy / "meta.json").write_text(meta.replace('"id_order": "lines"', '"id_order": "shuffled"'), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_dataset(read_layout(copy), human=["da_z"])
    assert "unknown seg_map id_order 'shuffled'" in str(err.value) and "meta.json" in str(err.value)


def test_a_document_that_comes_back_is_refused(tmp_path):
    path = write_lines(tmp_path / "seg_map.tsv", ["line\tsid\tdoc", "0\t1\ta", "1\t2\ta", "2\t7\tb", "3\t3\ta"])
    with pytest.raises(InputError) as err:
        check_seg_map(path, 4)
    assert "continues here after other documents" in str(err.value) and err.value.line == 5


def test_the_map_is_read_only_when_segment_judgments_are_used(tmp_path):
    copy = _ruen_copy(tmp_path)
    (copy / "seg_map.tsv").write_text("garbage\n", encoding="utf-8")
    ds = load_dataset(read_layout(copy), human=[])  # human=none: no segment judgment, nothing to place
    assert ds.seg_map is None
    with pytest.raises(InputError):
        load_dataset(read_layout(copy), human=["da_raw"])
