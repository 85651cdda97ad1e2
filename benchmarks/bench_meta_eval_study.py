"""Benchmark: the ``meta_eval`` study as whole processes against its targets, and against MTME's own workflow.

One run prints a row per target (measured, target, met), each timing the median of ``--repeat`` runs, each run
after waiting for a quiet machine (``--max-load``, ``--wait``; the 1-minute load is printed before and after):

1. ``harness experiment=meta_eval dataset.root=harness/data/wmt21_news_ruen_da runs_dir=TMP`` as a whole process
   (10 systems, 1000 segments, 2 references, sparse crowd DA in two kinds, COMET imported; tracked into a fresh
   MLflow SQLite store in a new temp runs dir, so the statistics cache is cold and there is no MLflow store
   template): at most 10 s; its peak RSS (the largest resident set of the process and of its children, from
   ``wait4``) is printed.
2. The same on a synthetic dataset (:mod:`synthetic_study`: 20 systems x 3,000 segments, 2 references, one kind
   of DENSE DA-like judgments with its ``sys.tsv``, English target, written from ``--synthetic-seed`` into a temp
   folder before the runs, not timed): at most 20 s and at most 1 GB (10^9 bytes) peak RSS.
3. MTME's own workflow on the same study, in a fresh process per dataset (google-research/mt-metrics-eval from a
   checkout, ``--mtme PATH``, imported by path with stand-ins for apache_beam and dacite as
   ``bench_meta_eval.py`` does): the sentence and corpus scores are read from the harness job's own Parquet tables
   (``segment_scores``, ``system_scores``; the full reference set), so both sides have identical inputs and MTME
   does not pay for BLEU; the human scores of one kind (``--mtme-kind``, default the dataset's first; the job
   ranks on every kind, so MTME does less work than the job: the ratio is conservative). On the systems and
   segments the job ranks on (``meta_evaluation.rank_variants``: the MT systems only when human translations are
   among the systems; soft pairwise accuracy on the complete block; pooled Pearson on the judged entries), for
   every variant the job ranks by each statistic, MTME computes the values as ``data.CompareMetrics`` /
   ``CompareMetricsWithGlobalAccuracy`` / ``CompareMetricsWithPairwiseConfidenceError`` do (system-level Pearson
   through ``AverageCorrelation(pearsonr)``, pairwise accuracy as ``_Accuracy``'s ``Agreement / pairs``, soft
   pairwise accuracy as ``PairwiseConfidenceError``, segment-level pooled Pearson, acc_eq as
   ``KendallWithTiesOpt(variant='acc23', average_by='item', sample_rate=1.0)`` with its epsilon), sorts them by
   (-value, name) and fills the significance matrix as ``ComputeSigMatrix`` does (``PermutationSigDiff`` for
   every pair i < j, ``PairwisePermutationSigDiff`` for acc_eq) with k = the job's ``n_samples`` and
   ``PermutationSigDiffParams(block_size=100)``, the WMT setting, then ``AssignRanks(sig, 0.05)``.

   MTME's tests are slow (soft pairwise accuracy recomputes 4 x 1000 permutations per draw; the acc_eq pair test
   re-optimises both epsilons per pair and, by MTME's quirk, checks early stopping only on draws that count, so
   clear differences run all draws): a full matrix takes hours on the synthetic data. So each statistic's tests
   get ``--mtme-budget`` seconds (0: no limit): a short calibration (one pair with k=0, then a few draws without
   early stopping; not counted) projects every pair's time as setup + draws x time per draw (the time per draw
   taken again from the pairs run, once run), with the draws the job made for that pair (``variant_significance.n_samples``; MTME's early stopping is the same rule); when the
   projection fits the budget every pair is run, else the cheapest pairs are run until the budget is spent and
   the others are projected (their deltas are still computed with MTME's own calls: ``PermutationSigDiff`` with
   k=0, and for acc_eq ``PairwisePermutationSigDiff``'s own correlation from ``KendallPreproc``/``PairwiseDiffs``/
   ``KendallVariants`` at each variant's epsilon). The MTME time is the values plus the tests run plus the
   projected rest (marked ~ when any is projected); the "measured only" part is printed beside it.

   Before any time is printed the numbers are asserted equal: every statistic's value (rel 1e-9) and acc_eq's
   epsilon, the order of the variants, and every tested pair's delta (rel 1e-9; the job's pairs are
   ``variant_significance`` rows: ``variant_b`` the better, ``delta`` = b's statistic minus a's); the p-values of
   the pairs both sides ran are Monte Carlo estimates from different random streams, so they are asserted
   within sampling error (``bench_meta_eval.p_close`` at the smaller number of draws) and the largest difference
   is printed; where MTME ran the whole matrix the ranks are compared and the differing ones are named with the
   p-values within sampling error of 0.05 that can explain them. Target: MTME time / harness whole-process time
   at least 20x on both datasets.
4. The demo job as a user first meets it: ``harness`` with no argument (README's first command) in a new temp
   folder as working directory (``runs_dir`` defaults to ``runs`` under it): the first job after install (no runs
   dir: a new MLflow store, a cold statistics cache) at most 5 s; the second job there (cache and store present,
   tracked) at most 3 s.

``.ci/run`` is not run here. Tables and MLflow stores are written under a temp folder and removed.

    python benchmarks/bench_meta_eval_study.py --mtme /tmp/mtme --quick     # ru-en only, 100 draws: minutes
    python benchmarks/bench_meta_eval_study.py --mtme /tmp/mtme              # everything: about an hour
    python benchmarks/bench_meta_eval_study.py --mtme /tmp/mtme --datasets synthetic --mtme-budget 0   # hours
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT / "harness" / "data"
VENV_BIN = Path(sys.executable).parent
sys.path.insert(0, str(HERE))

from _results import md_table  # noqa: E402
from bench_meta_eval import close, duration, load_mtme, p_close  # noqa: E402
from bench_study import uptime, wait_for_quiet  # noqa: E402

RUEN = DATA / "wmt21_news_ruen_da"
#: (level, statistic) the job ranks by (meta_evaluation.RANKED), in its order.
RANKED = (("system", "pearson"), ("system", "pairwise_accuracy"), ("system", "soft_pairwise_accuracy"),
          ("segment", "pearson"), ("segment", "acc_eq"))
BLOCK = 100  # MTME's block size for early stopping in its WMT tasks
ALPHA = 0.05
GB = 10 ** 9
#: Deltas within rounding of 0 on both sides: variants whose scores differ by rounding only (e.g. two BLEU profiles
#: computing the same sentence scores by different paths); the permutation p-value of such a pair is decided by
#: rounding (MTME's draws mostly tie with its delta at exactly 0 and count; the job's do not), so it is not compared
#: (but for pairwise accuracy, a count: an exact tie there is a tie).
TIE = 1e-12
TARGETS = {"ruen": 10.0, "synthetic": 20.0, "demo_warm": 3.0, "demo_first": 5.0, "ratio": 20.0}


# ================================================================================================ processes


def run_measured(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a process to completion: wall s, CPU s (user + system of it and its waited-for children), peak RSS
    bytes (the largest of the process and its children: ``wait4``'s ``ru_maxrss``), stdout, stderr."""
    out, err = cwd / ".stdout", cwd / ".stderr"
    with open(out, "wb") as fo, open(err, "wb") as fe:
        t = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    stdout, stderr = out.read_text(errors="replace"), err.read_text(errors="replace")
    out.unlink()
    err.unlink()
    if proc.returncode != 0:
        sys.stderr.write(stderr[-4000:])
        raise SystemExit(f"{' '.join(argv[:3])} ... failed with exit status {proc.returncode}")
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss": ru.ru_maxrss * 1024, "stdout": stdout,
            "stderr": stderr}


