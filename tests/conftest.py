"""Session fixtures: the real data, one MLflow server for the whole session, a migrated SQLite store to copy,
sacrebleu's statistics of the real data computed once per session.

One ``mlflow server`` serves the whole test session, however many xdist workers run it: it takes 10-20 s to
start (two processes importing mlflow's server), so the first worker that collects a test needing it starts it in
the background (:func:`pytest_collection_modifyitems`), every worker attaches to it through a folder shared by the
session (``HARNESS_TEST_SHARED``, made by the controlling process), and the controlling process stops it at the
end (:func:`pytest_unconfigure`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

from harness.arguments import skip_last_collection
from support import DEMO, SHARED, MlflowServer, once_per_session, read_lines, shared_lock

# Hypothesis without its example database: nothing is written under .hypothesis/examples and, above all, no
# background writer thread is left to be joined when an xdist worker ends (Hypothesis joins it in a finalizer at
# exit; a worker still busy 5 s after it was told to end gets a SIGINT from execnet, and a passing run printed that
# KeyboardInterrupt's traceback). A failing example is printed with the seed that replays it.
settings.register_profile("harness", database=None, print_blob=True)
settings.load_profile("harness")


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # the controlling process (or a run without xdist)
        os.environ[SHARED] = tempfile.mkdtemp(prefix="harness-tests-")


def pytest_unconfigure(config):
    # the process ends next: skip its last garbage collection, which would tear down MLflow's object graphs for
    # seconds, as the harness's own commands do
    skip_last_collection()
    if hasattr(config, "workerinput") or SHARED not in os.environ:
        return
    shared = Path(os.environ.pop(SHARED))
    info = shared / "mlflow_server.json"
    if info.exists():
        MlflowServer.attach(json.loads(info.read_text())).stop()
    shutil.rmtree(shared, ignore_errors=True)


def _shared_server() -> MlflowServer:
    """The session's server: started (without waiting) by the first caller, attached to by the others."""
    shared = Path(os.environ[SHARED])
    info = shared / "mlflow_server.json"
    with shared_lock("mlflow_server"):
        if info.exists():
            return MlflowServer.attach(json.loads(info.read_text()))
        server = MlflowServer(shared / "mlflow-server").launch()
        info.write_text(json.dumps(server.describe()))
        return server


#: The files that take longest (wall seconds in the README's test command, subprocesses and waits included), longest
#: first: xdist hands out whole files (``--dist=loadfile``) in collection order (``--no-loadscope-reorder``), so
#: the short files fill the end and the two workers finish within a second of each other. A file missing here runs
#: after them (a new long file belongs in this list: a worker left alone with it at the end costs its length).
LONGEST_FIRST = ("entry/test_app.py", "text/test_token_ids.py", "entry/test_reliability.py", "test_api.py",
                 "entry/test_shards.py", "sinks/test_mlflow.py", "core/test_nltk_replay.py", "entry/test_history.py",
                 "text/test_tokenizers.py", "job/test_report.py", "tools/test_mlflow_screenshots.py",
                 "job/test_spec.py", "core/test_significance.py", "entry/test_cli.py", "job/test_analysis.py",
                 "test_runner.py", "entry/test_compare.py", "core/test_mtme.py", "text/test_counting.py",
                 "text/test_pipeline.py", "job/test_comparison.py", "text/test_native.py")


def pytest_collection_modifyitems(session, config, items):
    tests = Path(__file__).parent
    gone = [name for name in LONGEST_FIRST if not (tests / name).is_file()]
    if gone:
        raise pytest.UsageError(f"tests/conftest.py LONGEST_FIRST names files that are not there: {', '.join(gone)}")
    rank = {(tests / name).resolve(): i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(item.path).resolve(), len(rank)))  # stable: the rest keep their order
    if SHARED in os.environ and any("mlflow_server" in getattr(item, "fixturenames", ()) for item in items):
        _shared_server()  # start it now; the tests that need it wait for it to answer


