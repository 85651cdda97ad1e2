"""``harness-score -m chrf``: the numbers of sacrebleu's ``-m chrf`` (corpus, sentence level, paired tests,
confidence intervals) and its errors, on the shipped demo (every digit: ``--full``'s unrounded scores)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sacrebleu.metrics import CHRF

from harness.cli import main, run
from tests.support import DEMO, read_lines

REFS = [str(DEMO / "refs" / "ref-C.txt"), str(DEMO / "refs" / "ref-D.txt")]
SYSTEMS = [str(DEMO / "systems" / f"{n}.txt") for n in ("Facebook-AI", "Nemo", "HuaweiTSC")]


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-12 * max(1.0, abs(b))


@pytest.mark.parametrize("flags,options", [([], {}), pytest.param(["-cw", "2"], {"word_order": 2}, marks=pytest.mark.slow),
                                           pytest.param(["--chrf-lowercase", "--chrf-beta", "1", "-cc", "4"],
                                                        {"lowercase": True, "beta": 1, "char_order": 4},
                                                        marks=pytest.mark.slow)])
def test_corpus_chrf_of_files_equals_sacrebleu(flags, options):
    out = json.loads(run([*REFS, "-i", *SYSTEMS, "-m", "chrf", *flags, "-f", "json", "--full"]))
    refs = [read_lines(DEMO / "refs" / n) for n in ("ref-C.txt", "ref-D.txt")]
    chrf = CHRF(**options)
    assert [o["system"] for o in out] == SYSTEMS
    for obj, path in zip(out, SYSTEMS):
        theirs = chrf.corpus_score(read_lines(Path(path)), refs)
        assert close(obj["score"], theirs.score) and obj["name"] == theirs.name
    sacre_sig = str(chrf.get_signature()).split("|")
    assert out[0]["signature"].split("|")[:-1] == sacre_sig[:-1]


def test_bleu_and_chrf_together_give_one_json_list():
    out = json.loads(run([*REFS, "-i", SYSTEMS[0], "-m", "chrf", "bleu", "-f", "json", "--full"]))
    assert [o["name"] for o in out] == ["BLEU", "chrF2"]
    out = json.loads(run([*REFS, "-i", SYSTEMS[0], "-m", "chrf", "bleu"]))  # sacrebleu's: its objects, rounded
    assert [(o["name"], o["score"]) for o in out] == [("BLEU", 56.3), ("chrF2", 72.8)]
    text = run([*REFS, "-i", SYSTEMS[0], "-m", "bleu", "chrf", "-f", "text"]).splitlines()
    assert text[0].startswith("BLEU|") and text[1].lstrip().startswith("chrF2|")
    assert text[0].index("=") == text[1].index("=")  # aligned, as sacrebleu aligns them


def test_sentence_level_chrf_equals_sacrebleu():
    out = run([REFS[0], "-i", SYSTEMS[1], "-m", "chrf", "-sl", "-b", "-w", "10"]).splitlines()
    chrf = CHRF()
    hyps, refs = read_lines(Path(SYSTEMS[1])), read_lines(Path(REFS[0]))
    assert len(out) == len(hyps)
    for line, hyp, ref in zip(out, hyps, refs):
        assert line == f"{chrf.sentence_score(hyp, [ref]).score:.10f}"


@pytest.mark.parametrize("test", [pytest.param("--paired-bs", marks=pytest.mark.slow), "--paired-ar"])
def test_paired_chrf_p_values_equal_sacrebleus(test, monkeypatch):
    from sacrebleu.significance import PairedTest

    monkeypatch.setenv("SACREBLEU_SEED", "12345")
    out = json.loads(run([REFS[0], "-i", *SYSTEMS, "-m", "chrf", "-cw", "2", test, "--n-samples", "300",
                          "-f", "json", "--full"]))
    refs = [read_lines(Path(REFS[0]))]
    named = [(p, read_lines(Path(p))) for p in SYSTEMS]
    _, results = PairedTest(named, {"chrF": CHRF(word_order=2, references=refs)}, None,
                            test_type=test[-2:], n_samples=300)()
    for obj, theirs in zip(out, results["chrF2++"]):
        assert obj["p_value"] == theirs.p_value and close(obj["score"], theirs.score)


def test_chrf_confidence_equals_sacrebleus():
    out = run([REFS[0], "-i", SYSTEMS[1], "-m", "chrf", "--confidence", "-w", "4", "-f", "text"])
    chrf = CHRF(references=[read_lines(Path(REFS[0]))])
    theirs = chrf.corpus_score(read_lines(Path(SYSTEMS[1])), None, n_bootstrap=1000)
    assert out.split(" = ", 1)[1] == theirs.format(4).split(" = ", 1)[1]


def test_several_metrics_at_sentence_level_is_one_line(capsys):
    assert main([REFS[0], "-i", SYSTEMS[0], "-m", "bleu", "chrf", "-sl"]) == 1  # sacrebleu's exit status
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--metrics" in err[0] and "Only one metric can be used in sentence-level mode" in err[0]
