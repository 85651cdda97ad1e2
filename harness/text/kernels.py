"""The compiled text kernels (``encode``, ``rehash``, ``count``, ``lines_end`` of ``harness/_kernels.c``: UTF-8
text -> token ids -> n-gram statistics), from the extension module :mod:`harness.native` imports; None when they
were not built, and the Python path (:mod:`.tokenizers` and numpy counting) gives the same numbers.
"""

from __future__ import annotations

import ctypes

from .. import native
from ..native import Kernels, KernelSet


def _smoke_test(kern: Kernels) -> None:
    """Run the smallest kernel once."""
    buf = ctypes.create_string_buffer(b"ab\ncd\nef")
    address = ctypes.addressof(buf)
    if (kern.lines_end(address, 0, 8, 2), kern.lines_end(address, 0, 8, 5)) != (6, -3):
        raise RuntimeError("the loaded kernels do not compute what they should")


TEXT = KernelSet(name="kernels", what="text kernels", functions=("encode", "rehash", "count", "lines_end"),
                 smoke_test=_smoke_test)


def loaded() -> Kernels | None:
    """The compiled text kernels, loaded once per process; None if they cannot be had (the numpy path then)."""
    return native.kernels(TEXT)
