"""``harness-score`` is a drop-in for the ``sacrebleu`` command: the same argument lists run through both commands
(real processes, on the first lines of the shipped WMT21 en-de files) print the same stdout and stderr and end
with the same exit status.

What may differ, and is normalised before comparing (the README lists it):

- the signature's extra fields (``order``, ``reflen``, ``profile``, ``w``, ``reweigh``; short ``n``, ``r``,
  ``p``, ``w``, ``rw``), and in JSON the keys of those fields;
- the version: ``harness:0.1.0`` where sacrebleu has ``version:2.6.0`` (short ``v:``), and the JSON ``version``;
- the prefix of the log lines on stderr: ``harness-score: `` where sacrebleu writes ``sacreBLEU: ``;
- the spaces that align the score lines of several metrics on ``=`` (our signatures are longer): ours are checked
  to be aligned.

Errors are compared by exit status, with ours one line naming the option (sacrebleu's usage errors print the usage
too, and its unsupported cases a traceback or several lines); where sacrebleu refuses with a message of its own,
ours carries its words. Everything else is compared exactly, as printed.
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.version import __version__
from support import DEMO, executable

N_LINES = 200
#: The fields only our signature has, long and short (each follows a ``|``).
EXTRA_FIELDS = re.compile(r"\|(?:order|reflen|profile|w|reweigh|n|r|p|rw):[^|\s\"]*")
EXTRA_KEYS = re.compile(r'^ *"(?:order|reflen|profile|w|reweigh)": "[^"]*",\n', re.MULTILINE)


def sacrebleu_version() -> str:
    import sacrebleu

    return sacrebleu.__version__


def normalise(text: str) -> str:
    """Our output as sacrebleu's: the signature's extra fields and their JSON keys removed, our version as its."""
    theirs = sacrebleu_version()
    text = EXTRA_KEYS.sub("", EXTRA_FIELDS.sub("", text))
    text = text.replace(f"harness:{__version__}", f"version:{theirs}").replace(f"|v:{__version__}", f"|v:{theirs}")
    return text.replace(f'"version": "{__version__}"', f'"version": "{theirs}"')


#: A score line: ``NAME|SIGNATURE = ...``, right-aligned on its ``=`` among several metrics.
SCORE_LINE = re.compile(r"^ *[^ |]+\|[^ ]+ = ")


def unaligned(text: str) -> str:
    """Score lines without the spaces that align them on ``=``: sacrebleu aligns the lines of several metrics,
    and our signatures are longer by their extra fields."""
    return "\n".join(line.lstrip() if SCORE_LINE.match(line) else line for line in text.split("\n"))


def assert_aligned(text: str) -> None:
    """Our score lines are aligned on their first ``=``, as sacrebleu aligns them."""
    columns = {line.index("=") for line in text.split("\n") if SCORE_LINE.match(line)}
    assert len(columns) <= 1, text


def normalise_stderr(text: str) -> str:
    return re.sub(r"^harness-score: ", "sacreBLEU: ", text, flags=re.MULTILINE)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """The first lines of two references and three systems, and inputs made of them: systems as tab-separated
    columns (standard input), references as tab-separated columns (``-nr 2``), gzipped and Latin-1 copies, and a
    tokenized system (every line ending in `` .``)."""
    root = tmp_path_factory.mktemp("dropin")
    files = {"ref-C.txt": DEMO / "refs" / "ref-C.txt", "ref-D.txt": DEMO / "refs" / "ref-D.txt",
             **{f"{n}.txt": DEMO / "systems" / f"{n}.txt" for n in ("Nemo", "UEdin", "Online-W")}}
    lines = {}
    for name, src in files.items():
        lines[name] = src.read_text(encoding="utf-8").split("\n")[:N_LINES]
        (root / name).write_text("\n".join(lines[name]) + "\n", encoding="utf-8")
    (root / "tabs.txt").write_text("".join(f"{a}\t{b}\n" for a, b in zip(lines["Nemo.txt"], lines["UEdin.txt"])),
                                   encoding="utf-8")
    (root / "refs.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in zip(lines["ref-C.txt"], lines["ref-D.txt"])),
                                   encoding="utf-8")
    tokenized = [re.sub(r"\.$", " .", line.rstrip()) if line.rstrip().endswith(".") else line.rstrip() + " ."
                 for line in lines["Nemo.txt"]]
    (root / "tok.txt").write_text("\n".join(tokenized) + "\n", encoding="utf-8")
    (root / "Nemo.txt.gz").write_bytes(gzip.compress((root / "Nemo.txt").read_bytes()))
    (root / "UEdin.latin1.txt").write_bytes((root / "UEdin.txt").read_text(encoding="utf-8").encode(
        "latin-1", errors="replace"))
    return root


def both(work: Path, args: list[str], stdin: str | None = None,
         **environ: str) -> tuple[subprocess.CompletedProcess, ...]:
    """``sacrebleu ARGS`` and ``harness-score ARGS``, run at once in ``work``, without the environment's
    ``$SACREBLEU_FORMAT``, ``$SACREBLEU_SEED`` and ``$NO_COLOR`` (``environ``: set these instead)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SACREBLEU_FORMAT", "SACREBLEU_SEED", "NO_COLOR")}
    env["SACREBLEU"] = str(work / "sacrebleu-home")  # never the user's test sets
    env.update(environ)
    procs = []
    feeds = []
    for command in ("sacrebleu", "harness-score"):
        feed = open(work / stdin, "rb") if stdin else subprocess.DEVNULL
        feeds.append(feed)
        procs.append(subprocess.Popen([executable(command), *args], cwd=work, env=env, stdin=feed,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    done = []
    for proc, feed in zip(procs, feeds):
        out, err = proc.communicate(timeout=120)
        if feed is not subprocess.DEVNULL:
            feed.close()
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(), err.decode()))
    return tuple(done)


