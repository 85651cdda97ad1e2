"""The tokenizer the target language picks: sacrebleu's rule (``-l SRC-TGT``: zh, ja-mecab, ko-mecab, else 13a)
for the variants that leave the tokenizer to it, WMT21's rule (char for Japanese) for ``bleu=wmt21``; from
``meta.json`` or ``dataset.target_lang``; ``harness-score -l``; a missing extra is one line naming what to
install. The job's scores are sacrebleu's own with the same language."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
import sacrebleu

from harness.cli import run as score_run
from harness.core.options import language_of, language_tokenizer
from harness.errors import ConfigError
from harness.job.spec import build_spec
from harness.runner import run_job
from harness.storage.manifest import verified_files
from harness.text import tokenizers
from support import REPO, base_config, read_lines

ENJA = REPO / "tests" / "data" / "wmt21_enja_small"


def test_the_rules_are_sacrebleus_and_wmt21s():
    assert [language_tokenizer(x) for x in ("ja", "zh", "ko", "de", "en")] == ["ja-mecab", "zh", "ko-mecab", "13a",
                                                                                "13a"]
    assert [language_tokenizer(x, "wmt21") for x in ("ja", "zh", "ko", "de")] == ["char", "zh", "13a", "13a"]
    assert [language_of(x) for x in ("ja", "zh-Hans", "pt_BR", " JA ")] == ["ja", "zh", "pt", "ja"]
    with pytest.raises(ConfigError, match="unknown rule 'wmt99'"):
        language_tokenizer("ja", "wmt99")


def spec_of(tmp_path: Path, bleu: tuple[str, ...], given: tuple[str, ...] = (), **dataset: str):
    cfg = base_config(tmp_path, bleu=bleu, dataset={"root": str(ENJA), **dataset})
    return build_spec(cfg, [f"dataset.root={ENJA}", *given])


def test_a_variant_that_leaves_the_tokenizer_to_the_language_takes_the_rules(tmp_path):
    """sacrebleu and paper (tokenize null) take ja-mecab for ja, wmt21 char; intl, the MeCab variant and hf (a
    profile that does not read the language) keep theirs; a null tokenizer without a language is 13a."""
    spec = spec_of(tmp_path, ("sacrebleu", "paper", "wmt21", "intl", "hf"))
    assert {v.name: v.options.tokenize for v in spec.variants}["sacrebleu"] == "13a"  # no language read yet
    ja = spec.for_target_language("ja")
    assert {v.name: v.options.tokenize for v in ja.variants} == {
        "sacrebleu": "ja-mecab", "paper": "ja-mecab", "wmt21": "char", "intl": "intl", "hf": "13a"}
    assert {v.name: v.language for v in ja.variants if v.language} == {
        "sacrebleu": ("ja", "sacrebleu"), "paper": ("ja", "sacrebleu"), "wmt21": ("ja", "wmt21")}
    assert ja.language_choices() == {("ja", "sacrebleu", "ja-mecab"): ["sacrebleu", "paper"],
                                     ("ja", "wmt21", "char"): ["wmt21"]}
    zh = spec_of(tmp_path, ("sacrebleu",), ("dataset.target_lang=zh",), target_lang="zh")
    assert zh.for_target_language("ja").variants[0].options.tokenize == "zh"  # the config key wins over meta.json
    cfg = base_config(tmp_path, bleu=("sacrebleu",), dataset={"root": str(ENJA)})
    cfg["bleu"]["sacrebleu"]["tokenize"] = "13a"
    mine = build_spec(cfg, [f"dataset.root={ENJA}", "bleu.sacrebleu.tokenize=13a"])
    assert mine.for_target_language("ja").variants[0].options.tokenize == "13a"  # asked for: kept
    with pytest.raises(ConfigError, match="dataset.target_lang: expected a language code"):
        spec_of(tmp_path, ("sacrebleu",), target_lang="j a")


@pytest.mark.slow
def test_a_japanese_target_dataset_is_scored_as_sacrebleu_would_with_its_language(tmp_path):
    """meta.json says ja: without being asked, the job's sacrebleu variant is sacrebleu's BLEU(trg_lang='ja')
    (ja-mecab), wmt21 is character BLEU as WMT21's table, intl stays intl; the console, the report and the
    signatures say so."""
    spec = spec_of(tmp_path, ("sacrebleu", "wmt21", "intl"))
    out = io.StringIO()
    outcome = run_job(spec, "config: test\n", out)
    folder = outcome.folder
    assert "system_scores.parquet" in verified_files(folder)
    scores = pd.read_parquet(folder / "system_scores.parquet")
    refs = [read_lines(ENJA / "refs" / "ref-A.txt")]
    peers = {"sacrebleu": sacrebleu.BLEU(trg_lang="ja"), "wmt21": sacrebleu.BLEU(tokenize="char"),
             "intl": sacrebleu.BLEU(tokenize="intl")}
    assert sorted(scores["variant"].unique()) == sorted(peers)
    for row in scores.itertuples():
        want = peers[row.variant].corpus_score(read_lines(ENJA / "systems" / f"{row.system}.txt"), refs).score
        assert row.bleu == pytest.approx(want, rel=1e-12, abs=1e-12)
    sig = dict(zip(scores["variant"], scores["signature"]))
    assert "|tok:ja-mecab-" in sig["sacrebleu"] and "|tok:char|" in sig["wmt21"] and "|tok:intl|" in sig["intl"]
    report = (folder / "report.md").read_text()
    assert "Target language `ja`: sacrebleu tokenized with `ja-mecab`, as sacrebleu -l picks it" in report
    assert "Target language `ja`: wmt21 tokenized with `char`, by the wmt21 rule" in report


def test_a_missing_extra_is_one_line_naming_what_to_install(tmp_path, monkeypatch):
    """Without MeCab, a Japanese-target job stops before any work with one line naming the pip install."""
    monkeypatch.setattr(tokenizers, "_missing_modules", lambda name: ["MeCab", "ipadic"] if name == "ja-mecab" else [])
    monkeypatch.setattr(tokenizers, "_instances", {})
    with pytest.raises(ConfigError) as err:
        run_job(spec_of(tmp_path, ("sacrebleu",)), "", io.StringIO())
    assert err.value.key == "tokenize"
    assert "pip install 'bleu-harness[ja]'" in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").rglob("system_scores.parquet"))


def test_harness_score_language_pair_picks_the_tokenizer_as_sacrebleu():
    ref, hyp = str(ENJA / "refs" / "ref-A.txt"), str(ENJA / "systems" / "NiuTrans.txt")
    refs, hyps = [read_lines(ENJA / "refs" / "ref-A.txt")], read_lines(ENJA / "systems" / "NiuTrans.txt")
    for pair, peer in (("en-ja", sacrebleu.BLEU(trg_lang="ja")), ("en-de", sacrebleu.BLEU(trg_lang="de"))):
        got = float(score_run([ref, "-i", hyp, "-l", pair, "-b", "-w", "10"]))
        assert got == pytest.approx(peer.corpus_score(hyps, refs).score, abs=1e-9)
    assert float(score_run([ref, "-i", hyp, "-l", "en-ja", "--tokenize", "char", "-b", "-w", "10"])) == pytest.approx(
        sacrebleu.BLEU(tokenize="char").corpus_score(hyps, refs).score, abs=1e-9)  # --tokenize wins
    with pytest.raises(ConfigError, match="expected SRC-TGT"):
        score_run([ref, "-i", hyp, "-l", "ja"])
