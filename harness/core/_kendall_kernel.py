"""numba source of the compiled resampled Kendall tau-b (``tau_b``), loaded from its object code by
:mod:`harness.native` (see :data:`harness.core.correlation.KENDALL`). Imported only to compile.

Must stay a C-ABI function (``cfunc``): pointers and integers in, no allocation, cannot raise.
"""

from __future__ import annotations

import numpy as np
from numba import carray, cfunc, njit, types


@njit
def _tau_b(y_rank, starts, weights, n_y, n, b0, b1, out, tree, y_sum):  # pragma: no cover - compiled
    """Kendall tau-b of every weighting ``weights[b * n:(b + 1) * n]``, ``b0 <= b < b1`` (how often item ``k``
    occurs in resample ``b``), into ``out[b]``.

    Items are given sorted by x; ``starts`` are the first positions of the groups of equal x (and the end);
    ``y_rank`` is each item's dense y rank (``0..n_y-1``). For each resample: concordant minus discordant pairs
    from a Fenwick tree over y ranks (``tree``, ``n_y + 1`` slots) that holds the weights of the earlier x groups
    (pairs within an x group are x ties), and the tie counts of x and y from the weighted group sizes (``y_sum``,
    ``n_y`` slots), as ``scipy.stats.kendalltau(variant='b')`` defines them on the resample with its repeated
    items. ``NaN`` where undefined (a constant side).
    """
    n_groups = starts.shape[0] - 1
    for b in range(b0, b1):
        base = b * n
        for i in range(n_y + 1):
            tree[i] = 0.0
        for i in range(n_y):
            y_sum[i] = 0.0
        total = 0.0
        x_ties = 0.0
        s = 0.0  # concordant - discordant
        seen = 0.0  # weight of the earlier x groups
        for g in range(n_groups):
            group = 0.0
            for k in range(starts[g], starts[g + 1]):
                wk = weights[base + k]
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
                wk = weights[base + k]
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
    return 0


_i64p = types.CPointer(types.int64)
_f64p = types.CPointer(types.float64)

#: params: ``n_y``, the number of group starts (groups + 1), the number of items, the first and the end resample
TAU_B_PARAMS = 5
TAU_B_SIGNATURE = types.int64(_i64p, _i64p, _f64p, _i64p, _f64p, _f64p, _f64p)


@cfunc(TAU_B_SIGNATURE, nopython=True, error_model="numpy", boundscheck=False)
def tau_b(y_rank_p, starts_p, weights_p, params_p, out_p, tree_p, y_sum_p):  # pragma: no cover - compiled
    params = carray(params_p, (TAU_B_PARAMS,))
    n_y = params[0]
    n_starts = params[1]
    n = params[2]
    b0 = params[3]
    b1 = params[4]
    return _tau_b(carray(y_rank_p, (max(n, 1),)), carray(starts_p, (n_starts,)),
                  carray(weights_p, (max(b1 * n, 1),)), n_y, n, b0, b1, carray(out_p, (max(b1, 1),)),
                  carray(tree_p, (n_y + 1,)), carray(y_sum_p, (max(n_y, 1),)))


#: The compiled functions (what :mod:`harness.native` exports).
CFUNCS = {"tau_b": tau_b}
