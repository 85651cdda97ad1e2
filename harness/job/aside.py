"""Work done in forked child processes: beside the caller (the second core of a job: the figures, MLflow), or
split with it (:func:`in_shares`: the kinds of human scores of an analysis, the systems of chrF's counting).

The child is forked early and gets ready at once (``prepare``: e.g. the imports the work needs) while the caller
goes on; it then waits for the work's argument, which the caller sends when it has it (:meth:`Aside.send`,
pickled through a pipe), runs the work, sends back its JSON-able return value or its traceback, and exits without
clean-up (``os._exit``). It gets SIGKILL if its parent dies (Linux), so a killed job leaves no process working
for it. The caller waits for the value (:class:`Aside`, called) or, leaving the block without waiting (an error
of its own), kills the child; or, interrupted itself, gives the child the signal and a bounded time to end
(:meth:`Aside.interrupt`: to record that its work was interrupted). Nothing here knows what the work is; without
``os.fork`` it is done in process, when the argument is sent.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import pickle
import signal
import threading
import time
import traceback
from functools import partial
from typing import Any, Callable, Iterator, Sequence

from .. import native
from ..errors import HarnessError

_HEAD = 8  # bytes of the argument's length, sent before it


def can_fork() -> bool:
    """Whether work can be done aside *and interrupted like this process*: ``os.fork`` exists and this is the
    main thread (the only one where a signal handler runs, so the only one whose interruption reaches the
    child: :meth:`Aside.interrupt`)."""
    return hasattr(os, "fork") and threading.current_thread() is threading.main_thread()


def die_with_parent() -> None:
    """Linux: this process gets SIGKILL when its parent dies; elsewhere nothing."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_DEATHSIG


def _child(prepare: Callable[[], None] | None, work: Callable[[Any], Any], arg_fd: int, write_fd: int,
           close_fds: Sequence[int]) -> None:
    """The forked child: get ready, read the argument, run ``work``, send ``{"value": ...}`` or
    ``{"error": traceback}`` (and a :class:`HarnessError` itself, pickled), exit. A closed argument pipe without
    an argument (the caller gave up) ends it."""
    code = 1
    message: dict[str, Any] | None = None
    try:
        die_with_parent()
        for fd in close_fds:  # e.g. the job folder's lock: the child must never hold it
            with contextlib.suppress(OSError):
                os.close(fd)
        if prepare is not None:
            prepare()
        with os.fdopen(arg_fd, "rb") as pipe:  # length first: a sibling forked later holds this pipe open too
            head = pipe.read(_HEAD)
            data = pipe.read(int.from_bytes(head, "little")) if len(head) == _HEAD else b""
        if data:
            message = {"value": work(pickle.loads(data))}
            code = 0
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent, which raises it
        message = {"error": traceback.format_exc()}
        if isinstance(exc, HarnessError):  # a user's problem (a full disk): one line, no traceback
            message["one_line"] = str(exc)
            with contextlib.suppress(Exception):  # for a caller that raises it as it was raised (``raises``)
                message["raised"] = base64.b64encode(pickle.dumps(exc)).decode("ascii")
    finally:
        with contextlib.suppress(BaseException):
            out = json.dumps(message).encode() if message is not None else b""
            while out:
                out = out[os.write(write_fd, out):]
        os._exit(code)


class Aside:
    """Work being done by the child process ``pid``: :meth:`send` gives it its argument; calling it waits and
    returns the work's value, or raises :class:`RuntimeError` saying ``what`` failed, with the child's
    traceback (a :class:`HarnessError` as one line saying ``what`` failed, or, of the classes ``raises``, as it
    was raised: same class, same text)."""

    def __init__(self, pid: int, read_fd: int, arg_fd: int, what: str,
                 raises: tuple[type[HarnessError], ...] = ()) -> None:
        self.pid, self._fd, self._arg_fd, self.what, self.raises = pid, read_fd, arg_fd, what, raises
        self._open, self._reaped, self._done = True, False, False
        self._value: Any = None

    def send(self, arg: Any) -> None:
        """Give the work its argument (pickled to the child, which has been getting ready meanwhile)."""
        if self._arg_fd < 0:
            raise RuntimeError(f"{self.what}: the argument was sent already")
        blob = pickle.dumps(arg, protocol=pickle.HIGHEST_PROTOCOL)
        data = memoryview(len(blob).to_bytes(_HEAD, "little") + blob)
        fd, self._arg_fd = self._arg_fd, -1
        try:
            while data:
                data = data[os.write(fd, data):]
        except BrokenPipeError:  # the child died getting ready: waiting for it says why
            pass
        finally:
            os.close(fd)

    def __call__(self) -> Any:
        if not self._reaped:
            try:
                with os.fdopen(self._fd, "rb", closefd=False) as pipe:
                    data = pipe.read()
            finally:  # interrupted while waiting (Ctrl-C, SIGTERM): the child is left to stop() or interrupt()
                self._close()
            _, status = os.waitpid(self.pid, 0)
            self._reaped = True
            message = json.loads(data) if data else {}
            raised = self._raised(message)
            if raised is not None:
                raise raised
            if "one_line" in message:  # said once, also when the work was itself split over two processes
                line = message["one_line"]
                raise HarnessError(line if line.startswith(f"{self.what} failed") else f"{self.what} failed: {line}")
            if "value" not in message:
                trace = message.get("error", "").strip()
                why = trace.splitlines()[-1] if trace else f"the process ended with status {status}"
                raise RuntimeError(f"{self.what} failed: {why}" + (f"\n(in the child process) {trace}"
                                                                    if trace else ""))
            self._value, self._done = message["value"], True
        if not self._done:
            raise RuntimeError(f"{self.what} failed (see the first error)")
        return self._value

    def _raised(self, message: dict[str, Any]) -> HarnessError | None:
        """The child's error, if it is of the classes :attr:`raises` (and can be rebuilt here)."""
        if "raised" not in message or not self.raises:
            return None
        try:
            exc = pickle.loads(base64.b64decode(message["raised"]))
        except Exception:  # noqa: BLE001 - said as one line instead
            return None
        return exc if isinstance(exc, self.raises) else None

    def _close(self) -> None:
        if self._arg_fd >= 0:  # never sent: the child gets no argument (and is killed by stop())
            os.close(self._arg_fd)
            self._arg_fd = -1
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

    def interrupt(self, signum: int, grace: float) -> None:
        """This process was interrupted: give the child ``signum`` (it ends its work as this process does, e.g.
        marking what it was doing as interrupted) and up to ``grace`` seconds to end, then :meth:`stop` it.
        Whatever it sends back is not read."""
        self._close()
        if self._reaped:
            return
        with contextlib.suppress(OSError):
            os.kill(self.pid, signum)
        deadline = time.monotonic() + grace
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(self.pid, os.WNOHANG)[0] == 0:
                if time.monotonic() > deadline:
                    self.stop()
                    return
                time.sleep(0.01)
        self._reaped = True


