"""Running one job, end to end: spec -> inputs -> statistics -> analysis -> published folder -> MLflow.

The order of what can fail is deliberate: everything that can be checked from the config is checked by the spec;
the dataset's layout is read, the job's folder is checked (not ours, or holding an input: refused), the inputs are
read and checked, and only then is the folder created and claimed (locked), so that bad input leaves no folder;
all before any statistics are computed. Results are written into the
folder's staging area and published at once (:mod:`harness.job.folder`); MLflow is told last, and if it cannot
be, the tables are there already and ``tracking_pending.json`` says what is missing. Two child processes work
beside the job (:mod:`harness.job.aside`). One, forked once the inputs are read, draws the figures: it imports
matplotlib while this process computes the statistics, and draws (split over two processes) as soon as it gets
the result, while this process writes the tables. The other is MLflow's (:func:`tracking_aside`,
:mod:`harness.tracking_child`; ``harness`` forks it before Hydra composes the config): it starts MLflow meanwhile
(its imports, then the store and the experiment once the job says where), then waits for the published job, logs
it and sends back where (:func:`track`); this process never imports MLflow. Without ``os.fork``, or outside the
main thread, MLflow starts in this process while the figures are drawn, and logs here (no run is logged before the
folder is published, either way).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence, TextIO

from . import native
from .errors import HarnessError, Terminated, TrackingError
from .job import figures, report
from .job.analysis import analyse
from .job.aside import Aside, can_fork
from .job.dataset import refset_name
from .job.folder import PENDING, JobFolder
from .job.inputs import check_selection, dataset_name, layout_of, load_inputs
from .job.result import JobResult
from .job.spec import JobSpec, identity_digest
from .job.statistics import StatisticsCache, job_statistics, n_blocks
from .job.tables import build_tables, segment_scores, table_metadata
from .progress import Progress
from .sinks.parquet import write_table
from .storage.files import OutputError, atomic_write
from .storage.manifest import MANIFEST, verified_files
from .text.tokenizers import check_usable
from .tracking_child import Target, discard_early, mlflow_child, start_tracking

if TYPE_CHECKING:
    import pyarrow as pa

    from .sinks.mlflow import JobPayload, Logged

log = logging.getLogger("harness")

#: How long a job interrupted while MLflow logs in its child process (:func:`tracking_aside`) waits for the child
#: to mark the runs it created KILLED before it kills the child (SLURM sends SIGKILL 30 s after SIGTERM).
MARKING_GRACE = 20.0


@dataclass(frozen=True)
class Outcome:
    """What a finished job left: its result, folder, MLflow parent run (None without tracking) and any
    tracking error (the tables are published regardless)."""

    result: JobResult
    folder: Path
    parent_run: str | None
    tracking_error: TrackingError | None
    seconds: float
    experiment_id: str | None = None  # the MLflow experiment, with the parent run


def _explicit_inputs(spec: JobSpec) -> list[Path]:
    out = list(spec.refset_paths)
    if spec.system is not None:
        out.append(spec.system.path)
    for p in (spec.human.seg_path, spec.human.sys_path):
        if p is not None:
            out.append(p)
    return out


def write_pairs(result: JobResult, staging: Path) -> None:
    """``compare=[[A, B], ...]``: each pair's page and tables into ``compare/`` of the staging folder."""
    from .job.comparison import page_contents, page_name
    from .sinks.pages import write_page

    for pair in result.pairs:
        page = staging / report.PAIRS_FOLDER / page_name(pair.a.label, pair.b.label)
        write_page(page, *page_contents(pair, page))


def write_tables(result: JobResult, staging: Path, config_yaml: str, drawing: Aside | None = None
                 ) -> dict[str, pa.Table]:
    """The tables, the config and the pages of compared pairs into the staging folder; returns the tables (MLflow
    previews the small ones). ``drawing`` (:func:`harness.job.figures.drawn_aside`) is sent the tables it reads
    first and draws the figures from them meanwhile: before the segment table, the largest, is built."""
    meta = table_metadata(result, config_yaml)
    tables = build_tables(result, segments=False)
    if drawing is not None:  # the figures are drawn from the tables alone: anyone can redraw them
        drawing.send(figures.FigureTables.of(tables, meta))
    if result.spec.segment_table:
        tables["segment_scores"] = segment_scores(result)
    for name, tab in tables.items():
        write_table(tab, staging / f"{name}.parquet", meta)
    atomic_write(staging / "config.yaml", config_yaml)
    write_pairs(result, staging)
    return tables


