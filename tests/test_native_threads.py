"""``native.thread_map``: the order of its items, real concurrency, BLAS held to one thread (and given back)."""

from __future__ import annotations

import threading

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from harness import native


def blas_threads() -> list[int]:
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def test_values_come_back_in_the_order_of_the_items():
    assert native.thread_map(lambda x: x * x, list(range(17))) == [x * x for x in range(17)]
    assert native.thread_map(lambda x: x, []) == []


def test_the_items_run_at_once_on_two_cores():
    if native.cpus() < 2:
        pytest.skip("one core: the items run in this thread")
    both = threading.Barrier(2, timeout=10)  # each item waits for the other: one after the other would time out
    assert native.thread_map(lambda x: (both.wait(), x)[1], ["a", "b"]) == ["a", "b"]


@pytest.mark.parametrize("n_items", [1, 4])
def test_blas_runs_on_one_thread_inside_and_as_before_after(n_items):
    if not blas_threads():
        pytest.skip("no BLAS that threadpoolctl can see")
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        inside = native.thread_map(lambda _: blas_threads(), range(n_items))
        assert inside == [[1] * len(before)] * n_items
        assert blas_threads() == before


def test_an_error_of_an_item_is_raised_here():
    def work(x: int) -> int:
        if x == 3:
            raise ValueError("item 3")
        return x

    with pytest.raises(ValueError, match="item 3"):
        native.thread_map(work, list(range(6)))


def test_no_piece_starts_after_an_error(monkeypatch):
    if native.cpus() < 2:
        pytest.skip("one core: the items run in this thread")
    started = []
    one_runs, stopped = threading.Event(), threading.Event()

    def work(x: int) -> int:
        started.append(x)
        if x == 0:
            one_runs.wait(10)  # item 0 fails while item 1 runs
            raise ValueError("item 0")
        if x == 1:
            one_runs.set()
            stopped.wait(10)  # item 1 runs until the map has seen item 0's error
        return x

    class Stop(threading.Event):  # the map's stop flag, which lets item 1 end once set
        def set(self) -> None:
            super().set()
            stopped.set()

    class Threading:  # the threading module as the map sees it, its Event the one above
        Event = Stop

        def __getattr__(self, name: str) -> object:
            return getattr(threading, name)

    monkeypatch.setattr(native, "threading", Threading())
    with pytest.raises(ValueError, match="item 0"):
        native.thread_map(work, list(range(50)))
    assert sorted(started) == [0, 1]


#: A process whose map's two pieces block for good; it says when they run, and what it saw on Ctrl-C.
_BLOCKED_MAP = """
import sys, threading
from harness import native
started, never = [], threading.Event()
def work(x):
    started.append(x)
    if len(started) == 2:
        print("running", flush=True)
    never.wait()
try:
    native.thread_map(work, list(range(10)))
except KeyboardInterrupt:
    print("interrupted", sorted(started), all(t.daemon for t in threading.enumerate() if t.name.startswith("harness-work")), flush=True)
    sys.exit(130)
"""


def test_an_interruption_is_raised_at_once_while_the_pieces_still_run():
    """Ctrl-C (SIGINT) reaches a process whose map's two pieces block for good: the map raises it without waiting
    for them, no third piece starts, and the daemon threads do not hold the process's exit (a process that waited
    would never end)."""
    import signal
    import subprocess
    import sys

    if native.cpus() < 2:
        pytest.skip("one core: the items run in the caller's thread")
    # as a terminal starts it: SIGINT at its default (a shell's background job, pytest included, inherits it ignored,
    # and Python then never raises KeyboardInterrupt: this test timed out under a CI started in the background)
    child = subprocess.Popen([sys.executable, "-c", _BLOCKED_MAP], stdout=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert child.stdout.readline() == "running\n"
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 130 and out == "interrupted [0, 1] True\n"