class _InProcess(Aside):
    """:class:`Aside` without ``os.fork``: the work is done in this process when its argument is sent."""

    def __init__(self, prepare: Callable[[], None] | None, work: Callable[[Any], Any], what: str) -> None:
        super().__init__(os.getpid(), -1, -1, what)
        self._open, self._reaped = False, True
        self._prepare, self._work = prepare, work

    def send(self, arg: Any) -> None:
        if self._prepare is not None:
            self._prepare()
        self._value = self._work(arg)

    def __call__(self) -> Any:
        return self._value


@contextlib.contextmanager
def aside(work: Callable[[Any], Any], what: str, close_fds: Sequence[int] = (),
          prepare: Callable[[], None] | None = None, raises: tuple[type[HarnessError], ...] = ()
          ) -> Iterator[Aside]:
    """Fork a child now that runs ``prepare()`` at once, then ``work(arg)`` once the caller sends ``arg``
    (:meth:`Aside.send`); yields the :class:`Aside`, which, called, waits and returns what ``work`` returned
    (JSON-able) or raises the child's error as ``"{what} failed: ..."`` (errors of the classes ``raises``: as
    they were raised). Leaving the block without waiting kills the child. ``close_fds`` are closed in the child.
    Without ``os.fork``, both run in this process, at :meth:`~Aside.send`."""
    if not hasattr(os, "fork"):
        yield _InProcess(prepare, work, what)
        return
    read_fd, write_fd = os.pipe()
    arg_read, arg_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child process (the work itself is tested in process)
        os.close(read_fd)
        os.close(arg_write)
        _child(prepare, work, arg_read, write_fd, close_fds)
    os.close(write_fd)
    os.close(arg_read)
    running = Aside(pid, read_fd, arg_write, what, raises)
    try:
        yield running
    finally:
        running.stop()


class _Ticks:
    """A forked share's progress: its ``update`` calls counted, for the parent's bar (:func:`in_shares`)."""

    def __init__(self) -> None:
        self.n = 0

    def update(self, n: int = 1) -> None:
        self.n += n


def _share(work: Callable[[Any, Any], Any], items: Sequence[Any], counted: bool, per_share: int, _sent: Any) -> str:
    """A forked copy's share (:func:`in_shares`): its values and progress, pickled (base64, for the JSON reply)."""
    ticks = _Ticks() if counted else None
    with native.sharing_cpus(per_share):
        values = [work(item, ticks) for item in items]
    return base64.b64encode(pickle.dumps((values, ticks.n if ticks else 0), pickle.HIGHEST_PROTOCOL)).decode("ascii")


def in_shares(work: Callable[[Any, Any], Any], items: Sequence[Any], what: str, progress: Any = None,
              raises: tuple[type[HarnessError], ...] = ()) -> list[Any]:
    """``[work(item, progress) for item in items]``, with the items split over this process and forked copies of it
    (one per core, each every ``shares``-th item and its share of the cores: :func:`harness.native.sharing_cpus`),
    in the order of ``items``. The copies' values come back pickled; their ``progress.update`` calls are counted and
    added to ``progress`` as each share comes back (one bar on the terminal). A copy's error is raised as in
    :func:`aside` (``"{what} failed: ..."``; of the classes ``raises``, as raised). With one core, one item, or
    where work cannot be done aside (:func:`can_fork`), everything is computed here. ``work`` must compute the same
    value in any process (explicit seeds, no state shared between items)."""
    shares = min(native.cpus(), len(items)) if can_fork() else 1
    if shares <= 1:
        return [work(item, progress) for item in items]
    per_share = max(1, native.cpus() // shares)
    with contextlib.ExitStack() as stack:
        stack.enter_context(native.sharing_cpus(per_share))
        others = [stack.enter_context(aside(partial(_share, work, items[k::shares], progress is not None, per_share),
                                            what, raises=raises)) for k in range(1, shares)]
        for other in others:
            other.send(None)
        parts = [[work(item, progress) for item in items[0::shares]]]
        for other in others:
            values, ticks = pickle.loads(base64.b64decode(other()))
            if progress is not None:
                progress.update(ticks)
            parts.append(values)
    return [parts[k % shares][k // shares] for k in range(len(items))]
