"""``harness-compare`` as a user runs it: files mode, ``--dataset`` mode (names and NAME@VERSION), one-line errors,
the Parquet tables next to the page, and the page in a real headless browser (Debian's ``chromium``): it renders,
its search box and length filter hide the examples they should, and it logs nothing to the console."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import sacrebleu

from harness.compare import main
from support import BIN, DEMO, read_lines, write_lines

pytestmark = pytest.mark.slow  # end to end: the fast tier (-m 'not slow') leaves it out

REFS = [str(DEMO / "refs" / f"{r}.txt") for r in ("ref-C", "ref-D")]
NEMO, UEDIN = (str(DEMO / "systems" / f"{n}.txt") for n in ("Nemo", "UEdin"))
FAST = ["--n-samples", "200"]


def test_files_mode_writes_the_page_and_the_tables(tmp_path):
    """The installed command, run under ``-X importtime`` to see what it imports: never mlflow, hydra or
    matplotlib."""
    exe = shutil.which("harness-compare") or str(BIN / "harness-compare")
    proc = subprocess.run([sys.executable, "-X", "importtime", exe, *REFS, "-i", NEMO, UEDIN, *FAST, "--format",
                           "json"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    assert "harness" in imported and not imported & {"mlflow", "hydra", "matplotlib"}
    out = json.loads(proc.stdout)
    page = tmp_path / "compare-Nemo-vs-UEdin.html"  # the default name, in the current folder
    assert out["page"] == page.name and page.is_file()
    refs = [read_lines(Path(p)) for p in REFS]
    for system, path in zip(out["systems"], (NEMO, UEDIN)):
        assert abs(system["bleu"] - sacrebleu.corpus_bleu(read_lines(Path(path)), refs).score) < 1e-9
    assert out["system_a"] == "Nemo" and out["system_b"] == "UEdin"
    assert out["paired_bs"]["delta"] == out["systems"][1]["bleu"] - out["systems"][0]["bleu"]
    assert "bs:200" in out["signature"] and "seed:12345" in out["signature"]
    for name in ("systems", "buckets", "ngrams", "examples"):
        table = pq.read_table(tmp_path / f"compare-Nemo-vs-UEdin.{name}.parquet")
        assert table.num_rows > 0 and b"signature" in table.schema.metadata
    buckets = pq.read_table(tmp_path / "compare-Nemo-vs-UEdin.buckets.parquet").to_pylist()
    assert buckets[0]["group"] == "overall" and buckets[0]["p_value"] == out["paired_bs"]["p_value"]
    html = page.read_text(encoding="utf-8")
    assert "Where the difference comes from" in html and "Nemo" in html and "UEdin" in html


def test_dataset_mode_has_source_and_human_scores(tmp_path, capsys):
    page = tmp_path / "out" / "nemo-uedin.html"
    assert main(["--dataset", str(DEMO), "Nemo", "UEdin", *FAST, "--examples", "5", "-o", str(page)]) == 0
    text = capsys.readouterr().out
    assert "MQM" in text and f"page: {page}" in text
    html = page.read_text(encoding="utf-8")
    assert 'id="human"' in html and "MQM" in html and ">source</dt>" in html
    assert (tmp_path / "out" / "nemo-uedin.examples.parquet").is_file()


@pytest.fixture()
def versions(tmp_path) -> Path:
    """A dataset folder with two versions of one system (and another system), 40 segments, one reference."""
    root = tmp_path / "ds"
    n = 40
    write_lines(root / "refs" / "ref-C.txt", read_lines(DEMO / "refs" / "ref-C.txt")[:n])
    write_lines(root / "systems" / "mt@1.txt", read_lines(DEMO / "systems" / "Nemo.txt")[:n])
    write_lines(root / "systems" / "mt@2.txt", read_lines(DEMO / "systems" / "UEdin.txt")[:n])
    write_lines(root / "systems" / "mt@10.txt", read_lines(DEMO / "systems" / "Online-W.txt")[:n])
    write_lines(root / "systems" / "other.txt", read_lines(DEMO / "systems" / "Online-W.txt")[:n])
    return root


def test_versions_of_one_system(versions, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["--dataset", str(versions), "mt", *FAST, "--format", "json"]) == 0  # the last two versions
    out = json.loads(capsys.readouterr().out)
    assert (out["system_a"], out["system_version_a"], out["system_b"], out["system_version_b"]) == \
        ("mt", "2", "mt", "10")  # natural order: @2 before @10
    assert Path(out["page"]).name == "compare-mt@2-vs-mt@10.html" and (tmp_path / out["page"]).is_file()
    assert main(["--dataset", str(versions), "mt@1", "mt@2", *FAST, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["system_version"] for s in out["systems"]] == ["1", "2"]
    assert out["human"] is None


def one_line_error(capsys, argv: list[str], status: int) -> str:
    assert main(argv) == status
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("harness-compare: error: ") and "Traceback" not in err
    return err


def test_errors_are_one_line(versions, tmp_path, capsys):
    assert "missing.txt: file not found" in one_line_error(capsys, [*REFS, "-i", NEMO, str(tmp_path / "missing.txt")],
                                                           1)
    short = write_lines(tmp_path / "short.txt", read_lines(DEMO / "systems" / "UEdin.txt")[:10])
    assert "short.txt has 10 lines" in one_line_error(capsys, [*REFS, "-i", NEMO, str(short)], 1)
    err = one_line_error(capsys, ["--dataset", str(versions), "other", "nope"], 2)
    assert "SYSTEM: unknown system 'nope'" in err and "mt@1" in err
    assert "several versions" in one_line_error(capsys, ["--dataset", str(versions), "mt", "other"], 2)
    assert "'other' has 1 version(s)" in one_line_error(capsys, ["--dataset", str(versions), "other"], 2)
    assert "--human: the dataset has no human scores of kind 'mqm'" in one_line_error(
        capsys, ["--dataset", str(versions), "mt@1", "mt@2", "--human", "mqm"], 2)
    assert "compared with itself" in one_line_error(capsys, [*REFS, "-i", NEMO, NEMO], 2)
    assert "-i: give the two systems" in one_line_error(capsys, REFS, 2)
    assert "-o: the page must be an .html file" in one_line_error(capsys, [*REFS, "-i", NEMO, UEDIN, "-o", "x.txt"], 2)
    assert "--profile" in one_line_error(capsys, [*REFS, "-i", NEMO, UEDIN, "--profile", "nltk"], 2)
    assert "--tokenize" in one_line_error(capsys, [*REFS, "-i", NEMO, UEDIN, "--tokenize", "nope"], 2)


# --------------------------------------------------------------------------------------------------------------
# The page in a real browser
# --------------------------------------------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("page") / "page.html"
    assert main(["--dataset", str(DEMO), "Nemo", "UEdin", *FAST, "--examples", "8", "-o", str(path)]) == 0
    return path


def browse(page: Path, fragment: str, tmp_path: Path) -> tuple[str, list[str]]:
    """The DOM after load (``--dump-dom``) and the console messages Chromium logged."""
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium): the page is not browser-tested")
    url = page.resolve().as_uri() + fragment
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-extensions", f"--user-data-dir={tmp_path}",
         "--enable-logging=stderr", "--v=0", "--dump-dom", url],
        capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    return proc.stdout, console


def examples(dom: str) -> dict[int, tuple[int, bool]]:
    """seg_id -> (reference length, hidden) of every example card."""
    out: dict[int, tuple[int, bool]] = {}
    for attrs in re.findall(r'<article class="ex"([^>]*)>', dom):
        seg = int(re.search(r'data-seg="(\d+)"', attrs).group(1))
        out[seg] = (int(re.search(r'data-len="(\d+)"', attrs).group(1)), "hidden" in attrs)
    return out


def test_page_renders_and_its_search_filters_the_examples(page, tmp_path):
    html = page.read_text(encoding="utf-8")
    cards = re.findall(r'<article class="ex" data-seg="(\d+)"[^>]*>(.*?)</article>', html, flags=re.S)
    # a word of one card's source that no other card contains
    word = None
    for seg, body in cards:
        for w in re.findall(r"<dt>source</dt><dd>([^<]*)</dd>", body)[0].split():
            if w.isalpha() and len(w) > 5 and sum(w.lower() in b.lower() for _, b in cards) == 1:
                word, target = w, int(seg)
                break
        if word:
            break
    assert word is not None
    dom, console = browse(page, "#search=" + urllib.parse.quote(word.upper()), tmp_path)
    assert console == []
    assert 'data-ready="1"' in dom  # the script ran
    shown = {seg for seg, (_, hidden) in examples(dom).items() if not hidden}
    assert shown == {target}
    assert re.search(r'id="shown">1 of \d+ segments shown<', dom)


def test_page_length_filter(page, tmp_path):
    dom, console = browse(page, "#minlen=20&maxlen=30", tmp_path)
    assert console == []
    cards = examples(dom)
    assert cards and any(hidden for _, hidden in cards.values()) and any(not h for _, h in cards.values())
    assert all(hidden == (not 20 <= length <= 30) for length, hidden in cards.values())
