"""A job's folder (harness.job.folder): ours only, one job at a time (a real flock, the holder named), one generation
published at once (manifest.json written last, every file with its SHA-256), job_status.json telling where a run
is, the leftovers of killed runs removed; verified_files trusting nothing that differs from the manifest."""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import JobFolderError
from harness.job.folder import LOCK, MARKER, STATUS, JobFolder
from harness.storage.files import OutputError, host_tag
from harness.storage.manifest import MANIFEST, verified_bytes, verified_files
from harness.version import __version__

HOST = socket.gethostname()


def status(folder: Path) -> dict:
    return json.loads((folder / STATUS).read_text())


def manifest(folder: Path) -> dict:
    return json.loads((folder / MANIFEST).read_text())


def stage(job: JobFolder, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (job.staging / rel).parent.mkdir(parents=True, exist_ok=True)
        (job.staging / rel).write_bytes(data)


def generation(job: JobFolder, files: dict[str, bytes], hashes: dict | None = None) -> dict:
    """One complete run: begin, stage, publish, say ok."""
    job.begin({"experiment": "exp"})
    stage(job, files)
    published = job.publish(hashes or {"ref:r": "0" * 64}, {"job_key": "k"})
    job.write_status("ok", job_key="k")
    return published


def lockable(path: Path) -> bool:
    """Whether a new open file description can take the flock now."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


@pytest.fixture()
def job(tmp_path):
    folder = JobFolder(tmp_path / "runs" / "exp" / "job-1a2b", job="exp/job-1a2b")
    folder.check([])
    folder.lock()
    yield folder
    folder.release()


# ------------------------------------------------------------------------------------------------ ours only


def test_a_new_folder_is_claimed_and_marked(job):
    marker = json.loads((job.path / MARKER).read_text())
    assert marker == {"harness": __version__, "job": "exp/job-1a2b"}
    holder = json.loads((job.path / LOCK).read_text())
    assert holder["pid"] == os.getpid() and holder["host"] == HOST and holder["job"] == "exp/job-1a2b"
    assert not lockable(job.path / LOCK)
    job.release()
    assert lockable(job.path / LOCK)
    JobFolder(job.path, job="exp/job-1a2b").check([])  # marked: ours, whatever it holds


def test_a_folder_a_job_is_starting_in_is_not_foreign(tmp_path):
    """Between a starting job's lock and its marker, the folder holds the lock file and the marker's temporary: a
    second identical job must then find the folder held (the lock), not call it foreign (seen in CI with three
    identical jobs at once). Any other file still makes the folder foreign."""
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / LOCK).write_text("")
    (folder / f".{MARKER}.{host_tag()}-12345.0123abcd.tmp").write_text("{}")
    JobFolder(folder, job="j").check([])
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(JobFolderError, match=r"did not write \(notes.txt\)"):
        JobFolder(folder, job="j").check([])


def test_a_folder_that_is_not_ours_is_refused_untouched(tmp_path):
    mine = tmp_path / "thesis"
    mine.mkdir()
    for name in ("a.tex", "b.bib", "c.png", "d.txt", "e.md", "f.sty"):
        (mine / name).write_text("precious")
    with pytest.raises(JobFolderError) as err:
        JobFolder(mine, job="j").check([])
    assert err.value.folder == str(mine)
    assert "holds files the harness did not write (a.tex, b.bib, c.png, d.txt, e.md, ...)" in str(err.value)
    assert sorted(p.name for p in mine.iterdir()) == ["a.tex", "b.bib", "c.png", "d.txt", "e.md", "f.sty"]
    with pytest.raises(JobFolderError, match="is a file, not a folder"):
        JobFolder(mine / "a.tex", job="j").check([])
    empty = tmp_path / "empty"
    empty.mkdir()
    JobFolder(empty, job="j").check([])  # an empty folder may be taken
    JobFolder(tmp_path / "new", job="j").check([])  # and a new one


def test_a_folder_holding_an_input_is_refused_however_it_is_named(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / "systems").mkdir(parents=True)
    system = data / "systems" / "Nemo.txt"
    system.write_text("x\n")
    (tmp_path / "link").symlink_to(data)
    monkeypatch.chdir(tmp_path)
    for folder in (data, data / "systems", tmp_path / "link", Path("data"), Path("link") / "systems"):
        with pytest.raises(JobFolderError, match="holds an input of this job"):
            JobFolder(folder, job="j").check([system])
    JobFolder(tmp_path / "out", job="j").check([system])


# ------------------------------------------------------------------------------------------------ one at a time


def test_a_held_folder_is_refused_naming_the_holder(job):
    """A second open file description of the lock file (a second job in this very process) is refused too:
    flock locks belong to open file descriptions, not to processes."""
    before = (job.path / LOCK).read_bytes()
    second = JobFolder(job.path, job="exp/job-1a2b")
    with pytest.raises(JobFolderError) as err:
        second.lock()
    assert err.value.holder["pid"] == os.getpid() and err.value.holder["host"] == HOST
    assert f"another job holds this folder (pid {os.getpid()} on {HOST} since " in str(err.value)
    assert str(err.value).startswith(str(job.path))
    assert (job.path / LOCK).read_bytes() == before  # the holder's record is left alone
    job.release()
    second.lock()
    assert json.loads((job.path / LOCK).read_text())["pid"] == os.getpid()
    second.release()


_CHILD = """
import sys, time
from pathlib import Path
from harness.storage.files import atomic_write
from harness.job.folder import JobFolder
job = JobFolder(Path(sys.argv[1]), job="exp/job")
job.lock()
staging = job.begin()
(staging / "report.md").write_text("half a report")
def stall(f):
    f.write(b'{"status": "runn')
    print(job.generation, flush=True)
    time.sleep(600)
atomic_write(job.path / "job_status.json", stall)  # killed in the middle of this write
"""


def test_a_killed_holder_lets_go_and_its_leftovers_are_removed(tmp_path):
    """A real second process holds the folder: the error names it; killed with SIGKILL mid-write, the kernel
    releases its lock, and the next generation removes its staging folder and its half-written temporary."""
    folder = tmp_path / "job"
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        killed_generation = child.stdout.readline().strip()
        assert killed_generation, "the child did not start"
        with pytest.raises(JobFolderError) as err:
            JobFolder(folder, job="exp/job").lock()
        assert f"(pid {child.pid} on {HOST} since " in str(err.value) and err.value.holder["pid"] == child.pid
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
    staged = folder / f".staging-{killed_generation}"
    half = list(folder.glob(f".{STATUS}.{host_tag()}-{child.pid}.*.tmp"))
    assert (staged / "report.md").read_text() == "half a report" and len(half) == 1
    assert status(folder)["status"] == "running"  # the killed run's last word: its half status never landed
    job = JobFolder(folder, job="exp/job")
    job.check([])
    job.lock()  # taken over: no error
    try:
        job.begin()
        assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == sorted(
            [MARKER, LOCK, f".staging-{job.generation}"])
        assert status(folder)["status"] == "running" and status(folder)["pid"] == os.getpid()
    finally:
        job.release()


def test_a_released_folder_has_no_holder_to_take_over(tmp_path, caplog):
    """A job that ends normally leaves an empty lock file: the next run takes the folder silently; only a holder
    that died with the lock is named as taken over."""
    folder = tmp_path / "job"
    first = JobFolder(folder, job="exp/job")
    first.lock()
    assert json.loads((folder / LOCK).read_text())["pid"] == os.getpid()
    first.release()
    assert (folder / LOCK).read_bytes() == b""
    caplog.set_level("INFO", logger="harness.job.folder")
    second = JobFolder(folder, job="exp/job")
    second.lock()
    second.release()
    assert "taking over" not in caplog.text
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (folder / LOCK).write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname(), "started": "x"}))
    third = JobFolder(folder, job="exp/job")
    third.lock()
    third.release()
    assert f"from pid {int(dead.stdout)}, which is no longer running" in caplog.text


def test_begin_keeps_temporaries_of_live_writers(job):
    (job.path / ".staging-20260101T000000Z-abcdef" / "sub").mkdir(parents=True)
    live = job.path / f".report.md.{host_tag()}-{os.getpid()}.0123abcd.tmp"
    live.write_text("being written")
    staging = job.begin()
    assert staging == job.staging and staging.is_dir() and staging.name == f".staging-{job.generation}"
    assert live.exists() and not (job.path / ".staging-20260101T000000Z-abcdef").exists()


# ------------------------------------------------------------------------------------------------ generations


def test_publish_writes_the_manifest_with_every_files_hash(job):
    files = {"system_scores.parquet": b"PAR1 table", "report.md": b"# report\n", "figures/a.png": b"\x89PNG"}
    job.begin({"experiment": "exp"})
    running = status(job.path)
    assert running["status"] == "running" and running["generation"] == job.generation
    assert running["published_generation"] is None and running["experiment"] == "exp"
    stage(job, files)
    published = job.publish({"ref:r": "ab" * 32}, {"job_key": "k"})
    assert published == manifest(job.path)
    assert published["generation"] == job.generation and published["job"] == "exp/job-1a2b"
    assert published["inputs_sha256"] == {"ref:r": "ab" * 32} and published["job_key"] == "k"
    assert published["files"] == {rel: {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
                                  for rel, data in files.items()}
    assert all((job.path / rel).read_bytes() == data for rel, data in files.items())
    assert not job.staging.exists()
    assert status(job.path)["status"] == "running"  # ok only when the caller says so, after publishing
    job.write_status("ok", job_key="k")
    ok = status(job.path)
    assert ok["status"] == "ok" and ok["generation"] == ok["published_generation"] == published["generation"]
    assert set(verified_files(job.path)) == set(files)
    assert verified_bytes(job.path, "figures/a.png") == b"\x89PNG"


def test_a_new_generation_replaces_the_old_one_and_failures_keep_it(job):
    first = generation(job, {"a.txt": b"a1", "b.txt": b"b1"})["generation"]
    job.begin()
    assert status(job.path)["published_generation"] == first  # running: the old generation is still the one
    stage(job, {"a.txt": b"a2", "c.txt": b"c2"})
    job.publish({})
    job.write_status("ok")
    second = status(job.path)
    assert second["generation"] == second["published_generation"] != first
    assert sorted(p.name for p in job.path.iterdir()) == sorted([MARKER, LOCK, STATUS, MANIFEST, "a.txt", "c.txt"])
    assert (job.path / "a.txt").read_bytes() == b"a2"  # b.txt, of the old generation only, is gone
    job.begin()
    stage(job, {"a.txt": b"never published"})
    job.discard()
    job.write_status("failed", error="RuntimeError: boom")
    failed = status(job.path)
    assert failed["status"] == "failed" and failed["published_generation"] == second["generation"]
    assert failed["error"] == "RuntimeError: boom" and not job.staging.exists()
    assert set(verified_files(job.path)) == {"a.txt", "c.txt"} and (job.path / "a.txt").read_bytes() == b"a2"


def test_a_publish_that_fails_halfway_leaves_nothing_trusted(job):
    """manifest.json goes first and comes back last: a generation moved in halfway (here the move of z.txt fails
    for real, a folder is in its way) is a mix that nothing trusts."""
    generation(job, {"a.txt": b"a1", "z.txt": b"z1"})
    (job.path / "z.txt").unlink()
    (job.path / "z.txt" / "in_the_way").mkdir(parents=True)
    job.begin()
    stage(job, {"a.txt": b"a2", "z.txt": b"z2"})
    with pytest.raises(OutputError) as err:
        job.publish({})
    assert err.value.path == str(job.path)
    assert (job.path / "a.txt").read_bytes() == b"a2"  # moved in before the failure...
    assert not (job.path / MANIFEST).exists() and verified_files(job.path) == {}  # ...and not trusted
    assert status(job.path)["status"] == "running"


def test_a_publish_killed_before_its_manifest_leaves_no_older_files_behind(job, monkeypatch):
    """Killed after moving its files in and before writing its manifest, a publish leaves no manifest; the next
    one still knows the files of both older generations (``.harness.outgoing``) and removes those it does not
    have, so they are neither left on disk nor logged to MLflow as this generation's."""
    import harness.job.folder as folder_module

    generation(job, {"a.txt": b"a1", "b.txt": b"b1"})
    job.begin()
    stage(job, {"a.txt": b"a2", "c.txt": b"c2"})
    real = folder_module.atomic_write

    def killed_at_the_manifest(path, data):
        if Path(path).name == MANIFEST:
            raise KeyboardInterrupt  # the process dies here
        return real(path, data)

    monkeypatch.setattr(folder_module, "atomic_write", killed_at_the_manifest)
    with pytest.raises(KeyboardInterrupt):
        job.publish({})
    monkeypatch.undo()
    assert not (job.path / MANIFEST).exists() and verified_files(job.path) == {}
    job.begin()  # the next run of the job
    stage(job, {"a.txt": b"a3"})
    job.publish({})
    job.write_status("ok")
    assert sorted(p.name for p in job.path.iterdir()) == sorted([MARKER, LOCK, STATUS, MANIFEST, "a.txt"])
    assert set(verified_files(job.path)) == {"a.txt"}


def test_publish_removes_old_files_inside_the_folder_only(job, tmp_path):
    generation(job, {"a.txt": b"a1"})
    victim = tmp_path / "victim.txt"
    victim.write_text("not the job's")
    old = manifest(job.path)
    old["files"]["../../../victim.txt"] = {"sha256": "0" * 64, "bytes": 1}  # a manifest edited by hand
    (job.path / MANIFEST).write_text(json.dumps(old))
    generation(job, {"b.txt": b"b2"})
    assert victim.read_text() == "not the job's" and not (job.path / "a.txt").exists()


# ------------------------------------------------------------------------------------------------ trust


def test_verified_files_refuses_a_tampered_file(job):
    files = {"a.parquet": b"A" * 100, "b.md": b"B" * 10, "c.png": b"C" * 10, "d.txt": b"D"}
    generation(job, files)
    assert set(verified_files(job.path)) == set(files)
    flipped = bytearray(files["a.parquet"])
    flipped[50] ^= 0x01
    (job.path / "a.parquet").write_bytes(bytes(flipped))  # same size, one bit
    (job.path / "b.md").write_bytes(b"B" * 9)  # truncated
    (job.path / "c.png").unlink()
    (job.path / "e.txt").write_bytes(b"not in the manifest")
    assert set(verified_files(job.path)) == {"d.txt"}
    assert verified_bytes(job.path, "a.parquet") is None and verified_bytes(job.path, "c.png") is None
    assert verified_bytes(job.path, "e.txt") is None and verified_bytes(job.path, "d.txt") == b"D"


@pytest.mark.parametrize("damage", [
    b"", b"{not json", b"[1, 2]", b'{"files": ["d.txt"]}', b'{"files": {"d.txt": "abc"}}',
    b'{"files": {"../outside.txt": {"sha256": "%s", "bytes": 7}}}' % hashlib.sha256(b"outside").hexdigest().encode(),
    b'{"files": {"%s": {"sha256": "%s", "bytes": 7}}}' % (b"OUT", hashlib.sha256(b"outside").hexdigest().encode()),
])
def test_a_damaged_manifest_trusts_nothing_and_raises_nothing(tmp_path, damage):
    folder = tmp_path / "job"
    folder.mkdir()
    (tmp_path / "outside.txt").write_bytes(b"outside")
    (folder / "d.txt").write_bytes(b"D")
    (folder / MANIFEST).write_bytes(damage.replace(b"OUT", str(tmp_path / "outside.txt").encode()))
    assert verified_files(folder) == {}
    assert verified_bytes(folder, "d.txt") is None and verified_bytes(folder, "../outside.txt") is None
    assert verified_files(tmp_path / "no_such_folder") == {}


# ------------------------------------------------------------------------------------------------ faults


class TinyFs:
    """A small tmpfs mounted in process (mount(2) through libc, no subprocess); ``nr_inodes`` limits its files."""

    def __init__(self, path: Path, options: bytes) -> None:
        self.path = path
        self.libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        if self.libc.mount(b"tmpfs", bytes(path), b"tmpfs", 0, options) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))

    def unmount(self) -> None:
        self.libc.umount2(bytes(self.path), 2)  # MNT_DETACH


@pytest.fixture()
def three_inodes(tmp_path):
    """A tmpfs with room for its root, one folder and one file: a new file fails with ENOSPC."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    try:
        fs = TinyFs(mnt, b"size=64k,nr_inodes=3")
    except OSError as exc:
        pytest.skip(f"cannot mount a tmpfs here ({exc}): needs root / CAP_SYS_ADMIN")
    try:
        yield mnt
    finally:
        fs.unmount()


def test_a_folder_that_cannot_be_marked_is_let_go(three_inodes):
    """The lock is taken, then the marker cannot be written (no inode left): an OutputError naming the marker,
    and the lock is released at once (held() never got to its finally)."""
    folder = three_inodes / "job"
    folder.mkdir()
    job = JobFolder(folder, job="j")
    with pytest.raises(OutputError) as err:
        with job.held([]):
            pytest.fail("the folder was held")
    assert err.value.path == str(folder / MARKER) and err.value.reason == "no space left on device"
    assert lockable(folder / LOCK) and job._lock_fd is None
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
