"""``harness``: the Hydra application (the main job). It only orchestrates:

config -> :func:`harness.config.build_spec` (validate, read inputs) -> :func:`harness.experiment.score_experiment`
(statistics once, every variant) -> resampling (:mod:`harness.significance`, :mod:`harness.correlation`) ->
tables (:mod:`harness.store`) -> report (:mod:`harness.report`) -> MLflow (:mod:`harness.tracking`).

``harness`` with no arguments runs the bundled demo. Errors the user can fix are one line on stderr and a
non-zero exit; in a sweep (``-m``) a failed job is recorded and the others go on, and the failures are listed
at the end.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from . import __version__
from .config import build_spec, register_configs, register_resolvers
from .errors import HarnessError
from .experiment import ExperimentResult, n_statistics_jobs, score_experiment
from .progress import progress_bar

log = logging.getLogger("harness")


def resample(result: ExperimentResult) -> None:
    """Bootstrap CIs of every score and all-pairs paired bootstrap tests, per refset x variant."""
    from .bleu import get_profile
    from .significance import all_pairs, bleu_score_fn, bootstrap_ci, significance_clusters

    spec = result.spec
    groups: dict[tuple[str, str], list[Any]] = {}
    for cell in result.cells:
        groups.setdefault((cell.refset, cell.variant.name), []).append(cell)
    clusters = []
    for (refset, variant), cells in groups.items():
        opts = cells[0].variant.options
        if not get_profile(opts.profile).additive:
            log.info("variant %s: profile %s is not a function of summed statistics; no CIs or paired tests",
                     variant, opts.profile)
            continue
        fn = bleu_score_fn(opts)
        systems = [(c.system.name, c.stats.matrix(opts.ref_length)) for c in cells]
        for cell, ci in zip(cells, bootstrap_ci(systems, fn, spec.n_samples, spec.seed)):
            cell.ci_low, cell.ci_high = ci.ci_low, ci.ci_high
        if spec.significance and len(systems) > 1:
            comps = all_pairs(systems, fn, "bs", spec.n_samples, spec.seed)
            result.significance_rows.extend(c.as_row(refset, variant) for c in comps)
            for row in significance_clusters(comps):
                clusters.append({"refset": refset, "variant": variant, **row})
    result.extras["clusters"] = clusters


def write_outputs(result: ExperimentResult) -> list[Path]:
    """Parquet tables, the resolved config and the report, atomically, into the job's output folder."""
    from . import report, tables
    from .store import write_frame, write_table, write_text

    spec = result.spec
    out = spec.output_dir
    meta = {"config": spec.config_yaml, "experiment": spec.experiment, "dataset": spec.dataset,
            "signatures": sorted({c.score.signature for c in result.cells}),
            "inputs_sha256": {**{f"ref:{k}": v.sha256 for k, v in spec.refs.items()},
                              **{f"system:{s.name}": s.text.sha256 for s in spec.systems}}}
    frames = {"system_scores": tables.system_scores(result)}
    if spec.segment_table:
        frames["segment_scores"] = tables.segment_scores(result)
    frames["significance"] = tables.rows_frame(result.significance_rows, tables.SIGNIFICANCE_COLUMNS)
    frames["correlations"] = tables.rows_frame(result.correlation_rows, tables.CORRELATION_COLUMNS)
    paths = [(write_table if hasattr(frame, "schema") else write_frame)(frame, out / f"{name}.parquet", meta)
             for name, frame in frames.items()]
    paths.append(write_text(out / "config.yaml", spec.config_yaml))
    paths.extend(report.write_report(result, frames, out))
    return paths


def track(result: ExperimentResult, artifacts: list[Path], job_name: str) -> str | None:
    """Log the job to MLflow (parent run + nested runs); returns the parent run id."""
    from .tracking import configure_client, log_job, terminate_on_sigterm

    spec = result.spec
    if spec.tracking_uri is None:
        return None
    configure_client(spec.tracking_retries, spec.tracking_timeout)
    hashes = {f"sha256.ref.{k}": v.sha256 for k, v in spec.refs.items()}
    cells = []
    for c in result.cells:
        s = c.score
        metrics = {"bleu": s.score, "bp": s.bp, "ratio": s.ratio, "hyp_len": float(s.hyp_len),
                   "ref_len": float(s.ref_len), "ci_low": c.ci_low, "ci_high": c.ci_high}
        metrics.update({f"precision_{n + 1}": p for n, p in enumerate(s.precisions)})
        cells.append({
            "name": f"{c.system.name} | {c.refset} | {c.variant.name}",
            "metrics": metrics,
            "params": {"variant": c.variant.name, **c.variant.options.as_params()},
            "tags": {"system": c.system.name, "system_version": c.system.version or "", "refset": c.refset,
                     "refs_used": "+".join(c.refs_used), "variant": c.variant.name, "signature": s.signature,
                     "dataset": spec.dataset, "experiment": spec.experiment, "human": str(c.system.human).lower(),
                     "sha256.system": c.system.text.sha256, **{f"sha256.ref.{r}": spec.refs[r].sha256
                                                                for r in c.refs_used},
                     **{f"meta.{k}": v for k, v in c.system.metadata.items()}},
        })
    job_metrics = {}
    for row in result.correlation_rows:
        if row.get("level") == "system" and row.get("grouping") == "none":
            key = (f"corr/{row['variant']}/{row['refset']}/{row['method']}/"
                   f"{'with_human' if row['include_human'] else 'mt_only'}")
            job_metrics[metric_name(key)] = row["value"]
    params = {"experiment": spec.experiment, "dataset": spec.dataset, "n_segments": spec.n_segments,
              "systems": [s.name for s in spec.systems], "refsets": ["+".join(r) for r in spec.refsets],
              "variants": [v.name for v in spec.variants], "seed": spec.seed, "n_samples": spec.n_samples,
              "harness_version": __version__}
    tags = {"dataset": spec.dataset, "experiment": spec.experiment, "output_dir": str(spec.output_dir), **hashes}
    with progress_bar(len(cells), "MLflow runs", spec.progress) as bar, terminate_on_sigterm():
        return log_job(spec.tracking_uri, spec.experiment, spec.runs_dir, job_name, params, tags, job_metrics,
                       cells, artifacts, spec.output_dir / "tracking_pending.json", bar)


