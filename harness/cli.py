"""``harness-score``: the one-off scorer for files, and a drop-in for the sacrebleu CLI in scripts.

``harness-score REF [REF ...] [-i HYP ...]``: without ``-i`` the hypothesis is read from standard input
(``harness-score ref.txt < hyp.txt``, as ``sacrebleu ref.txt < hyp.txt``); ``-b`` prints the score only, ``-w``
its decimals; JSON objects carry sacrebleu's keys (``name`` = ``BLEU``, ``score``, ``signature``,
``verbose_score``, the signature fields, ``version``) as well as ours; several hypothesis files give a list shaped
like sacrebleu's multi-system output (``system`` and ``BLEU`` in every object; with ``--paired-bs/--paired-ar``
``BLEU`` is sacrebleu's object of ``score``, ``p_value``, ``mean``, ``ci``). With ``-i`` the JSON output is always
a list (one object per hypothesis file); from standard input it is the single object sacrebleu prints.

It starts fast: no mlflow, no hydra, no pandas (a test checks ``sys.modules``). Bad input is one line on stderr
naming the file and the line, exit status 1; a bad option exit status 2 naming the valid choices; never a
traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .arguments import (
    OneLineParser,
    add_bleu_arguments,
    add_chrf_arguments,
    bleu_options,
    chrf_options,
    console_command,
    int_in,
    print_collected_warnings_only,
    print_or_report,
)
from .core.bleu import BleuScore, corpus_score, segment_score, sentence_scores
from .core.options import BleuOptions
from .core.profiles import get_profile
from .core.resampling import MAX_SEED
from .core.signature import signature, split_signature
from .core.stats import SegmentStats
from .errors import ConfigError
from .score_output import dumps, format_paired_text, json_out, paired_results, seed_of, tsv
from .text.chunks import Source
from .text.files import files_statistics
from .text.reading import STDIN
from .version import __version__

PROG = "harness-score"
#: The metrics of ``-m`` (sacrebleu's names).
METRICS = ("bleu", "chrf")

class _Version(argparse.Action):
    """``--version``: ours, and which path computes (:func:`harness.native.path`), then exit."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None) -> None:
        from . import native

        print(f"{PROG} {__version__}: {native.path()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog=PROG,
        description="Score hypothesis files against reference files with BLEU or chrF (sacrebleu-exact by default).",
        epilog="Several REF files = several references per segment. Without -i the hypothesis is read from standard "
               "input. With several -i files, the first is the baseline of paired tests.",
    )
    p.add_argument("--version", "-V", action=_Version, nargs=0,
                   help="the version, and which path computes (compiled kernels or numpy)")
    p.add_argument("refs", nargs="+", metavar="REF", help="reference file(s), one segment per line")
    p.add_argument("-i", "--input", nargs="+", default=None, metavar="HYP",
                   help="hypothesis file(s) (default: standard input)")
    p.add_argument("--metrics", "-m", nargs="+", default=["bleu"], choices=METRICS, metavar="METRIC",
                   help="the metrics: bleu (default), chrf (chrF; chrF++ with --chrf-word-order 2), or both")
    add_bleu_arguments(p)
    add_chrf_arguments(p)
    p.add_argument("--sentence-level", "-sl", action="store_true", help="score every segment")
    t = p.add_argument_group("significance (over the statistics; sacrebleu-exact with the same seed)")
    tests = t.add_mutually_exclusive_group()
    tests.add_argument("--paired-bs", "-pbs", action="store_true",
                       help="paired bootstrap resampling against the first -i file (1000 resamples)")
    tests.add_argument("--paired-ar", "-par", action="store_true",
                       help="paired approximate randomization against the first -i file (10000 trials)")
    t.add_argument("--n-samples", type=int_in(1, None, "resamples"), default=None,
                   help="resamples / trials (default: 1000 bootstrap, 10000 AR, 1000 for --confidence)")
    t.add_argument("--seed", type=int_in(0, MAX_SEED, "seed"), default=None,
                   help="random seed (default: $SACREBLEU_SEED, else 12345)")
    t.add_argument("--confidence", "-ci", action="store_true", help="95%% bootstrap confidence intervals")
    o = p.add_argument_group("output")
    o.add_argument("--format", "-f", default="text", choices=("text", "json", "tsv"), help="output format")
    o.add_argument("--width", "-w", type=int_in(0, 20, "decimals"), default=2,
                   help="decimals of the printed scores (default 2)")
    o.add_argument("--score-only", "-b", action="store_true", help="print the score only (one line per system)")
    return p


