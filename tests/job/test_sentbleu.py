"""Segment level = WMT's sentBLEU (sacrebleu's ``sentence_bleu``: effective order on), and the WMT statistics built
on it equal mt-metrics-eval's fed those very scores.

Oracles:
- sacrebleu itself (``sacrebleu.sentence_bleu`` and ``BLEU(..., effective_order=True).sentence_score``), on real
  data (WMT21 ru-en) and on a dataset of short segments (``tests/data/short_segments``: 0-6 tokens, empty lines,
  empty references, sparse MQM-like scores with ties; built by ``tools/build_short_segments.py``);
- mt-metrics-eval (MTME, commit in the JSON) run offline by ``tools/mtme_sentbleu_oracle.py`` on sacrebleu's
  sentence scores, systems in sorted order: ``tests/data/mtme_sentbleu.json`` (MTME is not importable here: its
  PyPI name belongs to another package);
- scipy on the same judged (system, segment) pairs.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import sacrebleu
from scipy import stats as sps

from harness.core.options import make_options, sentence_options
from harness.job.analysis import analyse
from harness.job.inputs import layout_of, load_inputs
from harness.job.spec import build_spec
from harness.job.statistics import StatisticsCache, job_statistics
from harness.job.tables import segment_scores, system_scores
from support import RUEN, base_config, read_lines

HERE = Path(__file__).resolve().parent
SHORT = HERE.parent / "data" / "short_segments"
ORACLE = json.loads((HERE.parent / "data" / "mtme_sentbleu.json").read_text(encoding="utf-8"))
VARIANTS = ("sacrebleu", "intl", "char", "paper", "floor", "add-k", "lowercase")
REL = 1e-9  # the bar for the WMT statistics; sentence scores are held to 1e-12


def analysed(tmp: Path, root: Path, bleu=VARIANTS, **overrides):
    cfg = base_config(tmp, bleu=bleu, n_samples=overrides.pop("n_samples", 100), significance=False,
                      dataset={"root": str(root), **overrides.pop("dataset", {})}, **overrides)
    spec = build_spec(cfg, [f"dataset.root={root}"])
    inputs = load_inputs(spec, layout_of(spec))
    return analyse(spec, inputs, job_statistics(inputs, spec.variants, StatisticsCache(tmp / "cache")), "t")


@pytest.fixture(scope="module")
def short(tmp_path_factory):
    return analysed(tmp_path_factory.mktemp("short"), SHORT)


@pytest.fixture(scope="module")
def ruen(tmp_path_factory):
    return analysed(tmp_path_factory.mktemp("ruen"), RUEN)


def sacrebleu_sentences(root: Path, system: str, variant: str, limit: int | None = None,
                        effective_order: bool = True) -> list[float]:
    opts = ORACLE["variant_options"][variant]
    kw = {k: v for k, v in opts.items() if v is not None}
    bleu = sacrebleu.metrics.BLEU(effective_order=effective_order, **kw)
    refs = [read_lines(root / "refs" / f"{r}.txt") for r in ("ref-A", "ref-B")]
    hyps = read_lines(root / "systems" / f"{system}.txt")
    n = len(hyps) if limit is None else limit
    return [bleu.sentence_score(hyps[i], [r[i] for r in refs]).score for i in range(n)]


def row(result, **match):
    found = result.correlations_of(**match)
    assert len(found) == 1, (match, found)
    return found[0]


# ------------------------------------------------------------------------------------------ sentence scores


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_sentence_scores_are_sacrebleus_with_effective_order_on_short_segments(short, variant):
    """Segments shorter than the n-gram order, empty hypotheses and empty references: the job's sentence BLEU is
    sacrebleu's sentence score with effective order on (before, effective order was off: such segments scored ~0
    whatever they matched)."""
    for c in short.cells_of(short.full_refset, variant):
        want = sacrebleu_sentences(SHORT, c.system.label, variant)
        np.testing.assert_allclose(c.sentence, want, rtol=1e-12, atol=1e-12)
    short_lines = sum(1 for h in read_lines(SHORT / "systems" / "Nemo.txt") if 0 < len(h.split()) < 4)
    assert short_lines >= 20  # the data does exercise segments shorter than the n-gram order


@pytest.mark.slow
def test_sentence_bleu_is_sacrebleu_sentence_bleu_itself(short, ruen):
    """For the default variant, the very function WMT uses: sacrebleu.sentence_bleu (on ru-en, its first 300 lines;
    the oracle's matrix on all of short_segments)."""
    ds = ORACLE["datasets"]["short_segments"]
    got = np.stack([c.sentence for c in sorted(short.cells_of(short.full_refset, "sacrebleu"),
                                               key=lambda c: c.system.label)])
    np.testing.assert_allclose(got, np.array(ds["sentence_bleu_sacrebleu"]), rtol=1e-12, atol=1e-12)
    refs = [read_lines(RUEN / "refs" / f"{r}.txt") for r in ("ref-A", "ref-B")]
    for c in ruen.cells_of(ruen.full_refset, "sacrebleu")[:3]:
        hyps = read_lines(RUEN / "systems" / f"{c.system.label}.txt")
        want = [sacrebleu.sentence_bleu(hyps[i], [r[i] for r in refs]).score for i in range(300)]
        np.testing.assert_allclose(c.sentence[:300], want, rtol=1e-12, atol=1e-12)


def test_a_config_key_turns_effective_order_off_at_segment_level(tmp_path):
    cfg = base_config(tmp_path, n_samples=10, significance=False, dataset={"root": str(SHORT)})
    cfg["bleu"]["sacrebleu"]["sentence_effective_order"] = False
    spec = build_spec(cfg, [f"dataset.root={SHORT}"])
    inputs = load_inputs(spec, layout_of(spec))
    result = analyse(spec, inputs, job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "c")), "t")
    cells = result.cells_of(result.full_refset, "sacrebleu")
    for c in cells:
        want = sacrebleu_sentences(SHORT, c.system.label, "sacrebleu", effective_order=False)
        np.testing.assert_allclose(c.sentence, want, rtol=1e-12, atol=1e-12)
        assert "eff:no" in c.sentence_signature
    assert any(c.sentence.min() < 1e-100 for c in cells)  # a short segment without effective order scores ~0


