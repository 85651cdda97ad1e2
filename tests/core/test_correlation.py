"""Tests of harness.correlation: scipy as the oracle, hand-computed cases, and the resampling machinery."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats as sps

from harness.core import correlation as corr
from harness.core.blocks import block_protocol
from harness.core.correlation.batched import _batch_values as batch_values
from harness.core.correlation.classic import average_ranks
from harness.core.correlation.difference import _bootstrap_p as bootstrap_p
from harness.core.correlation.segment import _segment_resampled_values as segment_resampled_values
from harness.core.correlation.segment import _weighted_kendall as weighted_kendall
from harness.errors import ConfigError, InputError

N_ORDER = 4


def bleu4(summed: np.ndarray) -> np.ndarray:
    """Plain BLEU-4 from summed statistics [..., 10]: closest ref length in column 1, no smoothing."""
    summed = np.asarray(summed, dtype=np.float64)
    c, r = summed[..., 0], summed[..., 1]
    matches, totals = summed[..., 2 : 2 + N_ORDER], summed[..., 2 + N_ORDER :]
    with np.errstate(divide="ignore", invalid="ignore"):
        prec = np.where(totals > 0, matches / totals, 0.0)
        logs = np.where(prec > 0, np.log(np.where(prec > 0, prec, 1.0)), 0.0).mean(axis=-1)
        bp = np.where(c > 0, np.minimum(1.0, np.exp(1.0 - r / np.where(c > 0, c, 1.0))), 0.0)
    return np.where(np.all(prec > 0, axis=-1), 100.0 * bp * np.exp(logs), 0.0)


def unigram_precision(summed: np.ndarray) -> np.ndarray:
    """A score function that is easy to compute by hand: 100 * matches_1 / totals_1 (K = 4)."""
    return 100.0 * summed[..., 2] / summed[..., 3]


def synthetic(n_systems: int = 6, n_segments: int = 120, seed: int = 0, noise: float = 5.0):
    """Stats [S, n, 10] whose BLEU tracks a system quality, and human segment scores tracking the same quality."""
    rng = np.random.default_rng(seed)
    quality = np.linspace(0.35, 0.75, n_systems)
    hyp_len = rng.integers(8, 30, size=(n_systems, n_segments))
    ref_len = hyp_len + rng.integers(-3, 4, size=hyp_len.shape)
    totals = np.stack([np.maximum(hyp_len - k, 0) for k in range(N_ORDER)], axis=-1)
    p = quality[:, None, None] ** (1 + 0.5 * np.arange(N_ORDER))
    matches = rng.binomial(totals, np.broadcast_to(p, totals.shape))
    stats = np.concatenate([hyp_len[..., None], ref_len[..., None], matches, totals], axis=-1).astype(np.float64)
    human = 100 * quality[:, None] + rng.normal(0, noise, size=(n_systems, n_segments))
    return stats, human


# --------------------------------------------------------------------------------------------------- correlate


@pytest.mark.parametrize(
    "method, oracle",
    [
        ("pearson", lambda x, y: sps.pearsonr(x, y)),
        ("spearman", lambda x, y: sps.spearmanr(x, y)),
        ("kendall", lambda x, y: sps.kendalltau(x, y, variant="b")),
    ],
)
def test_correlate_equals_scipy(method, oracle):
    rng = np.random.default_rng(1)
    x = rng.normal(size=40)
    y = 0.6 * x + rng.normal(size=40)
    y[:5] = np.round(y[:5])  # a few ties
    value, p = corr.correlate(x, y, method)
    ref = oracle(x, y)
    assert value == pytest.approx(ref.statistic, abs=1e-12)
    assert p == pytest.approx(ref.pvalue, abs=1e-12)


def test_correlate_drops_nan_pairs():
    x = np.array([1.0, 2.0, np.nan, 4.0, 5.0, 7.0])
    y = np.array([2.0, 1.0, 3.0, np.nan, 6.0, 6.5])
    keep = [0, 1, 4, 5]
    for method in corr.METHODS:
        assert corr.correlate(x, y, method) == pytest.approx(corr.correlate(x[keep], y[keep], method), abs=1e-12)
    assert corr.correlate(x, y, "pearson")[0] == pytest.approx(sps.pearsonr(x[keep], y[keep]).statistic, abs=1e-12)


@pytest.mark.parametrize("method", corr.METHODS)
def test_correlate_undefined_is_nan_without_warnings(method):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert all(math.isnan(v) for v in corr.correlate([1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0], method))
        assert all(math.isnan(v) for v in corr.correlate([1.0, 2.0, 3.0], [5.0, 5.0, 5.0], method))
        assert all(math.isnan(v) for v in corr.correlate([1.0, 2.0, np.nan], [1.0, 3.0, 2.0], method))  # 2 pairs
        assert all(math.isnan(v) for v in corr.correlate([], [], method))


def test_unknown_method_lists_choices():
    with pytest.raises(ConfigError) as err:
        corr.correlate([1, 2, 3], [1, 2, 3], "kendal")
    assert err.value.key == "method"
    assert err.value.choices == list(corr.METHODS)
    with pytest.raises(ConfigError):
        corr.segment_correlation(np.ones((2, 2)), np.ones((2, 2)), "pearson", "sys")


def test_mismatched_lengths_are_input_errors():
    with pytest.raises(InputError):
        corr.correlate([1, 2, 3], [1, 2], "pearson")
    with pytest.raises(InputError):
        corr.segment_correlation(np.ones((2, 3)), np.ones((3, 2)))


@pytest.mark.parametrize("method", corr.METHODS)
@pytest.mark.parametrize("m", [7, 90])  # pairwise path and scipy-loop path for kendall
def test_batched_values_equal_scipy(method, m):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(5, m))
    y = x + rng.normal(size=(5, m))
    x[0, :3] = np.nan
    y[1, -2:] = np.nan
    y[2] = np.round(y[2])
    x[3] = 4.0  # constant row -> nan
    got = batch_values(method, x, y)
    for b in range(5):
        assert got[b] == pytest.approx(corr.correlate(x[b], y[b], method)[0], abs=1e-12, nan_ok=True)
    assert math.isnan(got[3])


def test_average_ranks_equal_scipy_rankdata():
    rng = np.random.default_rng(3)
    x = np.round(rng.normal(size=(4, 30)), 1)  # many ties
    x[1, ::4] = np.nan
    x[2] = np.nan
    got = average_ranks(x)
    for b in range(4):
        ok = ~np.isnan(x[b])
        np.testing.assert_array_equal(np.isnan(got[b]), ~ok)
        np.testing.assert_allclose(got[b][ok], sps.rankdata(x[b][ok]), rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------- segment level


def test_item_grouping_is_the_average_of_per_segment_correlations():
    metric = np.array(
        [
            [1.0, 5.0, 2.0, 9.0],
            [2.0, 3.0, 2.0, 8.0],
            [3.0, 4.0, 2.0, np.nan],
            [4.0, 1.0, 2.0, 7.0],
        ]
    )
    human = np.array(
        [
            [10.0, 1.0, 3.0, 2.0],
            [30.0, 2.0, 1.0, np.nan],
            [20.0, 3.0, 2.0, 5.0],
            [40.0, 4.0, 5.0, np.nan],
        ]
    )
    # column 2: metric constant -> undefined, skipped; column 3: one valid pair (row 0) -> skipped.
    for method, oracle in [("pearson", sps.pearsonr), ("kendall", sps.kendalltau), ("spearman", sps.spearmanr)]:
        expected = np.mean([oracle(metric[:, j], human[:, j]).statistic for j in (0, 1)])
        value, p = corr.segment_correlation(metric, human, method, "item")
        assert value == pytest.approx(expected, abs=1e-12)
        assert math.isnan(p)
    # 'none' pools every valid pair
    ok = ~(np.isnan(metric) | np.isnan(human))
    value, p = corr.segment_correlation(metric, human, "pearson", "none")
    ref = sps.pearsonr(metric[ok], human[ok])
    assert (value, p) == pytest.approx((ref.statistic, ref.pvalue), abs=1e-12)


def test_item_grouped_pearson_of_tiny_scores_is_scipys():
    """NLTK's sentence BLEU of a segment without matches is ~1e-229: the products of its deviations underflow to 0,
    which made the item's Pearson r +-1 (or NaN) where scipy gives a value between; now scaled as scipy does."""
    metric = np.array([[1e-229, 7.0e-230], [3e-229, 2.0e-229], [2e-229, 9.0e-230], [5e-230, 1.1e-229]])
    human = np.array([[0.5, 0.1], [0.1, -0.3], [0.9, 0.4], [0.2, 0.0]])
    want = [sps.pearsonr(metric[:, j], human[:, j]).statistic for j in range(2)]
    assert all(abs(w) < 0.9 for w in want)
    got = batch_values("pearson", metric.T, human.T, 2)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    value, _ = corr.segment_correlation(metric, human, "pearson", "item")
    assert value == pytest.approx(np.mean(want), rel=1e-12)