@dataclass(frozen=True)
class System:
    name: str
    path: str
    stats: SegmentStats


def _system_names(paths: Sequence[str]) -> list[str]:
    stems = [Path(p).stem for p in paths]
    return stems if len(set(stems)) == len(stems) else list(paths)


def _line_breaks(refs: Sequence[Source]) -> int | None:
    """The most line breaks a hypothesis of these references can have (the first reference's, plus one for a
    missing final newline); None if it cannot be read (its error is reported in its turn)."""
    try:
        data = refs[0].data if refs[0].data is not None else refs[0].path.read_bytes()
    except OSError:
        return None
    return data.count(b"\n") + 1


def sources(args: argparse.Namespace) -> tuple[list[Source], list[Source]]:
    """The reference and hypothesis inputs (standard input read once, here, for every metric)."""
    refs = [Source.of_path(p) for p in args.refs]
    hyps = [Source.of_path(p) for p in args.input] if args.input else [Source.of_stdin(max_lines=_line_breaks(refs))]
    return refs, hyps


def system_names(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The systems' names and paths as the output shows them."""
    return (_system_names(args.input), args.input) if args.input else (["stdin"], [STDIN])


def score_files(args: argparse.Namespace, opts: BleuOptions, inputs: tuple[list[Source], list[Source]]
                ) -> list[System]:
    """Read, check and count every hypothesis (statistics only; scores are computed by the caller). Large files
    are read in chunks and only their statistics kept (:func:`harness.text.files.files_statistics`); the
    errors and warnings are those of reading each file whole."""
    from .text.tokenizers import check_usable

    check_usable(str(opts.tokenize))
    refs, hyps = inputs
    result = files_statistics(refs, hyps, opts)
    for text in (*result.references, *result.hypotheses):
        for warning in text.warnings:
            print(f"{PROG}: warning: {text.path}: {warning}", file=sys.stderr)
    names, paths = system_names(args)
    return [System(name, path, st) for name, path, st in zip(names, paths, result.statistics)]


def sacrebleu_fields(score: BleuScore, width: int) -> dict[str, Any]:
    """sacrebleu's JSON keys for a BLEU score: ``name``, ``score``, ``signature``, ``verbose_score``, every
    signature field (``version`` = our version), as ``sacrebleu -f json`` prints them."""
    verbose = score.format(width, signature=False).split(" = ", 1)[1].split(" ", 1)[1]
    fields = split_signature(score.signature)
    fields["version"] = fields.pop("harness", __version__)
    return {"name": "BLEU", "score": score.score, "signature": score.signature, "verbose_score": verbose, **fields}


def score_object(system: System, score: BleuScore, width: int, multi: bool) -> dict[str, Any]:
    """One JSON object: sacrebleu's keys, ours (``precisions``, ``bp``, ``ratio``, ``hyp_len``, ``ref_len``,
    ``counts``, ``totals``) and, for several systems, sacrebleu's multi-system ``system`` and ``BLEU``."""
    out = sacrebleu_fields(score, width)
    ours = score.as_dict()
    out.update({k: ours[k] for k in ("precisions", "bp", "ratio", "hyp_len", "ref_len", "counts", "totals")})
    out["system"] = system.path if multi else system.name
    if multi:
        out["BLEU"] = f"{score.score:.{width}f}"
    return out


def report_corpus(systems: list[System], opts: BleuOptions, args: argparse.Namespace) -> str:
    scores = [(s, corpus_score(s.stats, opts)) for s in systems]
    width = args.width
    if args.score_only:
        return "\n".join(f"{sc.score:.{width}f}" for _, sc in scores)
    if args.format == "json":
        return json_out([score_object(s, sc, width, len(systems) > 1) for s, sc in scores], args)
    if args.format == "tsv":
        rows = [{"name": s.name, **sc.as_dict()} for s, sc in scores]
        return tsv(rows, ["name", "score", "precisions", "bp", "ratio", "hyp_len", "ref_len", "signature"])
    if len(scores) == 1:
        return scores[0][1].format(width)
    name_w = max(len(s.name) for s, _ in scores)
    lines = [f"{s.name:<{name_w}}  {sc.format(width, signature=False)}" for s, sc in scores]
    lines.append(f"signature: {scores[0][1].signature}")
    return "\n".join(lines)


def report_sentences(systems: list[System], opts: BleuOptions, args: argparse.Namespace) -> str:
    rows: list[dict[str, Any]] = []
    lines: list[str] = []
    width = args.width
    for system in systems:
        arrays = sentence_scores(system.stats, opts)
        stats = system.stats.truncate_order(opts.max_ngram_order)
        for i in range(len(stats)):
            score = segment_score(arrays, stats, i, opts)
            row = {"seg_id": i, **sacrebleu_fields(score, width), **score.as_dict()}
            if len(systems) > 1:
                row = {"system": system.name, **row}
            rows.append(row)
            if args.score_only:
                lines.append(f"{score.score:.{width}f}")
            elif args.format == "text":
                prefix = f"{system.name}\t" if len(systems) > 1 else ""
                lines.append(prefix + score.format(width, signature=False))
    if args.format == "json" and not args.score_only:
        return dumps(rows)
    if args.format == "tsv" and not args.score_only:
        cols = (["system"] if len(systems) > 1 else []) + ["seg_id", "score", "precisions", "bp", "ratio",
                                                             "hyp_len", "ref_len"]
        return tsv(rows, cols)
    if not args.score_only:
        lines.append(f"signature: {corpus_score(systems[0].stats, opts).signature}")
    return "\n".join(lines)


def report_paired(systems: list[System], opts: BleuOptions, args: argparse.Namespace) -> str:
    """sacrebleu's ``--paired-bs`` / ``--paired-ar`` output (baseline first), or its JSON / TSV."""
    from .core.bleu import score_fn

    results, extra = paired_results(args, [(s.name, s.stats) for s in systems], score_fn(opts))
    test = "bs" if args.paired_bs else "ar"
    sig = signature(opts, systems[0].stats.nrefs_label, extra)
    if args.score_only:
        return "\n".join(f"{r.score:.{args.width}f}" for r in results)
    if args.format == "text":
        return format_paired_text(results, args.width, sig)
    rows = []
    for system, res in zip(systems, results):
        score = corpus_score(system.stats, opts, extra)
        row = {**score_object(system, score, args.width, True), "p_value": res.p_value}
        # sacrebleu's paired-test JSON holds the metric as an object, not the formatted score
        row["BLEU"] = {"score": res.score, "p_value": res.p_value, "mean": res.mean, "ci": res.ci}
        if args.confidence or test == "bs":
            row.update({"ci_low": res.ci_low, "ci_high": res.ci_high})
            if args.confidence:
                row.update({"mean": res.mean, "ci": res.ci})
        rows.append(row)
    if args.format == "json":
        return dumps(rows)
    cols = ["system", "score", "p_value"] + (["ci_low", "ci_high"] if "ci_low" in rows[0] else []) + ["signature"]
    return tsv(rows, cols)


def report_confidence(systems: list[System], opts: BleuOptions, args: argparse.Namespace) -> str:
    """sacrebleu's ``--confidence``: every score with its bootstrap mean and 95% half-width."""
    from .core.bleu import score_fn
    from .core.significance import signature_extra, systems_ci

    seed = seed_of(args)
    n = args.n_samples or 1000
    cis = systems_ci([(s.name, s.stats) for s in systems], score_fn(opts), n, seed)
    extra = signature_extra("bs", n, seed)
    rows = []
    lines = []
    for system, ci in zip(systems, cis):
        score = corpus_score(system.stats, opts, extra)
        rows.append({**score_object(system, score, args.width, len(systems) > 1), "confidence_mean": ci.mean,
                     "confidence_var": ci.ci, "confidence": f"μ = {ci.mean:.{args.width}f} ± {ci.ci:.{args.width}f}",
                     "mean": ci.mean, "ci": ci.ci, "ci_low": ci.ci_low, "ci_high": ci.ci_high})
        prec = "/".join(f"{p:.1f}" for p in score.precisions)
        prefix = f"{system.name}  " if len(systems) > 1 else ""
        lines.append(f"{prefix}BLEU|{score.signature} = {ci.format(args.width)} {prec} (BP = {score.bp:.3f} "
                     f"ratio = {score.ratio:.3f} hyp_len = {score.hyp_len} ref_len = {score.ref_len})")
    if args.score_only:
        return "\n".join(f"{ci.score:.{args.width}f}" for ci in cis)
    if args.format == "json":
        return json_out(rows, args)
    if args.format == "tsv":
        return tsv([{"name": r["system"], **r} for r in rows],
                    ["name", "score", "mean", "ci", "ci_low", "ci_high", "signature"])
    return "\n".join(lines)


def run(argv: Sequence[str] | None = None) -> str:
    """Parse ``argv``, score, and return the text to print (raises :class:`HarnessError` on bad input)."""
    args = build_parser().parse_args(argv)
    # sacrebleu's --sentence-level forces effective order (in the profiles that have it: sacrebleu's)
    opts = bleu_options(args, effective_order=args.sentence_level and get_profile(args.profile).effective_order)
    paired = args.paired_bs or args.paired_ar
    if args.sentence_level and (paired or args.confidence):
        raise ConfigError("sentence_level", "statistical tests and confidence intervals are corpus-level; drop "
                          "--sentence-level")
    metrics = sorted(set(args.metrics))  # sacrebleu scores its metrics in sorted order
    if args.sentence_level and len(metrics) > 1:
        raise ConfigError("metrics", "sentence-level scores take one metric (as sacrebleu's)", METRICS)
    inputs = sources(args)
    outputs = []
    if "bleu" in metrics:
        outputs.append(report_bleu(score_files(args, opts, inputs), opts, args))
    if "chrf" in metrics:
        from . import score_chrf

        names, paths = system_names(args)
        systems = score_chrf.chrf_files(inputs, names, paths, chrf_options(args), warn="bleu" not in metrics)
        outputs.append(score_chrf.report(systems, chrf_options(args), args))
    if args.format == "json" and len(outputs) > 1 and not args.score_only:
        # one JSON document: the metrics' objects (or lists of them) in one list, as sacrebleu prints them
        items: list[Any] = []
        for out in outputs:
            value = json.loads(out)
            items += value if isinstance(value, list) else [value]
        return dumps(items)
    return "\n".join(outputs)


def report_bleu(systems: list[System], opts: BleuOptions, args: argparse.Namespace) -> str:
    if args.sentence_level:
        return report_sentences(systems, opts, args)
    if args.paired_bs or args.paired_ar:
        return report_paired(systems, opts, args)
    if args.confidence:
        return report_confidence(systems, opts, args)
    return report_corpus(systems, opts, args)


def main(argv: Sequence[str] | None = None) -> int:
    print_collected_warnings_only()
    return print_or_report(PROG, lambda: run(argv))


def console() -> int:
    """The ``harness-score`` command: :func:`main`, then the process ends
    (:func:`~harness.arguments.console_command`)."""
    return console_command(main)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(console())
