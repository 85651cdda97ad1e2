"""The compiled meta-evaluation counts (``exceed_counts``, ``agreement`` of ``harness/_kernels.c``), loaded by
:mod:`harness.native`; without them numpy computes the same counts."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import native


def _smoke_test(kern: Any) -> None:
    """The two kernels on small inputs, against counts worked out by hand."""
    partial = np.array([[[1, 2, 3, 4], [0, 2, 5, 1], [4, 4, 4, 4]],
                        [[0, 0, 0, 0], [1, -1, 1, -1], [0, 1, 0, 1]]], dtype=np.float32)
    sys_scores = np.array([[1, 0, 2], [0, 1, 0]], dtype=np.float32)
    counts = np.full((2, 3), -1, dtype=np.int64)
    kern.exceed_counts(partial.ctypes.data, sys_scores.ctypes.data,
                       np.array([3, 4, 0, 2], dtype=np.int64).ctypes.data, counts.ctypes.data)
    # b=0: pair 0,1: 1,0,-2,3 >= 1: 2; pair 0,2: -3,-2,-1,0 >= -1: 2; pair 1,2: -4,-2,1,-3 >= -2: 2
    # b=1: pair 0,1: -1,1,-1,1 >= -1: 4; pair 0,2: 0,-1,0,-1 >= 0: 2; pair 1,2: 1,-2,1,-2 >= 1: 2
    if counts.tolist() != [[2, 2, 2], [4, 2, 2]]:
        raise RuntimeError(f"the loaded permutation p-value kernel does not compute what it should ({counts.tolist()})")
    human = np.array([1.0, 2.0, 2.0, np.nan])
    metric = np.array([[3.0, 1.0, 1.0, 0.0], [1.0, 2.0, 3.0, np.nan], [1.0, np.nan, 0.0, 5.0]])
    agree = np.full(8, -1.0)
    kern.agreement(metric.ctypes.data, human.ctypes.data, 3, 4, agree.ctypes.data)
    # pairs (0,1), (0,2), (1,2); human signs -, -, 0. Row 0: +, +, 0: 1 agrees; row 1: -, -, -: 2;
    # row 2: NaN, +, NaN: 0. Three pairs; one NaN metric where a human score is (row 2, system 1)
    if agree.tolist() != [1 / 3, 2 / 3, 0.0, 1.0, 2.0, 0.0, 3.0, 1.0]:
        raise RuntimeError(f"the loaded pairwise agreement kernel does not compute what it should ({agree.tolist()})")


#: The compiled meta-evaluation counts (``exceed_counts``, ``agreement`` of ``harness/_kernels.c``): the pair
#: counts of the permutation p-values behind soft pairwise accuracy, and the agreeing system pairs of pairwise
#: accuracy.
KERNELS = native.KernelSet(name="meta_eval", what="meta-evaluation kernels", functions=("exceed_counts", "agreement"),
                           smoke_test=_smoke_test)
