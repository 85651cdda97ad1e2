"""Work done in a forked child process (harness.job.aside), for real: what comes back when it fails, how an
interrupted caller ends it (the child gets the signal and a bounded time to say so, then SIGKILL), and a child's
log records handled by the caller."""

from __future__ import annotations

import logging
import os
import signal
import time

import pytest

from harness.errors import HarnessError, TrackingError
from harness.job.aside import aside, can_fork, in_shares

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _fails(_arg):
    raise TrackingError("the MLflow store foo://bar cannot be used (no such scheme)")


def test_a_harness_error_comes_back_as_one_line_or_as_raised():
    with aside(_fails, "logging") as child:
        child.send(None)
        with pytest.raises(HarnessError) as err:
            child()
    assert type(err.value) is HarnessError
    assert str(err.value) == "logging failed: the MLflow store foo://bar cannot be used (no such scheme)"
    with aside(_fails, "logging", raises=(TrackingError,)) as child:
        child.send(None)
        with pytest.raises(TrackingError) as raised:
            child()
    assert str(raised.value) == "the MLflow store foo://bar cannot be used (no such scheme)"


def _ready(done, on_sigterm):
    """A child's preparation: what it does on SIGTERM, then say it is ready."""
    signal.signal(signal.SIGTERM, on_sigterm)
    done.write_text("ready")


def _when_ready(done):
    deadline = time.monotonic() + 60
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.01)


def _says_so(done):
    """On SIGTERM: say that it was interrupted (after a while), then end."""

    def end(_signum, _frame):
        time.sleep(0.3)  # what marking its work takes
        done.write_text("interrupted")
        raise KeyboardInterrupt

    return end


def _waits(_arg):
    time.sleep(60)


def test_an_interrupted_caller_gives_the_child_time_to_say_so(tmp_path):
    done = tmp_path / "done"
    with aside(_waits, "logging", prepare=lambda: _ready(done, _says_so(done))) as child:
        child.send(None)
        _when_ready(done)
        started = time.monotonic()
        child.interrupt(signal.SIGTERM, grace=30)
        assert time.monotonic() - started < 10 and done.read_text() == "interrupted"
        with pytest.raises(OSError):  # reaped
            os.kill(child.pid, 0)


def test_a_child_that_does_not_end_in_time_is_killed(tmp_path):
    ready = tmp_path / "ready"
    with aside(_waits, "logging", prepare=lambda: _ready(ready, signal.SIG_IGN)) as child:
        child.send(None)
        _when_ready(ready)
        started = time.monotonic()
        child.interrupt(signal.SIGTERM, grace=0.3)
        assert 0.3 <= time.monotonic() - started < 5
        with pytest.raises(OSError):
            os.kill(child.pid, 0)


