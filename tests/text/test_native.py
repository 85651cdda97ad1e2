"""The compiled kernels (harness._kernels, a C extension built at install, used through harness.native): imported
by Python's import system, nothing compiled or mapped at run time, the same numbers as the numpy path (fuzzed with
hypothesis over every tokenizer), one line when they are missing, and (slow) clean under AddressSanitizer and
UBSan."""

from __future__ import annotations

import importlib.metadata
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness
from harness import native as core
from harness.core.options import make_options
from harness.text import kernels, token_ids
from harness.text.counting import count_numpy, encode_hypotheses, encode_references
from harness.text.kernels import TEXT
from support import KERNEL_SETS, REPO, kernel_set

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("text_kernels")]  # skipped only with HARNESS_NATIVE=0


def test_the_kernels_are_an_extension_module_and_numba_is_gone() -> None:
    """A fresh process imports every set of kernels from the extension the install built; numba and llvmlite
    are neither imported nor installed, and no kernel source of numba is left in the package."""
    sets = [kernel_set(ref) for ref in KERNEL_SETS]
    assert TEXT in sets
    code = ("import json, sys\nfrom harness import native\nimport harness.text.kernels, harness.core.correlation, "
            "harness.core.mtme\nfrom harness.text.kernels import TEXT\nfrom harness.core.correlation import "
            "KENDALL\nfrom harness.core.mtme import KERNELS\nsets = [TEXT, KENDALL, KERNELS]\n"
            "print(json.dumps([[native.kernels(k).source for k in sets], 'numba' in sys.modules, "
            "'llvmlite' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if k != "HARNESS_NATIVE"})
    sources, numba, llvmlite = __import__("json").loads(out.stdout)
    ext = Path(sources[0])
    assert len(set(sources)) == 1 and ext.name.startswith("_kernels.") and ext.suffix in (".so", ".pyd")
    assert ext.parent == Path(harness.__file__).parent and not numba and not llvmlite
    for dist in ("numba", "llvmlite"):
        with pytest.raises(importlib.metadata.PackageNotFoundError):
            importlib.metadata.distribution(dist)
    assert not list((REPO / "harness").rglob("*_kernel*.py"))  # the numba sources are gone


def test_every_kernel_releases_the_gil() -> None:
    """Threads run the kernels at once: a long count in one thread does not stop another thread's Python code
    (with the GIL held it would)."""
    import threading
    import time

    text = np.frombuffer(b"a\n" * 50_000_000, dtype=np.uint8)
    ticks = []
    done = threading.Event()

    def tick() -> None:
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    time.sleep(0.01)
    kern = kernels.loaded()
    start = time.perf_counter()
    for _ in range(5):
        kern.lines_end(text.ctypes.data, 0, text.size, 10**9)
    end = time.perf_counter()
    done.set()
    t.join()
    during = [x for x in ticks if start < x < end]
    assert end - start > 0.02 and len(during) >= 3, (end - start, len(during))


def test_a_buffer_or_an_address_is_the_same_argument() -> None:
    kern = kernels.loaded()
    data = b"ab\ncd\nef"
    arr = np.frombuffer(data, dtype=np.uint8)
    assert kern.lines_end(data, 0, 8, 2) == kern.lines_end(arr.ctypes.data, 0, 8, 2) == 6
    with pytest.raises(TypeError, match="takes 4 arguments"):
        kern.lines_end(data, 0, 8)


def test_the_kernels_count_as_numpy_does() -> None:
    hyps = [["a", "b", "c", "a", "b"], ["x", "y"], []]
    refs = encode_references([[["a", "b", "a", "b", "c"], ["y", "x"], ["z"]], [["c", "a", "b"], None, []]])
    h_ids, h_off = encode_hypotheses(hyps, refs.vocab)
    got = token_ids.count_ids(h_ids, h_off, refs, 4)
    expected = count_numpy(h_ids, h_off, refs, 4)
    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
    table = token_ids.TokenTable.empty()
    ids, offsets = token_ids.encode_lines(["Hello, world!", "1.5 a..5"], make_options(), table, insert=True)
    assert table.decode(ids, offsets) == [["Hello", ",", "world", "!"], ["1.5", "a", ".", ".5"]]


def test_disabled_kernels_leave_the_numpy_path_with_the_same_numbers(monkeypatch, wmt21) -> None:
    refs = [wmt21["refs"][r] for r in sorted(wmt21["refs"])]
    hyps = wmt21["systems"]["Nemo"] * 4  # large enough to take the compiled path when it can
    refs = [r * 4 for r in refs]
    compiled = harness.corpus_bleu(hyps, refs)
    monkeypatch.setenv("HARNESS_NATIVE", "0")
    monkeypatch.delitem(core._loaded, TEXT.name)
    assert kernels.loaded() is None and not token_ids.usable(make_options(), True)
    assert core.path() == "numpy (HARNESS_NATIVE=0)"
    python = harness.corpus_bleu(hyps, refs)
    assert (python.counts, python.totals, python.hyp_len, python.ref_len) == (
        compiled.counts, compiled.totals, compiled.hyp_len, compiled.ref_len)
    assert python.score == pytest.approx(compiled.score, rel=1e-12, abs=0)


def test_without_the_extension_one_line_says_why_and_how(monkeypatch, caplog, wmt21) -> None:
    """A machine without a C compiler installs without the extension: the numbers come from the numpy path, and
    the first use says so once, with the command that builds the kernels."""
    monkeypatch.setattr(core, "extension", lambda: None)
    for ref in KERNEL_SETS:
        core.forget(kernel_set(ref))
    try:
        with caplog.at_level(logging.WARNING, logger="harness.native"):
            refs = [wmt21["refs"][r] for r in sorted(wmt21["refs"])]
            score = harness.corpus_bleu(wmt21["systems"]["Nemo"] * 4, [r * 4 for r in refs])
            for ref in KERNEL_SETS:
                assert core.kernels(kernel_set(ref)) is None
        lines = [r.getMessage() for r in caplog.records if r.name == "harness.native"]
        assert len(lines) == 1 and "numpy path" in lines[0] and "build-essential" in lines[0], lines
        assert "numpy (the compiled kernels were not built" in core.path()
        assert score.score > 0
    finally:
        monkeypatch.undo()
        for ref in KERNEL_SETS:
            core.forget(kernel_set(ref))


def test_harness_score_version_names_the_path(tmp_path) -> None:
    from support import executable

    out = subprocess.run([executable("harness-score"), "--version"], capture_output=True, text=True, check=True)
    assert "compiled kernels (" in out.stdout and "_kernels" in out.stdout, out.stdout
    off = subprocess.run([executable("harness-score"), "--version"], capture_output=True, text=True, check=True,
                         env={**os.environ, "HARNESS_NATIVE": "0"})
    assert "numpy (HARNESS_NATIVE=0)" in off.stdout


# ---------------------------------------------------------------------------------------------------- fuzz

# Every tokenizer the kernels have, every character class they look at: ASCII punctuation and digits, spaces of
# every kind, CJK, symbols, combining marks, astral characters, entities 13a unescapes, '<skipped>'.
ALPHABET = st.sampled_from(list(" \t\u00a0\u3000\u2009.,-&;<>:!?'\"()[]{}/\\#%$€£0123456789abcAZéß") +
                           ["&amp;", "&quot;", "&lt;", "&gt;", "<skipped>", "一", "語", "ｆ", "。", "、", "é",
                            "\u0301", "😀", "𝟘", "½", "Ⅳ", "\u0660", "\u2013", "\u00ad", "İ"])
LINE = st.lists(ALPHABET, max_size=40).map("".join)


def _statistics(hyps: list[str], refs: list[list[str | None]], tokenize: str, lowercase: bool, compiled: bool):
    from harness.text.pipeline import lines_statistics

    stats = lines_statistics(hyps, refs, make_options(tokenize=tokenize, lowercase=lowercase), compiled=compiled)
    return stats.hyp_len, stats.ref_lens, stats.matches, stats.totals


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), tokenize=st.sampled_from(token_ids.SUPPORTED), lowercase=st.booleans(),
       n_refs=st.integers(1, 5))
