"""`harness-score` as a user runs it, the sacrebleu CLI as the oracle: its numbers (every digit with ``--full``, our
own output), a drop-in for sacrebleu's output in scripts (tests/entry/test_sacrebleu_dropin.py compares the two
commands' output exhaustively), one-line errors.

Both commands run in this process (their ``main`` with the command line as ``sys.argv`` gives, standard input
from a real file descriptor, the standard streams captured): a new process per call costs 0.3-0.8 s of imports
and these tests make about sixty. What only a process shows is tested in real processes (:func:`run` with
``process=True``): the console entry point's output and exit status, a device on standard input, and what a
fresh process imports."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import threading
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from support import DEMO, executable, exit_status

pytestmark = pytest.mark.slow  # end to end: the fast tier (-m 'not slow') leaves it out

REF_C, REF_D = str(DEMO / "refs" / "ref-C.txt"), str(DEMO / "refs" / "ref-D.txt")
SYS = {n: str(DEMO / "systems" / f"{n}.txt") for n in ("Nemo", "UEdin", "Online-W")}
#: The fields of sacrebleu's signature that describe the BLEU computed (``version`` differs by design).
SIGNATURE_FIELDS = ("nrefs", "case", "eff", "tok", "smooth")


class _Descriptor:
    """A standard stream as sacrebleu's ``main`` uses it: it reopens ``fileno()`` (and closes what it opened), so
    each call hands out a duplicate of ``fd``."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def fileno(self) -> int:
        return os.dup(self.fd)


def run(*args: str, check: bool = True, stdin: str | None = None,
        process: bool = False) -> subprocess.CompletedProcess:
    """``harness-score ARGS`` (``stdin``: a file fed to standard input): ``harness.cli.main`` in this process, or the
    installed command in a new one (``process=True``)."""
    with open(stdin or os.devnull, "rb") as feed:
        if process:
            done = subprocess.run([executable("harness-score"), *args], stdin=feed, capture_output=True, timeout=300)
            proc = subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())
        else:
            from harness.cli import main

            out, err = io.StringIO(), io.StringIO()
            saved = sys.stdin
            sys.stdin = io.TextIOWrapper(feed, encoding="utf-8")  # a real descriptor: /dev/zero is seen as a device
            try:
                with redirect_stdout(out), redirect_stderr(err):
                    try:
                        status = main(list(args))
                    except SystemExit as exc:  # argparse's usage errors
                        status = exit_status(exc)
            finally:
                sys.stdin.detach()
                sys.stdin = saved
            proc = subprocess.CompletedProcess(["harness-score", *args], status, out.getvalue(), err.getvalue())
    if check and proc.returncode != 0:
        raise AssertionError(proc.stderr)
    return proc


def sacrebleu_cli(*args: str, stdin: str | None = None) -> str:
    """What ``sacrebleu ARGS`` prints: sacrebleu's own ``main`` in this process (colours off, its logging handler
    and the standard streams restored afterwards)."""
    from sacrebleu.sacrebleu import main

    root = logging.getLogger()
    saved = (sys.argv, sys.stdin, sys.stdout, root.handlers[:], root.level, os.environ.get("NO_COLOR"))
    with open(stdin or os.devnull, "rb") as feed, tempfile.TemporaryFile() as out:
        sys.argv, sys.stdin, sys.stdout = ["sacrebleu", *args], _Descriptor(feed.fileno()), _Descriptor(out.fileno())
        os.environ["NO_COLOR"] = "1"
        try:
            try:
                main()
                status = 0
            except SystemExit as exc:
                status = exit_status(exc)
            if sys.stdout is not saved[2] and hasattr(sys.stdout, "close"):
                sys.stdout.close()  # sacrebleu's own file object on a duplicate: flushed and closed
            if hasattr(sys.stdin, "close"):
                sys.stdin.close()
        finally:
            sys.argv, sys.stdin, sys.stdout = saved[:3]
            root.handlers[:] = saved[3]
            root.setLevel(saved[4])
            if saved[5] is None:
                os.environ.pop("NO_COLOR", None)
            else:
                os.environ["NO_COLOR"] = saved[5]
        assert status == 0, f"sacrebleu {' '.join(args)} exited {status}"
        out.seek(0)
        return out.read().decode()


