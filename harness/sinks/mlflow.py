"""MLflow: one experiment per ``experiment_name``, one parent run per job, one nested run per system x refset x
variant; each job recorded once.

- **Where.** The default store is a SQLite file under ``runs/`` given as an *absolute* URI, artifacts in
  ``runs/mlartifacts``. The store and the experiment are created under a file lock, so parallel first jobs never
  race on the schema migration. A new store starts as a copy of an empty one that MLflow migrated once for its
  installed version (kept in the user's cache, :func:`seed_store`): the migrations cost seconds per store. The
  experiment is tagged ``mlflow.experimentKind = custom_model_development`` (MLflow 3.0-3.x UIs open such an
  experiment on its runs; 3.17 decides by a global switch instead, so the job prints the experiment's link with
  ``?workflowType=machine_learning``, :func:`experiment_link`).
- **Once per job.** A job's identity is a hash of its meaningful config and its input hashes (tag
  ``harness.job_key``). A rerun of an identical job *reuses* its complete earlier record (the numbers are the
  same; only the artifacts are replaced); a record left incomplete is replaced by a new one, and earlier records
  of the same identity are deleted (MLflow's soft delete: ``search_runs`` no longer finds them), so an experiment
  holds one parent and N nested runs per job; a job that changed gets a new record. Children stay RUNNING until
  the whole job is logged, then all finish (into a SQLite store in one transaction each,
  :mod:`harness.sinks.sqlite_runs`); a failure marks the parent and its children FAILED (KILLED on Ctrl-C or SIGTERM).
  Parents left RUNNING by a dead process (same host, pid gone; or the same job, whose folder lock we now hold)
  are marked KILLED, with their children, by the next job that sees them.
- **What.** Nested runs are named ``system@version | refset | variant``; metrics ``bleu``, ``bp``, ``ratio``,
  ``precision_N``, ``ci_low``/``ci_high`` and the system's human scores ``human.<kind>``, logged at step =
  the version when it is an integer (so the UI charts BLEU over checkpoints); params: every BLEU option; tags:
  system, version, refset, variant, signature, dataset, input hashes; the dataset as an MLflow input (digest of
  the input hashes: the runs table's Dataset column). The parent holds a few metrics named for comparison across
  jobs (``pearson.mt_only``...), the dataset input, the published files as artifacts, and the small tables as
  MLflow tables for the UI's preview (scalar columns, versions next to names; the Parquet files have everything).

Parquet stays the system of record: if MLflow fails, the tables are published already and the caller writes
``tracking_pending.json``. ``mlflow`` is imported lazily (``harness-score`` never pays for it).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import math
import os
import re
import shutil
import signal
import socket
import sqlite3
import stat as stat_module
import threading
import time
import urllib.request
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, NamedTuple

from ..errors import TrackingError
from ..job.dataset import refset_name
from ..job.files import pid_alive
from ..job.result import JobResult
from ..version import __version__
from .sqlite_runs import RunRows, bulk_store, finish_runs, insert_runs

log = logging.getLogger(__name__)

EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}
SMALL_TABLES = ("system_scores", "correlations", "significance")
#: the tags of the dataset input of every run
DATASET_TAGS = {"mlflow.data.context": "eval"}


def default_uri(runs_dir: Path) -> str:
    return f"sqlite:///{runs_dir.resolve() / 'mlflow.db'}"


def artifact_root(uri: str, runs_dir: Path) -> str | None:
    """Local stores keep artifacts in ``runs/mlartifacts``; a server decides for itself."""
    return (runs_dir.resolve() / "mlartifacts").as_uri() if uri.startswith("sqlite:") else None


def configure_client(retries: int, timeout: int, verbose: bool = False) -> None:
    """Bounded HTTP retries, so an unreachable server fails in seconds, not minutes (MLflow's default: 7 retries,
    backoff factor 2, 120 s timeout); MLflow's and alembic's own logs at WARNING unless ``verbose`` (MLflow sets
    its loggers up when imported, from ``MLFLOW_LOGGING_LEVEL``)."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", str(retries))
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(timeout))
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    level = "INFO" if verbose else "WARNING"
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", level)
    for name in ("mlflow", "alembic"):
        logging.getLogger(name).setLevel(level)
    # MLflow logs every database error with its traceback before it raises it (a full disk: two tracebacks); the
    # job reports the error it raises, in one line (TrackingError), unless verbose
    logging.getLogger("mlflow.store.db.utils").setLevel(level if verbose else "CRITICAL")


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
    """WAL journal + ``synchronous=NORMAL`` on every SQLite connection of this process: MLflow commits several
    times per call and each commit of a default SQLite database waits for an fsync (~150 ms per nested run here,
    ~40 ms with WAL); WAL also lets readers (``mlflow ui``) and parallel jobs work without blocking each other.
    ``NORMAL`` never corrupts the database; a power cut may lose the last transactions, which a rerun logs again."""
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


