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

from harness.core import meta_eval as mtme
from harness.job import report
from harness.job.analysis import analyse
from harness.job.inputs import layout_of, load_inputs
from harness.job.spec import build_spec
from harness.job.statistics import StatisticsCache, compute_statistics

from support import DEEN, DEMO, base_config, read_lines, write_lines


def analysed(tmp_path: Path, root: Path, bleu=("sacrebleu",), **overrides):
    cfg = base_config(tmp_path, bleu=bleu, n_samples=overrides.pop("n_samples", 100),
                      dataset={"root": str(root), **overrides.pop("dataset", {})}, **overrides)
    spec = build_spec(cfg, [f"dataset.root={root}"])
    inputs = load_inputs(spec, layout_of(spec))
    statistics = compute_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "cache"))
    return analyse(spec, inputs, statistics, "test")


def published(root: Path, name: str = "sys.tsv") -> dict[str, float]:
    rows = [line.split("\t") for line in read_lines(root / "human" / name)[1:]]
    return {r[0]: float(r[1]) for r in rows}


def row(result, **match):
    found = result.correlations_of(**match)
    assert len(found) == 1, (match, found)
    return found[0]


@pytest.mark.parametrize("root,kinds", [(DEMO, {"mqm": "sys.tsv"}),
                                        (DEEN, {"da_z": "sys.tsv", "da_raw": "raw_sys.tsv"})])
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
    result = analysed(tmp_path, DEEN, human={"select": "da_z"})
    judged = len(read_lines(DEEN / "human" / "seg.tsv")) - 1
    seg = row(result, human_score="da_z", refset=result.full_refset, variant="sacrebleu", level="segment",
              method="pearson", grouping="none", include_human=True).correlation
    assert seg.n == judged < 19 * 1000
    text = report.render(result)
    assert f"the {judged:,} judged (system, segment) pairs of 19,000" in text
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
    assert pa.n == 19 * 18 // 2


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
    assert any(c.comparison.test in ("perm_both", "pairs") for c in result.variant_comparisons)
    text = report.render(result)
    assert "## Ranking of the variants" in text
    # the best-variant sentence and table hold the best variant against each other once, not the rank tests
    best_vs_each = [c for c in result.variant_comparisons if c.statistic == "pearson"]
    best = best_vs_each[0].comparison.a
    others = [c.comparison.b for c in best_vs_each]
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
    without = report.render(analysed(tmp_path / "b", root, bleu=("sacrebleu", "char")))
    assert "is not a function of summed segment statistics" not in without


def test_a_dataset_without_a_title_is_named_once_in_the_heading(tmp_path):
    result = analysed(tmp_path, small(tmp_path / "one"))  # no meta.json: the title is the folder's name
    assert report.header(result).startswith("# test: one\n")
    assert report.header(dataclasses.replace(result, experiment="one")).startswith("# one\n")
