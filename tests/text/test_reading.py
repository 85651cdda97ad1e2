"""Safe text reading (harness.text.reading): strict UTF-8, LF-only lines, errors with their location as fields."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ConfigError, InputError
from harness.text.reading import TextFile, check_parallel, read_text, safe_name


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path



def assert_names(err: pytest.ExceptionInfo[InputError], path: Path, line: int | None) -> None:
    """The error names the file and (if given) the 1-based line, in its attributes and its one-line message."""
    assert err.value.path == str(path)
    assert err.value.line == line
    where = str(path) if line is None else f"{path}:{line}"
    assert str(err.value).startswith(where + ": ")


# ------------------------------------------------------------------------------------------------ read_text


def test_read_plain_file(tmp_path: Path) -> None:
    p = write(tmp_path / "hyp.txt", "a b\n\tc\nlast")  # no final newline
    tf = read_text(p)
    assert isinstance(tf, TextFile)
    assert tf.lines == ["a b", "\tc", "last"] and tf.name == "hyp" and not tf.final_newline
    assert tf.sha256 == __import__("hashlib").sha256(p.read_bytes()).hexdigest()
    assert (tf.bom, tf.crlf, tf.n_empty, tf.warnings) == (False, False, 0, [])
    assert read_text(write(tmp_path / "b.txt", "x\ny\n"), name="B").lines == ["x", "y"]
    assert read_text(tmp_path / "b.txt", name="B").name == "B"


def test_invalid_utf8_names_line_and_byte(tmp_path: Path) -> None:
    p = write(tmp_path / "bad.txt", b"ok\nfine\nabc \xe9t\xe9\n")
    with pytest.raises(InputError) as err:
        read_text(p)
    assert_names(err, p, 3)
    msg = str(err.value)
    assert "byte column 5" in msg and "byte offset 12" in msg and "[e9]" in msg


def test_nul_byte(tmp_path: Path) -> None:
    p = write(tmp_path / "nul.txt", "a\nb\x00c\n")
    with pytest.raises(InputError) as err:
        read_text(p)
    assert_names(err, p, 2)
    assert "U+0000" in str(err.value)


def test_other_control_character(tmp_path: Path) -> None:
    p = write(tmp_path / "vt.txt", "a\nb\x0bc\n")  # vertical tab: a line break for str.splitlines()
    with pytest.raises(InputError) as err:
        read_text(p)
    assert_names(err, p, 2)
    assert "U+000B" in str(err.value)


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u0085"])
def test_unicode_line_separators_are_errors_not_breaks(tmp_path: Path, char: str) -> None:
    p = write(tmp_path / "sep.txt", f"one\ntwo\nthree{char}four\nfive\n")
    with pytest.raises(InputError) as err:
        read_text(p)
    # line 3: the separator did not count as a line break before it
    assert_names(err, p, 3)
    assert f"U+{ord(char):04X}" in str(err.value)


def test_tab_is_allowed(tmp_path: Path) -> None:
    assert read_text(write(tmp_path / "t.txt", "a\tb\n")).lines == ["a\tb"]


def test_bom_removed_and_reported(tmp_path: Path) -> None:
    p = write(tmp_path / "bom.txt", b"\xef\xbb\xbfHallo Welt\nzwei\n")
    tf = read_text(p)
    assert tf.lines == ["Hallo Welt", "zwei"] and tf.bom
    assert any("BOM" in w for w in tf.warnings)
    with pytest.raises(InputError) as err:
        read_text(p, strict=True)
    assert_names(err, p, 1)
    assert "BOM" in str(err.value)


def test_bom_in_the_middle(tmp_path: Path) -> None:
    p = write(tmp_path / "cat.txt", b"a\nb\n\xef\xbb\xbfc\n")
    with pytest.raises(InputError) as err:
        read_text(p)
    assert_names(err, p, 3)
    assert "U+FEFF" in str(err.value)


def test_crlf_accepted_and_reported(tmp_path: Path) -> None:
    p = write(tmp_path / "crlf.txt", b"one\r\ntwo\r\n\r\nfour\r\n")
    tf = read_text(p, strict=True)
    assert tf.lines == ["one", "two", "", "four"] and tf.crlf and tf.n_empty == 1
    assert any("CRLF" in w for w in tf.warnings)
    tf = read_text(write(tmp_path / "crlf2.txt", b"one\r\ntwo"))  # missing final newline is fine
    assert tf.lines == ["one", "two"] and tf.crlf


def test_stray_cr(tmp_path: Path) -> None:
    p = write(tmp_path / "cr.txt", b"one\rtwo\nthree\n")
    tf = read_text(p)
    assert tf.lines == ["one\rtwo", "three"]  # kept as-is, not a line break
    assert not tf.crlf and any("stray carriage return" in w for w in tf.warnings)
    with pytest.raises(InputError) as err:
        read_text(p, strict=True)
    assert_names(err, p, 1)
    # a CR at the end of only some lines is not a CRLF file: the CRs stay and are reported
    tf = read_text(write(tmp_path / "mixed.txt", b"a\r\nb\nc\r\n"))
    assert tf.lines == ["a\r", "b", "c\r"] and not tf.crlf and any("stray" in w for w in tf.warnings)


def test_final_newline_does_not_add_line_but_empty_lines_count(tmp_path: Path) -> None:
    tf = read_text(write(tmp_path / "e.txt", "a\n\nb\n\n"))
    assert tf.lines == ["a", "", "b", ""] and tf.n_empty == 2
    assert any("2 empty lines (50.0%)" in w and "threshold" in w for w in tf.warnings)
    tf = read_text(write(tmp_path / "few.txt", "a\n" * 19 + "\n"))
    assert tf.n_empty == 1 and tf.warnings == ["1 empty line (5.0%)"]
    assert any("threshold" in w for w in read_text(tmp_path / "few.txt", max_empty_share=0.01).warnings)


def test_empty_file(tmp_path: Path) -> None:
    p = write(tmp_path / "empty.txt", b"")
    with pytest.raises(InputError) as err:
        read_text(p)
    assert_names(err, p, None)
    assert "empty" in str(err.value)
    p = write(tmp_path / "bomonly.txt", b"\xef\xbb\xbf")
    with pytest.raises(InputError, match="empty"):
        read_text(p)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    p = tmp_path / "nope.txt"
    with pytest.raises(InputError) as err:
        read_text(p)
    assert_names(err, p, None)
    assert "file not found" in str(err.value)
    with pytest.raises(InputError, match="file not found"):
        read_text(tmp_path)


# ------------------------------------------------------------------------------------------------ parallel


def test_check_parallel_names_both_files_and_counts(tmp_path: Path) -> None:
    ref = read_text(write(tmp_path / "refs" / "ref-C.txt", "a\nb\nc\n"))
    ref2 = read_text(write(tmp_path / "refs" / "ref-D.txt", "a\nb\nc\n"))
    hyp = read_text(write(tmp_path / "systems" / "A.txt", "a\nb\n"))
    assert check_parallel([ref, ref2]) == 3
    with pytest.raises(InputError) as err:
        check_parallel([ref, ref2, hyp])
    msg = str(err.value)
    assert "systems/A.txt has 2 lines but refs/ref-C.txt has 3" in msg
    # the odd file is blamed even when it comes first
    with pytest.raises(InputError, match="refs/ref-C.txt has 3 lines but systems/A.txt has 2"):
        check_parallel([ref, hyp, read_text(tmp_path / "systems" / "A.txt", name="A2")])


# ------------------------------------------------------------------------------------------------ names, paths


@pytest.mark.parametrize("bad", ["../x", "a/b", "a\\b", "..", ".", ".hidden", "", "x..y", " a"])
def test_safe_name_refuses(bad: str) -> None:
    with pytest.raises(ConfigError) as err:
        safe_name(bad, "system.name")
    assert err.value.key == "system.name"


def test_safe_name_accepts() -> None:
    for good in ["ref-A", "NA", "null", "Facebook-AI", "sys.v1", "Online W"]:
        assert safe_name(good, "x") == good




# ------------------------------------------------------------------------------------------------ in chunks
# (LineChunks reads with the compiled kernel that finds line ends: ``text_kernels`` fails where it does not load,
# and skips only where the kernels are turned off, HARNESS_NATIVE=0)


@pytest.mark.parametrize("data", [
    b"one\ntwo two\n\nfour\n", b"one\ntwo", b"\xef\xbb\xbfone\r\ntwo\r\n", b"\xef\xbb\xbfx", b"a\r\n\r\nb",
    b"\n", b"\n\n", "\u00e4\u4e2d\U0001f600 \u00e4\n\u4e2d\n".encode(), b"long " * 300 + b"\nshort\n",
], ids=["plain", "no-final-newline", "bom-crlf", "bom-one-line", "crlf-empty-line", "one-empty-line",
        "two-empty-lines", "multi-byte", "long-line"])
def test_line_chunks_cut_the_lines_read_text_gives(tmp_path: Path, data: bytes, text_kernels) -> None:
    """Whatever the read size (down to one byte: a CRLF or a multi-byte character split between two reads) and the
    lines asked for, the chunks are whole lines, in order, and the BOM, CRLF and final-newline decisions are
    read_text's."""
    from harness.text.chunks import LineChunks, Source

    p = write(tmp_path / "f.txt", data)
    whole = read_text(p)
    for block in (1, 2, 3, 5, 64):
        for n in (1, 2, 3, 100):
            chunks = LineChunks(Source.of_path(p), text_kernels.lines_end, block=block)
            pieces, counts = [], []
            while True:
                piece, lines = chunks.take(n)
                if not lines:
                    assert not bytes(piece) and chunks.exhausted
                    break
                pieces.append(bytes(piece))
                counts.append(lines)
            assert all(c == n for c in counts[:-1]) and 0 < counts[-1] <= n
            assert b"".join(pieces) == data[3:] if whole.bom else b"".join(pieces) == data
            assert all(piece.endswith(b"\n") for piece in pieces[:-1])
            assert [piece.count(b"\n") + (not piece.endswith(b"\n")) for piece in pieces] == counts
            summary = chunks.summary(whole.n_empty, log_notes=False)
            assert (summary.n_lines, summary.bom, summary.crlf, summary.final_newline, summary.warnings) == (
                whole.n_lines, whole.bom, whole.crlf, whole.final_newline, whole.warnings)


def test_line_chunks_hand_back_what_only_the_whole_file_reading_can_report(tmp_path: Path, text_kernels) -> None:
    """An empty or BOM-only file, a BOM in strict mode, a missing file or a directory: NotStreamable, and
    Source.read gives read_text's error."""
    from harness.text.chunks import LineChunks, NotStreamable, Source

    cases = [(write(tmp_path / "empty.txt", b""), False), (write(tmp_path / "bom.txt", b"\xef\xbb\xbf"), False),
             (write(tmp_path / "strict.txt", b"\xef\xbb\xbfa\n"), True), (tmp_path / "missing.txt", False),
             (tmp_path, False)]
    for path, strict in cases:
        source = Source.of_path(path)
        with pytest.raises(NotStreamable):
            LineChunks(source, text_kernels.lines_end, strict=strict)
        with pytest.raises(InputError) as err:
            source.read(strict=strict)
        with pytest.raises(InputError) as expected:
            read_text(path, strict=strict)
        assert str(err.value) == str(expected.value) and vars(err.value) == vars(expected.value)
