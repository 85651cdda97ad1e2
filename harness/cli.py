"""``harness-score``: the one-off scorer for files, and a drop-in for the ``sacrebleu`` command.

With sacrebleu's arguments it prints what sacrebleu 2.x prints, on stdout and stderr, with its exit status: JSON
by default (``-f text`` its score lines, several systems its table, ``-f latex`` its LaTeX table), scores rounded
to ``-w`` decimals (default 1), its paired-test and confidence output, its log lines (``harness-score:`` where
sacrebleu writes ``sacreBLEU:``; ``-q`` silences them as sacrebleu's does). The differences are the signature's
extra fields (``order``, ``reflen``, ``profile``, ``w``) and the version (``harness:0.1.0``), and our errors: one
line naming the option, never a traceback (sacrebleu's exit status where sacrebleu refuses too). The test sets
sacrebleu downloads (``-t``, ``--echo``, ``--list``, ...) are refused in one line: give the reference files.

``harness-score REF [REF ...] [-i HYP ...]``: without ``-i`` the hypotheses are read from standard input
(tab-separated columns are several systems, as sacrebleu reads them). ``--full`` (or ``-f tsv``) prints our own
output instead: every field we compute (the unrounded score, precisions, ``bp``, ...), a list with ``-i``, and
what sacrebleu refuses (several systems with ``--sentence-level`` or ``--confidence``).

It starts fast: no mlflow, no hydra, no pandas (a test checks ``sys.modules``). Bad input is one line on stderr
naming the file and the line, exit status 1; a bad option exit status 2 naming the valid choices.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

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
from .score_inputs import DropInError, Inputs, read_inputs, tokenized_periods, warn_notes
from .score_output import (
    RESET_COLORS,
    SACREBLEU_FORMATS,
    Log,
    dropin_report,
    dumps,
    format_paired_text,
    json_out,
    paired_results,
    seed_of,
    text_lines,
    tsv,
)
from .text.files import files_statistics
from .version import __version__

PROG = "harness-score"
#: The metrics of ``-m`` (sacrebleu's names; ``ter`` is refused in one line).
METRICS = ("bleu", "chrf")
#: ``--format``: sacrebleu's formats, and ours (``tsv``).
FORMATS = (*SACREBLEU_FORMATS, "tsv")
#: sacrebleu's options that need its downloaded test sets: refused in one line, exit status 1.
TEST_SET_OPTIONS = (("download", "--download"), ("list", "--list"), ("citation", "--citation"),
                    ("echo", "--echo"), ("test_set", "--test-set"), ("origlang", "--origlang"),
                    ("subset", "--subset"))


class _Version(argparse.Action):
    """``--version``: ours, and which path computes (:func:`harness.native.path`), then exit."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None) -> None:
        from . import native

        print(f"{PROG} {__version__}: {native.path()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog=PROG,
        description="Score hypothesis files against reference files with BLEU or chrF: a drop-in for the sacrebleu "
                    "command (its options, defaults and output; sacrebleu-exact numbers).",
        epilog="Several REF files = several references per segment. Without -i the hypotheses are read from "
               "standard input (tab-separated columns = several systems). With several -i files, the first is the "
               "baseline of paired tests. sacrebleu's test sets (-t, --echo, --list, ...) are not supported: give "
               "the reference files.",
    )
    p.add_argument("--version", "-V", action=_Version, nargs=0,
                   help="the version, and which path computes (compiled kernels or numpy)")
    p.add_argument("refs", nargs="*", metavar="REF", help="reference file(s), one segment per line (.gz too)")
    p.add_argument("--input", "-i", nargs="+", default=None, metavar="HYP",
                   help="hypothesis file(s) (default: standard input, tab-separated columns = systems)")
    p.add_argument("--num-refs", "-nr", type=int_in(1, None, "references per line"), default=1,
                   help="one REF file holding this many tab-separated references per line (default 1)")
    p.add_argument("--encoding", "-e", default="utf-8", help="the encoding of the files (default utf-8)")
    p.add_argument("--metrics", "-m", nargs="+", default=["bleu"], choices=(*METRICS, "ter"), metavar="METRIC",
                   help="the metrics: bleu (default), chrf (chrF; chrF++ with --chrf-word-order 2), or both")
    p.add_argument("--sentence-level", "-sl", action="store_true", help="score every segment")
    add_bleu_arguments(p, effective_order_short=False)
    p.add_argument("--force", action="store_true",
                   help="no warning when 100 or more hypotheses end in a tokenized period")
    add_chrf_arguments(p)
    ter = p.add_argument_group("TER options (accepted as sacrebleu accepts them; -m ter is not supported)")
    for flag in ("--ter-case-sensitive", "--ter-asian-support", "--ter-no-punct", "--ter-normalized"):
        ter.add_argument(flag, action="store_true", help=argparse.SUPPRESS)
    t = p.add_argument_group("confidence intervals and paired tests (sacrebleu-exact with the same seed)")
    t.add_argument("--confidence", "-ci", action="store_true", help="95%% bootstrap confidence interval")
    t.add_argument("--confidence-n", "-cin", type=int, default=1000,
                   help="bootstrap resamples of --confidence (default 1000)")
    tests = t.add_mutually_exclusive_group()
    tests.add_argument("--paired-ar", "-par", action="store_true",
                       help="paired approximate randomization against the first -i file")
    tests.add_argument("--paired-bs", "-pbs", action="store_true",
                       help="paired bootstrap resampling against the first -i file")
    t.add_argument("--paired-ar-n", "-parn", type=int, default=10000,
                   help="trials of --paired-ar (default 10000)")
    t.add_argument("--paired-bs-n", "-pbsn", type=int, default=1000,
                   help="resamples of --paired-bs (default 1000)")
    t.add_argument("--paired-jobs", "-j", type=int_in(0, None, "workers"), default=1,
                   help="accepted as sacrebleu's (the numbers do not depend on it)")
    t.add_argument("--n-samples", type=int_in(1, None, "resamples"), default=None,
                   help="ours: resamples / trials of whichever test (overrides -cin, -pbsn, -parn)")
    t.add_argument("--seed", type=int_in(0, MAX_SEED, "seed"), default=None,
                   help="ours: random seed (default: $SACREBLEU_SEED, else 12345)")
    o = p.add_argument_group("output")
    o.add_argument("--quiet", "-q", action="store_true", help="no log lines on stderr")
    o.add_argument("--short", "-sh", action="store_true", help="the short signature")
    o.add_argument("--score-only", "-b", action="store_true", help="print the score only")
    o.add_argument("--width", "-w", type=int_in(0, 20, "decimals"), default=1,
                   help="decimals of the printed scores (default 1)")
    o.add_argument("--detail", "-d", action="store_true",
                   help="as sacrebleu's (its subsets need its test sets: says there are none)")
    o.add_argument("--no-color", "-nc", action="store_true", help="no terminal colours")
    o.add_argument("--format", "-f", default="json", choices=FORMATS,
                   help="json (default), text, latex (several systems), as sacrebleu's ($SACREBLEU_FORMAT "
                        "overrides them); tsv: ours")
    o.add_argument("--full", action="store_true",
                   help="ours: every field we compute (unrounded scores, precisions, bp, ...; a JSON list with -i), "
                        "and several systems with --sentence-level or --confidence")
    d = p.add_argument_group("sacrebleu's test sets (not supported: give the reference files)")
    d.add_argument("--test-set", "-t", default=None, help=argparse.SUPPRESS)
    d.add_argument("--origlang", "-ol", default=None, help=argparse.SUPPRESS)
    d.add_argument("--subset", default=None, help=argparse.SUPPRESS)
    d.add_argument("--download", default=None, help=argparse.SUPPRESS)
    d.add_argument("--echo", nargs="+", default=None, help=argparse.SUPPRESS)
    d.add_argument("--list", action="store_true", help=argparse.SUPPRESS)
    d.add_argument("--citation", "--cite", action="store_true", help=argparse.SUPPRESS)
    return p


