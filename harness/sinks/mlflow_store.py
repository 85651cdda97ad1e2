"""The MLflow store and experiment a job logs into, ready before any run is written.

- **Where.** The default store is a SQLite file under ``runs/`` given as an *absolute* URI, artifacts in
  ``runs/mlartifacts``. The store and the experiment are created under a file lock, so parallel first jobs never
  race on the schema migration (``table latest_metrics already exists``). The experiment is tagged
  ``mlflow.experimentKind = custom_model_development``.
- **A new store** starts as a copy of an empty one that MLflow created and migrated once for its installed
  version, kept beside the store (MLflow's ~60 migrations cost 1.3-2.3 s per store); the copy is used only if it
  is this user's alone and holds MLflow's empty schema and nothing else (:func:`_trusted`). It is made whole in a
  temporary file beside the store and moved into place (:func:`create_store`): a process killed while it
  migrates, or a full disk, leaves no half-migrated store.
- **Servers** must answer ``/health`` before anything is sent; MLflow's HTTP retries are bounded
  (:func:`configure_client`), and MLflow's own logs stay quiet unless asked.

``mlflow`` is imported lazily (``harness-score`` never pays for it).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import glob
import logging
import os
import re
import shutil
import sqlite3
import stat as stat_module
import urllib.request
from pathlib import Path
from typing import Any, Iterator

from ..errors import TrackingError

log = logging.getLogger("harness.sinks.mlflow")


EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}


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
    ``NORMAL`` never corrupts the database; a power cut may lose the last transactions, which a rerun logs again.

    A connection is used by the process that opened it only: a process forked from this one (the job's MLflow
    child, :func:`harness.runner.tracking_aside`, forked from a sweep's process or a test's that opened the store
    already) opens its own instead of the pooled ones it inherits, and leaves those to their process (SQLite
    connections must not cross a fork; SQLAlchemy's recipe)."""
    global _SQLITE_TUNED
    if _SQLITE_TUNED:
        return
    import sqlite3

    from sqlalchemy import event, exc
    from sqlalchemy.engine import Engine

    @event.listens_for(Engine, "connect")
    def _pragmas(connection: Any, record: Any) -> None:
        if isinstance(connection, sqlite3.Connection):
            record.info["pid"] = os.getpid()
            cursor = connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

    @event.listens_for(Engine, "checkout")
    def _own_process(_connection: Any, record: Any, proxy: Any) -> None:
        if record.info.get("pid", os.getpid()) != os.getpid():  # inherited: dropped here, never closed here
            record.dbapi_connection = proxy.dbapi_connection = None
            raise exc.DisconnectionError("a connection of the process this one was forked from")

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


def seed_store(db: Path, into: Path) -> bool:
    """Start the new SQLite store ``db`` in the file ``into`` (which :func:`create_store` then moves to ``db``) as
    a copy of the empty store that MLflow created and migrated once for this MLflow version in the same folder
    (:func:`keep_template`): MLflow's ~60 schema migrations take 1.3-2.3 s for every new store. The copy holds the
    schema, its version and no experiment; MLflow adds its ``Default`` experiment when it opens a store without
    one, as it does in a store it migrates itself. The template is used only if :func:`_trusted`; else it is
    removed and MLflow migrates the store. Returns whether it was used."""
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
        shutil.copyfile(template, into)
        return True
    except Exception as exc:  # noqa: BLE001 - the template only saves time: MLflow migrates the store instead
        log.debug("no MLflow store template used (%s: %s)", type(exc).__name__, exc)
        return False


def migrate(db: Path) -> None:
    """MLflow's own creation of its schema in the new, empty SQLite file ``db``: what MLflow's store does when it
    first opens a database without its tables (its ``_initialize_tables``: the initial tables, then every
    migration), on an engine of its own that is closed afterwards, so that nothing keeps the file open."""
    import mlflow.store.db.utils as db_utils

    tune_sqlite()
    engine = db_utils.create_sqlalchemy_engine(f"sqlite:///{db}")
    try:
        db_utils._initialize_tables(engine)
    finally:
        engine.dispose()


def create_store(db: Path) -> None:
    """Create the new SQLite store ``db`` whole or not at all: in a temporary file beside it, seeded from the
    template (:func:`seed_store`) or migrated by MLflow (:func:`migrate`, then kept as the template:
    :func:`keep_template`), moved into place at once. A process killed meanwhile leaves at most its temporary file,
    removed by the next creation (the caller holds :func:`store_lock`, so no other creation is under way), never
    a half-migrated store that would fail every later job (``duplicate column name``)."""
    for stale in db.parent.glob(glob.escape(db.name) + ".*.new*"):
        stale.unlink(missing_ok=True)
    tmp = db.with_name(f"{db.name}.{os.getpid()}.new")
    try:
        if not seed_store(db, tmp):
            migrate(tmp)
            keep_template(tmp)
        with contextlib.closing(sqlite3.connect(tmp)) as con:  # WAL: the whole store in the one file moved
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, db)
    finally:
        for path in (tmp, *_sidecars(tmp)):
            path.unlink(missing_ok=True)


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
    """Create the store (a new SQLite store: :func:`create_store`) and the experiment if needed, under
    :func:`store_lock`; return the experiment id. Any failure (unreachable server, full disk, unknown URI scheme)
    is a :class:`TrackingError`."""
    check_server(uri)
    db = _sqlite_path(uri)
    try:
        with store_lock(uri):
            if db is not None and (not db.exists() or db.stat().st_size == 0):
                create_store(db)
            client = _client(uri)
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
    except Exception as exc:  # a new store is there whole or not at all (create_store): nothing to remove
        raise TrackingError(f"the MLflow store {uri} cannot be used ({_reason(exc)})") from None


def _reason(exc: BaseException) -> str:
    """Why MLflow failed, in a user's words where the cause is the machine's (a full disk), else the error."""
    text = _first_line(exc)
    if "database or disk is full" in text or "No space left" in text:
        return "no space left on the store's disk"
    return f"{type(exc).__name__}: {text}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else ""