def signature_fields(signature: str) -> dict[str, str]:
    return dict(part.split(":", 1) for part in signature.split("|"))


def assert_indent_1(text: str) -> None:
    """Exactly ``json.dumps(..., indent=1)`` of what it holds: every JSON output is indented alike."""
    assert text == json.dumps(json.loads(text), indent=1, ensure_ascii=False) + "\n"


def assert_one_line_error(proc: subprocess.CompletedProcess, status: int) -> str:
    assert proc.returncode == status, (proc.returncode, proc.stderr)
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("harness-score: error: "), proc.stderr
    return proc.stderr.strip()


# --- scores: the sacrebleu CLI is the oracle ------------------------------------------------------------------------


@pytest.mark.parametrize("options", [[], ["--tokenize", "intl"], ["--lowercase"], ["--smooth-method", "none"],
                                     ["--tokenize", "char", "--smooth-method", "floor", "--smooth-value", "0.2"]])
def test_scores_equal_the_sacrebleu_cli(options):
    out = run(REF_C, REF_D, "-i", SYS["Nemo"], "--format", "json", "--full", *options).stdout
    ours = json.loads(out)
    assert isinstance(ours, list) and len(ours) == 1  # --full with -i: always a list
    ours = ours[0]
    theirs = json.loads(sacrebleu_cli(REF_C, REF_D, "-i", SYS["Nemo"], "-f", "json", "-w", "10", *options))
    assert abs(ours["score"] - theirs["score"]) < 1e-9
    assert ours["name"] == "BLEU" and ours["system"] == "Nemo" and len(ours["precisions"]) == 4
    assert ours["verbose_score"] == theirs["verbose_score"]
    assert {"score", "precisions", "bp", "ratio", "hyp_len", "ref_len", "signature", "counts", "totals"} <= set(ours)


def test_text_output_is_the_sacrebleu_score_line():
    line = run(REF_C, "-i", SYS["Nemo"], "-f", "text", "-w", "2", process=True).stdout.strip()  # the installed command
    assert line.startswith("BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|order:4|reflen:closest|")
    theirs = sacrebleu_cli(REF_C, "-i", SYS["Nemo"], "-f", "text", "-w", "2").strip()
    assert line.split(" = ", 1)[1] == theirs.split(" = ", 1)[1]


def test_the_defaults_are_sacrebleus():
    """JSON by default, one decimal (``-w 1``), the score rounded as sacrebleu rounds it, the object alone with
    one ``-i`` file as from standard input."""
    ours = json.loads(run(REF_C, "-i", SYS["Nemo"]).stdout)
    theirs = json.loads(sacrebleu_cli(REF_C, "-i", SYS["Nemo"]))
    assert ours["score"] == theirs["score"] == 40.1 and ours["verbose_score"] == theirs["verbose_score"]
    assert run(REF_C, "-b", stdin=SYS["Nemo"]).stdout == sacrebleu_cli(REF_C, "-b", stdin=SYS["Nemo"]) == "40.1\n"


def test_several_systems_and_tsv():
    out = run(REF_C, "-i", SYS["Nemo"], SYS["UEdin"], "--format", "tsv").stdout.splitlines()
    assert out[0].split("\t")[:2] == ["name", "score"] and [r.split("\t")[0] for r in out[1:]] == ["Nemo", "UEdin"]


def test_sentence_level_json():
    out = run(REF_C, "-i", SYS["Nemo"], "--sentence-level", "--format", "json", "--full").stdout
    assert_indent_1(out)
    rows = json.loads(out)
    assert len(rows) == 527 and rows[3]["seg_id"] == 3 and rows[3]["name"] == "BLEU"
    theirs = sacrebleu_cli(REF_C, "-i", SYS["Nemo"], "--sentence-level", "-b", "-w", "10").split()
    assert all(abs(r["score"] - float(t)) < 1e-8 for r, t in zip(rows, theirs))


