"""Tests of harness.core.mtme against google-research/mt-metrics-eval (MTME).

Three kinds of expected values:
- MTME's own unit tests (stats_test.py, pce_test.py, tau_optimization_test.py), transcribed; each test names the
  MTME test it comes from;
- values obtained by running MTME's code offline on the literal inputs below (MTME commit
  68a481aea1a787392d55af8f76ac8ef40c5f4664, Python 3.11.7, numpy 2.4.6, scipy 1.17.1, imported from a checkout
  under /tmp; MTME is not imported here);
- edge cases (sparse human scores, ties, constant vectors, 2 systems, orientation) and internal consistency.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats

from harness.core import mtme as me
from harness.core.mtme.accuracy import _agreement as agreement_counts
from harness.core.mtme.draws import draw_bits, early_stop_scan
from harness.core.mtme.pce import _exceed_counts as exceed_counts

nan = math.nan
REL = 1e-12


def approx(x: float) -> object:
    return pytest.approx(x, rel=REL, abs=1e-15)


def packed(values: list, num_sys: int) -> np.ndarray:
    """MTME's packed system-major vector (None = missing) -> our [S, n] matrix (NaN = missing)."""
    return np.array([nan if v is None else v for v in values], dtype=float).reshape(num_sys, -1)


# ------------------------------------------------------------------------------------------------------------------
# Literal inputs used for the offline MTME cross-checks
# ------------------------------------------------------------------------------------------------------------------

H = [[1.0, 1.6, 1.1, -1.0, -1.4, 0.1, 0.9, 0.5, 1.8, 0.8, 0.6, -0.7],
     [-1.1, 1.5, 0.0, 0.8, -1.4, -0.4, -1.3, -0.8, 0.9, -1.5, -0.5, 0.2],
     [-0.7, -0.3, -0.2, 0.4, -0.4, 0.3, 0.1, 0.4, 0.2, 1.7, -0.7, 1.2],
     [-0.4, -1.0, 1.2, -0.4, -0.4, -1.4, -2.1, 0.6, -1.2, 0.8, 1.8, -0.1],
     [-1.1, 0.4, 0.8, -0.3, 0.0, 1.3, 1.3, 0.7, -0.9, -0.1, 0.6, -0.2]]
M = [[-0.11, 0.03, -0.08, -1.17, -1.15, 1.2, -0.35, 1.14, 1.32, 0.54, -0.53, -0.81],
     [1.42, 0.85, 0.54, 1.06, 0.36, -0.44, -1.26, -0.46, 0.19, 0.04, -0.06, 0.34],
     [-0.2, 1.08, -0.64, -0.28, 0.69, 0.04, 0.41, -0.53, 0.12, 1.28, -1.68, -0.09],
     [0.22, 1.75, 1.06, -0.26, -1.05, -0.31, -3.55, 0.25, -0.93, -0.12, 3.22, -2.52],
     [-0.57, 0.27, 0.87, -1.75, -0.47, -0.85, 0.52, 0.55, -0.29, -0.25, 0.49, 0.08]]
M2 = [[0.012, 0.001, 0.006, 1.369, 1.322, 1.44, 0.122, 1.3, 1.742, 0.292, 0.281, 0.656],
      [2.016, 0.722, 0.292, 1.124, 0.13, 0.194, 1.588, 0.212, 0.036, 0.002, 0.004, 0.116],
      [0.04, 1.166, 0.41, 0.078, 0.476, 0.002, 0.168, 0.281, 0.014, 1.638, 2.822, 0.008],
      [0.048, 3.062, 1.124, 0.068, 1.102, 0.096, 12.602, 0.062, 0.865, 0.014, 10.368, 6.35],
      [0.325, 0.073, 0.757, 3.062, 0.221, 0.722, 0.27, 0.303, 0.084, 0.062, 0.24, 0.006]]
# MQM-like human scores (many ties) with missing entries; column 9 is missing for every system.
QN = [[-5.0, None, 0.0, -5.0, -1.0, 0.0, 0.0, 0.0, 0.0, None],
      [0.0, 0.0, 0.0, 0.0, -1.0, -5.0, 0.0, 0.0, 0.0, None],
      [0.0, 0.0, -5.0, -5.0, 0.0, -1.0, 0.0, -1.0, 0.0, None],
      [0.0, None, -5.0, -5.0, -5.0, -1.0, -25.0, -5.0, -1.0, None],
      [0.0, 0.0, -5.0, 0.0, 0.0, 0.0, -1.0, -1.0, -1.0, None],
      [-5.0, 0.0, -5.0, -1.0, -5.0, 0.0, 0.0, None, -1.0, None]]
QM = [[3.3, 0.7, 0.3, 2.7, 2.1, 0.7, 0.2, 1.1, 3.5, 1.5],
      [3.1, 3.9, 3.3, 3.9, 1.9, 3.8, 0.8, 0.8, 2.8, 3.9],
      [2.6, 2.3, 3.5, 1.1, 3.5, 0.2, 0.9, 3.2, 2.2, 3.3],
      [1.5, 0.1, 2.3, 2.6, 0.5, 2.5, 3.0, 3.8, 2.7, 2.3],
      [2.6, 1.6, 2.2, 1.8, 2.2, 2.6, 2.6, 3.4, 0.7, 0.9],
      [1.3, 3.7, 2.6, 0.5, 1.2, 2.8, 0.8, 3.0, 3.8, 3.7]]
QM2 = [[1.21, 2.89, 2.12, 0.65, 1.14, 2.26, 0.86, 2.4, 2.96, 2.89],
       [2.12, 1.42, 1.84, 1.56, 1.84, 2.12, 2.12, 2.68, 0.79, 0.93],
       [1.35, 0.37, 1.91, 2.12, 0.65, 2.05, 2.4, 2.96, 2.19, 1.91],
       [2.12, 1.91, 2.75, 1.07, 2.75, 0.44, 0.93, 2.54, 1.84, 2.61],
       [2.47, 3.03, 2.61, 3.03, 1.63, 2.96, 0.86, 0.86, 2.26, 3.03],
       [2.61, 0.79, 0.51, 2.19, 1.77, 0.79, 0.44, 1.07, 2.75, 1.35]]


def qn() -> np.ndarray:
    return np.array([[nan if v is None else v for v in row] for row in QN])


def h_colmissing() -> np.ndarray:
    h = np.array(H)
    h[:, [3, 8]] = nan
    return h


# ------------------------------------------------------------------------------------------------------------------
# 1. Pairwise accuracy
# ------------------------------------------------------------------------------------------------------------------


def test_agreement_mtme_unit():
    # MTME stats_test.py CorrelationFunctionsTest.testAgreement
    assert me.pairwise_agreement([1, 1, 2, 1, 2], [1, 2, 3, 3, 4]) == (5, 10)
    assert me.pairwise_accuracy([1, 1, 2, 1, 2], [1, 2, 3, 3, 4]) == (0.5, 10)


