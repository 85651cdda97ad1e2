"""Metrics scored elsewhere (``metrics/NAME/{seg,sys}.tsv`` of a dataset folder) ranked beside BLEU and chrF: an
imported copy of chrF's own scores gives every statistic chrF gives (system and segment level, accuracies,
ranks), a lower-is-better copy the same once negated; the shipped COMET scores correlate as numpy says; what is
missing or malformed is one error naming the file."""

from __future__ import annotations

import io
import json
import shutil

import numpy as np
import pandas as pd
import pytest
from sacrebleu.metrics import CHRF

from harness.errors import ConfigError, InputError
from harness.job.spec import build_spec
from harness.runner import run_job
from support import RUEN, base_config, make_dataset, read_lines, write_lines

SYSTEMS = ("Nemo", "UEdin", "Online-W", "VolcTrans-AT", "ref-A")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """A demo cut (60 segments, 4 MT systems and ref-A, references ref-C and ref-D, MQM) with sacrebleu's chrF of
    every system against both references as two imported metrics: ``mine`` as is, ``mine_low`` negated with
    ``higher_is_better: false``."""
    root = make_dataset(tmp_path_factory.mktemp("metrics") / "data", n=60, systems=SYSTEMS, refs=("ref-C", "ref-D"),
                        human=True)
    refs = [read_lines(root / "refs" / f"{r}.txt") for r in ("ref-C", "ref-D")]
    chrf = CHRF()
    seg, sys_ = ["system\tseg_id\tscore"], ["system\tscore"]
    low_seg, low_sys = list(seg), list(sys_)
    for name in SYSTEMS:
        hyps = read_lines(root / "systems" / f"{name}.txt")
        sys_.append(f"{name}\t{chrf.corpus_score(hyps, refs).score!r}")
        low_sys.append(f"{name}\t{-chrf.corpus_score(hyps, refs).score!r}")
        for i, h in enumerate(hyps):
            s = chrf.sentence_score(h, [r[i] for r in refs]).score
            seg.append(f"{name}\t{i}\t{s!r}")
            low_seg.append(f"{name}\t{i}\t{-s!r}")
    write_lines(root / "metrics" / "mine" / "seg.tsv", seg)
    write_lines(root / "metrics" / "mine" / "sys.tsv", sys_)
    write_lines(root / "metrics" / "mine_low" / "seg.tsv", low_seg)
    write_lines(root / "metrics" / "mine_low" / "sys.tsv", low_sys)
    (root / "metrics" / "mine_low" / "meta.json").write_text(json.dumps({"higher_is_better": False}))
    return root


def job(tmp_path, root, **extra):
    cfg = base_config(tmp_path, dataset={"root": str(root)}, chrf={"chrf": {"name": "chrF"}}, **extra)
    return run_job(build_spec(cfg, [f"dataset.root={root}"]), "config: test\n", io.StringIO()).folder


@pytest.mark.slow
def test_an_imported_copy_of_chrf_gives_every_statistic_of_chrf(tmp_path, dataset):
    folder = job(tmp_path, dataset, correlation=True, meta_eval=True, n_samples=100)
    corr = pd.read_parquet(folder / "correlations.parquet")
    keys = ["human_score", "level", "method", "grouping", "include_human"]
    ours = corr[corr["variant"] == "chrF"].set_index(keys)["value"].sort_index()
    assert len(ours) > 10
    for name in ("mine", "mine_low"):
        theirs = corr[corr["variant"] == name].set_index(keys)["value"].sort_index()
        # the segment-level statistics of chrF read its sentence scores, the copy's read the file: the same numbers
        common = ours.index.intersection(theirs.index)
        assert len(common) >= len(ours) - 4  # soft pairwise accuracy from corpus statistics is chrF's only
        np.testing.assert_allclose(theirs[common], ours[common], rtol=1e-9, atol=1e-12)
    ranks = pd.read_parquet(folder / "variant_ranking.parquet").set_index(["human_score", "level", "statistic",
                                                                           "variant"])["rank"]
    for (kind, level, statistic, variant), rank in ranks.items():
        if variant in ("mine", "mine_low"):
            assert rank == ranks[(kind, level, statistic, "chrF")]
    scores = pd.read_parquet(folder / "system_scores.parquet")
    mine = scores[scores["variant"] == "mine"].set_index("system")["score"]
    low = scores[scores["variant"] == "mine_low"]
    assert (low["metric"] == "scores").all() and low["ci_low"].isna().all()
    assert set(low["signature"].str.contains("negated:yes")) == {True}
    chrf = scores[scores["variant"] == "chrF"].set_index("system")["score"]
    np.testing.assert_allclose(mine[chrf.index], chrf, rtol=1e-12)
    report = (folder / "report.md").read_text()
    assert "Metric `mine_low` is imported" in report and "negated" in report
    assert "Where BLEU stands (human)" in report


