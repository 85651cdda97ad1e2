"""Tests for harness.corpus: safe text reading, dataset folders, human scores (FIELD_NOTES 1.1, DESIGN 1.6)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from harness.corpus import (
    Dataset,
    HumanScores,
    TextFile,
    check_parallel,
    load_dataset,
    read_human_tsv,
    read_seg_tsv,
    read_sys_tsv,
    read_text,
    refset_name,
    resolve_under,
    safe_name,
)
from harness.errors import ConfigError, InputError

REPO = Path(__file__).resolve().parents[1]


def _real_dataset() -> Path:
    candidates = (REPO / "harness" / "data" / "wmt21_news_ende", REPO.parent / "shared" / "data" / "wmt21_news_ende")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    pytest.skip("dataset wmt21_news_ende not found")


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def make_dataset(
    root: Path,
    *,
    refs: dict[str, str],
    systems: dict[str, str],
    meta: dict | None = None,
    seg_tsv: str | None = None,
    sys_tsv: str | None = None,
) -> Path:
    for name, text in refs.items():
        write(root / "refs" / f"{name}.txt", text)
    for name, text in systems.items():
        write(root / "systems" / f"{name}.txt", text)
    if meta is not None:
        write(root / "meta.json", json.dumps(meta))
    if seg_tsv is not None:
        write(root / "human" / "seg.tsv", seg_tsv)
    if sys_tsv is not None:
        write(root / "human" / "sys.tsv", sys_tsv)
    return root


THREE = "one\ntwo\nthree\n"


def assert_names(err: pytest.ExceptionInfo[InputError], path: Path, line: int | None) -> None:
    """The error names the file and (if given) the 1-based line, in its attributes and its one-line message."""
    assert err.value.path == str(path)
    assert err.value.line == line
    where = str(path) if line is None else f"{path}:{line}"
    assert str(err.value).startswith(where + ": ")


# ------------------------------------------------------------------------------------------------ real dataset


def test_real_dataset() -> None:
    root = _real_dataset()
    ds = load_dataset(root)
    assert isinstance(ds, Dataset)
    assert ds.n_segments == 527
    assert list(ds.refs) == ["ref-C", "ref-D"]
    assert ds.primary_ref == "ref-C"
    assert len(ds.systems) == 9
    assert "ref-A" in ds.human_systems
    assert "ref-A" not in ds.mt_systems and len(ds.mt_systems) == 8
    assert ds.source is not None and ds.source.n_lines == 527
    assert (ds.source_lang, ds.target_lang) == ("en", "de")
    assert ds.refs_for("ref-A") == ["ref-C", "ref-D"]  # ref-A is not among refs/, nothing to leave out
    hs = ds.human
    assert isinstance(hs, HumanScores)
    assert hs.name == "mqm" and hs.higher_is_better is True and hs.missing == ()
    sys_tsv = {}
    for line in (root / "human" / "sys.tsv").read_text().splitlines()[1:]:
        name, score, _ = line.split("\t")
        sys_tsv[name] = float(score)
    assert set(hs.sys) == set(ds.systems) == set(sys_tsv)
    for name, arr in hs.seg.items():
        assert arr.shape == (527,) and arr.dtype == np.float64
        assert abs(float(np.nanmean(arr)) - sys_tsv[name]) < 1e-6
        assert abs(hs.sys[name] - sys_tsv[name]) < 1e-6


def test_real_dataset_refs_argument(tmp_path: Path) -> None:
    root = _real_dataset()
    ds = load_dataset(root, refs=["ref-D"])
    assert list(ds.refs) == ["ref-D"] and ds.available_refs == ("ref-C", "ref-D")
    with pytest.raises(ConfigError) as err:
        load_dataset(root, refs=["ref-B"])
    assert err.value.key == "dataset.refs" and err.value.choices == ["ref-C", "ref-D"]


# ------------------------------------------------------------------------------------------------ read_text


def test_read_plain_file(tmp_path: Path) -> None:
    p = write(tmp_path / "hyp.txt", "a b\n\tc\nlast")  # no final newline
    tf = read_text(p)
    assert isinstance(tf, TextFile)
    assert tf.lines == ["a b", "\tc", "last"] and tf.name == "hyp" and not tf.final_newline
    assert tf.sha256 == __import__("hashlib").sha256(p.read_bytes()).hexdigest()
    assert (tf.bom, tf.crlf, tf.n_empty, tf.warnings) == (False, False, 0, [])
    assert read_text(write(tmp_path / "b.txt", "x\ny\n"), name="B").lines == ["x", "y"]
    assert read_text(tmp_path / "b.txt", name="B").name == "B"


def test_invalid_utf8_names_line_and_byte(tmp_path: Path) -> None:
    p = write(tmp_path / "bad.txt", b"ok\nfine\nabc \xe9t\xe9\n")
    with pytest.raises(InputError) as err:
        read_text(p)
    assert_names(err, p, 3)
    msg = str(err.value)
    assert "byte column 5" in msg and "byte offset 12" in msg and "[e9]" in msg


def test_nul_byte(tmp_path: Path) -> None:
    p = write(tmp_path / "nul.txt", "a\nb\x00c\n")
    with pytest.raises(InputError) as err:
        read_text(p)
    assert_names(err, p, 2)
    assert "U+0000" in str(err.value)


def test_other_control_character(tmp_path: Path) -> None:
    p = write(tmp_path / "vt.txt", "a\nb\x0bc\n")  # vertical tab: a line break for str.splitlines()
    with pytest.raises(InputError) as err:
        read_text(p)
    assert_names(err, p, 2)
    assert "U+000B" in str(err.value)


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u0085"])
def test_unicode_line_separators_are_errors_not_breaks(tmp_path: Path, char: str) -> None:
    p = write(tmp_path / "sep.txt", f"one\ntwo\nthree{char}four\nfive\n")
    with pytest.raises(InputError) as err:
        read_text(p)
    # line 3: the separator did not count as a line break before it
    assert_names(err, p, 3)
    assert f"U+{ord(char):04X}" in str(err.value)


def test_tab_is_allowed(tmp_path: Path) -> None:
    assert read_text(write(tmp_path / "t.txt", "a\tb\n")).lines == ["a\tb"]


def test_bom_removed_and_reported(tmp_path: Path) -> None:
    p = write(tmp_path / "bom.txt", b"\xef\xbb\xbfHallo Welt\nzwei\n")
    tf = read_text(p)
    assert tf.lines == ["Hallo Welt", "zwei"] and tf.bom
    assert any("BOM" in w for w in tf.warnings)
    with pytest.raises(InputError) as err:
        read_text(p, strict=True)
    assert_names(err, p, 1)
    assert "BOM" in str(err.value)


def test_bom_in_the_middle(tmp_path: Path) -> None:
    p = write(tmp_path / "cat.txt", b"a\nb\n\xef\xbb\xbfc\n")
    with pytest.raises(InputError) as err:
        read_text(p)
    assert_names(err, p, 3)
    assert "U+FEFF" in str(err.value)


def test_crlf_accepted_and_reported(tmp_path: Path) -> None:
    p = write(tmp_path / "crlf.txt", b"one\r\ntwo\r\n\r\nfour\r\n")
    tf = read_text(p, strict=True)
    assert tf.lines == ["one", "two", "", "four"] and tf.crlf and tf.n_empty == 1
    assert any("CRLF" in w for w in tf.warnings)
    tf = read_text(write(tmp_path / "crlf2.txt", b"one\r\ntwo"))  # missing final newline is fine
    assert tf.lines == ["one", "two"] and tf.crlf


def test_stray_cr(tmp_path: Path) -> None:
    p = write(tmp_path / "cr.txt", b"one\rtwo\nthree\n")
    tf = read_text(p)
    assert tf.lines == ["one\rtwo", "three"]  # kept as-is, not a line break
    assert not tf.crlf and any("stray carriage return" in w for w in tf.warnings)
    with pytest.raises(InputError) as err:
        read_text(p, strict=True)
    assert_names(err, p, 1)
    # a CR at the end of only some lines is not a CRLF file: the CRs stay and are reported
    tf = read_text(write(tmp_path / "mixed.txt", b"a\r\nb\nc\r\n"))
    assert tf.lines == ["a\r", "b", "c\r"] and not tf.crlf and any("stray" in w for w in tf.warnings)


def test_final_newline_does_not_add_line_but_empty_lines_count(tmp_path: Path) -> None:
    tf = read_text(write(tmp_path / "e.txt", "a\n\nb\n\n"))
    assert tf.lines == ["a", "", "b", ""] and tf.n_empty == 2
    assert any("2 empty lines (50.0%)" in w and "threshold" in w for w in tf.warnings)
    tf = read_text(write(tmp_path / "few.txt", "a\n" * 19 + "\n"))
    assert tf.n_empty == 1 and tf.warnings == ["1 empty line (5.0%)"]
    assert any("threshold" in w for w in read_text(tmp_path / "few.txt", max_empty_share=0.01).warnings)


def test_empty_file(tmp_path: Path) -> None:
    p = write(tmp_path / "empty.txt", b"")
    with pytest.raises(InputError) as err:
        read_text(p)
    assert_names(err, p, None)
    assert "empty" in str(err.value)
    p = write(tmp_path / "bomonly.txt", b"\xef\xbb\xbf")
    with pytest.raises(InputError, match="empty"):
        read_text(p)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    p = tmp_path / "nope.txt"
    with pytest.raises(InputError) as err:
        read_text(p)
    assert_names(err, p, None)
    assert "file not found" in str(err.value)
    with pytest.raises(InputError, match="file not found"):
        read_text(tmp_path)


# ------------------------------------------------------------------------------------------------ parallel


def test_check_parallel_names_both_files_and_counts(tmp_path: Path) -> None:
    ref = read_text(write(tmp_path / "refs" / "ref-C.txt", "a\nb\nc\n"))
    ref2 = read_text(write(tmp_path / "refs" / "ref-D.txt", "a\nb\nc\n"))
    hyp = read_text(write(tmp_path / "systems" / "A.txt", "a\nb\n"))
    assert check_parallel([ref, ref2]) == 3
    with pytest.raises(InputError) as err:
        check_parallel([ref, ref2, hyp])
    msg = str(err.value)
    assert "systems/A.txt has 2 lines but refs/ref-C.txt has 3" in msg
    # the odd file is blamed even when it comes first
    with pytest.raises(InputError, match="refs/ref-C.txt has 3 lines but systems/A.txt has 2"):
        check_parallel([ref, hyp, read_text(tmp_path / "systems" / "A.txt", name="A2")])


def test_dataset_unequal_line_counts(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds", refs={"ref-C": THREE}, systems={"A": "one\ntwo\nthree\n\n", "B": THREE})
    with pytest.raises(InputError) as err:
        load_dataset(root)
    msg = str(err.value)
    assert "systems/A.txt has 4 lines but refs/ref-C.txt has 3" in msg and "empty" in msg


# ------------------------------------------------------------------------------------------------ names, paths


@pytest.mark.parametrize("bad", ["../x", "a/b", "a\\b", "..", ".", ".hidden", "", "x..y", " a"])
def test_safe_name_refuses(bad: str) -> None:
    with pytest.raises(ConfigError) as err:
        safe_name(bad, "system.name")
    assert err.value.key == "system.name"


def test_safe_name_accepts() -> None:
    for good in ["ref-A", "NA", "null", "Facebook-AI", "sys.v1", "Online W"]:
        assert safe_name(good, "x") == good


def test_resolve_under(tmp_path: Path) -> None:
    (tmp_path / "ds" / "human").mkdir(parents=True)
    assert resolve_under(tmp_path / "ds", "human/seg.tsv", "k") == (tmp_path / "ds" / "human" / "seg.tsv").resolve()
    for rel in ["../x", "/etc/passwd", "human/../../x"]:
        with pytest.raises(ConfigError, match="outside the dataset folder"):
            resolve_under(tmp_path / "ds", rel, "human_scores.mqm.file_seg")
    (tmp_path / "ds" / "link").symlink_to(tmp_path)
    with pytest.raises(ConfigError, match="outside"):
        resolve_under(tmp_path / "ds", "link/x.txt", "k")


def test_path_traversal_refused_in_dataset(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds", refs={"ref-C": THREE}, systems={"A": THREE})
    write(tmp_path / "outside.tsv", "system\tseg_id\tscore\n")
    with pytest.raises(ConfigError, match="not a plain name") as err:
        load_dataset(root, refs=["../x"])
    assert err.value.key == "dataset.refs"
    meta = {"human_scores": {"mqm": {"file_seg": "../outside.tsv"}}}
    write(root / "meta.json", json.dumps(meta))
    with pytest.raises(ConfigError, match="outside the dataset folder"):
        load_dataset(root)
    write(root / "meta.json", json.dumps({"systems": ["../A"]}))
    with pytest.raises(InputError, match="not a plain name"):
        load_dataset(root)
    # a system file that is a symlink out of the dataset is refused too
    (root / "meta.json").unlink()
    write(tmp_path / "elsewhere.txt", THREE)
    (root / "systems" / "B.txt").symlink_to(tmp_path / "elsewhere.txt")
    with pytest.raises(ConfigError, match="outside"):
        load_dataset(root)


# ------------------------------------------------------------------------------------------------ dataset


def test_dataset_orders_and_refs_argument(tmp_path: Path) -> None:
    root = make_dataset(
        tmp_path / "ds",
        refs={"r1": THREE, "r2": THREE, "r3": THREE},
        systems={"b": THREE, "a": THREE, "c": THREE},
    )
    ds = load_dataset(root)
    assert list(ds.refs) == ["r1", "r2", "r3"] and list(ds.systems) == ["a", "b", "c"]
    assert ds.human is None and ds.source is None and ds.name == "ds" and ds.human_systems == set()
    write(root / "meta.json", json.dumps({"name": "toy", "refs": ["r3", "r1"], "systems": ["c", "a"]}))
    ds = load_dataset(root)
    assert ds.name == "toy" and list(ds.refs) == ["r3", "r1", "r2"] and list(ds.systems) == ["c", "a", "b"]
    ds = load_dataset(root, refs=["r2", "r1"])
    assert list(ds.refs) == ["r2", "r1"]
    with pytest.raises(ConfigError) as err:
        load_dataset(root, refs=["r9"])
    assert err.value.choices == ["r3", "r1", "r2"] and "r9" in str(err.value)


def test_meta_lists_missing_file(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds", refs={"r1": THREE}, systems={"a": THREE}, meta={"systems": ["a", "zz"]})
    with pytest.raises(InputError) as err:
        load_dataset(root)
    assert err.value.path == str(root / "meta.json") and "zz" in str(err.value)


def test_meta_n_segments_checked(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds", refs={"r1": THREE}, systems={"a": THREE}, meta={"n_segments": 4})
    with pytest.raises(InputError, match="'n_segments' is 4 but the text files have 3 lines"):
        load_dataset(root)


def test_source_checked_parallel(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds", refs={"r1": THREE}, systems={"a": THREE})
    write(root / "src.txt", "x\ny\n")
    with pytest.raises(InputError, match="src.txt has 2 lines but refs/r1.txt has 3"):
        load_dataset(root)


def test_dataset_strict_propagates(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds", refs={"r1": THREE}, systems={"a": "\ufeff" + THREE})
    ds = load_dataset(root)
    assert any("systems/a.txt: UTF-8 BOM removed" == w for w in ds.warnings)
    with pytest.raises(InputError) as err:
        load_dataset(root, strict=True)
    assert_names(err, root / "systems" / "a.txt", 1)


def test_leave_one_out(tmp_path: Path) -> None:
    root = make_dataset(
        tmp_path / "ds",
        refs={"ref-X": "h1\nh2\nh3\n", "ref-Y": THREE, "ref-Z": THREE},
        systems={"ref-X": "h1\nh2\nh3\n", "mt": THREE},
    )
    ds = load_dataset(root)
    assert ds.human_systems == {"ref-X"} and ds.mt_systems == ["mt"]
    assert ds.refs_for("ref-X") == ["ref-Y", "ref-Z"]
    assert ds.refs_for("ref-X", ["ref-Z", "ref-X"]) == ["ref-Z"]
    assert ds.refs_for("mt") == ["ref-X", "ref-Y", "ref-Z"]
    with pytest.raises(InputError, match="leave-one-out"):
        ds.refs_for("ref-X", ["ref-X"])
    with pytest.raises(ConfigError):
        ds.refs_for("mt", ["ref-Q"])
    assert refset_name(ds.refs_for("ref-X")) == "ref-Y+ref-Z"
    # "mt" is a byte copy of ref-Y (THREE): not dropped (refsets follow names only) but reported
    assert any("systems/mt.txt is byte-identical to refs/ref-Y.txt" in w for w in ds.warnings)


# ------------------------------------------------------------------------------------------------ human scores

SYSTEMS = {"A": THREE, "B": THREE}


def _human(tmp_path: Path, seg: str | None = None, sys_: str | None = None, **kw) -> tuple[Path, Path]:
    root = make_dataset(tmp_path / "ds", refs={"r": THREE}, systems=kw.pop("systems", SYSTEMS), seg_tsv=seg,
                        sys_tsv=sys_, **kw)
    return root, root / "human" / ("seg.tsv" if seg is not None else "sys.tsv")


def test_human_scores_loaded_and_missing_reported(tmp_path: Path) -> None:
    seg = "system\tseg_id\tscore\nA\t0\t1.5\nA\t2\t-0.5\n"
    root, _ = _human(tmp_path, seg, meta={"higher_is_better": False, "human_score": "da"})
    hs = load_dataset(root).human
    assert hs is not None and hs.name == "da" and not hs.higher_is_better
    np.testing.assert_array_equal(hs.seg["A"], [1.5, np.nan, -0.5])
    assert hs.sys == {"A": 0.5} and hs.missing == ("B",)
    assert any("B" in w for w in hs.warnings)
    oriented = hs.oriented()
    assert oriented.higher_is_better and oriented.sys == {"A": -0.5}
    np.testing.assert_array_equal(oriented.seg["A"], [-1.5, np.nan, 0.5])
    assert hs.sys == {"A": 0.5}  # the original is unchanged


def test_per_score_higher_is_better(tmp_path: Path) -> None:
    meta = {"human_scores": {"mqm": {"higher_is_better": False, "file_sys": "human/sys.tsv"}}}
    root, _ = _human(tmp_path, None, "system\tscore\nA\t2\nB\t3\n", meta=meta)
    hs = load_dataset(root).human
    assert hs is not None and hs.name == "mqm" and hs.higher_is_better is False and hs.sys == {"A": 2.0, "B": 3.0}
    assert hs.oriented().sys == {"A": -2.0, "B": -3.0}


def test_human_unknown_system(tmp_path: Path) -> None:
    root, tsv = _human(tmp_path, "system\tseg_id\tscore\nA\t0\t1\nC\t1\t2\n")
    with pytest.raises(InputError) as err:
        load_dataset(root)
    assert_names(err, tsv, 3)
    assert "unknown system 'C'" in str(err.value)


def test_human_duplicate_seg_id(tmp_path: Path) -> None:
    root, tsv = _human(tmp_path, "system\tseg_id\tscore\nA\t0\t1\nA\t1\t1\nA\t0\t2\n")
    with pytest.raises(InputError) as err:
        load_dataset(root)
    assert_names(err, tsv, 4)
    assert "duplicate" in str(err.value) and "line 2" in str(err.value)


@pytest.mark.parametrize("seg_id", ["3", "-1"])
def test_human_seg_id_out_of_range(tmp_path: Path, seg_id: str) -> None:
    root, tsv = _human(tmp_path, f"system\tseg_id\tscore\nA\t{seg_id}\t1\n")
    with pytest.raises(InputError) as err:
        load_dataset(root)
    assert_names(err, tsv, 2)
    assert "out of range" in str(err.value)


def test_human_seg_id_not_integer(tmp_path: Path) -> None:
    root, tsv = _human(tmp_path, "system\tseg_id\tscore\nA\t1.0\t1\n")
    with pytest.raises(InputError, match="not an integer") as err:
        load_dataset(root)
    assert_names(err, tsv, 2)


@pytest.mark.parametrize("score", ["abc", "", "nan", "inf", "-Infinity"])
def test_human_bad_score(tmp_path: Path, score: str) -> None:
    root, tsv = _human(tmp_path, f"system\tseg_id\tscore\nA\t0\t1\nB\t1\t{score}\n")
    with pytest.raises(InputError) as err:
        load_dataset(root)
    assert_names(err, tsv, 3)
    assert "score" in str(err.value)


def test_human_wrong_header_and_columns(tmp_path: Path) -> None:
    root, tsv = _human(tmp_path, "sys\tseg\tscore\nA\t0\t1\n")
    with pytest.raises(InputError, match="header") as err:
        load_dataset(root)
    assert_names(err, tsv, 1)
    write(tsv, "system\tseg_id\tscore\nA\t0\t1\t9\n")
    with pytest.raises(InputError, match="expected 3 tab-separated fields") as err:
        load_dataset(root)
    assert_names(err, tsv, 2)


def test_sys_tsv_duplicate_and_unknown(tmp_path: Path) -> None:
    root, tsv = _human(tmp_path, None, "system\tscore\tn_segments\nA\t1\t3\nA\t2\t3\n")
    with pytest.raises(InputError, match="duplicate system 'A'") as err:
        load_dataset(root)
    assert_names(err, tsv, 3)
    write(tsv, "system\tscore\nZ\t1\n")
    with pytest.raises(InputError, match="unknown system 'Z'"):
        load_dataset(root)


def test_na_and_null_system_names_are_strings(tmp_path: Path) -> None:
    seg = "system\tseg_id\tscore\nNA\t0\t1\nnull\t0\t2\nNA\t1\t3\nNone\t2\t4\nnan\t0\t5\n"
    systems = {"NA": THREE, "null": THREE, "None": THREE, "nan": THREE}
    root, _ = _human(tmp_path, seg, "system\tscore\nNA\t2\nnull\t2\n", systems=systems)
    ds = load_dataset(root)
    assert list(ds.systems) == ["NA", "None", "nan", "null"]
    hs = ds.human
    assert hs is not None
    assert set(hs.seg) == {"NA", "null", "None", "nan"}
    np.testing.assert_array_equal(hs.seg["NA"], [1.0, 3.0, np.nan])
    assert hs.sys == {"NA": 2.0, "null": 2.0, "None": 4.0, "nan": 5.0}


def test_leading_quote_does_not_merge_rows(tmp_path: Path) -> None:
    p = write(tmp_path / "seg.tsv", 'system\tseg_id\tscore\n"A\t0\t1\nB\t1\t2\n"A\t2\t3\n')
    seg = read_seg_tsv(p, systems=['"A', "B"], n_segments=3)
    np.testing.assert_array_equal(seg['"A'], [1.0, np.nan, 3.0])
    np.testing.assert_array_equal(seg["B"], [np.nan, 2.0, np.nan])


def test_read_sys_and_human_functions(tmp_path: Path) -> None:
    sys_p = write(tmp_path / "sys.tsv", "system\tscore\tn_segments\nA\t0.5\t2\n")
    assert read_sys_tsv(sys_p, systems=["A"], n_segments=3) == {"A": (0.5, 2)}
    seg_p = write(tmp_path / "seg.tsv", "system\tseg_id\tscore\nA\t0\t1\nA\t1\t0\n")
    hs = read_human_tsv(seg_p, sys_p, systems=["A"], n_segments=3, name="x")
    assert hs.sys == {"A": 0.5} and hs.n_scored == {"A": 2} and hs.missing == ()
    with pytest.raises(ValueError):
        hs.seg["A"][0] = 9.0  # read-only: the frozen dataclass cannot be changed through its arrays
    write(sys_p, "system\tscore\tn_segments\nA\t0.5\t4\n")
    with pytest.raises(InputError, match="out of range") as err:
        read_sys_tsv(sys_p, systems=["A"], n_segments=3)
    assert_names(err, sys_p, 2)


def test_tsv_stray_cr_is_an_error(tmp_path: Path) -> None:
    p = write(tmp_path / "seg.tsv", "system\tseg_id\tscore\nA\t0\t1\rB\t1\t2\n")
    with pytest.raises(InputError) as err:
        read_seg_tsv(p, systems=["A", "B"], n_segments=3)
    assert_names(err, p, 2)


# ------------------------------------------------------------------------------------------------ speed


def test_read_100k_lines_fast(tmp_path: Path) -> None:
    line = "Das ist ein ganz normaler Satz mit Umlauten: äöü ß und einem Tab\tdarin.\n"
    p = write(tmp_path / "big.txt", line * 100_000)
    start = time.perf_counter()
    tf = read_text(p)
    elapsed = time.perf_counter() - start
    assert tf.n_lines == 100_000
    assert elapsed < 1.0, f"reading 100k lines took {elapsed:.2f}s"