SYSTEMS = ["Nemo.txt", "UEdin.txt", "Online-W.txt"]
SLOW = pytest.mark.slow


def case(name: str, args: list[str], stdin: str | None = None, *more: Any, slow: bool = True) -> Any:
    """One argument list (``stdin``: a file of ``work`` on standard input); ``slow``: left out of the fast tier,
    which keeps six cases (one system, systems on standard input, the table, two metrics, a paired test, a
    warning) and two refusals (sacrebleu's own, and a test set)."""
    return pytest.param(args, stdin, *more, id=name, marks=[SLOW] if slow else [])


#: The cases whose stdout, stderr and exit status are compared exactly.
CASES = [
    case("single", ["ref-C.txt", "-i", "Nemo.txt"], slow=False),
    case("stdin", ["ref-C.txt"], "Nemo.txt"),
    case("stdin-two-systems", ["ref-C.txt", "ref-D.txt"], "tabs.txt", slow=False),
    case("stdin-paired", ["ref-C.txt", "--paired-bs", "-pbsn", "50", "-f", "text"], "tabs.txt"),
    case("several", ["ref-C.txt", "-i", *SYSTEMS]),
    case("several-text", ["ref-C.txt", "-i", *SYSTEMS, "-f", "text", "-w", "2", "-nc"], slow=False),
    case("several-latex", ["ref-C.txt", "-i", *SYSTEMS, "-f", "latex", "-m", "bleu", "chrf"]),
    case("score-only-w3", ["ref-C.txt", "-b", "-w", "3"], "Nemo.txt"),
    case("score-only-two-metrics", ["ref-C.txt", "-i", "Nemo.txt", "-b", "-m", "bleu", "chrf"]),
    case("score-only-text", ["ref-C.txt", "-i", "Nemo.txt", "-b", "-m", "chrf", "bleu", "-f", "text"]),
    case("two-refs-w3", ["ref-C.txt", "ref-D.txt", "-i", "Nemo.txt", "-w", "3"]),
    case("json-w0", ["ref-C.txt", "-i", "Nemo.txt", "-w", "0", "-f", "json"]),
    case("bleu-chrf", ["ref-C.txt", "ref-D.txt", "-i", "Nemo.txt", "-m", "bleu", "chrf"]),
    case("bleu-chrf-text", ["ref-C.txt", "-i", "Nemo.txt", "-m", "chrf", "bleu", "-f", "text", "-w", "2"],
         slow=False),
    case("chrf++", ["ref-C.txt", "-i", "Nemo.txt", "-m", "chrf", "--chrf-word-order", "2"]),
    case("chrf-options", ["ref-C.txt", "-i", *SYSTEMS, "-m", "chrf", "-cc", "4", "--chrf-beta", "1",
                          "--chrf-lowercase", "--chrf-whitespace", "-f", "text"]),
    case("sentence-level", ["ref-C.txt", "-i", "Nemo.txt", "-sl"]),
    case("sentence-level-chrf-short", ["ref-C.txt", "ref-D.txt", "-sl", "-m", "chrf", "-sh", "-w", "2"], "Nemo.txt"),
    case("sentence-level-add-k-b", ["ref-C.txt", "-sl", "-s", "add-k", "-b", "-w", "4"], "Nemo.txt"),
    case("paired-bs", ["ref-C.txt", "-i", *SYSTEMS, "--paired-bs", "-pbsn", "100", "-j", "1"]),
    case("paired-bs-text", ["ref-C.txt", "-i", *SYSTEMS, "--paired-bs", "-pbsn", "100", "-f", "text", "-m",
                            "chrf", "bleu"]),
    case("paired-ar", ["ref-C.txt", "-i", *SYSTEMS, "--paired-ar", "-parn", "200"], slow=False),
    case("paired-ar-text", ["ref-C.txt", "ref-D.txt", "-i", *SYSTEMS, "--paired-ar", "-parn", "200", "-f", "text",
                            "-sh"]),
    case("paired-baseline-repeated", ["ref-C.txt", "-i", "Nemo.txt", "UEdin.txt", "Nemo.txt", "-par", "-parn",
                                      "100", "-f", "text"]),
    case("confidence", ["ref-C.txt", "-i", "Nemo.txt", "--confidence", "-cin", "100"]),
    case("confidence-text", ["ref-C.txt", "-i", "Nemo.txt", "-ci", "-cin", "100", "-m", "bleu", "chrf", "-f",
                             "text", "-w", "2"]),
    case("confidence-b", ["ref-C.txt", "-ci", "-cin", "100", "-b"], "Nemo.txt"),
    case("tok-intl", ["ref-C.txt", "-i", "Nemo.txt", "-tok", "intl"]),
    case("tok-char-lc", ["ref-C.txt", "-i", *SYSTEMS, "-tok", "char", "-lc", "-f", "text"]),
    case("lowercase", ["ref-C.txt", "-i", "Nemo.txt", "-lc", "-f", "text"]),
    case("floor", ["ref-C.txt", "-i", "Nemo.txt", "-s", "floor", "-sv", "0.1"]),
    case("smooth-none", ["ref-C.txt", "-i", "Nemo.txt", "-s", "none", "-f", "text"]),
    case("language-pair", ["ref-C.txt", "-i", "Nemo.txt", "-l", "en-de"]),
    case("language-pair-advice", ["ref-C.txt", "-i", "Nemo.txt", "-l", "en-zh", "-tok", "13a", "-f", "text"]),
    case("short", ["ref-C.txt", "-i", "Nemo.txt", "--short", "-f", "text"]),
    case("short-json", ["ref-C.txt", "-i", "Nemo.txt", "--short"]),
    case("short-several", ["ref-C.txt", "-i", *SYSTEMS, "--short", "-f", "text", "-m", "bleu", "chrf"]),
    case("quiet", ["ref-C.txt", "-i", "tok.txt", "UEdin.txt", "-q", "-f", "text"]),
    case("tokenized-warning", ["ref-C.txt", "-i", "tok.txt", "UEdin.txt", "Nemo.txt"], slow=False),
    case("tokenized-force", ["ref-C.txt", "-i", "tok.txt", "--force", "-f", "text"]),
    case("num-refs", ["refs.tsv", "-nr", "2", "-i", "Nemo.txt", "-f", "text"]),
    case("gzip", ["ref-C.txt", "-i", "Nemo.txt.gz", "UEdin.txt"]),
    case("encoding", ["ref-C.txt", "-i", "UEdin.latin1.txt", "-e", "latin-1", "-f", "text"]),
    case("detail", ["ref-C.txt", "-i", "Nemo.txt", "-d"]),
    case("detail-several", ["ref-C.txt", "-i", "Nemo.txt", "UEdin.txt", "-d"]),
]

