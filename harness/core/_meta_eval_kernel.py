"""numba source of the compiled meta-evaluation counts, loaded from their object code by :mod:`harness.native`
(see :data:`harness.core.meta_eval.KERNELS`). Imported only to compile.

- ``exceed_counts``: the pair counts of MTME's permutation p-values (soft pairwise accuracy). Must compute in
  float32 exactly as MTME's numpy does (one subtraction, one comparison: no other arithmetic that could round).
- ``agreement``: the agreeing system pairs of MTME ``stats.Agreement`` and pairwise accuracy, for every row of a
  batch. Must compare the signs of float64 differences as ``np.sign(a - b) == np.sign(c - d)`` does (a NaN
  difference agrees with nothing).

Both must stay C-ABI functions (``cfunc``): pointers and integers in, no allocation, cannot raise.
"""

from __future__ import annotations

import numpy as np
from numba import carray, cfunc, njit, types


@njit
def _exceed_counts(partial, sys_scores, s, n_p, b0, b1, out):  # pragma: no cover - compiled
    """For every matrix ``b0 <= b < b1`` and every system pair ``i < j`` (``np.triu_indices`` order): how many
    permutations ``p`` have ``partial[b, i, p] - partial[b, j, p] >= sys_scores[b, i] - sys_scores[b, j]``, all
    float32 (``partial[B, S, P]`` and ``sys_scores[B, S]`` flat, C order), into ``out[b, pair]``."""
    n_pairs = s * (s - 1) // 2
    for b in range(b0, b1):
        k = b * n_pairs
        for i in range(s - 1):
            row_i = partial[(b * s + i) * n_p:(b * s + i + 1) * n_p]
            for j in range(i + 1, s):
                row_j = partial[(b * s + j) * n_p:(b * s + j + 1) * n_p]
                test_delta = sys_scores[b * s + i] - sys_scores[b * s + j]
                count = 0
                for p in range(n_p):  # branch-free, so LLVM vectorises it (3x the branching loop)
                    count += row_i[p] - row_j[p] >= test_delta
                out[k] = count
                k += 1
    return 0


@njit
def _agreement(metric, human, v, s, out):  # pragma: no cover - compiled
    """For every row ``b < v`` of ``metric[v, S]`` (flat, C order), over the system pairs ``i < j`` that both have
    a human score (not NaN): ``out[v + b]`` = how many have ``sign(human_i - human_j) == sign(metric_i -
    metric_j)``, ``out[b]`` = that count divided by the number of pairs (NaN without a pair); ``out[2v]`` = the
    number of pairs, ``out[2v + 1]`` = how many metric scores are NaN where a human score is. All float64 (the
    counts are exact integers)."""
    present = 0
    for i in range(s):
        present += human[i] == human[i]
    n_pairs = present * (present - 1) // 2
    missing = 0
    for b in range(v):
        row = metric[b * s:(b + 1) * s]
        count = 0
        for i in range(s):
            hi = human[i]
            if hi != hi:
                continue
            mi = row[i]
            missing += mi != mi
            for j in range(i + 1, s):
                hj = human[j]
                if hj != hj:
                    continue
                dh = hi - hj
                dm = mi - row[j]
                # np.sign(dh) == np.sign(dm): both differences are numbers (inf - inf and a NaN metric are not),
                # with the same sign or both zero
                count += (dh == dh) & (dm == dm) & ((dh > 0) == (dm > 0)) & ((dh < 0) == (dm < 0))
        out[v + b] = count
        out[b] = count / n_pairs if n_pairs else np.nan
    out[2 * v] = n_pairs
    out[2 * v + 1] = missing
    return 0


_i64p = types.CPointer(types.int64)
_f32p = types.CPointer(types.float32)
_f64p = types.CPointer(types.float64)

#: params: the number of systems ``S``, of permutations ``P``, the first and the end matrix
EXCEED_PARAMS = 4
EXCEED_SIGNATURE = types.int64(_f32p, _f32p, _i64p, _i64p)


@cfunc(EXCEED_SIGNATURE, nopython=True, error_model="numpy", boundscheck=False)
def exceed_counts(partial_p, sys_p, params_p, out_p):  # pragma: no cover - compiled
    params = carray(params_p, (EXCEED_PARAMS,))
    s = params[0]
    n_p = params[1]
    b0 = params[2]
    b1 = params[3]
    return _exceed_counts(carray(partial_p, (max(b1 * s * n_p, 1),)), carray(sys_p, (max(b1 * s, 1),)), s, n_p,
                          b0, b1, carray(out_p, (max(b1 * (s * (s - 1) // 2), 1),)))


AGREEMENT_SIGNATURE = types.int64(_f64p, _f64p, types.int64, types.int64, _f64p)


@cfunc(AGREEMENT_SIGNATURE, nopython=True, error_model="numpy", boundscheck=False)
def agreement(metric_p, human_p, v, s, out_p):  # pragma: no cover - compiled
    return _agreement(carray(metric_p, (max(v * s, 1),)), carray(human_p, (max(s, 1),)), v, s,
                      carray(out_p, (2 * v + 2,)))


#: The compiled functions (what :mod:`harness.native` exports).
CFUNCS = {"exceed_counts": exceed_counts, "agreement": agreement}