def test_fuzz_the_kernels_equal_the_numpy_path(data, tokenize, lowercase, n_refs) -> None:
    """Random Unicode lines (empty ones, very long ones, absent references) through the compiled pipeline and
    through the numpy path: the same statistics, every segment."""
    n = data.draw(st.integers(1, 12))
    hyps = data.draw(st.lists(LINE, min_size=n, max_size=n))
    if data.draw(st.booleans()):
        hyps[0] = " ".join(["word", "1.5", "a..5", "&amp;", "一語"] * 400)  # a very long line
    refs = [data.draw(st.lists(st.one_of(LINE, st.none()) if k else LINE, min_size=n, max_size=n))
            for k in range(n_refs)]
    for i in range(n):  # every segment keeps one reference
        if all(r[i] is None for r in refs):
            refs[0][i] = ""
    compiled = _statistics(hyps, refs, tokenize, lowercase, compiled=True)
    plain = _statistics(hyps, refs, tokenize, lowercase, compiled=False)
    for a, b in zip(compiled, plain):
        assert np.array_equal(a, b)


# ---------------------------------------------------------------------------------------------------- sanitizers

_SANITIZED = """
import sys
sys.path.insert(0, sys.argv[1])
import _kernels  # the sanitized build, imported under the name it was built with
import harness.native as native
native.extension = lambda: _kernels
native.MODULE = "_kernels"
import pytest
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "--disable-plugin-autoload", "-p", "_hypothesis_pytestplugin",
                      sys.argv[2] + "::test_fuzz_the_kernels_equal_the_numpy_path",
                      sys.argv[2] + "::test_the_kernels_count_as_numpy_does", sys.argv[3]] + sys.argv[4:]))
"""


