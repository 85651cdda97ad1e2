"""The one atomic writer (harness.storage.files): permissions from the umask in force, unique temporary names that name
their writer, nothing partial left by a failure (a read-only or full file system for real, a writer that raises),
and the clean-up of what dead writers left."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import stat
from pathlib import Path

import pytest

from harness.storage.files import OutputError, atomic_write, host_tag, remove_stale_temporaries, temporary_name

_MS_RDONLY, _MS_REMOUNT, _MNT_DETACH = 1, 32, 2


def _libc_call(name: str, *args) -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if getattr(libc, name)(*args) != 0:
        raise OSError(ctypes.get_errno(), f"{name}: {os.strerror(ctypes.get_errno())}")


class TinyFs:
    """A 64 KiB tmpfs mounted in process (mount(2) through libc, no subprocess)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        _libc_call("mount", b"tmpfs", bytes(path), b"tmpfs", 0, b"size=64k")

    def read_only(self) -> None:
        _libc_call("mount", b"tmpfs", bytes(self.path), b"tmpfs", _MS_REMOUNT | _MS_RDONLY, b"size=64k")

    def unmount(self) -> None:
        _libc_call("umount2", bytes(self.path), _MNT_DETACH)


@pytest.fixture()
def tiny_fs(tmp_path):
    """A :class:`TinyFs` under ``tmp_path``; skipped where this process may not mount."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    try:
        fs = TinyFs(mnt)
    except OSError as exc:
        pytest.skip(f"cannot mount a tmpfs here ({exc}): needs root / CAP_SYS_ADMIN")
    try:
        yield fs
    finally:
        fs.unmount()


def dead_pid() -> int:
    """The pid of a process that ran and is gone (forked, exited, reaped)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# ------------------------------------------------------------------------------------------------ writing


def test_bytes_text_and_writer_functions_are_written(tmp_path):
    assert atomic_write(tmp_path / "a.bin", b"\x00\xff") == tmp_path / "a.bin"
    atomic_write(tmp_path / "b.txt", "Grüße\n")
    atomic_write(tmp_path / "deep" / "er" / "c.bin", lambda f: f.write(b"xyz"))
    assert (tmp_path / "a.bin").read_bytes() == b"\x00\xff"
    assert (tmp_path / "b.txt").read_bytes() == "Grüße\n".encode("utf-8")
    assert (tmp_path / "deep" / "er" / "c.bin").read_bytes() == b"xyz"  # folders made as needed
    atomic_write(tmp_path / "a.bin", b"new")
    assert (tmp_path / "a.bin").read_bytes() == b"new" and temporaries(tmp_path) == []


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_permissions_are_those_the_umask_in_force_gives(tmp_path, umask):
    """Like open(), not mkstemp's 0600, and the umask of the moment (set after import, e.g. for a shared
    runs_dir), not the one the process had when the module was imported."""
    previous = os.umask(umask)
    try:
        atomic_write(tmp_path / "f", b"x")
        with open(tmp_path / "g", "wb"):  # the oracle: what open() gives under this umask
            pass
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == stat.S_IMODE((tmp_path / "g").stat().st_mode)


def test_the_temporary_is_unique_beside_the_target_and_names_the_writer(tmp_path):
    target = tmp_path / "report.md"
    seen: list[list[str]] = []

    def outer(f):
        seen.append(temporaries(tmp_path))  # the outer writer's temporary exists while it writes
        atomic_write(target, lambda g: (seen.append(temporaries(tmp_path)), g.write(b"inner")))
        f.write(b"outer")

    atomic_write(target, outer)
    assert len(seen[0]) == 1 and len(seen[1]) == 2  # two writers of one file at once: two distinct names
    for name in seen[1]:
        assert re.fullmatch(rf"\.report\.md\.{host_tag()}-{os.getpid()}\.[0-9a-f]{{8}}\.tmp", name), name
    assert target.read_bytes() == b"outer" and temporaries(tmp_path) == []  # the last rename wins, whole
    names = {temporary_name(target).name for _ in range(200)}
    assert len(names) == 200