def test_agreement_ties_and_missing_offline():
    # MTME stats.Agreement(hs, ms) offline -> (11, 15): system 2 has no human score (6 systems, 15 pairs);
    # systems 0/3 tie in the human score only, 3/4 in the metric only, 4/6 in neither.
    hs = [3.0, 1.0, nan, 3.0, 2.0, 0.5, 2.0]
    ms = [0.3, 0.1, 0.9, 0.2, 0.2, 0.05, 0.25]
    assert me.pairwise_agreement(ms, hs) == (11, 15)
    value, n_pairs = me.pairwise_accuracy(ms, hs)
    assert (value, n_pairs) == (approx(11 / 15), 15)


def test_agreement_ties_count_only_when_both_tie():
    human = [1.0, 1.0, 2.0]
    assert me.pairwise_agreement([5.0, 5.0, 6.0], human) == (3, 3)  # tie-tie agrees
    assert me.pairwise_agreement([5.0, 4.0, 6.0], human) == (2, 3)  # human tie, metric not: disagree
    assert me.pairwise_agreement([5.0, 5.0, 5.0], [1.0, 2.0, 3.0]) == (0, 3)  # constant metric


def test_pairwise_accuracy_of_a_batch_is_the_accuracy_of_each_row():
    """Rows against the same human scores (one per variant, as the job asks): each row's accuracy, as asked
    alone; the NaN human score drops its system from every row; a NaN metric where a human score is is refused."""
    hs = [3.0, 1.0, nan, 3.0, 2.0, 0.5, 2.0]
    rows = [[0.3, 0.1, 0.9, 0.2, 0.2, 0.05, 0.25], [0.1, 0.2, nan, 0.3, 0.4, 0.5, 0.6], [1.0] * 7]
    acc, n_pairs = me.pairwise_accuracy(rows, hs)
    assert acc.shape == (3,) and n_pairs == 15
    assert list(acc) == [me.pairwise_accuracy(r, hs)[0] for r in rows]
    assert list(me.pairwise_accuracy([rows], hs)[0][0]) == list(acc)  # any leading dimensions
    with pytest.raises(ValueError, match="has NaN where the human score is present"):
        me.pairwise_accuracy([rows[0], [nan] * 7], hs)
    with pytest.raises(ValueError, match="must end in the shape of human_sys"):
        me.pairwise_accuracy(rows, hs[:-1])


def _mtme_agreement(gold: list, metric: list) -> tuple[int, int]:
    """MTME ``stats.Agreement`` (68a481a), transcribed: NaN stands for its ``None`` gold score."""
    agree, num_pairs = 0, 0
    for a, b in itertools.combinations(zip(gold, metric), 2):
        if math.isnan(a[0]) or math.isnan(b[0]):
            continue
        with np.errstate(invalid="ignore"):  # inf - inf
            agree += np.sign(a[0] - b[0]) == np.sign(a[1] - b[1])
        num_pairs += 1
    return agree, num_pairs


@pytest.mark.parametrize("compiled", [True, False])
def test_agreement_is_mtme_loop_compiled_or_not(monkeypatch, request, compiled):
    """The agreement counts behind pairwise accuracy (and the draws of its PERM-BOTH test) equal MTME's loop,
    from the compiled kernel and from the numpy path: values rounded to one decimal (ties on both sides), missing
    human scores, a NaN metric (a permuted draw's: disagrees with everything), infinities (inf - inf is NaN in
    MTME's differences: disagrees), -0.0 against 0.0 (a tie), batches with leading dimensions, 0 to 19 systems."""
    from harness import native

    if compiled:
        request.getfixturevalue("native_on")
    else:
        monkeypatch.setenv("HARNESS_NATIVE", "0")
        monkeypatch.delitem(native._loaded, me.KERNELS.name, raising=False)
    rng = np.random.default_rng(11)
    cases = []
    for s in (0, 1, 2, 3, 9, 19):
        human = np.round(rng.normal(size=s), 1)
        metric = np.round(rng.normal(size=(2, 3, s)), 1)
        if s >= 3:
            human[1] = nan
            metric[0, 1, 2], metric[1, 0, 0], metric[1, 2, 1] = nan, nan, nan  # row (1, 2): NaN only where gold is
        if s >= 9:  # each NaN difference below meets a tie on the other side, where a tie would agree
            human[[3, 4]] = math.inf
            metric[0, 2, 4] = metric[0, 2, 3]
            human[6] = human[5]
            metric[0, 0, [5, 6]] = -math.inf
            metric[1, 1, [7, 8]] = (0.0, -0.0)
            human[[7, 8]] = (-0.0, 0.0)
        cases.append((human, metric))
    for human, metric in cases:
        agree, n_pairs, missing = agreement_counts(metric, human, counts=True)
        accuracy, n_pairs_again, missing_again = agreement_counts(metric, human)
        assert (native.kernels(me.KERNELS) is not None) == compiled
        assert agree.shape == accuracy.shape == (2, 3) and agree.dtype == accuracy.dtype == np.float64
        want = [[_mtme_agreement(list(human), list(row)) for row in block] for block in metric]
        assert agree.tolist() == [[a for a, _ in block] for block in want]
        assert n_pairs == n_pairs_again == (want[0][0][1] if human.size else 0)
        with np.errstate(invalid="ignore"):
            assert np.array_equal(accuracy, agree / n_pairs, equal_nan=True)  # the division numpy does
        present = ~np.isnan(human)
        assert missing == missing_again == bool(np.isnan(metric[..., present]).any())
        assert agreement_counts(metric[1, 2], human, counts=True)[0].shape == ()  # one row: a 0-d array
    assert me.pairwise_agreement(cases[-1][1][1, 2], cases[-1][0]) == _mtme_agreement(*[list(x) for x in (
        cases[-1][0], cases[-1][1][1, 2])])


def test_pairwise_accuracy_edges():
    assert me.pairwise_accuracy([1.0, 2.0], [3.0, 4.0]) == (1.0, 1)  # 2 systems
    value, n = me.pairwise_accuracy([1.0, 2.0], [3.0, nan])
    assert math.isnan(value) and n == 0
    with pytest.raises(ValueError):
        me.pairwise_accuracy([1.0, nan], [3.0, 4.0])


def test_global_pairwise_accuracy():
    # data.CompareMetricsWithGlobalAccuracy._Accuracy: sum of agreements / sum of pairs over language pairs
    acc, n = me.global_pairwise_accuracy([[1, 1, 2, 1, 2], [1.0, 2.0]], [[1, 2, 3, 3, 4], [2.0, 1.0]])
    assert (acc, n) == (approx(5 / 11), 11)


def test_pairwise_accuracy_orientation():
    # Lower-is-better scores oriented by the caller (negated): a perfect error metric becomes a perfect metric.
    human = np.array([70.0, 80.0, 75.0, 60.0])
    ter = np.array([0.5, 0.3, 0.4, 0.6])
    assert me.pairwise_accuracy(-ter, human) == (1.0, 6)
    assert me.pairwise_accuracy(ter, human) == (0.0, 6)


