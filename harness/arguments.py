"""Command-line parsing shared by the entry points: usage errors as one line, bounded integers, the BLEU options;
and how a console command ends its process (:func:`console_command`).

Must stay light (the standard library and :mod:`harness.core.options`): ``harness-score`` imports it on its fast
path.
"""

from __future__ import annotations

import argparse
import atexit
import gc
from typing import Any, Callable, TypeVar

from .core.chrf import ChrfOptions
from .core.options import TOKENIZERS, BleuOptions, language_tokenizer, make_options
from .core.profiles import NLTK_METHODS, PROFILES, get_profile
from .core.stats import REF_LENGTH_RULES
from .errors import ConfigError, HarnessError

T = TypeVar("T")


def skip_last_collection() -> None:
    """When this process ends, exempt the objects alive then from the interpreter's last garbage collection
    (``gc.freeze``, registered with ``atexit`` once per process: it runs after the handlers registered later).

    That collection walks and tears down large object graphs (MLflow's, matplotlib's; numba's, when the kernels
    were numba's: 2.4 s of the demo job's 20 s and 0.5 s of a 3 s ``harness-score`` run, measured then) just before
    the process ends. Nothing is lost by skipping it:
    every file is closed by the code that wrote it, the other ``atexit`` handlers run, and the interpreter still
    flushes the standard streams. For processes that end after their work: the console commands, and the
    workers of a sweep's launcher, which run jobs without a console command."""
    global _SKIPPING
    if not _SKIPPING:
        atexit.register(gc.freeze)
        _SKIPPING = True


_SKIPPING = False


def console_command(main: Callable[[], T]) -> T:
    """``main()`` as a console command's whole run, its process ended without the last collection
    (:func:`skip_last_collection`). Arguments that the file-system encoding could not decode (non-ASCII names
    under ``LC_ALL=C`` with ``PYTHONUTF8=0``: Python then decodes them as ASCII with surrogates) are one line and
    exit status 2, before anything else: they would fail later as tracebacks or as false "no such file" errors."""
    import os
    import sys

    skip_last_collection()
    for arg in sys.argv[1:]:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            prog = os.path.basename(sys.argv[0]) or "harness"
            print(f"{prog}: error: the argument {ascii(arg)} cannot be decoded in this locale's encoding "
                  f"({sys.getfilesystemencoding()}); run under a UTF-8 locale (e.g. LC_ALL=C.UTF-8) or with "
                  "PYTHONUTF8=1", file=sys.stderr)
            raise SystemExit(2)
    return main()


#: Loggers whose warnings a command also collects (``TextFile.warnings``, the human scores' notes) and prints itself.
COLLECTED_WARNINGS = ("harness.text.reading", "harness.job.human")


def print_collected_warnings_only() -> None:
    """For ``harness-score`` and ``harness-compare``, which print the warnings of the files they read themselves
    (``PROG: warning: ...``): the loggers that also report them stay quiet, so each is printed once."""
    import logging

    for name in COLLECTED_WARNINGS:
        logging.getLogger(name).setLevel(logging.ERROR)


class OneLineParser(argparse.ArgumentParser):
    """Usage errors are one line naming the option, exit status 2 (``hint`` is appended, e.g. " (see --help)")."""

    hint = ""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}{self.hint}\n")


