"""Work done in forked child processes: beside the caller (the second core of a job: the figures, MLflow), or
split with it (:func:`in_shares`: the kinds of human scores of an analysis, the systems of chrF's counting).

The child is forked early and gets ready at once (``prepare``: e.g. the imports the work needs) while the caller
goes on; it then waits for the work's argument, which the caller sends when it has it (:meth:`Aside.send`,
pickled through a pipe), runs the work, sends back its JSON-able return value or its traceback, and exits without
clean-up (``os._exit``). It gets SIGKILL if its parent dies (Linux), so a killed job leaves no process working
for it. The caller waits for the value (:class:`Aside`, called) or, leaving the block without waiting (an error
of its own), kills the child; or, interrupted itself, gives the child the signal and a bounded time to end
(:meth:`Aside.interrupt`: to record that its work was interrupted). A child may send its log records to the
caller (``forward_logs``), which handles them as its own, through its own handlers and levels, while it waits for
the value (the frames of ``logging.handlers.SocketHandler``, read as the logging cookbook's receiver reads them): a
child forked before the caller's logging was configured (MLflow's, forked before Hydra composes the config) logs
as the job does. Nothing here knows what the work is; without ``os.fork`` it is done in process, when the argument
is sent.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import logging.handlers
import os
import pickle
import selectors
import signal
import struct
import threading
import time
import traceback
from functools import partial
from typing import Any, Callable, Iterator, Sequence

from .. import native
from ..errors import HarnessError

_HEAD = 8  # bytes of a message's length, sent before it


def send_message(fd: int, obj: Any) -> None:
    """``obj``, pickled and preceded by its length, into the pipe ``fd``, which is then closed. A reader that died
    (a child that failed getting ready) is not an error here: waiting for it says why."""
    blob = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    data = memoryview(len(blob).to_bytes(_HEAD, "little") + blob)
    try:
        while data:
            data = data[os.write(fd, data):]
    except BrokenPipeError:
        pass
    finally:
        os.close(fd)


def receive_message(fd: int) -> Any:
    """What :func:`send_message` sent into the pipe ``fd`` (closed here), or None if the writer closed it without
    sending. The length comes first, so no end of file is awaited: a sibling forked later may hold the pipe open."""
    with os.fdopen(fd, "rb") as pipe:
        head = pipe.read(_HEAD)
        data = pipe.read(int.from_bytes(head, "little")) if len(head) == _HEAD else b""
    return pickle.loads(data) if data else None


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


class _RecordSender(logging.handlers.SocketHandler):
    """In a child: its log records, as ``SocketHandler`` frames them, into the pipe ``fd`` (:class:`_Records` reads
    them in the caller). A record the caller no longer reads (it gave up) is dropped."""

    def __init__(self, fd: int) -> None:
        super().__init__(None, None)  # type: ignore[arg-type]  # no socket: send() writes to the pipe
        self.fd = fd

    def send(self, s: Any) -> None:  # bytes: the frame of one record
        data = memoryview(s)
        while data:
            data = data[os.write(self.fd, data):]

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        pass


def _send_records(fd: int) -> None:
    """In a child: the root logger's handlers (the caller's, inherited, or none yet) replaced by the pipe ``fd``; the
    child's loggers' levels decide what is sent (the child sets them: e.g. MLflow's to the job's, or more verbose)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(_RecordSender(fd))