# ------------------------------------------------------------------------------------------------------------------
# 2. Permutation p-values and soft pairwise accuracy
# ------------------------------------------------------------------------------------------------------------------


def test_sign_matrix_is_mtme_draw():
    # pce.compute_pairwise_p_values: default_rng(seed).random(float32), rint, *2, -1
    s = me.mtme_sign_matrix(7, 5, seed=4)
    u = np.random.default_rng(4).random(size=(5, 7), dtype=np.float32)
    assert s.dtype == np.float32 and s.shape == (5, 7)
    np.testing.assert_array_equal(s, np.where(np.rint(u) == 1, 1.0, -1.0).astype(np.float32))
    assert not s.flags.writeable


def test_pairwise_p_values_deterministic():
    # MTME pce_test.py PCETest.test_pairwise_p_values_are_deterministic
    scores = np.random.default_rng(0).random((10, 100))
    np.testing.assert_array_equal(me.pairwise_p_values(scores), me.pairwise_p_values(scores))


def test_pairwise_p_values_offline():
    # pce.compute_pairwise_p_values(np.array(M)) and (np.array(H)) offline
    exp_m = [[nan, 0.724, 0.505, 0.369, 0.313], [nan, nan, 0.261, 0.226, 0.177], [nan, nan, nan, 0.385, 0.348],
             [nan, nan, nan, nan, 0.537], [nan] * 5]
    exp_h = [[nan, 0.032, 0.229, 0.083, 0.263], [nan, nan, 0.878, 0.588, 0.884], [nan, nan, nan, 0.17, 0.537],
             [nan, nan, nan, nan, 0.817], [nan] * 5]
    for scores, exp in ((M, exp_m), (H, exp_h)):
        got = me.pairwise_p_values(np.array(scores))
        np.testing.assert_allclose(got, exp, rtol=REL, equal_nan=True)


@pytest.mark.usefixtures("native_on")
@pytest.mark.parametrize("shape", [(37, 6, 300), (240, 6, 800)])  # the second is split between the cores
def test_pair_counts_are_mtme_float32_formula_compiled_or_not(monkeypatch, shape):
    """The pair counts behind every permutation p-value (:func:`pairwise_p_values` and the draws of the soft
    pairwise accuracy test) are MTME's ``sum(partial[:, i] - partial[:, j] >= sys[i] - sys[j])`` in float32, from
    the compiled kernel and from the numpy path: on values rounded to one decimal (ties everywhere), and on a
    difference that float32 rounds onto the test delta (a float64 subtraction would not count it)."""
    from harness import native

    rng = np.random.default_rng(5)
    partial = np.round(rng.normal(size=shape), 1).astype(np.float32)
    sys_scores = np.round(rng.normal(size=shape[:2]), 1).astype(np.float32)
    partial[0, 0, 0], partial[0, 1, 0], sys_scores[0, :2] = 1.0, 2.0**-25, (1.0, 0.0)  # 1 - 2**-25 -> 1.0 >= 1.0
    i, j = np.triu_indices(shape[1], 1)
    want = np.count_nonzero(partial[:, i] - partial[:, j] >= (sys_scores[:, i] - sys_scores[:, j])[:, :, None],
                            axis=2)
    wide = partial[0, :2, 0].astype(np.float64)
    assert wide[0] - wide[1] < 1.0 and partial[0, 0, 0] - partial[0, 1, 0] >= np.float32(1.0)  # the case bites
    compiled = exceed_counts(partial, sys_scores)
    assert native.kernels(me.KERNELS) is not None
    assert compiled.dtype == np.int64 and np.array_equal(compiled, want)
    monkeypatch.setenv("HARNESS_NATIVE", "0")
    monkeypatch.delitem(native._loaded, me.KERNELS.name)
    assert np.array_equal(exceed_counts(partial, sys_scores), want)
    assert native.kernels(me.KERNELS) is None


def test_soft_pairwise_accuracy_mtme_unit():
    # MTME stats_test.py CorrelationTest.testPairwiseConfidenceError: 0.872 (places=3); offline value 0.872
    gold, metric = packed([1, 2, 3, 2, 3, 4], 2), packed([2, 2, 4, 1, 3, 5], 2)
    assert me.soft_pairwise_accuracy(metric, gold) == approx(0.872)


def test_soft_pairwise_accuracy_missing_mtme_unit():
    # MTME stats_test.py AverageCorrelationTest.testPairwiseConfidenceError (missing gold, filter_nones=True);
    # offline value of PairwiseConfidenceError([1, None, 3, 4, None, 6], [2, 1, 8, 3, 5, 6], 2, True): 0.529
    gold, metric = packed([1, None, 3, 4, None, 6], 2), packed([2, 1, 8, 3, 5, 6], 2)
    assert me.soft_pairwise_accuracy(metric, gold) == approx(0.529)


def test_soft_pairwise_accuracy_offline():
    # stats.PairwiseConfidenceError(flat(H), flat(M), 5) -> 0.6326; with segments 3 and 8 missing for every
    # system (filter_nones=True) -> 0.6335999999999999
    assert me.soft_pairwise_accuracy(np.array(M), np.array(H)) == approx(0.6326)
    assert me.soft_pairwise_accuracy(np.array(M), h_colmissing()) == approx(0.6335999999999999)


def test_soft_pairwise_accuracy_sparse_pattern():
    # Missing scores that are not whole segments (MTME cannot reshape those): we keep the complete block.
    h = h_colmissing()
    h[1, 5] = nan  # segment 5 drops out too
    h_all_missing = np.vstack([h, np.full((1, 12), nan)])  # a system without any human score is dropped
    m = np.vstack([np.array(M), np.zeros((1, 12))])
    rows, cols = me.complete_block(h_all_missing)
    assert rows.tolist() == [0, 1, 2, 3, 4] and cols.tolist() == [0, 1, 2, 4, 6, 7, 9, 10, 11]
    # MTME offline: Correlation(5, H[:, cols] packed, M[:, cols] packed).PairwiseConfidenceError()[0]
    assert me.soft_pairwise_accuracy(m, h_all_missing) == approx(0.5952999999999999)
    with pytest.raises(ValueError):
        bad = np.array(M)
        bad[0, 0] = nan
        me.soft_pairwise_accuracy(bad, np.array(H))


