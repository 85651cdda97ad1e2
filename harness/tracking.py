"""MLflow: one experiment per experiment config, a parent run per job, a nested run per system x refset x variant.

``mlflow`` is imported lazily (inside functions): ``harness-score``, config validation and pure scoring never
pay its ~1-2 s import. The default store is a SQLite file under ``runs/`` given as an *absolute* URI, with
artifacts in ``runs/mlartifacts`` (never ``./mlruns``, never relative to a changing working directory). The
database and the experiment are created once by the launching process (:class:`harness.callbacks.PrepareStoreCallback`), so
parallel jobs never race on the schema migration. Parquet stays the system of record: if tracking fails, the
tables are already written, ``tracking_pending.json`` records what is missing, and ``harness`` can be rerun.
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import threading
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from .errors import HarnessError

log = logging.getLogger(__name__)


class TrackingError(HarnessError):
    """The tracking server or store could not be used (the Parquet tables are written regardless)."""


def default_uri(runs_dir: Path) -> str:
    return f"sqlite:///{runs_dir.resolve() / 'mlflow.db'}"


def artifact_root(uri: str, runs_dir: Path) -> str | None:
    """Local stores keep artifacts in ``runs/mlartifacts``; a server decides for itself."""
    return (runs_dir.resolve() / "mlartifacts").as_uri() if uri.startswith("sqlite:") else None


def configure_client(retries: int, timeout: int) -> None:
    """Bounded HTTP retries, so an unreachable server fails in seconds, not minutes (MLflow's default: 7 retries,
    backoff factor 2, 120 s timeout)."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", str(retries))
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(timeout))


def check_server(uri: str, timeout: float = 5.0) -> None:
    """Fail fast, naming the URI, when an HTTP tracking server does not answer ``/health``."""
    if not uri.startswith(("http://", "https://")):
        return
    try:
        with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=timeout) as resp:  # noqa: S310
            if resp.status != 200:
                raise TrackingError(f"tracking server {uri} answered /health with HTTP {resp.status}")
    except OSError as exc:
        raise TrackingError(f"tracking server {uri} is unreachable ({exc})") from None


_SQLITE_TUNED = False


def tune_sqlite() -> None:
    """WAL journal + ``synchronous=NORMAL`` on every SQLite connection of this process.

    MLflow commits several times per call (``log_batch`` alone commits ~6 times) and each commit of a default
    (rollback-journal, ``synchronous=FULL``) SQLite database waits for an fsync: ~150 ms per nested run here,
    ~40 ms with WAL. WAL also lets readers (``mlflow ui``) and parallel jobs work without blocking each other.
    ``NORMAL`` in WAL mode never corrupts the database; at worst a power cut loses the last transactions,
    which a rerun of the job logs again (the Parquet tables are the system of record).
    """
    global _SQLITE_TUNED
    if _SQLITE_TUNED:
        return
    import sqlite3

    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    @event.listens_for(Engine, "connect")
    def _pragmas(connection: Any, _record: Any) -> None:
        if isinstance(connection, sqlite3.Connection):
            cursor = connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

    _SQLITE_TUNED = True


def prepare_store(uri: str, experiment: str, runs_dir: Path) -> str:
    """Create (and migrate) the store and the experiment if needed; return the experiment id."""
    check_server(uri)
    if uri.startswith("sqlite:"):
        runs_dir.mkdir(parents=True, exist_ok=True)
        tune_sqlite()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    if found is not None:
        return found.experiment_id
    try:
        return client.create_experiment(experiment, artifact_location=artifact_root(uri, runs_dir))
    except Exception:  # created concurrently by another process: use it
        found = client.get_experiment_by_name(experiment)
        if found is None:
            raise
        return found.experiment_id


def _params(items: Mapping[str, Any]) -> list[Any]:
    from mlflow.entities import Param

    return [Param(k, "null" if v is None else (json.dumps(v) if isinstance(v, (list, dict)) else str(v))[:6000])
            for k, v in items.items()]


def _metrics(items: Mapping[str, float], ts: int) -> list[Any]:
    from mlflow.entities import Metric

    return [Metric(k, float(v), ts, 0) for k, v in items.items() if v is not None and math.isfinite(float(v))]


def _tags(items: Mapping[str, Any]) -> list[Any]:
    from mlflow.entities import RunTag

    return [RunTag(k, "" if v is None else str(v)) for k, v in items.items()]


def log_job(
    uri: str,
    experiment: str,
    runs_dir: Path,
    job_name: str,
    job_params: Mapping[str, Any],
    job_tags: Mapping[str, Any],
    job_metrics: Mapping[str, float],
    cells: Sequence[Mapping[str, Any]],
    artifacts: Sequence[Path],
    pending_path: Path,
    progress: Any = None,
) -> str:
    """Log one job: the parent run (params, tags, metrics, artifacts) and one nested run per cell.

    Each cell is ``{"name", "params", "tags", "metrics"}``. Returns the parent run id. On failure the parent run
    is marked FAILED (never left RUNNING or FINISHED), ``pending_path`` describes what is missing, and a
    :class:`TrackingError` is raised.
    """
    from mlflow.tracking import MlflowClient

    if uri.startswith("sqlite:"):
        tune_sqlite()
    client = MlflowClient(tracking_uri=uri)
    parent_id = None
    try:
        exp_id = prepare_store(uri, experiment, runs_dir)
        ts = int(time.time() * 1000)
        parent = client.create_run(exp_id, run_name=job_name, tags={"harness.job": job_name, **{
            k: str(v) for k, v in job_tags.items()}})
        parent_id = parent.info.run_id
        client.log_batch(parent_id, metrics=_metrics(job_metrics, ts), params=_params(job_params))
        for cell in cells:
            run = client.create_run(exp_id, run_name=cell["name"], tags={"mlflow.parentRunId": parent_id})
            client.log_batch(run.info.run_id, metrics=_metrics(cell["metrics"], ts), params=_params(cell["params"]),
                             tags=_tags(cell["tags"]))
            client.set_terminated(run.info.run_id, "FINISHED")
            if progress is not None:
                progress.update(1)
        for path in artifacts:
            if path.is_dir():
                client.log_artifacts(parent_id, str(path), artifact_path=path.name)
            elif path.exists():
                client.log_artifact(parent_id, str(path))
        client.set_terminated(parent_id, "FINISHED")
        pending_path.unlink(missing_ok=True)
        return parent_id
    except BaseException as exc:
        # A crash, Ctrl-C or SIGTERM (see :func:`terminate_on_sigterm`) never leaves the run RUNNING or FINISHED.
        status = "FAILED" if isinstance(exc, Exception) else "KILLED"
        if parent_id is not None:
            try:
                client.set_terminated(parent_id, status)
            except Exception:  # the server is gone: the run stays as the server last saw it
                log.debug("could not mark run %s %s", parent_id, status)
        pending_path.write_text(json.dumps({"tracking_uri": uri, "experiment": experiment, "job": job_name,
                                            "parent_run_id": parent_id, "status": status,
                                            "error": f"{type(exc).__name__}: {exc}"}, indent=1))
        if not isinstance(exc, Exception):
            raise
        raise TrackingError(f"MLflow logging to {uri} failed ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
                            f"the Parquet tables are written; rerun the job to log it "
                            f"(details in {pending_path})") from None


@contextmanager
def terminate_on_sigterm() -> Iterator[None]:
    """Turn SIGTERM (SLURM ``scancel``, a timeout) into SystemExit while logging, so the run is marked KILLED."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _handler(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, _handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
