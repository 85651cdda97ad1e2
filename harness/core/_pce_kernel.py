"""numba source of the compiled pair counts of MTME's permutation p-values (``exceed_counts``), loaded from its
object code by :mod:`harness.native` (see :data:`harness.core.meta_eval.PCE`). Imported only to compile.

Must stay a C-ABI function (``cfunc``): pointers and integers in, no allocation, cannot raise. Must compute in
float32 exactly as MTME's numpy does (one subtraction, one comparison: no other arithmetic that could round).
"""

from __future__ import annotations

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


_i64p = types.CPointer(types.int64)
_f32p = types.CPointer(types.float32)

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


#: The compiled functions (what :mod:`harness.native` exports).
CFUNCS = {"exceed_counts": exceed_counts}
