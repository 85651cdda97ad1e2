"""``harness-compare``: where two systems (or two versions of one) differ, as one self-contained HTML page.

::

    harness-compare REF [REF ...] -i A B [-o PAGE.html]          # files, like harness-score
    harness-compare --dataset DIR A B                            # systems of a dataset folder (NAME or NAME@VERSION)
    harness-compare --dataset DIR NAME                           # the last two versions of NAME

It reads the texts (strict reading, equal line counts), runs :func:`harness.job.comparison.compare` on one
:class:`~harness.job.comparison.ComparisonRequest` (the texts counted once through the one text pipeline; seeded:
``--seed``, ``--n-samples``) and writes the page (default ``compare-A-vs-B.html`` in the current folder) and the
same numbers as Parquet tables next to it (``<page stem>.<table>.parquet``); ``--format json`` prints the numbers.
In dataset mode the source (``src.txt``) and the human segment scores of one kind (``--human``, default the
first) come from the folder; a system that is also a reference file is compared against the other references.

A thin entry point: argument parsing, reading, writing; the analysis and the page live in :mod:`harness.job`.
Errors are one line on stderr, ``harness-compare: error: ...`` (exit 1 for bad input, 2 for a bad option), never
a traceback. It imports neither mlflow nor hydra (pyarrow imports pandas when it builds the tables, last).
"""

from __future__ import annotations

import argparse
import json
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
from .errors import ConfigError
from .text.reading import check_parallel, read_text

if TYPE_CHECKING:
    from .job.comparison import ComparisonResult
    from .job.inputs import PairInputs

PROG = "harness-compare"


def build_parser() -> argparse.ArgumentParser:
    from .job.comparison import DEFAULT_EXAMPLES, DEFAULT_SAMPLES, DEFAULT_TOP

    p = OneLineParser(
        prog=PROG,
        description="Where two systems differ: BLEU by bucket with paired bootstrap intervals, the n-grams each gets "
                    "right or over-produces, the segments that differ most; one self-contained HTML page plus "
                    "Parquet tables.",
        epilog="Files: REF [REF ...] -i A B. Dataset folder: --dataset DIR A B (NAME or NAME@VERSION), or --dataset "
               "DIR NAME for its last two versions. The difference is always B minus A.",
    )
    p.add_argument("items", nargs="*", metavar="REF|SYSTEM",
                   help="reference files (with -i), or the systems of --dataset")
    p.add_argument("-i", "--input", nargs=2, metavar=("A", "B"), default=None,
                   help="the two system output files (A is the baseline: deltas are B - A)")
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
    o = p.add_argument_group("output")
    o.add_argument("-o", "--output", metavar="PAGE.html", default=None,
                   help="the page (default compare-A-vs-B.html here); tables go next to it")
    o.add_argument("--format", "-f", default="text", choices=("text", "json"), help="what to print")
    return p


# --------------------------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------------------------


def _split(label: str) -> tuple[str, str | None]:
    from .job.dataset import split_version

    return split_version(label, "systems")


def _file_labels(paths: Sequence[str]) -> tuple[str, str]:
    a, b = (Path(p) for p in paths)
    if a.stem != b.stem:
        return a.stem, b.stem
    la, lb = f"{a.parent.name}/{a.stem}", f"{b.parent.name}/{b.stem}"
    return (la, lb) if la != lb else (str(a), str(b))


def files_inputs(args: argparse.Namespace) -> PairInputs:
    """``REF ... -i A B`` (and ``--source``)."""
    from .job.inputs import PairInputs
    if args.refs is not None or args.human is not None:
        raise ConfigError("refs" if args.refs is not None else "human", "only with --dataset (in files mode every "
                          "REF given is used, and there are no human scores)")
    if not args.input:
        raise ConfigError("input", "give the two systems: REF [REF ...] -i A B (or --dataset DIR A B)")
    if not args.items:
        raise ConfigError("input", "no reference files: REF [REF ...] -i A B")
    if Path(args.input[0]).resolve() == Path(args.input[1]).resolve():
        raise ConfigError("input", f"{args.input[0]} is given twice; a system cannot be compared with itself")
    refs = tuple(read_text(p) for p in args.items)
    text_a, text_b = (read_text(p) for p in args.input)
    source = read_text(args.source, name="src") if args.source else None
    texts = [*refs, text_a, text_b, *([source] if source is not None else [])]
    check_parallel(texts)
    la, lb = _file_labels(args.input)
    warnings = tuple(f"{t.path}: {w}" for t in texts for w in t.warnings)
    return PairInputs(la, lb, text_a, text_b, refs, source, None, None, "", warnings)


