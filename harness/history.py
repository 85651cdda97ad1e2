"""``harness-history``: one system's BLEU across its versions, from the MLflow runs alone.

Every ``harness`` job logs a nested MLflow run per system version x refset x variant (metric ``bleu``, ``ci_low``,
``ci_high``; tags ``system``, ``system_version``, ``refset``, ``variant``, ``signature``, ``sha256.ref.*``) under a
parent run holding the job's tables and ``manifest.json`` as artifacts; MLflow records each job once. Versions
(``systems/NAME@VERSION.txt``) may be scored together in one job or in separate jobs, in any mix. This command
picks the runs of one system, refset and variant, keeps the newest run of every version, orders the versions
(numerically when every version is a number, else by when each was first scored, the versions of one job in
natural order) and prints, per version: BLEU, its confidence interval, the delta to the previous version and the
p-value of a paired test against the previous version and against the best earlier one.

Paired tests are computed from the per-segment sufficient statistics stored in each job's
``segment_scores.parquet`` artifact (the rows of the version's ``system_version``; downloaded through MLflow, so it
works against a remote tracking server and after the job folders are gone, and trusted only when the job's
``manifest.json`` artifact lists it with the same SHA-256), never recomputed from text, and only between runs with
the same signature, the same reference hashes and the same number of segments; anything else is refused, naming the
field and both values.

``--fail-on-regression`` turns it into a gate: exit status 1 (one line on stderr) when the newest version is
significantly worse (``p < --alpha``, BLEU lower) than the previous version or the best earlier one.

Exit status: 0 ok; 1 a regression (with ``--fail-on-regression``); 2 no answer possible (bad arguments, unknown
experiment/system/refset/variant/version, no runs, runs that cannot be compared, a gate with a single version,
an unreachable store). Errors are one line on stderr, never a traceback. This module imports neither Hydra nor
(until it needs it) MLflow.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .arguments import OneLineParser, console_command
from .errors import HarnessError, TrackingError
from .job.dataset import natural_key
from .sinks.mlflow import all_runs, current_since
from .sinks.mlflow_store import check_server, configure_client, default_uri

PROG = "harness-history"
SEGMENT_TABLE = "segment_scores.parquet"
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


class HistoryError(HarnessError):
    """Nothing sensible can be answered (exit status 2): the message says why and what was found instead."""


# ----------------------------------------------------------------------------------------------------------------
# Reading the runs
# ----------------------------------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------------------------------
# Versions
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class Version:
    """The newest finished run of one version of the system (for one refset and variant)."""

    version: str
    run_id: str
    parent_id: str
    start_time: int  # ms since the epoch, of this (newest) run
    first_seen: int  # ms, the start of the earliest job (parent run) that scored this version
    bleu: float
    ci_low: float | None
    ci_high: float | None
    signature: str
    ref_hashes: dict[str, str]
    n_segments: int | None
    dataset: str
    n_runs: int = 1
    system_sha256: str = ""  # of the text scored (tag sha256.system)
    refs_used: tuple[str, ...] = ()
    dataset_root: str | None = None  # the job's dataset folder (parent tag dataset_root), if it had one
    # filled by the paired tests
    delta_prev: float | None = None
    p_prev: float | None = None
    best_before: str | None = None
    delta_best: float | None = None
    p_best: float | None = None
    regression_vs_previous: bool = False
    regression_vs_best: bool = False

    @property
    def label(self) -> str:
        return self.version if self.version else "(none)"

    @property
    def regression(self) -> bool:
        return self.regression_vs_previous or self.regression_vs_best


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


# ----------------------------------------------------------------------------------------------------------------
# Comparability and statistics
# ----------------------------------------------------------------------------------------------------------------


def _signature_fields(sig: str) -> dict[str, str]:
    out = {}
    for part in sig.split("|"):
        key, _, value = part.partition(":")
        out[key] = value
    return out


def difference(a: Version, b: Version) -> str | None:
    """What makes ``b`` not comparable with ``a`` (field and both values), or None."""
    if a.signature != b.signature:
        fa, fb = _signature_fields(a.signature), _signature_fields(b.signature)
        keys = list(dict.fromkeys([*fa, *fb]))
        diffs = [k for k in keys if fa.get(k) != fb.get(k)]
        if diffs:
            return "; ".join(f"signature field {k!r} differs: {fa.get(k, '(absent)')!r} (version {a.label}) vs "
                             f"{fb.get(k, '(absent)')!r} (version {b.label})" for k in diffs)
        return f"signature differs: {a.signature!r} (version {a.label}) vs {b.signature!r} (version {b.label})"
    for key in sorted({*a.ref_hashes, *b.ref_hashes}):
        va, vb = a.ref_hashes.get(key, "(absent)"), b.ref_hashes.get(key, "(absent)")
        if va != vb:
            return f"reference hash {key} differs: {va} (version {a.label}) vs {vb} (version {b.label})"
    if a.n_segments is not None and b.n_segments is not None and a.n_segments != b.n_segments:
        return (f"number of segments differs: {a.n_segments} (version {a.label}) vs {b.n_segments} "
                f"(version {b.label})")
    return None


def check_comparable(versions: Sequence[Version], system: str) -> None:
    """Every version must share the first one's signature, reference hashes and segment count."""
    first = versions[0]
    for i, v in enumerate(versions[1:], start=1):
        why = difference(first, v)
        if why is not None:
            hint = f" (--up-to {versions[i - 1].version} stops the history before it)" if i > 1 else ""
            raise HistoryError(f"{system} version {v.label} cannot be compared with version {first.label}: {why}; "
                               f"paired tests need the same signature, reference hashes and segments{hint}")


