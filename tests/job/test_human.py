"""Human judgments (harness.job.human): system scores as published (sys.tsv), else the mean of the judged segments;
a published score that is not that mean said once; sparse coverage; kinds and their direction; every malformed
row an InputError naming the file and the line. (Row checks shared with dataset folders: tests/job/test_dataset.py.)"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import numpy as np
import pytest

from harness.errors import InputError
from harness.job.dataset import load_dataset, read_layout
from harness.job.human import SYS_TOLERANCE, read_human_tsv, read_seg_tsv, read_sys_tsv

SYSTEMS = ["A", "B", "C", "D"]


def write(path: Path, rows: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def seg_file(tmp_path: Path, *rows: str) -> Path:
    return write(tmp_path / "seg.tsv", ["system\tseg_id\tscore", *rows])


def sys_file(tmp_path: Path, *rows: str, counts: bool = False) -> Path:
    return write(tmp_path / "sys.tsv", ["system\tscore" + ("\tn_segments" if counts else ""), *rows])


def differ_records(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "differ from the mean" in r.getMessage()]


# ------------------------------------------------------------------------------------------------ system scores


def test_system_scores_are_published_else_the_mean_of_the_judged_segments(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="harness.job.human")
    seg = seg_file(tmp_path, "A\t0\t0.25", "A\t2\t0.75",  # A: judged on 2 of 3 segments, mean 0.5
                   "B\t0\t1", "B\t1\t2", "B\t2\t6")  # B: mean 3
    sys_ = sys_file(tmp_path, "B\t3.5", "C\t-2")  # B published differently; C only published
    hs = read_human_tsv(seg, sys_, systems=SYSTEMS, n_segments=3, name="da")
    assert hs.sys == {"A": 0.5, "B": 3.5, "C": -2.0}
    assert hs.sys_source == {"A": "segments", "B": "sys.tsv", "C": "sys.tsv"}
    assert hs.differs == ("B",) and hs.missing == ("D",) and hs.n_scored == {"A": 2, "B": 3}
    assert hs.systems == ["A", "B", "C"] and hs.has_segments
    np.testing.assert_array_equal(hs.seg["A"], [0.25, np.nan, 0.75])  # not judged: NaN
    assert (hs.seg_path, hs.sys_path) == (seg, sys_) and hs.name == "da" and hs.higher_is_better
    assert hs.warnings == (
        "da: the published system scores (sys.tsv) of B differ from the mean of their segment scores by more than "
        "1e-6; the system-level correlations use sys.tsv",
        "da: segment scores for part of the segments only: A (2 of 3)",
        "da: no human score for system(s): D")
    assert [r.getMessage() for r in caplog.records] == list(hs.warnings)  # each said once, as a warning


@pytest.mark.parametrize("published,differs", [
    ("0.5", False), ("0.5000005", False), ("0.5000015", True), ("-0.5", True),
])
def test_a_published_score_differs_beyond_the_tolerance_only(tmp_path, published, differs):
    assert SYS_TOLERANCE == 1e-6
    seg = seg_file(tmp_path, "A\t0\t0.25", "A\t1\t0.75")
    hs = read_human_tsv(seg, sys_file(tmp_path, f"A\t{published}"), systems=["A"], n_segments=2)
    assert hs.differs == (("A",) if differs else ())
    assert hs.sys["A"] == float(published) and hs.sys_source["A"] == "sys.tsv"  # published wins either way


def test_several_differing_systems_are_said_once(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="harness.job.human")
    seg = seg_file(tmp_path, "A\t0\t1", "B\t0\t2", "C\t0\t3")
    hs = read_human_tsv(seg, sys_file(tmp_path, "A\t1.1", "B\t2", "C\t3.3"), systems=["A", "B", "C"],
                        n_segments=1, name="mqm")
    assert hs.differs == ("A", "C")
    (message,) = differ_records(caplog)
    assert message.startswith("mqm: the published system scores (sys.tsv) of A, C differ")
    assert sum("differ from the mean" in w for w in hs.warnings) == 1


def test_published_segment_counts_are_checked_against_the_judged_segments(tmp_path):
    seg = seg_file(tmp_path, "A\t0\t1", "A\t1\t3")
    sys_ = sys_file(tmp_path, "A\t2\t3", "B\t7\t2", counts=True)
    hs = read_human_tsv(seg, sys_, systems=["A", "B"], n_segments=3)
    assert hs.n_scored == {"A": 2, "B": 2} and hs.differs == ()  # B: the count sys.tsv gives
    assert "human: sys.tsv n_segments differs from the segments scored in seg.tsv for A (3 vs 2)" in hs.warnings


def test_only_system_scores(tmp_path):
    hs = read_human_tsv(None, sys_file(tmp_path, "A\t1", "B\t2"), systems=["A", "B"], n_segments=5)
    assert hs.sys == {"A": 1.0, "B": 2.0} and hs.seg == {} and not hs.has_segments and hs.warnings == ()
    with pytest.raises(InputError, match="human scores 'x': neither a segment nor a system score file"):
        read_human_tsv(None, None, systems=["A"], n_segments=5, name="x")


# ------------------------------------------------------------------------------------------------ kinds


def test_kinds_of_one_dataset_keep_their_names_and_directions(tmp_path):
    root = tmp_path / "ds"
    write(root / "refs" / "r.txt", ["a", "b"])
    for name in ("A", "B"):
        write(root / "systems" / f"{name}.txt", ["a", "b"])
    write(root / "human" / "mqm_seg.tsv", ["system\tseg_id\tscore", "A\t0\t-1", "A\t1\t-3", "B\t0\t-0.5"])
    write(root / "human" / "da_sys.tsv", ["system\tscore", "A\t70", "B\t80"])
    (root / "meta.json").write_text(json.dumps({"human_scores": {
        "mqm": {"file_seg": "human/mqm_seg.tsv", "higher_is_better": False},
        "da": {"file_sys": "human/da_sys.tsv"}}}))
    ds = load_dataset(read_layout(root))
    mqm, da = ds.human["mqm"], ds.human["da"]
    assert list(ds.human) == ["mqm", "da"]
    assert (mqm.name, mqm.higher_is_better, mqm.sys) == ("mqm", False, {"A": -2.0, "B": -0.5})
    assert (da.name, da.higher_is_better, da.sys) == ("da", True, {"A": 70.0, "B": 80.0})
    up = mqm.oriented()
    assert up.higher_is_better and up.sys == {"A": 2.0, "B": 0.5} and up.name == "mqm"
    np.testing.assert_array_equal(up.seg["B"], [0.5, np.nan])
    assert not up.seg["B"].flags.writeable and up.differs == mqm.differs and up.missing == mqm.missing
    assert da.oriented() is da
    assert load_dataset(read_layout(root), human=["da"]).human.keys() == {"da"}  # one kind: the other not read


# ------------------------------------------------------------------------------------------------ malformed rows


@pytest.mark.parametrize("which,rows,line,message", [
    ("seg", ["A\t0\t1", "", "A\t2\t1"], 3, "expected 3 tab-separated fields (system, seg_id, score), got 0"),
    ("seg", ["A\t0\t1\t"], 2, "expected 3 tab-separated fields"),
    ("seg", ["A 0 1"], 2, "got 1"),
    ("seg", ["A\t0\t1_5"], 2, "score '1_5' is not a number"),
    ("seg", ["A\t0\t0x10"], 2, "score '0x10' is not a number"),
    ("seg", ["A\t+1\t1", "A\t01\t2"], 3, "duplicate score for system 'A', seg_id 1 (first on line 2)"),
    ("seg", ["A\t\t1"], 2, "seg_id '' is not an integer"),
    ("sys", ["A\t1", "B"], 3, "expected 2 tab-separated fields (system, score), got 1"),
    ("sys", ["A\tNaN"], 2, "score 'NaN' is not a finite number"),
    ("sys3", ["A\t1\t2.0"], 2, "n_segments '2.0' is not an integer"),
    ("sys3", ["A\t1\t-1"], 2, "n_segments -1 out of range [0, 3]"),
    ("sys3", ["A\t1"], 2, "expected 3 tab-separated fields (system, score, n_segments), got 2"),
    ("syshead", ["A\t1"], 1, "header row is 'system<TAB>scores', expected system<TAB>score or "
                              "system<TAB>score<TAB>n_segments"),
])
def test_a_malformed_row_names_the_file_and_line(tmp_path, which, rows, line, message):
    if which == "seg":
        path, read = seg_file(tmp_path, *rows), read_seg_tsv
    elif which == "syshead":
        path, read = write(tmp_path / "sys.tsv", ["system\tscores", *rows]), read_sys_tsv
    else:
        path, read = sys_file(tmp_path, *rows, counts=which == "sys3"), read_sys_tsv
    with pytest.raises(InputError) as err:
        read(path, systems=["A", "B"], n_segments=3)
    assert (err.value.path, err.value.line) == (str(path), line)
    assert str(err.value).startswith(f"{path}:{line}: ") and message in str(err.value)
    with pytest.raises(InputError) as through:  # the same error through the reader of a kind
        read_human_tsv(path if read is read_seg_tsv else None, path if read is read_sys_tsv else None,
                       systems=["A", "B"], n_segments=3)
    assert str(through.value) == str(err.value)


def test_values_are_read_as_written(tmp_path):
    seg = seg_file(tmp_path, "A\t0\t-0.0", "A\t1\t1e-3", "A\t2\t 2.5 ", "B\t0\t-7")
    got = read_seg_tsv(seg, systems=["A", "B"], n_segments=3)
    np.testing.assert_array_equal(got["A"], [0.0, 0.001, 2.5])
    assert math.copysign(1, got["A"][0]) == -1 and got["A"].dtype == np.float64
    np.testing.assert_array_equal(got["B"], [-7.0, np.nan, np.nan])
