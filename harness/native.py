"""Compiled kernels loaded in about a millisecond instead of a second: the machinery, for any set of kernels
(:class:`KernelSet`: the text kernels of :mod:`harness.text.native`, the resampled Kendall tau-b of
:mod:`harness.core.correlation`).

Must not import numba except to compile (once per machine and kernel source): numba's fixed cost per process
(``import numba`` pulls in scipy; its compiler must start even to load a cached function) is ~1 s, ten times a
whole ``harness-score`` run on a test set. Knows nothing of what the kernels compute.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib
import importlib.util
import json
import logging
import os
import platform
import struct
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

log = logging.getLogger(__name__)

# How it works. The kernels of a set are C-ABI functions (numba ``cfunc``: pointers and integers in, a status out, no
# allocation, no exception). Compiled once, their object code is kept on disk with a manifest (the functions'
# symbols, the external symbols the code refers to, which loaders were checked). A later process maps that object
# code itself: on x86-64 Linux a small ELF loader below (copy the sections into one mapping, apply the two
# relocation kinds LLVM's large code model emits, make it read-execute: ~1 ms, nothing imported), elsewhere
# llvmlite's MCJIT (~40 ms and ~40 MB for importing llvmlite). The functions are called through ctypes, which
# releases the GIL, so chunks run in threads on every core.
#
# The cache key is the kernel source, the Python, numba and llvmlite versions and the CPU (the code is compiled
# for it). A new object file is written atomically and first loaded and run in a child process, so code that
# does not link or run here is never used by the process that would crash. Processes that find no object code at
# the same time compile it once: one holds a lock file beside the cache while it compiles, the others wait, then
# map what it wrote. If anything fails (no numba, a cache that cannot be written, a symbol that cannot be
# resolved), :func:`kernels` uses numba's own compilation in this process, and if that fails too returns None:
# callers then take their Python path, which gives the same numbers. ``HARNESS_NATIVE=0`` forces that path.
#
# The cache lives in ``$NUMBA_CACHE_DIR/bleu-harness`` if that variable is set, else in ``__pycache__`` next to
# the kernels' source if writable, else in ``$XDG_CACHE_HOME/bleu-harness`` (``~/.cache/bleu-harness``).

_LOADERS = ("elf", "mcjit")


@dataclass(frozen=True)
class KernelSet:
    """A set of compiled kernels: ``module`` (imported only to compile) holds ``CFUNCS``, numba ``cfunc``s by
    name; ``arity`` gives each function's argument count (all pointers or int64, returning int64) and
    ``int_args`` which arguments are integers; ``smoke_test`` runs a loaded set once and raises if it is wrong.
    ``name`` names its cache files (``harness_<name>-<key>.o``), ``what`` its log lines; ``ref`` is where the set
    itself is (``module:attribute``), for the child process that tries new object code."""

    name: str
    what: str
    module: str
    ref: str
    arity: Mapping[str, int]
    int_args: Mapping[str, tuple[int, ...]]
    smoke_test: Callable[[Kernels], None]

    @property
    def source(self) -> Path:
        spec = importlib.util.find_spec(self.module)
        if spec is None or spec.origin is None:
            raise RuntimeError(f"no source for {self.module}")
        return Path(spec.origin)


@dataclass(frozen=True)
class Kernels:
    """Loaded kernels: ``kern.<name>(...)`` calls a ``ctypes`` function (arguments: addresses and ints);
    ``source`` says how they were loaded (``"elf"`` or ``"mcjit"`` from the object cache, ``"numba"`` compiled in
    this process)."""

    functions: Mapping[str, Callable[..., int]]
    source: str
    keep: Any = field(default=None, repr=False)  # what owns the code (a mapping, an engine, numba's cfuncs)

    def __post_init__(self) -> None:
        # each function as a plain attribute: a lookup that first fails and then reaches ``__getattr__`` costs
        # about a microsecond, as much as some of the calls themselves
        for name, function in self.functions.items():
            if name in self.__dataclass_fields__:
                raise ValueError(f"a kernel cannot be named {name!r}")
            object.__setattr__(self, name, function)

    if TYPE_CHECKING:
        def __getattr__(self, name: str) -> Callable[..., int]: ...  # the functions, for type checkers


_lock = threading.Lock()
_loaded: dict[str, Kernels] = {}
_failed: set[str] = set()


def disabled() -> bool:
    """``HARNESS_NATIVE=0`` (or ``false``/``no``/``off``): never use the compiled kernels."""
    return os.environ.get("HARNESS_NATIVE", "").strip().lower() in ("0", "false", "no", "off")


def kernels(kset: KernelSet) -> Kernels | None:
    """The compiled kernels of ``kset``, loaded once per process; None if they cannot be had (the caller's Python
    path then)."""
    found = _loaded.get(kset.name)
    if found is not None:
        return found
    if kset.name in _failed or disabled():
        return None
    with _lock:
        if kset.name not in _loaded and kset.name not in _failed:
            try:
                _loaded[kset.name] = _load(kset)
            except Exception as exc:  # noqa: BLE001 - any failure means: no compiled path in this process
                log.warning("compiled %s unavailable (%s: %s); using the Python path", kset.what,
                            type(exc).__name__, exc)
                _failed.add(kset.name)
    return _loaded.get(kset.name)


@functools.cache
def cpus() -> int:
    """The machine's CPU count, read once (``os.cpu_count`` takes microseconds, as much as some kernel calls)."""
    return os.cpu_count() or 1


