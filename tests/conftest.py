"""Session fixtures: the real data, one MLflow server for the whole session, a migrated SQLite store to copy.

One ``mlflow server`` serves the whole test session, however many xdist workers run it: it takes 10-20 s to
start (two processes importing mlflow's server), so the first worker that collects a test needing it starts it in
the background (:func:`pytest_collection_modifyitems`), every worker attaches to it through a folder shared by the
session (``HARNESS_TEST_SHARED``, made by the controlling process), and the controlling process stops it at the
end (:func:`pytest_unconfigure`).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from support import MlflowServer, dataset_dirs, read_lines

SHARED = "HARNESS_TEST_SHARED"


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # the controlling process (or a run without xdist)
        os.environ[SHARED] = tempfile.mkdtemp(prefix="harness-tests-")


def pytest_unconfigure(config):
    if hasattr(config, "workerinput") or SHARED not in os.environ:
        return
    shared = Path(os.environ.pop(SHARED))
    info = shared / "mlflow_server.json"
    if info.exists():
        MlflowServer.attach(json.loads(info.read_text())).stop()
    shutil.rmtree(shared, ignore_errors=True)


@contextmanager
def _shared_lock(name: str):
    with open(Path(os.environ[SHARED]) / f"{name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _shared_server() -> MlflowServer:
    """The session's server: started (without waiting) by the first caller, attached to by the others."""
    shared = Path(os.environ[SHARED])
    info = shared / "mlflow_server.json"
    with _shared_lock("mlflow_server"):
        if info.exists():
            return MlflowServer.attach(json.loads(info.read_text()))
        server = MlflowServer(shared / "mlflow-server").launch()
        info.write_text(json.dumps(server.describe()))
        return server


def pytest_collection_modifyitems(session, config, items):
    if SHARED in os.environ and any("mlflow_server" in getattr(item, "fixturenames", ()) for item in items):
        _shared_server()  # start it now; the tests that need it wait for it to answer


@pytest.fixture(scope="session")
def wmt21() -> dict:
    """{'refs': {name: lines}, 'systems': {name: lines}, 'root': Path} of the first available copy."""
    dirs = dataset_dirs()
    if not dirs:
        pytest.skip("the WMT21 dataset is not available")
    root = dirs[0]
    return {
        "root": root,
        "refs": {p.stem: read_lines(p) for p in sorted((root / "refs").glob("*.txt"))},
        "systems": {p.stem: read_lines(p) for p in sorted((root / "systems").glob("*.txt"))},
    }


@pytest.fixture(scope="session")
def mlflow_server() -> MlflowServer:
    """A real ``mlflow server`` on 127.0.0.1, one for the whole session and all workers (each test uses its own
    experiment); stopped by the controlling process at the end."""
    return _shared_server().wait()


@pytest.fixture(scope="session")
def migrated_store(tmp_path_factory) -> Path:
    """A SQLite MLflow store created and migrated once (1-2 s); tests copy it instead of migrating again."""
    from harness.sinks.mlflow import prepare_store

    import sqlite3

    root = tmp_path_factory.mktemp("store")
    prepare_store(f"sqlite:///{root / 'mlflow.db'}", "template", root)
    with sqlite3.connect(root / "mlflow.db") as db:  # WAL mode: fold the log into the file before copying it
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return root / "mlflow.db"


@pytest.fixture()
def runs_with_store(tmp_path, migrated_store) -> Path:
    """A fresh ``runs/`` folder holding a copy of the migrated store."""
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(migrated_store, runs / "mlflow.db")
    return runs


@pytest.fixture(scope="session")
def small_dataset(tmp_path_factory) -> Path:
    """A small dataset folder cut from the demo: 30 segments, 3 MT systems and the human translation ref-A,
    references ref-C and ref-D, the MQM segment scores of those segments."""
    from support import make_dataset

    return make_dataset(tmp_path_factory.mktemp("small") / "small", n=30,
                        systems=("Nemo", "UEdin", "Online-W", "ref-A"), refs=("ref-C", "ref-D"), human=True)