def segment_matrix(frame: Any, system: str, version: str, refset: str, variant: str, where: str) -> np.ndarray:
    """The ``[n, 2 + 2N]`` statistics ``[hyp_len, ref_len, matches_1..N, totals_1..N]`` of one cell of a
    ``segment_scores`` table (one system version, refset and variant: a job may score several versions of a
    system), ordered by ``seg_id`` (``ref_len`` is already the variant's effective length)."""
    mask = (frame["system"] == system) & (frame["refset"] == refset) & (frame["variant"] == variant)
    if "system_version" in frame.columns:
        mask &= frame["system_version"].fillna("") == version
    rows = frame[mask]
    label = f"{system}@{version}" if version else system
    if rows.empty:
        raise HistoryError(f"{where}: no segment statistics of {label} / {refset} / {variant}")
    rows = rows.sort_values("seg_id", kind="stable")
    seg = rows["seg_id"].to_numpy()
    if not np.array_equal(seg, np.arange(len(rows))):
        raise HistoryError(f"{where}: segment ids of {label} / {refset} / {variant} are not 0..{len(rows) - 1} "
                           "once each")
    matches = np.vstack([np.asarray(m, dtype=np.float64) for m in rows["matches"]])
    totals = np.vstack([np.asarray(t, dtype=np.float64) for t in rows["totals"]])
    return np.column_stack([rows["hyp_len"].to_numpy(np.float64), rows["ref_len"].to_numpy(np.float64),
                            matches, totals])


