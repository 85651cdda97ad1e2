"""Loading the compiled kernels (harness.native, with the text kernels of harness.text.native; what a process
pays also for the kernel sets of harness.core): from the object cache without numba, by either loader, never at
the price of a crash, and not at all when disabled (the Python path then gives the same numbers)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import harness
from harness.core.options import make_options
from harness import native as core
from harness.text import native, token_ids
from harness.text.native import TEXT
from harness.text.counting import count_numpy, encode_hypotheses, encode_references

from support import IMPORT_KERNEL_SETS, KERNEL_SETS, kernel_set

pytestmark = pytest.mark.usefixtures("text_kernels")  # skipped only with HARNESS_NATIVE=0


def cached() -> tuple[bytes, dict]:
    """The object code and manifest of this machine's key (written when the kernels were first loaded)."""
    native.kernels()
    files = {p.suffix: p for p in native.cache_files()}
    return files[".o"].read_bytes(), json.loads(files[".json"].read_bytes())


def test_a_fresh_process_loads_the_object_code_without_numba() -> None:
    """What harness-score and a job pay per process: no numba for any set of kernels (the text kernels, the
    resampled Kendall tau-b, the meta-evaluation counts), and on x86-64 Linux no llvmlite either."""
    sets = [kernel_set(ref) for ref in KERNEL_SETS]
    assert [kset.ref for kset in sets] == list(KERNEL_SETS) and TEXT in sets
    for kset in sets:
        assert core.kernels(kset) is not None  # compiles and caches it if this machine has not yet
    code = IMPORT_KERNEL_SETS + ("print(*(native.kernels(k).source for k in sets), 'numba' in sys.modules, "
                                 "'llvmlite' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, *KERNEL_SETS], capture_output=True, text=True,
                         check=True).stdout.split()
    loader = "elf" if core._elf_supported() else "mcjit"
    assert out == [loader] * len(sets) + ["False", str(loader == "mcjit")]


@pytest.mark.parametrize("loader", ["elf", "mcjit"])
def test_both_loaders_count_as_numpy_does(monkeypatch, loader: str) -> None:
    """Each loader's kernels, used by the pipeline, give the statistics of the numpy path."""
    if loader == "elf" and not core._elf_supported():
        pytest.skip("the ELF loader is for x86-64 Linux")
    obj, manifest = cached()
    assert loader in manifest["loaders"]
    kern = core.load_object(TEXT, obj, manifest, loader)
    assert kern.source == loader
    monkeypatch.setitem(core._loaded, TEXT.name, kern)
    hyps = [["a", "b", "c", "a", "b"], ["x", "y"], []]
    refs = encode_references([[["a", "b", "a", "b", "c"], ["y", "x"], ["z"]], [["c", "a", "b"], None, []]])
    h_ids, h_off = encode_hypotheses(hyps, refs.vocab)
    got = token_ids.count_ids(h_ids, h_off, refs, 4)
    expected = count_numpy(h_ids, h_off, refs, 4)
    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
    table = token_ids.TokenTable.empty()
    ids, offsets = token_ids.encode_lines(["Hello, world!", "1.5 a..5"], make_options(), table, insert=True)
    assert table.decode(ids, offsets) == [["Hello", ",", "world", "!"], ["1.5", "a", ".", ".5"]]


def test_a_symbol_that_cannot_be_resolved_is_refused_before_anything_runs(monkeypatch) -> None:
    obj, manifest = cached()
    with pytest.raises(RuntimeError, match="unresolved symbols in the cached kernels: harness_no_such_symbol"):
        core.load_object(TEXT, obj, {**manifest, "undefined": [*manifest["undefined"], "harness_no_such_symbol"]},
                         "mcjit")
    if core._elf_supported():
        monkeypatch.setattr(core, "_symbols", lambda names: {})
        with pytest.raises(RuntimeError, match="unresolved symbol"):
            core.load_object(TEXT, obj, manifest, "elf")


def test_new_object_code_is_tried_in_a_child_first(tmp_path) -> None:
    """The manifest records the loaders that loaded and ran the code in a child process; code that does not
    (here: truncated) gets none, and is never mapped into a process that matters."""
    obj, manifest = cached()
    manifest = {k: v for k, v in manifest.items() if k != "loaders"}
    core._write(TEXT, tmp_path / "good", "k", obj, manifest)
    core._write(TEXT, tmp_path / "bad", "k", obj[: len(obj) // 2], manifest)
    good = json.loads((tmp_path / "good" / "harness_kernels-k.json").read_bytes())["loaders"]
    bad = json.loads((tmp_path / "bad" / "harness_kernels-k.json").read_bytes())["loaders"]
    assert good == (["elf", "mcjit"] if core._elf_supported() else ["mcjit"]) and bad == []
    assert (tmp_path / "good" / "harness_kernels-k.o").read_bytes() == obj


def test_the_key_is_the_source_the_versions_and_the_cpu(monkeypatch, tmp_path) -> None:
    import dataclasses

    key = core.cache_key(TEXT)
    assert key == core.cache_key(TEXT) and len(key) == 24
    (tmp_path / "changed_kernels.py").write_bytes(TEXT.source.read_bytes() + b"\n# changed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert core.cache_key(dataclasses.replace(TEXT, module="changed_kernels")) != key
    monkeypatch.setattr(core, "_cpu", lambda: "another cpu")
    assert core.cache_key(TEXT) != key


def test_disabled_kernels_leave_the_python_path_with_the_same_numbers(monkeypatch, wmt21) -> None:
    refs = [wmt21["refs"][r] for r in sorted(wmt21["refs"])]
    hyps = wmt21["systems"]["Nemo"] * 4  # large enough to take the compiled path when it can
    refs = [r * 4 for r in refs]
    compiled = harness.corpus_bleu(hyps, refs)
    monkeypatch.setenv("HARNESS_NATIVE", "0")
    monkeypatch.delitem(core._loaded, TEXT.name)
    assert native.kernels() is None and not token_ids.usable(make_options(), True)
    python = harness.corpus_bleu(hyps, refs)
    assert (python.counts, python.totals, python.hyp_len, python.ref_len) == (
        compiled.counts, compiled.totals, compiled.hyp_len, compiled.ref_len)
    assert python.score == pytest.approx(compiled.score, rel=1e-12, abs=0)


def test_processes_starting_at_once_compile_once(monkeypatch, tmp_path) -> None:
    """On a fresh machine, of the loaders that find no object code at the same time one compiles (holding a lock
    beside the cache), the others wait and map what it wrote. Threads stand for processes here: each opens the
    lock file itself, and ``flock`` locks belong to the open file, so they exclude each other as processes do."""
    import threading
    import time

    obj, manifest = cached()
    manifest = {k: v for k, v in manifest.items() if k != "loaders"}  # as _compile returns it
    compiled = native.kernels()
    calls = []

    def fake_compile(kset):
        calls.append(kset.name)
        time.sleep(0.3)  # the others arrive while this one compiles
        return obj, manifest, compiled

    monkeypatch.setattr(core, "_compile", fake_compile)
    monkeypatch.setattr(core, "cache_dirs", lambda kset: [tmp_path / "cache"])
    got, errors = [], []

    def load() -> None:
        try:
            got.append(core._load(TEXT))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=load) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and len(got) == 3 and calls == ["kernels"]
    assert sum(k is compiled for k in got) == 1  # the one that compiled uses what it compiled
    assert all(k.source in ("elf", "mcjit") for k in got if k is not compiled)  # the others mapped its code
    assert (tmp_path / "cache" / f"harness_kernels-{core.cache_key(TEXT)}.lock").exists()
