"""A job's folder: one job at a time holds it, and it holds one complete generation of results or says it does not.

- **Ours only.** A folder is used only if it is empty or carries our marker (``.harness-job``), and never if it
  is, or contains, one of the job's inputs.
- **One job at a time.** A job takes an exclusive lock (``fcntl.flock`` on ``.harness.lock``, released by the
  kernel when the process dies, so the lock of a dead job is simply taken over). The lock file names its holder
  (pid, host, start time) for the error a second job gets.
- **One generation, published at once.** A run is a *generation* (``job_status.json`` says ``running`` and
  names it from the start). Every output is written into ``.staging-<generation>/``; publishing notes the files
  of the outgoing generation(s) (``.harness.outgoing``), removes the old ``manifest.json``, moves the staged files
  in, removes the old generation's files that the new one does not have, then writes ``manifest.json`` (every file with its SHA-256 and size, the input hashes) and finally
  ``job_status.json`` ``ok``. A reader trusts a file only when ``job_status.json`` says ``ok`` and
  ``manifest.json`` of the same generation lists it with that hash (:func:`verified_files`).
- **Leftovers are removed.** The next run of the same job removes staging folders and temporary files that a
  killed run left.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import secrets
import shutil
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..errors import JobFolderError
from ..storage.files import OutputError, atomic_write, is_temporary, os_reason, pid_alive, remove_stale_temporaries
from ..storage.manifest import MANIFEST, listed_files, read_json, sha256_of
from ..storage.manifest import (
    verified_files as verified_files,  # where earlier releases had it (a script may import it)
)
from ..version import __version__

log = logging.getLogger(__name__)

MARKER = ".harness-job"
LOCK = ".harness.lock"
STATUS = "job_status.json"
PENDING = "tracking_pending.json"
OUTGOING = ".harness.outgoing"  # while publishing: every file of the old generations and the new one
_STAGING = ".staging-"
#: Files of ours that are not results (never listed in a manifest, never taken for someone else's).
BOOKKEEPING = frozenset({MARKER, LOCK, STATUS, MANIFEST, PENDING, OUTGOING})


def new_generation() -> str:
    """A generation id: UTC time and 6 random hex digits (``20261203T081512Z-1a2b3c``)."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