def test_item_grouping_keeps_items_with_two_pairs():
    metric = np.array([[1.0, 1.0], [2.0, 3.0], [np.nan, 2.0]])
    human = np.array([[2.0, 1.0], [1.0, 2.0], [5.0, 3.0]])
    # column 0: two valid pairs, discordant -> -1 (MTME keeps 2-pair items); column 1: pearson of 3 points
    expected = np.mean([-1.0, sps.pearsonr(metric[:, 1], human[:, 1]).statistic])
    assert corr.segment_correlation(metric, human, "pearson", "item")[0] == pytest.approx(expected, abs=1e-12)


def test_kendall_like_hand_computed():
    human = np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 1.0]])
    metric = np.array([[10.0, 3.0], [30.0, 2.0], [20.0, 2.0]])
    # segment 0: (0,1) con, (0,2) con, (1,2) dis -> 2 con, 1 dis
    # segment 1: (0,1) human tie: not counted; (0,2) con; (1,2) metric tie: dis -> 1 con, 1 dis
    value, p = corr.segment_correlation(metric, human, "kendall_like", "none")
    assert value == pytest.approx((3 - 2) / 5)
    assert math.isnan(p)
    assert corr.segment_correlation(metric, human, "kendall_like", "item")[0] == pytest.approx((1 / 3 + 0) / 2)
    # threshold 1: segment 0 keeps only (0,2) (|diff| 2 > 1): con; segment 1 unchanged -> 2 con, 1 dis
    assert corr.segment_correlation(metric, human, "kendall_like", "none", threshold=1.0)[0] == pytest.approx(1 / 3)
    # a missing human score removes that system's pairs in that segment
    human_nan = human.copy()
    human_nan[2, 0] = np.nan  # segment 0 keeps only (0,1): con
    assert corr.segment_correlation(metric, human_nan, "kendall_like", "none")[0] == pytest.approx((2 - 1) / 3)