def dataset_inputs(args: argparse.Namespace) -> PairInputs:
    """``--dataset DIR A B`` / ``--dataset DIR NAME``: texts, source and human scores from the folder."""
    from .job.dataset import read_layout
    from .job.inputs import pair_inputs

    if args.input or args.source:
        raise ConfigError("input" if args.input else "source", "not with --dataset (the systems are named after "
                          "DIR; the source is the folder's src.txt)")
    return pair_inputs(read_layout(args.dataset), args.items, args.refs, args.human)


# --------------------------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What a run produced: the result and the files written."""

    result: ComparisonResult
    page: Path
    tables: dict[str, Path]


def execute(args: argparse.Namespace) -> Outcome:
    """Read, compare, write the page and the tables (raises :class:`HarnessError` on bad input)."""
    from .job.comparison import ComparisonRequest, compare, page_contents, page_name, table_files
    from .job.dataset import refset_name
    from .sinks.pages import write_page
    from .text.tokenizers import check_usable

    opts = bleu_options(args)
    check_usable(str(opts.tokenize))
    inputs = dataset_inputs(args) if args.dataset else files_inputs(args)
    for warning in inputs.warnings:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    train = read_text(args.train) if args.train else None
    page = Path(args.output) if args.output else Path(page_name(inputs.label_a, inputs.label_b))
    if page.suffix.lower() not in (".html", ".htm"):
        raise ConfigError("output", f"the page must be an .html file, got {str(page)!r}", got=str(page))
    read = {t.path.resolve() for t in (inputs.text_a, inputs.text_b, *inputs.refs, inputs.source, train)
            if t is not None}
    for out in [page, *(page.with_name(f) for f in table_files(page.name).values())]:
        if out.resolve() in read:
            raise ConfigError("output", f"{out} is an input of this comparison; it would be overwritten",
                              got=str(page))
    result = compare(ComparisonRequest.of_files(
        inputs.text_a, inputs.text_b, inputs.refs, opts, labels=(inputs.label_a, inputs.label_b),
        source=inputs.source, human=inputs.human, human_name=inputs.human_title, train=train, seed=args.seed,
        n_samples=args.n_samples, top=args.top, n_examples=args.examples, dataset=inputs.dataset,
        refset=refset_name([r.name for r in inputs.refs])))
    files = write_page(page, *page_contents(result, page))
    return Outcome(result, files.pop("page"), files)


def format_text(outcome: Outcome) -> str:
    """The headline in a few lines, and where the page and the tables are."""
    r = outcome.result
    h = r.headline
    w = max(len(r.a.label), len(r.b.label))
    lines = [f"{s.label:<{w}}  BLEU {s.score.score:6.2f}  (95% CI {s.ci_low:.2f} to {s.ci_high:.2f})"
             for s in (r.a, r.b)]
    star = "*" if r.significant else ""
    lines.append(f"{r.b.label} - {r.a.label}: {h.delta:+.2f} BLEU (95% CI {h.delta_low:+.2f} to {h.delta_high:+.2f}), "
                 f"paired bootstrap p = {h.p_value:.4f}{star} ({r.n_samples} resamples, seed {r.seed})")
    if r.human is not None:
        o = r.human.overall
        lines.append(f"{r.human.name}: {r.a.label} {o.a:.3f}, {r.b.label} {o.b:.3f}, {r.b.label} - {r.a.label} "
                     f"{o.delta:+.3f} (95% CI {o.delta_low:+.3f} to {o.delta_high:+.3f}) on {r.human.n_judged} "
                     "segments judged for both")
    lines.append(f"signature: {r.signature}")
    lines.append(f"page: {outcome.page}")
    lines.append("tables: " + ", ".join(str(p) for p in outcome.tables.values()))
    return "\n".join(lines)


def format_json(outcome: Outcome) -> str:
    from .job.comparison import to_json

    out = to_json(outcome.result)
    out["page"] = str(outcome.page)
    out["tables"] = {k: str(v) for k, v in outcome.tables.items()}
    return json.dumps(out, indent=1, ensure_ascii=False, allow_nan=False)


def run(argv: Sequence[str] | None = None) -> str:
    """Parse ``argv``, compare, write, and return the text to print."""
    args = build_parser().parse_args(argv)
    outcome = execute(args)
    return format_json(outcome) if args.format == "json" else format_text(outcome)


_FLAGS = {"dataset.root": "--dataset", "dataset.refs": "--refs", "refs": "--refs", "dataset.systems": "SYSTEM",
          "systems": "SYSTEM", "human": "--human", "input": "-i", "source": "--source", "output": "-o",
          "top": "--top", "examples": "--examples", "n_samples": "--n-samples", "seed": "--seed"}


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