@dataclass
class JobFolder:
    """The folder of one job (see the module docstring for the protocol)."""

    path: Path
    job: str
    generation: str = ""
    _lock_fd: int | None = None
    _started: float = 0.0

    # -- claiming ------------------------------------------------------------------------------------------------

    def check(self, inputs: Sequence[Path]) -> None:
        """Refuse a folder that is a file, holds files the harness did not write, or is or contains an input."""
        path = self.path
        if path.exists() and not path.is_dir():
            raise JobFolderError(path, "is a file, not a folder", holder=None)
        real = path.resolve()  # both sides resolved: a relative or symlinked folder is no way around this check
        for item in inputs:
            item = Path(item).resolve()
            if item == real or real in item.parents:
                raise JobFolderError(path, f"holds an input of this job ({item}); results go to a folder of their "
                                     "own (output_dir=...)")
        if path.is_dir() and not (path / MARKER).exists():
            # a job starting in this folder right now has its lock and its marker's temporary here, nothing else
            foreign = sorted(p.name for p in path.iterdir()
                             if p.name != LOCK and not (p.name.startswith(f".{MARKER}.") and is_temporary(p.name)))
            if foreign:
                shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
                raise JobFolderError(path, f"holds files the harness did not write ({shown}); pick an empty or new "
                                     "folder for output_dir")

    def lock(self) -> None:
        """Take the folder (exclusive, non-blocking); a held folder is an error naming the holder."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise OutputError(self.path / LOCK, os_reason(exc)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise OutputError(self.path / LOCK, os_reason(exc)) from None
            holder = read_json(self.path / LOCK) or {}
            who = (f"pid {holder.get('pid', '?')} on {holder.get('host', '?')} since "
                   f"{holder.get('started', '?')}") if holder else "another process"
            raise JobFolderError(self.path, f"another job holds this folder ({who})", holder=holder) from None
        self._lock_fd = fd
        # From here on a failure lets the folder go again: held() has not entered its try yet, so nothing else
        # would release it (a full disk here is an OutputError naming the file, not a traceback)
        try:
            previous = read_json(self.path / LOCK) or {}
            pid = previous.get("pid")
            if isinstance(pid, int) and pid > 0 and pid != os.getpid() \
                    and previous.get("host") == socket.gethostname() and not pid_alive(pid):
                log.info("taking over %s from pid %s, which is no longer running", self.path, pid)
            self._started = time.time()
            info = {"pid": os.getpid(), "host": socket.gethostname(),
                    "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self._started)), "job": self.job}
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps(info).encode(), 0)
            except OSError as exc:
                raise OutputError(self.path / LOCK, os_reason(exc)) from None
            if not (self.path / MARKER).exists():
                atomic_write(self.path / MARKER, json.dumps({"harness": __version__, "job": self.job}) + "\n")
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):  # a job that ends normally leaves no holder to be "taken over" from
                os.ftruncate(self._lock_fd, 0)
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            with contextlib.suppress(OSError):  # closed even if unlocking failed (closing releases the lock too)
                os.close(self._lock_fd)
            self._lock_fd = None

    def lock_fds(self) -> tuple[int, ...]:
        """The descriptor holding the lock, if held: a forked child process closes it (it must not keep the
        folder locked after the job)."""
        return () if self._lock_fd is None else (self._lock_fd,)

    @contextlib.contextmanager
    def held(self, inputs: Sequence[Path]) -> Iterator[JobFolder]:
        """Check, lock, and release at the end (also on errors)."""
        self.check(inputs)
        self.lock()
        try:
            yield self
        finally:
            self.release()

    # -- a generation --------------------------------------------------------------------------------------------

    def begin(self, info: Mapping[str, Any] | None = None) -> Path:
        """Start a generation: clean what killed runs left, say ``running``, return the staging folder."""
        for entry in self.path.iterdir():
            if entry.name.startswith(_STAGING) and entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
        remove_stale_temporaries(self.path)
        self.generation = new_generation()
        self.write_status("running", **(info or {}))
        staging = self.path / f"{_STAGING}{self.generation}"
        try:
            staging.mkdir()
        except OSError as exc:
            raise OutputError(staging, os_reason(exc)) from None
        return staging

    @property
    def staging(self) -> Path:
        return self.path / f"{_STAGING}{self.generation}"

    def write_status(self, status: str, **fields: Any) -> None:
        previous = read_json(self.path / STATUS) or {}
        published: Any
        if status == "ok":  # this generation is the published one now
            published = self.generation
        else:
            published = previous.get("published_generation") if previous.get("status") != "ok" else \
                previous.get("generation")
        record = {"status": status, "job": self.job, "generation": self.generation,
                  "published_generation": published, "pid": os.getpid(), "host": socket.gethostname(),
                  "started_at": self._started, "updated_at": time.time(), **fields}
        if status == "running":  # what a reader of the file needs if this process dies now (a SIGKILL, a crash)
            record["note"] = (f"running as process {os.getpid()} on {socket.gethostname()}: if that process is gone, "
                              "the job was killed; the files manifest.json lists are the previous complete "
                              "generation, and rerunning the job replaces them (read_status() says 'dead')")
        atomic_write(self.path / STATUS, json.dumps(record, indent=1, default=str) + "\n")

    def publish(self, input_hashes: Mapping[str, str], extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Move every staged file in, at once as far as readers can tell (see the module docstring)."""
        staging = self.staging
        files = {}
        for path in sorted(p for p in staging.rglob("*") if p.is_file()):
            rel = path.relative_to(staging).as_posix()
            files[rel] = {"sha256": sha256_of(path), "bytes": path.stat().st_size}
        # the files of the generations being replaced: the old manifest's, and those a publish killed before it
        # wrote its manifest had noted (without them, an older generation's files would stay on for good)
        old = {**listed_files(read_json(self.path / OUTGOING) or {}), **listed_files(read_json(self.path / MANIFEST) or {})}
        try:
            atomic_write(self.path / OUTGOING, json.dumps({"files": {**old, **files}}, indent=1) + "\n")
            (self.path / MANIFEST).unlink(missing_ok=True)
            for rel in files:
                target = self.path / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / rel, target)
            for rel in old:  # a damaged manifest removes nothing, and nothing outside the folder
                if rel not in files and rel not in BOOKKEEPING:
                    (self.path / rel).unlink(missing_ok=True)
        except OSError as exc:
            raise OutputError(self.path, os_reason(exc)) from None
        manifest = {"generation": self.generation, "job": self.job, "harness_version": __version__,
                    "created_at": time.time(), "files": files, "inputs_sha256": dict(input_hashes),
                    **(extra or {})}
        atomic_write(self.path / MANIFEST, json.dumps(manifest, indent=1, default=str) + "\n")
        (self.path / OUTGOING).unlink(missing_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        return manifest

    def kept(self) -> str:
        """What a failed generation leaves usable, in words: the previous complete generation (its manifest), or
        nothing of this job."""
        manifest = read_json(self.path / MANIFEST)
        if manifest and isinstance(manifest.get("generation"), str):
            return f"{self.path} keeps its previous complete generation ({manifest['generation']}); nothing new"
        return f"nothing was published in {self.path}"

    def discard(self) -> None:
        """Remove this generation's staging folder (the published generation stays as it was)."""
        if self.generation:
            shutil.rmtree(self.staging, ignore_errors=True)


def read_status(folder: str | Path) -> dict[str, Any]:
    """``job_status.json`` of a job folder as it stands now: a ``running`` status whose process is gone (same host,
    its pid no longer runs; or the folder's lock is free) reads ``dead``, with the status it had as
    ``recorded_status``. Empty when there is no status."""
    folder = Path(folder)
    record = read_json(folder / STATUS) or {}
    if record.get("status") != "running":
        return record
    pid = record.get("pid")
    gone = record.get("host") == socket.gethostname() and isinstance(pid, int) and not pid_alive(pid)
    if not gone and (folder / LOCK).exists():
        with contextlib.suppress(OSError):
            fd = os.open(folder / LOCK, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # free: no job holds the folder
                gone = True
            except OSError:
                pass
            finally:
                os.close(fd)
    return {**record, "status": "dead", "recorded_status": "running"} if gone else record
