"""MLflow: one parent run per job, one nested run per system x refset x variant; each job recorded once.

- **Once per job.** A job's identity is a hash of its meaningful config and its input hashes (tag
  ``harness.job_key``). A rerun of an identical job *reuses* its complete earlier record (the numbers are the
  same; only the artifacts are replaced, while the record is RUNNING); a record left incomplete is replaced by a
  new one, and of a job's finished records only the one that became current last survives (:func:`settle_records`:
  every job agrees on it). Children stay RUNNING until the whole job is logged, then all finish (into a SQLite
  store in one transaction each, :mod:`harness.sinks.sqlite_runs`); a failure marks the parent and its children
  FAILED (KILLED on Ctrl-C or SIGTERM). Parents left RUNNING by a dead process (same host, pid gone; or the same
  job, whose folder lock we now hold) are marked KILLED, with their children, by the next job that sees them.
- **What.** A :class:`JobPayload` (:mod:`harness.tracking` builds it from a job's result): nested runs named
  ``system@version | refset | variant`` with their metrics (at step = the version when it is an integer, so the
  UI charts BLEU over checkpoints), params and tags; the parent's params, tags, metrics, the dataset as an MLflow
  input, the published files as artifacts and the small tables as MLflow tables for the UI's preview.
- **Where.** The store and the experiment: :mod:`.mlflow_store`. ``experiment_link`` opens the experiment's runs
  (MLflow 3.17's UI otherwise shows its GenAI overview).

Parquet stays the system of record: if MLflow fails, the tables are published already and the caller writes
``tracking_pending.json``. ``mlflow`` is imported lazily (``harness-score`` never pays for it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import socket
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, NamedTuple

from ..errors import TrackingError
from ..storage.files import pid_alive
from .mlflow_store import _client, _reason, prepare_store, store_lock
from .sqlite_runs import RunBrief, RunRows, bulk_store, child_runs, finish_runs, insert_runs

log = logging.getLogger(__name__)

SMALL_TABLES = ("system_scores", "correlations", "significance")
#: the tags of the dataset input of every run
DATASET_TAGS = {"mlflow.data.context": "eval"}


# ---------------------------------------------------------------------------------------------------------------
# the payload: what a job logs, read from its result
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NestedRun:
    name: str
    metrics: dict[str, float]
    step: int
    params: dict[str, Any]
    tags: dict[str, str]


@dataclass(frozen=True)
class JobPayload:
    experiment: str
    name: str
    key: str
    params: dict[str, Any]
    tags: dict[str, str]
    metrics: dict[str, float]
    runs: tuple[NestedRun, ...]
    dataset: tuple[str, str, str]  # name, digest, source
    tables: dict[str, Any] = field(default_factory=dict)
    note: str = ""  # the parent run's page (Markdown), with @@EXPERIMENT_ID@@ and @@RUN_ID@@ for its links


_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_KEY_UNSAFE = re.compile(r"[^/\w.\- ]")  # MLflow's rule for keys on every platform (Windows: no colon)


def version_step(version: str | None) -> int:
    """The metric step of a version: the version itself when it is an integer (checkpoint steps), else 0."""
    text = "" if version is None else version.strip()
    return int(text) if _INTEGER.fullmatch(text) and abs(int(text)) < 2**62 else 0


def key_part(name: str) -> str:
    """A name (a human kind, a reference, a metadata key) as part of an MLflow metric or tag key: the characters
    MLflow refuses in keys (anything but letters, digits, ``_ - . /`` and space) become ``_``."""
    return _KEY_UNSAFE.sub("_", name)


def run_name(system: str, version: str | None, refset: str, variant: str) -> str:
    return f"{system if version is None else f'{system}@{version}'} | {refset} | {variant}"


# ---------------------------------------------------------------------------------------------------------------
# logging
# ---------------------------------------------------------------------------------------------------------------


def _params(items: Mapping[str, Any]) -> list[Any]:
    from mlflow.entities import Param

    return [Param(k, "null" if v is None else (json.dumps(v) if isinstance(v, (list, dict)) else str(v))[:6000])
            for k, v in items.items()]


def _metrics(items: Mapping[str, float], ts: int, step: int = 0) -> list[Any]:
    from mlflow.entities import Metric

    return [Metric(k, float(v), ts, step) for k, v in items.items() if v is not None and math.isfinite(float(v))]


def _tags(items: Mapping[str, Any]) -> dict[str, str]:
    return {k: "" if v is None else str(v) for k, v in items.items()}


def all_runs(client: Any, exp_id: str, filter_string: str = "") -> list[Any]:
    """Every run of an experiment matching ``filter_string`` (all pages)."""
    out: list[Any] = []
    token = None
    while True:
        page = client.search_runs([exp_id], filter_string=filter_string, max_results=5000, page_token=token)
        out.extend(page)
        token = getattr(page, "token", None)
        if not token:
            return out


def _children(client: Any, exp_id: str, parent_id: str) -> list[Any]:
    return all_runs(client, exp_id, f"tags.mlflow.parentRunId = '{parent_id}'")


def _child_briefs(client: Any, exp_id: str, parent_id: str) -> list[RunBrief]:
    """The nested runs of ``parent_id`` (:func:`_children`) as id, name and status only: from a SQLite store of a
    verified schema without loading their data (:func:`~harness.sinks.sqlite_runs.child_runs`), else through
    MLflow's search."""
    bulk = bulk_store(client)
    if bulk is not None:
        return child_runs(bulk, exp_id, parent_id)
    return [RunBrief(c.info.run_id, c.info.run_name, c.info.status) for c in _children(client, exp_id, parent_id)]


