"""Dataset folders (harness.job.dataset): layout, order, meta.json, paths, texts; human scores (harness.job.human)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.errors import ConfigError, InputError
from harness.job.dataset import Dataset, load_dataset, read_layout, resolve_under
from harness.job.human import HumanScores, read_human_tsv, read_seg_tsv, read_sys_tsv
from support import DEMO


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




def load(root: Path, **kw) -> Dataset:
    """Both steps: the layout, then the texts and human scores."""
    return load_dataset(read_layout(root), **kw)


def names(ds: Dataset) -> list[str]:
    return [s.stem for s, _ in ds.systems]


def primary_human(ds: Dataset) -> HumanScores | None:
    return next(iter(ds.human.values()), None)


# ------------------------------------------------------------------------------------------------ real dataset


def test_real_dataset() -> None:
    root = DEMO
    ds = load(root)
    assert isinstance(ds, Dataset)
    assert ds.n_segments == 527
    assert list(ds.refs) == ["ref-C", "ref-D"]
    assert ds.layout.primary_ref == "ref-C"
    assert len(ds.systems) == 9
    humans = [s.stem for s, _ in ds.systems if s.human]
    assert humans == ["ref-A"]
    assert ds.source is not None and ds.source.n_lines == 527
    assert (ds.layout.source_lang, ds.layout.target_lang) == ("en", "de")
    hs = primary_human(ds)
    assert isinstance(hs, HumanScores)
    assert hs.name == "mqm" and hs.higher_is_better is True and hs.missing == ()
    sys_tsv = {}
    for line in (root / "human" / "sys.tsv").read_text().splitlines()[1:]:
        name, score, _ = line.split("\t")
        sys_tsv[name] = float(score)
    assert set(hs.sys) == set(names(ds)) == set(sys_tsv)
    for name, arr in hs.seg.items():
        assert arr.shape == (527,) and arr.dtype == np.float64
        assert abs(float(np.nanmean(arr)) - sys_tsv[name]) < 1e-6
        assert abs(hs.sys[name] - sys_tsv[name]) < 1e-6


def test_real_dataset_refs_argument(tmp_path: Path) -> None:
    root = DEMO
    ds = load(root, refs=["ref-D"])
    assert list(ds.refs) == ["ref-D"] and list(ds.layout.refs) == ["ref-C", "ref-D"]
    with pytest.raises(ConfigError) as err:
        load(root, refs=["ref-B"])
    assert err.value.key == "dataset.refs" and err.value.choices == ["ref-C", "ref-D"]


def test_dataset_unequal_line_counts(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds", refs={"ref-C": THREE}, systems={"A": "one\ntwo\nthree\n\n", "B": THREE})
    with pytest.raises(InputError) as err:
        load(root)
    msg = str(err.value)
    assert "systems/A.txt has 4 lines but refs/ref-C.txt has 3" in msg and "empty" in msg


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
    with pytest.raises(ConfigError, match="unknown reference") as err:
        load(root, refs=["../x"])
    assert err.value.key == "dataset.refs"
    meta = {"human_scores": {"mqm": {"file_seg": "../outside.tsv"}}}
    write(root / "meta.json", json.dumps(meta))
    with pytest.raises(ConfigError, match="outside the dataset folder"):
        load(root)
    write(root / "meta.json", json.dumps({"systems": ["../A"]}))
    with pytest.raises(InputError, match="not a plain name"):
        load(root)
    # a system file that is a symlink out of the dataset is refused too
    (root / "meta.json").unlink()
    write(tmp_path / "elsewhere.txt", THREE)
    (root / "systems" / "B.txt").symlink_to(tmp_path / "elsewhere.txt")
    with pytest.raises(ConfigError, match="outside"):
        load(root)


# ------------------------------------------------------------------------------------------------ dataset


def test_dataset_orders_and_refs_argument(tmp_path: Path) -> None:
    root = make_dataset(
        tmp_path / "ds",
        refs={"r1": THREE, "r2": THREE, "r3": THREE},
        systems={"b": THREE, "a": THREE, "c": THREE},
    )
    ds = load(root)
    assert list(ds.refs) == ["r1", "r2", "r3"] and names(ds) == ["a", "b", "c"]
    assert ds.human == {} and ds.source is None and ds.name == "ds" and not any(s.human for s, _ in ds.systems)
    write(root / "meta.json", json.dumps({"name": "toy", "refs": ["r3", "r1"], "systems": ["c", "a"]}))
    ds = load(root)
    assert ds.name == "toy" and list(ds.refs) == ["r3", "r1", "r2"] and names(ds) == ["c", "a", "b"]
    ds = load(root, refs=["r2", "r1"])
    assert list(ds.refs) == ["r2", "r1"]
    with pytest.raises(ConfigError) as err:
        load(root, refs=["r9"])
    assert err.value.choices == ["r3", "r1", "r2"] and "r9" in str(err.value)


def test_meta_lists_missing_file(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds", refs={"r1": THREE}, systems={"a": THREE}, meta={"systems": ["a", "zz"]})
    with pytest.raises(InputError) as err:
        load(root)
    assert err.value.path == str(root / "meta.json") and "zz" in str(err.value)


def test_meta_n_segments_checked(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds", refs={"r1": THREE}, systems={"a": THREE}, meta={"n_segments": 4})
    with pytest.raises(InputError, match="'n_segments' is 4 but the text files have 3 lines"):
        load(root)


def test_source_checked_parallel(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds", refs={"r1": THREE}, systems={"a": THREE})
    write(root / "src.txt", "x\ny\n")
    with pytest.raises(InputError, match="src.txt has 2 lines but refs/r1.txt has 3"):
        load(root)


def test_dataset_strict_propagates(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds", refs={"r1": THREE}, systems={"a": "\ufeff" + THREE})
    ds = load(root)
    assert any("systems/a.txt: UTF-8 BOM removed" == w for w in ds.warnings)
    with pytest.raises(InputError) as err:
        load(root, strict=True)
    assert_names(err, root / "systems" / "a.txt", 1)


def test_human_translation_named_like_a_reference(tmp_path: Path) -> None:
    root = make_dataset(
        tmp_path / "ds",
        refs={"ref-X": "h1\nh2\nh3\n", "ref-Y": THREE, "ref-Z": THREE},
        systems={"ref-X": "h1\nh2\nh3\n", "mt": THREE},
    )
    ds = load(root)
    assert [s.stem for s, _ in ds.systems if s.human] == ["ref-X"]
    # "mt" is a byte copy of ref-Y (THREE): scored against it (refsets follow names only) but reported
    assert any("systems/mt.txt is byte-identical to refs/ref-Y.txt" in w for w in ds.warnings)


def test_versions_of_a_system_in_natural_order(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds", refs={"r": THREE},
                        systems={"m@10": THREE, "m@2": THREE, "base": THREE, "m@1": THREE})
    layout = read_layout(root)
    assert [(s.name, s.version) for s in layout.systems] == [("base", None), ("m", "1"), ("m", "2"), ("m", "10")]
    assert names(load(root, systems=["m"])) == ["m@1", "m@2", "m@10"]
    assert names(load(root, systems=["m@2", "base"])) == ["base", "m@2"]
    with pytest.raises(ConfigError, match="unknown system 'm@3'"):
        load(root, systems=["m@3"])


# ------------------------------------------------------------------------------------------------ human scores

SYSTEMS = {"A": THREE, "B": THREE}


def _human(tmp_path: Path, seg: str | None = None, sys_: str | None = None, **kw) -> tuple[Path, Path]:
    root = make_dataset(tmp_path / "ds", refs={"r": THREE}, systems=kw.pop("systems", SYSTEMS), seg_tsv=seg,
                        sys_tsv=sys_, **kw)
    return root, root / "human" / ("seg.tsv" if seg is not None else "sys.tsv")


def test_human_scores_loaded_and_missing_reported(tmp_path: Path) -> None:
    seg = "system\tseg_id\tscore\nA\t0\t1.5\nA\t2\t-0.5\n"
    root, _ = _human(tmp_path, seg, meta={"higher_is_better": False, "human_score": "da"})
    hs = primary_human(load(root))
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
    hs = primary_human(load(root))
    assert hs is not None and hs.name == "mqm" and hs.higher_is_better is False and hs.sys == {"A": 2.0, "B": 3.0}
    assert hs.oriented().sys == {"A": -2.0, "B": -3.0}


def test_human_unknown_system(tmp_path: Path) -> None:
    root, tsv = _human(tmp_path, "system\tseg_id\tscore\nA\t0\t1\nC\t1\t2\n")
    with pytest.raises(InputError) as err:
        load(root)
    assert_names(err, tsv, 3)
    assert "unknown system 'C'" in str(err.value)


def test_human_duplicate_seg_id(tmp_path: Path) -> None:
    root, tsv = _human(tmp_path, "system\tseg_id\tscore\nA\t0\t1\nA\t1\t1\nA\t0\t2\n")
    with pytest.raises(InputError) as err:
        load(root)
    assert_names(err, tsv, 4)
    assert "duplicate" in str(err.value) and "line 2" in str(err.value)


@pytest.mark.parametrize("seg_id", ["3", "-1"])
def test_human_seg_id_out_of_range(tmp_path: Path, seg_id: str) -> None:
    root, tsv = _human(tmp_path, f"system\tseg_id\tscore\nA\t{seg_id}\t1\n")
    with pytest.raises(InputError) as err:
        load(root)
    assert_names(err, tsv, 2)
    assert "out of range" in str(err.value)


def test_human_seg_id_not_integer(tmp_path: Path) -> None:
    root, tsv = _human(tmp_path, "system\tseg_id\tscore\nA\t1.0\t1\n")
    with pytest.raises(InputError, match="not an integer") as err:
        load(root)
    assert_names(err, tsv, 2)


@pytest.mark.parametrize("score", ["abc", "", "nan", "inf", "-Infinity"])
def test_human_bad_score(tmp_path: Path, score: str) -> None:
    root, tsv = _human(tmp_path, f"system\tseg_id\tscore\nA\t0\t1\nB\t1\t{score}\n")
    with pytest.raises(InputError) as err:
        load(root)
    assert_names(err, tsv, 3)
    assert "score" in str(err.value)


def test_human_wrong_header_and_columns(tmp_path: Path) -> None:
    root, tsv = _human(tmp_path, "sys\tseg\tscore\nA\t0\t1\n")
    with pytest.raises(InputError, match="header") as err:
        load(root)
    assert_names(err, tsv, 1)
    write(tsv, "system\tseg_id\tscore\nA\t0\t1\t9\n")
    with pytest.raises(InputError, match="expected 3 tab-separated fields") as err:
        load(root)
    assert_names(err, tsv, 2)


def test_sys_tsv_duplicate_and_unknown(tmp_path: Path) -> None:
    root, tsv = _human(tmp_path, None, "system\tscore\tn_segments\nA\t1\t3\nA\t2\t3\n")
    with pytest.raises(InputError, match="duplicate system 'A'") as err:
        load(root)
    assert_names(err, tsv, 3)
    write(tsv, "system\tscore\nZ\t1\n")
    with pytest.raises(InputError, match="unknown system 'Z'"):
        load(root)


def test_na_and_null_system_names_are_strings(tmp_path: Path) -> None:
    seg = "system\tseg_id\tscore\nNA\t0\t1\nnull\t0\t2\nNA\t1\t3\nNone\t2\t4\nnan\t0\t5\n"
    systems = {"NA": THREE, "null": THREE, "None": THREE, "nan": THREE}
    root, _ = _human(tmp_path, seg, "system\tscore\nNA\t2\nnull\t2\n", systems=systems)
    ds = load(root)
    assert names(ds) == ["NA", "None", "nan", "null"]
    hs = primary_human(ds)
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


