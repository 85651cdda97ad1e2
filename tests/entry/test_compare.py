"""``harness-compare`` as a user runs it: files mode, ``--dataset`` mode (names and NAME@VERSION), more than two
systems, one-line errors naming paths as given (standard input as ``<stdin>``), nothing written unless asked, the
Parquet tables next to the page, the LaTeX tables (compiled by ``pdflatex`` where it is installed), and the page in a
real headless browser (Debian's ``chromium``): it renders, its search box and length filter hide the examples they
should, the names above its plots never run into each other, and it logs nothing to the console."""

from __future__ import annotations

import io
import json
import os
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
from support import BIN, DEMO, make_dataset, read_lines, write_lines

pytestmark = pytest.mark.slow  # end to end: the fast tier (-m 'not slow') leaves it out

REFS = [str(DEMO / "refs" / f"{r}.txt") for r in ("ref-C", "ref-D")]
NEMO, UEDIN, ONLINE_W = (str(DEMO / "systems" / f"{n}.txt") for n in ("Nemo", "UEdin", "Online-W"))
FAST = ["--n-samples", "200"]
PDFLATEX = shutil.which("pdflatex")


def test_files_mode_writes_the_page_and_the_tables(tmp_path):
    """The installed command, run under ``-X importtime`` to see what it imports: never mlflow, hydra or
    matplotlib. ``-o`` relative to the current folder: the page there and its tables next to it, named as given."""
    exe = shutil.which("harness-compare") or str(BIN / "harness-compare")
    proc = subprocess.run([sys.executable, "-X", "importtime", exe, *REFS, "-i", NEMO, UEDIN, *FAST, "--format",
                           "json", "-o", "pages/cmp.html"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    assert "harness" in imported and not imported & {"mlflow", "hydra", "matplotlib"}
    out = json.loads(proc.stdout)
    page = tmp_path / "pages" / "cmp.html"
    assert out["page"] == "pages/cmp.html" and page.is_file() and out["latex"] is None
    assert out["tables"] == {name: f"pages/cmp.{name}.parquet" for name in ("systems", "buckets", "ngrams",
                                                                               "examples")}
    assert sorted(os.listdir(tmp_path)) == ["pages"]
    refs = [read_lines(Path(p)) for p in REFS]
    for system, path in zip(out["systems"], (NEMO, UEDIN)):
        assert abs(system["bleu"] - sacrebleu.corpus_bleu(read_lines(Path(path)), refs).score) < 1e-9
    assert out["system_a"] == "Nemo" and out["system_b"] == "UEdin"
    assert out["paired_bs"]["delta"] == out["systems"][1]["bleu"] - out["systems"][0]["bleu"]
    assert "bs:200" in out["signature"] and "seed:12345" in out["signature"]
    for name in ("systems", "buckets", "ngrams", "examples"):
        table = pq.read_table(tmp_path / "pages" / f"cmp.{name}.parquet")
        assert table.num_rows > 0 and b"signature" in table.schema.metadata
    buckets = pq.read_table(tmp_path / "pages" / "cmp.buckets.parquet").to_pylist()
    assert buckets[0]["group"] == "overall" and buckets[0]["p_value"] == out["paired_bs"]["p_value"]
    html = page.read_text(encoding="utf-8")
    assert "Where the difference comes from" in html and "Nemo" in html and "UEdin" in html


@pytest.mark.parametrize("fmt", ["text", "json", "latex"])
def test_nothing_is_written_unless_asked(tmp_path, capsys, monkeypatch, fmt):
    """Every format prints and writes no file (it once wrote the page and four tables into the current folder);
    ``-o`` and ``--latex`` write exactly what they name."""
    monkeypatch.chdir(tmp_path)
    assert main([*REFS, "-i", NEMO, UEDIN, *FAST, "--examples", "2", "--format", fmt]) == 0
    printed = capsys.readouterr().out
    assert os.listdir(tmp_path) == []
    if fmt == "json":
        out = json.loads(printed)
        assert out["page"] is None and out["tables"] == {} and out["latex"] is None
    elif fmt == "latex":
        assert printed.count("\\begin{table}") == 5 and "\\toprule" in printed
    else:
        assert "no files written" in printed and "page:" not in printed
    assert main([*REFS, "-i", NEMO, UEDIN, *FAST, "--examples", "2", "--format", fmt, "--latex", "t.tex"]) == 0
    assert os.listdir(tmp_path) == ["t.tex"]
    capsys.readouterr()
    assert main([*REFS, "-i", NEMO, UEDIN, *FAST, "--examples", "2", "--format", fmt, "-o", "p.html"]) == 0
    assert sorted(os.listdir(tmp_path)) == sorted(["t.tex", "p.html", *(f"p.{t}.parquet" for t in
                                                                          ("systems", "buckets", "ngrams", "examples"))])


def test_dataset_mode_has_source_and_human_scores(tmp_path, capsys):
    page = tmp_path / "out" / "nemo-uedin.html"
    assert main(["--dataset", str(DEMO), "Nemo", "UEdin", *FAST, "--examples", "5", "-o", str(page)]) == 0
    text = capsys.readouterr().out
    assert "MQM" in text and f"page: {page}" in text and "no files written" not in text
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
    assert main(["--dataset", "ds", "mt", *FAST, "--format", "json"]) == 0  # the last two versions
    out = json.loads(capsys.readouterr().out)
    assert (out["system_a"], out["system_version_a"], out["system_b"], out["system_version_b"]) == \
        ("mt", "2", "mt", "10")  # natural order: @2 before @10
    assert out["page"] is None and sorted(os.listdir(tmp_path)) == ["ds"]
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


def test_errors_name_paths_as_given(tmp_path, capsys, monkeypatch):
    """Relative paths stay as typed (no common folder in parentheses, no path made relative to it), standard input
    is ``<stdin>``, a dataset's files are named under the folder as given."""
    work, other = tmp_path / "s5", tmp_path / "other"
    write_lines(other / "ref.txt", read_lines(Path(REFS[0])))
    write_lines(work / "a.txt", read_lines(Path(NEMO)))
    write_lines(work / "short.txt", read_lines(Path(UEDIN))[:10])
    monkeypatch.chdir(work)
    err = one_line_error(capsys, ["../other/ref.txt", "-i", "a.txt", "short.txt"], 1)
    assert err == ("harness-compare: error: short.txt has 10 lines but ../other/ref.txt has 527; short.txt ends "
                   "after line 10\n")
    assert one_line_error(capsys, ["../other/ref.txt", "-i", "a.txt", "./nope/../x.txt"], 1) == \
        "harness-compare: error: ./nope/../x.txt: file not found\n"
    (work / "bad.txt").write_bytes(b"fine\nbad \xff\n")
    assert "error: ./bad.txt:2: invalid UTF-8" in one_line_error(capsys, ["../other/ref.txt", "-i", "a.txt",
                                                                         "./bad.txt"], 1)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\ntwo\n")))
    assert one_line_error(capsys, ["../other/ref.txt", "-i", "-", "a.txt"], 1) == \
        "harness-compare: error: <stdin> has 2 lines but ../other/ref.txt has 527; <stdin> ends after line 2\n"
    assert "-i: standard input ('-') can be read once" in one_line_error(
        capsys, ["-", "-i", "-", "a.txt"], 2)
    assert one_line_error(capsys, ["../other/ref.txt", "-i", "a.txt", "../s5/a.txt"], 2) == \
        "harness-compare: error: -i: ../s5/a.txt is given twice; a system cannot be compared with itself\n"
    write_lines(work / "b.txt", read_lines(Path(UEDIN)))
    before = (work / "a.txt").read_bytes()
    assert one_line_error(capsys, ["../other/ref.txt", "-i", "a.txt", "b.txt", "--latex", "./a.txt"], 2) == \
        "harness-compare: error: --latex: ./a.txt is an input of this comparison; it would be overwritten\n"
    assert (work / "a.txt").read_bytes() == before
    assert "--latex: give a file to write" in one_line_error(capsys, ["../other/ref.txt", "-i", "a.txt", "b.txt",
                                                                      "--latex", "-"], 2)
    assert "--latex: p.html is also written by -o p.html" in one_line_error(
        capsys, ["../other/ref.txt", "-i", "a.txt", "b.txt", "-o", "p.html", "--latex", "p.html"], 2)
    ds = tmp_path / "ds"
    write_lines(ds / "refs" / "ref-C.txt", read_lines(Path(REFS[0])))
    write_lines(ds / "systems" / "A.txt", read_lines(Path(NEMO)))
    write_lines(ds / "systems" / "B.txt", read_lines(Path(UEDIN))[:10])
    assert one_line_error(capsys, ["--dataset", "../ds", "A", "B"], 1) == (
        "harness-compare: error: ../ds/systems/B.txt has 10 lines but ../ds/refs/ref-C.txt has 527; "
        "../ds/systems/B.txt ends after line 10\n")
    # standard input read as a system: named stdin, its numbers those of its text
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(Path(UEDIN).read_bytes())))
    assert main(["../other/ref.txt", "-i", "a.txt", "-", *FAST, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["system_b"] == "stdin"
    assert out["systems"][1]["bleu"] == sacrebleu.corpus_bleu(read_lines(Path(UEDIN)),
                                                              [read_lines(Path(REFS[0]))]).score
    assert sorted(os.listdir(work)) == ["a.txt", "b.txt", "bad.txt", "short.txt"]


def test_more_than_two_systems_on_one_page(tmp_path, capsys):
    """``-i A B C`` (and ``--dataset DIR A B C``): every system on one page, each compared with the first; each
    comparison's numbers are those of comparing that pair alone."""
    page = tmp_path / "three.html"
    assert main([*REFS, "-i", NEMO, UEDIN, ONLINE_W, *FAST, "--examples", "3", "--format", "json", "-o",
                 str(page)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["baseline"] == "Nemo" and [s["system"] for s in out["systems"]] == ["Nemo", "UEdin", "Online-W"]
    assert [(c["system_a"], c["system_b"]) for c in out["comparisons"]] == [("Nemo", "UEdin"), ("Nemo", "Online-W")]
    refs = [read_lines(Path(p)) for p in REFS]
    for system, path in zip(out["systems"], (NEMO, UEDIN, ONLINE_W)):
        assert abs(system["bleu"] - sacrebleu.corpus_bleu(read_lines(Path(path)), refs).score) < 1e-9
    for pair, other in zip(out["pairs"], (UEDIN, ONLINE_W)):
        assert main([*REFS, "-i", NEMO, other, *FAST, "--examples", "3", "--format", "json"]) == 0
        alone = json.loads(capsys.readouterr().out)
        for key in ("page", "tables", "latex"):
            alone.pop(key)
        assert pair == alone
    buckets = pq.read_table(tmp_path / "three.buckets.parquet").to_pylist()
    assert {(r["system_a"], r["system_b"]) for r in buckets} == {("Nemo", "UEdin"), ("Nemo", "Online-W")}
    assert json.loads(pq.read_table(tmp_path / "three.systems.parquet").schema.metadata[b"systems"]) == \
        ["Nemo", "UEdin", "Online-W"]
    html = page.read_text(encoding="utf-8")
    tables = re.findall(r'<table class="buckets">(.*?)</table>', html, flags=re.S)
    assert len(tables) == 4  # length, sentence BLEU, words, precisions (length difference: its own layout)
    for table in tables:
        head = re.search(r"<thead>(.*?)</thead>", table, flags=re.S).group(1)
        assert all(f'title="{x}"' in head for x in ("Nemo", "UEdin", "Online-W"))
        assert head.count("</span> − <span") == 2  # UEdin − Nemo, Online-W − Nemo
    assert html.count('<h3 class="pair">') == 4  # n-grams and segments of each pair
    # dataset mode, with the human scores of each pair
    assert main(["--dataset", str(DEMO), "Nemo", "UEdin", "Online-W", *FAST, "--examples", "2"]) == 0
    text = capsys.readouterr().out
    assert "UEdin - Nemo:" in text and "Online-W - Nemo:" in text and text.count("MQM: Nemo") == 2
    assert "given twice" in one_line_error(capsys, ["--dataset", str(DEMO), "Nemo", "UEdin", "Nemo"], 2)
    assert "two systems or more" in one_line_error(capsys, [*REFS, "-i", NEMO], 2)


def _latex_rows(tex: str, label: str) -> list[list[str]]:
    """The cells of the body rows of the table labelled ``label``."""
    end = tex.index(f"\\label{{{label}}}")
    table = tex[tex.rindex("\\begin{table}", 0, end):end]
    body = table[table.index("\\midrule") + len("\\midrule"):table.index("\\bottomrule")]
    return [[c.strip() for c in row.split("&")] for row in body.strip().split("\\\\") if row.strip()]


def test_latex_export(tmp_path, capsys):
    """``--latex FILE``: booktabs tables of every breakdown (the human ones per pair), a column per system, the
    same numbers as the JSON; ``--format latex`` prints the same text; LaTeX's special characters in names are
    escaped, and the file compiles (where pdflatex is installed)."""
    ds = tmp_path / "ds"
    make_dataset(ds, n=60, systems=("Nemo", "UEdin"), human=True)
    (ds / "systems" / "Nemo.txt").rename(ds / "systems" / "my_sys&co.txt")
    tex_file = tmp_path / "tables.tex"
    human = (ds / "human" / "seg.tsv").read_text(encoding="utf-8").replace("Nemo\t", "my_sys&co\t")
    (ds / "human" / "seg.tsv").write_text(human, encoding="utf-8")
    assert main(["--dataset", str(ds), "my_sys&co", "UEdin", *FAST, "--latex", str(tex_file), "--format",
                 "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["latex"] == str(tex_file)
    tex = tex_file.read_text(encoding="utf-8")
    assert main(["--dataset", str(ds), "my_sys&co", "UEdin", *FAST, "--format", "latex"]) == 0
    assert capsys.readouterr().out == tex
    groups = [g for g in out["groups"] if g["rows"]]
    assert tex.count("\\begin{table}") == len(groups) == 7  # with the two human breakdowns
    for name in ("\\toprule", "\\midrule", "\\bottomrule"):
        assert tex.count(name) == len(groups)
    assert "my\\_sys\\&co" in tex
    assert all("my_sys&co" not in line for line in tex.splitlines() if not line.startswith("%"))
    for group in groups:
        rows = _latex_rows(tex, f"tab:compare-{group['key']}")
        assert len(rows) == len(group["rows"])
        for cells, row in zip(rows, group["rows"]):
            if group["key"] == "length_diff":
                assert cells[1:] == [str(row["n_segments"]), _tex(row["value_a"], group),
                                     str(row["n_segments_b"]), _tex(row["value_b"], group)]
                continue
            delta = _tex(row["delta"], group, sign=True) + ("^{*}" if row["p_value"] <= 0.05 else "")
            assert cells[-3:] == [_tex(row["value_a"], group), _tex(row["value_b"], group), f"${delta}$"]
    assert "$<10$" in tex and "$\\geq 60$" in tex and "$[-10,-5)$" in tex
    if PDFLATEX is None:
        pytest.skip("pdflatex is not installed: the LaTeX is not compiled")
    doc = tmp_path / "doc.tex"
    doc.write_text("\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n\\input{tables.tex}\n"
                   "\\end{document}\n", encoding="utf-8")
    proc = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and (tmp_path / "doc.pdf").is_file(), proc.stdout[-3000:]


def _tex(value, group, sign: bool = False) -> str:
    """A number as the LaTeX tables print it: 2 decimals (3 for human scores), in math mode when signed."""
    if value is None:
        return "--"
    digits = 3 if group["metric"] == "human" else 2
    value = 0.0 if round(value, digits) == 0 else value
    text = f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"
    return text if sign else f"${text}$" if text.startswith("-") else text


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


#: Appended to a copy of a page: the boxes of the two names above each forest plot, and whether one is cut.
MEASURE = """<script>(function () {
  var out = [];
  document.querySelectorAll('.who').forEach(function (w) {
    var s = w.querySelectorAll('span'), p = w.getBoundingClientRect();
    var a = s[0].getBoundingClientRect(), b = s[1].getBoundingClientRect();
    var cut = s[0].scrollWidth > s[0].clientWidth || s[1].scrollWidth > s[1].clientWidth;
    out.push([a.left, a.right, a.top, a.bottom, b.left, b.right, b.top, b.bottom, p.left, p.right,
              cut ? 1 : 0].join(','));
  });
  document.body.setAttribute('data-who', out.join(';'));
})();</script>"""


@pytest.mark.parametrize("names", [("mymodel@3000", "mymodel@4000"),
                                   ("a-rather-long-system-name@checkpoint-3000",
                                    "a-rather-long-system-name@checkpoint-4000")])
def test_the_names_above_the_plots_never_run_into_each_other(tmp_path, capsys, names):
    """The header of every forest plot says which side favours whom; two names (the issue's ``mymodel@3000`` and
    ``mymodel@4000`` ran together as 'bettermymodel@4000') sit in two boxes that do not overlap, inside the column,
    whole when they fit, else cut with an ellipsis (the whole text in the tooltip)."""
    root = tmp_path / "ds"
    write_lines(root / "refs" / "ref-C.txt", read_lines(DEMO / "refs" / "ref-C.txt")[:60])
    for name, system in zip(names, ("Nemo", "UEdin")):
        write_lines(root / "systems" / f"{name}.txt", read_lines(DEMO / "systems" / f"{system}.txt")[:60])
    page = tmp_path / "page.html"
    assert main(["--dataset", str(root), *names, *FAST, "--examples", "2", "-o", str(page)]) == 0
    capsys.readouterr()
    html = page.read_text(encoding="utf-8")
    assert f'title="◀ {names[0]} better"' in html and f'title="{names[1]} better ▶"' in html
    measured = tmp_path / "measured.html"
    measured.write_text(html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom, console = browse(measured, "", tmp_path)
    assert console == []
    found = re.search(r'data-who="([^"]*)"', dom)
    assert found is not None
    boxes = [[float(x) for x in item.split(",")] for item in found.group(1).split(";")]
    assert len(boxes) == 4  # length, sentence BLEU, words, precisions
    for a_left, a_right, a_top, a_bottom, b_left, b_right, b_top, b_bottom, left, right, _ in boxes:
        assert a_right <= b_left or a_bottom <= b_top  # apart, side by side or one above the other
        assert left - 0.5 <= a_left < a_right <= right + 0.5 and left - 0.5 <= b_left < b_right <= right + 0.5
    assert all(cut == (len(names[0]) > 20) for *_, cut in boxes)


def test_a_page_of_three_systems_renders(tmp_path):
    page = tmp_path / "three.html"
    assert main([*REFS, "-i", NEMO, UEDIN, ONLINE_W, *FAST, "--examples", "4", "-o", str(page)]) == 0
    dom, console = browse(page, "#minlen=20&maxlen=30", tmp_path)
    assert console == [] and 'data-ready="1"' in dom
    cards = re.findall(r'<article class="ex"([^>]*)>', dom)
    assert len(cards) == 16  # 4 per list, 2 lists per pair, 2 pairs
    for attrs in cards:
        length = int(re.search(r'data-len="(\d+)"', attrs).group(1))
        assert ("hidden" in attrs) == (not 20 <= length <= 30)