def test_p_values_do_not_depend_on_memory_layout():
    """MTME's matrix is C-ordered (reshaped from lists); the float32 BLAS product and numpy's float32 sum round by
    layout, so the harness computes on a C-ordered copy whatever it is given: ``M[:, cols]`` is F-ordered, a
    transpose's transpose and a strided view are neither. On these two-decimal inputs, computing on the F-ordered
    matrix as given moves the value from MTME's 0.5953 to 0.5996 (measured)."""
    cols = [0, 1, 2, 4, 6, 7, 9, 10, 11]
    m, h = np.array(M)[:, cols], np.array(H)[:, cols]
    assert m.flags.f_contiguous and not m.flags.c_contiguous  # the case bites
    c_m, c_h = np.ascontiguousarray(m), np.ascontiguousarray(h)
    wide_m, wide_h = np.repeat(c_m, 2, axis=1)[:, ::2], np.repeat(c_h, 2, axis=1)[:, ::2]  # strided views
    for mm, hh in ((m, h), (c_m, c_h), (np.asfortranarray(c_m).T.T, c_h), (wide_m, wide_h)):
        assert me.soft_pairwise_accuracy(mm, hh) == approx(0.5952999999999999)
        np.testing.assert_array_equal(me.pairwise_p_values(mm), me.pairwise_p_values(c_m))


def test_soft_pairwise_accuracy_edges():
    h = np.array(H)
    assert math.isnan(me.soft_pairwise_accuracy(np.array(M)[:1], h[:1]))  # one system: no pair
    assert math.isnan(me.soft_pairwise_accuracy(np.array(M), np.full_like(h, nan)))
    two = me.soft_pairwise_accuracy(np.array(M)[:2], h[:2])  # two systems: one pair
    assert two == approx(1 - abs(0.032 - 0.724))
    # constant metric: every null delta is 0 >= 0, so every metric p-value is 1
    const = me.soft_pairwise_accuracy(np.ones_like(h), h)
    hp = me.pairwise_p_values(h)[np.triu_indices(5, 1)]
    assert const == approx(1 - np.mean(1 - hp))
    assert me.soft_pairwise_accuracy(h, h) == 1.0


def test_pairwise_p_values_corpus_sum_equals_mtme():
    # With score_fn = sum, the corpus variant is MTME's statistic; on integer scores float32 is exact too.
    q = np.nan_to_num(qn())
    p_corpus = me.pairwise_p_values_corpus(q[:, :, None], lambda s: s[..., 0])
    np.testing.assert_array_equal(p_corpus, me.pairwise_p_values(q))


def _toy_bleu(s: np.ndarray) -> np.ndarray:
    """Corpus-BLEU-like score of summed statistics [hyp_len, ref_len, m1, m2, t1, t2]."""
    s = np.asarray(s, dtype=float)
    prec = np.log(np.maximum(s[..., 2:4], 1e-9) / np.maximum(s[..., 4:6], 1.0)).mean(axis=-1)
    bp = np.minimum(0.0, 1.0 - s[..., 1] / np.maximum(s[..., 0], 1.0))
    return 100.0 * np.exp(prec + bp)


def _toy_stats(seed: int, num_sys: int = 4, n: int = 9) -> np.ndarray:
    rng = np.random.default_rng(seed)
    hyp = rng.integers(5, 20, (num_sys, n))
    ref = hyp + rng.integers(-3, 4, (num_sys, n))
    t1, t2 = hyp, np.maximum(hyp - 1, 0)
    m1 = rng.integers(0, 1 + t1)
    m2 = np.minimum(rng.integers(0, 1 + t2), m1)
    return np.stack([hyp, ref, m1, m2, t1, t2], axis=-1).astype(float)


def test_pairwise_p_values_corpus_brute_force():
    # The documented permutation: same sign matrix; where the sign is -1 the two systems swap segment statistics.
    st = _toy_stats(1)
    p = me.pairwise_p_values_corpus(st, _toy_bleu, n_permutations=50)
    signs = me.mtme_sign_matrix(st.shape[1], 50)
    for i in range(4):
        for j in range(i + 1, 4):
            keep = (signs > 0)[:, :, None]
            a = np.where(keep, st[i], st[j]).sum(axis=1)
            b = np.where(keep, st[j], st[i]).sum(axis=1)
            test = _toy_bleu(st[i].sum(0)) - _toy_bleu(st[j].sum(0))
            assert p[i, j] == approx(np.mean(_toy_bleu(a) - _toy_bleu(b) >= test))
    assert np.isnan(p[np.tril_indices(4)]).all()


def test_soft_pairwise_accuracy_corpus():
    st = _toy_stats(2, 4, 12)
    human = np.array(H)[:4]
    human[:, 2] = nan
    hp = me.pairwise_p_values(np.delete(np.array(H)[:4], 2, axis=1))
    mp = me.pairwise_p_values_corpus(np.delete(st, 2, axis=1), _toy_bleu)
    value = me.soft_pairwise_accuracy_corpus(st, _toy_bleu, human)
    assert value == approx(me.one_minus_pce(hp, mp))
    assert me.soft_pairwise_accuracy_corpus(st, _toy_bleu, human, human_p_values=hp) == value


# ------------------------------------------------------------------------------------------------------------------
# 3. Kendall variants, tau optimization, acc_eq
# ------------------------------------------------------------------------------------------------------------------


def test_kendall_variants_mtme_unit():
    # MTME stats_test.py CorrelationTest.testKendallVariants
    gold, metric = [1, 2, 2, 3, 4], [2, 1, 1.5, 5, 3]
    assert me.kendall_variants(gold, metric, "b") == pytest.approx(0.316227766, abs=5e-8)
    assert me.kendall_variants(gold, metric, "c") == approx(0.32)
    assert me.kendall_variants(gold, metric, "23") == approx(0.2)
    assert me.kendall_variants(gold, metric, "acc23") == approx(0.6)
    assert me.kendall_variants(gold, metric, "acc23", epsilon=2) == approx(0.4)
    # same through the grouped form (num_sys=1, average_by='none')
    assert me.kendall_variants_grouped([metric], [gold], "acc23", 2, average_by="none") == approx(0.4)


def test_kendall_variants_b_c_match_scipy():
    # MTME stats_test.py CorrelationFunctionsTest.testKendallVariants_b_and_c
    gold, metric = [7, 1, 2, 7, 4, 3, 2], [4, 1, 3, 6, 1, 5, 6]
    for variant in ("b", "c"):
        ref = scipy.stats.kendalltau(gold, metric, variant=variant)[0]
        assert me.kendall_variants(gold, metric, variant) == approx(ref)


def test_kendall_variants_23():
    # MTME stats_test.py CorrelationFunctionsTest.testKendallVariants_23 (x gold, y metric)
    x, y = [1, 1, 1, 2, 2, 3, 4], [1, 1, 2, 2, 4, 3, 3]
    num_pairs, t_both, t_x_only, t_y_only, dis = 21, 1, 3, 2, 2
    con = num_pairs - dis - t_x_only - t_y_only - t_both
    assert me.kendall_variants(x, y, "23") == approx((con + t_both - dis - t_x_only - t_y_only) / num_pairs)
    assert me.kendall_variants(x, y, "acc23") == approx((con + t_both) / num_pairs)


