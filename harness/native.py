"""The compiled kernels: the C extension module :mod:`harness._kernels` (``harness/_kernels.c``), built by the
package's build backend when it is installed (setuptools, ``pyproject.toml``), imported by Python's import system.

Nothing is compiled at run time and no machine code is mapped by this package: the first run after an install is
as fast as the next. The kernels release the GIL, so :func:`in_threads` runs chunks on every core. Without the
extension (no C compiler at install, or ``HARNESS_NATIVE=0``) every caller takes its numpy path, which gives the
same numbers; the first use says so once, and how to get the kernels (:func:`kernels`). Knows nothing of what the
kernels compute: a :class:`KernelSet` names the functions a caller needs and a smoke test.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

log = logging.getLogger(__name__)

#: The extension module.
MODULE = "harness._kernels"
#: What a user does to get the kernels (said once when they are missing).
HOW_TO_BUILD = ("reinstall with a C compiler (Debian/Ubuntu: apt install build-essential; then pip install "
                "--force-reinstall --no-deps -e .)")


@dataclass(frozen=True)
class KernelSet:
    """The kernels a caller uses: ``functions`` (names in :mod:`harness._kernels`) and ``smoke_test``, which runs
    a loaded set once and raises if it computes something wrong; ``what`` names the set in messages."""

    name: str
    what: str
    functions: tuple[str, ...]
    smoke_test: Callable[[Kernels], None]


@dataclass(frozen=True)
class Kernels:
    """Loaded kernels: ``kern.<name>(...)`` calls a function of the extension (arguments: addresses or buffers,
    and ints); ``source`` is where they come from (the extension's file)."""

    functions: Mapping[str, Callable[..., int]]
    source: str
    keep: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # each function as a plain attribute: a lookup that first fails and then reaches ``__getattr__`` costs
        # about a microsecond, as much as some of the calls themselves
        for name, function in self.functions.items():
            if name in self.__dataclass_fields__:
                raise ValueError(f"a kernel cannot be named {name!r}")
            object.__setattr__(self, name, function)

    if TYPE_CHECKING:
        def __getattr__(self, name: str) -> Callable[..., int]: ...  # the functions, for type checkers


_lock = threading.Lock()
_loaded: dict[str, Kernels] = {}
_failed: set[str] = set()
_said = False


def disabled() -> bool:
    """``HARNESS_NATIVE=0`` (or ``false``/``no``/``off``): never use the compiled kernels."""
    return os.environ.get("HARNESS_NATIVE", "").strip().lower() in ("0", "false", "no", "off")


def extension() -> Any:
    """The extension module, or None if it was not built (import it once; a failure is said by :func:`path`)."""
    try:
        return importlib.import_module(MODULE)
    except ImportError:
        return None


def path() -> str:
    """Which path computes, in words (``harness-score --version``): the compiled kernels and their file, or the
    numpy path and why."""
    if disabled():
        return "numpy (HARNESS_NATIVE=0)"
    module = extension()
    if module is None:
        return f"numpy (the compiled kernels were not built: {HOW_TO_BUILD})"
    return f"compiled kernels ({module.__file__})"


def kernels(kset: KernelSet) -> Kernels | None:
    """The compiled kernels of ``kset``, loaded once per process; None if they cannot be had (the caller's numpy
    path then, which gives the same numbers; said once per process, with how to get them)."""
    found = _loaded.get(kset.name)
    if found is not None:
        return found
    if kset.name in _failed or disabled():
        return None
    with _lock:
        if kset.name not in _loaded and kset.name not in _failed:
            try:
                _loaded[kset.name] = _load(kset)
            except Exception as exc:  # noqa: BLE001 - any failure means: no compiled path in this process
                _failed.add(kset.name)
                _say(f"{kset.what} unavailable ({exc}); using the numpy path (the same numbers, slower): "
                     f"{HOW_TO_BUILD}")
    return _loaded.get(kset.name)


def _say(message: str) -> None:
    global _said
    if not _said:  # one line per process, whichever set asks first
        _said = True
        log.warning("%s", message)


def _load(kset: KernelSet) -> Kernels:
    module = extension()
    if module is None:
        raise RuntimeError("the extension harness._kernels was not built at install")
    missing = [name for name in kset.functions if not hasattr(module, name)]
    if missing:
        raise RuntimeError(f"harness._kernels lacks {', '.join(missing)} (an extension of another version: "
                           "reinstall)")
    kern = Kernels({name: getattr(module, name) for name in kset.functions}, str(module.__file__), module)
    kset.smoke_test(kern)
    return kern


@functools.cache
def _machine_cpus() -> int:
    """The machine's CPU count, read once (``os.cpu_count`` takes microseconds, as much as some kernel calls)."""
    return os.cpu_count() or 1


#: The CPUs this process was given by :func:`sharing_cpus` (innermost last).
_GIVEN: list[int] = []


def cpus() -> int:
    """The CPUs this process's kernels and BLAS may use: the machine's, or this process's share while it works
    beside forked copies of itself (:func:`sharing_cpus`)."""
    return _GIVEN[-1] if _GIVEN else _machine_cpus()


@contextlib.contextmanager
def sharing_cpus(n: int) -> Iterator[None]:
    """Within the block this process uses ``n`` CPUs (at least one): its kernels' threads (:func:`cpus`) and BLAS's
    (threadpoolctl). For work split over processes (:func:`harness.job.aside.in_shares`): two processes each with
    every core's threads made the draws' products several times slower on two cores (OpenBLAS's threads spin)."""
    from threadpoolctl import threadpool_limits

    _GIVEN.append(max(1, int(n)))
    try:
        with threadpool_limits(limits=_GIVEN[-1], user_api="blas"):
            yield
    finally:
        _GIVEN.pop()


#: glibc's mallopt parameters (malloc.h) and the values :func:`keep_freed_memory` sets.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 * 2**20  # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 512 * 2**20
_malloc_tuned: bool | None = None


def keep_freed_memory() -> bool:
    """Let this process (and the copies it forks) reuse the memory it frees instead of giving it back to the system
    and faulting it in again: glibc's ``mallopt`` with blocks up to 32 MiB served from the heap (not each its own
    ``mmap``) and freed heap memory kept up to 512 MiB. The meta-evaluation's draws allocate and free temporaries of
    a few MiB thousands of times; on this machine a page faulted in costs about 6.5 us (200 MB in 1.3 s), so the
    synthetic study (20 systems x 3000 segments) spent 6.8 s of system time and took 35.2 s, and 3.8-4.4 s and
    31.7-34.4 s with these settings (peak RSS 635 -> 755 MB: memory kept for reuse). Once per process; False where
    the C library is not glibc (musl, macOS: nothing is changed there) or refuses."""
    global _malloc_tuned
    if _malloc_tuned is None:
        _malloc_tuned = False
        with contextlib.suppress(OSError):
            import ctypes

            libc = ctypes.CDLL(None)
            if hasattr(libc, "gnu_get_libc_version") and hasattr(libc, "mallopt"):  # the parameters are glibc's
                _malloc_tuned = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
                    bool(libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _malloc_tuned


def aligned_empty(shape: int | tuple[int, ...], dtype: Any, align: int = 64) -> Any:
    """``numpy.empty(shape, dtype)`` starting on an ``align``-byte boundary (a cache line), for the arrays the
    kernels stream through with 32-byte vector loads: numpy aligns its allocations to 16 bytes only, and a load
    across two cache lines costs more. Measured (the same results either way): soft pairwise accuracy's
    signed_sums on 640 columns x 3000 segments, 15 ms with its tables aligned and 23 ms 48 bytes off; its
    hybrid_counts on ru-en's shapes, 16 ms aligned and 17-19 ms 4 or 16 bytes off."""
    import numpy as np

    dt = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.empty(count * dt.itemsize + align, dtype=np.uint8)
    start = -raw.ctypes.data % align
    return raw[start:start + count * dt.itemsize].view(dt).reshape(shape)


def in_threads(run: Callable[[int, int], object], n_rows: int, threads: int) -> None:
    """``run(b0, b1)`` over the rows ``[0, n_rows)`` split into ``threads`` contiguous ranges, one thread each (the
    kernels release the GIL, so they run at once); with one thread, in this one. The kernels compute each row on
    its own, so the split never changes a value."""
    if threads <= 1:
        run(0, n_rows)
        return
    bounds = [n_rows * t // threads for t in range(threads + 1)]
    list(_pool(threads).map(run, bounds[:-1], bounds[1:]))


_POOLS: dict[int, Any] = {}


def _pool(threads: int) -> Any:
    """A thread pool of ``threads`` workers, kept for the life of the process: the meta-evaluation calls the kernels
    thousands of times, and starting two threads per call cost more than the kernels (9 s of a 40 s study).
    Forgotten in a forked child (its threads do not exist there)."""
    pool = _POOLS.get(threads)
    if pool is None:
        from concurrent.futures import ThreadPoolExecutor

        pool = _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="harness-kernels")
    return pool


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_POOLS.clear)


def thread_map(work: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """``[work(item) for item in items]`` on :func:`cpus` threads of their own, in the order of ``items``: for
    independent pieces of work whose time is numpy and the kernels (which release the GIL), so that one piece's
    Python and single-threaded numpy run while another's kernels use the cores. Not the kernels' pool: the pieces
    call :func:`in_threads`, whose chunks then queue in that pool behind each other (never more kernel threads
    than cores, and no piece waits on a pool it occupies).

    BLAS runs on one thread for the whole map, whatever the number of items and cores: its threads would compete
    with the pieces', threadpoolctl's limits are process-wide (limits entered and left by two threads at once
    restore each other's values), and OpenBLAS splits a long dot product over its threads, so its last bit (and,
    through a tie, a permutation count) would depend on the machine's cores. ``work`` must not depend on the
    order the pieces run in (explicit seeds, nothing shared that it writes) and must write nothing outside it.

    A piece's error is raised here once the running pieces end (no new piece starts after it; the first item's
    error if several fail). An interruption of this thread (Ctrl-C, the job's SIGTERM) is raised at once: the
    threads are daemons, which finish their current piece and start no other, and never hold the process's exit
    (a ``ThreadPoolExecutor`` joins its threads at exit: Ctrl-C would wait for a test of several seconds)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        if len(items) <= 1 or cpus() <= 1:
            return [work(item) for item in items]
        found: list[Any] = [None] * len(items)
        failed: dict[int, BaseException] = {}
        stop = threading.Event()
        taken = iter(range(len(items)))
        lock = threading.Lock()

        def run() -> None:
            while not stop.is_set():
                with lock:
                    k = next(taken, None)
                if k is None:
                    return
                try:
                    found[k] = work(items[k])
                except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
                    failed[k] = exc
                    stop.set()

        threads = [threading.Thread(target=run, name=f"harness-work-{t}", daemon=True)
                   for t in range(min(cpus(), len(items)))]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            stop.set()  # interrupted: the pieces running end, no other starts
        if failed:
            raise failed[min(failed)]
        return found


def forget(kset: KernelSet) -> None:
    """Drop what this process loaded (or failed to load) of ``kset``: the next :func:`kernels` loads it again."""
    global _said
    _loaded.pop(kset.name, None)
    _failed.discard(kset.name)
    _said = False
