"""The compiled text kernels (:mod:`._kernels`: UTF-8 text -> token ids -> n-gram statistics), loaded from their
object code by :mod:`harness.native` in about a millisecond; None when they cannot be had, and the Python
path (:mod:`.tokenizers` and numpy counting) gives the same numbers. Must not import numba.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

from .. import native
from ..native import Kernels, KernelSet


def _smoke_test(kern: Kernels) -> None:
    """Run the smallest kernel once."""
    buf = ctypes.create_string_buffer(b"ab\ncd\nef")
    address = ctypes.addressof(buf)
    if (kern.lines_end(address, 0, 8, 2), kern.lines_end(address, 0, 8, 5)) != (6, -3):
        raise RuntimeError("the loaded kernels do not compute what they should")


TEXT = KernelSet(
    name="kernels", what="text kernels", module="harness.text._kernels", ref="harness.text.native:TEXT",
    arity={"encode": 15, "rehash": 4, "count": 15, "lines_end": 4},
    int_args={"rehash": (1, 3), "lines_end": (1, 2, 3)}, smoke_test=_smoke_test)


def kernels() -> Kernels | None:
    """The compiled text kernels, loaded once per process; None if they cannot be had (the Python path then)."""
    return native.kernels(TEXT)


def cache_files() -> list[Path]:
    """The object files of this machine's key that exist (for tests and the benchmarks)."""
    return native.cache_files(TEXT)