def test_kendall_variants_positive_epsilon():
    # MTME stats_test.py CorrelationFunctionsTest.testKendallVariantsWithPositiveEpsilon
    x, y = [1, 1, 1, 2, 2, 3, 4], [1, 1, 2, 2, 4, 3, 3]
    assert me.kendall_variants(x, y, "23", 0.0) == approx((14 - 7) / 21)
    assert me.kendall_variants(x, y, "23", 0.1) == approx((14 - 7) / 21)
    num_pairs, ties_x, ties_y, ties_both, dis = 21, 13, 3, 3, 1
    # (the MTME test names x/y the other way round: epsilon ties the metric, here y)
    con = num_pairs - dis - (ties_x - ties_both) - (ties_y - ties_both) - ties_both
    expected = (con + ties_both - dis - (ties_x - ties_both) - (ties_y - ties_both)) / num_pairs
    assert me.kendall_variants(x, y, "23", 1.0) == approx(expected)
    with pytest.raises(ValueError):
        me.kendall_variants(x, y, "c", 1.0)
    with pytest.raises(ValueError):
        me.kendall_variants(x, y, "23", -1.0)


def test_kendall_variants_grouped_offline():
    # Correlation(6, flat(QN), flat(QM)).KendallVariants(average_by, variant, epsilon)[0] offline
    expected = {
        ("item", "b", 0.0): -0.11228645187374267, ("item", "c", 0.0): -0.10263888888888889,
        ("item", "23", 0.0): -0.45185185185185184, ("item", "acc23", 0.0): 0.27407407407407414,
        ("item", "acc23", 0.5): 0.3370370370370371, ("item", "b", 0.5): -0.13791445015615963,
        ("sys", "b", 0.0): -0.13694106557592528, ("sys", "c", 0.0): -0.13580246913580246,
        ("sys", "23", 0.0): -0.46031746031746024, ("sys", "acc23", 0.0): 0.2698412698412699,
        ("sys", "acc23", 0.5): 0.2943121693121693, ("sys", "b", 0.5): -0.15819495622098648,
        ("none", "b", 0.0): -0.0725564755618962, ("none", "c", 0.0): -0.07484300909906447,
        ("none", "23", 0.0): -0.4164705882352941, ("none", "acc23", 0.0): 0.2917647058823529,
        ("none", "acc23", 0.5): 0.2847058823529412, ("none", "b", 0.5): -0.08127816355188593,
    }
    for (avg, variant, eps), value in expected.items():
        got = me.kendall_variants_grouped(np.array(QM), qn(), variant, eps, average_by=avg)
        assert got == approx(value), (avg, variant, eps)


def test_kendall_variants_constant():
    assert math.isnan(me.kendall_variants([1, 2, 3], [5, 5, 5], "b"))
    assert math.isnan(me.kendall_variants([1, 1, 1], [1, 2, 3], "c"))
    assert me.kendall_variants([1, 2, 3], [5, 5, 5], "acc23") == 0.0
    assert me.kendall_variants([1, 1, 1], [5, 5, 5], "acc23") == 1.0
    # AverageCorrelation: NaN groups dropped; all NaN -> 0 (MTME returns 0, not NaN); or counted as 0
    assert me.kendall_variants_grouped([[5, 5], [5, 5]], [[1, 2], [3, 4]], "b", average_by="sys") == 0.0
    assert me.kendall_variants_grouped([[5, 6], [5, 5]], [[1, 2], [3, 4]], "b", average_by="sys") == 1.0
    assert me.kendall_variants_grouped([[5, 6], [5, 5]], [[1, 2], [3, 4]], "b", average_by="sys",
                                       replace_nans_with_zeros=True) == 0.5


def test_tau_optimization_zero_threshold_is_best():
    # MTME tau_optimization_test.py TauOptimizationTest.test_zero_threshold_is_best
    res = me.tau_optimization([0, 2, 6, 8], [1, 2, 3, 4])
    assert res.thresholds.tolist() == [0, 2, 4, 6, 8]
    assert res.taus.tolist() == pytest.approx([6 / 6, 4 / 6, 3 / 6, 1 / 6, 0 / 6], rel=REL)
    assert (res.best_threshold, res.best_tau) == (0, 1.0)


def test_tau_optimization_nonzero_threshold_is_best():
    # MTME tau_optimization_test.py TauOptimizationTest.test_nonzero_threshold_is_best
    res = me.tau_optimization([0, 2, 6, 8], [1, 1, 1, 4])
    assert res.thresholds.tolist() == [0, 2, 4, 6, 8]
    assert res.taus.tolist() == pytest.approx([3 / 6, 3 / 6, 4 / 6, 4 / 6, 3 / 6], rel=REL)
    # 4/6 is reached at 4 and 6: the first (smallest) threshold wins, as np.nanargmax
    assert res.best_threshold == 4
    assert res.best_tau == approx(4 / 6)


def test_tau_optimization_regression_example():
    # MTME tau_optimization_test.py TauOptimizationTest.test_regression_example (None -> NaN; rows are groups)
    metric = [[0, 5, 2, 3, 2], [None, 2, 1, 5, 3], [9, 1, 5, 3, 8], [9, 3, 4, 4, 1], [None] * 5]
    human = [[1, 5, 2, 1, 1], [4, 2, 2, 1, 4], [5, 9, 2, 8, 7], [7, 6, None, 3, 2], [None] * 5]
    res = me.tau_optimization(metric, human)
    assert res.thresholds.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8]
    expected = [0.4666666666666667, 0.4916666666666668, 0.38333333333333347, 0.29166666666666674,
                0.2666666666666667, 0.2, 0.15833333333333335, 0.15833333333333335, 0.1166666666666667]
    assert res.taus.tolist() == pytest.approx(expected, rel=REL)
    assert res.best_threshold == 1
    assert res.best_tau == approx(0.4916666666666668)


def test_tau_optimization_no_pairs():
    res = me.tau_optimization([[1.0, nan]], [[1.0, 2.0]])  # MTME: ZeroDivisionError
    assert res.thresholds.tolist() == [0.0] and math.isnan(res.best_tau)
    with pytest.raises(ValueError):
        me.tau_optimization([1, 2], [1, 2], variant="b")


def test_kendall_with_ties_opt_mtme_unit():
    # MTME stats_test.py CorrelationTest.testKendallWithTiesOpt: 0.7
    res = me.acc_eq([[2, 1, 1.5, 5, 3]], [[1, 2, 2, 3, 4]], average_by="none")
    assert res.value == approx(0.7)


def test_kendall_with_ties_opt_consistency_mtme_unit():
    # MTME stats_test.py CorrelationFunctionsTest.testKendallWithTiesOpt (value == KendallVariants at epsilon);
    # offline (value, epsilon): none (0.5333333333333333, 0.0), sys (0.3333333333333333, 2.0), item (1.0, 0.0)
    gold, metric = [1, 2, 2, 3, 3, 4], [2, 1, 1.5, 5, 3, 2]
    expected = {"none": (1, 0.5333333333333333, 0.0), "sys": (2, 0.3333333333333333, 2.0), "item": (2, 1.0, 0.0)}
    for avg, (num_sys, value, eps) in expected.items():
        g, m = packed(gold, num_sys), packed(metric, num_sys)
        res = me.acc_eq(m, g, average_by=avg)
        assert res.value == approx(value) and res.epsilon == eps
        assert me.kendall_variants_grouped(m, g, "acc23", res.epsilon, average_by=avg) == approx(res.value)