def mark_dead_parents(client: Any, exp_id: str, job_key: str, folder: str | None = None) -> list[str]:
    """Mark KILLED (with their children) the parents left RUNNING by dead processes: on this host with a pid that
    no longer runs, or of this very job in this very ``folder`` (whose lock the caller holds, so no other process
    runs it there; the same job writing into another folder may be alive)."""
    host = socket.gethostname()
    killed = []
    for run in all_runs(client, exp_id, "attributes.status = 'RUNNING' and tags.`harness.job_key` != ''"):
        tags = run.data.tags
        if "mlflow.parentRunId" in tags:
            continue
        try:
            pid = int(tags.get("harness.pid", "0") or 0)
        except ValueError:
            pid = 0
        dead = (tags.get("harness.job_key") == job_key and tags.get("output_dir") == folder
                and pid != os.getpid())
        dead = dead or (tags.get("harness.host") == host and pid > 0 and not pid_alive(pid))
        if dead:
            for child in _child_briefs(client, exp_id, run.info.run_id):
                if child.status == "RUNNING":
                    client.set_terminated(child.run_id, "KILLED")
            client.set_terminated(run.info.run_id, "KILLED")
            killed.append(run.info.run_id)
    if killed:
        log.info("marked %d run(s) left RUNNING by dead processes as KILLED", len(killed))
    return killed


#: The tag of a parent run saying when it became the job's current record (ms since the epoch): set when it is
#: logged completely, and again when a rerun reuses it.
LOGGED_AT = "harness.logged_at"


def current_since(run: Any) -> int:
    """When a parent run became its job's current record: its :data:`LOGGED_AT` tag, else its end (or start)."""
    try:
        return int(run.data.tags.get(LOGGED_AT, ""))
    except ValueError:
        return int(run.info.end_time or run.info.start_time or 0)


def settle_records(client: Any, exp_id: str, job_key: str) -> tuple[str | None, int]:
    """Keep one record of this job: of its FINISHED parents, the one that became current last (:func:`current_since`,
    then the largest run id), and delete (MLflow's soft delete) every other parent that is not RUNNING, with its
    children. Every job that settles the same records chooses the same survivor, so two identical jobs finishing
    together never delete each other's record and leave none; a record still RUNNING (the same job running into
    another folder) is left to its own job. Returns the survivor and the number deleted."""
    parents = [r for r in all_runs(client, exp_id, f"tags.`harness.job_key` = '{job_key}'")
               if "mlflow.parentRunId" not in r.data.tags]
    done = [r for r in parents if r.info.status == "FINISHED"]
    if not done:
        return None, 0
    survivor = max(done, key=lambda r: (current_since(r), r.info.run_id))
    n = 0
    for run in parents:
        if run is survivor or run.info.status == "RUNNING":
            continue
        for child in _child_briefs(client, exp_id, run.info.run_id):
            client.delete_run(child.run_id)
        client.delete_run(run.info.run_id)
        n += 1
    return str(survivor.info.run_id), n


