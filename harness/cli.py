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
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .arguments import (
    OneLineParser,
    add_bleu_arguments,
    bleu_options,
    console_command,
    int_in,
    print_collected_warnings_only,
)
from .core.bleu import BleuScore, corpus_score, segment_score, sentence_scores
from .core.options import BleuOptions
from .core.profiles import get_profile
from .core.resampling import MAX_SEED
from .core.signature import signature, split_signature
from .core.stats import SegmentStats
from .errors import ConfigError, HarnessError
from .text.chunks import Source
from .text.files import files_statistics
from .text.reading import STDIN
from .version import __version__

PROG = "harness-score"
#: Indentation of every JSON output (sacrebleu's single-object indent).
JSON_INDENT = 1


class _Version(argparse.Action):
    """``--version``: ours, and which path computes (:func:`harness.native.path`), then exit."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None) -> None:
        from . import native

        print(f"{PROG} {__version__}: {native.path()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog=PROG,
        description="Score hypothesis files against reference files with BLEU (sacrebleu-exact by default).",
        epilog="Several REF files = several references per segment. Without -i the hypothesis is read from standard "
               "input. With several -i files, the first is the baseline of paired tests.",
    )
    p.add_argument("--version", "-V", action=_Version, nargs=0,
                   help="the version, and which path computes (compiled kernels or numpy)")
    p.add_argument("refs", nargs="+", metavar="REF", help="reference file(s), one segment per line")
    p.add_argument("-i", "--input", nargs="+", default=None, metavar="HYP",
                   help="hypothesis file(s) (default: standard input)")
    add_bleu_arguments(p)
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


def score_files(args: argparse.Namespace, opts: BleuOptions) -> list[System]:
    """Read, check and count every hypothesis (statistics only; scores are computed by the caller). Large files
    are read in chunks and only their statistics kept (:func:`harness.text.files.files_statistics`); the
    errors and warnings are those of reading each file whole."""
    from .text.tokenizers import check_usable

    check_usable(str(opts.tokenize))
    refs = [Source.of_path(p) for p in args.refs]
    hyps = [Source.of_path(p) for p in args.input] if args.input else [Source.of_stdin(max_lines=_line_breaks(refs))]
    result = files_statistics(refs, hyps, opts)
    for text in (*result.references, *result.hypotheses):
        for warning in text.warnings:
            print(f"{PROG}: warning: {text.path}: {warning}", file=sys.stderr)
    paths = args.input or [STDIN]
    names = _system_names(args.input) if args.input else ["stdin"]
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


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=JSON_INDENT, ensure_ascii=False)


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


def _json_out(objects: list[dict[str, Any]], args: argparse.Namespace) -> str:
    """A list with ``-i``; from standard input the single object sacrebleu prints."""
    return _dumps(objects if args.input else objects[0])


def report_corpus(systems: list[System], opts: BleuOptions, args: argparse.Namespace) -> str:
    scores = [(s, corpus_score(s.stats, opts)) for s in systems]
    width = args.width
    if args.score_only:
        return "\n".join(f"{sc.score:.{width}f}" for _, sc in scores)
    if args.format == "json":
        return _json_out([score_object(s, sc, width, len(systems) > 1) for s, sc in scores], args)
    if args.format == "tsv":
        rows = [{"name": s.name, **sc.as_dict()} for s, sc in scores]
        return _tsv(rows, ["name", "score", "precisions", "bp", "ratio", "hyp_len", "ref_len", "signature"])
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
        return _dumps(rows)
    if args.format == "tsv" and not args.score_only:
        cols = (["system"] if len(systems) > 1 else []) + ["seg_id", "score", "precisions", "bp", "ratio",
                                                             "hyp_len", "ref_len"]
        return _tsv(rows, cols)
    if not args.score_only:
        lines.append(f"signature: {corpus_score(systems[0].stats, opts).signature}")
    return "\n".join(lines)


def _seed(args: argparse.Namespace) -> int | None:
    from .core.significance import sacrebleu_seed

    return args.seed if args.seed is not None else sacrebleu_seed(os.environ.get("SACREBLEU_SEED"))


def report_paired(systems: list[System], opts: BleuOptions, args: argparse.Namespace) -> str:
    """sacrebleu's ``--paired-bs`` / ``--paired-ar`` output (baseline first), or its JSON / TSV."""
    from .core.bleu import score_fn
    from .core.significance import paired_test, signature_extra

    if len(systems) < 2:
        raise ConfigError("paired_bs" if args.paired_bs else "paired_ar",
                          "paired tests need at least two -i files (the first is the baseline)")
    test = "bs" if args.paired_bs else "ar"
    seed = _seed(args)
    results = paired_test([(s.name, s.stats) for s in systems], score_fn(opts), test, args.n_samples, seed,
                          args.confidence)
    n_conf = 1000 if (test == "ar" and args.confidence) else None
    extra = signature_extra(test, results[0].n_samples, seed, n_conf)
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
        return _dumps(rows)
    cols = ["system", "score", "p_value"] + (["ci_low", "ci_high"] if "ci_low" in rows[0] else []) + ["signature"]
    return _tsv(rows, cols)


