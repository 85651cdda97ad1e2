"""The inputs of a job (harness.job.inputs): which references each system is scored against (leave-one-out for a
human translation that is also a reference), what a job selects from its dataset checked before any text is read,
and an explicit system that would take a dataset system's human scores refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import ConfigError, InputError
from harness.job.inputs import check_selection, dataset_name, layout_of, load_inputs
from harness.job.spec import build_spec
from support import base_config, write_lines

LINES = ["ein Haus .", "zwei Katzen schlafen .", "das ist gut ."]


def make(root: Path, systems=("Nemo", "UEdin", "ref-A"), refs=("ref-A", "ref-C", "ref-D"), seg_tsv=True) -> Path:
    for i, name in enumerate(refs):
        write_lines(root / "refs" / f"{name}.txt", [f"{line} {i}" for line in LINES])
    for i, name in enumerate(systems):
        write_lines(root / "systems" / f"{name}.txt", [f"{line} s{i}" for line in LINES])
    if seg_tsv:
        write_lines(root / "human" / "seg.tsv", ["system\tseg_id\tscore", "Nemo\t0\t-1.5", "UEdin\t1\t-3"])
        (root / "meta.json").write_text(json.dumps({"human_score": "mqm", "higher_is_better": False}))
    return root


def spec_of(tmp_path: Path, root: Path | None, *extra: str, **overrides):
    """A spec as the command line gives it (paths named in ``extra`` / ``root`` are given there: allowed)."""
    cfg = base_config(tmp_path, **overrides)
    cfg["dataset"]["root"] = None if root is None else str(root)
    given = ([f"dataset.root={root}"] if root is not None else []) + list(extra)
    return build_spec(cfg, given)


def inputs_of(tmp_path: Path, root: Path | None, *extra: str, **overrides):
    spec = spec_of(tmp_path, root, *extra, **overrides)
    return load_inputs(spec, layout_of(spec))


# ------------------------------------------------------------------------------------------------ references


def test_a_human_translation_that_is_a_reference_is_scored_against_the_others(tmp_path):
    root = make(tmp_path / "ds")
    inputs = inputs_of(tmp_path, root, dataset={"refsets": [["ref-C"], ["ref-A", "ref-D"], ["ref-A", "ref-C",
                                                                                            "ref-D"]]})
    nemo, uedin, human = inputs.systems
    assert [s.label for s in inputs.systems] == ["Nemo", "UEdin", "ref-A"] and human.human and not nemo.human
    used = {(s.label, r): inputs.refs_for(s, r) for s in inputs.systems for r in inputs.refsets}
    assert used[("Nemo", ("ref-A", "ref-C", "ref-D"))] == ("ref-A", "ref-C", "ref-D")
    assert used[("ref-A", ("ref-A", "ref-C", "ref-D"))] == ("ref-C", "ref-D")  # itself left out, order kept
    assert used[("ref-A", ("ref-A", "ref-D"))] == ("ref-D",)
    assert used[("ref-A", ("ref-C",))] == ("ref-C",)
    assert inputs.full_refset == ("ref-A", "ref-C", "ref-D") and inputs.n_segments == 3
    assert inputs.dataset == "ds" and dataset_name(spec_of(tmp_path, root), layout_of(spec_of(tmp_path, root))) == "ds"
    hashes = inputs.input_hashes()
    assert set(hashes) == {"ref:ref-A", "ref:ref-C", "ref:ref-D", "system:Nemo", "system:UEdin", "system:ref-A"}
    assert hashes["system:ref-A"] == human.text.sha256 != hashes["ref:ref-A"]  # two files, two hashes
    assert set(inputs.files()) == {*(root / "refs").iterdir(), *(root / "systems").iterdir(),
                                   (root / "human" / "seg.tsv").resolve()}


def test_a_refset_holding_only_the_human_translation_is_refused(tmp_path):
    root = make(tmp_path / "ds")
    spec = spec_of(tmp_path, root, dataset={"refsets": [["ref-A"], ["ref-C"]]})
    check_selection(spec, layout_of(spec))  # names exist: this is a matter of the systems, known after reading
    with pytest.raises(ConfigError) as err:
        load_inputs(spec, layout_of(spec))
    assert err.value.key == "dataset.refsets"
    assert "system 'ref-A' is the only reference of refset 'ref-A'" in str(err.value)


# ------------------------------------------------------------------------------------------------ selection


@pytest.mark.parametrize("overrides,key,got,choices", [
    ({"dataset": {"refs": ["ref-C", "ref-B"]}}, "dataset.refs", "ref-B", ["ref-A", "ref-C", "ref-D"]),
    ({"dataset": {"systems": ["Nemo", "Nemmo"]}}, "dataset.systems", "Nemmo", ["Nemo", "UEdin", "ref-A"]),
    ({"dataset": {"refsets": [["ref-C", "ref-X"]]}}, "dataset.refsets", "ref-X", ["ref-A", "ref-C", "ref-D"]),
    ({"dataset": {"refs": ["ref-C"], "refsets": [["ref-D"]]}}, "dataset.refsets", "ref-D", ["ref-C"]),
    ({"human": {"select": "da"}}, "human", "da", ["all", "none", "mqm"]),
])
def test_a_selection_that_is_not_there_names_the_key_and_the_choices(tmp_path, overrides, key, got, choices):
    """Checked from the layout alone: a system file that is not even UTF-8 is not read."""
    root = make(tmp_path / "ds")
    (root / "systems" / "UEdin.txt").write_bytes(b"\xff\xfe broken\n")
    spec = spec_of(tmp_path, root, **overrides)
    with pytest.raises(ConfigError) as err:
        check_selection(spec, layout_of(spec))
    assert err.value.key == key and err.value.got == got and err.value.choices == choices
    assert repr(got) in str(err.value) and ", ".join(choices) in str(err.value)


def test_a_valid_selection_passes_without_reading_a_text(tmp_path):
    root = make(tmp_path / "ds")
    (root / "systems" / "UEdin.txt").write_bytes(b"\xff\xfe broken\n")
    spec = spec_of(tmp_path, root, dataset={"systems": ["Nemo", "UEdin"], "refs": ["ref-C"]},
                   human={"select": "mqm"})
    check_selection(spec, layout_of(spec))
    with pytest.raises(InputError) as err:  # reading is load_inputs' job, and it names the file
        load_inputs(spec, layout_of(spec))
    assert err.value.path == str(root / "systems" / "UEdin.txt")
    explicit_only = spec_of(tmp_path, None, f"refset.paths=[{root}/refs/ref-C.txt]",
                            f"system.path={root}/systems/Nemo.txt",
                            refset={"paths": [str(root / "refs" / "ref-C.txt")]},
                            system={"name": "x", "path": str(root / "systems" / "Nemo.txt"), "version": None,
                                    "human": False, "metadata": {}})
    check_selection(explicit_only, None)  # no dataset folder: nothing to check


def test_human_scores_of_a_kind_need_a_dataset_folder(tmp_path):
    root = make(tmp_path / "ds")
    with pytest.raises(ConfigError) as err:
        inputs_of(tmp_path, None, f"refset.paths=[{root}/refs/ref-C.txt]", f"system.path={root}/systems/Nemo.txt",
                  refset={"paths": [str(root / "refs" / "ref-C.txt")]}, human={"select": "mqm"},
                  system={"name": "mine", "path": str(root / "systems" / "Nemo.txt"), "version": None,
                          "human": False, "metadata": {}})
    assert err.value.key == "human" and err.value.got == "mqm" and "dataset.root" in str(err.value)


# ------------------------------------------------------------------------------------------------ explicit systems


def explicit(root: Path, name: str, version: str | None = None, **fields) -> dict:
    return {"name": name, "path": str(root.parent / "mine.txt"), "version": version, "human": False,
            "metadata": {}, **fields}


@pytest.mark.parametrize("stems,name,version,twin", [
    (("Nemo", "UEdin"), "Nemo", None, "Nemo"),  # the same name
    (("m@1", "m@2"), "m", None, "m@1"),  # a name that means all the dataset's versions
    (("m@1", "m@2"), "m@2", None, "m@2"),  # a name spelling a dataset label
    (("m@1", "m@2"), "m", "2", "m@2"),  # a name and version that make a dataset label
])
def test_an_explicit_system_named_like_a_dataset_system_is_refused(tmp_path, stems, name, version, twin):
    root = make(tmp_path / "ds", systems=stems, seg_tsv=False)
    write_lines(root.parent / "mine.txt", LINES)
    with pytest.raises(ConfigError) as err:
        inputs_of(tmp_path, root, f"system.path={root.parent / 'mine.txt'}", system=explicit(root, name, version))
    assert err.value.key == "system.name" and err.value.got == name
    assert f"the dataset's system {twin!r} ({root / 'systems' / f'{twin}.txt'})" in str(err.value)
    assert str(root.parent / "mine.txt") in str(err.value)


def test_an_explicit_system_joins_the_dataset_systems(tmp_path):
    root = make(tmp_path / "ds", systems=("m@1", "m@2"))
    (root / "human" / "seg.tsv").write_text("system\tseg_id\tscore\nm@1\t0\t-1\n")
    write_lines(root.parent / "mine.txt", LINES)
    inputs = inputs_of(tmp_path, root, f"system.path={root.parent / 'mine.txt'}",
                       system=explicit(root, "m", "3", human=True, metadata={"step": "3000"}))
    mine = inputs.systems[-1]
    assert [s.label for s in inputs.systems] == ["m@1", "m@2", "m@3"]
    assert (mine.name, mine.version, mine.human, dict(mine.metadata)) == ("m", "3", True, {"step": "3000"})
    assert mine.text.lines == LINES and "m@3" not in inputs.human[0].sys  # no human score taken for it


def test_explicit_human_score_files_are_read_against_the_job_systems(tmp_path):
    root = make(tmp_path / "ds", seg_tsv=False)
    seg = write_lines(tmp_path / "scores" / "seg.tsv", ["system\tseg_id\tscore", "Nemo\t0\t10", "Nemo\t2\t20",
                                                        "UEdin\t1\t5"])
    inputs = inputs_of(tmp_path, root, f"human.seg_path={seg}",
                       human={"select": "files", "seg_path": str(seg), "name": "da", "higher_is_better": True})
    (da,) = inputs.human
    assert da.name == "da" and da.sys == {"Nemo": 15.0, "UEdin": 5.0} and da.missing == ("ref-A",)
    assert seg.resolve() in inputs.files() and any("ref-A" in w for w in inputs.warnings)
    bad = write_lines(tmp_path / "scores" / "bad.tsv", ["system\tseg_id\tscore", "Nemo\t3\t1"])
    with pytest.raises(InputError) as err:
        inputs_of(tmp_path, root, f"human.seg_path={bad}", human={"select": "files", "seg_path": str(bad)})
    assert err.value.path == str(bad.resolve()) and err.value.line == 2 and "out of range" in str(err.value)