def test_kendall_with_ties_opt_average_mtme_unit():
    # MTME stats_test.py AverageCorrelationTest.testKendallWithTiesOpt; offline value (0.8333333333333333, 0.0)
    res = me.acc_eq(packed([2, 1, 8, 3, 5, 6], 2), packed([1, 2, 3, 4, None, 6], 2), average_by="sys")
    assert res.value == approx(0.8333333333333333) and res.epsilon == 0.0


def test_acc_eq_offline():
    # stats.KendallWithTiesOpt(flat(QN), flat(QM), variant, 6, average_by, 1.0)[:2] offline
    expected = {
        ("item", "acc23"): (0.4370370370370369, 2.3), ("item", "23"): (-0.1259259259259259, 2.3),
        ("sys", "acc23"): (0.3617724867724865, 3.3), ("sys", "23"): (-0.2764550264550269, 3.3),
        ("none", "acc23"): (0.3592156862745098, 3.3), ("none", "23"): (-0.2815686274509804, 3.3),
    }
    for (avg, variant), (value, eps) in expected.items():
        res = me.acc_eq(np.array(QM), qn(), average_by=avg, variant=variant)
        assert res.value == approx(value) and res.epsilon == eps, (avg, variant)


def test_acc_eq_edges():
    human = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 3.0]])
    # constant metric: every pair is a tie at epsilon 0, so acc_eq = share of human ties over items (columns)
    res = me.acc_eq(np.full((2, 3), 7.0), human)
    assert res == (approx(2 / 3), 0.0)
    # 2 systems, orientation: a translated metric has the same pairs, a negated one (wrong orientation) differs
    human = np.array([[1.0, 2.0, 3.0], [2.0, 1.0, 4.0]])  # no human ties
    m = np.array([[0.25, 0.5, 1.0], [0.125, 0.25, 0.375]])  # dyadic: the shift keeps every difference exact
    # items (columns): the metric orders only item 1 like the human; ties (epsilon > 0) cannot help
    assert me.acc_eq(m + 8, human) == me.acc_eq(m, human) == (approx(1 / 3), 0.0)
    assert me.acc_eq(-m, human) == (approx(2 / 3), 0.0)  # the orientation is the caller's job


# ------------------------------------------------------------------------------------------------------------------
# 4. Significance tests
# ------------------------------------------------------------------------------------------------------------------

GOLD8 = [1, 2, 3, 4, 5, 5, 7, 8]
MET1 = [1, 2, 3, 3, 7, 3, 5, 5]
MET2 = [2, 1, 2, 6, 8, 8, 7, 6]


def _pearson(m: np.ndarray, h: np.ndarray) -> float:
    ok = ~np.isnan(h)
    return scipy.stats.pearsonr(h[ok], m[ok])[0]


@pytest.mark.slow
def test_perm_both_pearson_no_avg_mtme_unit():
    # MTME stats_test.py PermutationSigDiffTest.testPearsonNoAvgNoEarlyStop
    g, m1, m2 = packed(GOLD8, 4), packed(MET1, 4), packed(MET2, 4)
    delta = scipy.stats.pearsonr(MET2, GOLD8)[0] - scipy.stats.pearsonr(MET1, GOLD8)[0]
    res = me.perm_both_test(m1, m2, g, _pearson)
    assert res.delta == pytest.approx(delta, abs=1e-7)
    assert res.delta == approx(-0.0024838486599123577)  # MTME PermutationSigDiff delta offline
    assert res.p_value > 0 and res.n_draws == 1000


def test_perm_both_early_stop_mtme_unit():
    # MTME stats_test.py PermutationSigDiffTest.testPearsonNoAvgWithEarlyStop
    g, m1, m2 = packed(GOLD8, 4), packed(MET1, 4), packed(MET2, 4)
    res = me.perm_both_test(m1, m2, g, _pearson, block_size=50, early_max=0.2)
    assert res.p_value > 0 and res.n_draws < 1000 and res.n_draws % 50 == 0


def test_perm_both_grouped_deltas_mtme_unit():
    # MTME stats_test.py PermutationSigDiffTest.testPearsonItemNoEarlyStop / testKendallVariants23 /
    # testKendallVariantsAcc23 (delta == difference of the two averaged correlations)
    g, m1, m2 = packed(GOLD8, 4), packed(MET1, 4), packed(MET2, 4)
    for variant in ("23", "acc23"):
        def stat(m: np.ndarray, h: np.ndarray, variant: str = variant) -> float:
            return me.kendall_variants_grouped(m, h, variant, average_by="item")

        tau1 = me.kendall_variants_grouped(m1, g, variant, average_by="item")
        tau2 = me.kendall_variants_grouped(m2, g, variant, average_by="item")
        res = me.perm_both_test(m1, m2, g, stat, n_draws=10, block_size=10)
        assert res.delta == pytest.approx(tau2 - tau1, abs=1e-7) and res.n_draws == 10 and res.p_value > 0


def test_perm_both_tau_optimization_mtme_unit():
    # MTME stats_test.py PermutationSigDiffTest.testTauOptimization (epsilon re-optimised on every draw);
    # offline PermutationSigDiff(..., KendallWithTiesOpt, 'item', variant='acc23', sample_rate=1.0) delta:
    # -0.16666666666666674
    g, m1, m2 = packed(GOLD8, 4), packed(MET1, 4), packed(MET2, 4)
    res = me.perm_both_test(m1, m2, g, lambda m, h: me.acc_eq(m, h).value, n_draws=10, block_size=10)
    tau1, tau2 = me.acc_eq(m1, g).value, me.acc_eq(m2, g).value
    assert res.delta == pytest.approx(tau2 - tau1, abs=1e-7)
    assert res.delta == approx(-0.16666666666666674)
    assert res.n_draws == 10 and res.p_value > 0


def test_pairs_test_mtme_unit():
    # MTME stats_test.py PairwisePermutationSigDiffTest.testKendallVariantsAcc23 and testKendallVariantsB;
    # offline deltas: acc23 -0.08333333333333337 (epsilons 2 and 1), b with epsilon 1: 0.4523502691896257
    g = packed([1, 3, 3, 3, 1, 2, 1, 2], 4)
    m1, m2 = packed([2, 4, 6, 6, 2, 6, 3, 7], 4), packed([1, 5, 4, 4, 4, 3, 2, 1], 4)
    assert me.acc_eq(m1, g) == (approx(0.6666666666666666), 2.0)
    assert me.acc_eq(m2, g) == (approx(0.5833333333333334), 1.0)
    res = me.acc_eq_pairs_test(m1, m2, g, n_draws=10)
    assert res.delta == pytest.approx(me.acc_eq(m2, g).value - me.acc_eq(m1, g).value, abs=1e-7)
    assert res.delta == approx(-0.08333333333333337)
    assert res.n_draws == 10 and res.p_value > 0
    res_b = me.acc_eq_pairs_test(m1, m2, g, variant="b", epsilon_a=1, epsilon_b=1, n_draws=10)
    tau1 = me.kendall_variants_grouped(m1, g, "b", 1, average_by="item")
    tau2 = me.kendall_variants_grouped(m2, g, "b", 1, average_by="item")
    assert res_b.delta == pytest.approx(tau2 - tau1, abs=1e-7)
    assert res_b.delta == approx(0.4523502691896257)
    with pytest.raises(ValueError):
        me.acc_eq_pairs_test(m1, m2, g, variant="c", epsilon_a=0, epsilon_b=0)
    with pytest.raises(ValueError):
        me.acc_eq_pairs_test(m1, m2, g, variant="b")  # needs explicit epsilons