def quiet(args: argparse.Namespace) -> float:
    return wait_for_quiet(args.max_load, args.wait)


def load1() -> str:
    return "%.2f" % os.getloadavg()[0]


#: The job's own phase lines on stderr ("INFO harness: statistics: 2.2 s").
PHASE = re.compile(r"INFO harness: ([^:\n]+): ([0-9.]+) s$", re.M)


def phases(stderr: str) -> dict[str, float]:
    return {m.group(1): float(m.group(2)) for m in PHASE.finditer(stderr)}


def meta_eval_runs(name: str, root: Path, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """``--repeat`` cold runs of the meta_eval job on ``root``; keeps the last run's tables."""
    runs = []
    tables = work / f"{name}-tables"
    before = uptime()
    print(f"\n## {name}: meta_eval whole process; {before}", file=sys.stderr)
    extra = [f"n_samples={args.n_samples}"] if args.n_samples else []
    for k in range(args.repeat):
        d = work / f"{name}-run{k}"
        d.mkdir()
        l0 = quiet(args)
        m = run_measured([str(VENV_BIN / "harness"), "experiment=meta_eval", f"dataset.root={root}",
                          f"runs_dir={d / 'runs'}", *extra], d)
        m["load"] = (l0, float(load1()))
        cached = re.search(r"(\d+) statistics computed, (\d+) from cache", m["stdout"])
        if cached is None or int(cached.group(2)) != 0:
            raise SystemExit(f"{name}: the run was not cold: {cached.group(0) if cached else 'no statistics line'}")
        m["phases"] = phases(m["stderr"])
        print(f"  run {k + 1}: {m['wall']:.2f} s wall, {m['cpu']:.2f} s CPU, peak RSS {m['rss'] / 2**20:.0f} MiB "
              f"(load {m['load'][0]:.2f} -> {m['load'][1]:.2f}); {m['phases']}", file=sys.stderr)
        if k == args.repeat - 1:
            found = sorted((d / "runs").glob("*/*/variant_ranking.parquet"))
            if len(found) != 1:
                raise SystemExit(f"{name}: expected one job folder with variant_ranking.parquet, found {found}")
            shutil.copytree(found[0].parent, tables, ignore=shutil.ignore_patterns("*.png", "*.pdf"))
        del m["stdout"], m["stderr"]
        runs.append(m)
        shutil.rmtree(d, ignore_errors=True)
    return {"name": name, "root": str(root), "runs": runs, "tables": str(tables), "before": before,
            "after": uptime()}


def demo_runs(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """The README's first command in a new folder: the first job (no runs dir), then the second (warm)."""
    before = uptime()
    print(f"\n## demo: `harness` in a new folder, first and second job; {before}", file=sys.stderr)
    first: list[dict[str, Any]] = []
    warm: list[dict[str, Any]] = []
    for k in range(args.repeat):
        d = work / f"demo-{k}"
        d.mkdir()
        for label, out in (("first job", first), ("second job", warm)):
            l0 = quiet(args)
            m = run_measured([str(VENV_BIN / "harness")], d)
            m["load"] = (l0, float(load1()))
            computed = re.search(r"(\d+) statistics computed, (\d+) from cache", m["stdout"])
            m["computed"] = computed.group(0) if computed else "?"
            m["phases"] = phases(m["stderr"])
            print(f"  {label} {k + 1}: {m['wall']:.2f} s wall, {m['cpu']:.2f} s CPU, peak RSS "
                  f"{m['rss'] / 2**20:.0f} MiB ({m['computed']}; load {m['load'][0]:.2f} -> {m['load'][1]:.2f}); "
                  f"{m['phases']}", file=sys.stderr)
            del m["stdout"], m["stderr"]
            out.append(m)
        shutil.rmtree(d, ignore_errors=True)
    return {"first": first, "warm": warm, "before": before, "after": uptime()}


# ================================================================================================ MTME's side


def read_study(tables: Path, root: Path, kind: str | None) -> dict[str, Any]:
    """What the job ranked, from its tables and the dataset's human scores: per statistic the variants, their
    scores on the systems the job ranks on, the human scores; the job's values, epsilons, ranks and tests."""
    import pyarrow.parquet as pq

    from harness.job.human import read_human_tsv

    meta_md = pq.read_schema(tables / "system_scores.parquet").metadata
    full = meta_md[b"full_refset"].decode()
    system = pq.read_table(tables / "system_scores.parquet",
                           columns=["refset", "system", "variant", "human", "score"]).to_pandas()
    system = system[system.refset == full]
    segment = pq.read_table(tables / "segment_scores.parquet",
                            columns=["refset", "system", "variant", "seg_id", "score"]).to_pandas()
    segment = segment[segment.refset == full]
    ranking = pq.read_table(tables / "variant_ranking.parquet").to_pandas()
    tests = pq.read_table(tables / "variant_significance.parquet").to_pandas()
    corr = pq.read_table(tables / "correlations.parquet").to_pandas()

    meta = json.loads((root / "meta.json").read_text(encoding="utf-8"))
    kinds = list(meta["human_scores"])
    kind = kind or next(k for k in kinds if k in set(ranking.human_score))
    info = meta["human_scores"][kind]
    systems = list(meta["systems"])
    n = int(segment.seg_id.max()) + 1
    import logging

    logging.getLogger("harness").setLevel(logging.ERROR)  # the sparse-DA notes
    human = read_human_tsv(root / info["file_seg"] if info.get("file_seg") else None,
                           root / info["file_sys"] if info.get("file_sys") else None, systems=systems, n_segments=n,
                           name=kind, higher_is_better=info.get("higher_is_better", True)).oriented()
    humans = set(system[system.human].system)
    include_human = not humans  # rank_variants: the MT systems only when human translations are among them
    shown = sorted(set(system.system) - (set() if include_human else humans))
    sys_labels = [s for s in shown if s in human.sys]
    seg_labels = [s for s in shown if s in human.seg]
    corpus = {(v, s): float(x) for v, s, x in zip(system.variant, system.system, system.score)}
    segment = segment.sort_values(["variant", "system", "seg_id"])
    sentence: dict[str, dict[str, np.ndarray]] = {}
    for (v, s), g in segment.groupby(["variant", "system"], sort=False):
        arr = np.full(n, np.nan)
        arr[g.seg_id.to_numpy()] = g.score.to_numpy()
        sentence.setdefault(str(v), {})[str(s)] = arr
    kinds_ranked = sorted(set(ranking.human_score))
    ranking = ranking[ranking.human_score == kind]
    tests = tests[(tests.human_score == kind) & tests.test.isin(["perm_both", "pairs"])]
    corr = corr[(corr.human_score == kind) & (corr.refset == full) & (corr.include_human == include_human)]
    import yaml  # type: ignore[import-untyped]

    config = yaml.safe_load(meta_md[b"config"].decode())
    out: dict[str, Any] = {"kind": kind, "kinds_ranked": kinds_ranked, "full_refset": full,
                           "include_human": include_human, "sys_labels": sys_labels, "seg_labels": seg_labels,
                           "n_samples": int(config["n_samples"]), "seed": int(config["seed"]), "stats": {}}
    hsys = np.array([human.sys[s] for s in sys_labels])
    hseg = np.stack([human.seg[s] for s in seg_labels]) if seg_labels else np.zeros((0, n))
    for level, stat in RANKED:
        rows = ranking[(ranking.level == level) & (ranking.statistic == stat)]
        if rows.empty:
            continue
        variants = list(rows.variant)
        by_system = level == "system" and stat != "soft_pairwise_accuracy"
        if by_system:
            metric = {v: np.array([corpus[(v, s)] for s in sys_labels]) for v in variants}
            gold = hsys
        else:
            metric = {v: np.stack([sentence[v][s] for s in seg_labels]) for v in variants}
            gold = hseg
            if stat == "pearson":  # pooled over the judged entries (as the job masks them; MTME filters them)
                metric = {v: np.where(np.isnan(gold), np.nan, m) for v, m in metric.items()}
        eps = {}
        if stat == "acc_eq":
            c = corr[(corr.level == "segment") & (corr.method == "acc_eq") & (corr.grouping == "item")]
            eps = dict(zip(c.variant, c.epsilon))
        t = tests[tests.statistic == f"{level}.{stat}"]
        job_tests = {(a, b): {"delta": float(d), "p": float(p), "k": int(k)}
                     for a, b, d, p, k in zip(t.variant_a, t.variant_b, t.delta, t.p_value, t.n_samples)}
        out["stats"][f"{level}.{stat}"] = {
            "level": level, "statistic": stat, "variants": variants, "metric": metric, "gold": gold,
            "values": dict(zip(rows.variant, map(float, rows.value))),
            "ranks": dict(zip(rows.variant, map(int, rows["rank"]))),
            "epsilon": {k: float(v) for k, v in eps.items()}, "tests": job_tests}
    return out


def _packed(a: np.ndarray) -> list[float | None]:
    return [None if math.isnan(x) else float(x) for x in np.asarray(a, dtype=np.float64).ravel()]


def mtme_child(cfg: dict[str, Any]) -> dict[str, Any]:
    """MTME's workflow on the job's study (see the module docstring, item 3), in this fresh process."""
    t_start = time.perf_counter()
    ms, md, commit = load_mtme(Path(cfg["mtme"]))
    import warnings

    import scipy.stats  # noqa: F401 - imported before timing, as MTME's own modules do

    t_imports = time.perf_counter() - t_start
    t0 = time.perf_counter()
    study = read_study(Path(cfg["tables"]), Path(cfg["root"]), cfg.get("kind"))
    t_read = time.perf_counter() - t0
    k_draws = int(study["n_samples"])
    budget = float(cfg["budget"])
    seed = int(cfg["seed"])
    warnings.simplefilter("ignore")
    psd = ms.PermutationSigDiffParams(block_size=min(BLOCK, k_draws))

    def never_stop(k: int) -> Any:
        return ms.PermutationSigDiffParams(block_size=k, early_min=-1.0, early_max=2.0)

    out: dict[str, Any] = {"commit": commit, "kind": study["kind"], "kinds_ranked": study["kinds_ranked"],
                           "k": k_draws, "budget": budget, "t_imports": t_imports, "t_read": t_read,
                           "sys_labels": study["sys_labels"], "seg_labels": study["seg_labels"], "stats": {}}
    for name, st in study["stats"].items():
        variants, metric, gold = st["variants"], st["metric"], st["gold"]
        stat = st["statistic"]
        s_done = {"values": 0.0, "tests_run": 0.0, "projected": 0.0, "calibration": 0.0}
        t0 = time.perf_counter()
        # ---- MTME's Correlation objects, the statistic, its test (as the CompareMetrics* functions build them)
        if stat == "soft_pairwise_accuracy":  # CompareMetricsWithPairwiseConfidenceError on the complete block
            ok = ~np.isnan(gold)
            rows = np.flatnonzero(ok.any(axis=1))
            cols = np.flatnonzero(ok[rows].all(axis=0))
            gold = gold[np.ix_(rows, cols)]
            metric = {v: m[np.ix_(rows, cols)] for v, m in metric.items()}
        n_sys = gold.shape[0]
        gold_list = _packed(gold)
        corrs = {v: ms.Correlation(n_sys, gold_list, [float(x) for x in np.asarray(metric[v]).ravel()])
                 for v in variants}
        first = corrs[variants[0]]
        eps: dict[str, float] = {}
        values: dict[str, float] = {}
        if stat == "acc_eq":  # CompareMetrics(KendallWithTiesOpt, 'item', perm_test='pairs', acc23, rate 1.0)
            for v in variants:
                tau, eps[v], _ = ms.KendallWithTiesOpt(first.gold_scores, corrs[v].metric_scores, "acc23", n_sys,
                                                       "item", 1.0)
                values[v] = float(tau)
        else:
            fcn = _statistic(ms, stat, n_sys, first)
            if stat == "pearson":  # CompareMetrics(scipy.stats.pearsonr, 'none'): through AverageCorrelation
                wrapper = ms.AverageCorrelation(fcn, n_sys, average_by="none", filter_nones=first.none_count,
                                                replace_nans_with_zeros=False)
                values = {v: float(wrapper(c.gold_scores, c.metric_scores)[0]) for v, c in corrs.items()}
            else:
                values = {v: float(fcn(c.gold_scores, c.metric_scores)[0]) for v, c in corrs.items()}
        test = _test(ms, stat, None if stat == "acc_eq" else fcn)
        order = [v for v, _ in sorted(values.items(), key=lambda x: (-x[1], x[0]))]
        s_done["values"] = time.perf_counter() - t0
        pairs = [(i, j) for i in range(len(order)) for j in range(i + 1, len(order))]
        # draws the job made per pair (its early stopping is MTME's rule): the projection's k
        job_k = [t["k"] for t in st["tests"].values()]
        fallback_k = int(statistics.median(job_k)) if job_k else psd.block_size

        def tested(i: int, j: int) -> dict[str, Any] | None:
            return st["tests"].get((order[j], order[i])) or st["tests"].get((order[i], order[j]))

        def k_of(i: int, j: int) -> int:
            row = tested(i, j)
            if row is not None:
                return int(row["k"])
            if np.array_equal(metric[order[i]], metric[order[j]], equal_nan=True):
                return psd.block_size  # identical scores: p = 1, stops at the first block
            return fallback_k

        # ---- calibration (not counted): setup (k=0) and time per draw without early stopping, on one pair
        t0 = time.perf_counter()
        ci, cj = pairs[len(pairs) // 2]
        t = time.perf_counter()
        test(corrs[order[cj]], corrs[order[ci]], 0, psd)
        setup = time.perf_counter() - t
        k_cal = 3 if stat in ("acc_eq", "soft_pairwise_accuracy") else 100
        t = time.perf_counter()
        test(corrs[order[cj]], corrs[order[ci]], k_cal, never_stop(k_cal))
        per_draw = max(0.0, (time.perf_counter() - t - setup) / k_cal)
        s_done["calibration"] = time.perf_counter() - t0
        cost = {(i, j): setup + k_of(i, j) * per_draw for i, j in pairs}
        projected_all = sum(cost.values())
        # ---- the tests: every pair when the projection fits the budget, else the cheapest until it is spent (the
        # pairs the job tested first: a variant with the very scores of another is not tested by the job)
        rng = np.random.default_rng(seed)
        todo = [pairs[x] for x in rng.permutation(len(pairs))]
        todo.sort(key=lambda ij: (k_of(*ij), tested(*ij) is None))
        full = budget <= 0 or projected_all <= budget
        res: dict[tuple[int, int], dict[str, Any]] = {}
        np.random.seed(seed)  # MTME draws from the global RandomState
        spent = 0.0
        for i, j in todo:
            if not full and spent + setup + k_of(i, j) * per_draw > budget:
                continue
            t = time.perf_counter()
            p, d, used = test(corrs[order[j]], corrs[order[i]], k_draws, psd)
            dt = time.perf_counter() - t
            spent += dt
            res[(i, j)] = {"p": float(p), "delta": float(d), "k": int(used), "run": True, "seconds": dt}
            # the time per draw of the pairs run so far (a few calibration draws vary with the machine's load)
            per_draw = max(0.0, float(np.median([(r["seconds"] - setup) / r["k"] for r in res.values()])))
        s_done["tests_run"] = spent
        cost = {(i, j): setup + k_of(i, j) * per_draw for i, j in pairs}
        # ---- the pairs not run: MTME's delta without draws; their time projected
        left = [ij for ij in pairs if ij not in res]
        if left:
            if stat == "acc_eq":
                corr_of = _pairs_corr(ms, corrs, eps, variants)
            for i, j in left:
                if stat == "acc_eq":
                    d = corr_of[order[i]] - corr_of[order[j]]
                else:
                    _, d, _ = test(corrs[order[j]], corrs[order[i]], 0, psd)
                res[(i, j)] = {"p": math.nan, "delta": float(d), "k": k_of(i, j), "run": False,
                               "seconds": cost[(i, j)]}
                s_done["projected"] += cost[(i, j)]
        sig = np.zeros((len(order), len(order)))
        for (i, j), r in res.items():
            sig[i, j] = r["p"]
        ranks = md.AssignRanks(sig, ALPHA) if not left else None
        out["stats"][name] = {
            "order": order, "values": values, "epsilon": eps, "ranks": dict(zip(order, ranks)) if ranks else None,
            "pairs": [{"better": order[i], "worse": order[j], **res[(i, j)]} for i, j in pairs],
            "times": s_done, "setup": setup, "per_draw": per_draw, "projected_all": projected_all,
            "n_run": len(pairs) - len(left), "n_pairs": len(pairs), "n_systems": n_sys,
            "n_segments": int(gold.shape[1]) if gold.ndim == 2 else 1}
        print(f"  MTME {name}: values {s_done['values']:.1f} s, {len(pairs) - len(left)}/{len(pairs)} pairs run in "
              f"{spent:.1f} s, projected rest {s_done['projected']:.0f} s (setup {setup:.3f} s + {per_draw:.4f} s "
              f"a draw)", file=sys.stderr, flush=True)
    out["t_total_in_process"] = time.perf_counter() - t_start
    return out


def _statistic(ms: Any, stat: str, n_sys: int, first: Any) -> Callable[..., Any]:
    """The correlation function MTME's comparison of ``stat`` hands to ``PermutationSigDiff``."""
    import scipy.stats

    if stat == "pairwise_accuracy":  # CompareMetricsWithGlobalAccuracy's _Accuracy, one language pair
        def accuracy(g: Any, m: Any) -> tuple[float, int]:
            agree, pairs = ms.Agreement(g, m)
            return agree / pairs, pairs

        return accuracy
    if stat == "soft_pairwise_accuracy":  # CompareMetricsWithPairwiseConfidenceError's pce_wrapper
        return functools.partial(ms.PairwiseConfidenceError, num_sys=n_sys, filter_nones=first.none_count > 0)
    return scipy.stats.pearsonr


def _test(ms: Any, stat: str, fcn: Callable[..., Any] | None) -> Callable[[Any, Any, int, Any], tuple[float, float, int]]:
    """ComputeSigMatrix's call for one pair: ``(p, delta, draws)`` of "c2 better than c1"."""
    def test(c1: Any, c2: Any, k: int, params: Any) -> tuple[float, float, int]:
        if fcn is None:  # perm_test='pairs' (acc_eq)
            p, d, used, _ = ms.PairwisePermutationSigDiff(c1, c2, "acc23", "item", k, params, sample_rate=1.0,
                                                          replace_nans_with_zeros=False)
        else:
            p, d, used, _ = ms.PermutationSigDiff(c1, c2, fcn, "none", k, params, False)
        return p, d, used

    return test


def _pairs_corr(ms: Any, corrs: dict[str, Any], eps: dict[str, float], variants: list[str]) -> dict[str, float]:
    """Each variant's correlation as ``PairwisePermutationSigDiff``'s ``_Corr`` computes it (item grouping, at the
    variant's optimal epsilon, NaN items left out): its ``delta`` of two variants is the difference of these."""
    first = corrs[variants[0]]
    lens, gold, _, _ = ms._ReshapeAndFilter(first, first, "item")
    starts = np.r_[0, np.cumsum(lens)]
    bounds = list(zip(starts[:-1], starts[1:]))
    pre_gold = [ms.KendallPreproc(gold[b:e]) for b, e in bounds]
    out = {}
    for v in variants:
        _, _, m, _ = ms._ReshapeAndFilter(corrs[v], corrs[v], "item")
        vals = [ms.KendallVariants(None, None, "acc23", g, 0, ms.PairwiseDiffs(m[b:e], eps[v]))[0]
                for g, (b, e) in zip(pre_gold, bounds)]
        arr = np.asarray(vals)[~np.isnan(vals)]
        out[v] = float(np.average(arr)) if len(arr) else 0.0
    return out


# ================================================================================================ comparison


def compare(name: str, study: dict[str, Any], mt: dict[str, Any]) -> dict[str, Any]:
    """Assert the job's numbers equal MTME's (see the module docstring); returns what was compared."""
    problems: list[str] = []
    summary: dict[str, Any] = {"stats": {}}
    for key, st in study["stats"].items():
        m = mt["stats"].get(key)
        if m is None:
            problems.append(f"{key}: MTME has no result")
            continue
        variants = st["variants"]
        for v in variants:
            if not close(st["values"][v], m["values"][v]):
                problems.append(f"{key} value {v}: job {st['values'][v]!r} MTME {m['values'][v]!r}")
            if m["epsilon"] and not close(st["epsilon"].get(v, math.nan), m["epsilon"][v]):
                problems.append(f"{key} epsilon {v}: job {st['epsilon'].get(v)!r} MTME {m['epsilon'][v]!r}")
        job_order = [v for v, _ in sorted(st["values"].items(), key=lambda x: (-x[1], x[0]))]
        if job_order != m["order"]:
            bad = [(a, b) for a, b in zip(job_order, m["order"]) if a != b and not close(st["values"][a],
                                                                                          st["values"][b])]
            if bad:
                problems.append(f"{key} order: job {job_order} MTME {m['order']}")
        by_pair = {(p["worse"], p["better"]): p for p in m["pairs"]}
        n_delta = n_p = same_k = 0
        max_dp = 0.0
        ties: list[str] = []
        discrete = st["statistic"] == "pairwise_accuracy"  # an exact 0 delta is a real tie there
        for (a, b), jt in st["tests"].items():
            p = by_pair.get((a, b))
            sign = 1.0
            if p is None:
                p, sign = by_pair.get((b, a)), -1.0
            if p is None:
                problems.append(f"{key} pair {a} < {b}: not among MTME's pairs")
                continue
            n_delta += 1
            if not close(jt["delta"], sign * p["delta"]):
                problems.append(f"{key} delta {a} < {b}: job {jt['delta']!r} MTME {sign * p['delta']!r}")
            if p["run"] and sign > 0 and max(abs(jt["delta"]), abs(p["delta"])) <= TIE and not discrete:
                ties.append(f"{b}>{a} (delta {jt['delta']:.1e} | {p['delta']:.1e}, p {jt['p']:.2f} | {p['p']:.2f})")
            elif p["run"] and sign > 0:
                n_p += 1
                draws = min(jt["k"], p["k"])
                if not p_close(jt["p"], p["p"], draws):
                    problems.append(f"{key} p {a} < {b}: job {jt['p']} ({jt['k']} draws) MTME {p['p']} "
                                    f"({p['k']} draws)")
                max_dp = max(max_dp, abs(jt["p"] - p["p"]))
                same_k += int(jt["k"] == p["k"])
        untested = [(p["worse"], p["better"]) for p in m["pairs"]
                    if (p["worse"], p["better"]) not in st["tests"] and (p["better"], p["worse"]) not in st["tests"]]
        rank_note = "not compared: MTME ran %d of %d pairs" % (m["n_run"], m["n_pairs"])
        agree = None
        if m["ranks"] is not None:
            job_r, mt_r = st["ranks"], m["ranks"]
            agree = sum(job_r.get(v) == mt_r.get(v) for v in variants)
            differ = [v for v in variants if job_r.get(v) != mt_r.get(v)]
            # a rank can differ only where the two sides disagree on a pair's significance (AssignRanks reads
            # nothing else): those pairs, each with its p-values (the job's test of a variant with the very scores
            # of an earlier one is that one's)
            rep = {v: next(w for w in variants if np.array_equal(st["metric"][w], st["metric"][v], equal_nan=True))
                   for v in variants}
            flips, unexplained = [], []
            for p in m["pairs"]:
                a, b = rep[p["worse"]], rep[p["better"]]
                jt = st["tests"].get((a, b)) or st["tests"].get((b, a))
                if jt is None or (jt["p"] <= ALPHA) == (p["p"] <= ALPHA):
                    continue
                within = p_close(jt["p"], ALPHA, jt["k"]) and p_close(p["p"], ALPHA, p["k"])
                flips.append(f"{p['better']}>{p['worse']} p {jt['p']:.3f}|{p['p']:.3f}"
                             + ("" if within else " NOT within sampling error of 0.05"))
                if not within:
                    unexplained.append(flips[-1])
            rank_note = f"{agree}/{len(variants)} agree"
            if differ:
                rank_note += (f"; differ: {', '.join(f'{v} {job_r.get(v)}|{mt_r.get(v)}' for v in differ)}; "
                              f"significance differs on {len(flips)} pair(s): {', '.join(flips) or 'NONE'}")
                if not flips or unexplained:
                    problems.append(f"{key} ranks differ ({differ}) where no p-value is near 0.05: "
                                    f"{unexplained or 'no pair differs in significance'}")
        summary["stats"][key] = {"n_variants": len(variants), "n_pairs": m["n_pairs"], "n_run": m["n_run"],
                                 "n_delta": n_delta, "n_p": n_p, "max_dp": max_dp, "same_k": same_k,
                                 "untested": len(untested), "ranks": rank_note, "agree": agree, "ties": ties}
    if problems:
        print(f"\n{name}: {len(problems)} differences between the job and MTME (first 30):", file=sys.stderr)
        for line in problems[:30]:
            print("  " + line, file=sys.stderr)
        raise SystemExit(f"{name}: the job's numbers differ from MTME's; no time is reported")
    return summary


def mtme_side(ds: dict[str, Any], args: argparse.Namespace, work: Path) -> dict[str, Any]:
    d = work / f"{ds['name']}-mtme"
    d.mkdir()
    cfg = {"mtme": str(args.mtme), "tables": ds["tables"], "root": ds["root"], "kind": args.mtme_kind,
           "budget": args.mtme_budget, "seed": args.seed}
    (d / "cfg.json").write_text(json.dumps(cfg))
    print(f"\n## {ds['name']}: MTME's workflow in a fresh process; {uptime()}", file=sys.stderr)
    l0 = quiet(args)
    m = run_measured([sys.executable, str(Path(__file__).resolve()), "--_mtme-child", str(d / "cfg.json"),
                      str(d / "out.json")], d)
    sys.stderr.write(m["stderr"])
    out = json.loads((d / "out.json").read_text())
    out.update(wall=m["wall"], cpu=m["cpu"], load=(l0, float(load1())))
    study = read_study(Path(ds["tables"]), Path(ds["root"]), out["kind"])
    out["compared"] = compare(ds["name"], study, out)
    return out


# ================================================================================================ report


def _med(xs: list[float]) -> float:
    return statistics.median(xs)


def _mib(b: float) -> str:
    return f"{b / 2**20:,.0f} MiB"


def report(args: argparse.Namespace, jobs: dict[str, dict[str, Any]], mt: dict[str, dict[str, Any]],
           demo: dict[str, Any] | None, synth: dict[str, Any] | None) -> str:
    import mlflow
    import scipy

    from harness.core.mtme import MTME_COMMIT

    rows: list[list[str]] = []
    notes: list[str] = []

    def row(what: str, measured: str, target: str, met: bool | None) -> None:
        rows.append([what, measured, target, "n/a" if met is None else ("**met**" if met else "**not met**")])

    labels = {"ruen": "wmt21_news_ruen_da (10 systems x 1000 segments, 2 refs, sparse DA x 2 kinds, COMET x 2)",
              "synthetic": (f"synthetic ({synth['n_systems']} systems x {synth['n_segments']} segments, 2 refs, dense "
                            "DA x 1 kind)") if synth else "synthetic"}
    for name, ds in jobs.items():
        wall = _med([r["wall"] for r in ds["runs"]])
        cpu = _med([r["cpu"] for r in ds["runs"]])
        rss = max(r["rss"] for r in ds["runs"])
        row(f"{'1' if name == 'ruen' else '2'}. `meta_eval` whole process, {labels[name]}, cold",
            f"{wall:.2f} s ({cpu:.1f} s CPU)", f"<= {TARGETS[name]:.0f} s", wall <= TARGETS[name])
        if name == "ruen":
            row("1. its peak RSS (process + children)", _mib(rss), "(printed)", None)
        else:
            row("2. its peak RSS (process + children)", f"{_mib(rss)} ({rss / GB:.2f} GB)", "<= 1 GB", rss <= GB)
    for name, m in mt.items():
        h = _med([r["wall"] for r in jobs[name]["runs"]])
        measured = sum(s["times"]["values"] + s["times"]["tests_run"] for s in m["stats"].values())
        projected = sum(s["times"]["projected"] for s in m["stats"].values())
        total = measured + projected
        approx = "~" if projected else ""
        row(f"3. MTME's workflow / harness whole process, {name} (kind {m['kind']})",
            f"{approx}{total / h:,.0f}x ({approx}{duration(total)} / {h:.2f} s; measured part alone "
            f"{measured / h:,.0f}x)", f">= {TARGETS['ratio']:.0f}x", total / h >= TARGETS["ratio"])
    if mt:
        row("3. numbers identical (values, epsilons, order, deltas; p-values within sampling error)",
            "asserted: " + "; ".join(
                f"{n}: {sum(s['n_variants'] for s in m['compared']['stats'].values())} values, "
                f"{sum(s['n_delta'] for s in m['compared']['stats'].values())} deltas, "
                f"{sum(s['n_p'] for s in m['compared']['stats'].values())} p-values" for n, m in mt.items()),
            "identical", True)
    if demo:
        first = _med([r["wall"] for r in demo["first"]])
        warm = _med([r["wall"] for r in demo["warm"]])
        row("4. demo `harness` (README's first command), second job: cache + store present, tracked",
            f"{warm:.2f} s ({_med([r['cpu'] for r in demo['warm']]):.1f} s CPU, "
            f"{_mib(max(r['rss'] for r in demo['warm']))})", f"<= {TARGETS['demo_warm']:.0f} s",
            warm <= TARGETS["demo_warm"])
        row("4. demo `harness`, first job after install: no runs dir (new store, cold cache)",
            f"{first:.2f} s ({_med([r['cpu'] for r in demo['first']]):.1f} s CPU, "
            f"{_mib(max(r['rss'] for r in demo['first']))})", f"<= {TARGETS['demo_first']:.0f} s",
            first <= TARGETS["demo_first"])
    out = ["## The meta_eval study against its targets, and against MTME's workflow", "",
           f"Median of {args.repeat} run(s) per timing (each after waiting up to {args.wait:.0f} s for the 1-minute "
           f"load to fall below {args.max_load}); peak RSS: the largest of the runs. "
           f"{'QUICK RUN (not the targets setting): ' if args.quick else ''}"
           f"n_samples {args.n_samples or 'the job default (1000)'}; MTME test budget "
           f"{args.mtme_budget:.0f} s per statistic (0 = none). mlflow {mlflow.__version__}, numpy {np.__version__}, "
           f"scipy {scipy.__version__}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs.", "",
           md_table(["what", "measured", "target", "met"], rows), ""]
    if synth:
        out.append(f"Synthetic data: `benchmarks/synthetic_study.py` seed {synth['seed']}, files sha256 "
                   f"`{synth['digest'][:16]}`, written in {synth['seconds']:.1f} s (not timed).")
        out.append("")
    for name, ds in jobs.items():
        ph: dict[str, list[float]] = {}
        for r in ds["runs"]:
            for k, v in r["phases"].items():
                ph.setdefault(k, []).append(v)
        loads = ", ".join(f"{r['load'][0]:.2f}->{r['load'][1]:.2f}" for r in ds["runs"])
        out.append(f"- {name} job runs: " + ", ".join(f"{r['wall']:.2f} s / {_mib(r['rss'])}" for r in ds["runs"])
                   + "; the job's own phase lines (median s): "
                   + ", ".join(f"{k} {_med(v):.1f}" for k, v in ph.items()) + f"; 1-min load per run {loads}.")
    if demo:
        for label in ("first", "warm"):
            out.append(f"- demo {label} runs: " + ", ".join(
                f"{r['wall']:.2f} s ({r['computed']}; load {r['load'][0]:.2f}->{r['load'][1]:.2f})"
                for r in demo[label]) + "; phases of the last: " + ", ".join(
                f"{k} {v:.1f}" for k, v in demo[label][-1]["phases"].items()))
    for name, m in mt.items():
        out += ["", f"MTME on {name} (checkout {m['commit'][:7]}, the harness transcribes {MTME_COMMIT[:7]}; "
                    f"kind {m['kind']} of the ranked {', '.join(m['kinds_ranked'])}; k = {m['k']}, block 100; "
                    f"{len(m['sys_labels'])} systems at system level, {len(m['seg_labels'])} at segment level). "
                    f"Fresh process: {m['wall']:.0f} s wall in all (imports {m['t_imports']:.1f} s, reading the "
                    f"tables {m['t_read']:.1f} s, calibration, deltas of the pairs not run; load "
                    f"{m['load'][0]:.2f}->{m['load'][1]:.2f}).", ""]
        trows = []
        for key, s in m["stats"].items():
            c = m["compared"]["stats"][key]
            total = s["times"]["values"] + s["times"]["tests_run"] + s["times"]["projected"]
            trows.append([key, f"{c['n_variants']} ({s['n_systems']} x {s['n_segments']})", duration(s["times"]["values"]),
                          f"{s['n_run']}/{s['n_pairs']}", duration(s["times"]["tests_run"]),
                          ("~" + duration(s["times"]["projected"])) if s["times"]["projected"] else "0",
                          f"{s['setup']:.3g} s + {s['per_draw']:.3g} s/draw", duration(total),
                          f"{c['n_delta']} deltas ({c['untested']} MTME pairs the job did not test), {c['n_p']} "
                          f"p-values (max abs diff {c['max_dp']:.3f}; same draws {c['same_k']}/{c['n_p']})"
                          + (f"; rounding ties, p not compared: {', '.join(c['ties'])}" if c["ties"] else ""),
                          c["ranks"]])
        out.append(md_table(["statistic", "variants (systems x segments)", "MTME values", "pairs run",
                             "MTME tests run", "projected rest", "MTME pair cost", "MTME total", "checked",
                             "ranks job|MTME"], trows))
    out += ["", "Load (1, 5, 15 min): " + "; ".join(
        f"{n}: before `{d['before'].split('load average:')[-1].strip()}`, after "
        f"`{d['after'].split('load average:')[-1].strip()}`"
        for n, d in [*jobs.items(), *([("demo", demo)] if demo else [])]) + "."]
    out += notes
    return "\n".join(out) + "\n"


# ================================================================================================ main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Prints a markdown section on stdout; progress on stderr.")
    ap.add_argument("--mtme", type=Path, default=None,
                    help="a checkout of google-research/mt-metrics-eval (the folder holding mt_metrics_eval/); "
                         "without it the MTME rows are skipped")
    ap.add_argument("--quick", action="store_true",
                    help="try-out: ru-en and the demo only, 1 repeat, the job with n_samples=100 (so MTME's k=100), "
                         "MTME budget 20 s a statistic")
    ap.add_argument("--datasets", default=None, help="comma-separated: ruen, synthetic (default both; --quick: ruen); none: the demo only")
    ap.add_argument("--no-demo", action="store_true", help="skip the demo rows (target 4)")
    ap.add_argument("--repeat", type=int, default=None, help="runs per timing, median (default 3; --quick 1)")
    ap.add_argument("--n-samples", type=int, default=None,
                    help="the job's n_samples (default: the job's own, 1000; --quick 100)")
    ap.add_argument("--mtme-budget", type=float, default=None,
                    help="seconds of MTME tests per statistic before the rest is projected (default 180; --quick "
                         "20; 0: run every pair)")
    ap.add_argument("--mtme-kind", default=None, help="human kind MTME evaluates (default the dataset's first)")
    ap.add_argument("--seed", type=int, default=12345, help="np.random's seed for MTME's draws")
    ap.add_argument("--synthetic-seed", type=int, default=1)
    ap.add_argument("--synthetic-systems", type=int, default=20)
    ap.add_argument("--synthetic-segments", type=int, default=3000)
    ap.add_argument("--max-load", type=float, default=1.5,
                    help="wait before each measurement until the 1-minute load is below this (default 1.5)")
    ap.add_argument("--wait", type=float, default=120, help="longest wait for the load, seconds (default 120)")
    ap.add_argument("--markdown-out", type=Path, default=None, help="also write the markdown section to this file")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder (tables, synthetic data)")
    ap.add_argument("--_mtme-child", nargs=2, metavar=("CONFIG", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args._mtme_child:
        cfg = json.loads(Path(args._mtme_child[0]).read_text())
        Path(args._mtme_child[1]).write_text(json.dumps(mtme_child(cfg)))
        return 0

    datasets = (args.datasets or ("ruen" if args.quick else "ruen,synthetic")).split(",")
    datasets = [] if datasets == ["none"] else datasets
    for d in datasets:
        if d not in ("ruen", "synthetic"):
            ap.error(f"unknown dataset {d!r}; choose from ruen, synthetic")
    args.repeat = args.repeat or (1 if args.quick else 3)
    args.n_samples = args.n_samples or (100 if args.quick else None)
    args.mtme_budget = args.mtme_budget if args.mtme_budget is not None else (20.0 if args.quick else 180.0)
    if not (VENV_BIN / "harness").exists():
        ap.error(f"no harness command next to {sys.executable}: run with the project's virtualenv")
    if args.mtme is None:
        print("bench_meta_eval_study: no MTME checkout given (--mtme PATH): the MTME rows are skipped. Fetch "
              "google-research/mt-metrics-eval; do not pip install 'mt-metrics-eval' (not Google's package).",
              file=sys.stderr)
    t_start = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="bench_meta_eval_study-"))
    jobs: dict[str, dict[str, Any]] = {}
    mt: dict[str, dict[str, Any]] = {}
    synth = None
    demo = None
    try:
        if not args.no_demo:
            demo = demo_runs(args, work)
        for name in datasets:
            if name == "ruen":
                root = RUEN
            else:
                from synthetic_study import generate

                root = work / "synthetic"
                t = time.perf_counter()
                synth = generate(root, args.synthetic_systems, args.synthetic_segments, args.synthetic_seed)
                synth["seconds"] = time.perf_counter() - t
            jobs[name] = meta_eval_runs(name, root, args, work)
        if args.mtme is not None:
            for name in datasets:
                mt[name] = mtme_side(jobs[name], args, work)
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    text = report(args, jobs, mt, demo, synth)
    text += f"\nThe whole benchmark took {(time.perf_counter() - t_start) / 60:.1f} min.\n"
    print(text)
    if args.markdown_out:
        args.markdown_out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