# --------------------------------------------------------------------------------------------------------------
# Inputs: the files as sacrebleu reads them
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class System:
    name: str
    path: str
    stats: SegmentStats


# --------------------------------------------------------------------------------------------------------------
# BLEU
# --------------------------------------------------------------------------------------------------------------


def score_files(opts: BleuOptions, inputs: Inputs) -> list[System]:
    """Read, check and count every hypothesis (statistics only; scores are computed by the caller). Large files
    are read in chunks and only their statistics kept (:func:`harness.text.files.files_statistics`); the
    errors and warnings are those of reading each file whole."""
    from .text.tokenizers import check_usable

    check_usable(str(opts.tokenize))
    result = files_statistics(inputs.refs, inputs.hyps, opts)
    for text in (*result.references, *result.hypotheses):
        warn_notes(text)
    return [System(name, path, st) for name, path, st in zip(inputs.names, inputs.paths, result.statistics)]


#: sacrebleu's warning when 100 or more hypotheses end in a tokenized period (its lines, one per log record).
TOKENIZED_WARNING = (
    "That's 100 lines that end in a tokenized period ('.')",
    "It looks like you forgot to detokenize your test data, which may hurt your score.",
    "If you insist your data is detokenized, or don't care, you can suppress this message with the `force` "
    "parameter.",
)