def test_segment_level_rows():
    stats, human = synthetic(n_systems=5, n_segments=40)
    metric = bleu4(stats)  # per-segment "sentence BLEU", unsmoothed: plenty of zeros, fine here
    rows = corr.segment_level(metric, human, n_samples=50, seed=3)
    assert {(r.method, r.grouping) for r in rows} == {
        (m, g) for m in ("pearson", "kendall", "kendall_like") for g in ("none", "item")
    }
    for r in rows:
        assert r.level == "segment"
        assert r.value == pytest.approx(
            corr.segment_correlation(metric, human, r.method, r.grouping)[0], nan_ok=True
        )
        assert r.n == (200 if r.grouping == "none" else 40)


# ------------------------------------------------------------------------------------------------ system level


def test_system_level_point_values_and_mask():
    stats, human = synthetic()
    bleu = bleu4(stats.sum(axis=1))
    means = human.mean(axis=1)
    mask = np.array([True, True, False, True, True, True])
    rows = corr.system_level(stats, human, bleu4, system_mask=mask, n_samples=0)
    assert [r.method for r in rows] == list(corr.METHODS)
    for r in rows:
        assert (r.value, r.p_value) == pytest.approx(corr.correlate(bleu[mask], means[mask], r.method))
        assert r.n == 5 and r.level == "system" and math.isnan(r.ci_low)


