"""Significance over statistics arrays: sacrebleu 2.x as the oracle (every number of ``PairedTest`` on the real
WMT21 data: p-values exactly, scores / means / CIs to 1e-9), RNG contract, Holm, clusters, difference CIs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sacrebleu.metrics.bleu import BLEU
from sacrebleu.significance import PairedTest

from harness.cli import format_paired_text
from harness.core import resampling
from harness.core import significance as sig
from harness.core.bleu import score_fn
from harness.core.blocks import block_protocol, block_t
from harness.core.formulas import sacrebleu_formula
from harness.core.options import make_options
from harness.errors import ConfigError, InputError
from harness.text.pipeline import PreparedReferences

TOL = 1e-9


# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def real(request):
    """Statistics of every system of the real data against ref-C+ref-D, and ref-C alone on the first 120
    segments (a harder case where p-values are not all at their floor)."""
    wmt21 = request.getfixturevalue("wmt21")
    opts = make_options()
    systems = list(wmt21["systems"].items())  # sorted by name: the first is the baseline
    refs_all = [wmt21["refs"]["ref-C"], wmt21["refs"]["ref-D"]]
    cases = {}
    for key, refs, n in (("CD", refs_all, None), ("C120", refs_all[:1], 120)):
        refs_n = [r[:n] for r in refs] if n else refs
        systems_n = [(name, lines[:n] if n else lines) for name, lines in systems]
        prepared = PreparedReferences.build(refs_n, opts)
        cases[key] = {
            "refs": refs_n,
            "texts": systems_n,
            "stats": [(name, prepared.statistics(lines)) for name, lines in systems_n],
        }
    return opts, cases


def sacrebleu_paired(texts, refs, test, n, monkeypatch, seed="12345", n_ar_confidence=-1):
    monkeypatch.setenv("SACREBLEU_SEED", seed)
    return PairedTest(texts, {"BLEU": BLEU(references=refs)}, None, test_type=test, n_samples=n,
                      n_ar_confidence=n_ar_confidence)()


def assert_same(ours, theirs, with_ci):
    assert [r.name for r in ours] == theirs[1]["System"]
    for o, t in zip(ours, theirs[1]["BLEU"]):
        assert o.score == pytest.approx(t.score, abs=TOL)
        assert o.p_value == t.p_value  # exactly, None for the baseline
        if with_ci:
            assert o.mean == pytest.approx(t.mean, abs=TOL)
            assert o.ci == pytest.approx(t.ci, abs=TOL)
        else:
            assert o.mean is None and t.mean is None and o.ci is None and t.ci is None


# -------------------------------------------------------------------------- sacrebleu equality, real data


@pytest.mark.slow
def test_paired_bs_default_n_equals_sacrebleu(real, monkeypatch):
    opts, cases = real
    case = cases["CD"]
    theirs = sacrebleu_paired(case["texts"], case["refs"], "bs", 0, monkeypatch)
    ours = sig.paired_test(case["stats"], score_fn(opts), "bs")  # n_samples None -> 1000
    assert ours[0].n_samples == 1000 and ours[0].baseline and ours[0].p_value is None
    assert_same(ours, theirs, with_ci=True)
    # sacrebleu's signature fields for the test
    info = theirs[0]["BLEU"].info
    extra = sig.signature_extra("bs", None, 12345)
    assert extra == {"bs": str(info["bs"]), "seed": str(info["seed"])}


@pytest.mark.slow
@pytest.mark.parametrize("seed", ["12345", "7"])
def test_paired_bs_equals_sacrebleu_subset(real, monkeypatch, seed):
    opts, cases = real
    case = cases["C120"]
    theirs = sacrebleu_paired(case["texts"], case["refs"], "bs", 500, monkeypatch, seed)
    ours = sig.paired_test(case["stats"], opts, "bs", 500, int(seed))  # resolved options work as score_fn
    assert_same(ours, theirs, with_ci=True)
    assert any(0.01 < r.p_value < 0.9 for r in ours[1:])  # a non-trivial case: p-values off their floor


@pytest.mark.slow
@pytest.mark.parametrize("key", ["CD", "C120"])
def test_paired_ar_equals_sacrebleu(real, monkeypatch, key):
    opts, cases = real
    case = cases[key]
    theirs = sacrebleu_paired(case["texts"], case["refs"], "ar", 2000, monkeypatch)
    ours = sig.paired_test(case["stats"], score_fn(opts), "ar", 2000)
    assert_same(ours, theirs, with_ci=False)
    info = theirs[0]["BLEU"].info
    assert sig.signature_extra("ar", 2000, 12345) == {"ar": str(info["ar"]), "seed": str(info["seed"])}


@pytest.mark.slow
def test_paired_ar_confidence_equals_sacrebleu(real, monkeypatch):
    # sacrebleu API only (n_ar_confidence): the baseline's CI from a fresh generator, the systems' from the
    # bootstrap drawn after the AR masks.
    opts, cases = real
    case = cases["C120"]
    theirs = sacrebleu_paired(case["texts"], case["refs"], "ar", 1000, monkeypatch, n_ar_confidence=0)
    ours = sig.paired_test(case["stats"], score_fn(opts), "ar", 1000, confidence=True)
    assert_same(ours, theirs, with_ci=True)
    info = theirs[0]["BLEU"].info
    assert sig.signature_extra("ar", 1000, 12345, n_confidence=1000) == {
        "bs": str(info["bs"]), "ar": str(info["ar"]), "seed": str(info["seed"])}


@pytest.mark.parametrize("seed", ["12345", "3"])
def test_single_system_ci_equals_sacrebleu(real, monkeypatch, seed):
    opts, cases = real
    case = cases["C120"]
    monkeypatch.setenv("SACREBLEU_SEED", seed)
    name, lines = case["texts"][2]
    theirs = BLEU().corpus_score(lines, case["refs"], n_bootstrap=1000)
    ours = sig.bootstrap_ci(dict(case["stats"])[name], score_fn(opts), 1000, int(seed))
    assert ours.score == pytest.approx(theirs.score, abs=TOL)
    assert ours.mean == pytest.approx(theirs._mean, abs=TOL)
    assert ours.ci == pytest.approx(theirs._ci, abs=TOL)
    assert ours.ci_low == pytest.approx(theirs._mean - theirs._ci, abs=TOL)
    # stacked: every system on the same resamples, same numbers
    many = sig.bootstrap_ci(case["stats"], score_fn(opts), 1000, int(seed))
    assert many[2].mean == ours.mean and many[2].name == name


@pytest.mark.parametrize("kw", [dict(), dict(smooth_method="floor"), dict(smooth_method="floor", smooth_value=0.3),
                                dict(smooth_method="add-k"), dict(smooth_method="none"),
                                dict(effective_order=True), dict(max_ngram_order=2)])
def test_float32_resample_scores_equal_sacrebleu(real, kw):
    """sacrebleu scores bootstrap resamples from float32 statistics; the emulation follows it to a relative 1e-12,
    also at the edges (not bitwise: numpy's vectorised log differs from math.log by an ulp on some CPUs). What
    users see, the p-values, are compared exactly with sacrebleu's on the real data above."""
    _, cases = real
    opts = make_options(**kw)
    rng = np.random.default_rng(0)
    X = cases["C120"]["stats"][1][1].truncate_order(opts.max_ngram_order).matrix()
    sums = np.stack([X[rng.integers(0, len(X), size)].sum(0) for size in (1, 1, 2, 3, 5, 40, 120)])
    order = opts.max_ngram_order
    edge = sums[0].copy()
    edge[2:2 + order] = 0  # no match at all: #141 early exit
    edge2 = sums[0].copy()
    edge2[2 + order - 1] = 0  # highest order: no match -> smoothing
    edge3 = sums[0].copy()
    edge3[2 + order - 1] = edge3[2 + 2 * order - 1] = 0  # highest order empty -> loop stops
    edge4 = sums[0].copy()
    edge4[0] = 0  # empty hypothesis: bp 0
    sums = np.vstack([sums, edge, edge2, edge3, edge4])
    metric = BLEU(**{k: v for k, v in kw.items()})
    want = np.array([metric._compute_score_from_stats(row.astype("float32")).score for row in sums])
    got = sacrebleu_formula(sums, opts, "float32").score
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    # a batch with rows to mend takes the masking path, one without (every order matched) the direct one: the
    # ordinary rows score the same either way, alone or together, in either arithmetic
    ordinary = (sums[:, 2:] > 0).all(axis=1)
    assert 3 <= ordinary.sum() < len(sums)
    for arithmetic in ("float32", "float64"):
        mixed = sacrebleu_formula(sums, opts, arithmetic)
        direct = sacrebleu_formula(sums[ordinary], opts, arithmetic)
        np.testing.assert_allclose(direct.score, mixed.score[ordinary], rtol=1e-12, atol=0)
        np.testing.assert_allclose(direct.precisions, mixed.precisions[ordinary], rtol=1e-12, atol=0)
        alone = [sacrebleu_formula(row, opts, arithmetic).score for row in sums]
        np.testing.assert_allclose(alone, mixed.score, rtol=1e-12, atol=0)
    sacrebleu64 = [BLEU.compute_bleu(list(map(int, row[2:2 + order])), list(map(int, row[2 + order:])), int(row[0]),
                                     int(row[1]), metric.smooth_method, metric.smooth_value, metric.effective_order,
                                     metric.max_ngram_order).score for row in sums]
    np.testing.assert_allclose(sacrebleu_formula(sums, opts).score, sacrebleu64, rtol=1e-12, atol=0)
    # resamples are scored in sacrebleu's float32 unless asked not to (the float64 path differs by ~1e-6 BLEU,
    # which is why the emulation exists)
    np.testing.assert_array_equal(score_fn(opts).resampled(sums), sacrebleu_formula(sums, opts, "float32").score)
    np.testing.assert_array_equal(score_fn(opts, sacrebleu_float32=False).resampled(sums),
                                  sacrebleu_formula(sums, opts).score)


# ---------------------------------------------------------------------------------------- our own contract


def test_all_pairs_contains_sacrebleu_baseline_pairs(real):
    opts, cases = real
    stats = cases["C120"]["stats"]
    fn = score_fn(opts)
    base = sig.paired_test(stats, fn, "bs", 300)
    pairs = sig.all_differences(stats, fn, "bs", 300)
    s = len(stats)
    assert len(pairs) == s * (s - 1) // 2
    by = {(c.a, c.b): c for c in pairs}
    for r in base[1:]:
        c = by[(base[0].name, r.name)]
        assert c.p_value == r.p_value and c.delta == pytest.approx(r.score - base[0].score, abs=TOL)
        assert (c.ci_low, c.ci_high) == (r.delta_low, r.delta_high)
    # AR: pair order does not matter (|A - B| is symmetric)
    fwd = sig.differences(stats[:4], fn, "ar", [(1, 2), (3, 0)], 500)
    rev = sig.differences(stats[:4], fn, "ar", [(stats[2][0], stats[1][0]), (0, 3)], 500)
    assert [c.p_value for c in fwd] == [c.p_value for c in rev]
    assert fwd[0].delta == -rev[0].delta


def test_seeds_reproduce_and_differ(real):
    opts, cases = real
    stats = cases["C120"]["stats"][:4]
    fn = score_fn(opts)
    for test in ("bs", "ar"):
        a = sig.differences(stats, fn, test, "all", 400, seed=11)
        b = sig.differences(stats, fn, test, "all", 400, seed=11)
        c = sig.differences(stats, fn, test, "all", 400, seed=12)
        assert a == b
        assert [x.p_value for x in a] != [x.p_value for x in c] or [x.ci_low for x in a] != [x.ci_low for x in c]
    assert sig.paired_test(stats, fn, "bs", 200, seed=5) == sig.paired_test(stats, fn, "bs", 200, seed=5)
    first, other = sig.paired_test(stats, fn, "bs", 200, seed=5), sig.paired_test(stats, fn, "bs", 200, seed=6)
    assert first[0].mean != other[0].mean
    np.testing.assert_array_equal(resampling.bootstrap_indices(50, 10, 1), resampling.bootstrap_indices(50, 10, 1))
    assert not np.array_equal(resampling.bootstrap_indices(50, 10, 1), resampling.bootstrap_indices(50, 10, 2))
    # unseeded runs differ (OS entropy)
    assert not np.array_equal(resampling.bootstrap_indices(500, 10, None), resampling.bootstrap_indices(500, 10, None))


def test_chunking_does_not_change_results(real):
    opts, cases = real
    stats = cases["C120"]["stats"][:5]
    fn = score_fn(opts)
    for test in ("bs", "ar"):
        big = sig.differences(stats, fn, test, "all", 300)
        small = sig.differences(stats, fn, test, "all", 300, max_bytes=20_000)
        assert big == small


@pytest.mark.parametrize("pairs,smallest,want", [(171, 1, 3500), (36, 1, 800), (45, 1, 900), (190, 1, 3800),
                                                 (14, 2, 600), (1, 1, 0), (0, 1, 0)])
def test_holm_samples_reach_alpha(pairs, smallest, want):
    """19 systems (171 pairs) with 1000 resamples could reach no adjusted p below 171/1001 = 0.171: nothing was
    significant after Holm. holm_samples gives the fewest resamples (a multiple of 100) that can."""
    got = sig.holm_samples(pairs, 0.05, smallest)
    assert got == want
    if pairs > 1:
        assert smallest * pairs / (got + 1) < 0.05 and smallest * pairs / (got - 100 + 1) >= 0.05
        exact = sig.holm_samples(pairs, 0.05, smallest, step=1)
        assert smallest * pairs / (exact + 1) < 0.05 <= smallest * pairs / exact


def test_holm_hand_computed():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> running max 0.06
    np.testing.assert_allclose(sig.holm(p), [0.03, 0.06, 0.06, 0.02], rtol=0, atol=1e-15)
    np.testing.assert_allclose(sig.holm([0.5, 0.6]), [1.0, 1.0])
    out = sig.holm([0.02, math.nan, 0.01])  # NaN does not count: m = 2
    assert math.isnan(out[1]) and out[0] == pytest.approx(0.02) and out[2] == pytest.approx(0.02)
    assert sig.holm([]).size == 0


def _synthetic_groups(n=400, seed=0):
    """Six systems in three obvious quality groups; within a group the second system is the first with symmetric
    +-1 noise on the matches of every segment (a difference of pure noise, not significant)."""
    rng = np.random.default_rng(seed)
    hyp = rng.integers(15, 30, n)
    systems = []
    for g, prec in enumerate((0.8, 0.6, 0.4)):
        m1 = rng.binomial(hyp, prec)
        base = np.column_stack([hyp, hyp, m1, np.maximum(0, (m1 * prec).astype(int)),
                                np.maximum(0, (m1 * prec**2).astype(int)), np.maximum(0, (m1 * prec**3).astype(int)),
                                hyp, hyp - 1, hyp - 2, hyp - 3]).astype(float)
        other = base.copy()
        for col in (2, 3):
            other[:, col] = np.clip(other[:, col] + rng.integers(-1, 2, n), 0, other[:, col + 4])
        systems += [(f"g{g}a", base), (f"g{g}b", other)]
    return systems


def test_clusters_on_obvious_groups():
    opts = make_options()
    fn = score_fn(opts)
    systems = _synthetic_groups()
    for test in ("bs", "ar"):
        comps = sig.all_differences(systems, fn, test, 1000 if test == "bs" else 2000)
        clusters = sig.significance_clusters(comps)
        got = {r.system: r.cluster for r in clusters}
        assert got == {"g0a": 1, "g0b": 1, "g1a": 2, "g1b": 2, "g2a": 3, "g2b": 3}
        assert [r.rank for r in clusters] == [1, 2, 3, 4, 5, 6]
        heads = [r for r in clusters if r.p_vs_head is None]
        assert [r.system for r in heads] == [clusters[0].system, clusters[2].system, clusters[4].system]
    top, third = clusters[0].system, clusters[2].system
    with pytest.raises(InputError):  # a missing pair between a head and a system below it
        sig.significance_clusters([c for c in comps if {c.a, c.b} != {top, third}])


def test_difference_cis_contain_the_observed_delta():
    opts = make_options()
    fn = score_fn(opts)
    systems = _synthetic_groups(n=300, seed=3)
    for test in ("bs", "ar"):
        for c in sig.all_differences(systems, fn, test, 1000):
            assert c.ci_low < c.ci_high
            assert c.ci_low <= c.delta <= c.ci_high
            assert c.delta == pytest.approx(c.value_b - c.value_a, abs=1e-12)
            assert c.statistic == pytest.approx(abs(c.delta), abs=1e-12)
            if c.a[:2] != c.b[:2]:  # clear group differences: the interval excludes 0
                assert not c.ci_low <= 0 <= c.ci_high and c.p_value < 0.01


def test_rows_have_the_design_columns(real):
    opts, cases = real
    res = sig.paired_test(cases["C120"]["stats"][:3], score_fn(opts), "bs", 200)
    rows = [r.outcome.as_row() for r in res if r.outcome is not None]
    design = ["test", "system_a", "system_b", "delta", "statistic", "p_value", "ci_low", "ci_high"]
    assert len(rows) == 2
    for row in rows:
        assert list(row)[: len(design)] == design
        assert row["test"] == "paired_bs" and row["seed"] == 12345
        assert row["n_samples"] == 200 and row["system_a"] == res[0].name
    assert res[0].p_value is None
    assert res[1].ci_low == pytest.approx(res[1].mean - res[1].ci)


def test_block_t_reuses_the_block_protocol(real):
    opts, cases = real
    stats = cases["CD"]["stats"]
    fn = score_fn(opts)
    got = block_t(stats, fn, n_blocks=10, block_size=50)
    names = [n for n, _ in stats]
    X = np.stack([s.matrix() for _, s in stats])
    want = block_protocol(X, fn, 10, 50, systems=names).pairs
    assert len(got) == len(want) == len(stats) - 1
    for g, w in zip(got, want):
        assert g.test == "block_t" and (g.a, g.b) == (w.a, w.b)
        assert (g.statistic, g.p_value, g.ci_low, g.ci_high) == (w.statistic, w.p_value, w.ci_low, w.ci_high)
        assert g.n_samples == 10
    allp = block_t(stats, fn, n_blocks=10, block_size=50, pairs="all")
    assert len(allp) == len(stats) * (len(stats) - 1) // 2
    assert all(0 <= c.p_holm <= 1 and c.p_holm >= c.p_value for c in allp)


def test_text_output_is_sacrebleu_like(real):
    opts, cases = real
    res = sig.paired_test(cases["C120"]["stats"][:3], score_fn(opts), "bs", 200)
    text = format_paired_text(res, signature="nrefs:1|bs:200|seed:12345")
    lines = text.splitlines()
    assert "BLEU (μ ± 95% CI)" in lines[0]
    assert f"Baseline: {res[0].name}" in lines[2]
    assert f"{res[1].score:.2f} ({res[1].mean:.2f} ± {res[1].ci:.2f}) (p = {res[1].p_value:.4f})" in lines[3]
    assert "Paired bootstrap resampling test with 200 resampling trials" in text
    assert text.rstrip().endswith("BLEU       nrefs:1|bs:200|seed:12345")
    ar = sig.paired_test(cases["C120"]["stats"][:2], opts, "ar", 100)
    assert "approximate randomization test with 100 trials" in format_paired_text(ar)
    # sacrebleu's star: p <= 0.05
    r = sig.PairedResult("x", 1.0, 0.05, None, None, False, "paired_bs", 19, 1)
    assert r.significant() and not sig.PairedResult("x", 1.0, 0.0501, None, None, False, "paired_bs", 19,
                                                    1).significant()


def test_identical_system_quirk():
    """sacrebleu (MultEval's strict '>'): a system identical to the baseline gets the minimum p-value."""
    fn = score_fn(make_options())
    a = _synthetic_groups(n=50)[0][1]
    for test in ("bs", "ar"):
        res = sig.paired_test([("a", a), ("a2", a.copy())], fn, test, 99)
        assert res[1].p_value == pytest.approx(1 / 100) and res[1].delta == 0.0


def test_inputs_and_options():
    assert sig.sacrebleu_seed() == 12345 and sig.sacrebleu_seed("None") is None and sig.sacrebleu_seed("0") == 0
    assert sig.seed_label(None) == "none"
    with pytest.raises(ConfigError):
        sig.sacrebleu_seed("abc")
    with pytest.raises(ConfigError) as err:
        sig.paired_test([("a", np.ones((3, 10))), ("b", np.ones((3, 10)))], lambda s: s[..., 0], "perm")
    assert err.value.choices == list(sig.TESTS)
    with pytest.raises(InputError):
        sig.paired_test([("a", np.ones((3, 10))), ("b", np.ones((4, 10)))], lambda s: s[..., 0])
    with pytest.raises(InputError):
        sig.paired_test([("a", np.ones((3, 10))), ("a", np.ones((3, 10)))], lambda s: s[..., 0])
    with pytest.raises(InputError):
        sig.paired_test([("a", np.ones((3, 10)))], lambda s: s[..., 0])
    with pytest.raises(ConfigError):
        sig.paired_test([("a", np.ones((3, 10))), ("b", np.ones((3, 10)))], lambda s: s[..., 0], "bs", -5)
    # any vectorised score function works (here: plain float64, no resampled attribute)
    res = sig.paired_test(_synthetic_groups(n=60)[:2], lambda s: 100.0 * s[..., 2] / s[..., 6], "bs", 100)
    assert res[1].p_value is not None and res[1].mean is not None


def test_exact_mean_is_statistics_mean():
    """The bootstrap mean is sacrebleu's statistics.mean exactly (both are the correctly rounded mean of the exact
    sum): on BLEU-like scores, on values spanning the whole float range, with cancellation, ties and subnormals."""
    import statistics

    rng = np.random.default_rng(8)
    cases = [list(rng.uniform(0, 100, 1000)), [0.1] * 999, [1e308, 1e308, -1e308], [5e-324, 1.0, -1.0],
             list(rng.normal(size=500) * 10.0 ** rng.integers(-300, 300, 500)), [1.0, 1e100, 1.0, -1e100],
             [2.5], [0.0, -0.0], list(np.round(rng.uniform(0, 60, 1000), 2))]
    for values in cases:
        assert sig.exact_mean(values) == statistics.mean(values), values[:3]
    assert math.isnan(sig.exact_mean([1.0, float("nan")]))
    with pytest.raises(statistics.StatisticsError):
        sig.exact_mean([])
