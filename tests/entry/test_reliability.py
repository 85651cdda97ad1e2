"""Trust under faults, end to end (the job folder's and the MLflow sink's own cases are in tests/job/test_folder.py
and tests/sinks/test_mlflow.py), each fault produced for real: a job killed with SIGKILL at a chosen point, a full
disk (a tiny tmpfs), a read-only folder, several jobs started together on one folder or one new MLflow store, a
job killed while logging to MLflow. Where the machine cannot produce a fault (mounting needs root), the test says
so and skips. The jobs that are killed or race each other are real processes; the others run in this process
(:func:`support.harness_here`), their faults being in the file system or the store."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from harness.job.folder import STATUS
from harness.storage.manifest import MANIFEST, verified_files
from support import executable, harness_here, job_folder, make_dataset, read_lines, write_lines

pytestmark = pytest.mark.slow

BASE = ("bleu=sacrebleu", "n_samples=50", "experiment_name=faults", "figures=false")


def harness_on(cwd: Path, ds: Path, *args: str, check: bool = False):
    """The job on ``ds`` without tracking, in this process: the faults below are in the file system, not in the
    process (a kill, a race between processes and a job stopped in the middle run as real processes)."""
    return harness_here(cwd, f"dataset.root={ds}", *BASE, "tracking=false", *args, check=check)


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    errors = [line for line in proc.stderr.splitlines() if line.startswith("harness: error")]
    assert len(errors) == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return errors[0]


@pytest.fixture()
def tmpfs(tmp_path):
    """A tiny tmpfs (8 MiB) mounted under tmp_path; skipped where this process may not mount."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN): no full-disk or read-only test")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def fill(mnt: Path, leave: int = 64 << 10) -> None:
    """Fill a file system up to ``leave`` bytes, once: a later call leaves the filler as it is. (Called from both
    figure-drawing processes, a second fill used to truncate the first one's filler, freeing the disk it had just
    filled, and the job then had room for its figures: a flaky test.)"""
    try:
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        return
    st = os.statvfs(mnt)
    with os.fdopen(fd, "wb") as f:
        f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - leave))


# ---------------------------------------------------------------------------------------------- one generation


_KILL_AFTER_PUBLISHING = """
import os, signal, sys
from pathlib import Path
import harness.job.folder as folder
target = sys.argv[1]
real = os.replace
def replace(src, dst, *a, **k):
    real(src, dst, *a, **k)
    if Path(dst).name == target and ".staging" not in str(dst):
        os.kill(os.getpid(), signal.SIGKILL)
folder.os.replace = replace
sys.argv = ["harness", *sys.argv[2:]]
from harness.app import main
main()
"""

_KILL_WHILE_LOGGING = """
import os, signal, sys
import harness.sinks.mlflow as sink
job = os.getpid()  # the job's process (MLflow logs in a child process of it)
real = sink.insert_runs
def insert_runs(*a, **k):  # the job killed once the nested runs are written, before they are finished
    real(*a, **k)
    os.kill(job, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)  # and this process at once (it dies with the job, a moment later)
sink.insert_runs = insert_runs
sys.argv = ["harness", *sys.argv[1:]]
from harness.app import main
main()
"""