@pytest.mark.slow
def test_the_kernels_are_clean_under_address_sanitizer_and_ubsan(tmp_path) -> None:
    """The extension built once with -fsanitize=address,undefined (GCC), loaded into Python with ASan's runtime
    preloaded, runs the fuzz test and the parity tests of the text kernels, and the tests of the meta-evaluation
    kernels against their numpy paths (test_sig_matrix), with every sanitizer error fatal."""
    cc = shutil.which("gcc")
    if cc is None:
        pytest.skip("no gcc here: the sanitized build needs it")
    libasan = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(libasan) or not os.path.exists(libasan):
        pytest.skip("gcc has no AddressSanitizer runtime here")
    target = tmp_path / ("_kernels" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    build = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-g", "-fno-omit-frame-pointer", "-ffp-contract=off",
                            "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                            f"-I{sysconfig.get_paths()['include']}", str(REPO / "harness" / "_kernels.c"),
                            "-o", str(target)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    env = {**os.environ, "LD_PRELOAD": libasan, "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
           "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}
    env.pop("HARNESS_NATIVE", None)
    proc = subprocess.run([sys.executable, "-c", _SANITIZED, str(tmp_path), str(Path(__file__)),
                           str(REPO / "tests" / "core" / "test_sig_matrix.py"), "--hypothesis-seed=1", "-W", "ignore"],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "passed" in proc.stdout and "ERROR: AddressSanitizer" not in proc.stderr
    assert "runtime error" not in proc.stderr


@pytest.mark.slow
def test_an_install_without_a_c_compiler_works_and_says_so_once(tmp_path, wmt21) -> None:
    """``pip`` builds the package with no C compiler (``CC=false``): the wheel has no extension, installs, and
    ``harness-score`` gives the numbers of the installed kernels, with one line saying the kernels were not built
    and how to get them. The fresh environment sees this project's dependencies (a .pth file) but not its
    editable install."""
    import site
    import zipfile

    env = {**os.environ, "CC": "false", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-q", "-w",
                            str(tmp_path / "wheel")], capture_output=True, text=True, env=env, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith((".so", ".pyd"))], names
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    target = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip())
    zipfile.ZipFile(wheel).extractall(target)
    (target / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")  # not processed as site dirs
    refs = [str(p) for p in sorted((REPO / "harness" / "data" / "wmt21_news_ende" / "refs").glob("*.txt"))]
    hyp = str(REPO / "harness" / "data" / "wmt21_news_ende" / "systems" / "Nemo.txt")
    clean = {k: v for k, v in os.environ.items() if k not in ("HARNESS_NATIVE", "PYTHONPATH")}
    run = subprocess.run([str(python), "-m", "harness.cli", *refs, "-i", hyp, hyp, hyp, hyp, "-f", "json", "--full"],
                         capture_output=True, text=True, env=clean, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    here = subprocess.run([sys.executable, "-m", "harness.cli", *refs, "-i", hyp, hyp, hyp, hyp, "-f", "json",
                           "--full"],
                          capture_output=True, text=True, env=clean, cwd=tmp_path, timeout=300, check=True)
    assert run.stdout == here.stdout  # the same numbers, every digit printed
    lines = [x for x in run.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "numpy path" in lines[0] and "build-essential" in lines[0], run.stderr
    version = subprocess.run([str(python), "-m", "harness.cli", "--version"], capture_output=True, text=True,
                             env=clean, cwd=tmp_path, check=True).stdout
    assert "numpy (the compiled kernels were not built" in version


def test_keep_freed_memory_sets_glibcs_malloc_once():
    """The job's malloc settings (native.keep_freed_memory): accepted by glibc (as on the machines the tests run
    on), decided once per process; elsewhere nothing is changed and it says so."""
    import platform

    from harness import native

    first = native.keep_freed_memory()
    assert native.keep_freed_memory() is first
    assert first is (platform.libc_ver()[0] == "glibc")


def test_aligned_empty_starts_on_a_cache_line():
    import numpy as np

    from harness import native

    for shape, dtype in (((3, 5), np.float32), (7, np.int64), ((2, 0), np.float64)):
        a = native.aligned_empty(shape, dtype)
        assert a.shape == (shape if isinstance(shape, tuple) else (shape,)) and a.dtype == dtype
        assert a.flags.c_contiguous and a.flags.writeable
        assert a.size == 0 or a.ctypes.data % 64 == 0  # an empty array has no data to place
