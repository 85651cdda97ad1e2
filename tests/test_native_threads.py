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


def test_an_interruption_is_raised_at_once_while_the_pieces_still_run():
    """Ctrl-C (SIGINT to this thread) reaches the caller while both pieces are blocked: the map does not wait for
    them, its threads are daemons (they never hold the process's exit), and no piece starts after it."""
    import signal

    if native.cpus() < 2:
        pytest.skip("one core: the items run in this thread")
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("Python handles signals in the main thread only")
    main = threading.main_thread().ident
    release = threading.Event()
    running = threading.Barrier(3, timeout=10)  # the two pieces and the interrupter
    started, ended = [], threading.Semaphore(0)

    def work(x: int) -> int:
        started.append((x, threading.current_thread().daemon))
        try:
            running.wait()
            release.wait(30)
        finally:
            ended.release()
        return x

    def interrupt() -> None:
        running.wait()
        signal.pthread_kill(main, signal.SIGINT)

    threading.Thread(target=interrupt).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            native.thread_map(work, list(range(10)))
        assert not ended.acquire(timeout=0)  # both pieces still run
    finally:
        release.set()
    assert ended.acquire(timeout=10) and ended.acquire(timeout=10)
    assert not ended.acquire(timeout=0.5)  # no third piece
    assert sorted(started) == [(0, True), (1, True)]