def in_threads(run: Callable[[int, int], object], n_rows: int, threads: int) -> None:
    """``run(b0, b1)`` over the rows ``[0, n_rows)`` split into ``threads`` contiguous ranges, one thread each (a
    kernel called through ctypes releases the GIL, so they run at once); with one thread, in this one. The kernels
    compute each row on its own, so the split never changes a value."""
    if threads <= 1:
        run(0, n_rows)
        return
    from concurrent.futures import ThreadPoolExecutor

    bounds = [n_rows * t // threads for t in range(threads + 1)]
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(run, bounds[:-1], bounds[1:]))


def forget(kset: KernelSet) -> None:
    """Drop what this process loaded (or failed to load) of ``kset``: the next :func:`kernels` loads it again."""
    _loaded.pop(kset.name, None)
    _failed.discard(kset.name)


# ---------------------------------------------------------------------------------------------------- cache


def cache_dirs(kset: KernelSet) -> list[Path]:
    """Where the object code is looked for, in order (and written to: the first writable one)."""
    env = os.environ.get("NUMBA_CACHE_DIR")
    if env:
        return [Path(env) / "bleu-harness"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [kset.source.parent / "__pycache__", Path(base) / "bleu-harness"]


def _versions() -> list[str]:
    """numba's and llvmlite's versions from their installed metadata (without importing either)."""
    import importlib.util

    spec = importlib.util.find_spec("numba")
    if spec is None or spec.origin is None:
        return ["no numba"]
    site = Path(spec.origin).parent.parent
    try:
        return sorted(n for n in os.listdir(site) if n.startswith(("numba-", "llvmlite-")) and n.endswith("-info"))
    except OSError:
        return ["?"]


def _cpu() -> str:
    """This CPU as the compiler sees it: /proc/cpuinfo's identity and feature flags on Linux, else LLVM's view."""
    try:
        first = Path("/proc/cpuinfo").read_text(errors="replace").split("\n\n")[0]
    except OSError:
        first = ""
    keep = [line for line in first.splitlines()
            if line.split(":")[0].strip() in ("vendor_id", "cpu family", "model", "model name", "flags", "Features",
                                              "CPU implementer", "CPU part")]
    if keep:
        return "\n".join(keep)
    llvm = _llvm()
    return llvm.get_host_cpu_name() + " " + llvm.get_host_cpu_features().flatten()


def cache_key(kset: KernelSet) -> str:
    parts = [kset.source.read_bytes(), sys.version.encode(), platform.machine().encode(), platform.system().encode(),
             " ".join(_versions()).encode(), _cpu().encode()]
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()[:24]


def _paths(kset: KernelSet, directory: Path, key: str) -> tuple[Path, Path]:
    stem = f"harness_{kset.name}-{key}"
    return directory / f"{stem}.o", directory / f"{stem}.json"


def cache_files(kset: KernelSet) -> list[Path]:
    """The object files of this machine's key that exist (for tests and the benchmarks)."""
    key = cache_key(kset)
    return [p for d in cache_dirs(kset) for p in _paths(kset, d, key) if p.exists()]


# ---------------------------------------------------------------------------------------------------- symbols

_callbacks: list[Any] = []  # ctypes callbacks handed to the linker: they must outlive every mapping

_GIL_STATE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _gil_ensure(state: int) -> None:  # numba_gil_ensure(PyGILState_STATE *): *state = PyGILState_Ensure()
    ensure = ctypes.pythonapi.PyGILState_Ensure
    ensure.restype = ctypes.c_int
    ctypes.c_int.from_address(state).value = ensure()


def _gil_release(state: int) -> None:  # numba_gil_release(PyGILState_STATE *)
    release = ctypes.pythonapi.PyGILState_Release
    release.argtypes = [ctypes.c_int]
    release(ctypes.c_int.from_address(state).value)


def _noop(_: int) -> None:
    return None


#: numba's runtime helpers that only numba's error path (unreachable here: the kernels cannot raise) or its
#: memory manager (unused: the kernels allocate nothing) refer to; linked to a function that does nothing.
_NUMBA_HELPERS = ("NRT_MemInfo_call_dtor", "NRT_Free", "NRT_MemInfo_alloc_safe_aligned", "numba_do_raise",
                  "numba_runtime_build_excinfo_struct", "numba_unpickle")


def _symbols(names: list[str]) -> dict[str, int]:
    """Addresses of the external symbols ``names`` the object code refers to: the Python C API (from the running
    interpreter), numba's GIL helpers (reimplemented with ctypes), numba's other runtime helpers (no-ops, see
    :data:`_NUMBA_HELPERS`), and the C library's functions the process has (memset, sqrt...)."""
    api = ctypes.pythonapi
    if not _callbacks:
        _callbacks.extend([_GIL_STATE(_gil_ensure), _GIL_STATE(_gil_release), _GIL_STATE(_noop)])
    ensure, release, noop = _callbacks
    out: dict[str, int] = {"numba_gil_ensure": ctypes.cast(ensure, ctypes.c_void_p).value or 0,
                           "numba_gil_release": ctypes.cast(release, ctypes.c_void_p).value or 0}
    for name in _NUMBA_HELPERS:
        out[name] = ctypes.cast(noop, ctypes.c_void_p).value or 0
    try:
        process: Any = ctypes.CDLL(None)
    except OSError:  # pragma: no cover - no symbols of the process to look up
        process = None
    for name in ("memset", "memcpy", "memmove", "memcmp", *names):  # LLVM may call the first four for loops
        if name in out:
            continue
        try:
            if name.startswith("PyExc_"):
                out[name] = ctypes.addressof(ctypes.c_void_p.in_dll(api, name))
            elif name.startswith("Py"):
                out[name] = ctypes.cast(getattr(api, name), ctypes.c_void_p).value or 0
            elif process is not None:  # libc's and libm's functions (memset, sqrt...), which LLVM may call
                out[name] = ctypes.cast(getattr(process, name), ctypes.c_void_p).value or 0
        except (AttributeError, ValueError):
            pass
    return {k: v for k, v in out.items() if v}


def _prototype(kset: KernelSet, name: str) -> Any:
    args = [ctypes.c_int64 if i in kset.int_args.get(name, ()) else ctypes.c_void_p for i in range(kset.arity[name])]
    return ctypes.CFUNCTYPE(ctypes.c_int64, *args)


def _wrap(kset: KernelSet, addresses: dict[str, int], source: str, keep: Any) -> Kernels:
    """The functions at ``addresses`` as :class:`Kernels`, run once by the set's smoke test: a mapping gone wrong
    fails here, before any real input sees it."""
    kern = Kernels({name: _prototype(kset, name)(addresses[name]) for name in kset.arity}, source, keep)
    kset.smoke_test(kern)
    return kern


# ---------------------------------------------------------------------------------------------------- loaders

_ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")
_RELA = struct.Struct("<QQq")
_SHT_PROGBITS, _SHT_SYMTAB, _SHT_RELA, _SHT_NOBITS = 1, 2, 4, 8
_SHF_WRITE, _SHF_ALLOC = 1, 2
_SHN_ABS = 0xFFF1
_R_X86_64_64, _R_X86_64_PC32, _R_X86_64_PLT32, _R_X86_64_PC64 = 1, 2, 4, 24
_PAGE = 4096


def _elf_supported() -> bool:
    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


def _load_elf(kset: KernelSet, obj: bytes, manifest: dict[str, Any]) -> Kernels:
    """Map x86-64 ELF object code as a static linker would: every allocated section copied into one mapping,
    its relocations applied (absolute and PC-relative, 64 and 32 bits), then made read-execute. Anything else in
    the object (a writable section, another relocation kind) is refused, and MCJIT is used instead."""
    if not _elf_supported():
        raise RuntimeError("the ELF loader is for x86-64 Linux")
    ident, e_type, machine, _, _, _, shoff, _, _, _, _, shentsize, shnum, _ = _ELF_HEADER.unpack_from(obj, 0)
    if ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1 or e_type != 1 or machine != 62:
        raise RuntimeError("not x86-64 ELF relocatable object code")
    sections = [_SECTION.unpack_from(obj, shoff + i * shentsize) for i in range(shnum)]
    place: dict[int, int] = {}
    size = 0
    for i, (_, kind, flags, _, _, sec_size, _, _, align, _) in enumerate(sections):
        if not flags & _SHF_ALLOC or kind not in (_SHT_PROGBITS, _SHT_NOBITS):
            continue  # .eh_frame (no unwinding through these functions), notes, symbols
        if flags & _SHF_WRITE:
            raise RuntimeError("a writable section")
        align = max(align, 1)
        size = -(-size // align) * align
        place[i] = size
        size += sec_size
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    length = max(_PAGE, -(-size // _PAGE) * _PAGE)
    base = libc.mmap(None, length, 1 | 2, 0x02 | 0x20, -1, 0)  # PROT_READ|WRITE, MAP_PRIVATE|ANONYMOUS
    if base in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap failed")
    for i, offset in place.items():
        _, kind, _, _, sec_off, sec_size, _, _, _, _ = sections[i]
        if kind == _SHT_PROGBITS and sec_size:
            ctypes.memmove(base + offset, obj[sec_off:sec_off + sec_size], sec_size)
    symtab = next(s for s in sections if s[1] == _SHT_SYMTAB)
    strtab = sections[symtab[6]]

    def name_at(offset: int) -> str:
        start = strtab[4] + offset
        return obj[start:obj.index(b"\0", start)].decode()

    external = _symbols(manifest["undefined"])
    symbols: list[tuple[str, int | None]] = []
    for k in range(symtab[5] // symtab[9]):
        st_name, _, _, shndx, value, _ = _SYMBOL.unpack_from(obj, symtab[4] + k * symtab[9])
        name = name_at(st_name)
        if shndx == 0:
            address = external.get(name) if name else 0
        elif shndx == _SHN_ABS:
            address = value
        elif shndx in place:
            address = base + place[shndx] + value
        else:
            address = None  # a symbol of a section that is not loaded: no relocation may use it
        symbols.append((name, address))
    for _, kind, _, _, rel_off, rel_size, _, target, _, entsize in sections:
        if kind != _SHT_RELA or target not in place:
            continue
        for k in range(rel_size // entsize):
            r_offset, r_info, addend = _RELA.unpack_from(obj, rel_off + k * entsize)
            name, s = symbols[r_info >> 32]
            if s is None:
                raise RuntimeError(f"unresolved symbol {name!r}")
            p = base + place[target] + r_offset
            rtype = r_info & 0xFFFFFFFF
            if rtype == _R_X86_64_64:
                struct.pack_into("<Q", (ctypes.c_char * 8).from_address(p), 0, (s + addend) & (2**64 - 1))
            elif rtype == _R_X86_64_PC64:
                struct.pack_into("<Q", (ctypes.c_char * 8).from_address(p), 0, (s + addend - p) & (2**64 - 1))
            elif rtype in (_R_X86_64_PC32, _R_X86_64_PLT32) and -(2**31) <= s + addend - p < 2**31:
                struct.pack_into("<i", (ctypes.c_char * 4).from_address(p), 0, s + addend - p)
            else:
                raise RuntimeError(f"relocation type {rtype} for {name!r} is not supported")
    if libc.mprotect(base, length, 1 | 4) != 0:  # PROT_READ|EXEC
        raise OSError(ctypes.get_errno(), "mprotect failed")
    by_name = {name: address for name, address in symbols if name}
    addresses = {}
    for fn, symbol in manifest["symbols"].items():
        address = by_name.get(symbol)
        if not address:
            raise RuntimeError(f"function {fn} not found in the cached kernels")
        addresses[fn] = address
    return _wrap(kset, addresses, "elf", (base, length))


def _llvm() -> Any:
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm


def _load_mcjit(kset: KernelSet, obj: bytes, manifest: dict[str, Any]) -> Kernels:
    """Link object code into a fresh llvmlite MCJIT engine."""
    llvm = _llvm()
    symbols = _symbols(manifest["undefined"])
    missing = [s for s in manifest["undefined"] if s not in symbols and not llvm.address_of_symbol(s)]
    if missing:
        raise RuntimeError(f"unresolved symbols in the cached kernels: {', '.join(missing)}")
    for name, address in symbols.items():
        llvm.add_symbol(name, address)
    target = llvm.Target.from_triple(manifest["triple"])
    machine = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                           features=llvm.get_host_cpu_features().flatten(), opt=3,
                                           reloc="default", codemodel="jitdefault")
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    addresses = {name: engine.get_function_address(manifest["symbols"][name]) for name in kset.arity}
    if not all(addresses.values()):
        raise RuntimeError("a function is missing from the cached kernels")
    return _wrap(kset, addresses, "mcjit", (engine, machine))


def load_object(kset: KernelSet, obj: bytes, manifest: dict[str, Any], loader: str) -> Kernels:
    """Object code of ``kset`` loaded by ``loader`` (``"elf"`` or ``"mcjit"``)."""
    return _load_elf(kset, obj, manifest) if loader == "elf" else _load_mcjit(kset, obj, manifest)


# ---------------------------------------------------------------------------------------------------- compiling


def _compile(kset: KernelSet) -> tuple[bytes, dict[str, Any], Kernels]:
    """Compile the kernels with numba (slow, once per machine): their object code, its manifest, and the
    kernels as numba made them (usable right away)."""
    import llvmlite.binding as llvm

    cfuncs = importlib.import_module(kset.module).CFUNCS
    module = None
    codegen = None
    symbols: dict[str, str] = {}
    for name in kset.arity:
        fn = cfuncs[name]
        library = fn._library
        codegen = library.codegen
        final = llvm.parse_assembly(str(library._final_module))
        if module is None:
            module = final
        else:
            module.link_in(final, preserve=False)
        symbols[name] = fn.native_name
    assert module is not None and codegen is not None
    module.verify()
    obj = codegen._tm.emit_object(module)
    undefined = sorted({f.name for f in module.functions if f.is_declaration and not f.name.startswith("llvm.")}
                       | {g.name for g in module.global_variables if g.is_declaration})
    manifest = {"symbols": symbols, "undefined": undefined, "triple": module.triple or llvm.get_process_triple()}
    kern = _wrap(kset, {name: cfuncs[name].address for name in kset.arity}, "numba", cfuncs)
    return obj, manifest, kern


_CHILD_CHECK = """
import importlib, json, sys
from harness import native
module, attribute = sys.argv[4].split(':')
kset = getattr(importlib.import_module(module), attribute)
obj = open(sys.argv[1], 'rb').read()
manifest = json.load(open(sys.argv[2]))
native.load_object(kset, obj, manifest, sys.argv[3])
print('loaded')
"""


def _works_in_child(kset: KernelSet, obj_path: Path, manifest_path: Path, loader: str) -> bool:
    """Load and run freshly written object code in a child process first: if it cannot, only the child dies."""
    import subprocess

    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD_CHECK, str(obj_path), str(manifest_path), loader,
                               kset.ref],
                              capture_output=True, text=True, timeout=120, env=env)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0 and proc.stdout.strip() == "loaded"


def _write_atomic(path: Path, data: bytes) -> None:
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _write(kset: KernelSet, directory: Path, key: str, obj: bytes, manifest: dict[str, Any]) -> None:
    """Write the object file and its manifest atomically, then record which loaders work with it here."""
    obj_path, manifest_path = _paths(kset, directory, key)
    directory.mkdir(parents=True, exist_ok=True)
    _write_atomic(obj_path, obj)
    _write_atomic(manifest_path, json.dumps(manifest).encode())
    loaders = [loader for loader in _LOADERS if (loader != "elf" or _elf_supported())
               and _works_in_child(kset, obj_path, manifest_path, loader)]
    _write_atomic(manifest_path, json.dumps({**manifest, "loaders": loaders}).encode())


def _from_cache(kset: KernelSet, dirs: list[Path], key: str) -> Kernels | bool:
    """The kernels mapped from the first cache of ``key`` in ``dirs``; False if there is none yet (or one whose
    writer has not yet recorded which loaders work: a manifest without ``loaders``); True if there is one that no
    loader can use here."""
    for directory in dirs:
        obj_path, manifest_path = _paths(kset, directory, key)
        try:
            manifest = json.loads(manifest_path.read_bytes())
            obj = obj_path.read_bytes()
        except (OSError, ValueError):
            continue
        if "loaders" not in manifest:
            return False
        for loader in manifest["loaders"]:
            try:
                return load_object(kset, obj, manifest, loader)
            except Exception as exc:  # noqa: BLE001 - the next loader, or compiling, then
                log.info("kernels not loaded with %s: %s", loader, exc)
        return True
    return False


@contextmanager
def _compiling(kset: KernelSet, dirs: list[Path], key: str) -> Iterator[None]:
    """Held while this process compiles ``kset``: an exclusive lock on a file beside the cache, so that of the
    processes that start at once on a fresh machine (a sweep's jobs, a test session's workers) one compiles and
    the others wait for its object code instead of compiling too. The lock goes with the process if it dies.
    Without a writable cache directory (or ``fcntl``), nothing is held."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    for directory in dirs:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(_paths(kset, directory, key)[0].with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock
        return
    yield


def _load(kset: KernelSet) -> Kernels:
    key = cache_key(kset)
    dirs = cache_dirs(kset)
    found = _from_cache(kset, dirs, key)
    if found is False:
        with _compiling(kset, dirs, key):
            found = _from_cache(kset, dirs, key)  # another process may have compiled it meanwhile
            if found is False:
                log.info("compiling the %s (once per machine and version; takes a few seconds)", kset.what)
                obj, manifest, compiled = _compile(kset)
                for directory in dirs:
                    try:
                        _write(kset, directory, key, obj, manifest)
                        break
                    except OSError:
                        continue
                return compiled
    if found is True:  # a cache of this key that no loader can use here: compile in this process
        return _compile(kset)[2]
    return found