class _Records:
    """In the caller: the frames a child's :class:`_RecordSender` wrote (4-byte big-endian length, pickled record
    dict), handled by this process's loggers of the same names, their handlers and filters (the level was the
    child's to decide, as in the logging cookbook's receiver)."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> None:
        self._buf += data
        while len(self._buf) >= 4:
            (n,) = struct.unpack(">L", self._buf[:4])
            if len(self._buf) < 4 + n:
                return
            record = logging.makeLogRecord(pickle.loads(bytes(self._buf[4:4 + n])))
            del self._buf[:4 + n]
            logging.getLogger(record.name).handle(record)


def _child(prepare: Callable[[], None] | None, work: Callable[[Any], Any], arg_fd: int, write_fd: int,
           close_fds: Sequence[int], log_fd: int = -1) -> None:
    """The forked child: get ready, read the argument, run ``work``, send ``{"value": ...}`` or
    ``{"error": traceback}`` (and a :class:`HarnessError` itself, pickled), exit. A closed argument pipe without
    an argument (the caller gave up) ends it. With ``log_fd``, its log records go there (:func:`_send_records`)."""
    code = 1
    message: dict[str, Any] | None = None
    try:
        die_with_parent()
        if log_fd >= 0:
            _send_records(log_fd)
        for fd in close_fds:  # e.g. the job folder's lock: the child must never hold it
            with contextlib.suppress(OSError):
                os.close(fd)
        if prepare is not None:
            prepare()
        sent = receive_message(arg_fd)
        if sent is not None:
            message = {"value": work(sent[0])}
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
                 raises: tuple[type[HarnessError], ...] = (), log_fd: int = -1) -> None:
        self.pid, self._fd, self._arg_fd, self.what, self.raises = pid, read_fd, arg_fd, what, raises
        self._log_fd, self._records = log_fd, _Records()
        self._open, self._reaped, self._done = True, False, False
        self._value: Any = None

    def send(self, arg: Any) -> None:
        """Give the work its argument (pickled to the child, which has been getting ready meanwhile)."""
        if self._arg_fd < 0:
            raise RuntimeError(f"{self.what}: the argument was sent already")
        fd, self._arg_fd = self._arg_fd, -1
        send_message(fd, (arg,))  # in a tuple: an argument None is sent too

    def __call__(self) -> Any:
        if not self._reaped:
            try:
                data = self._read_value()
                _, status = os.waitpid(self.pid, 0)
                self._reaped = True
                self._handle_records()  # the child has ended: what it logged last is in the pipe
                self._close_log()
            finally:  # interrupted while waiting (Ctrl-C, SIGTERM): the child is left to stop() or interrupt()
                self._close()
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

    def _read_value(self) -> bytes:
        """Everything the child sends back, its log records handled meanwhile (if it forwards them)."""
        if self._log_fd < 0:
            with os.fdopen(self._fd, "rb", closefd=False) as pipe:
                return pipe.read()
        chunks = []
        with selectors.DefaultSelector() as sel:
            sel.register(self._fd, selectors.EVENT_READ)
            sel.register(self._log_fd, selectors.EVENT_READ)
            value_open = True
            while value_open:
                for key, _ in sel.select():
                    chunk = os.read(key.fd, 1 << 16)
                    if key.fd == self._log_fd:
                        self._records.feed(chunk)
                        if not chunk:
                            sel.unregister(key.fd)
                    elif chunk:
                        chunks.append(chunk)
                    else:
                        value_open = False
        return b"".join(chunks)

    def _handle_records(self) -> None:
        """The log records waiting in the pipe, handled without waiting for more (a sibling forked later may hold
        the pipe open: no end of file is awaited)."""
        if self._log_fd < 0:
            return
        os.set_blocking(self._log_fd, False)
        with contextlib.suppress(BlockingIOError, OSError):
            while chunk := os.read(self._log_fd, 1 << 16):
                self._records.feed(chunk)

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

    def _close_log(self) -> None:
        if self._log_fd >= 0:
            os.close(self._log_fd)
            self._log_fd = -1

    def stop(self) -> None:
        """Kill the child unless it was waited for, and reap it."""
        self._close()
        self._close_log()
        if not self._reaped:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(self.pid, 0)
            self._reaped = True

    def interrupt(self, signum: int, grace: float) -> None:
        """This process was interrupted: give the child ``signum`` (it ends its work as this process does, e.g.
        marking what it was doing as interrupted) and up to ``grace`` seconds to end, then :meth:`stop` it.
        Its value is not read; its log records are handled while it ends."""
        self._close()
        if self._reaped:
            self._close_log()
            return
        with contextlib.suppress(OSError):
            os.kill(self.pid, signum)
        deadline = time.monotonic() + grace
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(self.pid, os.WNOHANG)[0] == 0:
                self._handle_records()  # what it logs while it ends, and never blocked on a full pipe
                if time.monotonic() > deadline:
                    self.stop()
                    return
                time.sleep(0.01)
        self._reaped = True
        self._handle_records()
        self._close_log()


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
          prepare: Callable[[], None] | None = None, raises: tuple[type[HarnessError], ...] = (),
          forward_logs: bool = False) -> Iterator[Aside]:
    """Fork a child now that runs ``prepare()`` at once, then ``work(arg)`` once the caller sends ``arg``
    (:meth:`Aside.send`); yields the :class:`Aside`, which, called, waits and returns what ``work`` returned
    (JSON-able) or raises the child's error as ``"{what} failed: ..."`` (errors of the classes ``raises``: as
    they were raised). Leaving the block without waiting kills the child. ``close_fds`` are closed in the child.
    ``forward_logs``: the child's log records are handled here (module docstring), where it is waited for or
    interrupted. Without ``os.fork``, both run in this process, at :meth:`~Aside.send`."""
    if not hasattr(os, "fork"):
        yield _InProcess(prepare, work, what)
        return
    read_fd, write_fd = os.pipe()
    arg_read, arg_write = os.pipe()
    log_read, log_write = os.pipe() if forward_logs else (-1, -1)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child process (the work itself is tested in process)
        os.close(read_fd)
        os.close(arg_write)
        if log_read >= 0:
            os.close(log_read)
        _child(prepare, work, arg_read, write_fd, close_fds, log_write)
    os.close(write_fd)
    os.close(arg_read)
    if log_write >= 0:
        os.close(log_write)
    running = Aside(pid, read_fd, arg_write, what, raises, log_read)
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