#: sacrebleu's advice when ``-l`` names a language whose tokenizer ``--tokenize`` overrides.
_LANGUAGE_ADVICE = {"zh": ("zh", "Consider using the 'zh' or 'spm' tokenizer for Chinese."),
                    "ja": ("ja-mecab", "Consider using the 'ja-mecab' or 'spm' tokenizer for Japanese."),
                    "ko": ("ko-mecab", "Consider using the 'ko-mecab' or 'spm' tokenizer for Korean.")}


def bleu_warnings(args: argparse.Namespace, opts: BleuOptions, log: Log) -> None:
    """What sacrebleu's ``BLEU(...)`` logs when it is made: advice for ``-l`` with another tokenizer, and the
    renaming of ``spm``."""
    if args.tokenize is not None and args.language_pair:
        target = str(args.language_pair).split("-")[1]
        if target in _LANGUAGE_ADVICE and args.tokenize != _LANGUAGE_ADVICE[target][0]:
            log.warning(_LANGUAGE_ADVICE[target][1])
    if opts.tokenize == "spm":
        log.warning("Tokenizer 'spm' has been changed to 'flores101', and may be removed in the future.")


@dataclass
class BleuMetric:
    """BLEU of every system, as sacrebleu's output needs it (:class:`harness.score_output.DropInMetric`)."""

    opts: BleuOptions
    systems: list[System]
    periods: list[int]
    log: Log
    key = "BLEU"
    name = "BLEU"

    @property
    def score_fn(self) -> Any:
        from .core.bleu import score_fn

        return score_fn(self.opts)

    def stats(self, i: int) -> Any:
        return self.systems[i].stats

    def corpus(self, i: int) -> tuple[float, str]:
        score = corpus_score(self.systems[i].stats, self.opts)
        return score.score, _verbose(score)

    def signature(self, extra: Mapping[str, str] | None, short: bool) -> str:
        return signature(self.opts, self.systems[0].stats.nrefs_label, extra, short)

    def sentence_lines(self, i: int, width: int, score_only: bool, sig: str) -> list[str]:
        stats = self.systems[i].stats
        arrays = sentence_scores(stats, self.opts)
        stats = stats.truncate_order(self.opts.max_ngram_order)
        lines = []
        for k in range(len(stats)):
            score = segment_score(arrays, stats, k, self.opts)
            if score_only:
                lines.append(f"{score.score:.{width}f}")
            else:
                lines.append(f"BLEU|{sig} = " + score.format(width, signature=False).split(" = ", 1)[1])
        return lines

    def warn(self, i: int) -> None:
        if self.periods[i] >= 100:
            for line in TOKENIZED_WARNING:
                self.log.warning(line)


def _verbose(score: BleuScore) -> str:
    """sacrebleu's ``verbose_score``: the precisions, BP, ratio and lengths (they do not depend on the width)."""
    return score.format(1, signature=False).split(" = ", 1)[1].split(" ", 1)[1]


