"""The analysis of a job on real data and on dataset shapes neither public dataset has: published human scores,
several kinds, sparse judgments, the WMT statistics, the report's facts."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from harness.core import mtme
from harness.job import report
from harness.job.analysis import analyse
from harness.job.inputs import layout_of, load_inputs
from harness.job.spec import build_spec
from harness.job.statistics import StatisticsCache, job_statistics
from support import DEEN, DEMO, RUEN, base_config, read_lines, write_lines


def analysed(tmp_path: Path, root: Path, bleu=("sacrebleu",), **overrides):
    cfg = base_config(tmp_path, bleu=bleu, n_samples=overrides.pop("n_samples", 100),
                      dataset={"root": str(root), **overrides.pop("dataset", {})}, **overrides)
    spec = build_spec(cfg, [f"dataset.root={root}"])
    inputs = load_inputs(spec, layout_of(spec))
    statistics = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "cache"))
    return analyse(spec, inputs, statistics, "test")


def published(root: Path, name: str = "sys.tsv") -> dict[str, float]:
    rows = [line.split("\t") for line in read_lines(root / "human" / name)[1:]]
    return {r[0]: float(r[1]) for r in rows}


def row(result, **match):
    found = result.correlations_of(**match)
    assert len(found) == 1, (match, found)
    return found[0]


@pytest.mark.parametrize("root,kinds", [(DEMO, {"mqm": "sys.tsv"}),
                                        (DEEN, {"da_z": "sys.tsv", "da_raw": "raw_sys.tsv"}),
                                        (RUEN, {"da_z": "sys.tsv", "da_raw": "raw_sys.tsv"})])
@pytest.mark.slow
def test_system_level_correlations_equal_scipy_on_the_published_scores(tmp_path, root, kinds):
    result = analysed(tmp_path, root)
    assert {r.human_score for r in result.correlations} == set(kinds)
    full = result.full_refset
    for kind, file in kinds.items():
        sys_scores = published(root, file)
        cells = [c for c in result.cells_of(full, "sacrebleu") if not c.system.human]
        bleu = [c.score.score for c in cells]
        human = [sys_scores[c.system.label] for c in cells]
        for method, fn in (("pearson", sps.pearsonr), ("spearman", sps.spearmanr), ("kendall", sps.kendalltau)):
            r = row(result, human_score=kind, refset=full, variant="sacrebleu", level="system", method=method,
                    include_human=False if any(c.system.human for c in result.cells) else True).correlation
            want = fn(bleu, human)
            assert r.value == pytest.approx(want.statistic, rel=1e-12, abs=1e-12)
            assert r.p_value == pytest.approx(want.pvalue, rel=1e-9, abs=1e-12)
            assert r.n == len(cells) and r.ci_low <= r.value <= r.ci_high


def test_sparse_judgments_count_only_the_judged_pairs(tmp_path):
    result = analysed(tmp_path, RUEN, human={"select": "da_z"})
    judged = len(read_lines(RUEN / "human" / "seg.tsv")) - 1
    seg = row(result, human_score="da_z", refset=result.full_refset, variant="sacrebleu", level="segment",
              method="pearson", grouping="none", include_human=True).correlation
    assert seg.n == judged < 10 * 1000
    text = report.render(result)
    assert f"the {judged:,} judged (system, segment) pairs of 10,000" in text
    # the WMT statistics of the variant, on the segments every compared system has a human score for
    h = result.inputs.human[0]
    cells = result.cells_of(result.full_refset, "sacrebleu")
    hseg = np.stack([h.seg[c.system.label] for c in cells])
    sent = np.stack([c.sentence for c in cells])
    spa = row(result, human_score="da_z", variant="sacrebleu", method="soft_pairwise_accuracy").correlation
    assert spa.value == pytest.approx(mtme.soft_pairwise_accuracy(sent, hseg), rel=1e-12)
    systems, segments = mtme.complete_block(hseg)
    assert spa.n == systems.size * segments.size
    acc = row(result, human_score="da_z", variant="sacrebleu", method="acc_eq")
    want = mtme.acc_eq(sent, hseg)
    assert acc.correlation.value == pytest.approx(want.value, rel=1e-12) and acc.epsilon == want.epsilon
    assert acc.correlation.level == "segment" and acc.correlation.grouping == "item"
    pa = row(result, human_score="da_z", variant="sacrebleu", method="pairwise_accuracy").correlation
    assert pa.value == pytest.approx(mtme.pairwise_accuracy([c.score.score for c in cells],
                                                            [h.sys[c.system.label] for c in cells])[0], rel=1e-12)
    assert pa.n == 10 * 9 // 2


def test_one_kind_or_none(tmp_path):
    only = analysed(tmp_path, DEEN, human={"select": "da_raw"}, correlation=True)
    assert {r.human_score for r in only.correlations} == {"da_raw"}
    none = analysed(tmp_path, DEEN, human={"select": "none"})
    assert none.correlations == () and none.inputs.human == ()


# -------------------------------------------------------------------------------- shapes neither dataset has


def small(root: Path, n: int = 40, systems=("Nemo", "UEdin", "Online-W", "Facebook-AI"), refs=("ref-C",),
          seg: bool = True, sys_: bool = False, meta: dict | None = None, human_system: str | None = None) -> Path:
    """A dataset folder cut from the demo, with the human files asked for."""
    for r in refs:
        write_lines(root / "refs" / f"{r}.txt", read_lines(DEMO / "refs" / f"{r}.txt")[:n])
    for s in systems:
        write_lines(root / "systems" / f"{s}.txt", read_lines(DEMO / "systems" / f"{s}.txt")[:n])
    if human_system:
        write_lines(root / "systems" / f"{human_system}.txt", read_lines(DEMO / "systems" / "ref-A.txt")[:n])
    names = [*systems, *([human_system] if human_system else [])]
    source = {s: ("ref-A" if s == human_system else s) for s in names}
    lines = read_lines(DEMO / "human" / "seg.tsv")[1:]
    by = {}
    for line in lines:
        system, seg_id, score = line.split("\t")
        if int(seg_id) < n:
            by.setdefault(system, {})[int(seg_id)] = float(score)
    if seg:
        rows = [f"{s}\t{i}\t{by[source[s]][i]}" for s in names for i in range(n)]
        write_lines(root / "human" / "seg.tsv", ["system\tseg_id\tscore", *rows])
    if sys_:
        rows = [f"{s}\t{np.mean(list(by[source[s]].values())) + 0.01 * k}" for k, s in enumerate(names)]
        write_lines(root / "human" / "sys.tsv", ["system\tscore", *rows])
    if meta is not None:
        (root / "meta.json").write_text(json.dumps(meta))
    return root


def test_only_published_system_scores(tmp_path):
    root = small(tmp_path / "sysonly", seg=False, sys_=True)
    result = analysed(tmp_path, root)
    levels = {r.correlation.level for r in result.correlations}
    assert levels == {"system"}  # no segment scores: no segment level, but system level from sys.tsv
    r = row(result, variant="sacrebleu", level="system", method="pearson")
    sys_scores = published(root)
    cells = result.cells_of(result.full_refset, "sacrebleu")
    want = sps.pearsonr([c.score.score for c in cells], [sys_scores[c.system.label] for c in cells])
    assert r.correlation.value == pytest.approx(want.statistic, rel=1e-12)
    assert math.isfinite(r.correlation.ci_low)  # BLEU resampled, the published scores held fixed


def test_published_scores_that_differ_from_the_segment_means_are_used_and_said(tmp_path, caplog):
    root = small(tmp_path / "both", seg=True, sys_=True)
    result = analysed(tmp_path, root)
    h = result.inputs.human[0]
    assert set(h.differs) == {"UEdin", "Online-W", "Facebook-AI"}  # Nemo's offset is 0
    sys_scores = published(root)
    cells = result.cells_of(result.full_refset, "sacrebleu")
    r = row(result, variant="sacrebleu", level="system", method="kendall").correlation
    assert r.value == pytest.approx(sps.kendalltau([c.score.score for c in cells],
                                                   [sys_scores[c.system.label] for c in cells]).statistic)
    warned = [m for m in result.inputs.warnings if "differ from the mean of their segment scores" in m]
    assert len(warned) == 1
    assert "use the published ones" in report.render(result)


def test_lower_is_better_scores_are_oriented(tmp_path):
    higher = analysed(tmp_path / "a", small(tmp_path / "hi"))
    root = small(tmp_path / "lo", meta={"higher_is_better": False})
    # negate the scores on disk: lower is better now; the correlations must come out the same
    rows = [line.split("\t") for line in read_lines(root / "human" / "seg.tsv")[1:]]
    write_lines(root / "human" / "seg.tsv", ["system\tseg_id\tscore", *[f"{s}\t{i}\t{-float(v)}" for s, i, v in rows]])
    lower = analysed(tmp_path / "b", root)
    for a in higher.correlations:
        b = row(lower, variant=a.variant, refset=a.refset, level=a.correlation.level, method=a.correlation.method,
                grouping=a.correlation.grouping, include_human=a.include_human)
        assert b.correlation.value == pytest.approx(a.correlation.value, rel=1e-12, abs=1e-12), a


def test_one_reference_no_human_translation_report_says_nothing_it_does_not_have(tmp_path):
    result = analysed(tmp_path, small(tmp_path / "one"), bleu=("sacrebleu", "char"))
    text = report.render(result)
    assert "1 reference (ref-C)" in text and "4 MT systems;" in text
    for absent in ("human translation", "ref-A", "ref-D", "two references", "Papineni et al. (2002) report",
                   "demo", "MQM experts", "WMT21"):
        assert absent not in text, absent
    assert "**System level (human).**" in text and "on the 4 systems" in text


def test_the_report_says_r_rises_when_the_human_translation_raises_it(tmp_path):
    # a human translation that the judges like least and BLEU too: including it raises r
    root = small(tmp_path / "rises", refs=("ref-C", "ref-D"), human_system="ref-A")
    rows = [line.split("\t") for line in read_lines(root / "human" / "seg.tsv")[1:]]
    write_lines(root / "human" / "seg.tsv", ["system\tseg_id\tscore", *[
        f"{s}\t{i}\t{-30.0 if s == 'ref-A' else v}" for s, i, v in rows]])
    (root / "meta.json").write_text(json.dumps({"human_systems": ["ref-A"]}))
    result = analysed(tmp_path, root)
    mt = row(result, variant="sacrebleu", refset="ref-C+ref-D", level="system", method="pearson",
             include_human=False).correlation.value
    everyone = row(result, variant="sacrebleu", refset="ref-C+ref-D", level="system", method="pearson",
                   include_human=True).correlation.value
    assert everyone > mt
    text = report.render(result)
    assert f"r rises from {mt:.3f} to" in text and "falls" not in text.split("## Discussion")[1]
    assert "BLEU and the judges agree on its rank" in text or "BLEU puts it" in text


def test_a_human_translation_that_is_also_a_reference_is_scored_against_the_others(tmp_path):
    root = small(tmp_path / "loo", refs=("ref-C", "ref-D"), human_system="ref-C")
    result = analysed(tmp_path, root)
    cell = next(c for c in result.cells_of("ref-C+ref-D", "sacrebleu") if c.system.label == "ref-C")
    assert cell.system.human and cell.refs_used == ("ref-D",)
    assert cell.score.score < 100


def test_meta_eval_ranks_the_variants(tmp_path):
    result = analysed(tmp_path, small(tmp_path / "meta", n=60), bleu=("sacrebleu", "char", "paper", "intl"),
                      meta_eval=True, n_samples=100)
    ranked = {(r.level, r.statistic) for r in result.rankings}
    assert ("system", "pairwise_accuracy") in ranked and ("segment", "acc_eq") in ranked
    for stat in ranked:  # the clusters follow the values (higher is better): a better value never has a worse rank
        rows = sorted((r for r in result.rankings if (r.level, r.statistic) == stat), key=lambda r: -r.value)
        ranks = [r.rank for r in rows]
        assert len(rows) == 4 and ranks[0] == 1 and ranks == sorted(ranks), (stat, [(r.value, r.rank) for r in rows])
        assert sorted(set(ranks)) == list(range(1, max(ranks) + 1)), stat  # clusters numbered without gaps
    by = {(r.level, r.statistic, r.variant): r.rank for r in result.rankings}
    assert by[("system", "pearson", "paper")] == by[("system", "pearson", "sacrebleu")]  # identical: one rank
    assert any(c.outcome.test in ("perm_both", "pairs") for c in result.variant_differences)
    text = report.render(result)
    assert "## Ranking of the variants" in text and "the pair-swap test for acc_eq" in text
    # MTME's ComputeSigMatrix: every pair of the tested variants (a variant with the very scores of another one, as
    # paper and sacrebleu at system level here, is not tested: it takes that one's rank)
    for stat in ranked:
        tests = [c for c in result.variant_differences if c.statistic == f"{stat[0]}.{stat[1]}"]
        tested = {v for c in tests for v in (c.outcome.a, c.outcome.b)}
        assert len({frozenset((c.outcome.a, c.outcome.b)) for c in tests}) == len(tests)
        assert len(tests) == len(tested) * (len(tested) - 1) // 2 and len(tested) >= 3, stat
    # a job that ranks no acc_eq (system-level judgments only) does not name its test
    system_only = dataclasses.replace(result, rankings=tuple(r for r in result.rankings if r.statistic != "acc_eq"))
    assert "pair-swap" not in report.ranking_section(system_only)
    # the best-variant sentence and table hold the best variant against each other once, not the rank tests
    best_vs_each = [c for c in result.variant_differences if c.statistic == "pearson"]
    best = best_vs_each[0].outcome.a
    others = [c.outcome.b for c in best_vs_each]
    assert best not in others and len(others) == len(set(others))
    line = next(x for x in text.splitlines() if x.startswith("- **Best variant"))
    assert f"over {len(others)} comparison" in line and line.count(", " + best + ",") == 0
    table = text.split("## Which variant agrees best", 1)[1].split("\n## ", 1)[0]
    assert sum(x.startswith(f"| {best} | ") for x in table.splitlines()) == len(others)


@pytest.mark.parametrize("human_gaps", [False, True])
def test_corpus_soft_pairwise_accuracy_of_both_subsets_is_the_core_functions(tmp_path, monkeypatch, human_gaps):
    """The job's ``soft_pairwise_accuracy_corpus`` equals :func:`mtme.soft_pairwise_accuracy_corpus` on the judged
    systems, with and without the human translation. When the MT-only block has the segments of the block with
    the human translation, its p-values are read from that block's (one p-value computation per variant); when
    the human translation lacks judgments (``human_gaps``), the MT-only block has more segments and is computed
    anew."""
    from harness.core.bleu import score_fn, stack

    root = small(tmp_path / "spa", refs=("ref-C", "ref-D"), human_system="ref-A")
    (root / "meta.json").write_text(json.dumps({"human_systems": ["ref-A"]}))
    if human_gaps:
        rows = read_lines(root / "human" / "seg.tsv")
        write_lines(root / "human" / "seg.tsv", [r for r in rows if not (r.startswith("ref-A\t")
                                                                           and int(r.split("\t")[1]) % 3 == 0)])
    calls = []
    real = mtme.pairwise_p_values_corpus
    monkeypatch.setattr(mtme, "pairwise_p_values_corpus", lambda *a, **k: calls.append(a[0].shape) or real(*a, **k))
    result = analysed(tmp_path, root, bleu=("sacrebleu", "char"))
    computed = [shape[:2] for shape in calls]  # [systems, segments] of every p-value matrix the job computed
    assert computed == ([(5, 26)] * 2 + [(4, 40)] * 2 if human_gaps else [(5, 40)] * 2)
    h = result.inputs.human[0]
    for variant in ("sacrebleu", "char"):
        opts = next(v.options for v in result.spec.variants if v.name == variant)
        for include_human in (True, False):
            cells = [c for c in result.cells_of(result.full_refset, variant) if include_human or not c.system.human]
            hseg = np.stack([h.seg[c.system.label] for c in cells])
            want = mtme.soft_pairwise_accuracy_corpus(stack([c.stats for c in cells], opts), score_fn(opts), hseg)
            got = row(result, variant=variant, method="soft_pairwise_accuracy_corpus", include_human=include_human)
            assert got.correlation.value == pytest.approx(want, rel=1e-12, abs=1e-15), (variant, include_human)


def test_a_variant_without_intervals_or_tests_is_explained_in_the_notes(tmp_path):
    root = small(tmp_path / "one")
    with_nltk = report.render(analysed(tmp_path / "a", root, bleu=("sacrebleu", "nltk")))
    assert ("- Variant `nltk` (profile nltk) is not a function of summed segment statistics, so it has no bootstrap "
            "intervals and is left out of every test that resamples or permutes corpus scores") in with_nltk
    assert "Variant `sacrebleu`" not in with_nltk
    unjudged = small(tmp_path / "unjudged", seg=False)
    without = report.render(analysed(tmp_path / "b", unjudged, bleu=("sacrebleu", "nltk")))
    assert ("- Variant `nltk` (profile nltk) is not a function of summed segment statistics, so it has no bootstrap "
            "intervals and is left out of every test that resamples or permutes corpus scores; its point scores are "
            "shown.\n") in without  # no human scores here: no correlations to speak of
    without = report.render(analysed(tmp_path / "c", root, bleu=("sacrebleu", "char")))
    assert "is not a function of summed segment statistics" not in without


def test_a_dataset_without_a_title_is_named_once_in_the_heading(tmp_path):
    result = analysed(tmp_path, small(tmp_path / "one"))  # no meta.json: the title is the folder's name
    assert report.header(result).startswith("# test: one\n")
    assert report.header(dataclasses.replace(result, experiment="one")).startswith("# one\n")


# -------------------------------------------------------------------------------- significance that can be reached


def test_paired_tests_have_the_resamples_holm_needs_and_clusters_use_holm(tmp_path):
    """8 systems = 28 pairs: with 100 resamples no Holm-adjusted p could go below 28/101 = 0.28. The job raises the
    paired tests' resamples to 600 (said before the work), clusters by the adjusted p, and the table, the clusters
    in system_scores and the report agree."""
    from harness.core.significance import holm, significance_clusters
    from harness.job.tables import system_scores

    systems = ("Nemo", "UEdin", "Online-W", "Facebook-AI", "HuaweiTSC", "VolcTrans-AT", "VolcTrans-GLAT",
               "eTranslation")
    result = analysed(tmp_path, small(tmp_path / "eight", n=120, systems=systems), n_samples=100)
    tests = [c.outcome for c in result.differences if c.outcome.test == "paired_bs"]
    assert len(tests) == 28 and {t.n_samples for t in tests} == {600}
    assert 28 / (600 + 1) < 0.05
    np.testing.assert_allclose([t.p_holm for t in tests], holm([t.p_value for t in tests]), rtol=1e-15)
    want = significance_clusters(tests, alpha=0.05, holm_adjusted=True)
    assert [c.row for c in result.clusters] == want
    table = system_scores(result).to_pandas().set_index("system")["cluster"]
    assert {r.system: r.cluster for r in want} == table.to_dict()
    text = report.render(result)
    assert ("600 resamples, seed 12345; n_samples=100 raised so that Holm's correction can reach p < 0.05" in text
            and "adjusted p < 0.05" in text)
    assert len({r.cluster for r in want}) >= 2  # something is significant after the correction


def test_on_19_systems_holm_can_reach_significance(tmp_path):
    """WMT21 de-en: 171 pairs. With 1000 resamples no pair was significant after Holm (171/1001 = 0.171); with the
    3500 the job now draws, the pairs the data separates are."""
    result = analysed(tmp_path, DEEN, n_samples=1000, correlation=False, human={"select": "none"})
    tests = [c.outcome for c in result.differences]
    assert len(tests) == 171 and {t.n_samples for t in tests} == {3500}
    significant = sum(t.p_holm < 0.05 for t in tests)
    assert 50 < significant <= sum(t.p_value < 0.05 for t in tests)
    assert len({c.row.cluster for c in result.clusters}) > 3


def test_variant_significance_has_the_holm_column_the_report_prints(tmp_path):
    from harness.core.significance import holm
    from harness.job.tables import variant_significance

    result = analysed(tmp_path, small(tmp_path / "vs", n=60), bleu=("sacrebleu", "char", "intl", "floor"))
    table = variant_significance(result).to_pandas()
    assert "p_holm" in table.columns and len(table) == 3
    np.testing.assert_allclose(table.p_holm, holm(table.p_value), rtol=1e-15)
    text = report.render(result)
    for _, r in table.iterrows():
        assert f"| {r.variant_a} | {r.variant_b} |" in text and report.fmt_p(r.p_holm) in text


def test_the_paper_protocol_runs_without_human_scores(tmp_path):
    result = analysed(tmp_path, small(tmp_path / "nohuman", n=100), human={"select": "none"}, paper_protocol=True)
    assert result.inputs.human == () and result.correlations == ()
    blocks = [c for c in result.differences if c.outcome.test == "block_t"]
    assert len(blocks) == 3 and len(result.blocks) == 4  # 4 systems, t between neighbours
    assert "### Table 2 analogue" in report.render(result)


# -------------------------------------------------------------------------------- statistics beside their baselines


@pytest.mark.slow
def test_wmt_statistics_carry_their_trivial_baselines(tmp_path):
    result = analysed(tmp_path, RUEN, bleu=("sacrebleu", "char"), human={"select": "da_z"}, significance=False)
    h = result.inputs.human[0]
    labels = sorted(s.label for s in result.inputs.systems)
    hseg = np.stack([h.seg[s] for s in labels])
    # acc_eq of calling every pair a tie: the humans' tie rate per segment, averaged over segments with a pair
    rates = []
    for j in range(hseg.shape[1]):
        v = hseg[:, j][np.isfinite(hseg[:, j])]
        i, k = np.triu_indices(v.size, 1)
        if i.size:
            rates.append(np.count_nonzero(v[i] == v[k]) / i.size)
    acc = row(result, variant="char", method="acc_eq")
    assert acc.baseline == pytest.approx(np.mean(rates), rel=1e-12)
    assert row(result, variant="sacrebleu", method="pairwise_accuracy").baseline == 0.5  # no ties in DA z
    systems, segments = mtme.complete_block(hseg)
    hp = mtme.pairwise_p_values(hseg[np.ix_(systems, segments)])
    i, k = np.triu_indices(systems.size, 1)
    spa = row(result, variant="sacrebleu", method="soft_pairwise_accuracy")
    assert spa.baseline == pytest.approx(1 - np.mean(np.abs(hp[i, k] - 0.5)), rel=1e-12)
    assert all(math.isnan(r.baseline) for r in result.correlations if r.correlation.method == "pearson")
    text = report.render(result)
    assert "| *trivial baseline* | 0.500 |" in text


def test_the_report_names_a_variant_no_better_than_its_baseline(tmp_path):
    """Judges who rank the systems exactly against BLEU: pairwise accuracy 0, below ordering at random (0.5); the
    report says so, naming the variant."""
    root = small(tmp_path / "reversed", seg=False, sys_=True)
    first = analysed(tmp_path / "a", root, significance=False)
    bleu = {c.system.label: c.score.score for c in first.cells_of(first.full_refset, "sacrebleu")}
    write_lines(root / "human" / "sys.tsv", ["system\tscore", *[f"{s}\t{-v}" for s, v in bleu.items()]])
    result = analysed(tmp_path / "b", root, significance=False)
    pa = row(result, variant="sacrebleu", method="pairwise_accuracy")
    assert pa.correlation.value == 0.0 and pa.baseline == 0.5
    text = report.render(result)
    assert "No better than its baseline: pairwise accuracy: sacrebleu." in text


# -------------------------------------------------------------------------------- the report says only what is true


def test_the_wmt_paragraph_speaks_only_of_the_statistics_it_shows(tmp_path):
    """System-level judgments only: pairwise accuracy alone, its one baseline, and no word of soft pairwise
    accuracy's order of the systems or of the baselines it and acc_eq would have. With segment judgments: all of
    them."""
    wmt = "WMT meta-evaluation statistics"
    only_sys = report.render(analysed(tmp_path / "a", small(tmp_path / "sys", seg=False, sys_=True),
                                      significance=False))
    paragraph = only_sys.split(wmt, 1)[1].split("\n## ", 1)[0]
    assert "sorted order of their names" not in paragraph and "undecided" not in paragraph
    assert "calling every pair a tie" not in paragraph
    assert "Trivial baseline, on the same systems and segments: pairwise accuracy of ordering the systems at " \
           "random (0.5 of the pairs the humans order)." in paragraph
    with_seg = report.render(analysed(tmp_path / "b", small(tmp_path / "seg"), significance=False))
    paragraph = with_seg.split(wmt, 1)[1].split("\n## ", 1)[0]
    assert "Soft pairwise accuracy takes the systems in sorted order of their names" in paragraph
    assert "Trivial baselines, on the same systems and segments: pairwise accuracy of ordering the systems at " \
           "random (0.5 of the pairs the humans order), soft pairwise accuracy of a metric undecided on every pair " \
           "(every p-value 0.5), acc_eq of calling every pair a tie (the humans' tie rate)." in paragraph


def test_identical_variants_are_shown_once_only_when_every_number_is_equal(tmp_path):
    from support import bleu_config

    root = small(tmp_path / "twins", n=60)
    twin = bleu_config("sacrebleu")["sacrebleu"] | {"name": "copy"}
    cfg = base_config(tmp_path, bleu=("sacrebleu", "paper"), n_samples=100, dataset={"root": str(root)})
    cfg["bleu"]["copy"] = twin
    spec = build_spec(cfg, [f"dataset.root={root}"])
    inputs = load_inputs(spec, layout_of(spec))
    result = analyse(spec, inputs, job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "c")), "t")
    text = report.render(result)
    assert ("Variant `copy` gives every number of `sacrebleu` on this data (corpus and sentence BLEU, intervals, "
            "tests, correlations); it is shown once, as `sacrebleu`.") in text
    assert "| copy |" not in text
    same_corpus = [c.score.score for c in result.cells_of(variant="paper")] == \
        [c.score.score for c in result.cells_of(variant="sacrebleu")]
    if same_corpus:  # paper = sacrebleu at corpus level here; the sentence scores differ
        assert "Variant `paper` gives the corpus BLEU" in text and "its sentence BLEU" in text
    assert "Variant `paper` gives every number" not in text


@pytest.mark.slow
def test_each_kind_names_the_file_its_system_scores_come_from(tmp_path):
    result = analysed(tmp_path, RUEN, significance=False)
    text = report.render(result)
    assert "Human scores `da_z` (higher is better): system level from published system scores (sys.tsv)" in text
    assert "Human scores `da_raw` (higher is better): system level from published system scores (raw_sys.tsv)" \
        in text
    assert "## Correlation with human judgments: da_raw\n\nSystem level: corpus BLEU vs published system scores " \
           "(raw_sys.tsv)" in text
    assert "Segment judgments are placed on lines through `seg_map.tsv` (`da_sid` of each line, 107 documents)" \
        in text


@pytest.mark.slow
def test_the_kinds_analysed_in_forked_shares_are_those_of_one_process(tmp_path, monkeypatch):
    """ru-en's two kinds of segment judgments, each analysed in its own process on two cores (every test of the
    meta-evaluation included), give the tables one process gives with the same threads."""
    import pandas as pd

    from harness import native
    from harness.job import analysis
    from harness.job.tables import build_tables

    kw = {"bleu": ("sacrebleu", "char", "intl", "paper"), "meta_eval": True, "n_samples": 100}
    shared = build_tables(analysed(tmp_path, RUEN, **kw))
    monkeypatch.setattr(analysis, "in_shares",
                        lambda work, items, what, progress=None, raises=(): [work(i, progress) for i in items])
    with native.sharing_cpus(max(1, native.cpus() // 2)):
        single = build_tables(analysed(tmp_path, RUEN, **kw))
    assert set(shared) == set(single) and "variant_significance" in shared
    for name in shared:
        pd.testing.assert_frame_equal(shared[name].to_pandas(), single[name].to_pandas(), check_exact=False,
                                      rtol=1e-12, atol=0.0, obj=name)


@pytest.mark.slow
def test_a_job_gives_the_same_numbers_on_one_core_and_on_two(tmp_path):
    """The demo's one kind of judgments: its correlations, WMT statistics and variant tests run as pieces in
    threads (``native.thread_map``) on two cores, one after the other on one. The p-values, draws and ranks are
    the same, the other numbers to 1e-12 (BLAS on one thread in both, so not even a long dot product's last bit
    depends on the cores)."""
    import pandas as pd

    from harness import native
    from harness.job.tables import build_tables

    kw = {"bleu": ("sacrebleu", "char", "intl", "paper"), "meta_eval": True, "n_samples": 100}
    two = build_tables(analysed(tmp_path, DEMO, **kw), segments=False)
    with native.sharing_cpus(1):
        one = build_tables(analysed(tmp_path, DEMO, **kw), segments=False)
    assert set(two) == set(one) and {"variant_significance", "variant_ranking", "correlations"} <= set(two)
    for name in two:
        a, b = two[name].to_pandas(), one[name].to_pandas()
        exact = [c for c in a.columns if c in ("p_value", "n_samples", "rank", "n")]
        pd.testing.assert_frame_equal(a[exact], b[exact], check_exact=True, obj=name)
        pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-12, atol=0.0, obj=name)
