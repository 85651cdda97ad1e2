"""Helpers shared by the tests (importable as ``support``: ``pythonpath = ["tests"]`` in pyproject.toml).

The real data: the copies the project ships (``harness/data``) are the ones the oracle tests read, held to the
SHA-256 of every file recorded in ``tests/data/shipped_data.sha256`` (``test_the_shipped_data_is_the_recorded_data``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "harness" / "data"
DEMO = DATA / "wmt21_news_ende"
DEEN = DATA / "wmt21_news_deen_da"  # 19 systems, DA at system level only
RUEN = DATA / "wmt21_news_ruen_da"  # 10 systems, sparse segment-level DA (z and raw), aligned through seg_map.tsv
BIN = Path(sys.executable).parent
#: The environment variable naming a folder of the test session, shared by its xdist workers (made by conftest).
SHARED = "HARNESS_TEST_SHARED"
#: Every set of compiled kernels the package has, by ``module:attribute``.
KERNEL_SETS = ("harness.text.kernels:TEXT", "harness.core.correlation:KENDALL", "harness.core.mtme:KERNELS")


def kernel_set(ref: str):
    """The KernelSet at ``ref`` (``module:attribute``, one of KERNEL_SETS)."""
    module, attribute = ref.split(":")
    return getattr(importlib.import_module(module), attribute)


def read_lines(path: Path) -> list[str]:
    """Lines split on '\\n' only, as the harness reads them."""
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def write_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def make_dataset(root: Path, n: int = 30, systems: tuple[str, ...] = ("Nemo", "UEdin", "Online-W"),
                 refs: tuple[str, ...] = ("ref-C",), human: bool = False) -> Path:
    """A small dataset folder cut from the demo: the first ``n`` segments of some systems and references
    (with ``human``, the demo's MQM segment scores of those segments as ``human/seg.tsv``)."""
    for ref in refs:
        write_lines(root / "refs" / f"{ref}.txt", read_lines(DEMO / "refs" / f"{ref}.txt")[:n])
    for name in systems:
        write_lines(root / "systems" / f"{name}.txt", read_lines(DEMO / "systems" / f"{name}.txt")[:n])
    if "ref-A" in systems:  # the demo's human translation
        (root / "meta.json").write_text('{"human_systems": ["ref-A"]}\n', encoding="utf-8")
    if human:
        rows = ["system\tseg_id\tscore"]
        for line in read_lines(DEMO / "human" / "seg.tsv")[1:]:
            system, seg, score = line.split("\t")
            if system in systems and int(seg) < n:
                rows.append(line)
        write_lines(root / "human" / "seg.tsv", rows)
    return root


@contextlib.contextmanager
def shared_lock(name: str):
    """An exclusive lock held across the processes of the test session (the xdist workers)."""
    with open(Path(os.environ[SHARED]) / f"{name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def once_per_session(key: str, compute: Callable[[], T]) -> T:
    """``compute()``, or what it returned in the process of this test session that first asked for ``key``
    (pickled in the session's shared folder): an oracle's answer counted once for all the xdist workers.
    ``key`` must name everything the answer depends on. Without the shared folder: ``compute()``."""
    if SHARED not in os.environ:
        return compute()
    name = "once-" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    path = Path(os.environ[SHARED]) / f"{name}.pkl"
    with shared_lock(name):
        if path.exists():
            return pickle.loads(path.read_bytes())
        value = compute()
        path.with_suffix(".tmp").write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(path.with_suffix(".tmp"), path)
        return value


def sacrebleu_score(stats, smooth_method: str = "exp", smooth_value: float | None = None,
                    effective_order: bool = False):
    """sacrebleu's BLEUScore of statistics rows (sacrebleu's own layout, summed over the rows as its
    ``corpus_score`` does): the score ``BLEU(...).corpus_score`` gives for the texts the rows were counted from."""
    from sacrebleu.metrics.bleu import BLEU

    total = [int(x) for x in (stats.sum(0) if getattr(stats, "ndim", 1) == 2 else stats)]
    return BLEU.compute_bleu(total[2:6], total[6:], total[0], total[1], smooth_method, smooth_value, effective_order)


def executable(name: str) -> str:
    return shutil.which(name) or str(BIN / name)


def run_harness(cwd: Path, *args: str, check: bool = True, timeout: int = 600,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The ``harness`` command in ``cwd`` (a fresh working directory: ``runs/`` lands there)."""
    full_env = {**os.environ, "HYDRA_FULL_ERROR": "0", **(env or {})}
    full_env.pop("MLFLOW_TRACKING_URI", None)
    proc = subprocess.run([executable("harness"), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=full_env)
    if check and proc.returncode != 0:
        raise AssertionError(f"harness {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def exit_status(exc: SystemExit) -> int:
    """The status a process ending with ``exc`` exits with (``sys.exit(None)``: 0, a message: 1)."""
    return exc.code if isinstance(exc.code, int) else int(exc.code is not None)


def harness_here(cwd: Path, *args: str, check: bool = True,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """What :func:`run_harness` returns, the job run in this process (``harness.app.main`` with ``args`` as its
    command line, in ``cwd``, the standard streams captured): the tests of a job's outcome whose subject is not
    the process itself (a kill, a race, what a fresh process imports) skip the 1-3 s that a new process spends
    importing Hydra, pandas and MLflow. The working directory, the environment, the root logger (Hydra configures
    it) and ``sys.argv`` are restored afterwards. An exception that is not ``SystemExit`` propagates: in a
    process it would have been a traceback, which these tests refuse anyway."""
    import io
    import logging
    from contextlib import redirect_stderr, redirect_stdout

    from harness.app import main

    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    saved = (sys.argv, os.getcwd(), dict(os.environ), root.handlers[:], root.level)
    os.environ.update({"HYDRA_FULL_ERROR": "0", **(env or {})})
    os.environ.pop("MLFLOW_TRACKING_URI", None)
    sys.argv = ["harness", *args]
    status = 0
    try:
        os.chdir(cwd)
        with redirect_stdout(out), redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                status = exit_status(exc)
    finally:
        sys.argv = saved[0]
        os.chdir(saved[1])
        os.environ.clear()
        os.environ.update(saved[2])
        root.handlers[:] = saved[3]
        root.setLevel(saved[4])
    proc = subprocess.CompletedProcess(["harness", *args], status, out.getvalue(), err.getvalue())
    if check and status != 0:
        raise AssertionError(f"harness {' '.join(args)} exited {status}\n{proc.stdout}\n{proc.stderr}")
    return proc


def job_folder(cwd: Path, experiment: str) -> Path:
    """The one job folder under ``runs/<experiment>/``."""
    found = [p for p in (cwd / "runs" / experiment).iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(found) == 1, found
    return found[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MlflowServer:
    """A real ``mlflow server`` on 127.0.0.1, started in its own session (it outlives the process that started
    it, so that every xdist worker can share it) and stopped by its process group."""

    def __init__(self, root: Path, port: int | None = None, pid: int | None = None) -> None:
        self.root = root
        self.port = port or free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.pid = pid

    @classmethod
    def attach(cls, info: dict) -> MlflowServer:
        """A server another process started (:meth:`describe`)."""
        return cls(Path(info["root"]), int(info["port"]), int(info["pid"]))

    def describe(self) -> dict:
        return {"root": str(self.root), "port": self.port, "pid": self.pid}

    def launch(self) -> MlflowServer:
        """Start the server without waiting for it (see :meth:`wait`)."""
        self.root.mkdir(parents=True, exist_ok=True)
        cmd = [executable("mlflow"), "server", "--host", "127.0.0.1", "--port", str(self.port),
               "--backend-store-uri", f"sqlite:///{self.root / 'server.db'}",
               "--artifacts-destination", str(self.root / "artifacts"), "--workers", "1"]
        # MLflow 3 starts a job runner and two Huey consumers beside the web server (three more processes importing
        # mlflow, for GenAI jobs): the tracking API does not need them
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        with open(self.root / "server.log", "w") as log:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True, env=env)
        self.pid = proc.pid
        return self

    def alive(self) -> bool:
        """Running (a zombie, whoever's child it is, counts as dead)."""
        if self.pid is None:
            return False
        try:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, os.WNOHANG)  # reap it if it is our child
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return False
        return stat.rsplit(")", 1)[1].split()[0] != "Z"

    def wait(self, timeout: float = 180) -> MlflowServer:
        """Block until the server answers ``/health``; raise with its log if it dies or does not answer."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.uri + "/health", timeout=2) as resp:
                    if resp.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
            if not self.alive():
                break
        log = (self.root / "server.log").read_text()[-2000:]
        self.stop()
        raise RuntimeError(f"mlflow server did not start: {log}")

    def start(self) -> MlflowServer:
        return self.launch().wait()

    def stop(self) -> None:
        if self.pid is None:
            return
        try:
            os.killpg(self.pid, signal.SIGTERM)
            deadline = time.time() + 30
            while self.alive() and time.time() < deadline:
                time.sleep(0.1)
            if self.alive():
                os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.pid = None


CONF = REPO / "conf"


def bleu_config(*names: str) -> dict:
    """The ``bleu`` node of a composed config for shipped variants (``conf/bleu/NAME.yaml``)."""
    from omegaconf import OmegaConf

    return {n: OmegaConf.to_container(OmegaConf.load(CONF / "bleu" / f"{n}.yaml")) for n in names}


def base_config(tmp_path: Path, bleu: tuple[str, ...] | list[str] = ("sacrebleu",), **overrides) -> dict:
    """A composed job config as plain containers, without Hydra: the schema's defaults, the given variants, no
    tracking, ``runs_dir`` under ``tmp_path``, the demo dataset; ``overrides`` replace top-level keys (dicts are
    merged one level deep)."""
    from dataclasses import asdict

    from harness.job.config import HarnessConfig

    cfg = asdict(HarnessConfig())
    cfg.update(experiment_name="test", runs_dir=str(tmp_path / "runs"), tracking=False, progress=False,
               bleu=bleu_config(*bleu))
    cfg["dataset"]["root"] = str(DEMO)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(cfg.get(key), dict):
            cfg[key] = {**cfg[key], **value}
        else:
            cfg[key] = value
    return cfg
