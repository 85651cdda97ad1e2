"""The compiled meta-evaluation counts (``exceed_counts``, ``agreement``, ``hybrid_counts``, ``acc_eq_draws``,
``signed_sums`` of ``harness/_kernels.c``), loaded by :mod:`harness.native`; without them numpy computes the same
numbers."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ... import native


def _smoke_test(kern: Any) -> None:
    """The two kernels on small inputs, against counts worked out by hand."""
    partial = np.array([[[1, 2, 3, 4], [0, 2, 5, 1], [4, 4, 4, 4]],
                        [[0, 0, 0, 0], [1, -1, 1, -1], [0, 1, 0, 1]]], dtype=np.float32)
    sys_scores = np.array([[1, 0, 2], [0, 1, 0]], dtype=np.float32)
    counts = np.full((2, 3), -1, dtype=np.int64)
    # arrays, not their addresses: an address of a temporary array outlives it (freed before the call)
    kern.exceed_counts(partial, sys_scores, np.array([3, 4, 0, 2], dtype=np.int64), counts)
    # b=0: pair 0,1: 1,0,-2,3 >= 1: 2; pair 0,2: -3,-2,-1,0 >= -1: 2; pair 1,2: -4,-2,1,-3 >= -2: 2
    # b=1: pair 0,1: -1,1,-1,1 >= -1: 4; pair 0,2: 0,-1,0,-1 >= 0: 2; pair 1,2: 1,-2,1,-2 >= 1: 2
    if counts.tolist() != [[2, 2, 2], [4, 2, 2]]:
        raise RuntimeError(f"the loaded permutation p-value kernel does not compute what it should ({counts.tolist()})")
    human = np.array([1.0, 2.0, 2.0, np.nan])
    metric = np.array([[3.0, 1.0, 1.0, 0.0], [1.0, 2.0, 3.0, np.nan], [1.0, np.nan, 0.0, 5.0]])
    agree = np.full(8, -1.0)
    kern.agreement(metric, human, 3, 4, agree)
    # pairs (0,1), (0,2), (1,2); human signs -, -, 0. Row 0: +, +, 0: 1 agrees; row 1: -, -, -: 2;
    # row 2: NaN, +, NaN: 0. Three pairs; one NaN metric where a human score is (row 2, system 1)
    if agree.tolist() != [1 / 3, 2 / 3, 0.0, 1.0, 2.0, 0.0, 3.0, 1.0]:
        raise RuntimeError(f"the loaded pairwise agreement kernel does not compute what it should ({agree.tolist()})")
    # two metrics, the first matrix of partial above as metric 0's permuted sums and zeros as metric 1's; one test
    # (a=0, b=1) whose swaps move the second matrix (row 1) minus nothing (row 0 = zeros): i' = partial[0] +
    # partial[1] (its counts below), j' = -partial[1]
    whole = np.stack([partial[0], np.zeros((3, 4), np.float32)])
    moved = np.stack([np.zeros((3, 4), np.float32), partial[1]])
    totals, moved_totals = np.stack([sys_scores[0], np.zeros(3, np.float32)]), np.stack([np.zeros(3, np.float32),
                                                                                          sys_scores[1]])
    idx = np.array([[0, 1, 0, 1]], dtype=np.int64)
    out = np.full((2, 3), -1, dtype=np.int64)
    buf = np.empty(2 * 3 * 4, dtype=np.float32)
    kern.hybrid_counts(whole, moved, totals, moved_totals, idx, np.array([3, 4, 0, 1], dtype=np.int64), buf, out)
    # i' = [[1,2,3,4],[1,1,6,0],[4,5,4,5]], totals [1,1,2]: pairs 0,1: 0,1,-3,4 >= 0: 3; 0,2: -3,-3,-1,-1 >= -1: 2;
    # 1,2: -3,-4,2,-5 >= -1: 1. j' = -partial[1] = [[0,0,0,0],[-1,1,-1,1],[0,-1,0,-1]], totals [0,-1,0]: pairs 0,1:
    # 1,-1,1,-1 >= 1: 2; 0,2: 0,1,0,1 >= 0: 4; 1,2: -1,2,-1,2 >= -1: 4
    if out.tolist() != [[3, 2, 1], [2, 4, 4]]:
        raise RuntimeError(f"the loaded swapped-metric count kernel does not compute what it should ({out.tolist()})")
    # acc_eq's draws: two metrics, three items of 2, 1 and 3 pairs; metric 0 gets 2, 0, 1 right, metric 1 1, 1, 3; one
    # draw whose swaps move 1, 0, 2 of metric 1's right pairs and 0, 0, 1 of metric 0's to the other metric:
    # metric 0 then has 3, 0, 2 (mean of 3/2, 0, 2/3: 13/18), metric 1 0, 1, 2 (mean of 0, 1, 2/3: 5/9): 13/18 - 5/9
    acc = np.full((1, 1), np.nan)
    item_counts, moved_counts = np.array([[2, 0, 1], [1, 1, 3]]), np.array([[[0, 0, 1], [1, 0, 2]]])
    pairs = np.array([2, 1, 3])
    kern.acc_eq_draws(item_counts.astype(np.int64), moved_counts.astype(np.int64), pairs.astype(np.int64),
                      pairs.astype(np.float64), np.array([0, 1, 0, 1], dtype=np.int64),
                      np.array([3, 2, 1, 1, 0, 0, 1], dtype=np.int64), acc)
    if abs(acc[0, 0] - (13 / 18 - 5 / 9)) > 1e-12:
        raise RuntimeError(f"the loaded acc_eq draw kernel does not compute what it should ({acc.tolist()})")
    # signed sums: 2 columns x 10 segments (two blocks, the second padded), 3 permutations; small integers, so the sums
    # are exact: column 0 = 1..10, column 1 = 1, -1, 0, ...; bits of permutation 0 all set (sum 55, 0), permutation 1
    # none (-55, 0), permutation 2 only segment 0's (1 - 54 = -53; 1 - (-1) = 2)
    x = np.array([np.arange(1, 11), [1, -1] + [0] * 8], dtype=np.float32)
    bits = grouped_bits(np.array([[255, 3], [0, 0], [1, 0]], dtype=np.uint8))
    sums = np.full((2, 3), np.nan, dtype=np.float32)
    scratch = np.empty(3 * 16 + 16 * 256 * 16, dtype=np.float32)
    kern.signed_sums(x, bits, np.array([2, 10, 3, 2, 0, 1, scratch.size], dtype=np.int64), scratch, sums)
    if sums.tolist() != [[55.0, -55.0, -53.0], [0.0, 0.0, 2.0]]:
        raise RuntimeError(f"the loaded signed-sum kernel does not compute what it should ({sums.tolist()})")


#: ``signed_sums`` adds the table entries of this many blocks of 8 segments (one byte of each permutation's bits)
#: before it adds the group's sums to the permutation's.
SS_GROUP = 16


def grouped_bits(bits: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """``bits[P, NB]`` (a permutation's bytes, one per block of 8 segments) in the layout ``signed_sums`` reads:
    ``[ceil(NB / SS_GROUP), P, SS_GROUP]``, a group's bytes of every permutation together (the kernel reads them
    in that order, 16 KB at a time for 1,000 permutations, instead of 16 bytes of each of 1,000 rows), the last
    group padded with zeros (its blocks past NB are never read)."""
    n_p, nb = bits.shape
    groups = -(-nb // SS_GROUP)
    padded = np.zeros((n_p, groups * SS_GROUP), dtype=np.uint8)
    padded[:, :nb] = bits
    return np.ascontiguousarray(padded.reshape(n_p, groups, SS_GROUP).transpose(1, 0, 2))


#: The compiled meta-evaluation counts (``harness/_kernels.c``): the pair counts of the permutation p-values behind
#: soft pairwise accuracy (of a metric, and of the metrics its test swaps), the agreeing system pairs of pairwise
#: accuracy, the statistics of acc_eq's pair-swap draws, and the permuted sums of soft pairwise accuracy's draws.
KERNELS = native.KernelSet(name="meta_eval", what="meta-evaluation kernels",
                           functions=("exceed_counts", "agreement", "hybrid_counts", "acc_eq_draws", "signed_sums"),
                           smoke_test=_smoke_test)
