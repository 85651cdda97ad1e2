"""Pearson, Spearman and Kendall tau-b with their p-values (harness.core.correlation.classic) against scipy.stats
itself, the oracle they reproduce: on the demo's real MQM judgments (segment level: thousands of pairs, most of them
tied; system level: 9 systems), on edge cases (3 items, perfect and reversed orders, the exact/asymptotic boundary
of Kendall's p-value) and on generated vectors with and without ties, each value and p-value to a relative 1e-12."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from scipy.stats._mstats_basic import _kendall_p_exact

from harness.core.correlation import classic
from support import DEMO, read_lines

ORACLES = {"pearson": sps.pearsonr, "spearman": sps.spearmanr, "kendall": sps.kendalltau}


def assert_as_scipy(x, y, methods=tuple(ORACLES)):
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if np.ptp(x) == 0 or np.ptp(y) == 0:  # correlate() never passes a constant vector
        return
    for method in methods:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = ORACLES[method](x, y)
        value, p = getattr(classic, method)(x, y)
        assert value == pytest.approx(float(ref.statistic), rel=1e-12, abs=0), (method, x, y)
        assert p == pytest.approx(float(ref.pvalue), rel=1e-12, abs=0), (method, x, y)


def test_the_demos_mqm_segments_and_systems_as_scipy():
    """Segment level: each system's MQM segment scores against its segments' lengths in words (real vectors, mostly
    ties on both sides), and all systems pooled; system level: the 9 systems' MQM against their total length."""
    rows = [line.split("\t") for line in read_lines(DEMO / "human" / "seg.tsv")[1:]]
    pooled_x, pooled_y, totals, mqm = [], [], [], []
    for system in sorted({r[0] for r in rows}):
        lines = read_lines(DEMO / "systems" / f"{system}.txt")
        mine = [(int(i), float(score)) for s, i, score in rows if s == system]
        x = np.array([len(lines[i].split()) for i, _ in mine], dtype=np.float64)
        y = np.array([score for _, score in mine], dtype=np.float64)
        assert_as_scipy(x, y)
        pooled_x.append(x)
        pooled_y.append(y)
        totals.append(x.sum())
        mqm.append(y.mean())
    assert_as_scipy(np.concatenate(pooled_x), np.concatenate(pooled_y))
    assert len(totals) == 9
    assert_as_scipy(totals, mqm)


@pytest.mark.parametrize("x,y", [
    ([1, 2, 3], [1, 2, 3]), ([1, 2, 3], [3, 2, 1]), ([1, 2, 3], [1, 3, 2]), ([1, 2, 3], [2, 2, 3]),
    ([0.1, 0.2, 0.3, 0.4], [10, 30, 20, 40]), ([1, 1, 2, 2], [1, 2, 1, 2]),
    (list(range(9)), [0, 1, 2, 3, 4, 5, 6, 8, 7]),  # one inversion: Kendall's closed form
    (list(range(33)), list(range(33))[::-1]), (list(range(34)), list(range(34))),  # exact up to 33, then ...
    (list(range(34)), [1, 0] + list(range(2, 34))),  # ... at most one inversion: still exact
    (list(range(40)), [3, 1, 0, 2] + list(range(4, 40))),  # asymptotic
    (list(range(200)), [1, 0] + list(range(2, 200))),  # exact closed form where n! overflows: p 0.0
    ([1e-300, 2e-300, 3e-300, 5e-300], [1, 2, 3, 4]), ([1e300, 2e300, 3e300, 5e300], [4, 3, 2, 1]),
    ([1.0, 1.0 + 1e-15, 1.0 + 3e-15, 1.0], [2.0, 1.0, 3.0, 0.5]),  # nearly constant
])
def test_edge_cases_as_scipy(x, y):
    assert_as_scipy(x, y)


@pytest.mark.parametrize("n", [3, 4, 5, 8, 9, 20, 31, 32, 33, 34, 35, 60])
def test_random_orders_of_every_size_around_the_exact_limit_as_scipy(n):
    """Kendall's p-value is exact for untied vectors of at most 33 items, asymptotic beyond: both sides of it, with
    and without ties."""
    rng = np.random.default_rng(n)
    for _ in range(5):
        x = rng.permutation(n).astype(np.float64)
        y = x + rng.normal(0, n / 3, n)
        assert_as_scipy(x, y)
        assert_as_scipy(np.round(x / 3), np.round(y / 3))


def test_kendalls_exact_p_values_as_scipy():
    for n in range(3, 34):
        for c in range(0, n * (n - 1) // 2 + 1, max(1, n // 3)):
            assert classic.kendall_p_exact(n, c) == pytest.approx(float(_kendall_p_exact(n, c)), rel=1e-12, abs=0)
    for n in (34, 170, 171, 172, 500):
        for c in (0, 1, n * (n - 1) // 2 - 1, n * (n - 1) // 2):
            assert classic.kendall_p_exact(n, c) == float(_kendall_p_exact(n, c))
    with pytest.raises(ValueError, match="n <= 33 or c <= 1"):
        classic.kendall_p_exact(34, 5)


def test_inversions_are_counted_as_pairs():
    """Every pair counted once, within the blocks compared pair by pair and across the merged ones (sizes around the
    block and its doubles, all equal, few or all distinct values)."""
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 3, 7, 31, 32, 33, 63, 64, 65, 300):
        a = rng.integers(0, max(1, n // 3), n)
        brute = sum(1 for i, j in itertools.combinations(range(n), 2) if a[i] > a[j])
        assert classic.inversions(a) == brute
    for n in (1000, 2049):
        for distinct in (1, 2, 7, n):
            a = rng.integers(0, distinct, n)
            assert classic.inversions(a) == int(np.triu(a[:, None] > a[None, :], 1).sum())
    assert classic.inversions(np.arange(5000)[::-1]) == 5000 * 4999 // 2


def test_average_ranks_share_their_ties():
    assert classic.average_ranks(np.array([3.0, 1.0, 3.0, 2.0, 3.0])).tolist() == [4.0, 1.0, 4.0, 2.0, 4.0]


@st.composite
def vectors(draw):
    n = draw(st.integers(3, 45))
    levels = draw(st.sampled_from([None, 2, 3, 6]))  # None: continuous; else that many distinct values (ties)
    values = st.floats(-1e6, 1e6, allow_nan=False) if levels is None else st.integers(0, levels - 1).map(float)
    x = np.array(draw(st.lists(values, min_size=n, max_size=n)))
    noise = np.array(draw(st.lists(values, min_size=n, max_size=n)))
    y = x * draw(st.sampled_from([1.0, -2.0, 0.0])) + noise * draw(st.sampled_from([0.0, 1e-6, 1.0]))
    return x, y


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vectors())
def test_generated_vectors_as_scipy(xy):
    assert_as_scipy(*xy)
