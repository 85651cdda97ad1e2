"""Screenshots of the MLflow UI for a harness tracking store, taken with headless Chromium.

    python tools/mlflow_screenshots.py [--backend-store-uri sqlite:///runs/mlflow.db] [--out runs/screenshots]

Starts ``mlflow server`` on 127.0.0.1 (a free port) against the store, waits until it answers, finds the
experiments, runs and artifacts through MLflow's REST API, and takes one PNG per page and experiment with
``chromium --headless --screenshot``; the server is stopped in every case (also on an error, Ctrl-C or SIGTERM).

Pages (``--pages``, all by default), written to ``OUT/<experiment>/``, chosen from the experiment's newest job:

- ``01-experiment.png``   the experiment as a first visitor opens it (``#/experiments/<id>``, no UI state);
- ``02-runs.png``         the runs table in MLflow's "Model training" mode (``?workflowType=machine_learning``),
                          as it opens: parent runs, nested runs collapsed, MLflow's default columns;
- ``03-nested-runs.png``  the nested runs of the full reference set and the first variant, sorted by BLEU (which
                          lists nested runs flat), with the columns bleu, ci_low, ci_high, human.<kind>, system,
                          system_version, Dataset, refset, variant;
- ``04-run.png``          one nested run's page (the newest version of a versioned system, else the best BLEU);
- ``05-bleu-over-versions.png``  the chart view of that system's versions: bleu and human.<kind> against the
                          metric step (= the version); skipped when no system has two numeric versions;
- ``06-table-artifact.png``  the parent run's artifact browser previewing ``tables/system_scores.json``.

Column and chart choices are not URL parameters in MLflow 3; the tool passes them as a *shared view*
(experiment tag ``mlflow.sharedViewState.<key>``, opened with ``?viewStateShareKey=<key>``, the UI's own
"share" mechanism). A SQLite store is therefore served from a copy (the user's file is only read); any other
store gets the tags for the duration of the run and loses them afterwards. ``index.md`` in ``OUT`` lists
every file with its URL. Only the standard library is used (urllib for the REST API). Written against
MLflow 3.17's UI; other versions may lay pages out differently (look at the PNGs).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

PAGES = ("experiment", "runs", "nested", "run", "versions", "artifacts")
FILES = {"experiment": "01-experiment.png", "runs": "02-runs.png", "nested": "03-nested-runs.png",
         "run": "04-run.png", "versions": "05-bleu-over-versions.png", "artifacts": "06-table-artifact.png"}
SHARE_PREFIX = "mlflow.sharedViewState."  # the UI's key for a shared view (mlflow/server/js, 3.x)
ML_MODE = "workflowType=machine_learning"  # MLflow 3.x: the UI's GenAI/"Model training" switch, from the URL
# MLflow 3.17's UI opens its assistant panel (a quarter of the width) on the first visit when the page's hostname
# is localhost or 127.0.0.1. Chromium resolves every *.localhost name to the loopback itself, so this name reaches
# the same server (allowed by --allowed-hosts/--cors-allowed-origins) without counting as "local" for the panel.
# Only page 01, the first visit as a user makes it, goes through 127.0.0.1.
ALIAS = "mlflow-ui.localhost"


class ToolError(Exception):
    """A failure the user can act on: printed as one line, exit status 1."""


def say(message: str) -> None:
    print(message, flush=True)


# ---------------------------------------------------------------------------------------------------------------
# the server
# ---------------------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (relative to the working directory unless absolute)."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(uri[len("sqlite:///"):].split("?", 1)[0])


def copy_sqlite(src: Path, dst: Path) -> None:
    """A consistent copy of a SQLite store, WAL included, by SQLite's backup API; the source is opened
    read-only, so the user's store is never written."""
    if not src.is_file():
        raise ToolError(f"no MLflow store at {src} (run the harness first, or pass --backend-store-uri)")
    try:
        with contextlib.closing(sqlite3.connect(f"{src.resolve().as_uri()}?mode=ro", uri=True)) as a, \
                contextlib.closing(sqlite3.connect(dst)) as b:
            a.backup(b)
    except sqlite3.Error as exc:
        raise ToolError(f"cannot read the MLflow store {src}: {exc}") from None