class Artifacts:
    """Each job's ``segment_scores.parquet``, downloaded once through MLflow into a temporary folder, and trusted
    only when the job's ``manifest.json`` artifact lists it with the same SHA-256 (a complete generation)."""

    def __init__(self, client: Any, folder: str) -> None:
        self.client = client
        self.folder = Path(folder)
        self._frames: dict[str, Any] = {}

    def segments(self, parent_id: str) -> Any:
        """The job's segment table (the columns the paired tests need), verified against its manifest."""
        if parent_id not in self._frames:
            import pandas as pd
            import pyarrow.parquet as pq

            dst = self.folder / parent_id
            dst.mkdir(parents=True, exist_ok=True)
            try:
                path = self.client.download_artifacts(parent_id, SEGMENT_TABLE, str(dst))
            except Exception as exc:
                raise HistoryError(f"job run {parent_id} has no {SEGMENT_TABLE} artifact ({type(exc).__name__}: "
                                   f"{str(exc).splitlines()[0] if str(exc) else ''}; scored with "
                                   "segment_table=false?): no paired tests without segment statistics") from None
            self._verify(parent_id, Path(path), dst)
            columns = ["refset", "system", "variant", "seg_id", "hyp_len", "ref_len", "matches", "totals"]
            if "system_version" in pq.read_schema(path).names:  # every table has it (DESIGN 1.7); be lenient
                columns.append("system_version")
            self._frames[parent_id] = pd.read_parquet(path, columns=columns)
        return self._frames[parent_id]

    def _verify(self, parent_id: str, path: Path, dst: Path) -> None:
        from .storage.manifest import MANIFEST, sha256_of

        try:
            manifest = json.loads(Path(self.client.download_artifacts(parent_id, MANIFEST, str(dst))).read_text())
        except Exception:
            raise HistoryError(f"job run {parent_id} has no {MANIFEST} artifact: its tables cannot be verified "
                               "(rerun the job to log it with a manifest)") from None
        want = manifest.get("files", {}).get(SEGMENT_TABLE, {}).get("sha256")
        if want is None or want != sha256_of(path):
            raise HistoryError(f"job run {parent_id}: {SEGMENT_TABLE} is not the one its {MANIFEST} lists (an "
                               "incomplete or mixed generation); refusing to test on it")


def load_statistics(client: Any, versions: Sequence[Version], system: str, refset: str, variant: str,
                    score_fn: Any) -> list[np.ndarray]:
    """Every version's statistics matrix, checked: same shape, and they reproduce the logged BLEU."""
    with tempfile.TemporaryDirectory(prefix="harness-history-") as tmp:
        store = Artifacts(client, tmp)
        mats = []
        for v in versions:
            where = f"version {v.label} (run {v.run_id})"
            X = segment_matrix(store.segments(v.parent_id), system, v.version, refset, variant, where)
            if mats and X.shape != mats[0].shape:
                raise HistoryError(f"{system} version {v.label} cannot be compared with version "
                                   f"{versions[0].label}: number of segments differs: {mats[0].shape[0]} vs "
                                   f"{X.shape[0]} (or statistics columns {mats[0].shape[1]} vs {X.shape[1]})")
            again = float(np.asarray(score_fn(X.sum(axis=0))))
            if not math.isclose(again, v.bleu, rel_tol=0.0, abs_tol=1e-6):
                raise HistoryError(f"{where}: the stored segment statistics give BLEU {again:.6f}, the run logged "
                                   f"{v.bleu:.6f}; refusing to test on inconsistent statistics")
            mats.append(X)
    return mats


def best_before(versions: Sequence[Version], i: int) -> int:
    """Index of the best version before ``i`` (highest BLEU; ties: the earliest)."""
    return max(range(i), key=lambda j: (versions[j].bleu, -j))


def fill_deltas(versions: Sequence[Version]) -> None:
    """BLEU differences to the previous and to the best earlier version (what needs no test)."""
    for i in range(1, len(versions)):
        v, best = versions[i], versions[best_before(versions, i)]
        v.delta_prev = v.bleu - versions[i - 1].bleu
        v.best_before, v.delta_best = best.version, v.bleu - best.bleu


def paired_tests(versions: list[Version], mats: Sequence[np.ndarray], score_fn: Any, test: str,
                 n_samples: int | None, seed: int | None, alpha: float) -> tuple[str, int]:
    """Fill, for every version after the first, the paired test against the previous version and against the best
    earlier one (one shared set of resamples for all pairs). Returns the test's name and number of samples."""
    from .core.significance import DEFAULT_SAMPLES, TEST_NAMES, compare

    n = n_samples if n_samples is not None else DEFAULT_SAMPLES[test]
    if len(versions) < 2:
        return TEST_NAMES[test], n
    pairs: list[tuple[int, int]] = []
    best_of: list[int] = []
    for i in range(1, len(versions)):
        best = best_before(versions, i)
        best_of.append(best)
        pairs.extend([(i - 1, i), (best, i)])
    systems = [(f"v{k}", X) for k, X in enumerate(mats)]
    comps = compare(systems, score_fn, test=test, pairs=pairs, n_samples=n, seed=seed)
    for i in range(1, len(versions)):
        prev, best = comps[2 * (i - 1)], comps[2 * (i - 1) + 1]
        v = versions[i]
        v.delta_prev, v.p_prev = prev.delta, prev.p_value
        v.best_before = versions[best_of[i - 1]].version
        v.delta_best, v.p_best = best.delta, best.p_value
        v.regression_vs_previous = prev.delta < 0 and prev.p_value < alpha
        v.regression_vs_best = best.delta < 0 and best.p_value < alpha
    return TEST_NAMES[test], n