def test_a_job_killed_while_publishing_leaves_no_trusted_mix_and_the_rerun_finishes(tmp_path):
    ds = make_dataset(tmp_path / "ds")
    harness_on(tmp_path, ds, check=True)
    folder = job_folder(tmp_path, "faults")
    old = pd.read_parquet(folder / "segment_scores.parquet")
    # change one system, then kill the rerun right after segment_scores.parquet is replaced in the folder
    nemo = read_lines(ds / "systems" / "Nemo.txt")
    write_lines(ds / "systems" / "Nemo.txt", read_lines(ds / "systems" / "UEdin.txt"))
    proc = subprocess.run([sys.executable, "-c", _KILL_AFTER_PUBLISHING, "segment_scores.parquet",
                           f"dataset.root={ds}", *BASE, "tracking=false"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL
    status = json.loads((folder / STATUS).read_text())
    assert status["status"] == "running" and not (folder / MANIFEST).exists()
    # the folder holds a mix (the new Nemo in segment_scores, the old one in system_scores) and says so:
    new_seg = pd.read_parquet(folder / "segment_scores.parquet")
    still_old = pd.read_parquet(folder / "system_scores.parquet").set_index("system")
    assert list(new_seg[new_seg.system == "Nemo"]["sentence_bleu"]) == list(
        new_seg[new_seg.system == "UEdin"]["sentence_bleu"])
    assert still_old.loc["Nemo", "bleu"] != pytest.approx(still_old.loc["UEdin", "bleu"], rel=1e-6)
    assert list(old[old.system == "Nemo"]["sentence_bleu"]) != list(new_seg[new_seg.system == "Nemo"][
        "sentence_bleu"])
    assert verified_files(folder) == {}  # no manifest: nothing is trusted
    # the rerun removes the killed run's staging folder and publishes one complete generation
    assert [p for p in folder.iterdir() if p.name.startswith(".staging")]
    harness_on(tmp_path, ds, check=True)
    assert not [p for p in folder.iterdir() if p.name.startswith(".staging") or p.name.endswith(".tmp")]
    trusted = verified_files(folder)
    assert {"system_scores.parquet", "segment_scores.parquet", "report.md"} <= set(trusted)
    scores = pd.read_parquet(folder / "system_scores.parquet").set_index("system")
    seg = pd.read_parquet(folder / "segment_scores.parquet")
    nemo_seg = seg[(seg.system == "Nemo")]
    uedin_seg = seg[(seg.system == "UEdin")]
    assert list(nemo_seg["sentence_bleu"]) == list(uedin_seg["sentence_bleu"])  # every table: the new Nemo
    assert scores.loc["Nemo", "bleu"] == pytest.approx(scores.loc["UEdin", "bleu"], rel=1e-12)
    write_lines(ds / "systems" / "Nemo.txt", nemo)


def test_a_full_disk_on_rerun_keeps_the_previous_generation(tmp_path, tmpfs):
    ds = make_dataset(tmp_path / "ds")
    runs = tmpfs / "runs"
    harness_on(tmp_path, ds, f"runs_dir={runs}", check=True)
    folder = job_folder(tmpfs, "faults")
    before = verified_files(folder)
    assert "system_scores.parquet" in before
    write_lines(ds / "systems" / "Nemo.txt", read_lines(ds / "systems" / "UEdin.txt"))
    fill(tmpfs, leave=8 << 10)  # less than the new generation's tables need
    proc = harness_on(tmp_path, ds, f"runs_dir={runs}")
    line = one_error_line(proc)
    assert proc.returncode == 1 and "no space left on device" in line
    assert json.loads((folder / STATUS).read_text())["status"] == "failed"
    assert verified_files(folder) == before  # the published generation is intact and still verifies
    assert not [p for p in folder.iterdir() if p.name.startswith(".staging")]


# --------------------------------------------------------------------------------------------- one job a folder


def test_two_jobs_on_one_folder_the_second_fails_at_once_naming_the_holder(tmp_path):
    ds = make_dataset(tmp_path / "ds")
    out = tmp_path / "shared_out"
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    first = subprocess.Popen([executable("harness"), f"dataset.root={ds}", *BASE, "tracking=false",
                              f"output_dir={out}", "n_samples=2000"], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not (out / ".harness.lock").exists() or not (out / ".harness.lock").read_text():
        assert time.time() < deadline and first.poll() is None
        time.sleep(0.02)
    os.kill(first.pid, signal.SIGSTOP)  # the first job holds the folder for as long as the second one runs
    try:
        second = harness_on(tmp_path, ds, f"output_dir={out}", "bleu=char")
    finally:
        os.kill(first.pid, signal.SIGCONT)
    line = one_error_line(second)
    assert second.returncode == 2 and str(out) in line and "another job holds this folder" in line
    assert f"pid {first.pid}" in line and "since" in line
    first.communicate(timeout=300)
    assert first.returncode == 0
    scores = pd.read_parquet(out / "system_scores.parquet")
    assert set(scores["variant"]) == {"sacrebleu"}  # the first job's results, untouched by the second


def test_three_identical_jobs_at_once(tmp_path):
    ds = make_dataset(tmp_path / "ds")
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    procs = [subprocess.Popen([executable("harness"), f"dataset.root={ds}", *BASE, "tracking=false"], cwd=tmp_path,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = [(p.wait(timeout=300), p.communicate()[1]) for p in procs]
    assert sorted(code for code, _ in results) in ([0, 0, 0], [0, 0, 2], [0, 2, 2])
    for code, err in results:
        assert "Traceback" not in err
        if code:
            assert "another job holds this folder" in err
    assert "system_scores.parquet" in verified_files(job_folder(tmp_path, "faults"))


# ---------------------------------------------------------------------------------------------- MLflow, once


def test_a_job_killed_while_logging_is_marked_killed_by_the_next_run(tmp_path):
    from mlflow.tracking import MlflowClient

    ds = make_dataset(tmp_path / "ds")
    uri = f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}"
    proc = subprocess.run([sys.executable, "-c", _KILL_WHILE_LOGGING, f"dataset.root={ds}", *BASE,
                           "bleu=[sacrebleu,char,intl]"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL
    # the folder says the job is not in MLflow (it said "ok" and nothing more, with no pending file)
    folder = job_folder(tmp_path, "faults")
    status = json.loads((folder / STATUS).read_text())
    assert status["status"] == "ok" and status["tracking"] == "pending"
    assert "has not finished" in json.loads((folder / "tracking_pending.json").read_text())["error"]
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("faults")
    runs = client.search_runs([exp.experiment_id])
    killed = next(r.info.run_id for r in runs if "mlflow.parentRunId" not in r.data.tags)
    assert len(runs) == 1 + 3 * 3 and all(r.info.status == "RUNNING" for r in runs)
    harness_here(tmp_path, f"dataset.root={ds}", *BASE, "bleu=[sacrebleu,char,intl]")
    assert client.get_run(killed).info.status == "KILLED"
    exp = client.get_experiment_by_name("faults")
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED" and len(children) == 3 * 3
    assert all(c.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for c in children)
    status = json.loads((folder / STATUS).read_text())
    assert status["tracking"] == "logged" and status["parent_run"] == parents[0].info.run_id
    assert not (folder / "tracking_pending.json").exists()


_PAUSE_AFTER = """
import importlib, sys, time
from pathlib import Path
target = importlib.import_module(sys.argv[1])
real = getattr(target, sys.argv[2])
flag = Path(sys.argv[3])
def pause(*a, **k):  # done with this step: say so, and wait for the signal
    out = real(*a, **k)
    flag.write_text("paused")
    time.sleep(120)
    return out
setattr(target, sys.argv[2], pause)
sys.argv = ["harness", *sys.argv[4:]]
from harness.app import console
console()
"""


def paused(tmp_path: Path, step: tuple[str, str], ds: Path, **popen) -> subprocess.Popen:
    """The job on ``ds`` started with ``step`` (module, function) pausing once done (:data:`_PAUSE_AFTER`), once
    it has paused."""
    flag = tmp_path / "flag"
    cmd = [sys.executable, "-c", _PAUSE_AFTER, *step, str(flag), f"dataset.root={ds}", *BASE, "bleu=[sacrebleu,char]"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
    deadline = time.time() + 120
    while not flag.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert flag.exists(), proc.communicate()
    return proc


def ended_as(proc: subprocess.Popen, code: int, line: str) -> None:
    """The job ended with ``code`` and the one line ``harness: {line}; ...``."""
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # never a process left behind: the job and its children
        with contextlib.suppress(OSError):
            if os.getpgid(proc.pid) == proc.pid:  # started in a session of its own
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
        pytest.fail(f"the job did not end within 60 s of the signal:\n{proc.communicate()[1]}")
    assert proc.returncode == code, err
    lines = [x for x in err.splitlines() if x.startswith("harness:")]
    assert lines == [f"harness: {line}; job_status.json in the job's folder says what was kept"], err
    assert "Traceback" not in err


def interrupted_while_logging(tmp_path: Path) -> list:
    """The job's folder says it was interrupted while logging; its MLflow runs."""
    from mlflow.tracking import MlflowClient

    folder = job_folder(tmp_path, "faults")
    status = json.loads((folder / STATUS).read_text())
    assert status["status"] == "ok" and status["tracking"] == "interrupted"
    assert "interrupted while logging" in json.loads((folder / "tracking_pending.json").read_text())["error"]
    client = MlflowClient(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    return client.search_runs([client.get_experiment_by_name("faults").experiment_id])


@pytest.mark.parametrize("where", ["logging", "statistics"])
def test_sigterm_ends_the_job_like_an_interruption(tmp_path, where):
    """SIGTERM (a SLURM time limit) exited 143 with nothing printed and left job_status.json at running."""
    ds = make_dataset(tmp_path / "ds")
    step = {"logging": ("harness.sinks.mlflow", "insert_runs"),  # nested runs written, not finished
            "statistics": ("harness.runner", "job_statistics")}[where]
    proc = paused(tmp_path, step, ds)
    proc.send_signal(signal.SIGTERM)
    ended_as(proc, 143, "terminated (SIGTERM)")
    if where == "logging":
        runs = interrupted_while_logging(tmp_path)
        assert runs and {r.info.status for r in runs} == {"KILLED"}
    else:
        folder = job_folder(tmp_path, "faults")
        status = json.loads((folder / STATUS).read_text())
        assert status["status"] == "interrupted" and "Terminated" in status["error"]
        assert verified_files(folder) == {}


def test_ctrl_c_while_logging_marks_the_runs_killed(tmp_path):
    """Ctrl-C reaches every process of the terminal's foreground group: the job and MLflow's child process that
    logs it, each once, and the child once more from the job. The child marks its runs KILLED (the second signal
    cuts nothing short), the job says so in one line and exits 130."""
    ds = make_dataset(tmp_path / "ds")
    # as a terminal starts it: SIGINT at its default (a shell's background job, pytest included, inherits it ignored,
    # and the job rightly ignores it then: test_mlflow_child_ends_on_the_first_signal_the_job_ends_on)
    proc = paused(tmp_path, ("harness.sinks.mlflow", "insert_runs"), ds, start_new_session=True,
                  preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    os.killpg(proc.pid, signal.SIGINT)
    ended_as(proc, 130, "interrupted")
    runs = interrupted_while_logging(tmp_path)
    assert len(runs) == 1 + 3 * 2 and {r.info.status for r in runs} == {"KILLED"}


_IMPORTS_AT_EXIT = """
import atexit, sys
atexit.register(lambda: print("mlflow imported:", "mlflow" in sys.modules, file=sys.stderr))
sys.argv = ["harness", *sys.argv[1:]]
from harness.app import main
main()
"""


def test_the_job_process_never_imports_mlflow(tmp_path):
    """MLflow starts and logs in a child process of the job (its imports cost ~1.5 s): the job's own process
    never imports it, and the job is logged all the same."""
    ds = make_dataset(tmp_path / "ds")
    proc = subprocess.run([sys.executable, "-c", _IMPORTS_AT_EXIT, f"dataset.root={ds}", *BASE], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "mlflow imported: False" in proc.stderr.splitlines()
    status = json.loads((job_folder(tmp_path, "faults") / STATUS).read_text())
    assert status["tracking"] == "logged" and status["parent_run"] in proc.stdout


def test_parallel_first_jobs_on_a_new_store_do_not_race(tmp_path):
    ds = make_dataset(tmp_path / "ds")
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    procs = [subprocess.Popen([executable("harness"), f"dataset.root={ds}", *BASE, f"bleu={v}",
                               f"experiment_name=race{i}"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i, v in enumerate(("sacrebleu", "char"))]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert "duplicate column" not in err and "already exists" not in err


def test_a_store_on_a_full_disk_keeps_the_tables(tmp_path, tmpfs):
    ds = make_dataset(tmp_path / "ds")
    fill(tmpfs, leave=16 << 10)
    proc = harness_here(tmp_path, f"dataset.root={ds}", *BASE, f"tracking_uri=sqlite:///{tmpfs / 'mlflow.db'}",
                        check=False)
    line = one_error_line(proc)
    assert proc.returncode == 1 and "the tables are published" in line
    folder = job_folder(tmp_path, "faults")
    assert "system_scores.parquet" in verified_files(folder) and (folder / "tracking_pending.json").exists()


def test_a_disk_filled_while_the_figures_are_drawn_is_one_line(tmp_path, tmpfs, monkeypatch):
    """The figures are written by a child process: its full disk was a traceback from the child. Now one line
    that names the file and says what the folder keeps."""
    import harness.job.figures as figures

    ds = make_dataset(tmp_path / "ds", human=True)
    out = tmpfs / "out"
    harness_on(tmp_path, ds, f"output_dir={out}", check=True)  # a first complete generation
    real = figures.inside

    def inside(folder, rel):  # the disk fills up just before the first figure is written (in the child)
        fill(tmpfs, leave=0)
        return real(folder, rel)

    monkeypatch.setattr(figures, "inside", inside)
    proc = harness_on(tmp_path, ds, f"output_dir={out}", "figures=true", "seed=7")
    line = one_error_line(proc)
    assert proc.returncode == 1 and "no space left on device" in line and (".png" in line or ".pdf" in line)
    assert f"{out} keeps its previous complete generation" in line
    assert "system_scores.parquet" in verified_files(out)


def test_a_store_filled_while_mlflow_logs_is_one_line(tmp_path, tmpfs, monkeypatch):
    """MLflow's own two tracebacks came first; now one line naming the store and what was kept."""
    import harness.sinks.mlflow as sink

    ds = make_dataset(tmp_path / "ds")
    uri = f"sqlite:///{tmpfs / 'mlflow.db'}"
    harness_here(tmp_path, f"dataset.root={ds}", *BASE, f"tracking_uri={uri}")  # the store exists
    real = sink.insert_runs

    def insert_runs(*a, **k):
        fill(tmpfs, leave=0)
        return real(*a, **k)

    monkeypatch.setattr(sink, "insert_runs", insert_runs)
    proc = harness_here(tmp_path, f"dataset.root={ds}", *BASE, f"tracking_uri={uri}", "seed=3", check=False)
    line = one_error_line(proc)
    assert proc.returncode == 1 and "no space left on the store's disk" in line and "tables are published" in line
    assert "Traceback" not in proc.stderr and "sqlite3.OperationalError" not in proc.stderr
    folder = next(p for p in (tmp_path / "runs" / "faults").iterdir() if "seed=3" in p.name)
    assert json.loads((folder / STATUS).read_text())["tracking"] == "failed"
    assert (folder / "tracking_pending.json").exists()


def test_an_unknown_tracking_scheme_keeps_the_tables(tmp_path):
    ds = make_dataset(tmp_path / "ds")
    proc = harness_here(tmp_path, f"dataset.root={ds}", *BASE, "tracking_uri=foo://bar", check=False)
    line = one_error_line(proc)
    assert proc.returncode == 1 and "foo://bar" in line
    assert (job_folder(tmp_path, "faults") / "tracking_pending.json").exists()


# ------------------------------------------------------------------------------------------- one-line errors


def test_outputs_under_a_file_are_one_line(tmp_path):
    ds = make_dataset(tmp_path / "ds")
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    for arg in (f"output_dir={a_file}", f"output_dir={a_file}/below", f"runs_dir={a_file}",
                f"runs_dir={a_file}/below"):
        proc = harness_on(tmp_path, ds, arg)
        assert proc.returncode == 2 and "file" in one_error_line(proc), arg
    assert not list(tmp_path.rglob("*.parquet"))


def test_outputs_on_a_read_only_file_system_are_one_line(tmp_path, tmpfs):
    ds = make_dataset(tmp_path / "ds")
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    for arg in (f"output_dir={tmpfs}/out", f"runs_dir={tmpfs}/runs"):
        proc = harness_on(tmp_path, ds, arg)
        assert proc.returncode == 2 and "not writable" in one_error_line(proc), arg
    assert not list(tmp_path.rglob("*.parquet"))


def test_a_full_disk_under_the_cache_costs_the_cache_only(tmp_path, tmpfs):
    ds = make_dataset(tmp_path / "ds")
    fill(tmpfs, leave=0)
    proc = harness_on(tmp_path, ds, f"runs_dir={tmpfs}/runs", f"output_dir={tmp_path / 'out'}")
    # the folder under a full runs_dir cannot even hold the statistics cache: the job still publishes
    assert proc.returncode == 0, proc.stderr
    assert "statistics not cached" in proc.stderr and "system_scores.parquet" in verified_files(tmp_path / "out")


_KILL_WHILE_RELOGGING = """
import os, signal, sys
import harness.sinks.mlflow as sink
job = os.getpid()  # the job's process (MLflow logs in a child process of it)
real = sink._log_artifacts
def log_artifacts(client, parent_id, artifacts, tables):  # one artifact replaced, then the job killed
    first = dict(list(artifacts.items())[:1])
    real(client, parent_id, first, {})
    os.kill(job, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)  # and this process at once (it dies with the job, a moment later)
sink._log_artifacts = log_artifacts
sys.argv = ["harness", *sys.argv[1:]]
from harness.app import main
main()
"""


def test_an_identical_rerun_killed_while_relogging_never_leaves_a_finished_mismatch(tmp_path):
    """The rerun of an identical job reuses its record and replaces its artifacts; killed in the middle, it left a
    FINISHED record whose manifest.json did not match its files. Now the record is RUNNING while they are
    replaced, and the next run marks it KILLED and logs the job anew."""
    from mlflow.tracking import MlflowClient

    ds = make_dataset(tmp_path / "ds")
    args = [f"dataset.root={ds}", *BASE]
    harness_here(tmp_path, *args)
    client = MlflowClient(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    exp = client.get_experiment_by_name("faults").experiment_id
    first = next(r for r in client.search_runs([exp]) if "mlflow.parentRunId" not in r.data.tags)
    proc = subprocess.run([sys.executable, "-c", _KILL_WHILE_RELOGGING, *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL
    assert client.get_run(first.info.run_id).info.status == "RUNNING"  # not FINISHED with mixed artifacts
    harness_here(tmp_path, *args)
    parents = [r for r in client.search_runs([exp]) if "mlflow.parentRunId" not in r.data.tags]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert parents[0].info.run_id != first.info.run_id
    folder = job_folder(tmp_path, "faults")
    local = client.download_artifacts(parents[0].info.run_id, "manifest.json", str(tmp_path / "dl"))
    assert Path(local).read_bytes() == (folder / MANIFEST).read_bytes()
