"""MLflow's child process: it imports and starts MLflow while the job computes, then logs the published job while the
job waits (:func:`harness.runner.track`); the job's own process never imports MLflow.

MLflow's imports cost about 1.5 s of CPU, longer than the demo job computes once Hydra has composed its config. So
``harness`` forks the child before Hydra composes anything (:func:`early`, when the command line can track), and
the job takes it (:func:`mlflow_child`); a job run otherwise (a sweep's, the API's) forks it when it starts. Either
way the child imports MLflow at once, then waits for where to log (:class:`Target`: the store, the experiment, the
client's settings and the job's log levels), opens the store and the experiment while the job goes on, and logs
the job it is sent. Its log records are handled by the job's process, as its own
(:func:`harness.job.aside.aside`'s ``forward_logs``): a child forked before Hydra configured the job's logging logs
as the job does.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from .errors import Terminated, TrackingError
from .job.aside import Aside, aside, can_fork, receive_message, send_message

if TYPE_CHECKING:
    from .job.spec import JobSpec
    from .sinks.mlflow import JobPayload

#: The niceness MLflow's child process adds to its own: MLflow's start-up (~1.5 CPU s) takes the CPU time the job's
#: computation and the figure drawer leave, instead of slowing them down (on 2 cores, with the child forked when the
#: job started, the demo's resampling took 1.8 s instead of 1.4 s beside it at the same priority, the whole job 4.5 s
#: instead of 4.2 s; forked before Hydra, the second demo job took 2.83 s at 5 and 2.87 s at 0, 10 interleaved
#: pairs); the logging then runs alone, the job waiting.
TRACKER_NICENESS = 5


@dataclass(frozen=True)
class Target:
    """Where and how the child logs: the tracking URI, the runs folder, the experiment, the client's settings, and
    the levels of the job's loggers (set in the child, so that it sends the records the job would log)."""

    uri: str
    runs_dir: Path
    experiment: str
    retries: int
    timeout: int
    verbose: bool
    levels: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, spec: JobSpec, experiment: str) -> Target:
        return cls(str(spec.tracking_uri), spec.runs_dir, experiment, spec.tracking_retries, spec.tracking_timeout,
                   spec.verbose, log_levels())


def log_levels() -> dict[str, int]:
    """The levels set on this process's loggers (``""``: the root logger's)."""
    manager = logging.getLogger().manager
    levels = {name: each.level for name, each in manager.loggerDict.items()
              if isinstance(each, logging.Logger) and each.level != logging.NOTSET}
    return {"": logging.getLogger().level, **levels}


def start_tracking(target: Target) -> TrackingError | None:
    """MLflow's start-up: its imports, the client's settings, the store and the experiment (created if new; a new
    SQLite store is a copy of a migrated template). No run is logged here; a failure is returned, for the logging
    to raise (:func:`harness.runner.track` records it)."""
    try:
        from .sinks.mlflow_store import configure_client, prepare_store

        configure_client(target.retries, target.timeout, target.verbose)
        prepare_store(target.uri, target.experiment, target.runs_dir)
    except TrackingError as exc:
        return exc
    except Exception as exc:  # noqa: BLE001 - a broken MLflow install must not cost the job its tables
        return TrackingError(f"MLflow could not be started ({type(exc).__name__}: {exc})")
    return None


def _import_mlflow() -> None:
    """What the logging into the default store imports (about 1.5 s of CPU), before the target is known. A failure
    is left to :func:`start_tracking`, which imports the same and reports it."""
    with contextlib.suppress(Exception):
        import mlflow.store.tracking.sqlalchemy_store  # noqa: F401 - the default store, a SQLite file
        import mlflow.tracking  # noqa: F401

        from .sinks import mlflow as _sink  # noqa: F401


def _interrupted_once() -> None:
    """In MLflow's child process: the first SIGINT or SIGTERM ends the logging as it ends in the job
    (``KeyboardInterrupt``, :class:`~harness.errors.Terminated`: the runs are marked KILLED); the next ones are
    ignored, so that they do not cut the marking short (Ctrl-C reaches the child from the terminal, and again
    from the job: :meth:`~harness.job.aside.Aside.interrupt`). A signal the job ignores is ignored here too."""

    def end(signum: int, _frame: Any) -> None:
        for each in (signal.SIGINT, signal.SIGTERM):
            signal.signal(each, signal.SIG_IGN)
        if signum == signal.SIGTERM:
            raise Terminated(f"terminated by signal {signum} (SIGTERM)")
        raise KeyboardInterrupt

    for each in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(each) is not signal.SIG_IGN:  # ignored by the job (Ctrl-C of a background job): here too
            signal.signal(each, end)


