"""Session fixtures: the real data, one MLflow server for the whole session, a migrated SQLite store to copy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support import MlflowServer, dataset_dirs, read_lines


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
def mlflow_server(tmp_path_factory) -> MlflowServer:
    """A real ``mlflow server`` on 127.0.0.1 for the whole session (each test uses its own experiment)."""
    server = MlflowServer(tmp_path_factory.mktemp("mlflow-server")).start()
    yield server
    server.stop()


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
