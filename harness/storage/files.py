"""Writing files safely: the one atomic writer of the harness, and the clean-up of what killed writers left.

A file is written to a temporary name in its own folder and renamed over its final name, so a reader sees the
old bytes or the new ones, never a torn file. Temporary names carry the writer's host and pid
(``.NAME.HOST-PID.RANDOM.tmp``, HOST a hash of the host name): a later writer on the same host removes those of
dead processes (a pid means nothing on another host of a shared file system). Files get the permissions the
process umask gives a new file (``0666 & ~umask``), like ``open()``, not ``mkstemp``'s 0600, so a shared
``runs_dir`` stays readable. A full disk or a read-only folder is an :class:`OutputError` naming the file.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import socket
from pathlib import Path
from typing import BinaryIO, Callable

from ..errors import HarnessError

_TMP = re.compile(r"^\..+\.([0-9a-f]{8})-(\d+)\.[0-9a-f]{8}\.tmp$")


class OutputError(HarnessError):
    """An output could not be written (full disk, read-only folder, no permission): names the file."""

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: cannot write: {reason}")


def process_umask() -> int:
    """The process umask (read without changing it for good)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode ``open()`` gives a new file under the current process umask."""
    return 0o666 & ~process_umask()


def os_reason(exc: OSError) -> str:
    """A short reason for an OS error a user can act on."""
    if exc.errno == errno.ENOSPC:
        return "no space left on device"
    if exc.errno == errno.EROFS:
        return "read-only file system"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return exc.strerror or str(exc)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def host_tag() -> str:
    """8 hex digits naming this host in temporary names."""
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def is_temporary(name: str) -> bool:
    """Whether ``name`` is a temporary of :func:`temporary_name` (any host or process)."""
    return _TMP.match(name) is not None


def temporary_name(path: Path) -> Path:
    """A unique temporary name beside ``path`` that names this host and process."""
    return path.with_name(f".{path.name}.{host_tag()}-{os.getpid()}.{secrets.token_hex(4)}.tmp")


def inside(root: Path, rel: str) -> Path:
    """``root/rel``, refused unless it stays inside ``root``: a relative path of plain components (no ``..``, no
    empty or hidden-dot component, no control character), whose resolved location is under ``root``'s. Every
    file a job names from data (a figure named after a kind of human scores, a comparison page named after two
    systems) goes through it before anything is written."""
    parts = rel.split("/")
    bad = (not rel or rel.startswith("/") or "\\" in rel
           or any(p in ("", ".", "..") or any(ord(c) < 32 or ord(c) == 127 for c in p) for p in parts))
    target = Path(root) / rel
    if bad or not target.resolve().is_relative_to(Path(root).resolve()):
        raise OutputError(target, f"{rel!r} would leave the folder {root}")
    return target


def atomic_write(path: Path, data: bytes | str | Callable[[BinaryIO], None]) -> Path:
    """Write ``data`` (bytes, text as UTF-8, or a function writing to a binary file) to ``path`` atomically."""
    path = Path(path)
    tmp = temporary_name(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # 0o666: the kernel applies the umask in force now, as open() does (a mode computed from the umask at
        # import would ignore a umask set later, e.g. 0o002 for a group-shared runs_dir)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as f:
            if callable(data):
                data(f)
            else:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except OSError as exc:
        _discard(tmp)
        raise OutputError(path, os_reason(exc)) from None
    except BaseException:
        _discard(tmp)
        raise
    return path


def _discard(tmp: Path) -> None:
    """Remove a temporary if it exists; the clean-up of a failure never raises an error of its own (a folder under
    a file gives ENOTDIR, a read-only one EROFS: the caller reports the first error)."""
    try:
        tmp.unlink(missing_ok=True)
    except OSError:
        pass


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Remove the temporary files of :func:`atomic_write` that dead processes of this host left in ``folder``."""
    removed: list[Path] = []
    host = host_tag()
    try:
        entries = list(folder.iterdir())
    except OSError:
        return removed
    for entry in entries:
        found = _TMP.match(entry.name)
        if found and found.group(1) == host and not pid_alive(int(found.group(2))):
            try:
                entry.unlink()
                removed.append(entry)
            except OSError:
                pass
    return removed