#: The tag of a parent run naming its job without its inputs (config only): a rerun of the job on grown inputs (a
#: new checkpoint) has the same family.
FAMILY = "harness.job_family"


def supersede_records(client: Any, exp_id: str, payload: JobPayload, current: str) -> int:
    """Delete (MLflow's soft delete: hidden, restorable with ``mlflow runs restore``) the FINISHED records of the
    same job whose inputs this one's contain: same family, every nested run of theirs also here with the same
    text (``sha256.system``) and the same references. What they hold is here too, newer, so the runs table and
    the charts show one run per system version. A record with a version this job lacks, or a text that changed,
    is kept (it holds numbers found nowhere else). Returns the number deleted."""
    family = payload.tags.get(FAMILY)
    if not family:
        return 0
    mine = {r.name: r.tags.get("sha256.system") for r in payload.runs}
    refs = {k: v for k, v in payload.tags.items() if k.startswith("sha256.ref")}
    n = 0
    for run in all_runs(client, exp_id, f"tags.`{FAMILY}` = '{family}' and attributes.status = 'FINISHED'"):
        if "mlflow.parentRunId" in run.data.tags or run.info.run_id == current \
                or run.data.tags.get("harness.job_key") == payload.key:
            continue
        theirs = {k: v for k, v in run.data.tags.items() if k.startswith("sha256.ref")}
        children = _children(client, exp_id, run.info.run_id)
        if theirs != refs or any(mine.get(c.info.run_name, "\0") != c.data.tags.get("sha256.system")
                                 for c in children):
            continue
        for child in children:
            client.delete_run(child.info.run_id)
        client.delete_run(run.info.run_id)
        n += 1
    return n


def complete_record(client: Any, exp_id: str, payload: JobPayload) -> str | None:
    """The parent run of an earlier, completely logged run of this very job (FINISHED, with all its nested runs
    FINISHED), or None."""
    for run in all_runs(client, exp_id, f"tags.`harness.job_key` = '{payload.key}' and attributes.status = 'FINISHED'"):
        if "mlflow.parentRunId" in run.data.tags:
            continue
        children = _child_briefs(client, exp_id, run.info.run_id)
        names = sorted(c.name for c in children if c.status == "FINISHED")
        if len(children) == len(payload.runs) and names == sorted(r.name for r in payload.runs):
            return str(run.info.run_id)
    return None


def _set_note(client: Any, exp_id: str, run_id: str, note: str) -> None:
    """The parent run's page: MLflow renders the ``mlflow.note.content`` tag as Markdown above the run's data."""
    if note:
        client.set_tag(run_id, "mlflow.note.content",
                       note.replace("@@EXPERIMENT_ID@@", str(exp_id)).replace("@@RUN_ID@@", str(run_id)))


def _log_artifacts(client: Any, parent_id: str, artifacts: Mapping[str, Path], tables: Mapping[str, Any]) -> None:
    for rel, path in artifacts.items():
        folder = rel.rpartition("/")[0]
        client.log_artifact(parent_id, str(path), artifact_path=folder or None)
    with warnings.catch_warnings():  # pandas' deprecation notes from inside MLflow's table conversion
        warnings.simplefilter("ignore")
        for name, frame in tables.items():
            client.log_table(parent_id, frame, f"tables/{name}.json")