# --- our own output (--full, -f tsv) ---------------------------------------------------------------------------


def sacrebleu_fields(score: BleuScore, width: int) -> dict[str, Any]:
    """sacrebleu's JSON keys for a BLEU score: ``name``, ``score``, ``signature``, ``verbose_score``, every
    signature field (``version`` = our version)."""
    fields = split_signature(score.signature)
    fields["version"] = fields.pop("harness", __version__)
    return {"name": "BLEU", "score": score.score, "signature": score.signature, "verbose_score": _verbose(score),
            **fields}


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
    return text_lines([(s.name, sc) for s, sc in scores], width)


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
    """Our ``--paired-bs`` / ``--paired-ar`` output (baseline first): text, or JSON / TSV with every field."""
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
    """Our ``--confidence``: every score with its bootstrap mean and 95% half-width (several systems too)."""
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


def report_bleu(systems: list[System], opts: BleuOptions, args: argparse.Namespace) -> str:
    if args.sentence_level:
        return report_sentences(systems, opts, args)
    if args.paired_bs or args.paired_ar:
        return report_paired(systems, opts, args)
    if args.confidence:
        return report_confidence(systems, opts, args)
    return report_corpus(systems, opts, args)


# --------------------------------------------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The arguments, with sacrebleu's ``$SACREBLEU_FORMAT`` overriding ``--format`` (one of its formats; our
    ``tsv`` stays)."""
    args = build_parser().parse_args(argv)
    env = os.environ.get("SACREBLEU_FORMAT", "").lower()
    if env in SACREBLEU_FORMATS and args.format != "tsv":
        args.format = env
    return args


def refuse_unsupported(args: argparse.Namespace) -> None:
    """sacrebleu's test-set options and TER: one line each, before anything is read."""
    for key, flag in TEST_SET_OPTIONS:
        if getattr(args, key):
            if key in ("origlang", "subset"):
                what = "filtering a test set by its documents' metadata needs sacrebleu's test sets"
            else:
                what = "sacrebleu's downloadable test sets are not supported"
            raise DropInError(flag, f"{what}; give the reference files instead ({PROG} REF [REF ...] -i HYP; "
                              "`sacrebleu -t TEST -l SRC-TGT --echo ref > ref.txt` writes a test set's reference)")
    if "ter" in args.metrics:
        raise ConfigError("metrics", "TER is not supported (sacrebleu -m ter computes it)", METRICS)
    if args.full and args.format == "latex":
        raise ConfigError("full", "our own output is JSON or text: drop --format latex or --full",
                          ("json", "text"))


def check_like_sacrebleu(args: argparse.Namespace, n_systems: int, ours: bool) -> None:
    """sacrebleu's refusals once the systems are known (exit status 1, its words); our output (``ours``) also
    takes several systems at sentence level and with --confidence."""
    paired = args.paired_bs or args.paired_ar
    flag = "--paired-bs" if args.paired_bs else "--paired-ar"
    if args.sentence_level:
        if n_systems > 1 and not ours:
            raise DropInError("--sentence-level", "Only one system can be evaluated in sentence-level mode.")
        if args.confidence or paired:
            raise DropInError("--confidence" if args.confidence else flag,
                              "Statistical tests are unavailable in sentence-level mode.")
    if paired and n_systems == 1:
        raise DropInError(flag, "Paired tests require multiple input systems given to --input (-i).")
    if n_systems > 1 and args.confidence and not ours:
        raise DropInError("--confidence", "Use paired tests (--paired) for multiple systems.")


def _our_samples(args: argparse.Namespace) -> None:
    """Our output counts resamples in ``--n-samples``: sacrebleu's counts fill it when it is not given (their
    values below 1 mean the default, as in sacrebleu's paired tests)."""
    if args.n_samples is not None:
        return
    if args.paired_bs or args.paired_ar:
        n = args.paired_bs_n if args.paired_bs else args.paired_ar_n
    else:
        n = args.confidence_n if args.confidence else 0
    args.n_samples = n if n > 0 else None