@pytest.mark.parametrize("test", ["--paired-bs", "--paired-ar"])
def test_paired_tests_equal_the_sacrebleu_cli(test):
    systems = [SYS["Nemo"], SYS["UEdin"], SYS["Online-W"]]
    extra = ["--n-samples", "2000"] if test == "--paired-ar" else []
    out = run(REF_C, "-i", *systems, test, "--format", "json", "--full", *extra).stdout
    assert_indent_1(out)
    ours = json.loads(out)
    flag = "--paired-ar-n" if test == "--paired-ar" else "--paired-bs-n"
    theirs = json.loads(sacrebleu_cli(REF_C, "-i", *systems, test, flag, "2000" if extra else "1000", "-f", "json"))
    assert ours[0]["p_value"] is None and ours[0]["BLEU"]["p_value"] is None
    assert [o["system"] for o in ours] == systems
    for mine, their in zip(ours, theirs):
        # sacrebleu's shape: BLEU is an object of score, p_value, mean and ci (mean and ci null for AR)
        assert set(mine["BLEU"]) == set(their["BLEU"])
        for key, value in their["BLEU"].items():
            if value is None:
                assert mine["BLEU"][key] is None, key
            else:
                assert mine["BLEU"][key] == pytest.approx(value, abs=1e-9), key
        assert mine["p_value"] == mine["BLEU"]["p_value"]
    for mine, their in zip(ours[1:], theirs[1:]):
        assert mine["p_value"] == pytest.approx(their["BLEU"]["p_value"], abs=1e-12)
    text = run(REF_C, "-i", *systems, test, *extra, "--full", "-f", "text").stdout  # ours: one line per system
    assert "Baseline: Nemo" in text and "*" in text


def test_confidence_interval_matches_sacrebleu():
    ours = json.loads(run(REF_C, "-i", SYS["Nemo"], "--confidence", "--format", "json", "--full").stdout)[0]
    theirs = json.loads(sacrebleu_cli(REF_C, "-i", SYS["Nemo"], "--confidence", "-f", "json", "-w", "10"))
    assert ours["mean"] == pytest.approx(theirs["confidence_mean"], abs=1e-9)
    assert ours["ci"] == pytest.approx(theirs["confidence_var"], abs=1e-9)
    assert ours["ci_low"] < ours["score"] < ours["ci_high"]


# --- a drop-in for the sacrebleu CLI in scripts ----------------------------------------------------------------------


@pytest.mark.parametrize("options", [[], ["-lc", "-tok", "intl", "-s", "floor", "-sv", "0.2"], ["--confidence"]],
                         ids=["default", "lc-intl-floor", "confidence"])
def test_stdin_json_is_sacrebleus_object(options):
    """A script parsing `sacrebleu REF < HYP -f json` works with ours: sacrebleu's object, key for key and value for
    value (scores rounded to -w 10), but the signature and `version`, which name our tool, and the keys of the
    signature's extra fields (the signature's BLEU fields are sacrebleu's)."""
    refs = [REF_C, REF_D] if options else [REF_C]
    out = run(*refs, "-f", "json", "-w", "10", *options, stdin=SYS["Nemo"]).stdout
    assert_indent_1(out)
    ours = json.loads(out)
    theirs = json.loads(sacrebleu_cli(*refs, "-f", "json", "-w", "10", *options, stdin=SYS["Nemo"]))
    assert [k for k in ours if k not in ("order", "reflen", "profile")] == list(theirs)  # sacrebleu's keys, in order
    for key, value in theirs.items():
        if key not in ("version", "signature"):
            assert ours[key] == value, key
    assert theirs["version"] != ours["version"] and ours["signature"].endswith(f"|harness:{ours['version']}")
    mine, their = signature_fields(ours["signature"]), signature_fields(theirs["signature"])
    for field in SIGNATURE_FIELDS:
        assert mine[field] == their[field] == ours[field] == theirs[field], field
    for field in ("bs", "seed"):
        assert mine.get(field) == their.get(field), field


