"""Files to statistics (harness.text.files.files_statistics): streamed in chunks on the compiled path, whole on
the Python path; the same statistics, notes and errors either way, wherever chunks and reads cut the files.

The whole-file reading (``compiled=False``: :func:`read_text` on each file, :func:`check_parallel`, the Python
tokenizers and numpy counting) is the oracle: it is the reading ``harness-score`` always had, tested on its own
in test_reading.py and against sacrebleu elsewhere. Chunks are made as small as one line and reads as small as
one byte, so that every boundary falls on every position of the files below.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from harness.core.options import make_options
from harness.errors import InputError
from harness.text.chunks import Source
from harness.text.files import files_statistics

pytestmark = pytest.mark.usefixtures("text_kernels")  # skipped only with HARNESS_NATIVE=0

REF = "Der Hund, der bellt.\nZwei Katzen (1.5 kg) 1-2\n\u00c4rger & \u00fcber 2019.\n\u4e2d\u6587\u3002 \U0001f600 ok\n"
HYP = "Der Hund bellt.\nzwei Katzen 1.5 kg 1-2\n\u00e4rger &amp; \u00fcber 2019 .\n\u4e2d \u6587 \U0001f600\n"
FIELDS = ("path", "line", "byte_offset", "column", "reason", "expected", "got", "bad_bytes")


def write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def sources(paths: list[Path]) -> list[Source]:
    return [Source.of_path(p) for p in paths]


def outcome(refs: list[Path], hyps: list[Path], **kw):
    """Statistics and notes, or the error (class, message, fields) of files_statistics."""
    try:
        result = files_statistics(sources(refs), sources(hyps), make_options(**kw.pop("options", {})), **kw)
    except InputError as exc:
        return ("error", type(exc).__name__, str(exc), {f: getattr(exc, f, None) for f in FIELDS})
    stats = [tuple(getattr(s, f).tolist() for f in ("hyp_len", "ref_lens", "matches", "totals"))
             for s in result.statistics]
    notes = [(t.name, t.n_lines, t.warnings, t.bom, t.crlf, t.final_newline, t.n_empty)
             for t in (*result.references, *result.hypotheses)]
    return ("ok", stats, notes, result.streamed)


def assert_streamed_like_whole(refs: list[Path], hyps: list[Path], chunks=(1, 2, 3, None), blocks=(1, 2, 3, 7, 64),
                               streams: bool | None = None, **kw) -> tuple:
    """The whole-file outcome, after checking that every cut of the streamed job gives it too; ``streams``: the
    streamed job must (True) or must not (False) have kept to the chunks, at every cut."""
    whole = outcome(refs, hyps, compiled=False, **kw)
    for chunk in chunks:
        for block in blocks:
            streamed = outcome(refs, hyps, compiled=True, chunk=chunk, block=block, **kw)
            assert streamed[:3] == whole[:3], (chunk, block)
            if streams is not None:
                assert streamed[0] == "ok" and streamed[3] is streams, (chunk, block)
    return whole


@pytest.mark.parametrize("options", [{}, {"tokenize": "intl", "lowercase": True}, {"tokenize": "zh"},
                                     {"tokenize": "char"}, {"tokenize": "none", "lowercase": True}])
def test_streamed_statistics_equal_whole_file_reading(tmp_path, options):
    refs = [write(tmp_path / "r1.txt", REF), write(tmp_path / "r2.txt", REF.replace("Hund", "Hunde"))]
    hyps = [write(tmp_path / "h1.txt", HYP), write(tmp_path / "h2.txt", REF)]
    whole = assert_streamed_like_whole(refs, hyps, streams=True, options=options)
    _, ref_lens, matches, totals = whole[1][1]  # the second system is the first reference itself
    assert matches == totals and [r[0] for r in ref_lens] == [h for h in whole[1][1][0]]


@pytest.mark.parametrize("data", [
    pytest.param(b"\xef\xbb\xbf" + REF.encode(), id="bom"),
    pytest.param(REF.replace("\n", "\r\n").encode(), id="crlf"),
    pytest.param(REF.replace("\n", "\r\n").encode()[:-2], id="crlf-no-final-newline"),
    pytest.param(REF.replace("\n", "\r\n").encode()[:-1], id="crlf-final-cr-only"),
    pytest.param(REF.encode()[:-1], id="no-final-newline"),
    pytest.param(b"a\n\nb\n\n", id="empty-lines-above-threshold"),
    pytest.param(b"\n", id="one-empty-line"),
    pytest.param(b"\xef\xbb\xbf\r\nx\r\n", id="bom-crlf-empty-first-line"),
])
def test_bom_crlf_and_line_ends_at_every_cut(tmp_path, data):
    """The notes and the lines of read_text, however the file is cut into reads and chunks (a CRLF split between
    two reads, a final line without LF, a BOM, empty lines)."""
    n = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    ref = write(tmp_path / "ref.txt", "\n".join(f"w{i} x ." for i in range(n)) + "\n")
    hyp = write(tmp_path / "hyp.txt", data)
    whole = assert_streamed_like_whole([ref], [hyp], streams=True)
    assert whole[0] == "ok"


@pytest.mark.parametrize("data,streams", [
    pytest.param(b"one\rtwo\nthree\n", False, id="stray-cr"),
    pytest.param(b"a\r\nb\nc\r\n", False, id="crlf-then-lf"),
    pytest.param(b"a\nb\r\nc\n", False, id="lf-then-crlf"),
    pytest.param(b"a\r\nb\rc\r\n", False, id="crlf-with-a-stray-cr"),
])
def test_line_ends_the_chunks_cannot_settle_go_to_the_whole_file(tmp_path, data, streams):
    """A carriage return that is not the file's line ending: read_text keeps it with a note (strict mode: an
    error); so does the streamed job, by handing the file to the whole-file reading."""
    ref = write(tmp_path / "ref.txt", "x\ny\nz\n"[:2 * data.count(b"\n")])
    hyp = write(tmp_path / "hyp.txt", data)
    whole = assert_streamed_like_whole([ref], [hyp], streams=streams)
    assert whole[0] == "ok" and any("carriage return" in w for w in whole[2][1][2])
    strict = assert_streamed_like_whole([ref], [hyp], strict=True)
    assert strict[0] == "error" and "carriage return" in strict[2]


BAD_BYTES = [b"\xff", b"\xc3", b"\xe4\xb8", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xf0\x9f\x98"]
BAD_CHARS = ["\x00", "\x0b", "\x1f", "\u0085", "\u2028", "\u2029", "\ufeff"]


@pytest.mark.slow
@pytest.mark.parametrize("bad", BAD_BYTES, ids=lambda b: b.hex())
def test_invalid_utf8_is_reported_as_read_text_reports_it_wherever_it_falls(tmp_path, bad):
    """A bad byte sequence at every position of a file (at a chunk boundary, split between two reads, right
    before or after a newline, in the last line without a newline): the same EncodingError (line, column,
    byte offset, excerpt) as reading the whole file gives."""
    ref = write(tmp_path / "ref.txt", "a b\nc d\ne f\n")
    base = "ab\ncd\nef".encode()
    for at in range(len(base) + 1):
        hyp = write(tmp_path / "hyp.txt", base[:at] + bad + base[at:])
        got = assert_streamed_like_whole([ref], [hyp], chunks=(1, 2, None), blocks=(1, 2, 5))
        assert got[0] == "error" and got[1] == "EncodingError", (at, got)


@pytest.mark.parametrize("char", BAD_CHARS, ids=lambda c: f"U+{ord(c):04X}")
def test_bad_characters_are_reported_as_read_text_reports_them(tmp_path, char):
    ref = write(tmp_path / "ref.txt", "a b\nc d\ne f\n")
    base = "ab\ncd\nef\n"
    for at in range(len(base) + 1):
        if char == "\ufeff" and at == 0:
            continue  # a BOM at byte 0 is removed with a note (test_bom_crlf_and_line_ends_at_every_cut)
        hyp = write(tmp_path / "hyp.txt", base[:at] + char + base[at:])
        got = assert_streamed_like_whole([ref], [hyp], chunks=(1, None), blocks=(1, 3))
        assert got[0] == "error", (at, got)


@pytest.mark.parametrize("ref_data,hyp_data", [
    ("a\nb\nc\n", "a\nb\n"), ("a\nb\n", "a\nb\nc\n"), ("a\nb\nc\n", "a\nb\nc\n\n"), ("a\n", "a\nb"),
])
def test_line_counts_that_differ_give_check_parallels_message(tmp_path, ref_data, hyp_data):
    ref, hyp = write(tmp_path / "ref.txt", ref_data), write(tmp_path / "hyp.txt", hyp_data)
    got = assert_streamed_like_whole([ref], [hyp])
    assert got[0] == "error" and " lines but " in got[2]


def test_errors_come_in_the_order_of_reading_each_file_whole(tmp_path):
    """A missing second reference and a bad byte in the first: read_text on each file in turn stops at the first
    file's error, and so does the streamed job, whichever file its chunks reach first."""
    ref = write(tmp_path / "ref.txt", b"fine\nal\xffso\n")
    hyp = write(tmp_path / "hyp.txt", b"fine\nalso\n")
    got = assert_streamed_like_whole([ref, tmp_path / "missing.txt"], [hyp])
    assert got[1] == "EncodingError" and got[3]["path"] == str(ref)
    got = assert_streamed_like_whole([tmp_path / "missing.txt", ref], [hyp])
    assert "file not found" in got[2]
    empty = write(tmp_path / "empty.txt", b"")
    bom_only = write(tmp_path / "bom.txt", b"\xef\xbb\xbf")
    for path in (empty, bom_only, tmp_path):
        got = assert_streamed_like_whole([hyp], [path])
        assert got[0] == "error" and ("empty" in got[2] or "directory" in got[2]), got
    got = assert_streamed_like_whole([hyp], [write(tmp_path / "bom2.txt", b"\xef\xbb\xbffine\nalso\n")], strict=True)
    assert got[0] == "error" and "BOM" in got[2]