def _remove_tables(client: Any, run_id: str) -> None:
    """Remove the tables a reused record holds before they are logged again: MLflow's ``log_table`` appends to a
    table the run holds already, so each identical rerun added every row once more (the demo's preview held its
    135 scores once per rerun, and each rerun read and rewrote them all). An artifact store that cannot delete
    keeps them (and MLflow appends, as before)."""
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    try:
        get_artifact_repository(client.get_run(run_id).info.artifact_uri).delete_artifacts("tables")
    except Exception as exc:  # noqa: BLE001 - only the preview's rows are repeated
        log.debug("the tables of run %s were not removed before logging them again (%s: %s)", run_id,
                  type(exc).__name__, exc)


class Logged(NamedTuple):
    """Where a job's record is: its experiment and its parent run."""

    experiment_id: str
    parent_id: str


def log_job(uri: str, runs_dir: Path, payload: JobPayload, artifacts: Mapping[str, Path], progress: Any = None
            ) -> Logged:
    """Log one job (see the module docstring); returns its experiment and parent run. ``artifacts``: the files to log, by
    their path in the job folder (``compare/x.html`` goes to the artifact folder ``compare``).

    An identical job logged completely before is *reused*: its record already holds these numbers (same config,
    same inputs, same seed), so only the artifacts are replaced with this generation's; any other record of the
    job is deleted. Otherwise the job is logged anew and earlier records of it are deleted afterwards. Raises
    :class:`TrackingError`, having marked what it created FAILED (KILLED on interruption), never RUNNING or
    FINISHED."""
    exp_id = prepare_store(uri, payload.experiment, runs_dir)
    client = _client(uri)
    parent_id = None
    created: list[str] = []
    try:
        mark_dead_parents(client, exp_id, payload.key, payload.tags.get("output_dir"))
        reused = complete_record(client, exp_id, payload)
        if reused is not None:
            # RUNNING (as this process) while its artifacts are replaced: a job killed meanwhile leaves a record
            # the next run marks KILLED and logs anew, never a FINISHED one whose manifest and files disagree
            client.set_tag(reused, "harness.pid", str(os.getpid()))
            client.set_tag(reused, "harness.host", socket.gethostname())
            client.update_run(reused, status="RUNNING")
            parent_id = reused
            _remove_tables(client, reused)
            _log_artifacts(client, reused, artifacts, payload.tables)
            client.set_tag(reused, "harness.reused_at", time.strftime("%Y-%m-%dT%H:%M:%S"))
            client.set_tag(reused, LOGGED_AT, str(int(time.time() * 1000)))  # the current record again
            _set_note(client, exp_id, reused, payload.note)
            client.set_terminated(reused, "FINISHED")
            if progress is not None:
                progress.update(len(payload.runs))
            survivor, _ = settle_records(client, exp_id, payload.key)
            supersede_records(client, exp_id, payload, survivor or reused)
            return Logged(exp_id, survivor or reused)
        ts = int(time.time() * 1000)
        user = _user()
        parent = client.create_run(exp_id, run_name=payload.name, tags={
            **payload.tags, **user, "harness.pid": str(os.getpid()), "harness.host": socket.gethostname()})
        parent_id = parent.info.run_id
        client.log_batch(parent_id, metrics=_metrics(payload.metrics, ts), params=_params(payload.params))
        _log_dataset(client, uri, parent_id, payload.dataset)
        bulk = bulk_store(client)
        created += _log_runs(client, bulk, uri, exp_id, parent_id, payload, ts, user, progress)
        _log_artifacts(client, parent_id, artifacts, payload.tables)
        if bulk is not None:
            finish_runs(bulk, created)
        else:
            for run_id in created:
                client.set_terminated(run_id, "FINISHED")
        _set_note(client, exp_id, parent_id, payload.note)
        client.set_tag(parent_id, LOGGED_AT, str(int(time.time() * 1000)))
        client.set_terminated(parent_id, "FINISHED")
        survivor, deleted = settle_records(client, exp_id, payload.key)
        if deleted:
            log.info("replaced %d earlier MLflow record(s) of this job", deleted)
        superseded = supersede_records(client, exp_id, payload, survivor or parent_id)
        if superseded:
            log.info("superseded %d earlier MLflow record(s) of this job on fewer inputs (deleted, restorable)",
                     superseded)
        return Logged(exp_id, survivor or parent_id)
    except BaseException as exc:
        status = "FAILED" if isinstance(exc, Exception) else "KILLED"
        if parent_id:  # every nested run, those of a transaction that committed before the failure too
            with contextlib.suppress(Exception):
                created += [c.info.run_id for c in _children(client, exp_id, parent_id)
                            if c.info.status == "RUNNING" and c.info.run_id not in created]
        for run_id in [*created, *([parent_id] if parent_id else [])]:
            with contextlib.suppress(Exception):
                client.set_terminated(run_id, status)
        if not isinstance(exc, Exception):
            raise
        raise TrackingError(f"MLflow logging to {uri} failed ({_reason(exc)})") from None


