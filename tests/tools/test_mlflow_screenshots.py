"""tools/mlflow_screenshots.py: what it picks to show, that it leaves the user's store as it was, that the server
it starts is gone after an error, the errors a user can act on, and (with Chromium) real screenshots of a
harness-shaped experiment on the session's MLflow server."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sqlite3
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import REPO

pytestmark = pytest.mark.slow  # end to end: the fast tier (-m 'not slow') leaves it out

CHROMIUM = Path("/usr/bin/chromium")


def load_tool():
    spec = importlib.util.spec_from_file_location("mlflow_screenshots", REPO / "tools" / "mlflow_screenshots.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through sys.modules
    spec.loader.exec_module(module)
    return module


tool = load_tool()


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie, which this container's init may never reap, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


# ---------------------------------------------------------------------------------------------------------------
# what a page shows
# ---------------------------------------------------------------------------------------------------------------


def run_json(run_id, name, tags, metrics=None, params=None, step=0):
    return {"info": {"run_id": run_id, "run_name": name, "start_time": 0},
            "data": {"tags": [{"key": k, "value": v} for k, v in tags.items()],
                     "metrics": [{"key": k, "value": v, "step": step} for k, v in (metrics or {}).items()],
                     "params": [{"key": k, "value": v} for k, v in (params or {}).items()]}}


class StubApi:
    """The REST calls :func:`plan_experiment` makes, answered from a list of runs."""

    def __init__(self, parents, children, artifacts):
        self.parents, self.children, self.artifact_paths = parents, children, artifacts

    def runs(self, exp_id, filter_string="", order_by=()):
        if "harness.job_key" in filter_string:
            return [tool.Run.from_json(r) for r in self.parents]
        assert filter_string.startswith("tags.mlflow.parentRunId = ")
        return [tool.Run.from_json(r) for r in self.children]

    def artifacts(self, run_id, path=""):
        return self.artifact_paths


def test_plan_shows_full_refset_first_variant_and_newest_numeric_version():
    parent = run_json("p", "ds | job", {"harness.job_key": "k"}, params={"variants": '["intl", "sacrebleu"]'})
    children = []
    for refset in ("ref-C", "ref-C+ref-D", "ref-D"):
        for variant in ("sacrebleu", "intl"):
            for system, version in (("mymodel", "2"), ("mymodel", "9"), ("mymodel", "10"), ("other", "")):
                label = f"{system}@{version}" if version else system
                children.append(run_json(f"{label}|{refset}|{variant}", f"{label} | {refset} | {variant}",
                                         {"mlflow.parentRunId": "p", "refset": refset, "variant": variant,
                                          "system": system, "system_version": version},
                                         {"bleu": 30.0, "human.mqm": -1.0}, step=int(version or 0)))
    api = StubApi([parent], children, ["tables/correlations.json", "tables/system_scores.json"])
    plan = tool.plan_experiment(api, {"experiment_id": "7", "name": "ds"})
    assert (plan.refset, plan.variant) == ("ref-C+ref-D", "intl")
    assert plan.cell_filter == "tags.refset = 'ref-C+ref-D' and tags.variant = 'intl'"
    assert plan.versioned_system == "mymodel"
    assert plan.run.name == "mymodel@10 | ref-C+ref-D | intl"  # 10 > 9 as numbers, not as strings
    assert plan.human == ["human.mqm"]
    assert plan.table_artifact == "tables/system_scores.json"


def test_no_versions_means_no_versions_page_and_best_bleu_run():
    parent = run_json("p", "ds | job", {"harness.job_key": "k"}, params={"variants": '["sacrebleu"]'})
    children = [run_json(s, f"{s} | ref-A | sacrebleu", {"mlflow.parentRunId": "p", "refset": "ref-A",
                                                         "variant": "sacrebleu", "system": s, "system_version": ""},
                         {"bleu": b}) for s, b in (("a", 20.0), ("b", 40.0), ("c", 30.0))]
    plan = tool.plan_experiment(StubApi([parent], children, []), {"experiment_id": "1", "name": "ds"})
    assert plan.versioned_system is None and plan.run.name == "b | ref-A | sacrebleu"
    share = {p: f"k-{p}" for p in tool.views(plan, tool.PAGES)}
    assert sorted(share) == ["nested"]
    pages = [s.page for s in tool.shots("http://first", "http://alias", plan, share, tool.PAGES)]
    assert pages == ["experiment", "runs", "nested", "run"]  # no versions chart, no table artifact


# ---------------------------------------------------------------------------------------------------------------
# the user's store and the server's process
# ---------------------------------------------------------------------------------------------------------------


def test_copy_of_a_wal_store_has_the_uncheckpointed_rows_and_leaves_the_store_as_it_was(tmp_path):
    src = tmp_path / "mlflow.db"
    # a writer killed after its commit (os._exit: no checkpoint on close), as a harness killed mid-job leaves it:
    # the rows live in mlflow.db-wal only, which a plain file copy of mlflow.db would miss
    writer = ("import os, sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute('PRAGMA journal_mode=WAL'); "
              "db.execute('CREATE TABLE t (x INTEGER)'); "
              "db.executemany('INSERT INTO t VALUES (?)', [(i,) for i in range(100)]); db.commit(); os._exit(0)")
    subprocess.run([sys.executable, "-c", writer, str(src)], check=True)
    wal = tmp_path / "mlflow.db-wal"
    assert wal.stat().st_size > 0
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (src, wal)}
    tool.copy_sqlite(src, tmp_path / "copy.db")
    with sqlite3.connect(tmp_path / "copy.db") as copy:
        assert copy.execute("SELECT count(*), sum(x) FROM t").fetchone() == (100, 4950)
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (src, wal)} == before


FAKE_SERVER = r'''
import http.server, json, os, subprocess, sys

port = int(sys.argv[sys.argv.index("--port") + 1])
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # like mlflow's job consumers
with open(os.environ["FAKE_PIDS"], "w") as f:
    json.dump([os.getpid(), child.pid], f)
class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self.answer("OK")
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.answer({"experiments": [{"experiment_id": "0", "name": "Default"}]} if "experiments" in self.path
                    else {"runs": []})
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
'''


def fake_mlflow(tmp_path: Path) -> Path:
    script = tmp_path / "mlflow"
    script.write_text(f"#!{sys.executable}\n{FAKE_SERVER}")
    script.chmod(0o755)
    return script


def test_the_server_and_its_children_are_stopped_after_an_error(tmp_path, monkeypatch, capsys):
    store = tmp_path / "mlflow.db"
    sqlite3.connect(store).close()
    monkeypatch.setenv("FAKE_PIDS", str(tmp_path / "pids.json"))
    code = tool.main(["--backend-store-uri", f"sqlite:///{store}", "--mlflow", str(fake_mlflow(tmp_path)),
                      "--chromium", "/bin/true", "--out", str(tmp_path / "shots"), "--server-timeout", "30"])
    out = capsys.readouterr()
    assert code == 1
    assert "no harness job" in out.err and "mlflow server stopped" in out.out
    pids = json.loads((tmp_path / "pids.json").read_text())
    deadline = time.monotonic() + 5
    while any(running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if running(p)]


def test_missing_chromium_is_named_with_its_package_before_any_server_starts(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_PIDS", str(tmp_path / "pids.json"))
    code = tool.main(["--chromium", str(tmp_path / "no-chromium"), "--mlflow", str(fake_mlflow(tmp_path))])
    assert code == 1
    assert "apt-get install chromium" in capsys.readouterr().err
    assert not (tmp_path / "pids.json").exists()


def test_missing_store_is_an_error_and_is_not_created(tmp_path, capsys):
    code = tool.main(["--backend-store-uri", f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}",
                      "--chromium", "/bin/true", "--mlflow", "/bin/false"])
    assert code == 1
    assert "no MLflow store at" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


# ---------------------------------------------------------------------------------------------------------------
# real screenshots
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="needs Debian's chromium (apt-get install chromium)")
def test_screenshots_of_a_versioned_job_on_a_running_server(tmp_path, mlflow_server, capsys):
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    client = MlflowClient(mlflow_server.uri)
    name = f"screenshots-{os.getpid()}-{time.monotonic_ns()}"
    exp_id = client.create_experiment(name)
    parent = client.create_run(exp_id, run_name="ds | job", tags={"harness.job_key": "k", "dataset": "ds"})
    client.log_batch(parent.info.run_id, params=[Param("variants", '["sacrebleu"]')])
    for system, version, bleu in (("mymodel", "1", 30.0), ("mymodel", "2", 33.0), ("other", "", 31.0)):
        label = f"{system}@{version}" if version else system
        child = client.create_run(exp_id, run_name=f"{label} | ref-C | sacrebleu",
                                  tags={"mlflow.parentRunId": parent.info.run_id})
        tags = {"system": system, "system_version": version, "refset": "ref-C", "variant": "sacrebleu"}
        client.log_batch(child.info.run_id, tags=[RunTag(k, v) for k, v in tags.items()],
                         metrics=[Metric("bleu", bleu, 0, int(version or 0))])
    out = tmp_path / "shots"
    code = tool.main(["--server", mlflow_server.uri, "--experiment", name, "--pages", "nested,versions",
                      "--out", str(out), "--virtual-time-budget", "8000"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "versions of mymodel" in printed.out
    shots = [out / name / "03-nested-runs.png", out / name / "05-bleu-over-versions.png"]
    assert [png_size(p) for p in shots] == [(1600, 1000)] * 2
    index = (out / "index.md").read_text()
    assert all(f"{name}/{p.name}" in index for p in shots) and index.count("viewStateShareKey=") == 2
    tags = client.get_experiment(exp_id).tags
    assert not [k for k in tags if k.startswith(tool.SHARE_PREFIX)]  # the shared views are taken out again
