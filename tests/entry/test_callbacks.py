"""The Hydra callbacks, in process: the store a sweep's launching process prepares (or, with a reason, does not),
and the failed jobs it collects from the sweep's folders. (A real sweep through them: tests/entry/test_app.py and
tests/entry/test_shards.py.)"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from harness.callbacks import FAILED_JOBS, PrepareStoreCallback

pytestmark = pytest.mark.slow  # end to end: the fast tier (-m 'not slow') leaves it out


def sweep_config(tmp_path: Path, **keys):
    """The keys the callbacks read, as Hydra hands them over (a DictConfig)."""
    cfg = {"tracking": True, "experiment_name": "exp", "runs_dir": str(tmp_path / "runs"), "tracking_uri": None,
           "tracking_retries": 0, "tracking_timeout": 10, "hydra": {"sweep": {"dir": str(tmp_path / "sweep")}}}
    return OmegaConf.create({**cfg, **keys})


def experiments(db: Path) -> list[str]:
    with sqlite3.connect(db) as con:
        return sorted(name for (name,) in con.execute("SELECT name FROM experiments"))


@pytest.fixture()
def failed_jobs():
    FAILED_JOBS.clear()
    yield FAILED_JOBS
    FAILED_JOBS.clear()


def test_a_sweep_with_a_fixed_experiment_prepares_the_store_once_before_its_jobs(tmp_path, monkeypatch, failed_jobs):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # MLflow's Default experiment points into the working directory
    failed_jobs.append("left over from an earlier sweep in this process")
    PrepareStoreCallback().on_multirun_start(sweep_config(tmp_path))
    assert experiments(tmp_path / "runs" / "mlflow.db") == ["Default", "exp"]
    assert failed_jobs == []
    PrepareStoreCallback().on_multirun_start(sweep_config(tmp_path))  # a second sweep on the same store
    assert experiments(tmp_path / "runs" / "mlflow.db") == ["Default", "exp"]


@pytest.mark.parametrize("keys", [{"tracking": False}, {"experiment_name": None}, {"experiment_name": ""}],
                         ids=["no tracking", "each job names its experiment", "empty name"])
def test_no_store_without_tracking_or_a_fixed_experiment(tmp_path, keys, failed_jobs):
    PrepareStoreCallback().on_multirun_start(sweep_config(tmp_path, **keys))
    assert not (tmp_path / "runs").exists()


def test_a_store_that_cannot_be_prepared_is_a_warning_the_jobs_report_themselves(tmp_path, caplog, failed_jobs):
    (tmp_path / "runs").write_text("a file where the runs folder should be\n")
    uri = f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}"
    with caplog.at_level(logging.WARNING, logger="harness.callbacks"):
        PrepareStoreCallback().on_multirun_start(sweep_config(tmp_path, tracking_uri=uri))
    [record] = [r for r in caplog.records if r.name == "harness.callbacks"]
    assert record.getMessage().startswith("could not prepare the tracking store: ") and uri in record.getMessage()


def test_the_failed_jobs_of_a_sweep_are_collected_in_job_order(tmp_path, failed_jobs):
    sweep = tmp_path / "sweep"
    outcomes = {
        "0": {"status": "ok", "job": "bleu=sacrebleu", "folder": "/runs/exp/a"},
        "1": {"status": "failed", "job": "bleu=char", "error": "the MLflow store is unreachable"},
        "2": None,  # a job that died before recording its outcome
        "3": "{not json",
        "10": {"status": "failed", "error": "dataset.root: no such folder"},  # no job label: the folder names it
        "9": {"status": "failed", "job": "bleu=intl", "error": "killed"},
        "notes": {"status": "failed", "job": "not a job number", "error": "listed last"},
    }
    for name, record in outcomes.items():
        (sweep / name).mkdir(parents=True)
        if isinstance(record, dict):
            (sweep / name / "sweep_job.json").write_text(json.dumps(record), encoding="utf-8")
        elif record is not None:
            (sweep / name / "sweep_job.json").write_text(record, encoding="utf-8")
    PrepareStoreCallback().on_multirun_end(sweep_config(tmp_path))
    assert failed_jobs == ["bleu=char: the MLflow store is unreachable", "bleu=intl: killed",
                           "10: dataset.root: no such folder", "not a job number: listed last"]
