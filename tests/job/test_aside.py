"""Work done in a forked child process (harness.job.aside), for real: what comes back when it fails, and how an
interrupted caller ends it (the child gets the signal and a bounded time to say so, then SIGKILL)."""

from __future__ import annotations

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
