"""The ``harness-history`` command: its arguments, the history of one system (:func:`history`), ``--compare`` of the
last two versions, and the exit statuses (see the package docstring)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from ..arguments import OneLineParser, console_command
from ..errors import HarnessError
from .output import as_json, format_text, format_tsv, gate, plot
from .result import History, HistoryError
from .runs import (
    cut_versions,
    default_experiment,
    default_tracking_uri,
    experiment_id,
    open_client,
    select_versions,
    system_runs,
)
from .statistics import check_comparable, logged_statistics, tested_steps, untested_steps

PROG = "harness-history"


class _Parser(OneLineParser):
    hint = " (see --help)"


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG, description="One system's BLEU across its versions, from the MLflow runs of harness jobs, with "
        "paired tests between versions on the stored per-segment statistics.",
        epilog="Exit status: 0 ok, 1 regression (--fail-on-regression), 2 nothing can be answered.")
    p.add_argument("--system", required=True, metavar="NAME", help="the system (MLflow tag system)")
    p.add_argument("--experiment", default=None,
                   help="MLflow experiment (harness experiment_name; default: the experiment of the jobs under "
                        "--runs-dir that has runs of --system)")
    p.add_argument("--tracking-uri", default=None, metavar="URI",
                   help="MLflow tracking URI (default: sqlite:///<abs>/RUNS_DIR/mlflow.db, like harness)")
    p.add_argument("--runs-dir", default="runs", help="where the default local store lives (default runs)")
    p.add_argument("--refset", default=None, help="reference set, e.g. ref-C+ref-D (default: the only one found)")
    p.add_argument("--variant", default="sacrebleu", help="BLEU variant (default sacrebleu)")
    p.add_argument("--dataset", default=None, help="only runs on this dataset (MLflow tag dataset)")
    p.add_argument("--up-to", default=None, metavar="VERSION", help="the history up to and including VERSION")
    p.add_argument("--test", choices=["bs", "ar"], default="bs",
                   help="paired bootstrap (bs, default) or approximate randomization (ar)")
    p.add_argument("--n-samples", type=int, default=None, metavar="N",
                   help="resamples (default: 1000 for bs, 10000 for ar)")
    p.add_argument("--seed", type=int, default=12345, help="seed of the resampling (default 12345)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--format", choices=["text", "json", "tsv"], default=None,
                   help="output format (default text; with --fail-on-regression nothing unless given)")
    p.add_argument("--plot", default=None, metavar="PATH.png", help="write a line chart of BLEU over versions")
    p.add_argument("--compare", nargs="?", const="", default=None, metavar="PAGE.html",
                   help="also write the comparison page of the last two versions (as harness-compare: where BLEU "
                        "moved), from the dataset folder they were scored in; default compare-A-vs-B.html here")
    p.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1 when the newest version is significantly worse than the previous or the best "
                        "earlier one (quiet otherwise)")
    return p


def history(args: argparse.Namespace) -> History:
    """Collect, check and test: the versions in order, each against the ones before it."""

    uri = args.tracking_uri or default_tracking_uri(args.runs_dir)
    client = open_client(uri)
    name = args.experiment or default_experiment(client, Path(args.runs_dir), args.system, uri)
    try:
        return _history(args, client, uri, name)
    except HistoryError as exc:  # every error names where it looked
        raise HistoryError(f"{exc} [store {uri}, experiment {name!r}]") from None


def _history(args: argparse.Namespace, client: Any, uri: str, name: str) -> History:
    from ..core.bleu import score_fn
    from ..core.options import make_options
    from ..core.profiles import get_profile
    from ..core.signature import parse_signature
    from ..core.significance import DEFAULT_SAMPLES, TEST_NAMES
    from ..errors import ConfigError

    exp = experiment_id(client, name)
    versions, refset = select_versions(system_runs(client, exp, args.system), args.system, args.refset, args.variant,
                                       args.dataset)
    versions = cut_versions(versions, args.up_to)
    check_comparable(versions, args.system)
    signature = versions[0].signature
    try:
        opts = make_options(**parse_signature(signature)["options"])
    except (ConfigError, ValueError, KeyError) as exc:
        raise HistoryError(f"cannot read the signature {signature!r} ({exc})") from None
    test, n_samples = TEST_NAMES[args.test], args.n_samples or DEFAULT_SAMPLES[args.test]
    steps, no_tests = untested_steps(versions), None
    if len(versions) >= 2 and not get_profile(opts.profile).additive:
        no_tests = (f"variant {args.variant!r} (profile {opts.profile}) is not a function of summed segment "
                    "statistics: no paired tests between versions")
    elif len(versions) >= 2:
        fn = score_fn(opts)
        mats = logged_statistics(client, versions, args.system, refset, args.variant, fn)
        steps, test, n_samples = tested_steps(versions, mats, fn, args.test, args.n_samples, args.seed, args.alpha)
    return History(system=args.system, experiment=name, tracking_uri=uri,
                   dataset=",".join(sorted({v.dataset for v in versions})), refset=refset, variant=args.variant,
                   signature=signature, alpha=args.alpha, seed=args.seed, test=test, n_samples=n_samples,
                   versions=tuple(versions), steps=steps, no_tests=no_tests)


def compare_last(args: argparse.Namespace, history: History) -> Path:
    """``--compare``: where BLEU moved between the last two versions, as ``harness-compare --dataset`` would show
    it, from the dataset folder both were scored in; refused unless their texts and references there are the
    ones MLflow recorded (same SHA-256)."""
    from ..core.options import make_options
    from ..core.signature import parse_signature
    from ..job.comparison import DEFAULT_SAMPLES, ComparisonRequest, compare, page_contents, page_name
    from ..job.dataset import read_layout, refset_name
    from ..job.inputs import pair_inputs
    from ..sinks.pages import write_page

    versions = history.versions
    if len(versions) < 2:
        raise HistoryError(f"--compare needs two versions of {history.system}; found {len(versions)}")
    a, b = versions[-2], versions[-1]
    roots = {a.dataset_root, b.dataset_root}
    if None in roots or len(roots) != 1:
        found = ", ".join(f"{v.label}: {v.dataset_root or 'no dataset folder recorded'}" for v in (a, b))
        raise HistoryError(f"--compare reads the texts from the dataset folder both versions were scored in ({found})")
    root = Path(str(a.dataset_root))
    stems = [history.system if not v.version else f"{history.system}@{v.version}" for v in (a, b)]
    pair = pair_inputs(read_layout(root), stems, list(a.refs_used), None)
    for v, text in zip((a, b), pair.systems):
        if text.sha256 != v.system_sha256:
            raise HistoryError(f"{text.path} changed since version {v.label} was scored (SHA-256 {text.sha256[:12]} "
                               f"now, {v.system_sha256[:12]} in run {v.run_id}): the comparison would not be of the "
                               "scored text")
    for ref in pair.refs:
        recorded = a.ref_hashes.get(f"sha256.ref.{ref.name}")
        if recorded != ref.sha256:
            raise HistoryError(f"{ref.path} changed since the versions were scored (SHA-256 {ref.sha256[:12]} now, "
                               f"{str(recorded)[:12]} recorded)")
    opts = make_options(**parse_signature(history.signature)["options"])
    result = compare(ComparisonRequest.of_files(
        pair.systems[0], pair.systems[1], pair.refs, opts, labels=(stems[0], stems[1]), source=pair.source,
        human=pair.human, human_name=pair.human_title, seed=args.seed, n_samples=args.n_samples or DEFAULT_SAMPLES,
        dataset=pair.dataset, refset=refset_name([r.name for r in pair.refs]), variant=history.variant))
    page = Path(args.compare) if args.compare else Path(page_name(stems[0], stems[1]))
    return write_page(page, *page_contents(result, page))["page"]


def run(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.n_samples is not None and args.n_samples < 1:
        raise HistoryError("--n-samples must be a positive integer")
    if not 0.0 < args.alpha < 1.0:
        raise HistoryError("--alpha must be between 0 and 1")
    if args.plot is not None and not args.plot.lower().endswith(".png"):
        raise HistoryError(f"--plot {args.plot}: expected a .png path")
    if args.compare and not args.compare.lower().endswith((".html", ".htm")):
        raise HistoryError(f"--compare {args.compare}: expected an .html path")
    found = history(args)
    fmt = args.format or (None if args.fail_on_regression else "text")
    if fmt == "text":
        sys.stdout.write(format_text(found))
    elif fmt == "json":
        sys.stdout.write(json.dumps(as_json(found), indent=1) + "\n")
    elif fmt == "tsv":
        sys.stdout.write(format_tsv(found))
    if args.plot is not None:
        plot(Path(args.plot), found)
    if args.compare is not None:
        page = compare_last(args, found)
        print(f"comparison of the last two versions: {page}", file=sys.stderr if fmt == "json" else sys.stdout)
    if args.fail_on_regression:
        message = gate(found)
        if message is not None:
            print(f"{PROG}: {message}", file=sys.stderr)
            return 1
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point (``harness-history``): one line on stderr and a non-zero status on any error."""
    try:
        status = run(argv)
    except HarnessError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        status = 2
    except KeyboardInterrupt:
        status = 130
    except Exception as exc:  # MLflow / network / file errors: one line, never a traceback
        text = str(exc).strip().splitlines()
        print(f"{PROG}: error: {type(exc).__name__}: {text[0] if text else ''}", file=sys.stderr)
        status = 2
    sys.stdout.flush()
    raise SystemExit(status)


def console() -> None:
    """The ``harness-history`` command: :func:`main`, then the process ends
    (:func:`~harness.arguments.console_command`)."""
    console_command(main)
