"""``harness-import``: a dataset folder written from the field's published formats, ready for
``harness dataset.root=OUT``.

    harness-import mtme ROOT --lp en-de OUT      # mt-metrics-eval's layout, e.g. mt-metrics-eval-v2/wmt22.news
    harness-import mqm FILE.tsv --reference ref OUT [--check-averages FILE.avg_seg_scores.tsv]

The folder holds the texts, the human scores (every kind, at system and segment level), the metric scores
(``metrics/NAME/``), a ``seg_map.tsv`` with the documents, and a ``meta.json`` that records the source files
with their SHA-256 and what the import changed. It is written whole or not at all. A bad or partial input is
one line naming the file and line, exit status 1; a bad option exit status 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from .arguments import OneLineParser, console_command, print_or_report
from .importers.dataset_writer import ImportedDataset, write_dataset

PROG = "harness-import"


def build_parser() -> OneLineParser:
    p = OneLineParser(prog=PROG, description="Write a dataset folder from mt-metrics-eval's layout or Google's MQM "
                                             "annotations.")
    sub = p.add_subparsers(dest="format", required=True, metavar="{mtme,mqm}")
    m = sub.add_parser("mtme", help="one language pair of an mt-metrics-eval evaluation set")
    m.add_argument("root", help="the evaluation set's folder, e.g. ~/.mt-metrics-eval/mt-metrics-eval-v2/wmt22.news")
    m.add_argument("--lp", required=True, metavar="SRC-TGT", help="the language pair, e.g. en-de")
    m.add_argument("--primary-ref", default=None, metavar="REF",
                   help="the standard reference (mt-metrics-eval's std_ref, e.g. refA); recorded in meta.json")
    m.add_argument("out", help="the dataset folder to write (must not exist)")
    m.add_argument("--name", default=None, help="the dataset's name (default: SET.LP)")
    q = sub.add_parser("mqm", help="a TSV of google/wmt-mqm-human-evaluation")
    q.add_argument("tsv", help="the annotations, e.g. mqm_ted_ende.tsv")
    q.add_argument("--reference", default=None, metavar="SYSTEM",
                   help="the human translation of the file to score against (it leaves the systems)")
    q.add_argument("--source-lang", default=None, metavar="LANG")
    q.add_argument("--target-lang", default=None, metavar="LANG",
                   help="the target language (picks the tokenizer, as sacrebleu -l)")
    q.add_argument("--weights", default=None, metavar="SPEC",
                   help="mt-metrics-eval's weight spec (default 'Major:5 Minor:1 Neutral:0 "
                        "Major/Non-translation!:25 Minor/Fluency/Punctuation:0.1')")
    q.add_argument("--check-averages", default=None, metavar="AVG_TSV",
                   help="a published *.avg_seg_scores.tsv every segment score must equal (to its 6 decimals)")
    q.add_argument("--average-name", dest="average_names", action="append", default=[], metavar="THERE=HERE",
                   help="a system name of the averages file that differs from the TSV's (e.g. ref-A=ref; repeatable)")
    q.add_argument("out", help="the dataset folder to write (must not exist)")
    q.add_argument("--name", default=None, help="the dataset's name (default: the file's)")
    return p


def summary(data: ImportedDataset, out: Path) -> str:
    n = len(next(iter(data.refs.values())))
    kinds = ", ".join(data.human) or "none"
    metrics = f"{len(data.metrics)} metric(s)" if data.metrics else "no metric scores"
    lines = [f"{PROG}: wrote {out}: {n} segments, {len(data.refs)} reference(s), {len(data.systems)} systems "
             f"({len(data.human_systems)} human translations), human scores: {kinds}, {metrics}"]
    lines += [f"  note: {note}" for note in data.notes]
    lines.append(f"  run: harness dataset.root={out}")
    return "\n".join(lines)


def run(argv: Sequence[str] | None = None) -> str:
    args = build_parser().parse_args(argv)
    if args.format == "mtme":
        from .importers.mtme import read_mtme

        data, origin = read_mtme(Path(args.root), args.lp, args.name)
        if args.primary_ref is not None:
            if args.primary_ref not in data.refs:
                from .errors import ConfigError

                raise ConfigError("primary_ref", "not a reference of the set", list(data.refs),
                                  got=args.primary_ref)
            data.primary_ref = args.primary_ref
    else:
        from .importers.mqm import WEIGHTS, check_averages, parse_weights, read_mqm

        weights = WEIGHTS if args.weights is None else parse_weights(args.weights)
        data, by_seg = read_mqm(Path(args.tsv), args.reference, args.name, args.source_lang, args.target_lang,
                                weights)
        origin = {}
        if args.check_averages:
            names = dict(item.split("=", 1) for item in args.average_names if "=" in item)
            n = check_averages(by_seg, Path(args.check_averages), names)
            data.notes.append(f"segment scores equal {Path(args.check_averages).name} on all {n} rated segments")
            data.provenance["checked_against"] = str(Path(args.check_averages).resolve())
    out = write_dataset(data, Path(args.out), origin)
    return summary(data, out)


def main(argv: Sequence[str] | None = None) -> int:
    return print_or_report(PROG, lambda: run(argv), catch_exit=True)


def console() -> int:
    return console_command(main)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(console())
