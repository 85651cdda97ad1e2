"""Reliability: bad input stops the job before any work with one line; crashes never leave a table that looks
complete or a run marked FINISHED; reruns finish the work without duplicates; the same config gives the same
bytes."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from support import CANDIDATES, read_lines
from test_app import mlflow_server, nested_runs, run_harness  # noqa: F401  (fixture reused)

pytestmark = pytest.mark.slow
DATA = CANDIDATES[0]


def make_dataset(root: Path, n: int = 30, systems=("Nemo", "UEdin", "Online-W")) -> Path:
    (root / "refs").mkdir(parents=True)
    (root / "systems").mkdir()
    (root / "refs" / "ref-C.txt").write_text("\n".join(read_lines(DATA / "refs" / "ref-C.txt")[:n]) + "\n",
                                             encoding="utf-8")
    for name in systems:
        lines = read_lines(DATA / "systems" / f"{name}.txt")[:n]
        (root / "systems" / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def harness_on(tmp_path: Path, ds: Path, *args: str, check: bool = False):
    return run_harness(tmp_path, f"dataset.root={ds}", "bleu=sacrebleu", "tracking=false", "n_samples=50", *args,
                       check=check)


@pytest.mark.parametrize("damage,expect", [
    (lambda p: p.write_bytes(p.read_bytes().replace(b"\n", b"\x00", 1)), "U+0000"),
    (lambda p: p.write_bytes(p.read_bytes()[:20] + b"\xc3\x28" + p.read_bytes()[20:]), "invalid UTF-8"),
    (lambda p: p.write_bytes(b""), "empty"),
    (lambda p: p.write_text("\n".join(p.read_text(encoding="utf-8").split("\n")[:-3]) + "\n", encoding="utf-8"),
     "has 28 lines but"),
    (lambda p: p.write_text(p.read_text(encoding="utf-8").replace(" ", "\u2028", 1), encoding="utf-8"), "U+2028"),
    (lambda p: p.write_text(p.read_text(encoding="utf-8").replace(" ", "\u0085", 1), encoding="utf-8"), "U+0085"),
])
def test_bad_input_is_one_line_before_any_work(tmp_path, damage, expect):
    ds = make_dataset(tmp_path / "ds")
    damage(ds / "systems" / "UEdin.txt")
    proc = harness_on(tmp_path, ds)
    assert proc.returncode == 1, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("harness: error")]
    assert len(errors) == 1 and "UEdin.txt" in errors[0] and expect in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list(tmp_path.rglob("*.parquet")) and not (tmp_path / "runs" / "cache").exists()


def test_bom_and_crlf_are_accepted_and_reported(tmp_path):
    ds = make_dataset(tmp_path / "ds")
    path = ds / "systems" / "Nemo.txt"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    proc = harness_on(tmp_path, ds, check=True)
    assert "BOM" in proc.stderr and "CRLF" in proc.stderr
    clean = harness_on(tmp_path / "b", make_dataset(tmp_path / "b" / "ds"), check=True)
    assert proc.stdout.split("\n\n")[0].split("Nemo")[1].split()[0] == \
        clean.stdout.split("\n\n")[0].split("Nemo")[1].split()[0]


def test_human_scores_with_unknown_system_are_refused(tmp_path):
    ds = make_dataset(tmp_path / "ds")
    (ds / "human").mkdir()
    (ds / "human" / "seg.tsv").write_text("system\tseg_id\tscore\nNemo\t0\t1.0\nNobody\t1\t2.0\n", encoding="utf-8")
    proc = harness_on(tmp_path, ds)
    assert proc.returncode == 1 and "seg.tsv:3" in proc.stderr and "Nobody" in proc.stderr


def test_same_config_gives_byte_identical_tables(tmp_path):
    ds = make_dataset(tmp_path / "ds")
    harness_on(tmp_path, ds, "force=true", check=True)  # force: the second run recomputes everything too
    out = next((tmp_path / "runs").rglob("system_scores.parquet")).parent
    first = {p.name: p.read_bytes() for p in out.glob("*.parquet")}
    harness_on(tmp_path, ds, "force=true", check=True)
    second = {p.name: p.read_bytes() for p in out.glob("*.parquet")}
    assert first.keys() == second.keys() == {"system_scores.parquet", "segment_scores.parquet",
                                              "significance.parquet", "correlations.parquet"}
    for name in first:
        assert first[name] == second[name], name


def test_failed_write_leaves_no_table(tmp_path, monkeypatch):
    from harness import store

    def broken(table, where, **kwargs):
        Path(where).write_bytes(b"PAR1 partial")
        raise OSError("disk full")

    monkeypatch.setattr(store.pq, "write_table", broken)
    import pyarrow as pa

    with pytest.raises(OSError, match="disk full"):
        store.write_table(pa.table({"a": [1]}), tmp_path / "t.parquet", {})
    assert list(tmp_path.iterdir()) == []


def test_killed_job_leaves_no_complete_looking_table_and_rerun_finishes(tmp_path):
    from test_app import HARNESS

    proc = subprocess.Popen([HARNESS, "tracking=false"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    out = tmp_path / "runs" / "demo"
    deadline = time.time() + 120
    while time.time() < deadline and not list((tmp_path / "runs").glob("cache/stats/*/*.npz")):
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    for table in out.glob("*.parquet"):  # any table that exists is complete (atomic rename)
        pq.read_table(table)
    run_harness(tmp_path, "tracking=false")
    scores = pd.read_parquet(out / "system_scores.parquet")
    assert len(scores) == 135 and not scores.duplicated(["refset", "system", "variant"]).any()
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_crashed_or_killed_logging_marks_the_run(tmp_path):
    from mlflow.tracking import MlflowClient

    from harness.tracking import TrackingError, log_job

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    cells = [{"name": f"c{i}", "metrics": {"bleu": 1.0}, "params": {}, "tags": {"system": "s"}} for i in range(3)]

    class Boom:
        def __init__(self, exc):
            self.exc, self.n = exc, 0

        def update(self, _n):
            self.n += 1
            if self.n == 2:
                raise self.exc

    with pytest.raises(TrackingError):
        log_job(uri, "e", tmp_path, "job", {}, {}, {}, cells, [], tmp_path / "pending.json", Boom(RuntimeError("x")))
    with pytest.raises(SystemExit):
        log_job(uri, "e", tmp_path, "job2", {}, {}, {}, cells, [], tmp_path / "pending2.json", Boom(SystemExit(143)))
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("e")
    parents = {r.info.run_name: r.info.status for r in client.search_runs([exp.experiment_id])
               if "mlflow.parentRunId" not in r.data.tags}
    assert parents == {"job": "FAILED", "job2": "KILLED"}
    assert (tmp_path / "pending.json").exists() and (tmp_path / "pending2.json").exists()


def test_unreachable_server_then_rerun_logs_the_missing_runs(tmp_path, mlflow_server):  # noqa: F811
    ds = make_dataset(tmp_path / "ds")
    dead = "http://127.0.0.1:9"  # discard port: nothing listens
    args = [f"dataset.root={ds}", "bleu=sacrebleu", "n_samples=50", "dataset.name=mini"]
    proc = run_harness(tmp_path, *args, f"tracking_uri={dead}", check=False)
    assert proc.returncode == 1 and "Parquet tables are written" in proc.stderr
    pending = list(tmp_path.rglob("tracking_pending.json"))
    assert len(pending) == 1
    run_harness(tmp_path, *args, f"tracking_uri={mlflow_server}")
    assert len(nested_runs(mlflow_server, "demo")) == 3 and not pending[0].exists()