# ------------------------------------------------------------------------------------------------ failures


def test_a_writer_that_raises_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "table.parquet"
    target.write_bytes(b"old generation")

    def half(f):
        f.write(b"half of the new")
        raise RuntimeError("the writer failed")

    with pytest.raises(RuntimeError, match="the writer failed"):  # not turned into an OutputError
        atomic_write(target, half)
    assert target.read_bytes() == b"old generation" and temporaries(tmp_path) == []
    with pytest.raises(KeyboardInterrupt):
        atomic_write(tmp_path / "new.bin", lambda f: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.parquet"]


def test_a_folder_under_a_file_is_an_output_error_naming_the_path(tmp_path):
    (tmp_path / "a_file").write_text("x")
    target = tmp_path / "a_file" / "below" / "out.json"
    with pytest.raises(OutputError) as err:
        atomic_write(target, "{}")
    assert err.value.path == str(target) and str(err.value).startswith(f"{target}: cannot write: ")


def test_a_read_only_file_system_keeps_the_old_file(tiny_fs):
    target = tiny_fs.path / "system_scores.parquet"
    target.write_bytes(b"published")
    tiny_fs.read_only()
    with pytest.raises(OutputError) as err:
        atomic_write(target, b"new")
    assert err.value.path == str(target) and err.value.reason == "read-only file system"
    assert str(err.value) == f"{target}: cannot write: read-only file system"
    assert target.read_bytes() == b"published" and temporaries(tiny_fs.path) == []


def test_a_full_file_system_leaves_no_partial_file(tiny_fs):
    target = tiny_fs.path / "segment_scores.parquet"
    target.write_bytes(b"published")
    with pytest.raises(OutputError) as err:
        atomic_write(target, lambda f: f.write(b"\0" * (1 << 20)))
    assert err.value.path == str(target) and err.value.reason == "no space left on device"
    assert target.read_bytes() == b"published" and temporaries(tiny_fs.path) == []
    with pytest.raises(OutputError, match="no space left on device"):
        atomic_write(tiny_fs.path / "new.bin", b"\0" * (1 << 20))
    assert sorted(p.name for p in tiny_fs.path.iterdir()) == ["segment_scores.parquet"]


# ------------------------------------------------------------------------------------------------ clean-up


def test_only_our_temporaries_of_dead_writers_are_removed(tmp_path):
    gone, host = dead_pid(), host_tag()
    stale = [tmp_path / f".report.md.{host}-{gone}.0123abcd.tmp", tmp_path / f".a.b.parquet.{host}-{gone}.deadbeef.tmp"]
    live = tmp_path / f".report.md.{host}-{os.getpid()}.0123abcd.tmp"  # a writer of this very process
    parent = tmp_path / f".report.md.{host}-{os.getppid()}.0123abcd.tmp"  # another live process
    elsewhere = tmp_path / f".report.md.{'0' * 8 if host != '0' * 8 else '1' * 8}-{gone}.0123abcd.tmp"
    not_ours = [tmp_path / f"report.md.{host}-{gone}.0123abcd.tmp",  # no leading dot
                tmp_path / f".report.md.{host}-{gone}.0123ABCD.tmp",  # not our random part
                tmp_path / f".report.md.{host}-{gone}.tmp",  # no random part
                tmp_path / f".report.md.{gone}.0123abcd.tmp",  # no host part
                elsewhere,  # another host's writer: its pid means nothing here (a shared file system)
                tmp_path / "notes.tmp", tmp_path / "report.md"]
    for p in [*stale, live, parent, *not_ours]:
        p.write_text("x")
    removed = remove_stale_temporaries(tmp_path)
    assert sorted(removed) == sorted(stale)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in [live, parent, *not_ours])
    assert remove_stale_temporaries(tmp_path / "no_such_folder") == []
    assert remove_stale_temporaries(tmp_path / "report.md") == []  # a file, not a folder: nothing, no error