def metric_name(key: str) -> str:
    """MLflow metric names allow alphanumerics and ``_-. :/`` only (refset names contain ``+``)."""
    return re.sub(r"[^\w\-. :/]", "_", key)


def summary_table(result: ExperimentResult) -> str:
    """The compact tables printed at the end: per reference set, systems x variants BLEU (best first)."""
    variants = [v.name for v in result.spec.variants]
    by = {(c.system.name, c.refset, c.variant.name): c.score.score for c in result.cells}
    labels = {s.name: s.name + (" (human)" if s.human else "") for s in result.spec.systems}
    width = max(len(x) for x in [*labels.values(), "system"])
    colw = [max(7, len(v)) for v in variants]
    blocks = []
    for refset in dict.fromkeys(c.refset for c in result.cells):
        lines = [f"BLEU against {refset}",
                 "  ".join([f"{'system':<{width}}"] + [f"{v:>{w}}" for v, w in zip(variants, colw)])]
        for name in sorted(labels, key=lambda s: -by[(s, refset, variants[0])]):
            lines.append("  ".join([f"{labels[name]:<{width}}"]
                                   + [f"{by[(name, refset, v)]:>{w}.2f}" for v, w in zip(variants, colw)]))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def run_job(cfg: DictConfig, job_dir: str, job_name: str) -> ExperimentResult:
    """One job, end to end."""
    started = time.perf_counter()
    spec = build_spec(cfg, output_dir=job_dir)
    log.info("%s: %d systems x %d refsets x %d variants, %d segments", spec.experiment, len(spec.systems),
             len(spec.refsets), len(spec.variants), spec.n_segments)
    with progress_bar(n_statistics_jobs(spec), "statistics", spec.progress) as bar:
        result = score_experiment(spec, bar)
    with progress_bar(1, "resampling", spec.progress) as bar:
        resample(result)
        bar.update(1)
    if spec.correlation or spec.paper_protocol:
        from .validation import validate

        validate(result)
    paths = write_outputs(result)
    tracked = None
    tracking_error = None
    try:
        tracked = track(result, paths, job_name)
    except HarnessError as exc:
        tracking_error = exc
    elapsed = time.perf_counter() - started
    print(summary_table(result))
    print(f"\n{len(result.cells)} scores ({result.cache_misses} statistics computed, {result.cache_hits} from cache) "
          f"in {elapsed:.1f} s")
    print(f"tables and report: {spec.output_dir}  (report.md, system_scores.parquet, segment_scores.parquet, ...)")
    if tracked:
        print(f"MLflow: {spec.tracking_uri}  experiment '{spec.experiment}', parent run {tracked}")
        if spec.tracking_uri and spec.tracking_uri.startswith("sqlite:"):
            print(f"  open the UI: mlflow ui --backend-store-uri {spec.tracking_uri}")
    if tracking_error is not None:
        raise tracking_error
    return result


def _write_status(job_dir: str, status: dict[str, Any]) -> None:
    path = Path(job_dir) / "job_status.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**status, "finished_at": time.time()}, indent=1), encoding="utf-8")


@hydra.main(version_base="1.3", config_path="pkg://harness.conf", config_name="config")
def hydra_main(cfg: DictConfig) -> float | None:
    hc = HydraConfig.get()
    job_dir = hc.runtime.output_dir
    job_name = f"{cfg.experiment_name}/{hc.job.override_dirname or 'default'}"
    try:
        run_job(cfg, job_dir, job_name)
    except HarnessError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        _write_status(job_dir, {"status": "failed", "job": job_name, "error": str(exc)})
        if hc.mode == RunMode.MULTIRUN:
            return None
        raise SystemExit(2 if type(exc).__name__ == "ConfigError" else 1) from None
    _write_status(job_dir, {"status": "ok", "job": job_name})
    return 0.0


def main() -> None:
    """Console entry point: ``harness [key=value ...] [-m]``."""
    register_resolvers()
    register_configs()
    hydra_main()
    from .callbacks import FAILED_JOBS

    if FAILED_JOBS:
        print(f"harness: {len(FAILED_JOBS)} job(s) failed:", file=sys.stderr)
        for line in FAILED_JOBS:
            print(f"  {line}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