#: What both refuse: exit status, and sacrebleu's words in our one line (ours otherwise).
REFUSED = [
    case("sentence-level-two-metrics", ["ref-C.txt", "-i", "Nemo.txt", "-sl", "-m", "bleu", "chrf"], None, 1,
         "Only one metric can be used in sentence-level mode."),
    case("sentence-level-two-systems", ["ref-C.txt", "-i", "Nemo.txt", "UEdin.txt", "-sl"], None, 1,
         "Only one system can be evaluated in sentence-level mode."),
    case("sentence-level-confidence", ["ref-C.txt", "-i", "Nemo.txt", "-sl", "-ci"], None, 1,
         "Statistical tests are unavailable in sentence-level mode."),
    case("paired-one-system", ["ref-C.txt", "-i", "Nemo.txt", "--paired-bs"], None, 1,
         "Paired tests require multiple input systems given to --input (-i).", slow=False),
    case("confidence-two-systems", ["ref-C.txt", "-i", "Nemo.txt", "UEdin.txt", "-ci"], None, 1,
         "Use paired tests (--paired) for multiple systems."),
    case("system-named-twice", ["ref-C.txt", "-i", "Nemo.txt", "Nemo.txt"], None, 1,
         "'Nemo.txt' already used to name a system."),
    case("num-refs-and-two-files", ["ref-C.txt", "ref-D.txt", "-nr", "2", "-i", "Nemo.txt"], None, 1,
         "The --num-refs argument allows you to provide any number of tab-delimited references in a single file"),
    case("num-refs-fields", ["ref-C.txt", "-nr", "2", "-i", "Nemo.txt"], None, 17, "expected 2"),
    case("lengths", ["ref-C.txt", "-i", str(DEMO / "systems" / "Nemo.txt")], None, 1, "lines"),
    case("bad-choice", ["ref-C.txt", "-i", "Nemo.txt", "-f", "yaml"], None, 2, "invalid choice"),
    case("no-references", ["-i", "Nemo.txt"], None, 1, "-i/--input"),
    # sacrebleu's test sets: ours says in one line to give the reference files (sacrebleu's own refusals here:
    # a test set and references, --echo or --citation without a test set)
    case("test-set", ["ref-C.txt", "-t", "wmt21", "-l", "en-de", "-i", "Nemo.txt"], None, 1, "reference files",
         slow=False),
    case("echo", ["--echo", "src"], None, 1, "reference files"),
    case("citation", ["--citation"], None, 1, "reference files"),
]