# ----------------------------------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------------------------------


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def rows(versions: Sequence[Version]) -> list[dict[str, Any]]:
    return [{
        "version": v.version, "bleu": v.bleu, "ci_low": v.ci_low, "ci_high": v.ci_high,
        "delta_prev": v.delta_prev, "p_prev": v.p_prev, "best_before": v.best_before, "delta_best": v.delta_best,
        "p_best": v.p_best, "regression": v.regression, "regression_vs_previous": v.regression_vs_previous,
        "regression_vs_best": v.regression_vs_best, "run_id": v.run_id, "parent_run_id": v.parent_id,
        "start_time": _iso(v.start_time), "n_runs": v.n_runs,
    } for v in versions]


def _num(x: float | None, fmt: str, signed: bool = False) -> str:
    if x is None:
        return "-"
    return format(x, ("+" if signed else "") + fmt)


def _p(p: float | None, alpha: float) -> str:
    return "-" if p is None else f"{p:.4f}" + ("*" if p < alpha else " ")


def format_text(info: dict[str, Any], versions: Sequence[Version]) -> str:
    alpha = info["alpha"]
    head = [f"{info['system']}: BLEU by version (experiment {info['experiment']}, dataset {info['dataset']}, "
            f"refset {info['refset']}, variant {info['variant']})",
            f"signature: {info['signature']}",
            (f"paired tests: none ({info['no_tests']})" if info.get("no_tests") else
             f"paired tests: {info['test']} with {info['n_samples']} samples, seed {info['seed']}; "
             f"* = p < {alpha:g}; CI = the job's bootstrap interval"), ""]
    table = [["version", "BLEU", "CI", "delta", "p(prev)", "best", "d(best)", "p(best)", "run", "scored (UTC)", ""]]
    for v in versions:
        ci = "-" if v.ci_low is None or v.ci_high is None else f"{v.ci_low:.2f}-{v.ci_high:.2f}"
        i = versions.index(v)
        note = []
        if v.regression_vs_previous:
            note.append(f"worse than {versions[i - 1].label}")
        if v.regression_vs_best and v.best_before != versions[i - 1].version:
            note.append(f"worse than best {v.best_before or '(none)'}")
        table.append([v.label, f"{v.bleu:.2f}", ci, _num(v.delta_prev, ".2f", True), _p(v.p_prev, alpha),
                      "-" if v.best_before is None else (v.best_before or "(none)"), _num(v.delta_best, ".2f", True),
                      _p(v.p_best, alpha), v.run_id[:8], _iso(v.start_time).replace("T", " ")[:16],
                      ("REGRESSION: " + ", ".join(note)) if note else ""])
    widths = [max(len(r[c]) for r in table) for c in range(len(table[0]))]
    right = {1, 2, 3, 4, 6, 7}
    lines = ["  ".join((cell.rjust(w) if c in right else cell.ljust(w)) for c, (cell, w) in
                       enumerate(zip(r, widths))).rstrip() for r in table]
    if len(versions) < 2:
        lines.append("(one version: nothing to compare yet)")
    return "\n".join(head + lines) + "\n"


def format_tsv(versions: Sequence[Version]) -> str:
    data = rows(versions)
    keys = list(data[0]) if data else ["version"]
    out = ["\t".join(keys)]
    for row in data:
        out.append("\t".join("" if row[k] is None else (str(row[k]).lower() if isinstance(row[k], bool)
                                                          else repr(row[k]) if isinstance(row[k], float)
                                                          else str(row[k])) for k in keys))
    return "\n".join(out) + "\n"


