"""``harness-history``: one system's BLEU across its versions, from the MLflow runs alone.

Every ``harness`` job logs a nested MLflow run per system version x refset x variant (metric ``bleu``, ``ci_low``,
``ci_high``; tags ``system``, ``system_version``, ``refset``, ``variant``, ``signature``, ``sha256.ref.*``) under a
parent run holding the job's tables and ``manifest.json`` as artifacts; MLflow records each job once. Versions
(``systems/NAME@VERSION.txt``) may be scored together in one job or in separate jobs, in any mix. This command
picks the runs of one system, refset and variant, keeps the newest run of every version, orders the versions
(numerically when every version is a number, else by when each was first scored, the versions of one job in
natural order) and prints, per version: BLEU, its confidence interval, the delta to the previous version and the
p-value of a paired test against the previous version and against the best earlier one.

Paired tests are computed from the per-segment sufficient statistics stored in each job's
``segment_scores.parquet`` artifact (the rows of the version's ``system_version``; downloaded through MLflow, so it
works against a remote tracking server and after the job folders are gone, and trusted only when the job's
``manifest.json`` artifact lists it with the same SHA-256), never recomputed from text, and only between runs with
the same signature, the same reference hashes and the same number of segments; anything else is refused, naming the
field and both values.

``--fail-on-regression`` turns it into a gate: exit status 1 (one line on stderr) when the newest version is
significantly worse (``p < --alpha``, BLEU lower) than the previous version or the best earlier one.

Exit status: 0 ok; 1 a regression (with ``--fail-on-regression``); 2 no answer possible (bad arguments, unknown
experiment/system/refset/variant/version, no runs, runs that cannot be compared, a gate with a single version,
an unreachable store). Errors are one line on stderr, never a traceback. This module imports neither Hydra nor
(until it needs it) MLflow.

The package: :mod:`.runs` (reading the MLflow runs into :class:`~.result.Version` records), :mod:`.statistics` (the
comparability checks and the paired tests on the logged statistics), :mod:`.output` (text, JSON, TSV, the chart,
the gate's message), :mod:`.command` (the command line); :mod:`.result` holds the frozen results.
"""

from .command import PROG, build_parser, console, history, main, run
from .result import History, HistoryError, Step, Version
from .runs import order_versions

__all__ = ["PROG", "History", "HistoryError", "Step", "Version", "build_parser", "console", "history", "main",
           "order_versions", "run"]
