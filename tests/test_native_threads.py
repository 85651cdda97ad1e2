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
