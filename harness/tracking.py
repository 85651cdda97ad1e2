"""What MLflow gets from a job: its :class:`~harness.job.result.JobResult` as the payload the MLflow sink logs
(:class:`~harness.sinks.mlflow.JobPayload`): one nested run per system x refset x variant with its scores, human
scores, options and hashes; the parent's params, tags and a few metrics named for comparison across jobs; the
small tables as the UI previews them. Reads the result; writes nothing."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Mapping, Sequence

from .core.bleu import BleuScore
from .job.dataset import refset_name
from .job.report import run_note
from .job.result import JobResult
from .job.spec import family_digest
from .sinks.mlflow import FAMILY, JobPayload, NestedRun, key_part, run_name, version_step
from .version import __version__


def parent_metrics(result: JobResult) -> dict[str, float]:
    """A few parent metrics named for comparison across jobs: the system-level correlations of the first variant
    against the full reference set, per human kind (``pearson.mt_only``, ``kendall.all_systems``, ... with
    ``.KIND`` appended when the job has several kinds). Without human translations among the systems, every
    system is an MT system: the numbers are logged as ``*.mt_only`` too, so jobs compare on one name."""
    if not result.correlations:
        return {}
    all_mt = not any(s.human for s in result.inputs.systems)
    variant = result.spec.variants[0].name
    kinds = list(dict.fromkeys(r.human_score for r in result.correlations))
    out = {}
    for r in result.correlations:
        c = r.correlation
        if r.variant != variant or r.refset != result.full_refset or c.level != "system" or c.grouping != "none":
            continue
        subsets = ["all_systems", *(["mt_only"] if all_mt else [])] if r.include_human else ["mt_only"]
        for subset in subsets:
            name = f"{c.method}.{subset}" + (f".{key_part(r.human_score)}" if len(kinds) > 1 else "")
            if math.isfinite(c.value):
                out[name] = c.value
    return out


def preview(table: Any) -> dict[str, list[Any]]:
    """A table as the UI's preview shows it well (``log_table``): scalar columns only (no lists, no hashes; the
    Parquet file has them), each ``system_version`` right after its ``system`` column."""
    import pyarrow as pa

    names = [f.name for f in table.schema if not pa.types.is_list(f.type) and not f.name.endswith("sha256")]
    for suffix in ("", "_a", "_b"):
        version, system = f"system_version{suffix}", f"system{suffix}"
        if version in names and system in names:
            names.remove(version)
            names.insert(names.index(system) + 1, version)
    return table.select(names).to_pydict()


def build_payload(result: JobResult, job_key: str, tables: Mapping[str, Any] | None = None,
                  figures: Sequence[str] = ()) -> JobPayload:
    """Everything a job logs, from its result (``figures``: the file names of its figures, linked from the parent
    run's page)."""
    spec, inputs = result.spec, result.inputs
    hashes = inputs.input_hashes()
    human_sys = {h.name: h.sys for h in inputs.human}
    runs = []
    for c in result.cells:
        s = c.score
        metrics = {"score": s.score, "ci_low": c.ci_low, "ci_high": c.ci_high}
        if isinstance(s, BleuScore):
            metrics.update({"bleu": s.score, "bp": s.bp, "ratio": s.ratio, "hyp_len": float(s.hyp_len),
                            "ref_len": float(s.ref_len)})
            metrics.update({f"precision_{n + 1}": p for n, p in enumerate(s.precisions)})
        else:
            metrics[c.variant.family] = s.score
        for kind, scores in human_sys.items():
            if c.system.label in scores:
                metrics[f"human.{key_part(kind)}"] = scores[c.system.label]
        tags = {"system": c.system.name, "system_version": c.system.version or "", "refset": c.refset,
                "refs_used": "+".join(c.refs_used), "variant": c.variant.name, "metric": c.variant.family, "signature": s.signature,
                "sentence_signature": c.sentence_signature,
                "dataset": result.dataset, "experiment": result.experiment, "human": str(c.system.human).lower(),
                "sha256.system": c.system.text.sha256,
                **{f"sha256.ref.{key_part(r)}": inputs.refs[r].sha256 for r in c.refs_used},
                **{f"meta.{key_part(k)}": v for k, v in c.system.metadata.items()}}
        runs.append(NestedRun(run_name(c.system.name, c.system.version, c.refset, c.variant.name), metrics,
                              version_step(c.system.version), {"variant": c.variant.name,
                                                                "metric": c.variant.family,
                                                                **c.variant.params()}, tags))
    params = {"experiment": result.experiment, "dataset": result.dataset, "n_segments": inputs.n_segments,
              "systems": [s.label for s in inputs.systems], "refsets": [refset_name(r) for r in inputs.refsets],
              "variants": [v.name for v in spec.variants], "human": [h.name for h in inputs.human],
              "seed": spec.seed, "n_samples": spec.n_samples, "harness_version": __version__}
    tags = {"dataset": result.dataset, "experiment": result.experiment, "harness.job": spec.job_name,
            "harness.job_key": job_key, FAMILY: family_digest(spec),
            "output_dir": str(spec.folder(result.experiment)),
            **({"dataset_root": str(inputs.layout.root)} if inputs.layout is not None else {}),
            **{f"sha256.{key_part(k.replace(':', '.'))}": v for k, v in hashes.items() if k.startswith("ref:")}}
    digest = hashlib.sha256(json.dumps(sorted(hashes.items())).encode()).hexdigest()[:12]
    source = str(inputs.layout.root) if inputs.layout is not None else ",".join(str(t.path) for t in inputs.refs.values())
    return JobPayload(result.experiment, f"{result.dataset} | {spec.job_name}", job_key, params, tags,
                      parent_metrics(result), tuple(runs), (result.dataset, digest, source), dict(tables or {}),
                      run_note(result, figures))