def mlflow_executable(given: str | None) -> str:
    if given:
        return given
    beside = Path(sys.executable).parent / "mlflow"
    found = str(beside) if beside.exists() else shutil.which("mlflow")
    if not found:
        raise ToolError("no `mlflow` command found beside this Python or on PATH (pip install mlflow, or pass "
                        "--mlflow PATH)")
    return found


@dataclass
class Server:
    """``mlflow server`` on 127.0.0.1 in its own process group, stopped by that group."""

    command: list[str]
    log: Path
    url: str
    proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float) -> None:
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(self.command, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ToolError(f"mlflow server exited with status {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as resp:  # noqa: S310
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.3)
        raise ToolError(f"mlflow server did not answer {self.url}/health within {timeout:.0f} s:\n"
                        f"{self.log_tail()}")

    def log_tail(self, n: int = 15) -> str:
        try:
            lines = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return "(no server log)"
        return "\n".join("  | " + line for line in lines[-n:])

    def stop(self) -> None:
        """SIGTERM to the server's process group (uvicorn and the job consumers it starts), SIGKILL to whatever
        of the group is left after 20 s."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and group_alive(proc.pid):
            proc.poll()  # reap the leader, so that only live members keep the group
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)


def group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs (zombies, which an init that does not reap leaves behind, do
    not count); from /proc where there is one."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


# ---------------------------------------------------------------------------------------------------------------
# the REST API
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Api:
    base: str

    def call(self, method: str, path: str, body: dict[str, Any] | None = None,
             query: dict[str, str] | None = None) -> dict[str, Any]:
        url = f"{self.base}/api/2.0/mlflow/{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:  # noqa: S310
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:500]
            raise ToolError(f"MLflow REST {method} {path} answered HTTP {exc.code}: {detail}") from None
        except OSError as exc:
            raise ToolError(f"MLflow REST {method} {path} failed: {exc}") from None

    def experiments(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        token = None
        while True:
            page = self.call("POST", "experiments/search", {"max_results": 1000, "view_type": "ACTIVE_ONLY",
                                                            **({"page_token": token} if token else {})})
            out.extend(page.get("experiments", []))
            token = page.get("next_page_token")
            if not token:
                return out

    def runs(self, exp_id: str, filter_string: str = "", order_by: Sequence[str] = ()) -> list[Run]:
        out: list[Run] = []
        token = None
        while True:
            body: dict[str, Any] = {"experiment_ids": [exp_id], "filter": filter_string, "max_results": 1000,
                                    "order_by": list(order_by)}
            if token:
                body["page_token"] = token
            page = self.call("POST", "runs/search", body)
            out.extend(Run.from_json(r) for r in page.get("runs", []))
            token = page.get("next_page_token")
            if not token:
                return out

    def artifacts(self, run_id: str, path: str = "") -> list[str]:
        page = self.call("GET", "artifacts/list", query={"run_id": run_id, **({"path": path} if path else {})})
        return [f["path"] for f in page.get("files", [])]

    def set_experiment_tag(self, exp_id: str, key: str, value: str) -> None:
        self.call("POST", "experiments/set-experiment-tag", {"experiment_id": exp_id, "key": key, "value": value})

    def delete_experiment_tag(self, exp_id: str, key: str) -> None:
        self.call("POST", "experiments/delete-experiment-tag", {"experiment_id": exp_id, "key": key})


@dataclass(frozen=True)
class Run:
    run_id: str
    name: str
    start_time: int
    metrics: dict[str, float]
    params: dict[str, str]
    tags: dict[str, str]

    @classmethod
    def from_json(cls, run: dict[str, Any]) -> Run:
        info, data = run["info"], run.get("data", {})
        metrics = data.get("metrics", [])
        return cls(info["run_id"], info.get("run_name", ""), int(info.get("start_time", 0)),
                   {m["key"]: m["value"] for m in metrics},
                   {p["key"]: p["value"] for p in data.get("params", [])},
                   {t["key"]: t["value"] for t in data.get("tags", [])})

    @property
    def parent(self) -> str | None:
        return self.tags.get("mlflow.parentRunId")


# ---------------------------------------------------------------------------------------------------------------
# what to show
# ---------------------------------------------------------------------------------------------------------------


def quote(value: str) -> str:
    """A string literal of MLflow's search syntax."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def column(kind: str, key: str) -> str:
    """A runs-table column key as the UI spells it (``metrics.`bleu```)."""
    return f"{kind}.`{key}`"


def json_list(text: str | None) -> list[str]:
    try:
        value = json.loads(text or "[]")
    except json.JSONDecodeError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


@dataclass
class Plan:
    """What the screenshots of one experiment show, chosen from its newest harness job."""

    exp_id: str
    name: str
    parent: Run
    children: list[Run]
    refset: str
    variant: str
    human: list[str]
    versioned_system: str | None
    run: Run
    table_artifact: str | None

    @property
    def cell_filter(self) -> str:
        return f"tags.refset = {quote(self.refset)} and tags.variant = {quote(self.variant)}"


def plan_experiment(api: Api, exp: dict[str, Any]) -> Plan | None:
    exp_id, name = str(exp["experiment_id"]), exp["name"]
    parents = [r for r in api.runs(exp_id, "tags.`harness.job_key` != ''", ["attributes.start_time DESC"])
               if r.parent is None]
    if not parents:
        return None
    parent = parents[0]
    children = api.runs(exp_id, f"tags.mlflow.parentRunId = {quote(parent.run_id)}")
    if not children:
        return None
    refsets = list(dict.fromkeys(c.tags.get("refset", "") for c in children))
    # the parent's correlation metrics use the first variant against the full reference set (all references)
    refset = max(refsets, key=lambda r: (r.count("+"), -refsets.index(r)))
    variants = [v for v in json_list(parent.params.get("variants")) if any(c.tags.get("variant") == v
                                                                            for c in children)]
    variant = variants[0] if variants else children[0].tags.get("variant", "")
    cells = [c for c in children if c.tags.get("refset") == refset and c.tags.get("variant") == variant]
    human = sorted({k for c in cells for k in c.metrics if k.startswith("human.")})
    versions: dict[str, set[int]] = {}
    for c in cells:
        v = c.tags.get("system_version", "")
        if v.lstrip("+-").isdigit():
            versions.setdefault(c.tags.get("system", ""), set()).add(int(v))
    multi = sorted((s for s, vs in versions.items() if len(vs) >= 2), key=lambda s: (-len(versions[s]), s))
    versioned = multi[0] if multi else None
    if versioned is not None:
        mine = [c for c in cells if c.tags.get("system") == versioned]
        run = max(mine, key=lambda c: int(c.tags["system_version"]))
    else:
        run = max(cells or children, key=lambda c: c.metrics.get("bleu", float("-inf")))
    tables = [p for p in api.artifacts(parent.run_id, "tables") if p.endswith((".json", ".csv"))]
    table = next((p for p in tables if p.rsplit("/", 1)[-1].startswith("system_scores")), tables[0] if tables else None)
    return Plan(exp_id, name, parent, children, refset, variant, human, versioned, run, table)


def shared_view(search_filter: str, order_by: str | None, columns: Sequence[str], charts: Sequence[dict[str, Any]] = (),
                ) -> dict[str, Any]:
    """A shared view of the runs page: search facets plus the UI state the UI restores from it."""
    state: dict[str, Any] = {"searchFilter": search_filter, "orderByAsc": False, "selectedColumns": list(columns),
                             "runsHiddenMode": "SHOW_ALL", "useGroupedValuesInCharts": False,
                             "hideEmptyCharts": True}
    if order_by:
        state["orderByKey"] = order_by
    if charts:
        state["compareRunSections"] = [{"uuid": "bleu", "name": "BLEU", "display": True, "isReordered": False,
                                        "columns": 2, "cardHeight": 520}]
        state["compareRunCharts"] = list(charts)
    return state


def line_chart(metric: str) -> dict[str, Any]:
    return {"uuid": f"line-{metric}", "type": "LINE", "metricSectionId": "bleu", "deleted": False,
            "isGenerated": False, "runsCountToCompare": 100, "metricKey": metric, "selectedMetricKeys": [metric],
            "displayName": f"{metric} over versions (step)", "xAxisKey": "step", "selectedXAxisMetricKey": "",
            "xAxisScaleType": "linear", "scaleType": "linear", "lineSmoothness": 0, "displayPoints": True,
            "useGlobalXaxisKey": False, "useGlobalLineSmoothing": False, "yAxisKey": "metric",
            "yAxisExpressions": [], "ignoreOutliers": False,
            "range": {"xMin": None, "xMax": None, "yMin": None, "yMax": None}}


def bar_chart(metric: str) -> dict[str, Any]:
    return {"uuid": f"bar-{metric}", "type": "BAR", "metricSectionId": "bleu", "deleted": False,
            "isGenerated": False, "runsCountToCompare": 100, "metricKey": metric, "displayName": metric}


@dataclass(frozen=True)
class Shot:
    page: str
    url: str
    what: str


def shots(first: str, base: str, plan: Plan, share: dict[str, str], pages: Sequence[str]) -> list[Shot]:
    """The pages to take, with the URL of each (``first``: the server as a user opens it, for page 01; ``base``:
    the server under :data:`ALIAS`; ``share``: page -> viewStateShareKey)."""
    exp = f"{base}/#/experiments/{plan.exp_id}"
    out = []
    for page in pages:
        if page == "experiment":
            out.append(Shot(page, f"{first}/#/experiments/{plan.exp_id}",
                            "the experiment as a first visitor opens it (no UI state)"))
        elif page == "runs":
            out.append(Shot(page, f"{exp}/runs?{ML_MODE}", "runs table, 'Model training' mode"))
        elif page == "nested" and page in share:
            out.append(Shot(page, f"{exp}/runs?{ML_MODE}&viewStateShareKey={share[page]}",
                            f"nested runs where {plan.cell_filter}, by BLEU, with metric and tag columns"))
        elif page == "run":
            out.append(Shot(page, f"{exp}/runs/{plan.run.run_id}?{ML_MODE}", f"nested run {plan.run.name!r}"))
        elif page == "versions" and page in share:
            out.append(Shot(page, f"{exp}/runs?{ML_MODE}&viewStateShareKey={share[page]}&compareRunsMode=CHART",
                            f"BLEU against the step (= version) of {plan.versioned_system!r}, {plan.refset}, "
                            f"{plan.variant}"))
        elif page == "artifacts" and plan.table_artifact:
            path = urllib.parse.quote(plan.table_artifact)
            out.append(Shot(page, f"{exp}/runs/{plan.parent.run_id}/artifacts/{path}?{ML_MODE}",
                            f"parent run {plan.parent.name!r}, artifact {plan.table_artifact}"))
    return out


def views(plan: Plan, pages: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The shared views the pages need: page -> view state."""
    # the columns in this order and these widths (px): what fits beside the pinned "Created" column at 1600 px
    widths = {column("attributes", "Run Name"): 290, column("metrics", "bleu"): 110,
              column("metrics", "ci_low"): 95, column("metrics", "ci_high"): 95,
              **{column("metrics", h): 120 for h in plan.human},
              column("tags", "system"): 120, column("tags", "system_version"): 125,
              column("attributes", "Dataset"): 170, column("tags", "refset"): 120, column("tags", "variant"): 100}
    cols = [c for c in widths if c != column("attributes", "Run Name")]
    # a sort key other than the start time makes the UI list nested runs flat (not under a collapsed parent)
    out = {}
    if "nested" in pages:
        state = shared_view(plan.cell_filter, column("metrics", "bleu"), cols)
        out["nested"] = {**state, "columnOrder": list(widths), "columnWidths": widths}
    if "versions" in pages and plan.versioned_system is not None:
        flt = f"tags.system = {quote(plan.versioned_system)} and {plan.cell_filter}"
        out["versions"] = shared_view(flt, column("metrics", "bleu"), cols,
                                      [line_chart("bleu"), *(line_chart(h) for h in plan.human)])
    return out


# ---------------------------------------------------------------------------------------------------------------
# the browser
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Browser:
    chromium: str
    profile: Path
    size: tuple[int, int]
    budget_ms: int
    timeout: float

    def screenshot(self, url: str, out: Path) -> None:
        out.unlink(missing_ok=True)
        cmd = [self.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               f"--user-data-dir={self.profile}", f"--window-size={self.size[0]},{self.size[1]}",
               f"--virtual-time-budget={self.budget_ms}", f"--screenshot={out}", url]
        try:
            done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  timeout=self.timeout, start_new_session=True)
        except subprocess.TimeoutExpired:
            raise ToolError(f"chromium took longer than {self.timeout:.0f} s on {url}") from None
        if done.returncode != 0 or not out.is_file():
            tail = "\n".join("  | " + line for line in done.stdout.decode(errors="replace").splitlines()[-10:])
            raise ToolError(f"chromium exited with status {done.returncode} and wrote no {out.name}:\n{tail}")
        width, height = png_size(out)
        if (width, height) != self.size:
            raise ToolError(f"{out} is {width}x{height}, not the {self.size[0]}x{self.size[1]} asked for")


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise ToolError(f"{path} is not a PNG file")
    width, height = struct.unpack(">II", head[16:24])
    return int(width), int(height)


def find_chromium(given: str) -> str:
    path = shutil.which(given) if os.sep not in given else (given if os.access(given, os.X_OK) else None)
    if path is None:
        raise ToolError(f"chromium not found ({given}): install it with `apt-get install chromium` "
                        "(Debian/Ubuntu), or pass --chromium PATH")
    return path


# ---------------------------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------------------------


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "experiment"


def size_arg(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*[,x]\s*(\d+)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected WIDTH,HEIGHT, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def pages_arg(text: str) -> list[str]:
    pages = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in pages if p not in PAGES]
    if bad or not pages:
        raise argparse.ArgumentTypeError(f"unknown page(s) {', '.join(bad) or '(none)'}; choose from "
                                         f"{', '.join(PAGES)}")
    return pages


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mlflow_screenshots.py", description=__doc__.split("\n\n")[0],
                                epilog="\n\n".join(__doc__.split("\n\n")[2:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend-store-uri", default="sqlite:///runs/mlflow.db",
                   help="the tracking store the harness wrote (default: %(default)s); a SQLite store is served "
                        "from a copy")
    p.add_argument("--server", default=None, metavar="URL",
                   help="use this running tracking server instead of starting one (nothing is started or "
                        "stopped; the shared views are set as experiment tags and removed afterwards)")
    p.add_argument("--artifacts-destination", default=None,
                   help="artifact root of the server (default: mlartifacts beside a SQLite store, i.e. "
                        "runs/mlartifacts, else ./mlartifacts); the harness's experiments name their own "
                        "absolute artifact location, which the server reads directly")
    p.add_argument("--out", type=Path, default=Path("runs/screenshots"), help="output folder (default: %(default)s)")
    p.add_argument("--experiment", action="append", default=None, metavar="NAME",
                   help="only this experiment (repeatable; default: every experiment holding a harness job)")
    p.add_argument("--pages", type=pages_arg, default=list(PAGES),
                   help=f"comma-separated subset of {','.join(PAGES)} (default: all)")
    p.add_argument("--window-size", type=size_arg, default=(1600, 1000), help="WIDTH,HEIGHT (default: 1600,1000)")
    p.add_argument("--virtual-time-budget", type=int, default=30000, metavar="MS",
                   help="Chromium's virtual time per page, for the React app to fetch and render "
                        "(default: %(default)s)")
    p.add_argument("--chromium", default="/usr/bin/chromium", help="Chromium executable (default: %(default)s)")
    p.add_argument("--mlflow", default=None, help="mlflow executable (default: beside this Python, else on PATH)")
    p.add_argument("--server-timeout", type=float, default=120.0, metavar="S",
                   help="seconds to wait for the server to answer /health (default: %(default)s)")
    return p


@contextlib.contextmanager
def sigterm_as_exit() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C, so the server is stopped by the ``finally`` below."""
    def _raise(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(args: argparse.Namespace) -> int:
    chromium = find_chromium(args.chromium)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mlflow-screenshots-") as tmp_name:
        tmp = Path(tmp_name)
        server: Server | None = None
        if args.server:
            first = alias = args.server.rstrip("/")
            store, copied = args.server, False
            check_health(first)
            say(f"using the running tracking server {first}")
        else:
            mlflow = mlflow_executable(args.mlflow)
            db = sqlite_path(args.backend_store_uri)
            if db is not None:
                copy_sqlite(db, tmp / "mlflow.db")
                uri, copied = f"sqlite:///{tmp / 'mlflow.db'}", True
                default_dest = db.resolve().parent / "mlartifacts"
            else:
                uri, copied, default_dest = args.backend_store_uri, False, Path("mlartifacts").resolve()
            store, dest = args.backend_store_uri, args.artifacts_destination or str(default_dest)
            port = free_port()
            server = Server([mlflow, "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
                             "--backend-store-uri", uri, "--artifacts-destination", dest,
                             "--allowed-hosts", f"127.0.0.1:{port},localhost:{port},{ALIAS}:{port}",
                             "--cors-allowed-origins", f"http://{ALIAS}:{port}"],
                            tmp / "server.log", f"http://127.0.0.1:{port}")
            first, alias = server.url, f"http://{ALIAS}:{port}"
        api = Api(first)
        tagged: list[tuple[str, str]] = []
        written: list[tuple[Path, Shot]] = []
        try:
            if server is not None:
                say(f"starting mlflow server on {server.url} (store: {store}"
                    f"{', served from a copy' if copied else ''}; artifacts: {dest})")
                server.start(args.server_timeout)
                say(f"server ready after {time.monotonic() - t0:.1f} s")
            browser = Browser(chromium, tmp / "profile", args.window_size, args.virtual_time_budget,
                              timeout=60 + args.virtual_time_budget / 1000 * 3)
            for plan in plans(api, store, args.experiment):
                say(f"experiment {plan.name!r} (id {plan.exp_id}): job {plan.parent.name!r}, "
                    f"{len(plan.children)} nested runs; refset {plan.refset}, variant {plan.variant}"
                    + (f", versions of {plan.versioned_system}" if plan.versioned_system else ", no versions"))
                share = {}
                for page, state in views(plan, args.pages).items():
                    key = f"harness-screenshots-{page}"
                    tagged.append((plan.exp_id, SHARE_PREFIX + key))
                    api.set_experiment_tag(plan.exp_id, SHARE_PREFIX + key, json.dumps(state))
                    share[page] = key
                todo = shots(first, alias, plan, share, args.pages)
                for page in args.pages:
                    if page not in {s.page for s in todo}:
                        say(f"  skip {FILES[page]}: "
                            + ("no system with two numeric versions" if page == "versions" else
                               "no table artifact (tables/*.json|csv)" if page == "artifacts" else "not applicable"))
                folder = args.out / slug(plan.name)
                folder.mkdir(parents=True, exist_ok=True)
                for shot in todo:
                    out = folder / FILES[shot.page]
                    t1 = time.monotonic()
                    browser.screenshot(shot.url, out)
                    say(f"  {out}  ({time.monotonic() - t1:.1f} s)  {shot.what}")
                    written.append((out, shot))
        finally:
            if not copied:  # the user's own store: take the shared views out again
                for exp_id, key in tagged:
                    with contextlib.suppress(ToolError):
                        api.delete_experiment_tag(exp_id, key)
            if server is not None:
                server.stop()
                say("mlflow server stopped")
        write_index(args.out, written)
    say(f"{len(written)} screenshot(s) in {args.out} ({time.monotonic() - t0:.0f} s); list: {args.out / 'index.md'}")
    return 0


def plans(api: Api, store: str, names: Sequence[str] | None) -> list[Plan]:
    """A plan per experiment that holds a harness job (``names``: only these, each of which must exist)."""
    experiments = api.experiments()
    if names:
        known = {e["name"] for e in experiments}
        missing = [n for n in names if n not in known]
        if missing:
            raise ToolError(f"no experiment named {', '.join(map(repr, missing))} in {store}; it has "
                            f"{', '.join(sorted(known)) or 'none'}")
        experiments = [e for e in experiments if e["name"] in names]
    found = [p for p in (plan_experiment(api, e) for e in experiments) if p is not None]
    if not found:
        raise ToolError(f"no harness job in {store} ({len(experiments)} experiment(s), none with a parent run "
                        "tagged harness.job_key and nested runs)")
    return found


def check_health(url: str) -> None:
    try:
        with urllib.request.urlopen(url + "/health", timeout=10) as resp:  # noqa: S310
            if resp.status == 200:
                return
            raise ToolError(f"tracking server {url} answered /health with HTTP {resp.status}")
    except OSError as exc:
        raise ToolError(f"tracking server {url} is unreachable ({exc})") from None


def write_index(out: Path, written: Sequence[tuple[Path, Shot]]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    lines = ["# MLflow UI screenshots", "",
             "Taken by tools/mlflow_screenshots.py on a temporary server; the ports in the URLs are gone.", "",
             "| file | shows | URL |", "|---|---|---|"]
    for path, shot in written:
        what = shot.what.replace("|", "\\|")  # run names hold "|": escaped, or the row gets more cells
        lines.append(f"| {path.relative_to(out)} | {what} | `{shot.url}` |")
    (out / "index.md").write_text("\n".join(lines) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        with sigterm_as_exit():
            return run(args)
    except ToolError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