def test_notes_are_logged_once_as_read_text_logs_them(tmp_path, caplog):
    ref = write(tmp_path / "ref.txt", "a\nb\nc\n")
    hyp = write(tmp_path / "hyp.txt", b"\xef\xbb\xbfa\r\n\r\nc\r\n")
    records = {}
    for compiled in (False, True):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="harness.text.reading"):
            files_statistics(sources([ref]), sources([hyp]), make_options(), compiled=compiled, chunk=1)
        records[compiled] = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert records[True] == records[False]
    assert [m for _, m in records[True]] == [f"{hyp}: UTF-8 BOM removed", f"{hyp}: CRLF line endings converted to LF",
                                            f"{hyp}: 1 empty line (33.3%), more than the 10% threshold"]


def test_many_systems_many_chunks_in_threads_equal_whole_file(tmp_path, wmt21):
    """The shared data: several references and systems, chunks of a few lines counted in threads."""
    refs = [write(tmp_path / f"{name}.txt", "\n".join(lines) + "\n") for name, lines in sorted(wmt21["refs"].items())]
    hyps = [write(tmp_path / f"sys-{name}.txt", "\n".join(lines) + "\n")
            for name, lines in sorted(wmt21["systems"].items())[:4]]
    whole = outcome(refs, hyps, compiled=False)
    for chunk in (7, 100, None):
        streamed = outcome(refs, hyps, compiled=True, chunk=chunk, block=4096)
        assert streamed[:3] == whole[:3] and streamed[3] is True


def test_stdin_and_pipes_are_read_once(tmp_path):
    """Bytes already read (standard input, a pipe) stream from memory; their errors are reported in turn."""
    ref = write(tmp_path / "ref.txt", REF)
    in_memory = Source(Path("<stdin>"), "stdin", data=HYP.encode())
    got = files_statistics(sources([ref]), [in_memory], make_options(), compiled=True, chunk=1)
    whole = files_statistics(sources([ref]), [in_memory], make_options(), compiled=False)
    assert got.streamed and not whole.streamed
    assert np.array_equal(got.statistics[0].matches, whole.statistics[0].matches)
    bad = Source(Path("<stdin>"), "stdin", data=b"x\n\xff\n")
    with pytest.raises(InputError, match=r"^<stdin>:2: invalid UTF-8"):
        files_statistics(sources([ref]), [bad], make_options(), compiled=True)