@pytest.mark.parametrize("with_segments", [True, False])
def test_system_level_subsets_equal_system_level_per_subset(with_segments):
    """One resampling of every system serves each subset: values and p-values exactly, intervals to rel 1e-12,
    with the human scores resampled (segment scores) and held fixed (system scores only)."""
    stats, human = synthetic(n_segments=80, noise=20.0)
    human[2, :7] = np.nan
    hseg, hsys = (human, None) if with_segments else (None, np.nanmean(human, axis=1) + 0.3)
    masks = [None, np.array([True, False, True, True, False, True]), np.array([False, True, True, True, True, True])]
    together = corr.system_level_subsets(stats, hseg, bleu4, masks, human_sys=hsys, n_samples=300, seed=5)
    for mask, rows in zip(masks, together):
        alone = corr.system_level(stats, hseg, bleu4, system_mask=mask, human_sys=hsys, n_samples=300, seed=5)
        assert [(r.method, r.value, r.p_value, r.n) for r in rows] == [(r.method, r.value, r.p_value, r.n)
                                                                         for r in alone]
        for r, a in zip(rows, alone):
            assert (r.ci_low, r.ci_high) == pytest.approx((a.ci_low, a.ci_high), rel=1e-12)
            assert r.ci_low <= r.ci_high
    assert together[1][0].ci_low < together[1][0].ci_high  # intervals that can differ
    with pytest.raises(InputError, match="one entry per system"):
        corr.system_level_subsets(stats, hseg, bleu4, [np.ones(4, dtype=bool)], human_sys=hsys)


def test_system_bootstrap_matches_naive_loop():
    stats, human = synthetic(n_segments=60)
    human[0, :10] = np.nan
    seed, n_samples = 7, 40
    idx = np.random.default_rng(seed).integers(0, 60, (n_samples, 60))
    vals = []
    for b in range(n_samples):
        bl = bleu4(stats[:, idx[b], :].sum(axis=1))
        hm = np.nanmean(human[:, idx[b]], axis=1)
        vals.append(sps.pearsonr(bl, hm).statistic)
    expected = np.percentile(vals, [2.5, 97.5])
    got = corr.bootstrap_system_correlation(stats, human, bleu4, "pearson", n_samples=n_samples, seed=seed)
    assert got == pytest.approx(tuple(expected), abs=1e-10)


@pytest.mark.parametrize("method", corr.METHODS)
def test_system_bootstrap_reproducible_and_contains_estimate(method):
    stats, human = synthetic(n_segments=150, noise=20.0)
    value, _ = corr.system_correlation(bleu4(stats.sum(axis=1)), human.mean(axis=1), method)
    ci = corr.bootstrap_system_correlation(stats, human, bleu4, method, n_samples=300, seed=1)
    assert ci == corr.bootstrap_system_correlation(stats, human, bleu4, method, n_samples=300, seed=1)
    assert ci[0] <= value <= ci[1]
    # a noisy case so that another seed visibly moves the interval
    noisy_stats, noisy_human = synthetic(n_systems=12, n_segments=40, noise=200.0, seed=5)
    c1 = corr.bootstrap_system_correlation(noisy_stats, noisy_human, bleu4, method, n_samples=200, seed=1)
    c2 = corr.bootstrap_system_correlation(noisy_stats, noisy_human, bleu4, method, n_samples=200, seed=2)
    assert c1 != c2


