"""``harness-score``: the one-off scorer for files, in the spirit of the sacrebleu CLI.

It starts fast: no mlflow, no hydra, no pandas (a test checks ``sys.modules``). Bad input is one line on stderr
naming the file and the line, and exit status 1; never a traceback.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .bleu import (
    NLTK_METHODS,
    PROFILES,
    BleuOptions,
    BleuScore,
    corpus_score,
    make_options,
    nrefs_label,
    score_at,
    sentence_scores,
    signature,
)
from .corpus import check_parallel, read_text
from .errors import ConfigError, HarnessError
from .scoring import systems_statistics
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
    t = p.add_argument_group("significance (over the statistics; sacrebleu-exact with the same seed)")
    tests = t.add_mutually_exclusive_group()
    tests.add_argument("--paired-bs", "-pbs", action="store_true",
                       help="paired bootstrap resampling against the first -i file (1000 resamples)")
    tests.add_argument("--paired-ar", "-par", action="store_true",
                       help="paired approximate randomization against the first -i file (10000 trials)")
    t.add_argument("--n-samples", type=int, default=None,
                   help="resamples / trials (default: 1000 bootstrap, 10000 AR, 1000 for --confidence)")
    t.add_argument("--seed", type=int, default=None, help="random seed (default: $SACREBLEU_SEED, else 12345)")
    t.add_argument("--confidence", "-ci", action="store_true", help="95%% bootstrap confidence intervals")
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
    statistics = systems_statistics([h.lines for h in hyps], [r.lines for r in refs], opts)
    return [System(name, st) for name, st in zip(_system_names(args.input), statistics)]


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


def _seed(args: argparse.Namespace) -> int | None:
    from .significance import sacrebleu_seed

    return args.seed if args.seed is not None else sacrebleu_seed(os.environ.get("SACREBLEU_SEED"))


def report_paired(systems: list[System], opts: BleuOptions, args: argparse.Namespace) -> str:
    """sacrebleu's ``--paired-bs`` / ``--paired-ar`` output (baseline first), or its JSON / TSV."""
    from .significance import (
        bleu_score_fn,
        format_paired_text,
        paired_test,
        signature_extra,
    )

    if len(systems) < 2:
        raise ConfigError("paired_bs" if args.paired_bs else "paired_ar",
                          "paired tests need at least two -i files (the first is the baseline)")
    test = "bs" if args.paired_bs else "ar"
    seed = _seed(args)
    results = paired_test([(s.name, s.stats) for s in systems], bleu_score_fn(opts), test, args.n_samples, seed,
                          args.confidence)
    n_conf = 1000 if (test == "ar" and args.confidence) else None
    extra = signature_extra(test, results[0].n_samples, seed, n_conf)
    sig = signature(opts, nrefs_label(systems[0].stats), extra)
    if args.format == "text":
        return format_paired_text(results, args.width, sig)
    rows = []
    for system, res in zip(systems, results):
        score = corpus_score(system.stats, opts, extra)
        row = {**_score_dict(system.name, score), **res.json_fields(args.confidence or test == "bs")}
        if not args.confidence and test == "bs":
            row = {k: v for k, v in row.items() if k not in ("mean", "ci")}
        rows.append(row)
    if args.format == "json":
        return json.dumps(rows, indent=1, ensure_ascii=False)
    cols = ["name", "score", "p_value"] + (["ci_low", "ci_high"] if "ci_low" in rows[0] else []) + ["signature"]
    return _tsv(rows, cols)


def report_confidence(systems: list[System], opts: BleuOptions, args: argparse.Namespace) -> str:
    """sacrebleu's ``--confidence``: every score with its bootstrap mean and 95% half-width."""
    from .significance import bleu_score_fn, bootstrap_ci, signature_extra

    seed = _seed(args)
    n = args.n_samples or 1000
    cis = bootstrap_ci([(s.name, s.stats) for s in systems], bleu_score_fn(opts), n, seed)
    extra = signature_extra("bs", n, seed)
    rows = []
    lines = []
    for system, ci in zip(systems, cis):
        score = corpus_score(system.stats, opts, extra)
        rows.append({**_score_dict(system.name, score), "mean": ci.mean, "ci": ci.ci, "ci_low": ci.ci_low,
                     "ci_high": ci.ci_high})
        prec = "/".join(f"{p:.1f}" for p in score.precisions)
        prefix = f"{system.name}  " if len(systems) > 1 else ""
        lines.append(f"{prefix}BLEU|{score.signature} = {ci.format(args.width)} {prec} (BP = {score.bp:.3f} "
                     f"ratio = {score.ratio:.3f} hyp_len = {score.hyp_len} ref_len = {score.ref_len})")
    if args.format == "json":
        return json.dumps(rows, indent=1, ensure_ascii=False)
    if args.format == "tsv":
        return _tsv(rows, ["name", "score", "mean", "ci", "ci_low", "ci_high", "signature"])
    return "\n".join(lines)


def run(argv: Sequence[str] | None = None) -> str:
    """Parse ``argv``, score, and return the text to print (raises :class:`HarnessError` on bad input)."""
    args = build_parser().parse_args(argv)
    opts = _options(args)
    paired = args.paired_bs or args.paired_ar
    if args.sentence_level and (paired or args.confidence):
        raise ConfigError("sentence_level", "statistical tests and confidence intervals are corpus-level; drop "
                          "--sentence-level")
    systems = score_files(args, opts)
    if args.sentence_level:
        return report_sentences(systems, opts, args.format, args.width)
    if paired:
        return report_paired(systems, opts, args)
    if args.confidence:
        return report_confidence(systems, opts, args)
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


def console() -> int:
    """The ``harness-score`` command: :func:`main`, then the process ends.  Its last garbage collection would
    walk numba's whole object graph when the compiled kernels were loaded (0.5 s of a 3 s run, measured), so the
    objects alive now are exempted from it (``gc.freeze``).  Nothing is lost: the output is printed and flushed
    at exit as usual, files are closed, and the operating system frees the memory."""
    code = main()
    gc.freeze()
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(console())