@pytest.mark.slow
def test_the_shipped_comet_scores_correlate_as_numpy_says(tmp_path):
    cfg = base_config(tmp_path, dataset={"root": str(RUEN)}, correlation=True, n_samples=100)
    folder = run_job(build_spec(cfg, [f"dataset.root={RUEN}"]), "", io.StringIO()).folder
    corr = pd.read_parquet(folder / "correlations.parquet")
    scores = pd.read_parquet(folder / "system_scores.parquet")
    human = pd.read_csv(RUEN / "human" / "sys.tsv", sep="\t").set_index("system")["score"]
    for name in ("COMET-ref-A", "COMET-ref-B"):
        comet = pd.read_csv(RUEN / "metrics" / name / "sys.tsv", sep="\t").set_index("system")["score"]
        got = scores[scores["variant"] == name].set_index("system")["score"]
        assert got.to_dict() == comet.to_dict()
        row = corr[(corr["variant"] == name) & (corr["human_score"] == "da_z") & (corr["level"] == "system")
                   & (corr["method"] == "pearson")]
        assert row["value"].iloc[0] == pytest.approx(np.corrcoef(comet[human.index], human)[0, 1], rel=1e-12)
        assert corr[(corr["variant"] == name) & (corr["level"] == "segment")].empty  # system scores only


def copy_with(tmp_path, dataset, name: str, rows: list[str], file: str = "sys.tsv"):
    root = tmp_path / "data"
    shutil.copytree(dataset, root)
    write_lines(root / "metrics" / name / file, rows)
    return root


@pytest.mark.parametrize("rows,file,message", [
    (["system\tscore", "Nemo\t1", "UEdin\t2"], "sys.tsv", "metric 'bad' has no score for system 'Online-W'"),
    (["system\tseg_id\tscore", "Nemo\t0\t1"], "seg.tsv", "metric 'bad' scores 1 of 60 segments of system 'Nemo'"),
    (["system\tscore", "Nemo\tmany"], "sys.tsv", "bad/sys.tsv:2"),
    (["system\tscore", "Nobody\t1"], "sys.tsv", "Nobody"),
])
def test_a_metric_with_missing_or_bad_scores_is_one_error_naming_its_file(tmp_path, dataset, rows, file, message):
    root = copy_with(tmp_path, dataset, "bad", rows, file)
    with pytest.raises(InputError) as err:
        job(tmp_path, root)
    text = str(err.value)
    assert message in text and "\n" not in text
    assert not list((tmp_path / "runs").rglob("system_scores.parquet"))


@pytest.mark.slow
def test_metrics_selects_and_names_the_choices(tmp_path, dataset):
    folder = job(tmp_path, dataset, metrics=["mine"])
    assert set(pd.read_parquet(folder / "system_scores.parquet")["variant"]) == {"sacrebleu", "chrF", "mine"}
    folder = job(tmp_path, dataset, metrics="none", output_dir=str(tmp_path / "none"))
    assert set(pd.read_parquet(folder / "system_scores.parquet")["variant"]) == {"sacrebleu", "chrF"}
    with pytest.raises(ConfigError, match="no metric 'comet'.*mine"):
        job(tmp_path, dataset, metrics=["comet"])
    with pytest.raises(ConfigError, match="expected all, none or a list"):
        job(tmp_path, dataset, metrics=3)


@pytest.mark.slow
def test_a_metric_without_the_human_translation_is_compared_on_the_mt_systems(tmp_path, dataset):
    """A reference-based metric has no score for its own reference, a human translation of the dataset: its
    row of that system is NaN and its correlations and WMT statistics are those of the MT systems only (never a
    statistic of the set with the human translation computed without it)."""
    rows = ["system\tscore", "Nemo\t0.5", "UEdin\t0.4", "Online-W\t0.6", "VolcTrans-AT\t0.3"]
    root = copy_with(tmp_path, dataset, "refless", rows)
    folder = job(tmp_path, root, correlation=True, meta_eval=True, n_samples=50, metrics=["refless"])
    scores = pd.read_parquet(folder / "system_scores.parquet")
    mine = scores[scores["variant"] == "refless"].set_index("system")["score"]
    assert np.isnan(mine["ref-A"]) and mine["Online-W"] == 0.6
    corr = pd.read_parquet(folder / "correlations.parquet")
    theirs = corr[corr["variant"] == "refless"]
    assert len(theirs) and not theirs["include_human"].any()
    sacre = corr[corr["variant"] == "sacrebleu"]
    assert sacre["include_human"].any() and (~sacre["include_human"]).any()
    human = pd.read_csv(root / "human" / "seg.tsv", sep="\t").groupby("system")["score"].mean()
    mt = ["Nemo", "UEdin", "Online-W", "VolcTrans-AT"]
    pearson = theirs[(theirs["level"] == "system") & (theirs["method"] == "pearson")]["value"].iloc[0]
    assert pearson == pytest.approx(np.corrcoef([0.5, 0.4, 0.6, 0.3], human[mt])[0, 1], rel=1e-12)
