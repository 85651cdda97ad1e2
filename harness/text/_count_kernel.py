"""The numba n-gram counting kernel behind :func:`harness.stats.count_statistics` (imported lazily).

Kept in its own module so that importing :mod:`harness.stats` does not import numba, and so that numba's
on-disk cache (``cache=True``) is keyed to this small file only.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# FNV-1a style mixing constants (64-bit, as signed int64 so numba never promotes to float).
_OFFSET = np.int64(-3750763034362895579)  # 0xcbf29ce484222325
_PRIME = np.int64(1099511628211)


@njit(cache=True, nogil=True, inline="always")
def _hash(ids, start, n):  # pragma: no cover - compiled
    h = _OFFSET
    for j in range(n):
        h = (h ^ ids[start + j]) * _PRIME
    h ^= h >> 29
    return h


@njit(cache=True, nogil=True, inline="always")
def _equal(a, i, b, j, n):  # pragma: no cover - compiled
    for t in range(n):
        if a[i + t] != b[j + t]:
            return False
    return True


@njit(cache=True, nogil=True)
def count_ngrams(h_ids, h_off, r_ids, r_off, n_refs, max_order, first, last, matches, totals):  # pragma: no cover
    """Fill ``matches[i, n-1]`` and ``totals[i, n-1]`` for segments ``first <= i < last``.

    ``h_ids[h_off[i]:h_off[i+1]]`` are the hypothesis token ids of segment ``i`` (``-1`` = unknown to the
    references); reference ``k`` of segment ``i`` is ``r_ids[r_off[i*n_refs+k]:r_off[i*n_refs+k+1]]``.
    """
    longest = 0
    for i in range(first, last):
        size = r_off[(i + 1) * n_refs] - r_off[i * n_refs]
        if size > longest:
            longest = size
    cap = 16
    while cap < 2 * longest + 2:
        cap *= 2
    mask = cap - 1
    slot_pos = np.full(cap, -1, np.int64)  # position in r_ids of the slot's n-gram; -1 = empty
    slot_ref = np.zeros(cap, np.int64)  # the reference that counted it last
    slot_cur = np.zeros(cap, np.int64)  # its count in that reference
    slot_max = np.zeros(cap, np.int64)  # its maximum count over references
    slot_hyp = np.zeros(cap, np.int64)  # running count in the hypothesis
    used = np.empty(cap, np.int64)
    for i in range(first, last):
        hs = h_off[i]
        he = h_off[i + 1]
        length = he - hs
        for n in range(1, max_order + 1):
            n_used = 0
            for k in range(n_refs):
                rs = r_off[i * n_refs + k]
                re_ = r_off[i * n_refs + k + 1]
                for p in range(rs, re_ - n + 1):
                    slot = _hash(r_ids, p, n) & mask
                    while True:
                        q = slot_pos[slot]
                        if q == -1:
                            slot_pos[slot] = p
                            slot_ref[slot] = k
                            slot_cur[slot] = 1
                            slot_max[slot] = 1
                            used[n_used] = slot
                            n_used += 1
                            break
                        if _equal(r_ids, q, r_ids, p, n):
                            if slot_ref[slot] != k:
                                slot_ref[slot] = k
                                slot_cur[slot] = 0
                            slot_cur[slot] += 1
                            if slot_cur[slot] > slot_max[slot]:
                                slot_max[slot] = slot_cur[slot]
                            break
                        slot = (slot + 1) & mask
            count = 0
            if n_used > 0:
                for p in range(hs, he - n + 1):
                    slot = _hash(h_ids, p, n) & mask
                    while True:
                        q = slot_pos[slot]
                        if q == -1:
                            break
                        if _equal(r_ids, q, h_ids, p, n):
                            slot_hyp[slot] += 1
                            if slot_hyp[slot] <= slot_max[slot]:
                                count += 1
                            break
                        slot = (slot + 1) & mask
                for u in range(n_used):
                    s = used[u]
                    slot_pos[s] = -1
                    slot_hyp[s] = 0
            matches[i, n - 1] = count
            totals[i, n - 1] = length - n + 1 if length >= n else 0
