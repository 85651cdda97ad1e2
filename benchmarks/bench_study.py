"""Benchmark: a whole correlation study, the harness against what a user would write instead (issue 15, item 5).

The work of the demo job, done twice side by side in one run, on the demo (WMT21 en-de, 9 systems incl. the human
translation ref-A, refs ref-C/ref-D, MQM) and on WMT21 ru-en (10 systems, 1000 segments, refs ref-A/ref-B, sparse
crowd DA in two kinds, ``da_z`` and ``da_raw``, aligned through ``seg_map.tsv``):

- **harness**: the ``harness`` job with the same variants, every single reference and both (``dataset.refsets=each``),
  ``n_samples``/``seed`` as given, tracking into a fresh SQLite store. Measured twice: as a whole process (the
  ``harness`` command, interpreter start and imports included) and in process (``build_spec`` + ``run_job`` on the
  config Hydra composes for the same overrides, in a fresh process that has already imported the harness, mlflow,
  scipy.stats and matplotlib; the compiled kernels are imported inside the job). The in-process run reports where
  the time goes (the job's functions wrapped with timers: nested rows are parts of the row above them).
- **peer** (one script in a fresh process, whole-process and after-imports times): sacrebleu 2.x public API for
  every system x reference set x variant (``BLEU(references=...)`` as sacrebleu's CLI caches the references,
  ``corpus_score(n_bootstrap=n_samples)`` for the score and its interval, ``sentence_score`` with effective order
  on for every segment (sacrebleu's ``sentence_bleu``, WMT's sentBLEU, as the job's segment level),
  ``PairedTest(test_type='bs')`` once per baseline for all pairs); scipy.stats for the correlations with every
  human kind (system level: ``pearsonr``/``spearmanr``/``kendalltau`` of corpus BLEU, with and without the human
  translation, with a bootstrap interval from a Python loop over ``n_samples`` resamples that rescore each system
  from sacrebleu's per-segment statistics (``_extract_corpus_statistics``/``_compute_score_from_stats``, the only
  private calls: sacrebleu has no public per-segment statistics) and re-average the human scores; segment level:
  Pearson and Kendall tau-b pooled (a loop over resamples calling scipy) and per item (per-item values computed
  once with scipy, then resampled), WMT's Kendall-like tau by hand in numpy; ``min(n_samples, 200)`` resamples on
  the full reference set, as the job does); the MLflow fluent API for one parent run and one nested run per
  system x reference set x variant with the job's metrics, params and tags, into a fresh SQLite store.

Before any time is printed, the numbers are asserted identical: corpus BLEU and every sentence BLEU (rel 1e-9),
sacrebleu's bootstrap intervals (mean and half-width, rel 1e-9), every paired bootstrap p-value (exactly equal:
the harness draws sacrebleu's resamples), every system- and segment-level correlation value and its bootstrap
interval (rel 1e-9; same seed, same resamples). The harness does more than the peer (the WMT meta-evaluation
statistics, the paired comparison of variants, significance clusters, Parquet tables, report and figures, MLflow
artifacts): the ratios are conservative.

The machine may be shared: the 1-minute load is printed before and after each dataset, the run waits up to
``--wait`` seconds for the load to drop below ``--max-load`` before each measurement, and CPU seconds are
reported next to wall seconds (prefer them when the load is high).

    python benchmarks/bench_study.py --quick            # demo only, 2 variants, 100 resamples: about a minute
    python benchmarks/bench_study.py                    # both datasets, full job: the peer takes minutes
    python benchmarks/bench_study.py --datasets ruen --repeat 3 --markdown-out /tmp/study.md
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT / "harness" / "data"
VENV_BIN = Path(sys.executable).parent
DATASETS = {"demo": DATA / "wmt21_news_ende", "ruen": DATA / "wmt21_news_ruen_da"}
#: Variants both sides run: conf/bleu/<name>.yaml of the harness, sacrebleu's BLEU options for the peer.
VARIANTS = ("sacrebleu", "intl", "char", "paper")
QUICK_VARIANTS = ("sacrebleu", "char")
SEGMENT_CI_SAMPLES = 200  # harness.job.analysis.SEGMENT_CI_SAMPLES
REL = 1e-9


# ================================================================================================ the peer


def peer_main(cfg: dict[str, Any]) -> dict[str, Any]:
    """The study as a user writes it with sacrebleu + scipy + MLflow (see the module docstring)."""
    t0, c0 = time.perf_counter(), time.process_time()
    import csv
    import hashlib
    import logging
    import warnings

    import mlflow
    import numpy as np
    import scipy.stats
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    from harness.core.significance import holm_samples

    logging.getLogger("sacrebleu").setLevel(logging.ERROR)  # sentence BLEU without effective order warns per call
    logging.getLogger("mlflow").setLevel(logging.ERROR)
    logging.getLogger("alembic").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    imports = time.perf_counter() - t0
    w0, c1 = time.perf_counter(), time.process_time()
    phases: dict[str, float] = {}

    class Phase:
        def __init__(self, name: str) -> None:
            self.name = name

        def __enter__(self) -> None:
            self.t = time.perf_counter()

        def __exit__(self, *exc: Any) -> None:
            phases[self.name] = phases.get(self.name, 0.0) + time.perf_counter() - self.t

    root = Path(cfg["root"])
    n_samples, seed = int(cfg["n_samples"]), int(cfg["seed"])
    meta = json.loads((root / "meta.json").read_text(encoding="utf-8"))
    dataset = meta["name"]
    systems = list(meta["systems"])
    human_systems = set(meta.get("human_systems", []))

    with Phase("read inputs"):
        def lines(path: Path) -> list[str]:
            out = path.read_text(encoding="utf-8").split("\n")
            return out[:-1] if out and out[-1] == "" else out

        hyps = {s: lines(root / "systems" / f"{s}.txt") for s in systems}
        ref_names = list(meta["refs"])
        refs = {r: lines(root / "refs" / f"{r}.txt") for r in ref_names}
        n = len(refs[ref_names[0]])
        sha = {f"system:{s}": hashlib.sha256((root / "systems" / f"{s}.txt").read_bytes()).hexdigest() for s in systems}
        sha.update({f"ref:{r}": hashlib.sha256((root / "refs" / f"{r}.txt").read_bytes()).hexdigest()
                    for r in ref_names})
        human = {}
        for kind, info in meta.get("human_scores", {}).items():
            sign = 1.0 if info.get("higher_is_better", True) else -1.0
            seg: dict[str, Any] = {}
            with open(root / info["file_seg"], encoding="utf-8", newline="") as f:
                for row in csv.DictReader(f, delimiter="\t"):
                    seg.setdefault(row["system"], np.full(n, np.nan))[int(row["seg_id"])] = sign * float(row["score"])
            sysd = {}
            with open(root / info["file_sys"], encoding="utf-8", newline="") as f:
                for row in csv.DictReader(f, delimiter="\t"):
                    sysd[row["system"]] = sign * float(row["score"])
            for s in seg:
                sysd.setdefault(s, float(np.nanmean(seg[s])))
            differs = any(s in seg and not math.isclose(sysd[s], float(np.nanmean(seg[s])), rel_tol=1e-6,
                                                         abs_tol=1e-6) for s in sysd)
            human[kind] = {"seg": seg, "sys": sysd, "differs": differs}

    refsets = [[r] for r in ref_names] + ([ref_names] if len(ref_names) > 1 else [])
    full = "+".join(ref_names)
    out_scores: dict[str, Any] = {}
    out_pairs: dict[str, float] = {}
    stats_of: dict[tuple[str, str, str], Any] = {}
    metric_of: dict[tuple[str, str], Any] = {}

    for refset in refsets:
        rname = "+".join(refset)
        for vname, opts in cfg["variants"].items():
            metric = BLEU(**opts, references=[refs[r] for r in refset])  # references tokenized once (the CLI)
            metric_of[(rname, vname)] = metric
            sent_metric = BLEU(**{**opts, "effective_order": True})  # sentBLEU, as the job's segment level
            for s in systems:
                with Phase("corpus BLEU + bootstrap CI (corpus_score)"):
                    res = metric.corpus_score(hyps[s], None, n_bootstrap=n_samples)
                with Phase("per-segment statistics for the correlation CIs"):
                    stats_of[(rname, vname, s)] = np.array(metric._extract_corpus_statistics(hyps[s], None),
                                                           dtype=np.int64)
                with Phase("sentence BLEU (sentence_score)"):
                    sent = [sent_metric.sentence_score(h, [refs[r][i] for r in refset]).score
                            for i, h in enumerate(hyps[s])]
                out_scores[f"{rname}|{vname}|{s}"] = {
                    "score": res.score, "bp": res.bp, "ratio": res.ratio, "hyp_len": res.sys_len,
                    "ref_len": res.ref_len, "precisions": list(res.precisions), "ci_mean": float(res._mean),
                    "ci": float(res._ci), "sentence": sent, "signature": str(metric.get_signature())}
            with Phase("paired bootstrap, all pairs (PairedTest per baseline)"):
                # the resamples the harness's job uses for one Holm family of all pairs (n_samples, raised until
                # an adjusted p can reach 0.05), so that the p-values are comparable one for one
                pair_samples = max(n_samples, holm_samples(len(systems) * (len(systems) - 1) // 2, 0.05, 1))
                for i in range(len(systems) - 1):
                    named = [(systems[j], hyps[systems[j]]) for j in range(i, len(systems))]
                    _, res_all = PairedTest(named, {"BLEU": metric}, references=None, test_type="bs",
                                            n_samples=pair_samples)()
                    for j, r in zip(range(i + 1, len(systems)), res_all["BLEU"][1:]):
                        out_pairs[f"{rname}|{vname}|{systems[i]}|{systems[j]}"] = float(r.p_value)

    def defined(x: Any, y: Any, min_pairs: int) -> bool:
        return x.size >= min_pairs and np.ptp(x) > 0 and np.ptp(y) > 0

    def corr(method: str, x: Any, y: Any, min_pairs: int = 3) -> float:
        ok = ~(np.isnan(x) | np.isnan(y))
        x, y = x[ok], y[ok]
        if not defined(x, y, min_pairs):
            return math.nan
        if method == "pearson":
            return float(scipy.stats.pearsonr(x, y).statistic)
        if method == "spearman":
            return float(scipy.stats.spearmanr(x, y).statistic)
        return float(scipy.stats.kendalltau(x, y, variant="b").statistic)

    def interval(values: list[float]) -> tuple[float, float]:
        v = np.asarray(values, dtype=np.float64)
        v = v[np.isfinite(v)]
        if not v.size:
            return math.nan, math.nan
        lo, hi = np.percentile(v, [2.5, 97.5])
        return float(lo), float(hi)

    def kendall_like(m: Any, h: Any) -> tuple[Any, Any]:
        """WMT's DARR Kendall-like tau: concordant and discordant system pairs of every segment (columns of m,
        h); a pair counts when the human scores differ, a metric tie is discordant."""
        a, b = np.triu_indices(m.shape[0], 1)
        con = np.zeros(m.shape[1])
        dis = np.zeros(m.shape[1])
        for k in range(m.shape[1]):
            hd, md = h[a, k] - h[b, k], m[a, k] - m[b, k]
            counted = ~(np.isnan(hd) | np.isnan(md)) & (hd != 0)
            c = int(np.count_nonzero(counted & (md * np.sign(hd) > 0)))
            con[k], dis[k] = c, int(np.count_nonzero(counted)) - c
        return con, dis

    out_corr: dict[str, Any] = {}
    parent_metrics: dict[str, float] = {}
    for kind, H in human.items():
        scored = [s for s in systems if s in H["sys"]]
        if len(scored) < 3:
            continue
        for refset in refsets:
            rname = "+".join(refset)
            for vname in cfg["variants"]:
                metric = metric_of[(rname, vname)]
                is_human = np.array([s in human_systems for s in scored])
                subsets = [(True, np.ones(len(scored), bool))] + ([(False, ~is_human)] if is_human.any() else [])
                bleu = np.array([out_scores[f"{rname}|{vname}|{s}"]["score"] for s in scored])
                hsys = np.array([H["sys"][s] for s in scored])
                resample_human = all(s in H["seg"] for s in scored) and not H["differs"]
                with Phase("system-level correlations + bootstrap CI (scipy per resample)"):
                    idx = np.random.default_rng(seed).integers(0, n, (n_samples, n))
                    draws: dict[tuple[bool, str], list[float]] = {}
                    X = [stats_of[(rname, vname, s)] for s in scored]
                    hseg = [H["seg"][s] for s in scored] if resample_human else None
                    for b in range(n_samples):
                        rows = idx[b]
                        bl = np.array([metric._compute_score_from_stats(x[rows].sum(0)).score for x in X])
                        hu = np.array([np.nanmean(h[rows]) for h in hseg]) if hseg is not None else hsys
                        for inc, mask in subsets:
                            for m in ("pearson", "spearman", "kendall"):
                                draws.setdefault((inc, m), []).append(corr(m, bl[mask], hu[mask]))
                    for inc, mask in subsets:
                        for m in ("pearson", "spearman", "kendall"):
                            value = corr(m, bleu[mask], hsys[mask])
                            lo, hi = interval(draws[(inc, m)])
                            out_corr[f"{kind}|{rname}|{vname}|{inc}|system|{m}|none"] = [value, lo, hi]
                            if vname == next(iter(cfg["variants"])) and rname == full and math.isfinite(value):
                                names = ["all_systems"] if inc else ["mt_only"]
                                if inc and not is_human.any():
                                    names.append("mt_only")
                                for nm in names:
                                    key = f"{m}.{nm}" + (f".{kind}" if len(human) > 1 else "")
                                    parent_metrics[key] = value
                with Phase("segment-level correlations + bootstrap CI (scipy per resample)"):
                    for inc, mask in subsets:
                        cells = [s for s, keep in zip(scored, mask) if keep and s in H["seg"]]
                        if len(cells) < 2:
                            continue
                        M = np.array([out_scores[f"{rname}|{vname}|{s}"]["sentence"] for s in cells])
                        Hm = np.array([H["seg"][s] for s in cells])
                        nb = min(n_samples, SEGMENT_CI_SAMPLES) if rname == full else 0
                        idx2 = np.random.default_rng(seed).integers(0, n, (nb, n)) if nb else None
                        con, dis = kendall_like(M, Hm)
                        per_item = {m: np.array([corr(m, M[:, k], Hm[:, k], 2) for k in range(n)])
                                    for m in ("pearson", "kendall")}
                        with np.errstate(invalid="ignore", divide="ignore"):
                            per_item["kendall_like"] = np.where(con + dis > 0, (con - dis) / (con + dis), np.nan)
                        for m in ("pearson", "kendall", "kendall_like"):
                            # pooled over every judged (system, segment) pair
                            if m == "kendall_like":
                                c, d = con.sum(), dis.sum()
                                value = (c - d) / (c + d) if c + d > 0 else math.nan
                            else:
                                value = corr(m, M.ravel(), Hm.ravel())
                            ci = (math.nan, math.nan)
                            if idx2 is not None:
                                vals = []
                                for rows in idx2:
                                    if m == "kendall_like":
                                        c, d = con[rows].sum(), dis[rows].sum()
                                        vals.append((c - d) / (c + d) if c + d > 0 else math.nan)
                                    else:
                                        vals.append(corr(m, M[:, rows].ravel(), Hm[:, rows].ravel()))
                                ci = interval(vals)
                            out_corr[f"{kind}|{rname}|{vname}|{inc}|segment|{m}|none"] = [value, *ci]
                            # per item (segment): mean of the per-segment values
                            v = per_item[m]
                            value = float(np.nanmean(v)) if np.isfinite(v).any() else math.nan
                            ci = (math.nan, math.nan)
                            if idx2 is not None:
                                ci = interval([float(np.nanmean(v[rows])) if np.isfinite(v[rows]).any() else math.nan
                                               for rows in idx2])
                            out_corr[f"{kind}|{rname}|{vname}|{inc}|segment|{m}|item"] = [value, *ci]

    with Phase("MLflow (fresh SQLite store, parent + nested runs)"):
        mlflow.set_tracking_uri(cfg["tracking_uri"])
        mlflow.set_experiment(dataset)
        with mlflow.start_run(run_name=f"{dataset} | study"):
            mlflow.log_params({"experiment": dataset, "dataset": dataset, "n_segments": n,
                               "systems": json.dumps(systems), "refsets": json.dumps(["+".join(r) for r in refsets]),
                               "variants": json.dumps(list(cfg["variants"])), "human": json.dumps(list(human)),
                               "seed": seed, "n_samples": n_samples})
            mlflow.log_metrics(parent_metrics)
            mlflow.set_tags({"dataset": dataset, "experiment": dataset})
            for refset in refsets:
                rname = "+".join(refset)
                for vname, opts in cfg["variants"].items():
                    for s in systems:
                        sc = out_scores[f"{rname}|{vname}|{s}"]
                        metrics = {"bleu": sc["score"], "bp": sc["bp"], "ratio": sc["ratio"],
                                   "hyp_len": float(sc["hyp_len"]), "ref_len": float(sc["ref_len"]),
                                   "ci_low": sc["ci_mean"] - sc["ci"], "ci_high": sc["ci_mean"] + sc["ci"],
                                   **{f"precision_{k + 1}": p for k, p in enumerate(sc["precisions"])},
                                   **{f"human.{kind}": H["sys"][s] for kind, H in human.items() if s in H["sys"]}}
                        tags = {"system": s, "system_version": "", "refset": rname, "refs_used": rname,
                                "variant": vname, "signature": sc["signature"], "dataset": dataset,
                                "experiment": dataset, "human": str(s in human_systems).lower(),
                                "sha256.system": sha[f"system:{s}"],
                                **{f"sha256.ref.{r}": sha[f"ref:{r}"] for r in refset}}
                        with mlflow.start_run(run_name=f"{s} | {rname} | {vname}", nested=True):
                            mlflow.log_metrics(metrics)
                            mlflow.log_params({"variant": vname, **opts, "ref_length": "closest",
                                               "profile": "sacrebleu"})
                            mlflow.set_tags(tags)

    return {"imports": imports, "work_wall": time.perf_counter() - w0, "work_cpu": time.process_time() - c1,
            "total_cpu_in_process": time.process_time() - c0, "phases": phases,
            "scores": out_scores, "pairs": out_pairs, "correlations": out_corr}


# ================================================================================================ the harness


def harness_overrides(dataset: str, variants: tuple[str, ...], n_samples: int, seed: int, runs_dir: Path
                      ) -> list[str]:
    over = [f"bleu=[{','.join(variants)}]", "dataset.refsets=each", f"runs_dir={runs_dir}", "progress=false",
            f"n_samples={n_samples}", f"seed={seed}"]
    if dataset != "demo":
        over.insert(0, f"dataset.root={DATASETS[dataset]}")
    return over


#: The job's functions timed in process: (module, attribute, label, depth).
PHASES = [
    ("harness.runner", "load_inputs", "read and check inputs", 0),
    ("harness.runner", "job_statistics", "statistics (tokenize + count)", 0),
    ("harness.runner", "analyse", "analysis", 0),
    ("harness.job.analysis", "score_cells", "corpus + sentence BLEU", 1),
    ("harness.job.analysis", "resample", "bootstrap CIs + all-pairs paired bootstrap", 1),
    ("harness.job.analysis", "correlations", "correlations with the human scores", 1),
    ("harness.job.analysis", "system_level_subsets", "system level (+ bootstrap CIs)", 2),
    ("harness.job.analysis", "segment_level", "segment level (+ bootstrap CIs)", 2),
    ("harness.job.analysis", "meta_evaluate", "WMT statistics (pairwise acc., soft pairwise acc., acc_eq)", 1),
    ("harness.job.analysis", "best_variant_differences", "variants compared (paired bootstrap of Pearson r)", 1),
    ("harness.runner", "write_tables", "tables (meanwhile a child process draws the figures)", 0),
    ("harness.runner", "start_tracking", "MLflow start-up: store + experiment (a new SQLite store: a copy of the "
     "cached template), while the figures are drawn", 0),
    ("harness.runner", "write_report", "figures and report", 0),
    ("harness.job.aside", "Aside.__call__", "waiting for the figures", 1),
    ("harness.runner", "track", "MLflow runs and artifacts", 0),
    ("harness.sinks.mlflow", "_log_runs", "nested runs (into SQLite: one transaction)", 1),
    ("harness.sinks.mlflow", "_log_artifacts", "artifacts", 1),
]

#: Calls that count for their row only when this holds (the same waiting serves the figures and MLflow's helper).
ONLY_WHEN: dict[str, Callable[..., bool]] = {"Aside.__call__": lambda self, *a, **k: self.what == "drawing the figures"}


def harness_main(cfg: dict[str, Any]) -> dict[str, Any]:
    """The harness job in this (fresh) process: compose as the ``harness`` command does, import what the job will
    need, then time ``run_job`` with the job's functions wrapped by timers."""
    t0 = time.perf_counter()
    import importlib
    import io

    import mlflow.entities  # noqa: F401 - imported before timing (the job preloads them while it counts)
    import mlflow.tracking  # noqa: F401
    import scipy.stats  # noqa: F401
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from harness.app import register
    from harness.job import figures
    from harness.job.spec import build_spec
    from harness.runner import run_job
    figures.pyplot()
    imports = time.perf_counter() - t0

    overrides = cfg["overrides"]
    register()
    with initialize_config_module(version_base="1.3", config_module="harness.conf"):
        composed = compose("config", overrides=overrides)
    container = OmegaConf.to_container(composed, resolve=True)
    config_yaml = OmegaConf.to_yaml(composed, resolve=True)
    spec = build_spec(container, overrides)

    phases: dict[str, float] = {}

    def wrap(module: Any, attr: str, label: str) -> None:
        attr_path = attr
        *owner_path, attr = attr.split(".")  # "Class.method" wraps a method
        for name in owner_path:
            module = getattr(module, name)
        fn = getattr(module, attr)

        only = ONLY_WHEN.get(attr_path)

        def timed(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                if only is None or only(*a, **k):
                    phases[label] = phases.get(label, 0.0) + time.perf_counter() - t

        setattr(module, attr, timed)

    for mod, attr, label, _ in PHASES:
        wrap(importlib.import_module(mod), attr, label)

    w0, c0 = time.perf_counter(), time.process_time()
    outcome = run_job(spec, config_yaml, io.StringIO())
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    if outcome.tracking_error is not None:
        raise SystemExit(f"harness: tracking failed: {outcome.tracking_error}")
    result = outcome.result
    scores = {}
    for c in result.cells:
        mean, half = (c.ci_low + c.ci_high) / 2, (c.ci_high - c.ci_low) / 2
        scores[f"{c.refset}|{c.variant.name}|{c.system.label}"] = {
            "score": c.score.score, "ci_mean": mean, "ci": half, "sentence": [float(x) for x in c.sentence]}
    pairs = {f"{k.refset}|{k.variant}|{k.a.label}|{k.b.label}": k.outcome.p_value for k in result.differences
             if k.outcome.test == "paired_bs"}
    corrs = {}
    for r in result.correlations:
        c = r.correlation
        corrs[f"{r.human_score}|{r.refset}|{r.variant}|{r.include_human}|{c.level}|{c.method}|{c.grouping}"] = [
            c.value, c.ci_low, c.ci_high]
    return {"imports": imports, "work_wall": wall, "work_cpu": cpu, "phases": phases, "scores": scores,
            "pairs": pairs, "correlations": corrs, "n_cells": len(result.cells),
            "n_runs": len(result.cells) + 1 if outcome.parent_run else 0}


# ================================================================================================ orchestration


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_child(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Run a process to completion: (wall seconds, CPU seconds of it and its children, stdout)."""
    c, t = _child_cpu(), time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall, cpu = time.perf_counter() - t, _child_cpu() - c
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"{' '.join(argv[:3])} ... failed with exit status {proc.returncode}")
    return wall, cpu, proc.stdout


def wait_for_quiet(max_load: float, wait: float) -> float:
    """Wait (up to ``wait`` seconds) until the 1-minute load is below ``max_load``; returns the load then."""
    deadline = time.time() + wait
    while os.getloadavg()[0] >= max_load and time.time() < deadline:
        time.sleep(5)
    return os.getloadavg()[0]


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average: %.2f, %.2f, %.2f" % os.getloadavg()


def variant_options(names: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """sacrebleu ``BLEU(...)`` options of the harness variants (conf/bleu/<name>.yaml); only variants sacrebleu
    computes (profile sacrebleu, closest reference length)."""
    import yaml

    out = {}
    for name in names:
        conf = yaml.safe_load((ROOT / "conf" / "bleu" / f"{name}.yaml").read_text(encoding="utf-8"))
        if conf.get("profile") != "sacrebleu" or conf.get("ref_length", "closest") != "closest":
            raise SystemExit(f"variant {name}: not a sacrebleu variant (profile {conf.get('profile')})")
        out[name] = {k: conf[k] for k in ("tokenize", "lowercase", "smooth_method", "smooth_value",
                                          "max_ngram_order", "effective_order")}
    return out


def close(a: float, b: float) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return math.isclose(a, b, rel_tol=REL, abs_tol=1e-12)


def check_identical(h: dict[str, Any], p: dict[str, Any], label: str) -> dict[str, int]:
    """Assert the numbers both sides computed are the same; returns how many of each were compared."""
    bad: list[str] = []
    n_sent = 0
    for key, ps in p["scores"].items():
        hs = h["scores"].get(key)
        if hs is None:
            bad.append(f"score {key}: missing in the harness")
            continue
        for f in ("score", "ci_mean", "ci"):
            if not close(hs[f], ps[f]):
                bad.append(f"{f} {key}: harness {hs[f]!r} sacrebleu {ps[f]!r}")
        if len(hs["sentence"]) != len(ps["sentence"]):
            bad.append(f"sentence BLEU {key}: {len(hs['sentence'])} vs {len(ps['sentence'])} segments")
        for i, (x, y) in enumerate(zip(hs["sentence"], ps["sentence"])):
            if not close(x, y):
                bad.append(f"sentence BLEU {key} segment {i}: harness {x!r} sacrebleu {y!r}")
                break
        n_sent += len(ps["sentence"])
    for key, pv in p["pairs"].items():
        refset, variant, a, b = key.split("|")
        hv = h["pairs"].get(key, h["pairs"].get(f"{refset}|{variant}|{b}|{a}"))
        if hv != pv:
            bad.append(f"paired p-value {key}: harness {hv!r} sacrebleu {pv!r}")
    if len(h["pairs"]) != len(p["pairs"]):
        bad.append(f"{len(h['pairs'])} paired tests in the harness, {len(p['pairs'])} with sacrebleu")
    n_ci = 0
    for key, pv in p["correlations"].items():
        hv = h["correlations"].get(key)
        if hv is None:
            bad.append(f"correlation {key}: missing in the harness")
            continue
        for what, x, y in zip(("value", "ci_low", "ci_high"), hv, pv):
            if not close(x, y):
                bad.append(f"correlation {key} {what}: harness {x!r} scipy {y!r}")
        n_ci += int(not math.isnan(pv[1]))
    if bad:
        print(f"\n{label}: {len(bad)} differences between the harness and the peer (first 20):", file=sys.stderr)
        for line in bad[:20]:
            print("  " + line, file=sys.stderr)
        raise SystemExit(f"{label}: the numbers differ; no timing is reported")
    return {"corpus BLEU + bootstrap CI": len(p["scores"]), "sentence BLEU": n_sent, "paired p-values": len(p["pairs"]),
            "correlation values": len(p["correlations"]), "correlation CIs": n_ci}


def md_table(header: list[str], rows: list[list[str]]) -> str:
    sys.path.insert(0, str(HERE))
    from _results import md_table as table

    return table(header, rows, right_align=True)


def bench_dataset(name: str, args: argparse.Namespace, variants: tuple[str, ...], work: Path) -> dict[str, Any]:
    n_samples, seed = args.n_samples, args.seed
    env = {**os.environ, "SACREBLEU_SEED": str(seed), "PYTHONHASHSEED": "0"}
    me = str(Path(__file__).resolve())
    load0 = uptime()
    print(f"\n## {name}: {load0}", file=sys.stderr)

    def harness_in_process(tag: str) -> tuple[float, float, dict[str, Any]]:
        d = work / f"{name}-h-{tag}"
        d.mkdir()
        cfg = {"overrides": harness_overrides(name, variants, n_samples, seed, d / "runs")}
        (d / "cfg.json").write_text(json.dumps(cfg))
        wall, cpu, _ = run_child([sys.executable, me, "--_child", "harness", str(d / "cfg.json"), str(d / "out.json")],
                                 d, env)
        out = json.loads((d / "out.json").read_text())
        shutil.rmtree(d / "runs", ignore_errors=True)
        return wall, cpu, out

    # warm-up: the OS caches the files
    for k in range(args.warmup):
        harness_in_process(f"warmup{k}")
    h_whole, h_in = [], []
    h_out: dict[str, Any] = {}
    for k in range(args.repeat):
        wait_for_quiet(args.max_load, args.wait)
        d = work / f"{name}-cli-{k}"
        d.mkdir()
        wall, cpu, _ = run_child([str(VENV_BIN / "harness"), *harness_overrides(name, variants, n_samples, seed,
                                                                               d / "runs")], d, env)
        h_whole.append((wall, cpu))
        shutil.rmtree(d, ignore_errors=True)
        wait_for_quiet(args.max_load, args.wait)
        _, _, h_out = harness_in_process(str(k))
        h_in.append((h_out["work_wall"], h_out["work_cpu"], h_out["phases"]))
        print(f"  harness run {k + 1}: whole process {wall:.1f} s wall / {cpu:.1f} s CPU, in process "
              f"{h_out['work_wall']:.1f} s / {h_out['work_cpu']:.1f} s", file=sys.stderr)
    p_whole, p_in = [], []
    p_out: dict[str, Any] = {}
    for k in range(args.peer_repeat):
        wait_for_quiet(args.max_load, args.wait)
        d = work / f"{name}-peer-{k}"
        d.mkdir()
        cfg = {"root": str(DATASETS[name]), "n_samples": n_samples, "seed": seed,
               "variants": variant_options(variants), "tracking_uri": f"sqlite:///{d / 'mlflow.db'}"}
        (d / "cfg.json").write_text(json.dumps(cfg))
        wall, cpu, _ = run_child([sys.executable, me, "--_child", "peer", str(d / "cfg.json"), str(d / "out.json")],
                                 d, env)
        p_out = json.loads((d / "out.json").read_text())
        p_whole.append((wall, cpu))
        p_in.append((p_out["work_wall"], p_out["work_cpu"], p_out["phases"]))
        shutil.rmtree(d, ignore_errors=True)
        print(f"  peer run {k + 1}: whole process {wall:.1f} s wall / {cpu:.1f} s CPU, after imports "
              f"{p_out['work_wall']:.1f} s / {p_out['work_cpu']:.1f} s", file=sys.stderr)
    load1 = uptime()
    print(f"  {load1}", file=sys.stderr)
    counts = check_identical(h_out, p_out, name)
    return {"name": name, "load0": load0, "load1": load1, "h_whole": h_whole, "h_in": h_in, "p_whole": p_whole,
            "p_in": p_in, "counts": counts, "h_imports": h_out["imports"], "p_imports": p_out["imports"],
            "n_cells": h_out["n_cells"]}


def _med(xs: list[float]) -> float:
    return statistics.median(xs)


def report(results: list[dict[str, Any]], args: argparse.Namespace, variants: tuple[str, ...]) -> str:
    import mlflow
    import numpy
    import sacrebleu
    import scipy

    lines = [f"Variants {', '.join(variants)}; reference sets: each reference and all (dataset.refsets=each); "
             f"n_samples={args.n_samples}, seed={args.seed}; harness: median of {args.repeat} run(s) after "
             f"{args.warmup} warm-up; peer: median of {args.peer_repeat} run(s). sacrebleu {sacrebleu.__version__}, "
             f"scipy {scipy.__version__}, numpy {numpy.__version__}, mlflow {mlflow.__version__}, Python "
             f"{sys.version.split()[0]}, {os.cpu_count()} CPUs.", ""]
    rows = []
    for r in results:
        for label, h, p in (("whole process", r["h_whole"], r["p_whole"]),
                            ("in process (after imports)", [x[:2] for x in r["h_in"]], [x[:2] for x in r["p_in"]])):
            hw, hc = _med([x[0] for x in h]), _med([x[1] for x in h])
            pw, pc = _med([x[0] for x in p]), _med([x[1] for x in p])
            rows.append([r["name"], label, f"{hw:.2f}", f"{pw:.1f}", f"**{pw / hw:.1f}x**", f"{hc:.2f}", f"{pc:.1f}",
                         f"**{pc / hc:.1f}x**"])
    lines.append(md_table(["dataset", "measured", "harness wall s", "peer wall s", "ratio wall", "harness CPU s",
                           "peer CPU s", "ratio CPU"], rows))
    lines.append("")
    lines.append("Identical numbers asserted before timing (per dataset): " + "; ".join(
        f"{r['name']}: " + ", ".join(f"{v:,} {k}" for k, v in r["counts"].items()) for r in results) + ".")
    lines.append("")
    lines.append("Load: " + "; ".join(f"{r['name']}: before `{r['load0'].split('load average:')[-1].strip()}`, "
                                      f"after `{r['load1'].split('load average:')[-1].strip()}`" for r in results)
                 + " (1, 5, 15 min).")
    for r in results:
        lines += ["", f"Where the time goes, {r['name']} (in process, median seconds; rows marked · are parts of the "
                      f"row above them; imports before timing: harness {r['h_imports']:.1f} s, peer "
                      f"{r['p_imports']:.1f} s)", ""]
        prow = []
        for _, _, label, depth in PHASES:
            vals = [x[2].get(label) for x in r["h_in"] if label in x[2]]
            if vals:
                prow.append(["· " * depth + label, f"{_med(vals):.2f}"])
        prow.append(["**total in process**", f"{_med([x[0] for x in r['h_in']]):.2f}"])
        lines += [md_table(["harness", "s"], prow), ""]
        prow = [[label, f"{_med([x[2].get(label, 0.0) for x in r['p_in']]):.2f}"] for label in r["p_in"][0][2]]
        prow.append(["**total after imports**", f"{_med([x[0] for x in r['p_in']]):.2f}"])
        lines.append(md_table(["peer (sacrebleu + scipy + MLflow)", "s"], prow))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Prints a markdown section (tables) on stdout; progress on stderr.")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: demo only, variants sacrebleu+char, 100 resamples, no repeats")
    ap.add_argument("--datasets", default=None, help="comma-separated: demo, ruen (default both; --quick: demo)")
    ap.add_argument("--variants", default=None,
                    help=f"comma-separated sacrebleu variants (default {','.join(VARIANTS)})")
    ap.add_argument("--n-samples", type=int, default=None, help="resamples for intervals and tests (default 1000)")
    ap.add_argument("--seed", type=int, default=12345, help="seed of every resampling (default sacrebleu's 12345)")
    ap.add_argument("--repeat", type=int, default=None, help="harness runs per dataset, median (default 3)")
    ap.add_argument("--peer-repeat", type=int, default=1, help="peer runs per dataset, median (default 1)")
    ap.add_argument("--warmup", type=int, default=1, help="harness warm-up runs per dataset (default 1)")
    ap.add_argument("--max-load", type=float, default=1.5,
                    help="wait before each measurement until the 1-minute load is below this (default 1.5)")
    ap.add_argument("--wait", type=float, default=120, help="longest wait for the load, seconds (default 120)")
    ap.add_argument("--markdown-out", type=Path, default=None, help="also write the markdown section to this file")
    ap.add_argument("--_child", nargs=3, metavar=("KIND", "CONFIG", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args._child:
        kind, cfg_path, out_path = args._child
        cfg = json.loads(Path(cfg_path).read_text())
        out = peer_main(cfg) if kind == "peer" else harness_main(cfg)
        Path(out_path).write_text(json.dumps(out))
        return 0

    datasets = (args.datasets or ("demo" if args.quick else "demo,ruen")).split(",")
    for d in datasets:
        if d not in DATASETS:
            ap.error(f"unknown dataset {d!r}; choose from {', '.join(DATASETS)}")
    variants = tuple((args.variants or ",".join(QUICK_VARIANTS if args.quick else VARIANTS)).split(","))
    args.n_samples = args.n_samples or (100 if args.quick else 1000)
    args.repeat = args.repeat or (1 if args.quick else 3)
    if not (VENV_BIN / "harness").exists():
        ap.error(f"no harness command next to {sys.executable}: run with the project's virtualenv")
    work = Path(tempfile.mkdtemp(prefix="bench_study-"))
    try:
        results = [bench_dataset(d, args, variants, work) for d in datasets]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = "## A whole correlation study: harness vs sacrebleu + scipy + MLflow (issue 15)\n\n" + report(
        results, args, variants)
    print(text)
    if args.markdown_out:
        args.markdown_out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
