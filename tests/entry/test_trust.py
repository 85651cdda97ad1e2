"""Trust, round 3 (issue 34): names that come from files never decide where anything is written, malformed
datasets are one line, faults say what happened. Each case is produced for real with the ``harness`` command
(in process where the process itself is not the subject, :func:`support.harness_here`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from support import harness_here, make_dataset, write_lines

pytestmark = pytest.mark.slow  # end to end: the fast tier (-m 'not slow') leaves it out

# the jobs here check what the harness refuses or keeps, not figures (drawn and checked in test_report, test_app)
BASE = ("bleu=sacrebleu", "n_samples=20", "tracking=false", "significance=false", "figures=false")


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
    from harness.storage.files import OutputError, inside

    assert inside(tmp_path, "bleu_vs_human_mqm.png") == tmp_path / "bleu_vs_human_mqm.png"
    assert inside(tmp_path, "compare/page.html") == tmp_path / "compare" / "page.html"
    for bad in ("../x.png", "/etc/x", "a/../../x", "", "a\nb.png", "./x"):
        with pytest.raises(OutputError):
            inside(tmp_path, bad)
    (tmp_path / "link").symlink_to("/tmp")
    with pytest.raises(OutputError):
        inside(tmp_path, "link/x.png")


def test_an_explicit_system_gets_no_human_scores_of_another_text(tmp_path):
    """The collision error's own advice (leave the dataset's Nemo out, add an explicit Nemo) gave the explicit
    system the dataset Nemo's human score silently; human scores belong to the dataset's text, by its hash."""
    import pandas as pd

    ds = dataset(tmp_path / "ds")
    mine = write_lines(tmp_path / "mine.txt", (ds / "systems" / "UEdin.txt").read_text().split("\n")[:-1])
    proc = harness_here(tmp_path, f"dataset.root={ds}", *BASE, "dataset.systems=[UEdin,Online-W]", "system=example",
                        f"system.path={mine}", "system.name=Nemo", "experiment_name=e", check=False)
    assert proc.returncode == 0, proc.stderr
    assert "is not the dataset's text of that name" in proc.stderr
    folder = next((tmp_path / "runs" / "e").iterdir())
    corr = pd.read_parquet(folder / "correlations.parquet")
    assert corr.empty or set(corr.n[corr.level == "system"]) <= {2}  # Nemo's score not used: 2 systems remain
    # the very text of the dataset's Nemo keeps its scores
    same = harness_here(tmp_path, f"dataset.root={ds}", *BASE, "dataset.systems=[UEdin,Online-W]", "system=example",
                        f"system.path={ds / 'systems' / 'Nemo.txt'}", "system.name=Nemo", "experiment_name=f",
                        check=False)
    assert same.returncode == 0 and "is not the dataset's text" not in same.stderr


# -------------------------------------------------------------------------------- malformed datasets


def test_a_symlink_loop_in_a_dataset_is_one_line(tmp_path):
    ds = dataset(tmp_path / "ds")
    (ds / "systems" / "x.txt").symlink_to("y.txt")
    (ds / "systems" / "y.txt").symlink_to("x.txt")
    proc = harness_here(tmp_path, f"dataset.root={ds}", *BASE, check=False)
    assert proc.returncode in (1, 2) and "x.txt" in one_line(proc)


def test_a_deeply_nested_meta_json_is_one_line(tmp_path):
    ds = dataset(tmp_path / "ds")
    (ds / "meta.json").write_text('{"a": ' * 5000 + "1" + "}" * 5000)
    proc = harness_here(tmp_path, f"dataset.root={ds}", *BASE, check=False)
    assert proc.returncode == 1 and "nested too deeply" in one_line(proc)


@pytest.mark.parametrize("where", ["systems/Fifo.txt", "human/seg.tsv", "src.txt", "meta.json"])
def test_a_fifo_in_a_dataset_is_refused_not_waited_for(tmp_path, where):
    """A FIFO without a writer hung the job forever while it held the folder lock."""
    ds = dataset(tmp_path / "ds")
    target = ds / where
    target.unlink(missing_ok=True)
    os.mkfifo(target)
    proc = harness_here(tmp_path, f"dataset.root={ds}", *BASE, check=False)  # returns: nothing opened the FIFO
    assert proc.returncode == 1 and "not a regular file" in one_line(proc) and where.split("/")[-1] in one_line(proc)
    assert not (tmp_path / "runs").exists()


def test_a_status_left_running_by_a_dead_process_reads_as_dead(tmp_path):
    from harness.job.folder import STATUS, read_status

    folder = tmp_path / "job"
    folder.mkdir()
    (folder / STATUS).write_text(json.dumps({"status": "running", "pid": 2 ** 22 + 12345, "host": os.uname()[1],
                                             "note": "running as process ..."}))
    assert read_status(folder)["status"] == "dead" and read_status(folder)["recorded_status"] == "running"
    (folder / STATUS).write_text(json.dumps({"status": "ok"}))
    assert read_status(folder)["status"] == "ok"


def test_human_none_reads_no_human_file(tmp_path):
    """human=none still needed every human file meta.json names (reported twice)."""
    ds = dataset(tmp_path / "ds", {"human_scores": {"mqm": {"file_seg": "human/gone.tsv"}}})
    proc = harness_here(tmp_path, f"dataset.root={ds}", *BASE, "human=none", check=False)
    assert proc.returncode == 0, proc.stderr
    asked = harness_here(tmp_path, f"dataset.root={ds}", *BASE, "human=all", "seed=2", check=False)
    assert asked.returncode == 1 and "human_scores.mqm" in one_line(asked)


# -------------------------------------------------------------------------------- smaller ones


def test_the_same_dataset_by_a_relative_or_absolute_path_is_one_job(tmp_path):
    ds = dataset(tmp_path / "ds")
    for root in ("ds", str(ds), "./ds/"):
        proc = harness_here(tmp_path, f"dataset.root={root}", *BASE, check=False)
        assert proc.returncode == 0, proc.stderr
    assert len([p for p in (tmp_path / "runs" / "ds").iterdir() if p.is_dir()]) == 1


def test_a_broken_pipe_is_no_traceback(tmp_path):
    import subprocess

    from support import executable

    ds = dataset(tmp_path / "ds")
    proc = subprocess.run(f"{executable('harness')} dataset.root={ds} {' '.join(BASE)} | head -1", shell=True,
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.stdout.startswith("BLEU against") and "Traceback" not in proc.stderr and "Broken" not in proc.stderr


def test_history_never_makes_a_store_of_an_empty_file(tmp_path):
    from harness.history import main

    zero = tmp_path / "zero.db"
    zero.write_bytes(b"")
    with pytest.raises(SystemExit) as exit_:
        main(["--system", "Nemo", "--tracking-uri", f"sqlite:///{zero}"])
    assert exit_.value.code == 2 and zero.read_bytes() == b""


def test_harness_compare_never_overwrites_its_input(tmp_path):
    from harness.compare import main

    ds = dataset(tmp_path / "ds")
    ref = tmp_path / "REF.html"
    ref.write_bytes((ds / "refs" / "ref-C.txt").read_bytes())
    before = ref.read_bytes()
    code = main([str(ref), "-i", str(ds / "systems" / "Nemo.txt"), str(ds / "systems" / "UEdin.txt"), "-o", str(ref)])
    assert code == 2 and ref.read_bytes() == before


def test_an_explicit_system_named_like_a_reference_is_refused(tmp_path):
    """It was scored leave-one-out against the other references under the same heading (34.31 for a text
    byte-identical to UEdin's 51.33)."""
    ds = dataset(tmp_path / "ds")
    make_dataset(ds, n=20, refs=("ref-C", "ref-D"))
    proc = harness_here(tmp_path, f"dataset.root={ds}", *BASE, "system=example",
                        f"system.path={ds / 'systems' / 'UEdin.txt'}", "system.name=ref-C", check=False)
    assert proc.returncode == 2 and "system.name: 'ref-C' is the name of a reference" in one_line(proc)


def test_each_file_warning_is_printed_once(tmp_path, capsys):
    from harness.cli import main

    ds = dataset(tmp_path / "ds")
    hyp = ds / "systems" / "Nemo.txt"
    hyp.write_bytes(hyp.read_bytes().replace(b"\n", b"\r\n"))
    assert main([str(ds / "refs" / "ref-C.txt"), "-i", str(hyp)]) == 0
    err = capsys.readouterr().err
    assert err.count("CRLF line endings converted to LF") == 1, err


@pytest.mark.parametrize("case", ["closed stdin", "endless stdin", "ascii file-system encoding"])
def test_standard_input_and_encodings_are_one_line(tmp_path, case):
    import subprocess

    from support import executable

    ds = dataset(tmp_path / "ds")
    ref = ds / "refs" / "ref-C.txt"
    env = {**os.environ}
    if case == "closed stdin":
        cmd = f"{executable('harness-score')} {ref} <&-"
    elif case == "endless stdin":  # 20 reference lines: refused at 21, not at 4 GiB
        cmd = f"yes 'a b c' | {executable('harness-score')} {ref}"
    else:
        odd = tmp_path / "ü.txt"
        odd.write_bytes(ref.read_bytes())
        env.update(PYTHONUTF8="0", LC_ALL="C")
        cmd = f"{executable('harness-score')} {odd} -i {odd}"
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode in (1, 2) and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("harness-score: error:"), proc.stderr