def run(argv: Sequence[str] | None = None) -> str:
    """Parse ``argv``, score, and return the text to print (raises :class:`HarnessError` on bad input)."""
    args = parse_args(argv)
    # sacrebleu's colours: on a terminal, unless --no-color or $NO_COLOR (colorama then resets them at exit)
    _STATE["colors"] = not args.no_color and not os.environ.get("NO_COLOR") and sys.stdout.isatty()
    refuse_unsupported(args)
    ours = args.full or args.format == "tsv"
    log = Log(PROG, args.quiet)
    if args.sentence_level and len(args.metrics) > 1:
        raise DropInError("--metrics", "Only one metric can be used in sentence-level mode.")
    if args.num_refs != 1 and len(args.refs) > 1:
        raise DropInError("--num-refs", "The --num-refs argument allows you to provide any number of tab-delimited "
                          "references in a single file, and you cannot then provide multiple reference files.")
    if not args.refs:
        raise DropInError("REF", "no reference files: give them before -i/--input (sacrebleu's test sets, -t, are "
                          "not supported)")
    # sacrebleu's --sentence-level forces effective order (in the profiles that have it: sacrebleu's)
    opts = bleu_options(args, effective_order=args.sentence_level and get_profile(args.profile).effective_order)
    metrics = list(dict.fromkeys(args.metrics))  # sacrebleu's dict of metrics: the first of each, in order
    inputs = read_inputs(args, log, dropin=not ours)
    check_like_sacrebleu(args, len(inputs.hyps), ours)
    if "bleu" in metrics:
        bleu_warnings(args, opts, log)
    found: dict[str, Any] = {}
    if "bleu" in metrics:
        systems = score_files(opts, inputs)
        periods = [tokenized_periods(s) if not args.force else 0 for s in inputs.hyps]
        found["bleu"] = (systems, periods)
    if "chrf" in metrics:
        from . import score_chrf

        found["chrf"] = score_chrf.chrf_files((inputs.refs, inputs.hyps), inputs.names, inputs.paths,
                                              chrf_options(args), warn="bleu" not in metrics)
    if ours:
        return our_report(args, opts, found, log)
    from .score_chrf import ChrfMetric

    scored: list[Any] = []
    for metric in metrics:
        if metric == "bleu":
            systems, periods = found["bleu"]
            scored.append(BleuMetric(opts, systems, periods, log))
        else:
            scored.append(ChrfMetric(chrf_options(args), found["chrf"]))
    return dropin_report(scored, inputs.labels, inputs.stdin, args, log, _STATE["colors"])


def our_report(args: argparse.Namespace, opts: BleuOptions, found: dict[str, Any], log: Log) -> str:
    """Our own output (``--full``, ``-f tsv``): every metric's, in sacrebleu's order of metrics."""
    _our_samples(args)
    outputs = []
    if "bleu" in found:
        systems, periods = found["bleu"]
        for i in range(len(systems)):
            if periods[i] >= 100:
                for line in TOKENIZED_WARNING:
                    log.warning(line)
        outputs.append(report_bleu(systems, opts, args))
    if "chrf" in found:
        from . import score_chrf

        outputs.append(score_chrf.report(found["chrf"], chrf_options(args), args))
    if args.format == "json" and len(outputs) > 1 and not args.score_only:
        # one JSON document: the metrics' objects (or lists of them) in one list
        items: list[Any] = []
        for out in outputs:
            value = json.loads(out)
            items += value if isinstance(value, list) else [value]
        return dumps(items)
    return "\n".join(outputs)


#: What the run decided that its end needs: ``colors``, sacrebleu's colours are on (see :func:`main`).
_STATE = {"colors": False}


def main(argv: Sequence[str] | None = None) -> int:
    print_collected_warnings_only()
    _STATE["colors"] = False
    status = print_or_report(PROG, lambda: run(argv))
    if _STATE["colors"]:  # sacrebleu's colorama writes its reset when the process ends, even after an error
        sys.stdout.write(RESET_COLORS)
        sys.stdout.flush()
    return status


def console() -> int:
    """The ``harness-score`` command: :func:`main`, then the process ends
    (:func:`~harness.arguments.console_command`)."""
    return console_command(main)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(console())
