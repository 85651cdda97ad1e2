"""``harness-import``: mt-metrics-eval's layout and Google's MQM annotations written as dataset folders that a job
reads as they are: every text, score and document carried over unchanged (checked against the sources), the MQM
scores equal to the averages Google publishes, provenance with hashes, and bad or partial inputs one line
naming the file and line, with nothing written."""

from __future__ import annotations

import hashlib
import io
import json
import shutil

import numpy as np
import pandas as pd
import pytest

from harness.import_data import main
from harness.importers.mqm import weight
from harness.job.spec import build_spec
from harness.runner import run_job
from support import REPO, base_config, read_lines

MTME = REPO / "tests" / "data" / "mtme_wmt21" / "wmt21.news"
MQM = REPO / "tests" / "data" / "mqm_ted_ende_small"


def imported(tmp_path, *argv):
    out = tmp_path / "ds"
    assert main([*argv, str(out)]) == 0
    return out


def job(tmp_path, root, **extra):
    cfg = base_config(tmp_path, dataset={"root": str(root)}, **extra)
    return run_job(build_spec(cfg, [f"dataset.root={root}"]), "", io.StringIO()).folder


def test_an_mtme_pair_becomes_a_dataset_carried_over_unchanged(tmp_path, capsys):
    out = imported(tmp_path, "mtme", str(MTME), "--lp", "ru-en", "--primary-ref", "refA")
    said = capsys.readouterr().out
    assert "40 segments, 2 reference(s), 5 systems (1 human translations)" in said
    assert f"run: harness dataset.root={out}" in said
    meta = json.loads((out / "meta.json").read_text())
    assert meta["refs"] == ["refA", "refB"] and meta["human_systems"] == ["refB"] and meta["primary_ref"] == "refA"
    assert meta["target_lang"] == "en" and set(meta["human_scores"]) == {"wmt-raw", "wmt-z"}
    for rel, digest in meta["imported"]["source_sha256"].items():
        assert hashlib.sha256((MTME / rel).read_bytes()).hexdigest() == digest
    for rel, digest in meta["imported"]["written_sha256"].items():
        assert hashlib.sha256((out / rel).read_bytes()).hexdigest() == digest
    assert read_lines(out / "refs" / "refA.txt") == read_lines(MTME / "references" / "ru-en.refA.txt")
    assert read_lines(out / "systems" / "Online-W.txt") == read_lines(MTME / "system-outputs" / "ru-en" / "Online-W.txt")
    seg = pd.read_csv(out / "human" / "wmt-z.seg.tsv", sep="\t")
    source = [line.split() for line in read_lines(MTME / "human-scores" / "ru-en.wmt-z.seg.score")]
    expected = [(s, i % 40, float(v)) for i, (s, v) in enumerate(source) if v != "None"]
    assert list(seg.itertuples(index=False, name=None)) == expected
    docs = [line.split()[1] for line in read_lines(MTME / "documents" / "ru-en.docs")]
    assert pd.read_csv(out / "seg_map.tsv", sep="\t")["doc"].tolist() == docs
    assert sorted(p.name for p in (out / "metrics").iterdir()) == ["BLEU-refA", "COMET-refA", "COMET-refB",
                                                                    "sentBLEU-refA"]


@pytest.mark.slow
def test_a_study_of_an_imported_mtme_pair_ranks_bleu_among_the_metrics(tmp_path):
    out = imported(tmp_path, "mtme", str(MTME), "--lp", "ru-en")
    folder = job(tmp_path, out, chrf={"chrf": {"name": "chrF"}}, correlation=True, meta_eval=True, n_samples=100)
    scores = pd.read_parquet(folder / "system_scores.parquet")
    variants = set(scores["variant"])
    assert {"sacrebleu", "chrF", "BLEU-refA", "COMET-refA", "COMET-refB", "sentBLEU-refA"} <= variants
    comet_b = scores[scores["variant"] == "COMET-refB"].set_index("system")["score"]
    assert np.isnan(comet_b["refB"])  # its own reference: compared on the MT systems only
    corr = pd.read_parquet(folder / "correlations.parquet")
    b = corr[(corr["variant"] == "COMET-refB") & (corr["method"] == "pearson")]
    assert len(b) and (b["n"] == 4).all()  # refB has no human score either: the 4 MT systems
    # sentBLEU-refA, imported, is sacrebleu's sentence BLEU against refA: the job's own against refA agrees
    seg = pd.read_csv(out / "metrics" / "sentBLEU-refA" / "seg.tsv", sep="\t")
    assert len(seg) == 5 * 40
    ranks = pd.read_parquet(folder / "variant_ranking.parquet")
    assert {"COMET-refA", "chrF", "sacrebleu"} <= set(ranks["variant"])
    assert "Where BLEU stands" in (folder / "report.md").read_text()


