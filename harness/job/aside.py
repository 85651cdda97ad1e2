"""Work done in a forked child process while the caller goes on (the second core of a job): the figures.

The child runs a function, sends back its JSON-able return value or its traceback, and exits without clean-up
(``os._exit``); it gets SIGKILL if its parent dies (Linux), so a killed job leaves no process working for it.
The caller waits for the value (:class:`Aside`, called) or, leaving the block without waiting (an error of its
own), kills the child. Nothing here knows what the work is; without ``os.fork`` it is done at once, in process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import traceback
from typing import Any, Callable, Iterator, Sequence


def die_with_parent() -> None:
    """Linux: this process gets SIGKILL when its parent dies; elsewhere nothing."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_DEATHSIG


def _child(work: Callable[[], Any], write_fd: int, close_fds: Sequence[int]) -> None:
    """The forked child: run ``work``, send ``{"value": ...}`` or ``{"error": traceback}``, exit."""
    code = 1
    try:
        die_with_parent()
        for fd in close_fds:  # e.g. the job folder's lock: the child must never hold it
            with contextlib.suppress(OSError):
                os.close(fd)
        message = {"value": work()}
        code = 0
    except BaseException:  # noqa: BLE001 - everything goes back to the parent, which raises it
        message = {"error": traceback.format_exc()}
    finally:
        with contextlib.suppress(BaseException):
            data = json.dumps(message).encode()
            while data:
                data = data[os.write(write_fd, data):]
        os._exit(code)


class Aside:
    """Work being done by the child process ``pid``; calling it waits and returns the work's value, or raises
    :class:`RuntimeError` saying ``what`` failed, with the child's traceback."""

    def __init__(self, pid: int, read_fd: int, what: str) -> None:
        self.pid, self._fd, self.what = pid, read_fd, what
        self._open, self._reaped, self._done = True, False, False
        self._value: Any = None

    def __call__(self) -> Any:
        if not self._reaped:
            try:
                with os.fdopen(self._fd, "rb", closefd=False) as pipe:
                    data = pipe.read()
            finally:
                self._close()
                _, status = os.waitpid(self.pid, 0)
                self._reaped = True
            message = json.loads(data) if data else {}
            if "value" not in message:
                trace = message.get("error", "").strip()
                why = trace.splitlines()[-1] if trace else f"the process ended with status {status}"
                raise RuntimeError(f"{self.what} failed: {why}" + (f"\n(in the child process) {trace}"
                                                                    if trace else ""))
            self._value, self._done = message["value"], True
        if not self._done:
            raise RuntimeError(f"{self.what} failed (see the first error)")
        return self._value

    def _close(self) -> None:
        if self._open:
            self._open = False
            os.close(self._fd)

    def stop(self) -> None:
        """Kill the child unless it was waited for, and reap it."""
        self._close()
        if not self._reaped:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(self.pid, 0)
            self._reaped = True


@contextlib.contextmanager
def aside(work: Callable[[], Any], what: str, close_fds: Sequence[int] = ()) -> Iterator[Callable[[], Any]]:
    """Run ``work`` in a forked child process while the caller goes on; yields an :class:`Aside`, which, called,
    waits and returns what ``work`` returned (JSON-able) or raises the child's error as ``"{what} failed: ..."``.
    Leaving the block without waiting kills the child. ``close_fds`` are closed in the child. Without
    ``os.fork``, ``work`` runs at once, in this process."""
    if not hasattr(os, "fork"):
        value = work()
        yield lambda: value
        return
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child process (the work itself is tested in process)
        os.close(read_fd)
        _child(work, write_fd, close_fds)
    os.close(write_fd)
    running = Aside(pid, read_fd, what)
    try:
        yield running
    finally:
        running.stop()