def write_report(result: JobResult, staging: Path, drawing: Aside | None = None) -> None:
    """``report.md``, showing the figures ``drawing`` drew (waited for here)."""
    drawn = drawing() if drawing is not None else []
    atomic_write(staging / "report.md", report.render(result, [n for n in drawn if n.endswith(".png")]))


@contextlib.contextmanager
def tracking_aside(spec: JobSpec, experiment: str, close_fds: Sequence[int] = ()) -> Iterator[Aside | None]:
    """MLflow's child process (:mod:`harness.tracking_child`: the one ``harness`` forked before Hydra composed the
    config, else one forked now): it starts MLflow while the job computes, and logs the job when :func:`track`
    sends it, while this process waits; its :class:`~harness.errors.TrackingError` comes back as raised. None
    without tracking, and where the child could not be interrupted with the job (no ``os.fork``, not the main
    thread: :func:`~harness.job.aside.can_fork`): MLflow then starts and logs in this process. Leaving the block
    kills the child unless it was waited for. ``close_fds`` are closed in a child forked now (the job folder's
    lock)."""
    if spec.tracking_uri is None or not can_fork():
        discard_early()
        yield None
        return
    with mlflow_child(Target.of(spec, experiment), close_fds) as child:
        yield child


def logged_aside(child: Aside, payload: JobPayload, artifacts: dict[str, Path], uri: str) -> Logged:
    """Send the job to MLflow's child process (:func:`tracking_aside`) and wait for it to be logged. Its
    :class:`~harness.errors.TrackingError` is raised as is, any other end of it (a crash) as a TrackingError too.
    Interrupted (Ctrl-C, SIGTERM), this process passes the signal on and gives the child
    :data:`MARKING_GRACE` seconds to mark the runs it created KILLED, then ends as interrupted."""
    from .sinks.mlflow import Logged

    try:
        child.send((payload, artifacts))
        value = child()
    except TrackingError:
        raise
    except Exception as exc:  # noqa: BLE001 - the child died or failed outside the logging: one line all the same
        why = str(exc).splitlines()[0].removeprefix(f"{child.what} failed: ")
        raise TrackingError(f"MLflow logging to {uri} failed ({why})") from None
    except BaseException as exc:
        child.interrupt(signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT, MARKING_GRACE)
        raise
    return Logged(value["experiment_id"], value["parent_id"])


