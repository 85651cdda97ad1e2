"""Trust, round 3 (issue 34): names that come from files never decide where anything is written, malformed
datasets are one line, faults say what happened. Each case is produced for real with the ``harness`` command
(in process where the process itself is not the subject, :func:`support.harness_here`)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from support import DEMO, harness_here, make_dataset, write_lines

BASE = ("bleu=sacrebleu", "n_samples=20", "tracking=false", "significance=false")


def one_line(proc) -> str:
    errors = [line for line in proc.stderr.splitlines() if line.startswith("harness: error")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return errors[0]


def dataset(root: Path, meta: dict | None = None, human: bool = True) -> Path:
    make_dataset(root, n=20, human=human)
    if meta is not None:
        (root / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return root


def files_under(path: Path) -> set[Path]:
    return {p for p in path.rglob("*")} if path.exists() else set()


# -------------------------------------------------------------------------------- names from files


@pytest.mark.parametrize("name", ["../../../escaped", "/tmp/harness-absolute-name", "two\nlines",
                                  "\x1b[31mred\x1b[0m", "..", "a/b"])
def test_a_meta_json_name_is_one_safe_component(tmp_path, name):
    """``"name": "../../../x"`` put the job folder outside runs_dir (and outside allowed_roots); an absolute name
    too; newlines and ANSI escapes reached folder and experiment names."""
    work = tmp_path / "work"
    work.mkdir()
    ds = dataset(work / "ds", {"name": name})
    before = files_under(tmp_path)
    proc = harness_here(work, f"dataset.root={ds}", *BASE, check=False)
    assert proc.returncode in (1, 2)
    line = one_line(proc)
    assert "meta.json" in line and "'name'" in line and "\n" not in line and "\x1b" not in line
    assert files_under(tmp_path) == before  # nothing written anywhere, no skeleton folder
    assert not Path("/tmp/harness-absolute-name").exists()


def test_a_folder_whose_name_is_not_plain_needs_dataset_name(tmp_path):
    real = dataset(tmp_path / "bad\x1b[31mname", None)  # reached through a link: the command line has no escape
    ds = tmp_path / "ds"
    ds.symlink_to(real)
    proc = harness_here(tmp_path, f"dataset.root={ds}", *BASE, check=False)
    assert proc.returncode == 2 and "dataset.name" in one_line(proc)
    ok = harness_here(tmp_path, f"dataset.root={ds}", "dataset.name=fine", *BASE, check=False)
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "runs" / "fine").is_dir()


@pytest.mark.parametrize("kind", ["../../victim", "/abs/victim", "a\nb", ".hidden"])
def test_human_kind_names_never_name_files(tmp_path, kind):
    """A kind name full of ``../`` overwrote an existing ``victim.png`` outside the job folder with a PNG, exit 0."""
    victim = tmp_path / "victim.png"
    victim.write_bytes(b"precious")
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    ds = dataset(work / "ds", {"human_scores": {kind: {"file_seg": "human/seg.tsv"}}})
    proc = harness_here(work, f"dataset.root={ds}", *BASE, "figures=true", check=False)
    assert proc.returncode in (1, 2)
    assert "human_scores" in one_line(proc)
    assert victim.read_bytes() == b"precious"
    assert not (work / "runs").exists()


def test_variant_names_are_plain_names(tmp_path):
    proc = harness_here(tmp_path, f"dataset.root={dataset(tmp_path / 'ds')}", "bleu=sacrebleu",
                        "bleu.sacrebleu.name=../../x", "tracking=false", check=False)
    assert proc.returncode == 2 and "bleu.sacrebleu.name" in one_line(proc)


def test_every_output_path_is_checked_to_lie_under_its_root(tmp_path):
    from harness.job.files import OutputError, inside

    assert inside(tmp_path, "bleu_vs_human_mqm.png") == tmp_path / "bleu_vs_human_mqm.png"
    assert inside(tmp_path, "compare/page.html") == tmp_path / "compare" / "page.html"
    for bad in ("../x.png", "/etc/x", "a/../../x", "", "a\nb.png", "./x"):
        with pytest.raises(OutputError):
            inside(tmp_path, bad)
    (tmp_path / "link").symlink_to("/tmp")
    with pytest.raises(OutputError):
        inside(tmp_path, "link/x.png")
