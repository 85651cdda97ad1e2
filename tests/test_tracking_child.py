"""MLflow's child process (harness.tracking_child): which command lines fork it before Hydra composes the config,
and that a job takes that child, or ends it when it does not track. Its logging of a whole job, forked early, is
tested by the README's demo job (tests/entry/test_app.py), its records in the job's log there too."""

from __future__ import annotations

import os
import sqlite3
import time

import pytest

from harness import tracking_child
from harness.job.aside import can_fork
from harness.tracking_child import Target, could_track, discard_early, early, mlflow_child

pytestmark = pytest.mark.skipif(not can_fork(), reason="needs os.fork, in the main thread")


@pytest.mark.parametrize("argv,forks", [
    ([], True),
    (["dataset.root=/data/x", "bleu=[sacrebleu,char]", "tracking_uri=http://127.0.0.1:5000"], True),
    (["tracking=false"], False), (["tracking=False"], False), (["tracking=no"], False), (["tracking=true"], True),
    (["-m", "seed=1,2"], False), (["--multirun", "seed=1,2"], False),  # a sweep: its jobs fork their own
    (["--cfg", "job"], False), (["--info"], False), (["--hydra-help"], False), (["--shell-completion"], False),
])
def test_which_command_lines_fork_the_child_early(argv, forks):
    assert could_track(argv) is forks


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return True
    return False


def test_a_job_that_does_not_track_ends_the_early_child():
    with early([]):
        assert tracking_child._EARLY is not None
        _, child, _ = tracking_child._EARLY
        assert not _gone(child.pid)
        discard_early()
        assert _gone(child.pid)  # killed and reaped at once, not when the command ends
        assert tracking_child._EARLY is None
    with early(["tracking=false"]):
        assert tracking_child._EARLY is None  # not forked


def test_leaving_the_command_ends_an_early_child_no_job_took():
    with early([]):
        _, child, _ = tracking_child._EARLY
    assert _gone(child.pid) and tracking_child._EARLY is None


@pytest.mark.slow  # the child imports MLflow and migrates a new store: 2-4 s
def test_a_job_takes_the_early_child_and_it_opens_the_store(tmp_path):
    """The job's child is the one forked early (the same process), which, given the target, creates the store and
    the experiment while the job computes."""
    runs = tmp_path / "runs"
    target = Target(f"sqlite:///{runs / 'mlflow.db'}", runs, "early", 2, 10, False, tracking_child.log_levels())
    with early([]):
        _, forked, _ = tracking_child._EARLY
        with mlflow_child(target) as child:
            assert child is forked and tracking_child._EARLY is None
            deadline, names = time.monotonic() + 60, []
            while time.monotonic() < deadline and "early" not in names:
                time.sleep(0.05)
                if (runs / "mlflow.db").exists():
                    try:
                        with sqlite3.connect(runs / "mlflow.db") as con:
                            names = [n for (n,) in con.execute("SELECT name FROM experiments")]
                    except sqlite3.Error:  # created meanwhile
                        pass
            assert "early" in names
        assert _gone(child.pid)  # never sent a job: killed when the block was left


def test_an_early_child_of_another_process_is_not_taken(monkeypatch):
    """A forked copy of the command (a share of the analysis, a launcher's worker) holds the module's record of
    the child too: it is not its own."""
    monkeypatch.setattr(tracking_child, "_EARLY", (os.getpid() + 1, object(), object()))
    assert tracking_child._take_early() is None and tracking_child._EARLY is None