@pytest.mark.parametrize("width", ["0", "1", "4"])
def test_score_only_prints_the_number_sacrebleu_prints(width):
    assert run(REF_C, "-b", "-w", width, stdin=SYS["Nemo"]).stdout == sacrebleu_cli(REF_C, "-b", "-w", width,
                                                                                    stdin=SYS["Nemo"])
    assert run(REF_C, "--score-only", "--width", width, "-i", SYS["UEdin"]).stdout == sacrebleu_cli(
        REF_C, "-b", "-w", width, stdin=SYS["UEdin"])


def test_multi_system_json_is_sacrebleus():
    systems = [SYS["Nemo"], SYS["UEdin"], SYS["Online-W"]]
    out = run(REF_C, "-i", *systems, "-f", "json", "-w", "4").stdout
    assert out == sacrebleu_cli(REF_C, "-i", *systems, "-f", "json", "-w", "4")  # no signature: every byte
    full = json.loads(run(REF_C, "-i", *systems, "-f", "json", "-w", "4", "--full").stdout)
    for mine, their in zip(full, json.loads(out)):  # ours carries sacrebleu's keys too
        assert (mine["system"], mine["BLEU"]) == (their["system"], their["BLEU"])
        assert mine["name"] == "BLEU" and f"{mine['score']:.4f}" == mine["BLEU"]


@pytest.mark.parametrize("args", [["-i", SYS["Nemo"], SYS["UEdin"], "--confidence", "-f", "json"],
                                  ["--confidence", "-f", "json"], ["--sentence-level", "-f", "json"]],
                         ids=["confidence-list", "confidence-stdin", "sentence-stdin"])
def test_every_json_output_of_ours_is_indented_alike(args):
    """``--full``'s JSON: every output indented alike (sacrebleu indents its multi-system JSON by 4)."""
    assert_indent_1(run(REF_C, *args, "--full", stdin=SYS["Nemo"]).stdout)


# --- one-line errors (issue 11) --------------------------------------------------------------------------------------


@pytest.mark.parametrize("args,status,pattern", [
    (["--seed", "-1"], 2, r"argument --seed: must be from 0 to \d+ \(seed\), got -1$"),
    (["--n-samples", "0", "--paired-bs"], 2, r"argument --n-samples: must be >= 1 \(resamples\), got 0$"),
    (["--n-samples", "0", "--confidence"], 2, r"argument --n-samples: must be >= 1"),
    (["--n-samples", "1000000000", "--paired-bs"], 2,
     r"--n-samples: the paired bootstrap of 2 systems would need [\d.]+ GiB of memory; at most [\d,]+ samples fit"),
    (["-w", "-3"], 2, r"argument --width/-w: must be from 0 to 20 \(decimals\), got -3$"),
    (["-w", "21"], 2, r"argument --width/-w: must be from 0 to 20 \(decimals\), got 21$"),
    (["--smooth-method", "bogus"], 2, r"exp"),
], ids=["seed", "n-samples-0", "n-samples-0-ci", "n-samples-memory", "width-negative", "width-21", "smooth"])
def test_bad_options_are_one_line(args, status, pattern):
    proc = run(REF_C, "-i", SYS["Nemo"], SYS["UEdin"], *args, check=False)
    assert re.search(pattern, assert_one_line_error(proc, status)), proc.stderr


def test_n_samples_memory_bound_names_what_fits():
    message = assert_one_line_error(run(REF_C, "-i", SYS["Nemo"], SYS["UEdin"], "--paired-bs", "--n-samples",
                                        "1000000000", check=False, process=True), 2)  # a process's exit status
    fit = int(re.search(r"at most ([\d,]+) samples fit", message).group(1).replace(",", ""))
    assert 1000 <= fit < 1_000_000_000


def test_a_device_is_refused(tmp_path):
    message = assert_one_line_error(run(REF_C, "-i", "/dev/zero", check=False), 1)
    assert message == ("harness-score: error: /dev/zero: not a regular file or a pipe (a device or socket never ends "
                       "like a text file)")


def test_a_device_on_standard_input_is_refused_at_once():
    message = assert_one_line_error(run(REF_C, stdin="/dev/zero", check=False, process=True), 1)
    assert message == ("harness-score: error: <stdin>: standard input is not a regular file or a pipe (a device or "
                       "socket never ends like a text file)")