@pytest.fixture(scope="session")
def native_on() -> None:
    """For the tests of a compiled path: skipped where the kernels are turned off (``HARNESS_NATIVE=0`` for the
    whole run; read once, when the first such test starts: the suite then checks the numpy paths). Anywhere else
    the kernels must load: an extension that was not built or does not load fails these tests (the test
    environment is installed with a compiler; a skip would hide a broken build behind a green run)."""
    from harness import native

    if native.disabled():
        pytest.skip("compiled kernels turned off (HARNESS_NATIVE=0)")


@pytest.fixture(scope="module")
def text_kernels(native_on):
    """The compiled text kernels (see :func:`native_on`)."""
    from harness.text import kernels

    kern = kernels.loaded()
    if kern is None:
        pytest.fail("the compiled text kernels were not built or do not load (the warning above says why)",
                    pytrace=False)
    return kern


@pytest.fixture(scope="session")
def wmt21() -> dict:
    """{'refs': {name: lines}, 'systems': {name: lines}, 'root': Path} of the demo the project ships."""
    root = DEMO
    return {
        "root": root,
        "refs": {p.stem: read_lines(p) for p in sorted((root / "refs").glob("*.txt"))},
        "systems": {p.stem: read_lines(p) for p in sorted((root / "systems").glob("*.txt"))},
    }


def _sacrebleu_statistics(root: Path, refs: tuple[str, ...], tokenize: str, lowercase: bool,
                          systems: tuple[str, ...]) -> dict:
    """{system: int64 array}: sacrebleu's own per-segment statistics (``BLEU._extract_corpus_statistics``: hyp_len,
    ref_len, matches, totals) of ``root/systems/SYSTEM.txt`` against the references ``root/refs/NAME.txt`` named in
    ``refs``, each counted once per session (:func:`support.once_per_session`): test_api, test_token_ids and the
    demo's tables use them."""
    import numpy as np
    import sacrebleu
    from sacrebleu.metrics.bleu import BLEU

    oracle = None

    def count(system: str):
        nonlocal oracle
        if oracle is None:  # sacrebleu caches the references in the object
            oracle = BLEU(tokenize=tokenize, lowercase=lowercase,
                          references=[read_lines(root / "refs" / f"{r}.txt") for r in refs])
        rows = oracle._extract_corpus_statistics(read_lines(root / "systems" / f"{system}.txt"), None)
        return np.array(rows, dtype=np.int64)

    return {system: once_per_session(json.dumps(["sacrebleu statistics", str(root), refs, tokenize, lowercase, system,
                                                 sacrebleu.__version__]), lambda system=system: count(system))
            for system in systems}


@pytest.fixture(scope="session")
def sacrebleu_stats():
    """``sacrebleu_stats(root, refs, tokenize="13a", lowercase=False, systems=None)`` -> {system: sacrebleu's
    per-segment statistics} for the systems named (None: every system under ``root/systems``), computed once per
    session for all workers; :func:`support.sacrebleu_score` turns them into sacrebleu's score."""
    memo: dict = {}

    def get(root: Path, refs: tuple[str, ...], tokenize: str = "13a", lowercase: bool = False,
            systems: tuple[str, ...] | None = None) -> dict:
        root = Path(root)
        if systems is None:
            systems = tuple(p.stem for p in sorted((root / "systems").glob("*.txt")))
        key = (str(root), tuple(refs), tokenize, lowercase)
        have = memo.setdefault(key, {})
        missing = tuple(s for s in systems if s not in have)
        if missing:
            have.update(_sacrebleu_statistics(root, tuple(refs), tokenize, lowercase, missing))
        return {s: have[s] for s in systems}

    return get


@pytest.fixture(scope="session")
def mlflow_server() -> MlflowServer:
    """A real ``mlflow server`` on 127.0.0.1, one for the whole session and all workers (each test uses its own
    experiment); stopped by the controlling process at the end."""
    return _shared_server().wait()


@pytest.fixture(scope="session")
def migrated_store(tmp_path_factory) -> Path:
    """A SQLite MLflow store created and migrated once (1-2 s); tests copy it instead of migrating again."""
    import sqlite3

    from harness.sinks.mlflow_store import prepare_store

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