def test_the_segment_signature_says_effective_order(short):
    seg = segment_scores(short).to_pandas()
    sys_ = system_scores(short).to_pandas()
    assert set(seg.loc[seg.variant == "sacrebleu", "signature"]) == {
        "nrefs:2|case:mixed|eff:yes|tok:13a|smooth:exp|order:4|reflen:closest|profile:sacrebleu|harness:0.1.0"}
    one = sys_[sys_.variant == "sacrebleu"].iloc[0]
    assert "eff:no" in one.signature and "eff:yes" in one.sentence_signature
    assert one.signature.replace("eff:no", "eff:yes") == one.sentence_signature
    cell = short.cells_of(short.full_refset, "paper")[0]
    got = seg[(seg.variant == "paper") & (seg.system == cell.system.label)].sentence_bleu.to_numpy()
    np.testing.assert_array_equal(got, cell.sentence)


# ------------------------------------------------------------------------------------------ WMT statistics


def _check_wmt(result, dataset: str) -> int:
    ds = ORACLE["datasets"][dataset]
    checked = 0
    for kind, kd in ds["kinds"].items():
        for variant, want in kd["variants"].items():
            spa = row(result, human_score=kind, variant=variant, method="soft_pairwise_accuracy").correlation
            assert spa.value == pytest.approx(want["soft_pairwise_accuracy"], rel=REL, abs=1e-12), (kind, variant)
            assert spa.n == len(kd["block_systems"]) * kd["n_block_segments"]
            acc = row(result, human_score=kind, variant=variant, method="acc_eq")
            assert acc.correlation.value == pytest.approx(want["acc_eq"], rel=REL, abs=1e-12), (kind, variant)
            assert acc.epsilon == pytest.approx(want["acc_eq_epsilon"], rel=REL, abs=1e-12), (kind, variant)
            pa = row(result, human_score=kind, variant=variant, method="pairwise_accuracy").correlation
            assert pa.value == pytest.approx(want["pairwise_accuracy"], rel=REL, abs=1e-12), (kind, variant)
            checked += 1
    return checked