@pytest.mark.skipif(not can_fork(), reason="a signal handler runs in the main thread only")
def test_a_caller_interrupted_while_it_waits_does_not_wait_for_the_child():
    class Interrupted(Exception):
        pass

    def interrupt(_signum, _frame):
        raise Interrupted

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        with aside(_waits, "logging") as child:
            child.send(None)
            signal.setitimer(signal.ITIMER_REAL, 0.3)
            started = time.monotonic()
            with pytest.raises(Interrupted):
                child()
            assert time.monotonic() - started < 10
            pid = child.pid
        with pytest.raises(OSError):  # leaving the block killed and reaped it
            os.kill(pid, 0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ------------------------------------------------------------------------------------------------- log records


def _logs_in_prepare():
    log = logging.getLogger("harness.test.child")
    log.setLevel(logging.INFO)
    log.debug("not sent: below the logger's level")
    log.info("getting ready in %s", "the child")


def _logs_in_work(arg):
    log = logging.getLogger("harness.test.child")
    try:
        raise ValueError("the cause")
    except ValueError:
        log.warning("work %s failed softly", arg, exc_info=True)
    for k in range(3000):  # more than a pipe holds (64 KiB) before the caller reads: the child must not block
        log.info("line %d %s", k, "x" * 40)
    return os.getpid()


@pytest.fixture
def job_log(tmp_path):
    """The caller's own logging, as Hydra configures a job's: a handler on the root logger (into a file, so that
    a record the child wrote with the handler it inherited would show there too, as a duplicate)."""
    root = logging.getLogger()
    handler = logging.FileHandler(tmp_path / "job.log")
    handler.setFormatter(logging.Formatter("%(process)d %(levelname)s %(name)s: %(message)s"))
    saved = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield tmp_path / "job.log"
    finally:
        root.removeHandler(handler)
        root.setLevel(saved)
        handler.close()


def test_a_childs_log_records_are_handled_by_the_caller(job_log):
    with aside(_logs_in_work, "working", prepare=_logs_in_prepare, forward_logs=True) as child:
        child.send("seven")
        pid = child()
    lines = job_log.read_text().splitlines()
    assert lines[0] == f"{pid} INFO harness.test.child: getting ready in the child"  # the child's pid, its words
    assert lines[1] == f"{pid} WARNING harness.test.child: work seven failed softly"
    assert lines[2] == "Traceback (most recent call last):" and "ValueError: the cause" in lines[3:6]
    info = [line for line in lines if " INFO harness.test.child: line " in line]
    assert info == [f"{pid} INFO harness.test.child: line {k} {'x' * 40}" for k in range(3000)]  # each once, in order
    assert not any("not sent" in line for line in lines)


def _louder(_arg):
    logging.getLogger("harness.test.loud").setLevel(logging.INFO)  # as MLflow's child does for alembic, verbose
    logging.getLogger("harness.test.loud").info("migrating")
    return os.getpid()


def test_the_childs_levels_decide_what_it_logs(job_log):
    """A child may log more than the caller would (MLflow's child with ``verbose=true``): its records are handled
    as they come, not filtered again by the caller's levels."""
    logging.getLogger("harness.test.loud").setLevel(logging.WARNING)
    try:
        with aside(_louder, "working", forward_logs=True) as child:
            child.send(None)
            pid = child()
    finally:
        logging.getLogger("harness.test.loud").setLevel(logging.NOTSET)
    assert f"{pid} INFO harness.test.loud: migrating" in job_log.read_text().splitlines()


def test_without_forwarding_a_child_logs_through_what_it_inherited(job_log):
    with aside(_logs_in_work, "working", prepare=_logs_in_prepare) as child:
        child.send("eight")
        pid = child()
    assert f"{pid} INFO harness.test.child: getting ready in the child" in job_log.read_text().splitlines()


def _logs_when_interrupted(done):
    def end(_signum, _frame):
        logging.getLogger("harness.test.child").warning("marked KILLED")
        done.write_text("interrupted")
        raise KeyboardInterrupt

    return end


def test_an_interrupted_caller_handles_what_the_child_logs_as_it_ends(tmp_path, job_log):
    done = tmp_path / "done"
    with aside(_waits, "logging", prepare=lambda: _ready(done, _logs_when_interrupted(done)),
               forward_logs=True) as child:
        child.send(None)
        _when_ready(done)
        child.interrupt(signal.SIGTERM, grace=30)
        assert done.read_text() == "interrupted"
    assert f"{child.pid} WARNING harness.test.child: marked KILLED" in job_log.read_text().splitlines()


# ------------------------------------------------------------------------------------------------------- in_shares


class _Bar:
    def __init__(self):
        self.n = 0

    def update(self, n=1):
        self.n += n


def _where(item, progress):
    """Which process computed the item, with how many CPUs, and one tick per item (two for item 3)."""
    if progress is not None:
        progress.update(2 if item == 3 else 1)
    from harness import native

    return item * 10, os.getpid(), native.cpus()


@pytest.mark.skipif(not can_fork() or (os.cpu_count() or 1) < 2, reason="needs os.fork and two cores")
def test_in_shares_splits_the_items_over_the_cores_and_keeps_their_order():
    bar = _Bar()
    got = in_shares(_where, list(range(7)), "squaring", bar)
    assert [v for v, _, _ in got] == [0, 10, 20, 30, 40, 50, 60]
    pids = {pid for _, pid, _ in got}
    shares = min(os.cpu_count(), 7)
    assert len(pids) == shares and os.getpid() in pids  # this process computes a share too
    assert {c for _, _, c in got} == {max(1, os.cpu_count() // shares)}  # each with its share of the cores
    assert bar.n == 8  # the copies' ticks are added to this process's bar
    from harness import native

    assert native.cpus() == os.cpu_count()  # and this process has its cores back
    one = in_shares(_where, [5], "one item", bar)  # nothing to split: no copy
    assert one == [(50, os.getpid(), os.cpu_count())]


def _fails_on(item, _progress):
    if item == 1:
        raise HarnessError("line 3 of foo.tsv: expected a number")
    return item


@pytest.mark.skipif(not can_fork() or (os.cpu_count() or 1) < 2, reason="needs os.fork and two cores")
def test_an_error_in_a_share_is_raised_as_it_was_raised():
    with pytest.raises(HarnessError) as err:
        in_shares(_fails_on, [0, 1], "reading", raises=(HarnessError,))
    assert str(err.value) == "line 3 of foo.tsv: expected a number"
    with pytest.raises(HarnessError, match=r"^reading failed: line 3 of foo.tsv: expected a number$"):
        in_shares(_fails_on, [0, 1], "reading")
