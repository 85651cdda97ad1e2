"""`harness-score` as a user runs it: real processes, the sacrebleu CLI as the oracle, one-line errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import CANDIDATES

DATA = CANDIDATES[0]
REF_C, REF_D = str(DATA / "refs" / "ref-C.txt"), str(DATA / "refs" / "ref-D.txt")
SYS = {n: str(DATA / "systems" / f"{n}.txt") for n in ("Nemo", "UEdin", "Online-W")}
BIN = Path(sys.executable).parent


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    exe = shutil.which("harness-score") or str(BIN / "harness-score")
    proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(proc.stderr)
    return proc


def sacrebleu_cli(*args: str) -> str:
    exe = shutil.which("sacrebleu") or str(BIN / "sacrebleu")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=300, check=True).stdout


@pytest.mark.parametrize("options", [[], ["--tokenize", "intl"], ["--lowercase"], ["--smooth-method", "none"],
                                     ["--tokenize", "char", "--smooth-method", "floor", "--smooth-value", "0.2"]])
def test_scores_equal_the_sacrebleu_cli(options):
    ours = json.loads(run(REF_C, REF_D, "-i", SYS["Nemo"], "--format", "json", *options).stdout)[0]
    theirs = json.loads(sacrebleu_cli(REF_C, REF_D, "-i", SYS["Nemo"], "-f", "json", "-w", "10", *options))
    assert abs(ours["score"] - theirs["score"]) < 1e-9
    assert ours["name"] == "Nemo" and len(ours["precisions"]) == 4
    assert f"hyp_len = {ours['hyp_len']} ref_len = {ours['ref_len']}" in theirs["verbose_score"]
    assert {"score", "precisions", "bp", "ratio", "hyp_len", "ref_len", "signature"} <= set(ours)


def test_text_output_is_the_sacrebleu_score_line():
    line = run(REF_C, "-i", SYS["Nemo"]).stdout.strip()
    assert line.startswith("BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|order:4|reflen:closest|")
    theirs = sacrebleu_cli(REF_C, "-i", SYS["Nemo"], "-f", "text", "-w", "2").strip()
    assert line.split(" = ", 1)[1] == theirs.split(" = ", 1)[1]


def test_several_systems_and_tsv():
    out = run(REF_C, "-i", SYS["Nemo"], SYS["UEdin"], "--format", "tsv").stdout.splitlines()
    assert out[0].split("\t")[:2] == ["name", "score"] and [r.split("\t")[0] for r in out[1:]] == ["Nemo", "UEdin"]


def test_sentence_level_json():
    rows = json.loads(run(REF_C, "-i", SYS["Nemo"], "--sentence-level", "--format", "json").stdout)
    assert len(rows) == 527 and rows[3]["seg_id"] == 3
    theirs = sacrebleu_cli(REF_C, "-i", SYS["Nemo"], "--sentence-level", "-b", "-w", "10").split()
    assert all(abs(r["score"] - float(t)) < 1e-8 for r, t in zip(rows, theirs))


@pytest.mark.parametrize("test", ["--paired-bs", "--paired-ar"])
def test_paired_tests_equal_the_sacrebleu_cli(test):
    systems = [SYS["Nemo"], SYS["UEdin"], SYS["Online-W"]]
    extra = ["--n-samples", "2000"] if test == "--paired-ar" else []
    ours = json.loads(run(REF_C, "-i", *systems, test, "--format", "json", *extra).stdout)
    flag = "--paired-ar-n" if test == "--paired-ar" else "--paired-bs-n"
    theirs = json.loads(sacrebleu_cli(REF_C, "-i", *systems, test, flag, "2000" if extra else "1000", "-f", "json"))
    assert ours[0]["p_value"] is None
    for mine, their in zip(ours[1:], theirs[1:]):
        assert mine["p_value"] == pytest.approx(their["BLEU"]["p_value"], abs=1e-12)
    text = run(REF_C, "-i", *systems, test, *extra).stdout
    assert "Baseline: Nemo" in text and "*" in text


def test_confidence_interval_matches_sacrebleu():
    ours = json.loads(run(REF_C, "-i", SYS["Nemo"], "--confidence", "--format", "json").stdout)[0]
    theirs = json.loads(sacrebleu_cli(REF_C, "-i", SYS["Nemo"], "--confidence", "-f", "json", "-w", "10"))
    assert ours["mean"] == pytest.approx(theirs["confidence_mean"], abs=1e-6)
    assert ours["ci"] == pytest.approx(theirs["confidence_var"], abs=1e-6)
    assert ours["ci_low"] < ours["score"] < ours["ci_high"]


def test_missing_file_is_one_line(tmp_path):
    proc = run(REF_C, "-i", str(tmp_path / "nope.txt"), check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "nope.txt: file not found" in proc.stderr


def test_line_count_mismatch_names_both_files(tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("a\nb\nc\n", encoding="utf-8")
    proc = run(REF_C, "-i", str(short), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "short.txt has 3 lines" in proc.stderr and "ref-C.txt has 527" in proc.stderr


def test_invalid_utf8_names_file_line_and_byte(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nal\xffso\n")
    good = tmp_path / "good.txt"
    good.write_text("fine\nalso\n", encoding="utf-8")
    proc = run(str(good), "-i", str(bad), check=False)
    assert proc.returncode == 1 and "bad.txt:2" in proc.stderr and "byte" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_bad_option_lists_choices():
    proc = run(REF_C, "-i", SYS["Nemo"], "--smooth-method", "bogus", check=False)
    assert proc.returncode == 2 and "exp" in proc.stderr and "Traceback" not in proc.stderr


def test_does_not_import_mlflow_hydra_or_pandas():
    code = ("import sys; from harness import cli; cli.run([%r, '-i', %r]); "
            "bad = [m for m in ('mlflow', 'hydra', 'pandas', 'matplotlib') if m in sys.modules]; "
            "assert not bad, bad" % (REF_C, SYS["Nemo"]))
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