def int_in(lo: int, hi: int | None, what: str) -> Callable[[str], int]:
    """An argparse ``type`` accepting integers from ``lo`` to ``hi`` (None: no upper bound); ``what`` names the
    value in the error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer ({what}), got {text!r}") from None
        if value < lo or (hi is not None and value > hi):
            bound = f"from {lo} to {hi}" if hi is not None else f">= {lo}"
            raise argparse.ArgumentTypeError(f"must be {bound} ({what}), got {value}")
        return value

    return parse


def add_bleu_arguments(p: argparse.ArgumentParser, *, effective_order_short: bool = True) -> None:
    """The BLEU options of ``harness-score`` and ``harness-compare`` (sacrebleu's flags plus ours).
    ``effective_order_short``: ``-e`` is ``--effective-order`` (``harness-compare``); ``harness-score`` leaves
    ``-e`` to sacrebleu's ``--encoding``."""
    g = p.add_argument_group("BLEU options (defaults: the profile's, sacrebleu's for the default profile)")
    g.add_argument("--tokenize", "-tok", default=None, choices=TOKENIZERS, metavar="TOK",
                   help=f"tokenizer: {', '.join(TOKENIZERS)} (default 13a, or the target language's with -l)")
    g.add_argument("--language-pair", "-l", default=None, metavar="SRC-TGT",
                   help="the language pair, as sacrebleu's -l: without --tokenize, the target language picks the "
                        "tokenizer (zh, ja-mecab, ko-mecab; 13a for the others)")
    g.add_argument("--lowercase", "-lc", action="store_true", default=None, help="case-insensitive BLEU")
    g.add_argument("--smooth-method", "-s", default=None,
                   help=f"none, floor, add-k, exp (default); nltk profile: {', '.join(NLTK_METHODS)}")
    g.add_argument("--smooth-value", "-sv", type=float, default=None, help="value for floor / add-k / method1")
    g.add_argument("--max-ngram-order", type=int_in(1, 100, "n-gram order"), default=4,
                   help="maximum n-gram order (default 4)")
    g.add_argument("--ref-length", default=None, choices=REF_LENGTH_RULES,
                   help="brevity-penalty reference length rule (default closest)")
    g.add_argument("--effective-order", *(["-e"] if effective_order_short else []), action="store_true",
                   help="stop at the highest order with n-grams")
    g.add_argument("--weights", type=float, nargs="+", default=None, help="n-gram weights, one per order")
    g.add_argument("--profile", default="sacrebleu", choices=PROFILES, help="reproduce another tool's numbers")


def bleu_options(args: argparse.Namespace, *, effective_order: bool = False) -> BleuOptions:
    """The options of :func:`add_bleu_arguments`' flags (``effective_order``: forced on, as sacrebleu's
    ``--sentence-level`` does)."""
    tokenize = args.tokenize
    if tokenize is None and args.language_pair is not None:
        pair = str(args.language_pair).split("-")
        if len(pair) != 2 or not all(pair):
            raise ConfigError("language_pair", f"expected SRC-TGT, e.g. en-ja, got {args.language_pair!r}",
                              expected="SRC-TGT", got=args.language_pair)
        if get_profile(args.profile).language_tokenizer:
            tokenize = language_tokenizer(pair[1])
    options: dict[str, Any] = {
        "profile": args.profile,
        "tokenize": tokenize,
        "lowercase": args.lowercase,
        "smooth_method": args.smooth_method,
        "smooth_value": args.smooth_value,
        "max_ngram_order": args.max_ngram_order,
        "ref_length": args.ref_length,
        "weights": None if args.weights is None else tuple(args.weights),
    }
    if args.effective_order or effective_order:
        options["effective_order"] = True
    return make_options(**options)


def add_chrf_arguments(p: argparse.ArgumentParser) -> None:
    """sacrebleu's chrF flags (``-m chrf``)."""
    d = ChrfOptions()
    g = p.add_argument_group("chrF options (-m chrf; sacrebleu's flags and defaults)")
    g.add_argument("--chrf-char-order", "-cc", type=int_in(1, 100, "character n-gram order"), default=d.char_order,
                   help=f"character n-gram order (default {d.char_order})")
    g.add_argument("--chrf-word-order", "-cw", type=int_in(0, 100, "word n-gram order"), default=d.word_order,
                   help="word n-gram order (default 0; 2 gives chrF++)")
    g.add_argument("--chrf-beta", type=int_in(0, 100, "beta"), default=d.beta,
                   help=f"the weight of recall (default {d.beta})")
    g.add_argument("--chrf-whitespace", action="store_true", help="keep whitespace in character n-grams")
    g.add_argument("--chrf-lowercase", action="store_true", help="case-insensitive chrF")
    g.add_argument("--chrf-eps-smoothing", action="store_true",
                   help="chrF++.py's, NLTK's and Moses' smoothing instead of the effective order")


def chrf_options(args: argparse.Namespace) -> ChrfOptions:
    """The options of :func:`add_chrf_arguments`' flags."""
    return ChrfOptions(char_order=args.chrf_char_order, word_order=args.chrf_word_order, beta=args.chrf_beta,
                       lowercase=args.chrf_lowercase, whitespace=args.chrf_whitespace,
                       eps_smoothing=args.chrf_eps_smoothing)


def print_or_report(prog: str, produce: Callable[[], str], flag: Callable[[str], str] | None = None,
                    catch_exit: bool = False) -> int:
    """A command's run: print what ``produce()`` returns, or its error as one line on stderr, and return the exit
    status (a bad option 2, naming it with ``flag(key)``, default ``--key-name``; bad input its error's status;
    130 on Ctrl-C; 0 when the reader of a pipe went away). ``catch_exit``: argparse's exits (``--help``, a usage
    error already printed) become statuses too."""
    import sys

    try:
        print(produce())
    except SystemExit as exc:
        if not catch_exit:
            raise
        return exc.code if isinstance(exc.code, int) else 2
    except ConfigError as exc:
        named = flag(exc.key) if flag is not None else "--" + exc.key.replace("_", "-")
        print(f"{prog}: error: {named}: {exc.detail()}", file=sys.stderr)
        return 2
    except HarnessError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `... | head`
        return 0
    return 0
