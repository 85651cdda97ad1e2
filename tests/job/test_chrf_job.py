"""chrF and chrF++ as a metric family of the job's grid: every row is sacrebleu's own number (corpus and sentence
chrF against every reference set), with intervals, paired tests between systems, clusters and correlations like
BLEU's; a chrF-only job runs."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from sacrebleu.metrics import CHRF

from harness.errors import ConfigError
from harness.job.spec import build_spec
from harness.runner import run_job
from harness.storage.manifest import verified_files
from support import base_config, read_lines

CHRF_VARIANTS = {"chrf": {"name": "chrF"}, "chrf_pp": {"name": "chrF++", "word_order": 2}}


def run(tmp_path, root, bleu=("sacrebleu",), chrf=None, **extra):
    cfg = base_config(tmp_path, bleu=bleu, dataset={"root": str(root), "refsets": "each"}, chrf=chrf or CHRF_VARIANTS,
                      **extra)
    outcome = run_job(build_spec(cfg, [f"dataset.root={root}"]), "config: test\n", io.StringIO())
    assert "system_scores.parquet" in verified_files(outcome.folder)
    return outcome.folder


def refs_of(root, used: str) -> list[list[str]]:
    return [read_lines(root / "refs" / f"{r}.txt") for r in used.split("+")]


def test_every_chrf_row_is_sacrebleus(tmp_path, small_dataset):
    folder = run(tmp_path, small_dataset, segment_table=True)
    scores = pd.read_parquet(folder / "system_scores.parquet")
    rows = scores[scores["metric"] == "chrf"]
    assert sorted(rows["variant"].unique()) == ["chrF", "chrF++"]
    assert len(rows) == 2 * 4 * 3  # variants x systems x reference sets (ref-C, ref-D, both)
    metrics = {"chrF": CHRF(), "chrF++": CHRF(word_order=2)}
    segments = pd.read_parquet(folder / "segment_scores.parquet")
    for row in rows.itertuples():
        hyps = read_lines(small_dataset / "systems" / f"{row.system}.txt")
        refs = refs_of(small_dataset, row.refs_used)
        want = metrics[row.variant].corpus_score(hyps, refs)
        assert row.score == pytest.approx(want.score, rel=1e-12, abs=1e-12)
        assert np.isnan(row.bleu) and row.precisions is None
        assert row.ci_low <= row.score <= row.ci_high
        assert row.signature.split("|")[:-1] == str(metrics[row.variant].get_signature()).split("|")[:-1]
        seg = segments[(segments["system"] == row.system) & (segments["refset"] == row.refset)
                       & (segments["variant"] == row.variant)].sort_values("seg_id")
        theirs = [metrics[row.variant].sentence_score(h, [r[i] for r in refs]).score for i, h in enumerate(hyps)]
        np.testing.assert_allclose(seg["score"], theirs, rtol=1e-12, atol=1e-12)
        assert seg["sentence_bleu"].isna().all() and seg["matches"].isna().all()
    bleu = scores[scores["metric"] == "bleu"]
    assert (bleu["score"] == bleu["bleu"]).all()


@pytest.mark.slow
def test_chrf_variants_get_paired_tests_clusters_and_correlations(tmp_path, small_dataset):
    folder = run(tmp_path, small_dataset, significance=True, correlation=True, n_samples=200)
    sig = pd.read_parquet(folder / "significance.parquet")
    assert {"chrF", "chrF++"} <= set(sig["variant"])
    scores = pd.read_parquet(folder / "system_scores.parquet")
    assert scores.loc[scores["metric"] == "chrf", "cluster"].notna().all()
    corr = pd.read_parquet(folder / "correlations.parquet")
    for variant in ("chrF", "chrF++"):
        got = corr[(corr["variant"] == variant) & (corr["level"] == "segment")]
        assert len(got) and got["value"].notna().all()
    report = (folder / "report.md").read_text()
    assert "chrF++" in report and "2 chrF" in report


@pytest.mark.slow
def test_a_chrf_only_job_runs_and_compare_asks_for_bleu(tmp_path, small_dataset):
    folder = run(tmp_path, small_dataset, bleu=())
    scores = pd.read_parquet(folder / "system_scores.parquet")
    assert set(scores["metric"]) == {"chrf"}
    cfg = base_config(tmp_path, bleu=(), dataset={"root": str(small_dataset)}, chrf=CHRF_VARIANTS,
                      compare=[["Nemo", "UEdin"]])
    with pytest.raises(ConfigError, match="comparing systems needs a BLEU variant"):
        build_spec(cfg, [])


def test_bad_chrf_options_and_clashing_names_are_one_line(tmp_path, small_dataset):
    cfg = base_config(tmp_path, dataset={"root": str(small_dataset)}, chrf={"chrf": {"name": "x", "char_order": 0}})
    with pytest.raises(ConfigError, match=r"chrf\.chrf\.char_order"):
        build_spec(cfg, [])
    cfg = base_config(tmp_path, dataset={"root": str(small_dataset)}, chrf={"chrf": {"name": "sacrebleu"}})
    with pytest.raises(ConfigError, match="unique"):
        build_spec(cfg, [])