def test_a_fifo_is_read(tmp_path):
    fifo = tmp_path / "hyp.fifo"
    os.mkfifo(fifo)
    data = Path(SYS["Nemo"]).read_bytes()

    def write() -> None:
        with open(fifo, "wb") as f:  # blocks until harness-score opens it
            f.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    got = run(REF_C, "-i", str(fifo), "-b", "-w", "10").stdout
    writer.join(timeout=30)
    assert not writer.is_alive()
    assert got == run(REF_C, "-i", SYS["Nemo"], "-b", "-w", "10").stdout


def test_missing_file_is_one_line(tmp_path):
    message = assert_one_line_error(run(REF_C, "-i", str(tmp_path / "nope.txt"), check=False), 1)
    assert message == f"harness-score: error: {tmp_path / 'nope.txt'}: file not found"


def test_line_count_mismatch_names_both_files(tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("a\nb\nc\n", encoding="utf-8")
    message = assert_one_line_error(run(REF_C, "-i", str(short), check=False), 1)
    assert "short.txt has 3 lines" in message and "ref-C.txt has 527" in message


def test_invalid_utf8_names_file_line_and_byte(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nal\xffso\n")
    good = tmp_path / "good.txt"
    good.write_text("fine\nalso\n", encoding="utf-8")
    where = "2: invalid UTF-8 at byte column 3 of the line (byte offset 7 in the file): invalid start byte"
    message = assert_one_line_error(run(str(good), "-i", str(bad), check=False), 1)
    assert message.startswith(f"harness-score: error: {bad}:{where}"), message
    message = assert_one_line_error(run(str(good), stdin=str(bad), check=False), 1)
    assert message.startswith(f"harness-score: error: <stdin>:{where}"), message


def test_does_not_import_mlflow_hydra_or_pandas():
    """Start-up stays light on every path (plain, JSON, paired test, confidence, sentence level): no mlflow, Hydra,
    pandas or matplotlib, and with the compiled kernels (an extension module) no scipy either (the demo's files
    take the compiled path); numba and llvmlite are not even installed."""
    from harness.text import kernels

    heavy = ["mlflow", "hydra", "omegaconf", "pandas", "matplotlib", "numba", "llvmlite"]
    kern = kernels.loaded()
    if kern is not None:
        heavy += ["scipy"]
    calls = [[REF_C, "-i", SYS["Nemo"]], [REF_C, "-i", SYS["Nemo"], "-f", "json"],
             [REF_C, "-i", SYS["Nemo"], SYS["UEdin"], "--paired-bs", "--n-samples", "50"],
             [REF_C, "-i", SYS["Nemo"], "--confidence", "--n-samples", "50"],
             [REF_C, "-i", SYS["Nemo"], "--sentence-level", "-b"]]
    code = ("import json, sys; from harness.cli import main\n"
            f"for argv in {calls!r}:\n"
            "    assert main(argv) == 0, argv\n"
            f"bad = [m for m in {heavy!r} if m in sys.modules]\n"
            "from harness.text import kernels\n"
            "print(json.dumps([bad, kernels.loaded() is not None]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(proc.stdout.splitlines()[-1]) == [[], kern is not None]


def test_a_bom_and_crlf_file_is_scored_with_one_note_each(tmp_path):
    """A Windows-style hypothesis (BOM, CRLF) streams through the compiled path: read_text's two notes, once each
    on stderr (and as a logged warning), and the score of its cleaned lines."""
    data = Path(SYS["Nemo"]).read_bytes()
    windows = tmp_path / "nemo-windows.txt"
    windows.write_bytes(b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n"))
    proc = run(REF_C, "-i", str(windows), "-b", "-w", "10")
    assert proc.stdout == run(REF_C, "-i", SYS["Nemo"], "-b", "-w", "10").stdout
    notes = [line for line in proc.stderr.splitlines() if line.startswith("harness-score: warning: ")]
    assert notes == [f"harness-score: warning: {windows}: UTF-8 BOM removed",
                     f"harness-score: warning: {windows}: CRLF line endings converted to LF"]