def test_bootstraps_without_a_seed_draw_from_os_entropy():
    """``seed=None`` (documented: OS entropy) works at both levels and for the difference of two metrics, and is
    not cached: two calls draw different resamples (it used to fail on ``int(None)``)."""
    stats, human = synthetic(n_systems=12, n_segments=40, noise=200.0, seed=5)
    a = corr.bootstrap_system_correlation(stats, human, bleu4, "pearson", n_samples=200, seed=None)
    b = corr.bootstrap_system_correlation(stats, human, bleu4, "pearson", n_samples=200, seed=None)
    assert all(np.isfinite(a)) and a != b
    rng = np.random.default_rng(4)
    h = rng.normal(size=(5, 80))
    m = h + rng.normal(scale=0.7, size=h.shape)
    assert all(np.isfinite(corr.bootstrap_segment_correlation(m, h, "pearson", "none", n_samples=100, seed=None)))
    diff = corr.correlation_difference(m, m + rng.normal(size=m.shape), h, test="paired_bootstrap", n_samples=100,
                                       seed=None)
    assert 0.0 <= diff.p_value <= 1.0


@pytest.mark.parametrize("method", corr.SEGMENT_METHODS)
@pytest.mark.parametrize("grouping", corr.GROUPINGS)
def test_segment_bootstrap_reproducible_and_contains_estimate(method, grouping):
    rng = np.random.default_rng(4)
    human = rng.normal(size=(5, 80))
    metric = human + rng.normal(scale=0.7, size=human.shape)
    value, _ = corr.segment_correlation(metric, human, method, grouping)
    ci = corr.bootstrap_segment_correlation(metric, human, method, grouping, n_samples=200, seed=1)
    assert ci == corr.bootstrap_segment_correlation(metric, human, method, grouping, n_samples=200, seed=1)
    assert ci != corr.bootstrap_segment_correlation(metric, human, method, grouping, n_samples=200, seed=2)
    assert ci[0] <= value <= ci[1]


@pytest.mark.parametrize("method", corr.SEGMENT_METHODS)
@pytest.mark.parametrize("grouping", corr.GROUPINGS)
def test_segment_resamples_match_naive_recomputation(method, grouping):
    rng = np.random.default_rng(5)
    human = np.round(rng.normal(size=(4, 25)), 1)
    metric = human + np.round(rng.normal(scale=0.5, size=human.shape), 1)
    human[1, 3] = np.nan
    idx = np.random.default_rng(0).integers(0, 25, (6, 25))
    counts = np.stack([np.bincount(row, minlength=25) for row in idx]).astype(float)
    got = segment_resampled_values(metric, human, method, grouping, 0.0, counts)
    for b in range(6):
        expected = corr.segment_correlation(metric[:, idx[b]], human[:, idx[b]], method, grouping)[0]
        assert got[b] == pytest.approx(expected, abs=1e-12)


@pytest.mark.usefixtures("native_on")
def test_compiled_kendall_of_resamples_is_scipy_on_the_repeated_items(monkeypatch):
    """The compiled tau-b of weighted items (ties on both sides, resamples that leave one item or none: NaN) is
    scipy's kendalltau on each resample with its repeated items; split between threads or not, and without the
    compiled kernel (HARNESS_NATIVE=0: scipy per resample), the numbers are the same."""
    from scipy.stats import kendalltau

    from harness import native

    rng = np.random.default_rng(3)
    x = np.round(rng.normal(size=300), 1)
    y = np.round(x + rng.normal(size=300), 1)
    w = rng.integers(0, 3, size=(43, 300)).astype(float)  # the kernel's blocks of 16 resamples, the last one short
    w[0] = 0
    w[1] = 0
    w[1, 7] = 5
    compiled = weighted_kendall(x, y, w)
    assert native.kernels(corr.KENDALL) is not None
    assert compiled.shape == (43,) and np.isnan(compiled[:2]).all()
    for b in range(2, 43):
        reps = w[b].astype(int)
        assert compiled[b] == pytest.approx(kendalltau(np.repeat(x, reps), np.repeat(y, reps)).statistic,
                                            rel=1e-12, abs=0)
    order = np.lexsort((y, x))
    starts = np.flatnonzero(np.r_[True, x[order][1:] != x[order][:-1], True]).astype(np.int64)
    y_rank = np.unique(y[order], return_inverse=True)[1].astype(np.int64)
    weights = np.ascontiguousarray(w[:, order])
    kern = native.kernels(corr.KENDALL)
    one, three = corr.tau_b(kern, y_rank, starts, weights, threads=1), corr.tau_b(kern, y_rank, starts, weights, 3)
    assert np.array_equal(one, three, equal_nan=True)  # the same code on disjoint rows
    # weights gathered from segment counts (item k in segment columns[k]) are the weights given item by item
    columns = rng.integers(0, 50, size=300)
    counts = rng.integers(0, 3, size=(40, 50)).astype(float)
    gathered = weighted_kendall(x, y, counts, columns)
    assert np.array_equal(gathered, weighted_kendall(x, y, counts[:, columns]), equal_nan=True)
    monkeypatch.setenv("HARNESS_NATIVE", "0")
    monkeypatch.delitem(native._loaded, corr.KENDALL.name)
    fallback = weighted_kendall(x, y, w)
    assert native.kernels(corr.KENDALL) is None
    assert np.isnan(fallback[:2]).all() and fallback[2:] == pytest.approx(compiled[2:], rel=1e-12, abs=0)