def plot(path: Path, info: dict[str, Any], versions: Sequence[Version]) -> Path:
    """Line chart of BLEU over versions with the confidence band; significant regressions vs the previous version
    (p < alpha, BLEU lower) in red."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.arange(len(versions))
    y = np.array([v.bleu for v in versions])
    lo = np.array([np.nan if v.ci_low is None else v.ci_low for v in versions])
    hi = np.array([np.nan if v.ci_high is None else v.ci_high for v in versions])
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(versions) + 3), 4.0))
    if np.isfinite(lo).any():
        ax.fill_between(x, lo, hi, color="tab:blue", alpha=0.2, linewidth=0, label="confidence interval")
    ax.plot(x, y, "-o", color="tab:blue", label="BLEU")
    bad = [i for i, v in enumerate(versions) if v.regression_vs_previous]
    if bad:
        ax.plot(x[bad], y[bad], "o", color="red", markersize=10,
                label=f"significant regression vs previous (p < {info['alpha']:g})")
        for i in bad:
            ax.annotate(f"{versions[i].delta_prev:+.2f}", (x[i], y[i]), textcoords="offset points",
                        xytext=(0, -16), ha="center", color="red", fontsize=8)
    ax.set_xticks(x, [v.label for v in versions])
    ax.set_xlabel("version")
    ax.set_ylabel(f"BLEU ({info['variant']})")
    ax.set_title(f"{info['system']}: BLEU by version ({info['refset']})", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    import io

    from .storage.files import atomic_write

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=200)
    plt.close(fig)
    return atomic_write(path, buffer.getvalue())


# ----------------------------------------------------------------------------------------------------------------
# The command
# ----------------------------------------------------------------------------------------------------------------


class _Parser(OneLineParser):
    hint = " (see --help)"


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG, description="One system's BLEU across its versions, from the MLflow runs of harness jobs, with "
        "paired tests between versions on the stored per-segment statistics.",
        epilog="Exit status: 0 ok, 1 regression (--fail-on-regression), 2 nothing can be answered.")
    p.add_argument("--system", required=True, metavar="NAME", help="the system (MLflow tag system)")
    p.add_argument("--experiment", default="demo", help="MLflow experiment (harness experiment_name; default demo)")
    p.add_argument("--tracking-uri", default=None, metavar="URI",
                   help="MLflow tracking URI (default: sqlite:///<abs>/RUNS_DIR/mlflow.db, like harness)")
    p.add_argument("--runs-dir", default="runs", help="where the default local store lives (default runs)")
    p.add_argument("--refset", default=None, help="reference set, e.g. ref-C+ref-D (default: the only one found)")
    p.add_argument("--variant", default="sacrebleu", help="BLEU variant (default sacrebleu)")
    p.add_argument("--dataset", default=None, help="only runs on this dataset (MLflow tag dataset)")
    p.add_argument("--up-to", default=None, metavar="VERSION", help="the history up to and including VERSION")
    p.add_argument("--test", choices=["bs", "ar"], default="bs",
                   help="paired bootstrap (bs, default) or approximate randomization (ar)")
    p.add_argument("--n-samples", type=int, default=None, metavar="N",
                   help="resamples (default: 1000 for bs, 10000 for ar)")
    p.add_argument("--seed", type=int, default=12345, help="seed of the resampling (default 12345)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--format", choices=["text", "json", "tsv"], default=None,
                   help="output format (default text; with --fail-on-regression nothing unless given)")
    p.add_argument("--plot", default=None, metavar="PATH.png", help="write a line chart of BLEU over versions")
    p.add_argument("--compare", nargs="?", const="", default=None, metavar="PAGE.html",
                   help="also write the comparison page of the last two versions (as harness-compare: where BLEU "
                        "moved), from the dataset folder they were scored in; default compare-A-vs-B.html here")
    p.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1 when the newest version is significantly worse than the previous or the best "
                        "earlier one (quiet otherwise)")
    return p


def history(args: argparse.Namespace) -> tuple[dict[str, Any], list[Version]]:
    """Collect, check and test: the header info and the versions, in order."""
    from .core.bleu import score_fn
    from .core.options import make_options
    from .core.profiles import get_profile
    from .core.signature import parse_signature
    from .core.significance import DEFAULT_SAMPLES, TEST_NAMES
    from .errors import ConfigError

    uri = args.tracking_uri or default_tracking_uri(args.runs_dir)
    client = open_client(uri)
    exp = experiment_id(client, args.experiment)
    quoted = _quote(args.system)
    runs = all_runs(client, exp, f"tags.system = {quoted}" if quoted else "")
    if not [r for r in runs if r.data.tags.get("system") == args.system]:
        runs = all_runs(client, exp)  # nothing found: everything, to list the systems there are
    else:
        parents = {r.data.tags.get("mlflow.parentRunId") for r in runs} - {None}
        have = {r.info.run_id for r in runs}
        runs = runs + [client.get_run(pid) for pid in sorted(parents - have)]
    versions, refset = select_versions(runs, args.system, args.refset, args.variant, args.dataset)
    versions = cut_versions(versions, args.up_to)
    check_comparable(versions, args.system)
    signature = versions[0].signature
    try:
        opts = make_options(**parse_signature(signature)["options"])
    except (ConfigError, ValueError, KeyError) as exc:
        raise HistoryError(f"cannot read the signature {signature!r} ({exc})") from None
    info = {"system": args.system, "experiment": args.experiment, "tracking_uri": uri,
            "dataset": ",".join(sorted({v.dataset for v in versions})), "refset": refset, "variant": args.variant,
            "signature": signature, "alpha": args.alpha, "seed": args.seed, "test": TEST_NAMES[args.test],
            "n_samples": args.n_samples or DEFAULT_SAMPLES[args.test]}
    fill_deltas(versions)
    if len(versions) >= 2 and not get_profile(opts.profile).additive:
        info["no_tests"] = (f"variant {args.variant!r} (profile {opts.profile}) is not a function of summed segment "
                            "statistics: no paired tests between versions")
    elif len(versions) >= 2:
        fn = score_fn(opts)
        mats = load_statistics(client, versions, args.system, refset, args.variant, fn)
        info["test"], info["n_samples"] = paired_tests(versions, mats, fn, args.test, args.n_samples, args.seed,
                                                       args.alpha)
    return info, versions


def compare_last(args: argparse.Namespace, info: dict[str, Any], versions: Sequence[Version]) -> Path:
    """``--compare``: where BLEU moved between the last two versions, as ``harness-compare --dataset`` would show
    it, from the dataset folder both were scored in; refused unless their texts and references there are the
    ones MLflow recorded (same SHA-256)."""
    from .core.options import make_options
    from .core.signature import parse_signature
    from .job.comparison import DEFAULT_SAMPLES, ComparisonRequest, compare, page_contents, page_name
    from .job.dataset import read_layout, refset_name
    from .job.inputs import pair_inputs
    from .sinks.pages import write_page

    if len(versions) < 2:
        raise HistoryError(f"--compare needs two versions of {info['system']}; found {len(versions)}")
    a, b = versions[-2], versions[-1]
    roots = {a.dataset_root, b.dataset_root}
    if None in roots or len(roots) != 1:
        found = ", ".join(f"{v.label}: {v.dataset_root or 'no dataset folder recorded'}" for v in (a, b))
        raise HistoryError(f"--compare reads the texts from the dataset folder both versions were scored in ({found})")
    root = Path(str(a.dataset_root))
    stems = [info["system"] if not v.version else f"{info['system']}@{v.version}" for v in (a, b)]
    pair = pair_inputs(read_layout(root), stems, list(a.refs_used), None)
    for v, text in ((a, pair.text_a), (b, pair.text_b)):
        if text.sha256 != v.system_sha256:
            raise HistoryError(f"{text.path} changed since version {v.label} was scored (SHA-256 {text.sha256[:12]} "
                               f"now, {v.system_sha256[:12]} in run {v.run_id}): the comparison would not be of the "
                               "scored text")
    for ref in pair.refs:
        recorded = a.ref_hashes.get(f"sha256.ref.{ref.name}")
        if recorded != ref.sha256:
            raise HistoryError(f"{ref.path} changed since the versions were scored (SHA-256 {ref.sha256[:12]} now, "
                               f"{str(recorded)[:12]} recorded)")
    opts = make_options(**parse_signature(info["signature"])["options"])
    result = compare(ComparisonRequest.of_files(
        pair.text_a, pair.text_b, pair.refs, opts, labels=(stems[0], stems[1]), source=pair.source, human=pair.human,
        human_name=pair.human_title, seed=args.seed, n_samples=args.n_samples or DEFAULT_SAMPLES,
        dataset=pair.dataset, refset=refset_name([r.name for r in pair.refs]), variant=info["variant"]))
    page = Path(args.compare) if args.compare else Path(page_name(stems[0], stems[1]))
    return write_page(page, *page_contents(result, page))["page"]


def gate(info: dict[str, Any], versions: Sequence[Version]) -> str | None:
    """The regression message for the newest version, or None when it is not significantly worse."""
    if info.get("no_tests"):
        raise HistoryError(f"{info['no_tests']}: the regression gate cannot test")
    if len(versions) < 2:
        raise HistoryError(f"only one version of {info['system']} ({versions[0].label}) for refset "
                           f"{info['refset']}, variant {info['variant']}: the regression gate has nothing to compare")
    new, prev = versions[-1], versions[-2]
    if not new.regression:
        return None
    against = []
    if new.regression_vs_previous:
        against.append(f"the previous version {prev.label} ({prev.bleu:.2f}; delta {new.delta_prev:+.2f}, "
                       f"p = {new.p_prev:.4f})")
    if new.regression_vs_best and new.best_before != prev.version:
        best = next(v for v in versions if v.version == new.best_before)
        against.append(f"the best earlier version {best.label} ({best.bleu:.2f}; delta {new.delta_best:+.2f}, "
                       f"p = {new.p_best:.4f})")
    return (f"regression: {info['system']} version {new.label} (BLEU {new.bleu:.2f}) is significantly worse than "
            f"{' and '.join(against)} [{info['test']}, {info['n_samples']} samples, alpha {info['alpha']:g}, "
            f"{info['refset']}, {info['variant']}]")


def run(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.n_samples is not None and args.n_samples < 1:
        raise HistoryError("--n-samples must be a positive integer")
    if not 0.0 < args.alpha < 1.0:
        raise HistoryError("--alpha must be between 0 and 1")
    if args.plot is not None and not args.plot.lower().endswith(".png"):
        raise HistoryError(f"--plot {args.plot}: expected a .png path")
    if args.compare and not args.compare.lower().endswith((".html", ".htm")):
        raise HistoryError(f"--compare {args.compare}: expected an .html path")
    info, versions = history(args)
    fmt = args.format or (None if args.fail_on_regression else "text")
    if fmt == "text":
        sys.stdout.write(format_text(info, versions))
    elif fmt == "json":
        sys.stdout.write(json.dumps({**info, "versions": rows(versions)}, indent=1) + "\n")
    elif fmt == "tsv":
        sys.stdout.write(format_tsv(versions))
    if args.plot is not None:
        plot(Path(args.plot), info, versions)
    if args.compare is not None:
        page = compare_last(args, info, versions)
        print(f"comparison of the last two versions: {page}", file=sys.stderr if fmt == "json" else sys.stdout)
    if args.fail_on_regression:
        message = gate(info, versions)
        if message is not None:
            print(f"{PROG}: {message}", file=sys.stderr)
            return 1
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point (``harness-history``): one line on stderr and a non-zero status on any error."""
    try:
        status = run(argv)
    except HarnessError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        status = 2
    except KeyboardInterrupt:
        status = 130
    except Exception as exc:  # MLflow / network / file errors: one line, never a traceback
        text = str(exc).strip().splitlines()
        print(f"{PROG}: error: {type(exc).__name__}: {text[0] if text else ''}", file=sys.stderr)
        status = 2
    sys.stdout.flush()
    raise SystemExit(status)


def console() -> None:
    """The ``harness-history`` command: :func:`main`, then the process ends
    (:func:`~harness.arguments.console_command`)."""
    console_command(main)


if __name__ == "__main__":  # pragma: no cover
    console()