def test_wmt_statistics_equal_mtme_fed_sentence_bleu_on_ruen(ruen):
    """Soft pairwise accuracy, acc_eq (and its epsilon) and pairwise accuracy of 7 variants x 2 kinds of DA equal
    MTME's on sacrebleu's sentence scores (sparse judgments: SPA on the segments every system has a score for)."""
    assert _check_wmt(ruen, "wmt21_news_ruen_da") == 14


def test_wmt_statistics_equal_mtme_fed_sentence_bleu_on_short_segments(short):
    """Ties in the human scores, a system without segment scores (dropped from SPA, kept in pairwise accuracy),
    segments no system has a score for."""
    assert _check_wmt(short, "short_segments") == 7


def test_soft_pairwise_accuracy_does_not_depend_on_the_order_of_the_systems(short, tmp_path):
    """MTME's one-sided p-values make SPA depend on the order of the systems (on this data MTME gives 0.6271 to
    0.6393 over the 120 orders); the job takes them sorted by name, whatever order meta.json lists."""
    copy = tmp_path / "reordered"
    shutil.copytree(SHORT, copy)
    meta = json.loads((copy / "meta.json").read_text(encoding="utf-8"))
    meta["systems"] = meta["mt_systems"] = list(reversed(meta["systems"]))
    (copy / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    again = analysed(tmp_path, copy, bleu=("sacrebleu",))
    assert [s.label for s in again.inputs.systems] != [s.label for s in short.inputs.systems]
    a = row(short, variant="sacrebleu", method="soft_pairwise_accuracy").correlation.value
    b = row(again, variant="sacrebleu", method="soft_pairwise_accuracy").correlation.value
    orders = ORACLE["datasets"]["short_segments"]["kinds"]["mqm"]["variants"]["sacrebleu"]
    assert a == b == pytest.approx(orders["soft_pairwise_accuracy"], rel=REL)
    assert orders["spa_reversed_order"] != orders["soft_pairwise_accuracy"]  # the order does matter to MTME


# ------------------------------------------------------------------------------------------ segment correlations


@pytest.mark.parametrize("kind", ["da_z", "da_raw"])
def test_segment_correlations_equal_scipy_on_the_judged_pairs(ruen, kind):
    """Pooled Pearson and Kendall tau-b of sentBLEU against DA, on the judged pairs only, are scipy's on
    sacrebleu's sentence scores of those pairs."""
    file = {"da_z": "seg.tsv", "da_raw": "raw_seg.tsv"}[kind]
    pairs = [line.split("\t") for line in read_lines(RUEN / "human" / file)[1:]]
    cells = {c.system.label: c for c in ruen.cells_of(ruen.full_refset, "sacrebleu")}
    bleu = np.array([cells[s].sentence[int(i)] for s, i, _ in pairs])
    human = np.array([float(v) for _, _, v in pairs])
    for method, fn in (("pearson", sps.pearsonr), ("kendall", sps.kendalltau)):
        got = row(ruen, human_score=kind, variant="sacrebleu", level="segment", method=method, grouping="none",
                  include_human=True).correlation
        want = fn(bleu, human)
        assert got.value == pytest.approx(want.statistic, rel=1e-12) and got.n == len(pairs)
        assert got.p_value == pytest.approx(want.pvalue, rel=1e-9, abs=1e-300)
    pearson = row(ruen, human_score=kind, variant="sacrebleu", level="segment", method="pearson", grouping="none",
                  include_human=True).correlation
    # aligned judgments: clearly above 0 (da_z 0.20, da_raw 0.10; the misaligned de-en copy gave 0.01)
    assert pearson.ci_low > 0.05 and pearson.value > (0.15 if kind == "da_z" else 0.08)


def test_sentence_options_follow_the_profile():
    for profile in ("nltk", "hf", "multi-bleu", "mteval-v13a"):
        opts = make_options(profile=profile)
        assert sentence_options(opts) == opts
    opts = make_options()
    assert sentence_options(opts).effective_order and not sentence_options(opts, False).effective_order


def test_the_report_names_the_sentence_signature(short):
    from harness.job import report

    text = report.render(short)
    assert "sentence: `nrefs:2|case:mixed|eff:yes|tok:13a|smooth:exp|" in text
    assert not math.isnan(row(short, variant="sacrebleu", method="acc_eq").baseline)