def test_pairs_test_sparse_offline():
    # stats.PairwisePermutationSigDiff(Correlation(6, QN, QM), Correlation(6, QN, QM2), 'acc23', 'item',
    # sample_rate=1.0) delta offline: -0.02962962962962956 (item 9 has no human score at all)
    res = me.acc_eq_pairs_test(np.array(QM), np.array(QM2), qn(), n_draws=200)
    assert res.delta == approx(-0.02962962962962956)
    assert 0.0 <= res.p_value <= 1.0 and res.n_draws == 200


def test_pairs_test_against_mtme_distribution():
    # Offline: MTME PairwisePermutationSigDiff(Correlation(6, gold, m1), Correlation(6, gold, m2), 'acc23', 'item',
    # k=4000, PermutationSigDiffParams(block_size=4000)) on this data, np.random.seed(s) for s = 0..8: delta
    # 0.015000000000000124 every time, p = 0.2615, 0.24475, 0.25825, 0.25275, 0.25, 0.26625, 0.24625, 0.24725,
    # 0.245 (mean 0.252444, 36,000 draws). The pair-swap distribution is the same here (binomial swap counts), so
    # our p-value of 4,000 draws lies within Monte Carlo error of MTME's: its standard error is 0.0069, that of
    # MTME's mean 0.0023, and 4 standard errors of their difference are 0.029.
    rng = np.random.default_rng(11)
    gold = rng.integers(0, 5, (6, 40)).astype(float)
    m1 = np.round(gold + rng.standard_normal(gold.shape) * 2, 2)
    m2 = np.round(gold + rng.standard_normal(gold.shape) * 2.05, 2)
    res = me.acc_eq_pairs_test(m1, m2, gold, n_draws=4000, block_size=4000)
    assert res.delta == approx(0.015000000000000124) and res.n_draws == 4000
    assert abs(res.p_value - 0.252444) <= 0.029
    # self-consistency of the null: swapping the roles of A and B mirrors the one-sided p-value
    rev = me.acc_eq_pairs_test(m2, m1, gold, n_draws=4000, block_size=4000, seed=7)
    assert rev.delta == -res.delta
    assert res.p_value + rev.p_value == pytest.approx(1.0, abs=0.05)


def test_pairs_test_identical_metrics():
    g = qn()
    res = me.acc_eq_pairs_test(np.array(QM), np.array(QM), g, n_draws=50)
    assert res == (0.0, 1.0, 50)  # every draw equals delta = 0


def test_pairs_test_early_stop_quirk():
    # MTME PairwisePermutationSigDiff checks the block boundary only inside ``if c2 - c1 >= delta``.
    large = np.array([True, False, True, True])
    # PermutationSigDiff: at draw 2 the running p = 1/2 > early_max = 0.4 -> stop after 2 draws
    assert early_stop_scan(large, 0, 0, 2, 0.02, 0.4, pairs_quirk=False) == (1, 2, True)
    # pairs test: draw 2 did not count, so no check; draw 4 counted, p = 3/4 > 0.4 -> stop after 4 draws
    assert early_stop_scan(large, 0, 0, 2, 0.02, 0.4, pairs_quirk=True) == (3, 4, True)
    # a low p-value can therefore never stop the pairs test early (its boundary draws count)
    assert early_stop_scan(np.array([False, False]), 0, 0, 2, 0.02, 0.5, pairs_quirk=True) == (0, 2, False)
    assert early_stop_scan(np.array([False, False]), 0, 0, 2, 0.02, 0.5, pairs_quirk=False) == (0, 2, True)
    # chunks continue the running count and draw index
    assert early_stop_scan(np.array([True, True]), 2, 1, 2, 0.02, 0.9, pairs_quirk=False) == (3, 4, False)


def test_soft_pairwise_accuracy_test_delta_offline():
    # MTME PermutationSigDiff(Correlation(5, H with segments 3/8 missing, M), ... M2, PairwiseConfidenceError,
    # 'none') delta offline: -0.14559999999999995 (both metrics z-scored over the human-scored entries)
    res = me.soft_pairwise_accuracy_test(np.array(M), np.array(M2), h_colmissing(), n_draws=100)
    assert res.delta == approx(-0.14559999999999995)
    assert 0.0 <= res.p_value <= 1.0 and res.n_draws == 100


def test_soft_pairwise_accuracy_test_draws_are_mtme_statistics():
    # Each draw's statistic is soft_pairwise_accuracy (MTME's PairwiseConfidenceError) of the z-scored hybrids.
    h, a, b = np.array(H)[:4, :8], np.array(M)[:4, :8], np.array(M2)[:4, :8]
    res = me.soft_pairwise_accuracy_test(a, b, h, n_draws=30, seed=3, block_size=30)
    za = scipy.stats.zscore(a.ravel()).reshape(a.shape)
    zb = scipy.stats.zscore(b.ravel()).reshape(b.shape)
    swap = draw_bits(np.random.default_rng(3), 30, (4, 8))  # the test's swap decisions
    delta = me.soft_pairwise_accuracy(zb, h) - me.soft_pairwise_accuracy(za, h)
    large = [me.soft_pairwise_accuracy(np.where(s, za, zb), h) - me.soft_pairwise_accuracy(np.where(s, zb, za), h)
             >= delta for s in swap]
    assert res.delta == delta
    assert res.p_value == approx(np.mean(large))


def test_pairwise_accuracy_test():
    # PERM-BOTH with Agreement as in CompareMetricsWithGlobalAccuracy; offline MTME delta on z-scored
    # vectors: -0.33333333333333326
    hs = [3.0, 1.0, nan, 3.0, 2.0, 0.5, 2.0]
    ma = [0.3, 0.1, 0.9, 0.2, 0.2, 0.05, 0.25]
    mb = [0.1, 0.3, 0.9, 0.25, 0.2, 0.05, 0.25]
    res = me.pairwise_accuracy_test(ma, mb, hs)
    assert res.delta == approx(-0.33333333333333326)
    assert res.n_draws == 1000 and res.p_value > 0.5
    # the vectorised statistic equals the generic one
    generic = me.perm_both_test(ma, mb, hs, lambda m, h: me.pairwise_accuracy(m, h)[0], n_draws=200, seed=5)
    assert me.pairwise_accuracy_test(ma, mb, hs, n_draws=200, seed=5) == generic
    # two language pairs pooled
    pooled = me.pairwise_accuracy_test(ma + [1.0, 2.0], mb + [2.0, 1.0], hs + [1.0, 2.0], lp_sizes=[7, 2])
    assert pooled.n_draws == 1000