@contextlib.contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """For a SQLite store, an exclusive file lock beside the database (creation and migration are not safe to run
    concurrently: ``table latest_metrics already exists``, ``duplicate column name: step``)."""
    db = _sqlite_path(uri)
    if db is None:
        yield
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(str(db) + ".lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _sqlite_path(uri: str) -> Path | None:
    return Path(uri[len("sqlite:///"):]) if uri.startswith("sqlite:///") else None


def store_template(db: Path) -> Path:
    """Where the empty store of the installed MLflow version is kept: beside the store ``db``, in its own folder
    (``.mlflow-VERSION-empty.db``), never in a cache other users or other programs can write to."""
    from mlflow.version import VERSION

    return db.parent / f".mlflow-{VERSION}-empty.db"


def seed_store(db: Path) -> bool:
    """Start the new SQLite store ``db`` as a copy of the empty store that MLflow created and migrated once for
    this MLflow version in the same folder (:func:`keep_template`): MLflow's ~60 schema migrations take 1.3-2.3 s
    for every new store. The copy holds the schema, its version and no experiment; MLflow adds its ``Default``
    experiment when it opens a store without one, as it does in a store it migrates itself. The template is used
    only if :func:`_trusted`; else it is removed and MLflow migrates the store. Returns whether it was used."""
    try:
        template = store_template(db)
        if not template.exists():
            return False
        problem = _trusted(template)
        if problem is not None:
            log.warning("the MLflow store template %s is not used (%s); it is removed and MLflow creates the store",
                        template, problem)
            for path in (template, *_sidecars(template)):
                path.unlink(missing_ok=True)
            return False
        tmp = db.with_name(f"{db.name}.{os.getpid()}.seed")
        try:
            shutil.copyfile(template, tmp)
            os.replace(tmp, db)
        finally:
            tmp.unlink(missing_ok=True)
        return True
    except Exception as exc:  # noqa: BLE001 - the template only saves time: MLflow migrates the store instead
        log.debug("no MLflow store template used (%s: %s)", type(exc).__name__, exc)
        return False


def _sidecars(db: Path) -> list[Path]:
    """SQLite's files beside a database (its write-ahead log, shared memory, rollback journal)."""
    return [db.with_name(db.name + suffix) for suffix in ("-wal", "-shm", "-journal")]


def _sql_words(sql: str) -> str:
    return " ".join(sql.split()).rstrip(";").strip()


@functools.lru_cache(maxsize=1)
def _mlflow_triggers() -> frozenset[str]:
    """The ``CREATE TRIGGER`` statements of the installed MLflow's own schema migrations (whitespace collapsed):
    the only triggers a store may hold (3.17 creates one, ``prevent_secrets_aad_mutation``)."""
    import mlflow.store.db_migrations as migrations

    found = set()
    for path in Path(migrations.__file__).parent.glob("versions/*.py"):
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in re.finditer(r"CREATE TRIGGER\b.*?\bEND\b", text, re.S):
            found.add(_sql_words(match.group(0)))
    return frozenset(found)


#: Rows a store that MLflow has just created holds (MLflow 3.17): its schema version, and the default workspace
#: (with no artifact root of its own: a planted one would send artifacts elsewhere).
_MIGRATION_ROWS = {"alembic_version": 1, "workspaces": 1}


def _trusted(template: Path) -> str | None:
    """Why ``template`` must not become a store, or None: it must be a regular file (not a link) of this user that
    no one else may write, and hold MLflow's empty schema and nothing else: tables, indexes and MLflow's own
    triggers (:func:`_mlflow_triggers`; no other trigger or view, the SQL a store would run on every write), every
    table empty but for the rows a migration writes (:data:`_MIGRATION_ROWS`), and pass SQLite's quick check. (A
    template with a planted trigger once made every ``bleu`` metric 99.0 while the console showed 53.06.)"""
    st = os.lstat(template)
    if not stat_module.S_ISREG(st.st_mode):
        return "not a regular file"
    # the copy takes the file alone: what a write-ahead log beside it holds would be checked here and not copied
    if any(os.path.lexists(p) for p in _sidecars(template)):
        return "SQLite files (a write-ahead log or journal) lie beside it"
    with open(template, "rb") as f:
        header = f.read(20)
    if header[:16] != b"SQLite format 3\x00" or header[18:20] != b"\x01\x01":
        return "not a self-contained SQLite file (legacy journal mode)"
    if st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, not this user"
    if st.st_mode & 0o022:
        return f"writable by others (mode {stat_module.S_IMODE(st.st_mode):o})"
    try:
        with contextlib.closing(sqlite3.connect(f"file:{template}?mode=ro", uri=True)) as con:
            if con.execute("PRAGMA quick_check").fetchone() != ("ok",):
                return "damaged"
            for kind, name, sql in con.execute(
                    "SELECT type, name, sql FROM sqlite_master WHERE type NOT IN ('table', 'index')").fetchall():
                if kind != "trigger" or _sql_words(sql or "") not in _mlflow_triggers():
                    return f"it holds a {kind} {name!r} that MLflow's schema does not have"
            for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                rows = con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
                if rows > _MIGRATION_ROWS.get(table, 0):
                    return f"table {table} holds {rows} row(s)"
            if "workspaces" in {t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}:
                for name, root in con.execute("SELECT name, default_artifact_root FROM workspaces").fetchall():
                    if name != "default" or root is not None:
                        return f"workspace {name!r} with artifact root {root!r}"
    except sqlite3.Error as exc:
        return f"not a SQLite store ({exc})"
    return None


def keep_template(db: Path) -> None:
    """Keep a copy of the store MLflow just created and migrated at ``db`` (nothing logged yet) as the template
    of later new stores in the same folder (:func:`seed_store`), without its ``Default`` experiment, readable and
    writable by this user only. Written once per MLflow version, atomically; a failure only costs time."""
    try:
        template = store_template(db)
        if template.exists():
            return
        with contextlib.closing(sqlite3.connect(db)) as con:  # WAL: fold the log into the file before copying it
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        tmp = template.with_name(f"{template.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out, open(db, "rb") as src:
                shutil.copyfileobj(src, out)
            with contextlib.closing(sqlite3.connect(tmp)) as con:
                con.execute("DELETE FROM experiments")
                con.execute("DELETE FROM experiment_tags")
                con.commit()
                con.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
            for path in _sidecars(template):  # a leftover log would be read into the new template
                path.unlink(missing_ok=True)
            if _trusted(tmp) is None:
                os.replace(tmp, template)
        finally:
            tmp.unlink(missing_ok=True)
    except Exception as exc:  # noqa: BLE001
        log.debug("the MLflow store template was not kept (%s: %s)", type(exc).__name__, exc)


def _client(uri: str) -> Any:
    if uri.startswith("sqlite:"):
        tune_sqlite()
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def prepare_store(uri: str, experiment: str, runs_dir: Path) -> str:
    """Create (and migrate) the store and the experiment if needed, under :func:`store_lock`; return the
    experiment id. Any failure (unreachable server, full disk, unknown URI scheme) is a :class:`TrackingError`."""
    check_server(uri)
    db = _sqlite_path(uri)
    new = False
    try:
        with store_lock(uri):
            new = db is not None and (not db.exists() or db.stat().st_size == 0)
            seeded = new and seed_store(db)
            client = _client(uri)
            if new and not seeded:
                keep_template(db)
            found = client.get_experiment_by_name(experiment)
            if found is None:
                exp_id = client.create_experiment(experiment, artifact_location=artifact_root(uri, runs_dir),
                                                  tags=EXPERIMENT_KIND)
            else:
                exp_id = found.experiment_id
                if found.tags.get("mlflow.experimentKind") != EXPERIMENT_KIND["mlflow.experimentKind"]:
                    for key, value in EXPERIMENT_KIND.items():
                        client.set_experiment_tag(exp_id, key, value)
            return str(exp_id)
    except TrackingError:
        raise
    except Exception as exc:
        if db is not None and new:  # a half-migrated store would fail every later job ("duplicate column name")
            for path in (db, *_sidecars(db)):
                with contextlib.suppress(OSError):
                    path.unlink()
        raise TrackingError(f"the MLflow store {uri} cannot be used ({_reason(exc)})"
                            + ("; the half-created store was removed" if db is not None and new else "")) from None


def _reason(exc: BaseException) -> str:
    """Why MLflow failed, in a user's words where the cause is the machine's (a full disk), else the error."""
    text = _first_line(exc)
    if "database or disk is full" in text or "No space left" in text:
        return "no space left on the store's disk"
    return f"{type(exc).__name__}: {text}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else ""


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


def parent_metrics(result: JobResult) -> dict[str, float]:
    """A few parent metrics named for comparison across jobs: the system-level correlations of the first variant
    against the full reference set, per human kind (``pearson.mt_only``, ``kendall.all_systems``, ... with
    ``.KIND`` appended when the job has several kinds). Without human translations among the systems, every
    system is an MT system: the numbers are logged as ``*.mt_only`` too, so jobs compare on one name."""
    if not result.correlations:
        return {}
    all_mt = not any(s.human for s in result.inputs.systems)
    variant = result.spec.variants[0].name
    kinds = list(dict.fromkeys(r.human_score for r in result.correlations))
    out = {}
    for r in result.correlations:
        c = r.correlation
        if r.variant != variant or r.refset != result.full_refset or c.level != "system" or c.grouping != "none":
            continue
        subsets = ["all_systems", *(["mt_only"] if all_mt else [])] if r.include_human else ["mt_only"]
        for subset in subsets:
            name = f"{c.method}.{subset}" + (f".{key_part(r.human_score)}" if len(kinds) > 1 else "")
            if math.isfinite(c.value):
                out[name] = c.value
    return out


def preview(table: Any) -> dict[str, list[Any]]:
    """A table as the UI's preview shows it well (``log_table``): scalar columns only (no lists, no hashes; the
    Parquet file has them), each ``system_version`` right after its ``system`` column."""
    import pyarrow as pa

    names = [f.name for f in table.schema if not pa.types.is_list(f.type) and not f.name.endswith("sha256")]
    for suffix in ("", "_a", "_b"):
        version, system = f"system_version{suffix}", f"system{suffix}"
        if version in names and system in names:
            names.remove(version)
            names.insert(names.index(system) + 1, version)
    return table.select(names).to_pydict()


def build_payload(result: JobResult, job_key: str, tables: Mapping[str, Any] | None = None) -> JobPayload:
    """Everything a job logs, from its result."""
    spec, inputs = result.spec, result.inputs
    hashes = inputs.input_hashes()
    human_sys = {h.name: h.sys for h in inputs.human}
    runs = []
    for c in result.cells:
        s = c.score
        metrics = {"bleu": s.score, "bp": s.bp, "ratio": s.ratio, "hyp_len": float(s.hyp_len),
                   "ref_len": float(s.ref_len), "ci_low": c.ci_low, "ci_high": c.ci_high}
        metrics.update({f"precision_{n + 1}": p for n, p in enumerate(s.precisions)})
        for kind, scores in human_sys.items():
            if c.system.label in scores:
                metrics[f"human.{key_part(kind)}"] = scores[c.system.label]
        tags = {"system": c.system.name, "system_version": c.system.version or "", "refset": c.refset,
                "refs_used": "+".join(c.refs_used), "variant": c.variant.name, "signature": s.signature,
                "sentence_signature": c.sentence_signature,
                "dataset": result.dataset, "experiment": result.experiment, "human": str(c.system.human).lower(),
                "sha256.system": c.system.text.sha256,
                **{f"sha256.ref.{key_part(r)}": inputs.refs[r].sha256 for r in c.refs_used},
                **{f"meta.{key_part(k)}": v for k, v in c.system.metadata.items()}}
        runs.append(NestedRun(run_name(c.system.name, c.system.version, c.refset, c.variant.name), metrics,
                              version_step(c.system.version), {"variant": c.variant.name,
                                                                **c.variant.options.as_params(),
                                                                "sentence_effective_order":
                                                                    c.variant.sentence.effective_order}, tags))
    params = {"experiment": result.experiment, "dataset": result.dataset, "n_segments": inputs.n_segments,
              "systems": [s.label for s in inputs.systems], "refsets": [refset_name(r) for r in inputs.refsets],
              "variants": [v.name for v in spec.variants], "human": [h.name for h in inputs.human],
              "seed": spec.seed, "n_samples": spec.n_samples, "harness_version": __version__}
    tags = {"dataset": result.dataset, "experiment": result.experiment, "harness.job": spec.job_name,
            "harness.job_key": job_key, "output_dir": str(spec.folder(result.experiment)),
            **({"dataset_root": str(inputs.layout.root)} if inputs.layout is not None else {}),
            **{f"sha256.{key_part(k.replace(':', '.'))}": v for k, v in hashes.items() if k.startswith("ref:")}}
    digest = hashlib.sha256(json.dumps(sorted(hashes.items())).encode()).hexdigest()[:12]
    source = str(inputs.layout.root) if inputs.layout is not None else ",".join(str(t.path) for t in inputs.refs.values())
    return JobPayload(result.experiment, f"{result.dataset} | {spec.job_name}", job_key, params, tags,
                      parent_metrics(result), tuple(runs), (result.dataset, digest, source), dict(tables or {}))


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
            for child in _children(client, exp_id, run.info.run_id):
                if child.info.status == "RUNNING":
                    client.set_terminated(child.info.run_id, "KILLED")
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
        for child in _children(client, exp_id, run.info.run_id):
            client.delete_run(child.info.run_id)
        client.delete_run(run.info.run_id)
        n += 1
    return str(survivor.info.run_id), n


def complete_record(client: Any, exp_id: str, payload: JobPayload) -> str | None:
    """The parent run of an earlier, completely logged run of this very job (FINISHED, with all its nested runs
    FINISHED), or None."""
    for run in all_runs(client, exp_id, f"tags.`harness.job_key` = '{payload.key}' and attributes.status = 'FINISHED'"):
        if "mlflow.parentRunId" in run.data.tags:
            continue
        children = _children(client, exp_id, run.info.run_id)
        names = sorted(c.info.run_name for c in children if c.info.status == "FINISHED")
        if len(children) == len(payload.runs) and names == sorted(r.name for r in payload.runs):
            return str(run.info.run_id)
    return None


def _log_artifacts(client: Any, parent_id: str, artifacts: Mapping[str, Path], tables: Mapping[str, Any]) -> None:
    for rel, path in artifacts.items():
        folder = rel.rpartition("/")[0]
        client.log_artifact(parent_id, str(path), artifact_path=folder or None)
    with warnings.catch_warnings():  # pandas' deprecation notes from inside MLflow's table conversion
        warnings.simplefilter("ignore")
        for name, frame in tables.items():
            client.log_table(parent_id, frame, f"tables/{name}.json")


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
            _log_artifacts(client, reused, artifacts, payload.tables)
            client.set_tag(reused, "harness.reused_at", time.strftime("%Y-%m-%dT%H:%M:%S"))
            client.set_tag(reused, LOGGED_AT, str(int(time.time() * 1000)))  # the current record again
            client.set_terminated(reused, "FINISHED")
            if progress is not None:
                progress.update(len(payload.runs))
            survivor, _ = settle_records(client, exp_id, payload.key)
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
        client.set_tag(parent_id, LOGGED_AT, str(int(time.time() * 1000)))
        client.set_terminated(parent_id, "FINISHED")
        survivor, deleted = settle_records(client, exp_id, payload.key)
        if deleted:
            log.info("replaced %d earlier MLflow record(s) of this job", deleted)
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
