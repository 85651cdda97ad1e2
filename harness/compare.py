"""``harness-compare``: where two systems (or two versions of one, or more systems) differ, as one self-contained
HTML page, LaTeX tables, or numbers.

::

    harness-compare REF [REF ...] -i A B [C ...] [-o PAGE.html] [--latex TABLES.tex]   # files, like harness-score
    harness-compare --dataset DIR A B [C ...]                                         # systems of a dataset folder
    harness-compare --dataset DIR NAME                                                # the last two versions of NAME

It reads the texts (strict reading, equal line counts), runs :func:`harness.job.comparison.compare_systems` on one
:class:`~harness.job.comparison.ComparisonRequest` (the texts counted once through the one text pipeline; seeded:
``--seed``, ``--n-samples``) and prints the headline (``--format text``), the numbers (``json``) or the bucket
tables (``latex``). It writes files only when asked: ``-o PAGE.html`` the page and the same numbers as Parquet
tables next to it (``<page stem>.<table>.parquet``), ``--latex FILE`` the bucket tables as LaTeX (booktabs).

With more than two systems the first is the baseline: every other is compared with it (sacrebleu's
``--paired-bs``), all side by side on one page. In dataset mode the source (``src.txt``) and the human segment
scores of one kind (``--human``, default the first) come from the folder; a system that is also a reference file is
compared against the other references. In files mode one input may be ``-``, standard input (named ``<stdin>``).

Paths in messages are named as they were given (relative stays relative). A thin entry point: argument parsing,
reading, writing; the analysis and the page live in :mod:`harness.job`. Errors are one line on stderr,
``harness-compare: error: ...`` (exit 1 for bad input, 2 for a bad option), never a traceback. It imports neither
mlflow nor hydra (pyarrow imports pandas when it builds the tables, last).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from .arguments import (
    OneLineParser,
    add_bleu_arguments,
    bleu_options,
    console_command,
    int_in,
    print_collected_warnings_only,
    print_or_report,
)
from .core.options import OPTION_NAMES
from .core.resampling import DEFAULT_SEED, MAX_SEED
from .errors import ConfigError, InputError
from .text.reading import STDIN, TextFile, check_parallel, parse_text, read_bytes, read_stdin

if TYPE_CHECKING:
    from .job.comparison import ComparisonSet
    from .job.inputs import ComparedInputs as Inputs  # what a comparison reads (files mode: no human scores)

PROG = "harness-compare"
#: What ``-`` reads: standard input.
DASH = "-"


def build_parser() -> argparse.ArgumentParser:
    from .job.comparison import DEFAULT_EXAMPLES, DEFAULT_SAMPLES, DEFAULT_TOP

    p = OneLineParser(
        prog=PROG,
        description="Where systems differ: BLEU by bucket with paired bootstrap intervals, the n-grams each gets "
                    "right or over-produces, the segments that differ most; one self-contained HTML page plus "
                    "Parquet tables (-o), LaTeX tables (--latex), or the numbers (--format json).",
        epilog="Files: REF [REF ...] -i A B [C ...]. Dataset folder: --dataset DIR A B [C ...] (NAME or "
               "NAME@VERSION), or --dataset DIR NAME for its last two versions. The first system is the baseline: "
               "every difference is a system minus it. Nothing is written without -o or --latex.",
    )
    p.add_argument("items", nargs="*", metavar="REF|SYSTEM",
                   help="reference files (with -i), or the systems of --dataset")
    p.add_argument("-i", "--input", nargs="+", metavar="SYSTEM", default=None,
                   help="the system output files, two or more (the first is the baseline: deltas are each system "
                        "minus it); '-' reads one from standard input")
    p.add_argument("--dataset", metavar="DIR", default=None, help="a dataset folder (refs/, systems/, src.txt, human/)")
    p.add_argument("--refs", nargs="+", metavar="NAME", default=None,
                   help="with --dataset: the references to use (default: all)")
    p.add_argument("--human", metavar="KIND", default=None,
                   help="with --dataset: the kind of human scores to use, or 'none' (default: the first kind)")
    p.add_argument("--source", metavar="FILE", default=None, help="source file shown with the examples (files mode)")
    p.add_argument("--train", metavar="FILE", default=None,
                   help="training corpus whose word frequencies bucket the words (default: the references)")
    add_bleu_arguments(p)
    t = p.add_argument_group("resampling and lists")
    t.add_argument("--n-samples", type=int_in(1, None, "resamples"), default=DEFAULT_SAMPLES,
                   help=f"bootstrap resamples (default {DEFAULT_SAMPLES})")
    t.add_argument("--seed", type=int_in(0, MAX_SEED, "seed"), default=DEFAULT_SEED,
                   help=f"random seed (default {DEFAULT_SEED})")
    t.add_argument("--top", type=int_in(1, None, "n-grams per list"), default=DEFAULT_TOP,
                   help=f"n-grams per list (default {DEFAULT_TOP})")
    t.add_argument("--examples", type=int_in(0, None, "examples per list"), default=DEFAULT_EXAMPLES,
                   help=f"segments per example list (default {DEFAULT_EXAMPLES})")
    o = p.add_argument_group("output (nothing is written unless asked)")
    o.add_argument("-o", "--output", metavar="PAGE.html", default=None,
                   help="write the page here, and its Parquet tables next to it (<page stem>.<table>.parquet)")
    o.add_argument("--latex", metavar="FILE", default=None,
                   help="write every bucket table as LaTeX (booktabs) to FILE")
    o.add_argument("--format", "-f", default="text", choices=("text", "json", "latex"),
                   help="what to print: the headline, the numbers, or the bucket tables as LaTeX")
    return p


# --------------------------------------------------------------------------------------------------------------
# Inputs, named as given
# --------------------------------------------------------------------------------------------------------------


def shown_name(path: str) -> str:
    """How messages name a file given as ``path``: as typed, and ``<stdin>`` for ``-``."""
    return STDIN if path == DASH else path


def read_given(path: str, *, name: str | None = None, log_notes: bool = True) -> TextFile:
    """The text file ``path`` as the user gave it (``-``: standard input), its errors naming it as given."""
    if path == DASH:
        return read_stdin(name=name or "stdin")
    try:
        return parse_text(read_bytes(Path(path)), Path(path), name=name, log_notes=log_notes)
    except InputError as exc:
        if exc.path is not None and exc.path != path and exc.path == str(Path(path)):
            raise exc.relocated(path, 0, 0) from None  # the same error, naming the path as it was typed
        raise


def check_lines(texts: Sequence[tuple[str, TextFile]]) -> int:
    """Every text has the same number of lines (returned); else an :class:`InputError` naming the odd file and one
    with the most common count, both as given (:func:`~harness.text.reading.check_parallel`)."""
    return check_parallel([t for _, t in texts], [name for name, _ in texts])


def _file_labels(paths: Sequence[str]) -> tuple[str, ...]:
    """Names of the systems of files mode: their file stems (``stdin`` for ``-``), else ``folder/stem``, else the
    paths as given, whichever tells them apart."""
    stems = ["stdin" if p == DASH else Path(p).stem for p in paths]
    if len(set(stems)) == len(stems):
        return tuple(stems)
    longer = ["stdin" if p == DASH else f"{Path(p).parent.name}/{Path(p).stem}" for p in paths]
    if len(set(longer)) == len(longer):
        return tuple(longer)
    return tuple(shown_name(p) for p in paths)


def _same_file(a: str, b: str) -> bool:
    if DASH in (a, b):
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:  # a missing file: reading it says so
        return os.path.abspath(a) == os.path.abspath(b)


def files_inputs(args: argparse.Namespace) -> Inputs:
    """``REF ... -i A B [C ...]`` (and ``--source``)."""
    if args.refs is not None or args.human is not None:
        raise ConfigError("refs" if args.refs is not None else "human", "only with --dataset (in files mode every "
                          "REF given is used, and there are no human scores)")
    if not args.input:
        raise ConfigError("input", "give the two systems or more: REF [REF ...] -i A B [C ...] (or --dataset DIR "
                          "A B)")
    if len(args.input) < 2:
        raise ConfigError("input", f"give two systems or more (the first is the baseline), got one: "
                          f"{shown_name(args.input[0])}")
    if not args.items:
        raise ConfigError("input", "no reference files: REF [REF ...] -i A B")
    given = [*args.items, *args.input, *([args.source] if args.source else []), *([args.train] if args.train else [])]
    if given.count(DASH) > 1:
        raise ConfigError("input", "standard input ('-') can be read once; give the other texts as files")
    for i, a in enumerate(args.input):
        for b in args.input[i + 1:]:
            if a == b or _same_file(a, b):
                raise ConfigError("input", f"{b} is given twice; a system cannot be compared with itself")
    refs = [(shown_name(p), read_given(p)) for p in args.items]
    systems = [(shown_name(p), read_given(p)) for p in args.input]
    source = (shown_name(args.source), read_given(args.source, name="src")) if args.source else None
    named = [*refs, *systems, *([source] if source is not None else [])]
    check_lines(named)
    warnings = tuple(f"{name}: {w}" for name, t in named for w in t.warnings)
    from .job.inputs import ComparedInputs

    return ComparedInputs(_file_labels(args.input), tuple(t for _, t in systems), tuple(t for _, t in refs),
                  None if source is None else source[1], None, None, "", warnings)


def _dataset_systems(items: Sequence[str], systems: Sequence[tuple[str, str]], where: str) -> list[str]:
    """The systems of ``--dataset DIR`` to compare: two (``A B``, or ``NAME`` for its last two versions, as
    :func:`~harness.job.inputs.choose_pair`) or more, each ``NAME@VERSION`` or a ``NAME`` with one file."""
    from .job.inputs import choose_pair

    if len(items) <= 2:
        return list(choose_pair(items, systems, where))
    labels = [label for label, _ in systems]
    out: list[str] = []
    for item in items:
        if item not in labels:
            versions = [label for label, name in systems if name == item]
            if versions:
                raise ConfigError("systems", f"{item!r} has several versions; name one (NAME@VERSION)", versions,
                                  got=item)
            raise ConfigError("systems", f"unknown system {item!r} in {where}", labels, got=item)
        if item in out:
            raise ConfigError("systems", f"{item!r} is given twice; a system cannot be compared with itself")
        out.append(item)
    return out


def dataset_inputs(args: argparse.Namespace) -> Inputs:
    """``--dataset DIR A B [C ...]`` / ``--dataset DIR NAME``: texts, source and human scores from the folder; its
    files named under DIR as given."""
    from .job.dataset import read_layout

    if args.input or args.source:
        raise ConfigError("input" if args.input else "source", "not with --dataset (the systems are named after "
                          "DIR; the source is the folder's src.txt)")
    root = args.dataset
    layout = read_layout(root)
    stems = _dataset_systems(args.items, [(s.stem, s.name) for s in layout.systems],
                             os.path.join(root, "systems"))
    from .job.inputs import compared_inputs

    return compared_inputs(layout, stems, args.refs, args.human, shown_root=root)  # files named under DIR as given


# --------------------------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What a run produced: the result, and the files written (none unless asked): the page, its tables, the
    LaTeX, each named as given."""

    result: ComparisonSet
    page: str | None
    tables: dict[str, str]
    latex: str | None