def report_confidence(systems: list[System], opts: BleuOptions, args: argparse.Namespace) -> str:
    """sacrebleu's ``--confidence``: every score with its bootstrap mean and 95% half-width."""
    from .core.bleu import score_fn
    from .core.significance import signature_extra, systems_ci

    seed = _seed(args)
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
        return _json_out(rows, args)
    if args.format == "tsv":
        return _tsv([{"name": r["system"], **r} for r in rows],
                    ["name", "score", "mean", "ci", "ci_low", "ci_high", "signature"])
    return "\n".join(lines)


_EXPLANATION = """\
 - Each system is pairwise compared to {baseline}.
{what}
 - Null hypothesis: the system and the baseline translations are essentially
   generated by the same underlying process. For a given system and the baseline,
   the p-value is roughly the probability of the absolute score difference (delta)
   or higher occurring due to chance, under the assumption that the null hypothesis is correct.

 - Assuming a significance threshold of 0.05, the null hypothesis can be rejected
   for p-values < 0.05 (marked with "*"). This means that the delta is unlikely to be attributed
   to chance, hence the system is significantly "different" than the baseline.

 - NOTE: Significance does not tell whether a system is "better" than the baseline but rather
   emphasizes the "difference" of the systems in terms of the replicability of the delta.
"""


def format_paired_text(results: Sequence[Any], width: int = 2, signature: str | None = None,
                       metric: str = "BLEU", explain: bool = True) -> str:
    """sacrebleu-like text of paired-test results (no colours, one line per system): ``Baseline: A  30.12
    (30.10 ± 0.85)`` then ``B  31.02 (31.00 ± 0.88) (p = 0.0010)*``, the test header, explanation, signature."""
    if not results:
        return ""
    first = results[0]
    has_ci = any(r.mean is not None for r in results)
    labels = [f"Baseline: {r.name}" if r.baseline else r.name for r in results]
    cells = []
    for r in results:
        cell = f"{r.score:.{width}f}"
        if r.mean is not None and r.ci is not None:
            cell += f" ({r.mean:.{width}f} ± {r.ci:.{width}f})"
        if r.p_value is not None:
            cell += f" (p = {r.p_value:.4f})" + ("*" if r.significant() else "")
        cells.append(cell)
    head = (metric + " (μ ± 95% CI)") if has_ci else metric
    name_w = max(len("System"), *(len(x) for x in labels))
    cell_w = max(len(head), *(len(x) for x in cells))
    lines = [f"{'System':>{name_w}}  {head}", f"{'-' * name_w}  {'-' * cell_w}"]
    lines += [f"{lab:>{name_w}}  {cell:<{cell_w}}".rstrip() for lab, cell in zip(labels, cells)]
    lines.append("")
    if first.test == "paired_bs":
        msg = f"Paired bootstrap resampling test with {first.n_samples} resampling trials"
        what = "   Actual system score / bootstrap estimated true mean / 95% CI are provided for each metric.\n"
    else:
        msg = f"Paired approximate randomization test with {first.n_samples} trials"
        what = ("   Actual system score / bootstrap estimated true mean / 95% CI are provided for each metric.\n"
                if has_ci else "   Actual system score is provided for each metric.\n")
    lines += ["-" * len(msg), msg, "-" * len(msg)]
    if explain:
        lines.append(_EXPLANATION.format(baseline=f"Baseline: {first.name}", what=what))
    if signature:
        lines += ["-----------------", "Metric signatures", "-----------------", f" - {metric:<10} {signature}"]
    return "\n".join(lines).rstrip() + "\n"


def run(argv: Sequence[str] | None = None) -> str:
    """Parse ``argv``, score, and return the text to print (raises :class:`HarnessError` on bad input)."""
    args = build_parser().parse_args(argv)
    # sacrebleu's --sentence-level forces effective order (in the profiles that have it: sacrebleu's)
    opts = bleu_options(args, effective_order=args.sentence_level and get_profile(args.profile).effective_order)
    paired = args.paired_bs or args.paired_ar
    if args.sentence_level and (paired or args.confidence):
        raise ConfigError("sentence_level", "statistical tests and confidence intervals are corpus-level; drop "
                          "--sentence-level")
    systems = score_files(args, opts)
    if args.sentence_level:
        return report_sentences(systems, opts, args)
    if paired:
        return report_paired(systems, opts, args)
    if args.confidence:
        return report_confidence(systems, opts, args)
    return report_corpus(systems, opts, args)


def main(argv: Sequence[str] | None = None) -> int:
    print_collected_warnings_only()
    try:
        print(run(argv))
    except ConfigError as exc:
        print(f"{PROG}: error: --{exc.key.replace('_', '-')}: {exc.detail()}", file=sys.stderr)
        return 2
    except HarnessError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `harness-score ... | head`
        return 0
    return 0


def console() -> int:
    """The ``harness-score`` command: :func:`main`, then the process ends
    (:func:`~harness.arguments.console_command`)."""
    return console_command(main)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(console())
