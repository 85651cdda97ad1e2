"""Reading the runs: the MLflow store (local SQLite file or server, opened without ever creating one), the nested
runs of one system, refset and variant, and one :class:`~.result.Version` per version, in history order."""

from __future__ import annotations

import logging
import math
import os
import re
from pathlib import Path
from typing import Any, Sequence

from ..errors import TrackingError
from ..job.dataset import natural_key
from ..sinks.mlflow import all_runs, current_since
from ..sinks.mlflow_store import check_server, configure_client, default_uri
from .result import HistoryError, Version

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def default_tracking_uri(runs_dir: str | Path = "runs") -> str:
    """The app's default store: ``sqlite:///<abs>/runs/mlflow.db`` (see :mod:`harness.sinks.mlflow`)."""
    return default_uri(Path(runs_dir))


def open_client(uri: str, timeout: float = 10.0) -> Any:
    """An ``MlflowClient`` for ``uri``; fails fast (one clear line) on a missing local store or a dead server.

    A SQLite store is never created by reading it; an HTTP server must answer ``/health``; MLflow's HTTP retries
    are bounded so an unreachable server fails in seconds.
    """
    configure_client(2, int(timeout))
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    if uri.startswith("sqlite:"):
        path = uri.split(":///", 1)[1] if ":///" in uri else ""
        if path and not Path(path).is_file():
            raise HistoryError(f"no MLflow store at {path} (score something with harness first, or give "
                               "--tracking-uri / --runs-dir)")
        if path and not _is_store(Path(path)):  # MLflow would make a store of an empty or foreign file
            raise HistoryError(f"{path} is not an MLflow store (an empty file or another database); nothing was "
                               "changed")
    else:
        try:
            check_server(uri, timeout)
        except TrackingError as exc:
            raise HistoryError(str(exc)) from None
    for name in ("mlflow", "alembic"):
        logging.getLogger(name).setLevel(logging.WARNING)
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def _is_store(path: Path) -> bool:
    """A SQLite file that holds MLflow's tables (read-only check: nothing is created or migrated)."""
    import contextlib
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
            tables = {t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return False
    return {"experiments", "runs", "alembic_version"} <= tables


def default_experiment(client: Any, runs_dir: Path, system: str, uri: str) -> str:
    """The experiment of the jobs under ``runs_dir`` (``runs/<experiment>/<job>/``; without job folders there,
    every experiment of the store): the only one, else the only one with runs of ``system``; otherwise one error
    listing them."""
    found = sorted(p.name for p in runs_dir.iterdir() if p.is_dir() and not p.name.startswith(".")) \
        if runs_dir.is_dir() else []
    known = [n for n in found if client.get_experiment_by_name(n) is not None]  # not cache/, mlartifacts/
    if len(known) == 1:
        return known[0]
    if not known:
        known = sorted(e.name for e in client.search_experiments())
    quoted = _quote(system)
    with_system = [n for n in known if quoted and client.search_runs(
        [experiment_id(client, n)], filter_string=f"tags.system = {quoted}", max_results=1)]
    if len(with_system) == 1:
        return with_system[0]
    if not with_system:
        raise HistoryError(f"no experiment given, and none in the store {uri} has runs of system {system!r} "
                           f"(experiments: {', '.join(known) or 'none'}); give --experiment NAME")
    raise HistoryError(f"the jobs under {runs_dir} are in several experiments"
                       f"{' with runs of ' + repr(system) if with_system else ''} "
                       f"({', '.join(with_system or known)}); give --experiment NAME [store {uri}]")


def experiment_id(client: Any, name: str) -> str:
    found = client.get_experiment_by_name(name)
    if found is None:
        names = sorted(e.name for e in client.search_experiments())
        raise HistoryError(f"no experiment {name!r} in the tracking store (experiments found: "
                           f"{', '.join(names) or 'none'})")
    return str(found.experiment_id)


def _quote(value: str) -> str | None:
    """A value for an MLflow filter string, or None when it cannot be quoted safely (then filter in Python)."""
    return None if ("'" in value or "\\" in value) else f"'{value}'"


def system_runs(client: Any, experiment: str, system: str) -> list[Any]:
    """The runs of ``system`` in the experiment and the job (parent) runs they belong to; every run when the
    system has none (so that the error can list the systems there are)."""
    quoted = _quote(system)
    runs = all_runs(client, experiment, f"tags.system = {quoted}" if quoted else "")
    if not [r for r in runs if r.data.tags.get("system") == system]:
        return list(all_runs(client, experiment))
    parents = {r.data.tags.get("mlflow.parentRunId") for r in runs} - {None}
    have = {r.info.run_id for r in runs}
    return list(runs) + [client.get_run(pid) for pid in sorted(parents - have)]


def _metric(run: Any, key: str) -> float | None:
    value = run.data.metrics.get(key)
    return None if value is None or not math.isfinite(float(value)) else float(value)


def _choose(kind: str, given: str | None, found: Sequence[str], system: str) -> str:
    """The refset/variant to use: the given one (which must exist) or the only one found."""
    found = sorted(set(found))
    if given is not None:
        if given not in found:
            raise HistoryError(f"system {system!r} has no runs with {kind} {given!r} ({kind}s found: "
                               f"{', '.join(found)})")
        return given
    if len(found) == 1:
        return found[0]
    raise HistoryError(f"system {system!r} was scored against several {kind}s ({', '.join(found)}); pick one "
                       f"with --{kind}")


def _widest_refset(runs: Sequence[Any]) -> str | None:
    """The reference set with the most references (``nrefs`` of the runs' signatures), if one has more than every
    other: the default when a job scored each reference alone and all together (``dataset.refsets=each``)."""
    nrefs: dict[str, int] = {}
    for r in runs:
        match = re.search(r"(?:^|\|)nrefs:(\d+)(?:\||$)", r.data.tags.get("signature", ""))
        if match:
            name = r.data.tags.get("refset", "")
            nrefs[name] = max(nrefs.get(name, 0), int(match.group(1)))
    if not nrefs:
        return None
    top = max(nrefs.values())
    widest = [name for name, n in nrefs.items() if n == top]
    return widest[0] if len(widest) == 1 and len(nrefs) > 1 else None


def select_versions(runs: Sequence[Any], system: str, refset: str | None, variant: str,
                    dataset: str | None = None) -> tuple[list[Version], str]:
    """The newest finished run per version of ``system`` for one refset and variant, in history order.

    Only nested runs whose job (parent run) finished are used: a job whose logging failed may lack artifacts.
    Returns the versions and the refset used.
    """
    by_id = {r.info.run_id: r for r in runs}
    nested = [r for r in runs if "mlflow.parentRunId" in r.data.tags and "system" in r.data.tags]
    finished = [r for r in nested if r.info.status == "FINISHED"
                and getattr(by_id.get(r.data.tags["mlflow.parentRunId"]), "info", None) is not None
                and by_id[r.data.tags["mlflow.parentRunId"]].info.status == "FINISHED"]
    mine = [r for r in finished if r.data.tags.get("system") == system]
    if not mine:
        systems = sorted({r.data.tags["system"] for r in finished})
        raise HistoryError(f"no finished runs of system {system!r} (systems found: {', '.join(systems) or 'none'})")
    if dataset is not None:
        datasets = sorted({r.data.tags.get("dataset", "") for r in mine})
        mine = [r for r in mine if r.data.tags.get("dataset") == dataset]
        if not mine:
            raise HistoryError(f"system {system!r} has no runs on dataset {dataset!r} (datasets found: "
                               f"{', '.join(datasets)})")
    variant = _choose("variant", variant, [r.data.tags.get("variant", "") for r in mine], system)
    mine = [r for r in mine if r.data.tags.get("variant") == variant]
    if refset is None:
        refset = _widest_refset(mine)
    refset = _choose("refset", refset, [r.data.tags.get("refset", "") for r in mine], system)
    mine = [r for r in mine if r.data.tags.get("refset") == refset]

    groups: dict[str, list[Any]] = {}
    for r in mine:
        groups.setdefault(r.data.tags.get("system_version", ""), []).append(r)
    versions = []
    for version, group in groups.items():
        # the record that became current last (a rerun that reuses an older record makes it current again:
        # Nemo scored A, then B, then A again is A), then the newest run
        group.sort(key=lambda r: (current_since(by_id[r.data.tags["mlflow.parentRunId"]]), r.info.start_time or 0,
                                  r.info.run_id))
        run = group[-1]
        bleu = _metric(run, "bleu")
        if bleu is None:
            raise HistoryError(f"run {run.info.run_id} (version {version or '(none)'}) has no bleu metric")
        parent = by_id[run.data.tags["mlflow.parentRunId"]]
        n_seg = parent.data.params.get("n_segments")
        versions.append(Version(
            version=version, run_id=run.info.run_id, parent_id=parent.info.run_id,
            start_time=int(run.info.start_time or 0), bleu=bleu,
            first_seen=min(int(by_id[r.data.tags["mlflow.parentRunId"]].info.start_time or 0) for r in group),
            ci_low=_metric(run, "ci_low"), ci_high=_metric(run, "ci_high"),
            signature=run.data.tags.get("signature", ""),
            ref_hashes={k: v for k, v in run.data.tags.items() if k.startswith("sha256.ref.")},
            n_segments=int(n_seg) if n_seg is not None and str(n_seg).isdigit() else None,
            dataset=run.data.tags.get("dataset", ""), n_runs=len(group),
            system_sha256=run.data.tags.get("sha256.system", ""),
            refs_used=tuple(x for x in run.data.tags.get("refs_used", "").split("+") if x),
            dataset_root=parent.data.tags.get("dataset_root")))
    return order_versions(versions), refset


def numeric_versions(labels: Sequence[str]) -> bool:
    return bool(labels) and all(_NUMBER.fullmatch(v.strip() or "x") for v in labels)


def order_versions(versions: list[Version]) -> list[Version]:
    """Numerically when every version is a number (``2 < 10``), else by when each version was first scored (the
    start of its first job); versions first scored by the same job in natural order (``step-9`` before
    ``step-10``), as that job ordered them."""
    if numeric_versions([v.version for v in versions]):
        return sorted(versions, key=lambda v: (float(v.version), v.first_seen))
    return sorted(versions, key=lambda v: (v.first_seen, natural_key(v.version), v.version))


def cut_versions(versions: list[Version], up_to: str | None) -> list[Version]:
    """The history up to and including version ``up_to``."""
    if up_to is None:
        return versions
    labels = [v.version for v in versions]
    if up_to not in labels:
        raise HistoryError(f"--up-to {up_to!r}: no such version (versions found: "
                           f"{', '.join(v.label for v in versions)})")
    return versions[: labels.index(up_to) + 1]
