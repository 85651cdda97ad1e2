"""MTME's tests between metrics for many pairs at once (harness.core.mtme.sig_matrix) against the same tests built
the plain way: every swapped metric materialised and its statistic computed by the one-metric functions, on the
very draws the matrix uses (harness.core.mtme.draws). A pair's result must not depend on the pairs run with it."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
import scipy.stats

from harness.core import mtme
from harness.core.mtme.draws import draw_bits, early_stop_scan
from harness.core.mtme.sig_matrix import zscore, zscore_valid
from harness.core.mtme.tau_optimization import _categories
from harness.job.meta_evaluation import assign_ranks


def _metrics(rng: np.random.Generator, h: np.ndarray, v: int, noise: float = 1.0) -> np.ndarray:
    return np.stack([h * (0.3 + 0.2 * k) + rng.normal(size=h.shape) * noise for k in range(v)])


def _pairs(v: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(v) for j in range(i + 1, v)]


def _zscore_cases() -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    return [rng.normal(size=9), rng.normal(size=3000) * 40 + 25, np.array([1.0, 2.0]), np.array([3.0]),
            np.array([5.0, 5.0, 5.0]), np.array([1.0, 1.0 + 2e-16, 1.0]), 1e8 + rng.normal(size=20) * 1e-6,
            1e8 + rng.normal(size=20) * 1e-9, np.array([0.0, 0.0, 1e-310]), rng.integers(0, 3, 50).astype(float),
            np.array([-1e300, 1e300, 0.0])]


@pytest.mark.parametrize("a", _zscore_cases())
def test_zscore_as_scipy(a):
    """MTME z-scores each metric with scipy.stats.zscore; ours computes it without importing scipy.stats: the same
    numbers (relative 1e-12) and the same NaN (a constant vector, one below the mean's rounding)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = scipy.stats.zscore(a)
    got = zscore(a)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert got[ok] == pytest.approx(want[ok], rel=1e-12, abs=0)


@pytest.mark.parametrize("shape,block", [((12,), 100), ((8, 60), 100), ((8, 60), 1000)])
def test_pearson_pairs_equal_perm_both_of_each_pair(shape, block):
    rng = np.random.default_rng(5)
    h = rng.normal(size=shape)
    if len(shape) == 2:
        h[rng.random(shape) < 0.2] = np.nan
    m = np.where(np.isnan(h), np.nan, _metrics(rng, np.nan_to_num(h), 4))
    got = mtme.pearson_pairs(m, h, _pairs(4), n_draws=1000, seed=3, block_size=block)
    for (i, j), g in zip(_pairs(4), got):
        want = mtme.perm_both_test(m[j], m[i], h, mtme.pearson_rows, batched=True, n_draws=1000, seed=3,
                                   block_size=block)
        assert (g.p_value, g.n_draws) == (want.p_value, want.n_draws)
        assert g.delta == pytest.approx(want.delta, rel=1e-12)


def test_pairwise_accuracy_pairs_equal_perm_both_of_each_pair():
    rng = np.random.default_rng(7)
    h = rng.normal(size=9)
    h[4] = np.nan
    m = _metrics(rng, np.nan_to_num(h), 4, noise=0.8)

    def stat(x: np.ndarray, hh: np.ndarray) -> float:
        return mtme.pairwise_accuracy(x, hh)[0]

    got = mtme.pairwise_accuracy_pairs(m, h, _pairs(4), n_draws=400, seed=11, block_size=100)
    for (i, j), g in zip(_pairs(4), got):
        want = mtme.perm_both_test(m[j], m[i], h, stat, n_draws=400, seed=11, block_size=100)
        assert g == want


def test_soft_pairwise_accuracy_pairs_draw_mtme_statistics():
    """Each draw's statistic is MTME's soft pairwise accuracy of the swapped z-scored metrics, computed here by
    materialising them; the matrix computes their permuted sums from one product per metric, so a permutation
    count may differ where a float32 sum ties its test delta: the p-values agree to a draw or two, the deltas
    exactly."""
    rng = np.random.default_rng(2)
    h = rng.normal(size=(6, 40))
    h[:, 5] = np.nan  # a segment outside the complete block
    m = np.where(np.isnan(h), np.nan, _metrics(rng, np.nan_to_num(h), 4, noise=1.5))
    n = 200
    got = mtme.soft_pairwise_accuracy_pairs(m, h, _pairs(4), n_draws=n, seed=4, block_size=n)
    keep = ~np.isnan(h).any(axis=0)
    hb, mb = h[:, keep], m[:, :, keep]
    z = zscore_valid(mb, np.ones(hb.shape, dtype=bool))
    hp = mtme.pairwise_p_values(hb)
    swaps = draw_bits(np.random.default_rng(4), n, hb.shape)
    for (i, j), g in zip(_pairs(4), got):
        spa = [mtme.soft_pairwise_accuracy(x, hb, human_p_values=hp) for x in (z[i], z[j])]
        assert g.delta == spa[0] - spa[1]
        diffs = np.array([mtme.soft_pairwise_accuracy(np.where(s, z[j], z[i]), hb, human_p_values=hp)
                          - mtme.soft_pairwise_accuracy(np.where(s, z[i], z[j]), hb, human_p_values=hp)
                          for s in swaps])
        assert g.n_draws == n and abs(g.p_value - np.mean(diffs >= g.delta)) <= 2 / n


def _acc23_reference(m: np.ndarray, h: np.ndarray, eps: list[float], i: int, j: int, n: int, seed: int,
                     block: int) -> mtme.SigDiff:
    """MTME's PairwisePermutationSigDiff written out: per item, each pair's outcome under each metric; a draw swaps
    the outcomes of the pairs its coins pick (the matrix's coins); acc23 per item averaged."""
    hg = h.T
    keep = (~np.isnan(hg)).sum(axis=1) >= 2
    hg = hg[keep]
    s_sys = hg.shape[1]
    a, b = np.triu_indices(s_sys, 1)
    pv = ~np.isnan(hg[:, a]) & ~np.isnan(hg[:, b])
    correct = [np.isin(_categories(m[v].T[keep], hg, eps[v], a, b), (0, 4)) & pv for v in (i, j)]
    tot = pv.sum(axis=1)

    def mean_acc(c: np.ndarray) -> float:
        return float(np.average(c.sum(axis=1) / tot))

    delta = mean_acc(correct[0]) - mean_acc(correct[1])
    coins = draw_bits(np.random.default_rng(seed), n, (hg.shape[0], a.size)) & pv
    large = np.array([mean_acc(np.where(c, correct[1], correct[0])) - mean_acc(np.where(c, correct[0], correct[1]))
                      >= delta for c in coins])
    count, done, _ = early_stop_scan(large, 0, 0, block, 0.02, 0.5, pairs_quirk=True)
    return mtme.SigDiff(delta, count / done, done)


def test_acc_eq_pairs_equal_the_written_out_pair_swap_test():
    rng = np.random.default_rng(9)
    h = np.round(rng.normal(size=(6, 30)), 1)
    h[rng.random(h.shape) < 0.15] = np.nan
    m = np.round(_metrics(rng, np.nan_to_num(h), 4, noise=1.2), 1)
    eps = [mtme.acc_eq(x, h).epsilon for x in m]
    for block in (100, 1000):
        got = mtme.acc_eq_pairs(m, h, _pairs(4), n_draws=1000, seed=6, block_size=block)
        for (i, j), g in zip(_pairs(4), got):
            want = _acc23_reference(m, h, eps, i, j, 1000, 6, block)
            assert (g.p_value, g.n_draws) == (want.p_value, want.n_draws)
            assert g.delta == pytest.approx(want.delta, rel=1e-12)


@pytest.mark.parametrize("statistic", ["pearson", "pairwise_accuracy", "soft_pairwise_accuracy", "acc_eq"])
def test_a_pair_gives_the_same_result_alone_or_with_every_other(statistic):
    rng = np.random.default_rng(13)
    h = rng.normal(size=(7,) if statistic == "pairwise_accuracy" else (5, 30))
    m = _metrics(rng, h, 5, noise=1.0)
    make = {"pearson": mtme.pearson_tester, "pairwise_accuracy": mtme.pairwise_accuracy_tester,
            "soft_pairwise_accuracy": mtme.soft_pairwise_accuracy_tester, "acc_eq": mtme.acc_eq_tester}[statistic]
    run = make(m, h).run
    every = run(_pairs(5), n_draws=300, seed=1, block_size=100)
    for pair, result in zip(_pairs(5), every):
        assert run([pair], n_draws=300, seed=1, block_size=100) == [result]
    assert run([(3, 1)], n_draws=300, seed=1, block_size=100)[0].delta == -every[_pairs(5).index((1, 3))].delta


def test_identical_and_constant_metrics():
    rng = np.random.default_rng(3)
    h = rng.normal(size=(5, 20))
    a = rng.normal(size=(5, 20))
    same = mtme.pearson_pairs(np.stack([a, a, np.full_like(a, 2.0)]), h, [(0, 1), (0, 2)], n_draws=100)
    assert (same[0].delta, same[0].p_value, same[0].n_draws) == (0.0, 1.0, 100)
    assert math.isnan(same[1].p_value) and same[1].n_draws == 0  # a constant metric has no r
    with pytest.raises(ValueError):
        mtme.pearson_pairs(np.stack([a, a]), h, [(0, 0)])
    with pytest.raises(ValueError):
        mtme.pearson_pairs(a, h, [(0, 1)])


def _mtme_assign_ranks(sig_matrix: np.ndarray, pval: float) -> list[int]:
    """MTME data.AssignRanks (commit 68a481a), verbatim but for the names."""
    n = sig_matrix.shape[0]
    ranks = [0] * n
    current_rank = 1
    start_index = 0
    for i in range(n):
        if any(sig_matrix[:, i][start_index: i] <= pval):
            current_rank += 1
            start_index = i
        ranks[i] = current_rank
    return ranks


def test_assign_ranks_is_mtme_s():
    rng = np.random.default_rng(0)
    for n in range(1, 8):
        for _ in range(50):
            p = np.triu(rng.choice([0.01, 0.04, 0.05, 0.2, 0.9], size=(n, n)), 1)
            p[np.tril_indices(n)] = np.nan
            assert assign_ranks(p) == _mtme_assign_ranks(np.nan_to_num(p, nan=1.0), 0.05)
    # the head rule would put c in cluster 1 (a is not better than c); MTME's puts it in 2 (b is)
    p = np.array([[np.nan, 0.5, 0.5], [np.nan, np.nan, 0.01], [np.nan, np.nan, np.nan]])
    assert assign_ranks(p) == [1, 1, 2]


def test_draws_do_not_depend_on_chunks():
    one = draw_bits(np.random.default_rng(3), 10, (3, 7))
    rng = np.random.default_rng(3)
    parts = np.concatenate([draw_bits(rng, k, (3, 7)) for k in (1, 4, 5)])
    assert np.array_equal(one, parts) and 0.4 < one.mean() < 0.6
    assert list(itertools.chain(*[list(x.ravel()) for x in one[:1]])) == list(one[0].ravel())


def test_swapped_metric_counts_compiled_equal_numpy(monkeypatch):
    """The compiled hybrid_counts and its numpy path: the same float32 operations, hence the same counts."""
    from harness import native
    from harness.core.mtme import sig_matrix
    from harness.core.mtme.kernels import KERNELS

    if native.kernels(KERNELS) is None:
        pytest.skip("the compiled kernels are not built here")
    rng = np.random.default_rng(8)
    v, s, p, q = 4, 6, 300, 5
    whole = rng.normal(size=(v, s, p)).astype(np.float32)
    moved = rng.normal(size=(3 * v, s, p)).astype(np.float32)
    totals, moved_totals = rng.normal(size=(v, s)).astype(np.float32), rng.normal(size=(3 * v, s)).astype(np.float32)
    moved[2, 3] = moved[5, 3]  # ties between rows: the comparisons' >= must count them alike
    a, b = rng.integers(0, v, q), rng.integers(0, v, q)
    ra, rb = rng.integers(0, 3 * v, 3 * q), rng.integers(0, 3 * v, 3 * q)
    compiled = sig_matrix._hybrid_counts(whole, moved, totals, moved_totals, a, b, ra, rb)
    monkeypatch.setattr(native, "kernels", lambda _set: None)
    assert np.array_equal(compiled, sig_matrix._hybrid_counts(whole, moved, totals, moved_totals, a, b, ra, rb))


@pytest.mark.parametrize("variant", ["acc23", "23"])
def test_acc_eq_draws_compiled_equal_numpy(monkeypatch, variant):
    """acc_eq's compiled draws and its numpy path: the same float64 operations in the same order (numpy's pairwise
    sums over 600 items: its blocks of 8 and its halving), hence the same p-values and draws; sparse human scores,
    tied metric scores and pairs of identical metrics, whose swaps often give the test's own delta again."""
    from harness import native
    from harness.core.mtme.kernels import KERNELS

    if native.kernels(KERNELS) is None:
        pytest.skip("the compiled kernels are not built here")
    rng = np.random.default_rng(21)
    h = np.round(rng.normal(size=(7, 600)), 1)
    h[rng.random(h.shape) < 0.2] = np.nan
    m = np.round(_metrics(rng, np.nan_to_num(h), 5, noise=1.0), 0)
    m = np.concatenate([m, m[1:2]])  # metric 5 is metric 1
    pairs = _pairs(6)
    compiled = mtme.acc_eq_tester(m, h, variant=variant)
    draws = compiled.draw(np.random.default_rng(4), 7, np.array([0, 1, 5]), np.array([3, 5, 2]))
    got = compiled.run(pairs, n_draws=1000, seed=2, block_size=100)
    monkeypatch.setattr(native, "kernels", lambda _set: None)
    numpy_path = mtme.acc_eq_tester(m, h, variant=variant)
    want_draws = numpy_path.draw(np.random.default_rng(4), 7, np.array([0, 1, 5]), np.array([3, 5, 2]))
    # equal to the last bit, by design: both paths do the same correctly rounded IEEE divisions and additions (no
    # library function, no contraction) in the same order, and the tests compare these values with their delta
    assert np.array_equal(draws, want_draws)
    want = numpy_path.run(pairs, n_draws=1000, seed=2, block_size=100)
    assert [(g.p_value, g.n_draws) for g in got] == [(w.p_value, w.n_draws) for w in want]
    assert [g.delta for g in got] == pytest.approx([w.delta for w in want], rel=1e-12)
    assert got[pairs.index((1, 5))].p_value == 1.0  # identical metrics: every draw gives their delta, 0


@pytest.mark.parametrize("n_c,n,n_p", [(1, 1, 1), (5, 7, 3), (16, 128, 64), (17, 129, 65), (40, 1001, 1000)])
def test_signed_sums_compiled_equal_numpy_and_the_product(monkeypatch, n_c, n, n_p):
    """Soft pairwise accuracy's permuted sums by tables of signed sums (``_signed_sums``): the compiled kernel and the
    numpy path do the same float32 additions in the same order, so they are equal to the last bit; and both are the
    product ``x @ signs.T`` up to float32 rounding (checked against it in float64). Shapes: segments not a multiple
    of 8 (the padding), columns not a multiple of a tile's 16, more than one group of 16 blocks (129 segments and
    more), zeros (the masked entries) and integers, whose sums are exact in every order."""
    from harness import native
    from harness.core.mtme import sig_matrix
    from harness.core.mtme.kernels import KERNELS, grouped_bits

    rng = np.random.default_rng(n_c * 1000 + n)
    x = rng.normal(size=(n_c, n)).astype(np.float32) * np.float32(3.0)
    x[rng.random(x.shape) < 0.5] = 0.0
    signs = np.where(rng.random((n_p, n)) < 0.5, -1.0, 1.0).astype(np.float32)
    bits = np.packbits(signs > 0, axis=1, bitorder="little")
    exact = x.astype(np.float64) @ signs.T.astype(np.float64)
    got = sig_matrix._signed_sums(x, bits)
    # float32 rounding of a sum of n terms: at most about n ulps of the largest partial sum
    bound = n * np.finfo(np.float32).eps * np.abs(x).sum(axis=1, keepdims=True)
    assert got.shape == (n_c, n_p) and got.dtype == np.float32
    assert (np.abs(got - exact) <= bound).all()
    ints = np.round(x * 10).astype(np.float32)  # small integers: every order of additions gives the exact sum
    assert np.array_equal(sig_matrix._signed_sums(ints, bits), (ints.astype(np.float64) @ signs.T).astype(np.float32))
    assert np.array_equal(got, sig_matrix._signed_sums(x, bits, grouped_bits(bits)))  # the layout given once
    if native.kernels(KERNELS) is None:
        pytest.skip("the compiled kernels are not built here")
    monkeypatch.setattr(native, "kernels", lambda _set: None)
    assert np.array_equal(got, sig_matrix._signed_sums(x, bits))
    assert np.array_equal(got, sig_matrix._signed_sums_numpy(x, bits))


def test_no_metric_or_one_metric():
    rng = np.random.default_rng(1)
    h = rng.normal(size=(4, 10))
    for make in (mtme.pearson_tester, mtme.soft_pairwise_accuracy_tester, mtme.acc_eq_tester):
        assert make(np.zeros((0, 4, 10)), h).values.size == 0
        assert make(h[None] + 1.0, h).run([]) == []
    assert mtme.pairwise_accuracy_tester(np.zeros((0, 4)), h[:, 0]).values.size == 0


def test_variants_equal_up_to_rounding_are_ranked_as_one():
    """nltk's and multi-bleu's sentence scores differ by 1e-13 on ru-en: no test between them (its delta and p-value
    would be rounding), the later one takes the earlier one's rank; a real difference is kept."""
    from harness.job.meta_evaluation import _identical

    rng = np.random.default_rng(4)
    a = rng.random((5, 30)) * 100
    a[0, 3] = np.nan
    metric = {"nltk": a, "multi-bleu": a * (1 + 1e-14), "other": a + 1e-9, "flat": np.zeros_like(a)}
    assert _identical(metric) == {"multi-bleu": "nltk"}
    assert _identical({"x": np.zeros(3), "y": np.zeros(3)}) == {"y": "x"}