def test_mqm_annotations_become_a_dataset_with_the_published_averages(tmp_path, capsys):
    out = imported(tmp_path, "mqm", str(MQM / "mqm_ted_ende.tsv"), "--reference", "ref", "--source-lang", "en",
                   "--target-lang", "de", "--check-averages", str(MQM / "mqm_ted_ende.avg_seg_scores.tsv"),
                   "--average-name", "ref-A=ref")
    said = capsys.readouterr().out
    assert "segment scores equal mqm_ted_ende.avg_seg_scores.tsv on all" in said
    meta = json.loads((out / "meta.json").read_text())
    assert meta["primary_ref"] == "ref" and meta["imported"]["weights"]["major/non-translation!"] == 25.0
    # every MQM score equals Google's published average of its segment (6 decimals)
    published = {}
    for line in read_lines(MQM / "mqm_ted_ende.avg_seg_scores.tsv")[1:]:
        system, value, seg_id = line.split()
        published[(system, int(seg_id))] = value
    seg = pd.read_csv(out / "human" / "mqm.seg.tsv", sep="\t")
    assert len(seg) == 13 * 30
    for system, line, score in seg.itertuples(index=False, name=None):
        assert f"{score:.6f}".replace("-0.000000", "0.000000") == published[(system, line + 1)].replace(
            "-0.000000", "0.000000")
    # the texts are the rows' with the marks of error spans removed
    assert all("<v>" not in line for line in read_lines(out / "systems" / "Nemo.txt"))
    folder = job(tmp_path, out, correlation=True, n_samples=50)
    assert "Target language `de`" in (folder / "report.md").read_text()


def test_the_weights_are_mt_metrics_evals():
    assert weight("Major", "Accuracy/Mistranslation") == 5 and weight("minor", "Fluency/Punctuation") == 0.1
    assert weight("Major", "Non-translation!") == 25 and weight("No-error", "No-error") == 0
    assert weight("Minor", "Fluency/Grammar") == 1 and weight("Neutral", "Other") == 0


def broken_mtme(tmp_path, rel, text):
    root = tmp_path / "set"
    shutil.copytree(MTME, root)
    (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize("rel,text,message", [
    ("references/ru-en.refB.txt", "one line\n", "references/ru-en.refB.txt: reference refB has 1 lines, the source 40"),
    ("human-scores/ru-en.wmt-z.sys.score", "Facebook-AI 0.1 extra\n", "ru-en.wmt-z.sys.score:1: expected 'SYSTEM SCORE'"),
    ("human-scores/ru-en.wmt-z.sys.score", "Nobody 0.1\n", "ru-en.wmt-z.sys.score:1: unknown system 'Nobody'"),
    ("human-scores/ru-en.wmt-z.sys.score", "Online-W x\n", "ru-en.wmt-z.sys.score:1: score 'x' is not a number"),
    ("metric-scores/ru-en/BLEU-refA.sys.score", "Online-W None\n", "None among the scores"),
    ("human-scores/ru-en.wmt-z.seg.score", "Online-W 0.1\n", "system 'Online-W' has 1 scores, expected 40"),
])
def test_a_bad_mtme_input_is_one_line_naming_the_file_and_nothing_is_written(tmp_path, capsys, rel, text, message):
    root = broken_mtme(tmp_path, rel, text)
    assert main(["mtme", str(root), "--lp", "ru-en", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.*"))


def test_a_metric_missing_a_system_is_left_out_with_a_note(tmp_path, capsys):
    root = broken_mtme(tmp_path, "metric-scores/ru-en/BLEU-refA.sys.score", "Online-W 1.0\n")
    out = imported(tmp_path, "mtme", str(root), "--lp", "ru-en")
    assert "metric BLEU-refA (sys) left out: no scores for Facebook-AI, NiuTrans, Online-Y" in capsys.readouterr().out
    assert not (out / "metrics" / "BLEU-refA").exists()


def test_bad_mqm_inputs_and_options_are_one_line(tmp_path, capsys):
    tsv = tmp_path / "a.tsv"
    tsv.write_text("system\tdoc\n", encoding="utf-8")
    assert main(["mqm", str(tsv), "--reference", "ref", str(tmp_path / "o")]) == 1
    assert "a.tsv:1: expected a header with the columns system, doc" in capsys.readouterr().err
    assert main(["mqm", str(MQM / "mqm_ted_ende.tsv"), str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "no reference given: name the human translation" in err and "metricsystem5, ref)" in err
    rows = read_lines(MQM / "mqm_ted_ende.tsv")
    bad = rows[0:2] + [rows[2].replace("\t1\t1\t", "\t1\tone\t", 1)]
    tsv.write_text("\n".join(bad) + "\n", encoding="utf-8")
    assert main(["mqm", str(tsv), "--reference", "ref", str(tmp_path / "o")]) == 1
    assert "a.tsv:3: seg_id 'one' is not an integer" in capsys.readouterr().err
    (tmp_path / "exists").mkdir()
    assert main(["mtme", str(MTME), "--lp", "ru-en", str(tmp_path / "exists")]) == 1
    assert "the destination exists" in capsys.readouterr().err
    assert main(["mtme", str(MTME), "--lp", "ru-en", "--primary-ref", "refZ", str(tmp_path / "p")]) == 2
    assert "--primary-ref" in capsys.readouterr().err