@pytest.fixture(scope="module")
def ran(request, work) -> dict[tuple[tuple[str, ...], str | None], tuple[subprocess.CompletedProcess, ...]]:
    """Both commands on every selected case of this module, run several at once (a process costs 0.3 s of
    start-up, most of a case)."""
    from concurrent.futures import ThreadPoolExecutor

    wanted = {(tuple(item.callspec.params["args"]), item.callspec.params["stdin"])
              for item in request.session.items
              if item.path == request.path and hasattr(item, "callspec") and "stdin" in item.callspec.params}
    with ThreadPoolExecutor(max_workers=2 * (os.cpu_count() or 1)) as pool:
        futures = {key: pool.submit(both, work, list(key[0]), key[1]) for key in wanted}
        return {key: future.result() for key, future in futures.items()}


@pytest.mark.parametrize("args,stdin", CASES)
def test_harness_score_prints_what_sacrebleu_prints(ran, args, stdin):
    theirs, ours = ran[tuple(args), stdin]
    assert theirs.returncode == 0, theirs.stderr
    assert (ours.returncode, normalise_stderr(ours.stderr)) == (theirs.returncode, theirs.stderr)
    assert unaligned(normalise(ours.stdout)) == unaligned(theirs.stdout)
    assert_aligned(ours.stdout)


@pytest.mark.parametrize("args,stdin,status,words", REFUSED)
def test_what_sacrebleu_refuses_is_refused_in_one_line(ran, args, stdin, status, words):
    theirs, ours = ran[tuple(args), stdin]
    assert theirs.returncode == ours.returncode == status, (theirs.stderr, ours.stderr)
    assert theirs.stdout == ours.stdout == ""
    assert theirs.stderr.strip() and "Traceback" not in ours.stderr
    assert ours.stderr.count("\n") == 1 and ours.stderr.startswith("harness-score: error: "), ours.stderr
    assert words in ours.stderr, ours.stderr


@pytest.mark.parametrize("args,flag", [
    (["-t", "wmt21", "-l", "en-de", "-i", "Nemo.txt"], "--test-set"), (["--list"], "--list"),
    (["--download", "wmt21"], "--download"), (["ref-C.txt", "--echo", "ref"], "--echo"),
    (["ref-C.txt", "-i", "Nemo.txt", "--origlang", "de"], "--origlang"),
    (["ref-C.txt", "-i", "Nemo.txt", "--subset", "news"], "--subset"), (["ref-C.txt", "-m", "ter"], "--metrics"),
], ids=["test-set", "list", "download", "echo", "origlang", "subset", "ter"])
def test_the_test_sets_and_ter_are_one_line(work, args, flag, capsys, monkeypatch):
    """What sacrebleu downloads (it would need the network here) and TER: one line naming the option and what to
    do instead, exit status 1 (2 for the metric, a bad choice of -m), before anything is read."""
    from harness.cli import main

    monkeypatch.chdir(work)
    status = main(args)
    out, err = capsys.readouterr()
    assert status == (2 if flag == "--metrics" else 1) and out == ""
    assert err.count("\n") == 1 and err.startswith(f"harness-score: error: {flag}: "), err
    assert ("reference files" in err) == (flag != "--metrics")