class _Tracker:
    """Both ends of MLflow's child process: in the child, get ready (:meth:`prepare`: the imports, then the
    :class:`Target` through a pipe of its own, then the store and the experiment, whose error is kept for the
    logging) and log the job it is sent (:meth:`log`); in the job, send the target (:meth:`give`)."""

    def __init__(self) -> None:
        self._target_read, self._target_write = os.pipe()
        self.target: Target | None = None
        self.startup_error: TrackingError | None = None

    def forked(self) -> None:
        """In the job, once the child is forked: the target pipe's reading end is the child's."""
        os.close(self._target_read)

    def give(self, target: Target) -> None:
        """In the job: where to log. A child that died getting ready says why when it is waited for."""
        fd, self._target_write = self._target_write, -1
        send_message(fd, target)

    def close(self) -> None:
        """In the job: no target (more) to send; a child still waiting for one ends."""
        if self._target_write >= 0:
            os.close(self._target_write)
            self._target_write = -1

    def prepare(self) -> None:
        os.close(self._target_write)
        _interrupted_once()
        with contextlib.suppress(OSError):
            os.nice(TRACKER_NICENESS)
        _import_mlflow()
        target = receive_message(self._target_read)
        if target is None:  # the job does not track: nothing to do
            raise SystemExit(0)
        self.target = target
        for name, level in target.levels.items():
            logging.getLogger(name or None).setLevel(level)
        self.startup_error = start_tracking(target)

    def log(self, sent: tuple[JobPayload, dict[str, Path]]) -> dict[str, str]:
        if self.startup_error is not None:  # reported when the job is logged, as in process
            raise self.startup_error
        from .sinks.mlflow import log_job

        assert self.target is not None  # prepare() ran
        payload, artifacts = sent
        logged = log_job(self.target.uri, self.target.runs_dir, payload, artifacts)
        return {"experiment_id": logged.experiment_id, "parent_id": logged.parent_id}


@contextlib.contextmanager
def _forked(close_fds: Sequence[int]) -> Iterator[tuple[Aside, _Tracker]]:
    """Fork MLflow's child now (``close_fds`` closed in it); yields it and the job's end of its target pipe. Leaving
    the block kills it unless it was waited for."""
    # pandas, which MLflow imports and pyarrow imports for the job's tables anyway, imported before the fork: the
    # child does not import it again (0.25 s of CPU)
    import pandas  # noqa: F401

    tracker_ = _Tracker()
    with aside(tracker_.log, "MLflow logging", close_fds, prepare=tracker_.prepare, raises=(TrackingError,),
               forward_logs=True) as child:
        tracker_.forked()
        try:
            yield child, tracker_
        finally:
            tracker_.close()


#: The child :func:`early` forked, until a job takes it: (the process that forked it, the child, its tracker).
_EARLY: tuple[int, Aside, _Tracker] | None = None

#: Command-line arguments after which ``harness`` runs no single tracked job: a sweep (whose jobs may run in other
#: processes), Hydra's printing commands, the help.
_NO_SINGLE_JOB = {"-m", "--multirun", "-c", "--cfg", "-i", "--info", "-sc", "--shell-completion", "--hydra-help",
                  "-h", "--help", "-p", "--package"}
_TRACKING_OFF = re.compile(r"(?i)^tracking=(false|no|off|n|0)$")


def could_track(argv: Sequence[str]) -> bool:
    """Whether the command line ``argv`` of ``harness`` may run one tracked job in this process (the config decides;
    a config that turns tracking off only leaves the early child unused)."""
    return not any(a in _NO_SINGLE_JOB or _TRACKING_OFF.match(a) for a in argv)


@contextlib.contextmanager
def early(argv: Sequence[str]) -> Iterator[None]:
    """``harness``: fork MLflow's child now, before Hydra composes the config, if ``argv`` :func:`could_track` (its
    imports then run on the other core meanwhile). The job takes it (:func:`mlflow_child`); leaving the block kills it
    unless the job waited for it."""
    global _EARLY
    if not can_fork() or not could_track(argv):
        yield
        return
    with _forked(()) as (child, tracker_):
        _EARLY = (os.getpid(), child, tracker_)
        try:
            yield
        finally:
            _EARLY = None


def _take_early() -> tuple[Aside, _Tracker] | None:
    """The early child, for the job of the process that forked it (once)."""
    global _EARLY
    found, _EARLY = _EARLY, None
    if found is None or found[0] != os.getpid():
        return None
    return found[1], found[2]


def discard_early() -> None:
    """The job does not track (or logs in process): the early child, if any, ends now."""
    found = _take_early()
    if found is not None:
        found[0].stop()


@contextlib.contextmanager
def mlflow_child(target: Target, close_fds: Sequence[int] = ()) -> Iterator[Aside]:
    """MLflow's child process for a job that logs to ``target``: the early one (:func:`early`), else one forked now
    (``close_fds`` closed in it: the job folder's lock). It opens the store and the experiment at once; send it the
    published job (:func:`harness.runner.logged_aside`). Leaving the block kills it unless it was waited for."""
    found = _take_early()
    if found is not None:
        child, tracker_ = found
        tracker_.give(target)
        try:
            yield child
        finally:
            child.stop()
        return
    with _forked(close_fds) as (child, tracker_):
        tracker_.give(target)
        yield child