def test_pairwise_accuracy_test_constant_metric():
    # scipy's zscore of a constant metric is all NaN (MTME), so its resampled accuracies are 0
    hs = [1.0, 2.0, 3.0, 4.0]
    res = me.pairwise_accuracy_test([1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0], hs, n_draws=100)
    assert res.delta == 1.0 and res.p_value > 0


def test_perm_both_statistics_shape_and_checks():
    # trailing dimensions (sufficient statistics) are swapped per (system, segment), without z-scoring
    st_a, st_b = _toy_stats(3, 3, 6), _toy_stats(4, 3, 6)
    human = np.array(H)[:3, :6]

    def stat(st: np.ndarray, h: np.ndarray) -> float:
        return me.pairwise_accuracy(_toy_bleu(st.sum(axis=1)), np.nanmean(h, axis=1))[0]

    res = me.perm_both_test(st_a, st_b, human, stat, zscore=False, n_draws=50)
    assert res.n_draws == 50 and 0 <= res.p_value <= 1
    with pytest.raises(ValueError):
        me.perm_both_test(st_a, st_b, human, stat, zscore=True)
    with pytest.raises(ValueError):
        me.perm_both_test(np.array(M), np.array(M2)[:, :5], np.array(H), _pearson)
    with pytest.raises(ValueError):
        me.perm_both_test(np.array(M), np.array(M2), np.array(H), _pearson, n_draws=0)
    nan_delta = me.perm_both_test(np.array(M), np.array(M2), np.array(H), lambda m, h: nan)
    assert math.isnan(nan_delta.p_value) and nan_delta.n_draws == 0


def test_significance_is_seeded():
    g = qn()
    a = me.acc_eq_pairs_test(np.array(QM), np.array(QM2), g, n_draws=100, seed=1)
    assert a == me.acc_eq_pairs_test(np.array(QM), np.array(QM2), g, n_draws=100, seed=1)
    h = h_colmissing()
    s1 = me.soft_pairwise_accuracy_test(np.array(M), np.array(M2), h, n_draws=20, seed=9)
    assert s1 == me.soft_pairwise_accuracy_test(np.array(M), np.array(M2), h, n_draws=20, seed=9)


def _corrcoef_pearson(m, h):
    ok = np.isfinite(m) & np.isfinite(h)
    if ok.sum() < 3 or np.ptp(m[ok]) == 0 or np.ptp(h[ok]) == 0:
        return float("nan")
    return float(np.corrcoef(m[ok], h[ok])[0, 1])


@pytest.mark.parametrize("shape,zscore,block", [((9,), True, 1000), ((4,), True, 100), ((19, 200), True, 100),
                                                 ((7, 50), False, 1000)])
@pytest.mark.slow
def test_pearson_test_equals_perm_both_with_pearson_rows(shape, zscore, block):
    """The linear-sums Pearson test draws what perm_both_test draws and gives its p-values and draw counts exactly
    (early stopping included), its delta to rel 1e-12: on systems, on pooled segments with missing human scores,
    and on raw scores far from 0 (no z-scoring: the variances must not be lost in large sums)."""
    rng = np.random.default_rng(11)
    h = rng.normal(size=shape)
    a, b = h + rng.normal(size=shape), 0.7 * h + rng.normal(size=shape)
    if not zscore:
        a, b = 1e4 + a, 1e4 + b
    if len(shape) == 2:
        h[rng.random(shape) < 0.15] = np.nan
        a[np.isnan(h) & (rng.random(shape) < 0.5)] = np.nan  # a metric may be missing where no human score is
    for seed in range(4):
        kw = {"n_draws": 1000, "seed": seed, "zscore": zscore, "block_size": block}
        want = me.perm_both_test(a, b, h, me.pearson_rows, batched=True, **kw)
        got = me.pearson_test(a, b, h, **kw)
        assert (got.p_value, got.n_draws) == (want.p_value, want.n_draws)
        assert got.delta == pytest.approx(want.delta, rel=1e-12)
        assert me.pearson_test(b, a, h, **kw).delta == pytest.approx(-want.delta, rel=1e-12)


def test_pearson_test_of_identical_and_constant_metrics():
    """Identical metrics: delta 0 and every draw ties it (p = 1). A constant metric has no r: NaN, no draws."""
    rng = np.random.default_rng(3)
    h, a = rng.normal(size=(6, 30)), rng.normal(size=(6, 30))
    same = me.pearson_test(a, a.copy(), h, n_draws=200)
    assert (same.delta, same.p_value, same.n_draws) == (0.0, 1.0, 200)
    for zscore in (True, False):
        flat = me.pearson_test(np.full((6, 30), 2.5), a, h, n_draws=200, zscore=zscore)
        assert math.isnan(flat.delta) and math.isnan(flat.p_value) and flat.n_draws == 0
    assert math.isnan(me.pearson_test(a, a, np.full((6, 30), 1.0), n_draws=10).p_value)  # constant human


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(9,), (5,), (19, 200)])
def test_pearson_rows_is_pearson_per_row_and_gives_the_same_p_values(shape):
    """The batched Pearson of PERM-BOTH equals np.corrcoef row by row (rel 1e-12), NaN where r is undefined, and
    the test gives the same p-values as with the one-at-a-time statistic: a draw that leaves every entry in place
    (2 in 1000 with 9 systems) must reproduce delta exactly, so a row's value may not depend on its batch."""
    rng = np.random.default_rng(7)
    h = rng.normal(size=shape)
    a, b = h + rng.normal(size=shape), 0.6 * h + rng.normal(size=shape)
    if len(shape) == 2:
        h[rng.random(shape) < 0.1] = np.nan
        a, b = np.where(np.isnan(h), np.nan, a), np.where(np.isnan(h), np.nan, b)
    rows = me.pearson_rows(np.stack([a, b, np.full(shape, 3.0)]), h)
    assert rows[:2] == pytest.approx([_corrcoef_pearson(a, h), _corrcoef_pearson(b, h)], rel=1e-12)
    assert np.isnan(rows[2])  # a constant metric
    assert np.isnan(me.pearson_rows(a[None], np.full(shape, 1.0))).all()
    for seed in range(3):
        one = me.perm_both_test(a, b, h, _corrcoef_pearson, n_draws=1000, seed=seed)
        batched = me.perm_both_test(a, b, h, me.pearson_rows, batched=True, n_draws=1000, seed=seed)
        assert batched.p_value == one.p_value and batched.delta == pytest.approx(one.delta, rel=1e-12)