@pytest.mark.usefixtures("native_on")
def test_the_kendall_kernel_takes_counts_up_to_its_32_bit_sums():
    """The compiled tau-b sums counts as 32-bit integers: a resample's total weight up to 2^31 - 1 is exact (three
    items in x order with y ranks 0, 2, 1 weighing a, 1, 1: tau-b (2a - 1) / (2a + 1), the tie counts of the copies
    of the first item taken out), one more is refused, as are weights that are not counts, given item by item or
    gathered from segments."""
    from harness import native

    kern = native.kernels(corr.KENDALL)
    y_rank, starts = np.array([0, 2, 1], dtype=np.int64), np.arange(4, dtype=np.int64)
    a = float(corr.MAX_TOTAL_WEIGHT - 2)
    got = corr.tau_b(kern, y_rank, starts, np.array([[a, 1.0, 1.0], [1.0, 1.0, 1.0]]))
    # the float64 tie counts of ~2^61 pairs are rounded: the value to 1e-6, not to the last bit
    assert got[0] == pytest.approx((2 * a - 1) / (2 * a + 1), rel=1e-6) and got[1] == pytest.approx(1 / 3, rel=1e-12)
    with pytest.raises(ValueError, match="exceeds"):
        corr.tau_b(kern, y_rank, starts, np.array([[a + 1, 1.0, 1.0]]))
    for bad in (0.5, -1.0, np.nan):
        with pytest.raises(ValueError, match="counts"):
            corr.tau_b(kern, y_rank, starts, np.array([[bad, 1.0, 1.0]]))
    x, y = np.array([0.0, 1.0, 2.0]), np.array([0.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="exceeds"):  # item 0 and item 2 both in segment 0: counted twice
        weighted_kendall(x, y, np.array([[2.0**30, 1.0]]), np.array([0, 1, 0]))


def test_pooled_pearson_resamples_of_a_constant_side_are_undefined():
    """A constant metric or human side, or a resample that keeps one segment whose values are all equal, has no
    Pearson r: NaN, as segment_correlation says (not a ratio of rounding errors)."""
    rng = np.random.default_rng(2)
    human = rng.normal(size=(3, 10))
    metric = human + rng.normal(size=human.shape)
    metric[:, 4] = 7.25  # segment 4: one value for every system
    counts = np.zeros((3, 10))
    counts[0, 4] = 10  # only segment 4
    counts[1] = 1  # everything once
    counts[2, [4, 5]] = 5
    got = segment_resampled_values(metric, human, "pearson", "none", 0.0, counts)
    assert math.isnan(got[0]) and got[1] == pytest.approx(corr.segment_correlation(metric, human)[0], rel=1e-12)
    assert got[2] == pytest.approx(corr.segment_correlation(metric[:, [4, 5]], human[:, [4, 5]])[0], rel=1e-12)
    for flat in (np.full(human.shape, 3.5), np.full(human.shape, -1e6)):
        assert np.isnan(segment_resampled_values(flat, human, "pearson", "none", 0.0, counts)).all()
        assert np.isnan(segment_resampled_values(metric, flat, "pearson", "none", 0.0, counts)).all()


# ------------------------------------------------------------------------------------------------- comparisons


def test_perm_both_detects_the_better_metric():
    rng = np.random.default_rng(6)
    human = rng.normal(size=(4, 50))
    good = human + rng.normal(scale=0.01, size=human.shape)
    bad = rng.normal(size=human.shape)
    for grouping in corr.GROUPINGS:
        res = corr.correlation_difference(bad, good, human, grouping=grouping, test="perm_both", n_samples=200, seed=1)
        assert res.delta > 0.5 and res.p_value <= 0.01
        assert res.test == "perm_both" and res.n_samples == 200
        # one-sided: "bad is better than good" is not supported
        rev = corr.correlation_difference(good, bad, human, grouping=grouping, test="perm_both", n_samples=200, seed=1)
        assert rev.p_value > 0.9
        same = corr.correlation_difference(good, good, human, grouping=grouping, test="perm_both", n_samples=200)
        assert same.delta == 0 and same.p_value == 1.0
    again = corr.correlation_difference(bad, good, human, method="kendall_like", n_samples=100, seed=3)
    assert again == corr.correlation_difference(bad, good, human, method="kendall_like", n_samples=100, seed=3)


def test_perm_both_on_system_vectors():
    rng = np.random.default_rng(7)
    human = rng.normal(size=12)
    res = corr.correlation_difference(rng.normal(size=12), human + 0.01 * rng.normal(size=12), human,
                                    method="kendall", n_samples=300, seed=2)
    assert res.p_value < 0.05
    with pytest.raises(ConfigError):
        corr.correlation_difference(human, human, human, test="paired_bootstrap")


def test_paired_bootstrap_segment_comparison():
    rng = np.random.default_rng(8)
    human = rng.normal(size=(4, 60))
    good = human + rng.normal(scale=0.1, size=human.shape)
    bad = rng.normal(size=human.shape)
    res = corr.correlation_difference(bad, good, human, test="paired_bootstrap", n_samples=200, seed=1)
    assert res.p_value == pytest.approx(2 / 201)  # no resample flips the sign: the +1-smoothed floor
    assert res.ci_low > 0 and res.ci_low <= res.delta <= res.ci_high
    same = corr.correlation_difference(good, good, human, test="paired_bootstrap", n_samples=50)
    assert same.p_value == 1.0


def test_bootstrap_p_rule():
    # B = 6 defined resamples, F = 2 (one flipped, one zero): p = 2 (2 + 1) / 7
    diffs = np.array([1.0, 2.0, 3.0, 4.0, -1.0, 0.0, np.nan])
    assert bootstrap_p(diffs, 0.5) == (pytest.approx(6 / 7), 6)
    assert bootstrap_p(-diffs, -0.5) == (pytest.approx(6 / 7), 6)
    assert bootstrap_p(np.array([-1.0, -2.0, 1.0]), 0.5) == (1.0, 3)  # clamped at 1
    assert bootstrap_p(np.array([1.0, 2.0]), 0.0) == (1.0, 2)


def test_compare_system_correlations():
    stats, human = synthetic(n_segments=80, noise=10.0)
    # variant b: the real BLEU; variant a: BLEU of scrambled statistics (systems in shuffled order)
    scrambled = stats[[3, 0, 5, 1, 4, 2]]
    res = corr.system_correlation_difference(scrambled, bleu4, stats, bleu4, human, n_samples=200, seed=1)
    assert res.value_b > res.value_a and res.p_value < 0.05
    assert res.value_b == pytest.approx(corr.correlate(bleu4(stats.sum(axis=1)), human.mean(axis=1))[0])
    same = corr.system_correlation_difference(stats, bleu4, stats, bleu4, human, n_samples=50)
    assert same.delta == 0 and same.p_value == 1.0


# ---------------------------------------------------------------------------------------------- block protocol


def _block_stats() -> np.ndarray:
    # (matches_1, totals_1) per segment; segment 4 lies beyond 2 blocks of 2 and must be ignored.
    seg = {
        "A": [(1, 2), (1, 2), (2, 2), (2, 2), (0, 2)],  # blocks 50, 100
        "B": [(1, 2), (0, 2), (1, 2), (1, 2), (2, 2)],  # blocks 25, 50
        "C": [(0, 2), (0, 2), (1, 2), (1, 2), (2, 2)],  # blocks 0, 50
    }
    return np.array([[[2, 2, m, t] for m, t in seg[s]] for s in "ABC"], dtype=np.float64)


def test_block_protocol_hand_computed():
    res = block_protocol(_block_stats(), unigram_precision, n_blocks=2, block_size=2, systems=["A", "B", "C"])
    np.testing.assert_allclose(res.block_scores, [[50, 100], [25, 50], [0, 50]])
    np.testing.assert_allclose(res.mean, [75, 37.5, 25])
    np.testing.assert_allclose(res.std, [25 * math.sqrt(2), 12.5 * math.sqrt(2), 25 * math.sqrt(2)])
    assert res.order == (0, 1, 2)
    ab, bc = res.pairs
    # A -> B: differences (-25, -50): mean -37.5, sd 17.68, se 12.5, t = -3 (df 1); B -> C: (-25, 0): t = -1
    assert (ab.a, ab.b, bc.a, bc.b) == ("A", "B", "B", "C")
    assert ab.delta == pytest.approx(-37.5) and ab.statistic == pytest.approx(-3.0)
    assert ab.p_value == pytest.approx(1 - 2 * math.atan(3) / math.pi)
    assert bc.delta == pytest.approx(-12.5) and bc.statistic == pytest.approx(-1.0)
    assert bc.p_value == pytest.approx(0.5)
    ref = sps.ttest_rel([25, 50], [50, 100])
    assert (ab.statistic, ab.p_value) == pytest.approx((ref.statistic, ref.pvalue))
    half = sps.t.ppf(0.975, 1) * 12.5
    assert (ab.ci_low, ab.ci_high) == pytest.approx((-37.5 - half, -37.5 + half))
    assert ab.test == "block_t"
    assert [res.systems[i] for i in res.order] == ["A", "B", "C"]


def test_block_protocol_order_and_bleu():
    stats, _ = synthetic(n_segments=45)
    res = block_protocol(stats, bleu4, n_blocks=4, block_size=10, order=[0, 1, 2, 3, 4, 5])
    assert res.order == (0, 1, 2, 3, 4, 5)
    expected = np.array([[bleu4(stats[s, b * 10 : (b + 1) * 10].sum(axis=0)) for b in range(4)] for s in range(6)])
    np.testing.assert_allclose(res.block_scores, expected)
    t = sps.ttest_rel(expected[1], expected[0])
    assert (res.pairs[0].statistic, res.pairs[0].p_value) == pytest.approx((t.statistic, t.pvalue))
    assert res.pairs[0].a == "0"


def test_block_protocol_too_few_segments():
    with pytest.raises(InputError, match="500 segments"):
        block_protocol(np.ones((2, 499, 10)), bleu4)


def test_block_protocol_identical_systems_no_warning():
    stats = _block_stats()
    stats[1] = stats[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = block_protocol(stats, unigram_precision, n_blocks=2, block_size=2)
    tied = [p for p in res.pairs if p.delta == 0][0]
    assert math.isnan(tied.statistic) and math.isnan(tied.p_value)


# ------------------------------------------------------------------------------------------- ranking agreement


def test_ranking_agreement():
    same = corr.ranking_agreement([30.1, 25.0, 20.3, 10.0], [40.0, 33.0, 31.0, 12.0])
    assert same.identical_order and same.n_discordant == 0 and same.kendall_tau == pytest.approx(1.0)
    swapped = corr.ranking_agreement([30.1, 25.0, 20.3, 10.0], [40.0, 30.0, 31.0, np.nan])
    assert not swapped.identical_order and swapped.n_discordant == 1
    assert swapped.n == 3 and swapped.n_pairs == 3
    assert swapped.kendall_tau == pytest.approx(sps.kendalltau([30.1, 25.0, 20.3], [40.0, 30.0, 31.0]).statistic)
