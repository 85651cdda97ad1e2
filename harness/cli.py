"""``harness-score``: the one-off scorer for files, in the spirit of the sacrebleu CLI.

It starts fast: no mlflow, no hydra, no pandas (a test checks ``sys.modules``). Bad input is one line on stderr
naming the file and the line, and exit status 1; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .bleu import NLTK_METHODS, PROFILES, BleuOptions, BleuScore, corpus_score, make_options, score_at, sentence_scores, signature
from .corpus import check_parallel, read_text
from .errors import ConfigError, HarnessError
from .scoring import PreparedReferences
from .stats import REF_LENGTH_RULES, SegmentStats

PROG = "harness-score"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Score hypothesis files against reference files with BLEU (sacrebleu-exact by default).",
        epilog="Several REF files = several references per segment. With several -i files, the first is the "
               "baseline of paired tests.",
    )
    p.add_argument("refs", nargs="+", metavar="REF", help="reference file(s), one segment per line")
    p.add_argument("-i", "--input", nargs="+", required=True, metavar="HYP", help="hypothesis file(s)")
    g = p.add_argument_group("BLEU options (defaults: the profile's, sacrebleu's for the default profile)")
    g.add_argument("--tokenize", "-tok", default=None, help="tokenizer: 13a (default), intl, zh, char, none, ...")
    g.add_argument("--lowercase", "-lc", action="store_true", default=None, help="case-insensitive BLEU")
    g.add_argument("--smooth-method", "-s", default=None,
                   help=f"none, floor, add-k, exp (default); nltk profile: {', '.join(NLTK_METHODS)}")
    g.add_argument("--smooth-value", "-sv", type=float, default=None, help="value for floor / add-k / method1")
    g.add_argument("--max-ngram-order", type=int, default=4, help="maximum n-gram order (default 4)")
    g.add_argument("--ref-length", default=None, choices=REF_LENGTH_RULES,
                   help="brevity-penalty reference length rule (default closest)")
    g.add_argument("--effective-order", "-e", action="store_true", help="stop at the highest order with n-grams")
    g.add_argument("--weights", type=float, nargs="+", default=None, help="n-gram weights, one per order")
    g.add_argument("--profile", default="sacrebleu", choices=PROFILES, help="reproduce another tool's numbers")
    p.add_argument("--sentence-level", "-sl", action="store_true", help="score every segment")
    p.add_argument("--format", "-f", default="text", choices=("text", "json", "tsv"), help="output format")
    p.add_argument("--width", "-w", type=int, default=2, help="decimals in text output (default 2)")
    return p


@dataclass(frozen=True)
class System:
    name: str
    stats: SegmentStats


def _options(args: argparse.Namespace) -> BleuOptions:
    options: dict[str, Any] = {
        "profile": args.profile,
        "tokenize": args.tokenize,
        "lowercase": args.lowercase,
        "smooth_method": args.smooth_method,
        "smooth_value": args.smooth_value,
        "max_ngram_order": args.max_ngram_order,
        "ref_length": args.ref_length,
        "weights": None if args.weights is None else tuple(args.weights),
    }
    if args.effective_order or (args.sentence_level and args.profile == "sacrebleu"):
        # sacrebleu's --sentence-level forces effective order.
        options["effective_order"] = True
    return make_options(**options)


def _system_names(paths: Sequence[str]) -> list[str]:
    stems = [Path(p).stem for p in paths]
    return stems if len(set(stems)) == len(stems) else list(paths)


def score_files(args: argparse.Namespace, opts: BleuOptions) -> list[System]:
    """Read, check and score every hypothesis file (statistics only; scores are computed by the caller)."""
    refs = [read_text(p) for p in args.refs]
    hyps = [read_text(p) for p in args.input]
    check_parallel([*refs, *hyps])
    for text in (*refs, *hyps):
        for warning in text.warnings:
            print(f"{PROG}: warning: {text.path}: {warning}", file=sys.stderr)
    prepared = PreparedReferences.build([r.lines for r in refs], opts)
    names = _system_names(args.input)
    return [System(name, prepared.statistics(h.lines)) for name, h in zip(names, hyps)]


def _score_dict(name: str, score: BleuScore) -> dict[str, Any]:
    return {"name": name, **score.as_dict()}


def _tsv(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    lines = ["\t".join(columns)]
    for row in rows:
        lines.append("\t".join(_cell(row[c]) for c in columns))
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(_cell(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    return "" if value is None else str(value)


def report_corpus(systems: list[System], opts: BleuOptions, fmt: str, width: int) -> str:
    scores = [(s.name, corpus_score(s.stats, opts)) for s in systems]
    if fmt == "json":
        return json.dumps([_score_dict(n, s) for n, s in scores], indent=1, ensure_ascii=False)
    if fmt == "tsv":
        cols = ["name", "score", "precisions", "bp", "ratio", "hyp_len", "ref_len", "signature"]
        return _tsv([_score_dict(n, s) for n, s in scores], cols)
    if len(scores) == 1:
        return scores[0][1].format(width)
    name_w = max(len(n) for n, _ in scores)
    lines = [f"{n:<{name_w}}  {s.format(width, signature=False)}" for n, s in scores]
    lines.append(f"signature: {scores[0][1].signature}")
    return "\n".join(lines)


def report_sentences(systems: list[System], opts: BleuOptions, fmt: str, width: int) -> str:
    rows: list[dict[str, Any]] = []
    lines: list[str] = []
    for system in systems:
        arrays = sentence_scores(system.stats, opts)
        stats = system.stats.truncate_order(opts.max_ngram_order)
        for i in range(len(stats)):
            sig = signature(opts, sum(1 for r in stats.ref_lens[i] if r >= 0))
            score = score_at(arrays, i, stats.matches[i], stats.totals[i], sig, opts)
            row = {"seg_id": i, **score.as_dict()}
            if len(systems) > 1:
                row = {"name": system.name, **row}
            rows.append(row)
            if fmt == "text":
                prefix = f"{system.name}\t" if len(systems) > 1 else ""
                lines.append(prefix + score.format(width, signature=False))
    if fmt == "json":
        return json.dumps(rows, ensure_ascii=False)
    if fmt == "tsv":
        cols = (["name"] if len(systems) > 1 else []) + ["seg_id", "score", "precisions", "bp", "ratio",
                                                           "hyp_len", "ref_len"]
        return _tsv(rows, cols)
    lines.append(f"signature: {corpus_score(systems[0].stats, opts).signature}")
    return "\n".join(lines)


def run(argv: Sequence[str] | None = None) -> str:
    """Parse ``argv``, score, and return the text to print (raises :class:`HarnessError` on bad input)."""
    args = build_parser().parse_args(argv)
    opts = _options(args)
    systems = score_files(args, opts)
    if args.sentence_level:
        return report_sentences(systems, opts, args.format, args.width)
    return report_corpus(systems, opts, args.format, args.width)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        print(run(argv))
    except ConfigError as exc:
        print(f"{PROG}: error: --{exc.key.replace('_', '-')}: {str(exc).split(': ', 1)[1]}", file=sys.stderr)
        return 2
    except HarnessError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `harness-score ... | head`
        return 0
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