@contextlib.contextmanager
def sigterm_as_interruption() -> Iterator[None]:
    """SIGTERM (a SLURM time limit, ``kill``) raises :class:`~harness.errors.Terminated` where the job is, so it
    ends as Ctrl-C does: the folder's status says ``interrupted``, MLflow's runs are marked KILLED, the command
    prints one line and exits 143 (before, it died at once, silent, its status left ``running``). The main
    thread only (a signal handler cannot be set elsewhere)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum: int, _frame: Any) -> None:
        raise Terminated(f"terminated by signal {signum} (SIGTERM)")

    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def say_languages(spec: JobSpec) -> None:
    """One line per tokenizer the target language picked, naming where the language came from."""
    where = "dataset.target_lang" if spec.target_lang else "meta.json target_lang"
    for (lang, rule, tokenizer), names in spec.language_choices().items():
        whose = "sacrebleu's choice (-l)" if rule == "sacrebleu" else f"the {rule} rule"
        log.info("target language %s (%s): %s tokenized with %s, %s; a variant's tokenize= chooses otherwise",
                 lang, where, ", ".join(names), tokenizer, whose)


def mlflow_command() -> str:
    """The ``mlflow`` command of this installation, as a path that works without the virtualenv activated (the
    one next to this Python; else ``python -m mlflow`` with this Python), quoted for a POSIX shell."""
    import shlex

    beside = Path(sys.executable).parent / "mlflow"
    if beside.is_file():
        return shlex.quote(str(beside))
    return f"{shlex.quote(sys.executable)} -m mlflow"


def with_experiment(config_yaml: str, experiment: str) -> str:
    """The saved config says what ran: ``experiment_name: null`` (the dataset's name) becomes the experiment the
    job went to."""
    return re.sub(r"^experiment_name: null$", f"experiment_name: {json.dumps(experiment)}", config_yaml, count=1,
                  flags=re.M)


def run_job(spec: JobSpec, config_yaml: str = "", out: TextIO | None = None) -> Outcome:
    """One job, end to end (see the module docstring). Raises :class:`~harness.errors.HarnessError` subclasses
    for everything a user can fix; a tracking failure is returned in the outcome, not raised; SIGTERM raises
    :class:`~harness.errors.Terminated` (:func:`sigterm_as_interruption`)."""
    with sigterm_as_interruption():
        return _run_job(spec, config_yaml, out)


def _run_job(spec: JobSpec, config_yaml: str, out: TextIO | None) -> Outcome:
    started = time.perf_counter()
    native.keep_freed_memory()  # before the job's temporaries, for its forked copies too
    out = out or sys.stdout
    layout = layout_of(spec)
    spec = spec.for_target_language(None if layout is None else layout.target_lang)
    say_languages(spec)
    for variant in spec.variants:
        if variant.is_bleu:
            check_usable(str(variant.options.tokenize))
    progress = Progress(spec.progress)
    check_selection(spec, layout)
    experiment = spec.experiment_for(dataset_name(spec, layout))
    config_yaml = with_experiment(config_yaml, experiment)
    folder = JobFolder(spec.folder(experiment), job=f"{experiment}/{spec.job_name}")
    folder.check(layout.inputs() if layout is not None else _explicit_inputs(spec))  # creates nothing
    inputs = load_inputs(spec, layout)  # bad input: one error and no folder left behind
    spec = spec.with_imported(inputs.metrics)
    with folder.held(inputs.files()), contextlib.ExitStack() as tracking_child:
        staging = folder.begin({"experiment": experiment})
        try:
            log.info("%s: %s x %s x %s, %s", experiment, report.plural(len(inputs.systems), "system"),
                     report.plural(len(inputs.refsets), "reference set"), report.plural(len(spec.variants), "variant"),
                     report.plural(inputs.n_segments, "segment"))
            startup_error = None
            # MLflow's child process starts MLflow meanwhile and lives until the job is logged; an error kills it
            tracker = tracking_child.enter_context(tracking_aside(spec, experiment, folder.lock_fds()))
            with contextlib.ExitStack() as stack:  # the figure drawer gets ready meanwhile; an error kills it
                drawing = (stack.enter_context(figures.drawn_aside(staging, folder.lock_fds(), spec.figure_formats))
                           if spec.figures else None)
                cache = StatisticsCache(spec.runs_dir / "cache" / "stats", enabled=not spec.force)
                with progress.phase("statistics", n_blocks(inputs, spec.variants), "block") as bar:
                    statistics = job_statistics(inputs, spec.variants, cache, progress=bar)
                n_groups = len(inputs.refsets) * len(spec.variants) * (1 + len(inputs.human))
                with progress.phase("resampling and correlations", n_groups, "group") as bar:
                    result = analyse(spec, inputs, statistics, experiment, bar)
                with progress.phase("tables", 1, "step") as bar:
                    tables = write_tables(result, staging, config_yaml, drawing)
                    bar.update(1)
                if spec.tracking_uri is not None and tracker is None:  # in process, while the figures are drawn
                    with progress.phase("MLflow start-up", 1, "step") as bar:
                        startup_error = start_tracking(Target.of(spec, experiment))
                        bar.update(1)
                with progress.phase("figures and report" if spec.figures else "report", 1, "step") as bar:
                    write_report(result, staging, drawing)
                    bar.update(1)
            hashes = inputs.input_hashes()
            job_key = identity_digest(spec, hashes)
            folder.publish(hashes, {"job_key": job_key, "experiment": experiment})
            folder.write_status("ok", experiment=experiment, job_key=job_key,
                                tracking="pending" if spec.tracking_uri is not None else "off")
        except BaseException as exc:
            folder.discard()
            if isinstance(exc, HarnessError) and exc.kept is None:
                exc.kept = folder.kept()
            with contextlib.suppress(OutputError):  # a full disk: the error above says so; the status is best effort
                folder.write_status("interrupted" if isinstance(exc, KeyboardInterrupt) else "failed",
                                    experiment=experiment, error=f"{type(exc).__name__}: {exc}")
            raise
        logged, tracking_error = None, None
        if spec.tracking_uri is not None:
            logged, tracking_error = track(result, tables, folder, job_key, progress, startup_error, tracker)
    outcome = Outcome(result, folder.path, None if logged is None else logged.parent_id, tracking_error,
                      time.perf_counter() - started, None if logged is None else logged.experiment_id)
    print_summary(outcome, out)
    return outcome


def track(result: JobResult, tables: Mapping[str, pa.Table], status: JobFolder, job_key: str, progress: Progress,
          startup_error: TrackingError | None = None, tracker: Aside | None = None) -> tuple[Any, Any]:
    """Log the published job and its ``tables`` (:func:`write_tables`'s) to MLflow (returns where:
    :class:`~harness.sinks.mlflow.Logged`), by MLflow's child process ``tracker`` (:func:`tracking_aside`) or else
    in this process; on failure (or ``startup_error``, :func:`start_tracking`'s in this process, the child's own
    when it logs) write ``tracking_pending.json`` and return the error instead. ``job_status.json`` says
    ``tracking: pending`` from the publication on (with ``tracking_pending.json``, so that a process killed while
    logging leaves both), then ``logged`` (with the parent run), ``failed`` or ``interrupted``."""
    spec = result.spec
    uri = str(spec.tracking_uri)
    folder = status.path
    status_fields = {"experiment": result.experiment, "job_key": job_key}

    def say(tracking: str, why: str | None, **extra: Any) -> str | None:
        """The folder's record of the tracking (best effort: on a full disk, the error says what was not kept)."""
        problem = None if why is None else write_pending(folder, result, job_key, why)
        try:
            status.write_status("ok", **status_fields, tracking=tracking, **extra)
        except OutputError as exc:
            problem = problem or exc.reason
        return problem

    say("pending", "logging to MLflow started and has not finished (a process killed while logging leaves this "
        "file; rerun the job to log it)")
    try:
        if startup_error is not None:
            raise startup_error
        from .sinks.mlflow import SMALL_TABLES, log_job
        from .tracking import build_payload, preview

        previews = {name: preview(tab) for name, tab in tables.items() if name in SMALL_TABLES}
        payload = build_payload(result, job_key, previews, sorted(p.name for p in folder.glob("*.png")))
        # the published generation's files (what its manifest lists, and the manifest): nothing else in the folder
        artifacts = {**verified_files(folder), MANIFEST: folder / MANIFEST}
        with progress.phase("MLflow runs", len(payload.runs), "run") as bar:
            if tracker is None:
                logged = log_job(uri, spec.runs_dir, payload, artifacts, bar)
            else:
                logged = logged_aside(tracker, payload, artifacts, uri)
                bar.update(len(payload.runs))
    except TrackingError as exc:
        problem = say("failed", str(exc))
        if problem is not None:
            exc.kept = f"{PENDING} could not be written either ({problem}): rerun the job to log it"
        return None, exc
    except BaseException as exc:  # interrupted (Ctrl-C, SIGTERM) while logging: say so, then end
        say("interrupted", f"interrupted while logging ({type(exc).__name__}); MLflow's runs of this attempt are "
            "marked KILLED")
        raise
    (folder / PENDING).unlink(missing_ok=True)
    say("logged", None, parent_run=logged.parent_id)
    return logged, None


def write_pending(folder: Path, result: JobResult, job_key: str, why: str) -> str | None:
    """``tracking_pending.json``: the published job is not (or not yet) in MLflow, and why; rerunning the job logs
    it. Written before logging starts too, so a job killed while logging (SIGKILL) leaves it. Returns why it
    could not be written (a full disk), else None."""
    spec = result.spec
    try:
        atomic_write(folder / PENDING, json.dumps({"tracking_uri": str(spec.tracking_uri),
                                                   "experiment": result.experiment, "job": spec.job_name,
                                                   "job_key": job_key, "error": why, "time": time.time()},
                                                  indent=1) + "\n")
    except OutputError as exc:
        return exc.reason
    return None


def _legend(result: JobResult) -> str:
    """What the closing tables' brackets and human columns are, from this job's result."""
    parts = []
    if any(c.ci_low == c.ci_low for c in result.cells):
        parts.append(f"95% bootstrap intervals, {result.spec.n_samples} resamples")
    for h in result.inputs.human:
        sources = set(h.sys_source.values())
        file = h.sys_path.name if h.sys_path is not None else "sys.tsv"
        where = (f"as published ({file})" if sources == {file} else
                 "means of the judged segments" if sources == {"segments"} else f"{file}, else the segments' means")
        parts.append(f"{h.name}: {where}")
    return "; ".join(parts) or "no intervals"


def print_summary(outcome: Outcome, out: TextIO) -> None:
    """The closing tables: per reference set, systems x variants BLEU with intervals (best first), human scores,
    the signatures, where the results are."""
    result = outcome.result
    variants = [v.name for v in result.spec.variants]
    human = {h.name: h for h in result.inputs.human}
    for refset in result.refsets:
        cells = {(c.system.label, c.variant.name): c for c in result.cells_of(refset)}
        labels = sorted({s for s, _ in cells}, key=lambda s: (-cells[(s, variants[0])].score.score, s))
        names = [s + (" (human)" if cells[(s, variants[0])].system.human else "") for s in labels]
        width = max(len(x) for x in [*names, "system"])
        cols = [(v, [report.score_text(cells[(s, v)], 1, "-") for s in labels])
                for v in variants if (labels[0], v) in cells]  # imported scores: the full reference set only
        for kind, h in human.items():
            cols.append((kind, [f"{h.sys[s]:.4g}" if s in h.sys else "-" for s in labels]))
        widths = [max(len(head), *(len(t) for t in texts)) for head, texts in cols]
        lines = [f"{report.scores_label(result.spec.variants)} against {refset} ({_legend(result)})",
                 "  ".join([f"{'system':<{width}}"] + [f"{h:>{w}}" for (h, _), w in zip(cols, widths)])]
        for i, name in enumerate(names):
            lines.append("  ".join([f"{name:<{width}}"] + [f"{texts[i]:>{w}}" for (_, texts), w in zip(cols, widths)]))
        out.write("\n".join(lines) + "\n\n")
    full = refset_name(result.inputs.full_refset)
    others = sorted({c.score.signature.split("|", 1)[0] for c in result.cells if c.refset != full})
    note = f"; against the other reference sets {', '.join(others)}" if others else ""
    out.write(f"signatures (against {full}{note}):\n")
    for v in variants:
        sig = next(c.score.signature for c in result.cells if c.variant.name == v and c.refset == full)
        out.write(f"{v}: {sig}\n")
    eff = [v.name for v in result.spec.variants
           if v.is_bleu and v.sentence.effective_order != v.options.effective_order]
    if eff:
        out.write(f"segment level (sentence BLEU, WMT's sentBLEU): the same with eff:yes for {', '.join(eff)}\n")
    out.write(f"\n{len(result.cells)} scores ({result.cache_misses} statistics computed, {result.cache_hits} from "
              f"cache) in {outcome.seconds:.1f} s\n")
    out.write(f"tables and report: {outcome.folder}  (report.md, system_scores.parquet, segment_scores.parquet, "
              "...)\n")
    spec = result.spec
    if outcome.parent_run:
        from .sinks.mlflow import experiment_link

        uri = str(spec.tracking_uri)
        out.write(f"MLflow: {uri}  experiment '{result.experiment}', parent run {outcome.parent_run}\n")
        if uri.startswith("sqlite:"):
            out.write(f"  open the UI: {mlflow_command()} ui --backend-store-uri {uri}\n  then: ")
        else:
            out.write("  runs: ")
        out.write(experiment_link(uri, str(outcome.experiment_id)) + "\n")
    out.flush()