def _outputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The files this run will write, ``(option, path as given)``: ``-o`` the page and its tables beside it,
    ``--latex``; checked before any reading."""
    from .job.comparison import table_files

    out: list[tuple[str, str]] = []
    if args.output is not None:
        if Path(args.output).suffix.lower() not in (".html", ".htm"):
            raise ConfigError("output", f"the page must be an .html file, got {args.output!r}", got=args.output)
        folder = os.path.dirname(args.output)
        out.append(("output", args.output))
        out += [("output", os.path.join(folder, f)) for f in table_files(Path(args.output).name).values()]
    if args.latex is not None:
        if args.latex in ("", DASH):
            raise ConfigError("latex", "give a file to write (--format latex prints the tables)", got=args.latex)
        if any(Path(p).resolve() == Path(args.latex).resolve() for _, p in out):
            raise ConfigError("latex", f"{args.latex} is also written by -o {args.output}", got=args.latex)
        out.append(("latex", args.latex))
    return out


def execute(args: argparse.Namespace) -> Outcome:
    """Read, compare, and write what was asked (raises :class:`HarnessError` on bad input)."""
    from .job.comparison import ComparisonRequest, compare_systems, latex_tables, page_contents
    from .job.dataset import refset_name
    from .sinks.pages import write_page
    from .storage.files import atomic_write
    from .text.tokenizers import check_usable

    opts = bleu_options(args)
    check_usable(str(opts.tokenize))
    outputs = _outputs(args)
    inputs = dataset_inputs(args) if args.dataset else files_inputs(args)
    for warning in inputs.warnings:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    train = read_given(args.train) if args.train else None
    read = {t.path.resolve() for t in (*inputs.systems, *inputs.refs, inputs.source, train)
            if t is not None and str(t.path) != STDIN}
    for key, out in outputs:
        if Path(out).resolve() in read:
            raise ConfigError(key, f"{out} is an input of this comparison; it would be overwritten", got=out)
    systems = inputs.systems
    result = compare_systems(ComparisonRequest.of_files(
        systems[0], systems[1], inputs.refs, opts, labels=inputs.labels, others=systems[2:], source=inputs.source,
        human=inputs.human, human_name=inputs.human_title, train=train,
        train_name=None if train is None else shown_name(args.train), seed=args.seed, n_samples=args.n_samples,
        top=args.top, n_examples=args.examples, dataset=inputs.dataset,
        refset=refset_name([r.name for r in inputs.refs])))
    tables: dict[str, str] = {}
    if args.output is not None:
        page = Path(args.output)
        shown = result.pairs[0] if len(result.pairs) == 1 else result
        files = write_page(page, *page_contents(shown, page))
        files.pop("page")
        tables = {k: str(v) for k, v in files.items()}
    if args.latex is not None:
        atomic_write(Path(args.latex), latex_tables(result))
    return Outcome(result, args.output, tables, args.latex)


def format_text(outcome: Outcome) -> str:
    """The headline in a few lines, and the files written."""
    s = outcome.result
    w = max(len(x) for x in s.labels)
    lines = [f"{x.label:<{w}}  BLEU {x.score.score:6.2f}  (95% CI {x.ci_low:.2f} to {x.ci_high:.2f})"
             for x in s.systems]
    for r in s.pairs:
        h = r.headline
        star = "*" if r.significant else ""
        lines.append(f"{r.b.label} - {r.a.label}: {h.delta:+.2f} BLEU (95% CI {h.delta_low:+.2f} to "
                     f"{h.delta_high:+.2f}), paired bootstrap p = {h.p_value:.4f}{star} ({r.n_samples} resamples, "
                     f"seed {r.seed})")
    for r in s.pairs:
        if r.human is not None:
            o = r.human.overall
            lines.append(f"{r.human.name}: {r.a.label} {o.a:.3f}, {r.b.label} {o.b:.3f}, {r.b.label} - "
                         f"{r.a.label} {o.delta:+.3f} (95% CI {o.delta_low:+.3f} to {o.delta_high:+.3f}) on "
                         f"{r.human.n_judged} segments judged for both")
    lines.append(f"signature: {s.signature}")
    if outcome.page is not None:
        lines.append(f"page: {outcome.page}")
        lines.append("tables: " + ", ".join(outcome.tables.values()))
    if outcome.latex is not None:
        lines.append(f"latex: {outcome.latex}")
    if outcome.page is None and outcome.latex is None:
        lines.append("no files written (-o PAGE.html writes the page and its tables, --latex FILE the LaTeX tables)")
    return "\n".join(lines)


def format_json(outcome: Outcome) -> str:
    """The numbers: two systems as one pair (:func:`~harness.job.comparison.to_json`), more as the set
    (:func:`~harness.job.comparison.set_json`: the systems, each comparison with the baseline, every pair); and
    the files written (null and empty when none)."""
    from .job.comparison import set_json, to_json

    s = outcome.result
    out = to_json(s.pairs[0]) if len(s.pairs) == 1 else set_json(s)
    out["page"] = outcome.page
    out["tables"] = dict(outcome.tables)
    out["latex"] = outcome.latex
    return json.dumps(out, indent=1, ensure_ascii=False, allow_nan=False)


def run(argv: Sequence[str] | None = None) -> str:
    """Parse ``argv``, compare, write what was asked, and return the text to print."""
    from .job.comparison import latex_tables

    args = build_parser().parse_args(argv)
    outcome = execute(args)
    if args.format == "json":
        return format_json(outcome)
    if args.format == "latex":
        return latex_tables(outcome.result).rstrip("\n")
    return format_text(outcome)


_FLAGS = {"dataset.root": "--dataset", "dataset.refs": "--refs", "refs": "--refs", "dataset.systems": "SYSTEM",
          "systems": "SYSTEM", "human": "--human", "input": "-i", "source": "--source", "output": "-o",
          "latex": "--latex", "top": "--top", "examples": "--examples", "n_samples": "--n-samples", "seed": "--seed"}


def _flag(key: str) -> str:
    """The command-line name of a configuration key (``tokenize`` -> ``--tokenize``)."""
    if key in _FLAGS:
        return _FLAGS[key]
    if key in OPTION_NAMES:
        return "--" + key.replace("_", "-")
    return key


def main(argv: Sequence[str] | None = None) -> int:
    """The ``harness-compare`` command: one line on stderr for any error the user can act on, never a traceback."""
    print_collected_warnings_only()
    return print_or_report(PROG, lambda: run(argv), _flag, catch_exit=True)


def console() -> int:
    """The ``harness-compare`` command: :func:`main`, then the process ends
    (:func:`~harness.arguments.console_command`)."""
    return console_command(main)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(console())