def test_colours_on_a_terminal_are_sacrebleus():
    """On a terminal sacrebleu colours its tables and intervals (colorama's codes): so do we, character for
    character (sacrebleu's own functions, colours on, are the oracle)."""
    import contextlib
    import io
    from argparse import Namespace

    from sacrebleu.significance import Result
    from sacrebleu.utils import Color, print_results_table, print_single_results

    from harness.score_output import results_table, single_results

    paired = {"System": ["Baseline: a.txt", "b.txt", "c.txt"],
              "BLEU": [Result(30.123, None, 30.2, 1.1), Result(31.5, 0.04, 31.4, 1.2), Result(29.9, 0.3, 30.0, 1.0)]}
    sigs = {"BLEU": "nrefs:1|bs:1000|seed:12345|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"}
    lines = ["BLEU|sig = 30.1 (μ = 30.2 ± 1.1) 60.0/40.0/30.0/20.0 (BP = 1.000 ratio = 1.000 hyp_len = 9 ref_len = 9)",
             "chrF2|sig = 55.0 (μ = 55.1 ± 0.9)"]
    saved = Color.ENABLE_COLORS
    Color.ENABLE_COLORS = True
    try:
        for fmt in ("text", "latex"):
            args = Namespace(format=fmt, width=2, paired_bs=True, paired_ar=False, paired_bs_n=1000)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                print_results_table({k: list(v) for k, v in paired.items()}, sigs, args)
            ours = results_table({"System": paired["System"], "BLEU": [vars(r) for r in paired["BLEU"]]}, sigs,
                                 fmt, 2, True, ("bs", 1000))
            assert ours + "\n" == out.getvalue()
            assert "\x1b[33mBaseline: a.txt\x1b[0m" in ours and "\x1b[31m(p = 0.3000)\x1b[0m" in ours
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            print_single_results(list(lines), Namespace(format="text"))
        assert single_results(list(lines), "text", True) + "\n" == out.getvalue()
        assert "\x1b[36m(μ = 30.2 ± 1.1)\x1b[0m" in out.getvalue()
    finally:
        Color.ENABLE_COLORS = saved


@SLOW
def test_the_environment_is_read_as_sacrebleu_reads_it(work):
    """``$SACREBLEU_FORMAT`` overrides ``-f``; ``$SACREBLEU_SEED`` seeds the tests (``none``: the signature says
    so)."""
    args = ["ref-C.txt", "-i", *SYSTEMS, "-f", "json", "--paired-bs", "-pbsn", "50"]
    theirs, ours = both(work, args, SACREBLEU_FORMAT="text", SACREBLEU_SEED="7")
    assert "seed:7" in theirs.stdout and "│" in theirs.stdout
    assert (ours.returncode, normalise_stderr(ours.stderr), normalise(ours.stdout)) == (
        theirs.returncode, theirs.stderr, theirs.stdout)
    theirs, ours = both(work, ["ref-C.txt", "-i", "Nemo.txt", "-ci", "-cin", "50", "-f", "text"],
                        SACREBLEU_SEED="none")
    assert "seed:none" in theirs.stdout and "seed:none" in ours.stdout and ours.returncode == 0


def test_our_extra_signature_fields_are_all_that_differs(work):
    """The normalisation removes only what the README lists: our JSON keys and signature fields beyond sacrebleu's
    are exactly ``order``, ``reflen``, ``profile`` (and ``w`` with --weights)."""
    import json

    theirs = both(work, ["ref-C.txt", "-i", "Nemo.txt"])[0]
    ours = both(work, ["ref-C.txt", "-i", "Nemo.txt", "--weights", "0.5", "0.5", "0", "0"])[1]
    assert ours.returncode == 0, ours.stderr
    mine = json.loads(ours.stdout)
    assert set(mine) - set(json.loads(theirs.stdout)) == {"order", "reflen", "profile", "w"}
    assert mine["signature"].endswith(f"|order:4|reflen:closest|w:0.5,0.5,0,0|profile:sacrebleu|harness:{__version__}")
