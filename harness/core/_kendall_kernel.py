"""The numba kernel behind resampled Kendall tau-b (imported lazily by :mod:`harness.core.correlation`).

Kept in its own module so that importing the correlation module does not import numba, and so that numba's on-disk
cache (``cache=True``) is keyed to this small file only.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True, parallel=True)
def weighted_tau_b(y_rank, n_y, starts, weights):  # pragma: no cover - compiled
    """Kendall tau-b of every weighting ``weights[b, k]`` (how often item ``k`` occurs in resample ``b``).

    Items are given sorted by x; ``starts`` are the first positions of the groups of equal x (and the end);
    ``y_rank`` is each item's dense y rank (``0..n_y-1``). For each resample: concordant minus discordant pairs
    from a Fenwick tree over y ranks that holds the weights of the earlier x groups (pairs within an x group are
    x ties), and the tie counts of x and y from the weighted group sizes, as ``scipy.stats.kendalltau
    (variant='b')`` defines them on the resample with its repeated items. ``NaN`` where undefined (a constant
    side).
    """
    n_b, n = weights.shape
    out = np.empty(n_b)
    n_groups = starts.shape[0] - 1
    for b in prange(n_b):
        w = weights[b]
        tree = np.zeros(n_y + 1)
        y_sum = np.zeros(n_y)
        total = 0.0
        x_ties = 0.0
        s = 0.0  # concordant - discordant
        seen = 0.0  # weight of the earlier x groups
        for g in range(n_groups):
            group = 0.0
            for k in range(starts[g], starts[g + 1]):
                wk = w[k]
                if wk == 0:
                    continue
                r = y_rank[k]
                less = 0.0  # weight of earlier groups with y rank < r: prefix sum up to r - 1
                i = r
                while i > 0:
                    less += tree[i]
                    i -= i & (-i)
                i = r + 1
                acc = 0.0
                while i > 0:
                    acc += tree[i]
                    i -= i & (-i)
                greater = seen - acc
                s += wk * (less - greater)
                group += wk
                y_sum[r] += wk
            for k in range(starts[g], starts[g + 1]):
                wk = w[k]
                if wk == 0:
                    continue
                i = y_rank[k] + 1
                while i <= n_y:
                    tree[i] += wk
                    i += i & (-i)
            seen += group
            total += group
            x_ties += group * (group - 1.0) / 2.0
        y_ties = 0.0
        for r in range(n_y):
            y_ties += y_sum[r] * (y_sum[r] - 1.0) / 2.0
        pairs = total * (total - 1.0) / 2.0
        denominator = (pairs - x_ties) * (pairs - y_ties)
        out[b] = s / np.sqrt(denominator) if denominator > 0 else np.nan
    return out