def _log_runs(client: Any, bulk: Any, uri: str, exp_id: str, parent_id: str, payload: JobPayload, ts: int,
              user: dict[str, str], progress: Any = None) -> list[str]:
    """Create and fill the payload's nested runs of ``parent_id`` (left RUNNING); returns their ids. Into a store
    :func:`~harness.sinks.sqlite_runs.bulk_store` accepts, all in one transaction; else through MLflow's API, run
    by run."""
    runs = [RunRows(run.name, {**_tags(run.tags), "mlflow.parentRunId": parent_id, **user},
                    _metrics(run.metrics, ts, run.step), _params(run.params)) for run in payload.runs]
    if bulk is not None:
        ids = insert_runs(bulk, exp_id, runs, payload.dataset[:2], DATASET_TAGS)
        if progress is not None:
            progress.update(len(ids))
        return ids
    ids = []
    for run in runs:
        # the tags go in with the run (one transaction; log_batch's tags cost as much as its metrics)
        child = client.create_run(exp_id, run_name=run.name, tags=run.tags)
        ids.append(child.info.run_id)
        client.log_batch(child.info.run_id, metrics=run.metrics, params=run.params)
        _log_dataset(client, uri, child.info.run_id, payload.dataset)
        if progress is not None:
            progress.update(1)
    return ids


def _user() -> dict[str, str]:
    """``mlflow.user`` (the UI's "Created by"), when the process has a user name."""
    import getpass

    try:
        return {"mlflow.user": getpass.getuser()}
    except Exception:  # noqa: BLE001 - no user name in this environment: MLflow shows "unknown"
        return {}


def experiment_link(uri: str, experiment_id: str) -> str:
    """The experiment's runs in the UI: the server's own address, or ``mlflow ui``'s default for a local store.
    ``workflowType=machine_learning``: MLflow 3.17's UI otherwise opens on its GenAI overview."""
    base = uri.rstrip("/") if uri.startswith(("http://", "https://")) else "http://127.0.0.1:5000"
    return f"{base}/#/experiments/{experiment_id}?workflowType=machine_learning"


def _log_dataset(client: Any, uri: str, run_id: str, dataset: tuple[str, str, str]) -> None:
    """The dataset as an MLflow input, so the runs table's Dataset column says what was scored.

    MLflow looks the dataset up and inserts it if it is new, two steps that parallel jobs (a sweep) race through:
    the second insert fails on the table's unique key (``UNIQUE constraint failed: datasets.experiment_id, ...``,
    seen in a 2-job submitit sweep). It is written under :func:`store_lock` (a SQLite store: one job at a time) and
    asked once more after a failure (a server's store: the retry finds the dataset the other job inserted)."""
    from mlflow.entities import Dataset, DatasetInput, InputTag

    name, digest, source = dataset
    data = Dataset(name=name, digest=digest, source_type="local", source=json.dumps({"uri": source}))
    inputs = [DatasetInput(data, tags=[InputTag(k, v) for k, v in DATASET_TAGS.items()])]
    for attempt in (1, 2):
        try:
            with store_lock(uri):
                client.log_inputs(run_id, datasets=inputs)
            return
        except Exception:  # noqa: BLE001 - a lost race on the unique key; a second failure is raised
            if attempt == 2:
                raise
            time.sleep(0.2)
