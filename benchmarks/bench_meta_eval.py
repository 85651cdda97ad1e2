"""Benchmark: the WMT meta-evaluation statistics, harness.core.mtme against Google's mt-metrics-eval (MTME).

Given a checkout of google-research/mt-metrics-eval (``--mtme PATH``, the folder holding ``mt_metrics_eval/``;
imported from there by path, never pip-installed: the PyPI name ``mt-metrics-eval`` is not Google's package), both
compute the same statistics on the same inputs in this one process, in turn (their timed samples alternate), and
the numbers are asserted equal before any time is printed. Without ``--mtme`` the benchmark is skipped with a message.

Inputs (computed first, not timed): sentence BLEU ``[systems, segments]`` (sentBLEU: effective order on) and corpus
BLEU ``[systems]`` of every variant against all references of the dataset, with its human scores oriented
higher-is-better: WMT21 ru-en (10 systems, 1000 segments, sparse crowd DA z scores, ``da_z``) and the demo (WMT21
en-de, 9 systems incl. the human translation ref-A, MQM). MTME gets them as its ``stats.Correlation`` objects (system-major packed lists,
``None`` where the human score is missing); the harness as ``[S, n]`` matrices with NaN.

Statistics (each row: every variant, or every pair of variants):

- pairwise accuracy (system level): MTME ``stats.Agreement`` / pairs (as ``CompareMetricsWithGlobalAccuracy``'s
  ``_Accuracy`` for one language pair) vs ``meta_eval.pairwise_accuracy``; equal exactly;
- soft pairwise accuracy from sentence BLEU (1 - PCE, 1000 permutations, MTME's seed 4): MTME
  ``Correlation.PairwiseConfidenceError`` on the segments every system has a human score for (MTME reshapes the
  judged entries to ``[systems, -1]``, which needs that block) vs ``meta_eval.soft_pairwise_accuracy`` with the
  human p-values computed once (as the job does); equal to rel 1e-9;
- acc_eq with its epsilon search (``KendallWithTiesOpt(variant='acc23', average_by='item', sample_rate=1.0)``) vs
  ``meta_eval.acc_eq``; value and epsilon equal to rel 1e-9;
- the significance tests that rank the variants, all pairs, as MTME's ``CompareMetrics*`` runs them (values,
  variants sorted by value then name, ``PermutationSigDiff`` / ``PairwisePermutationSigDiff`` for every pair
  ``i < j`` as ``ComputeSigMatrix`` calls them, ``AssignRanks``): PERM-BOTH of system-level Pearson, of pairwise
  accuracy, of soft pairwise accuracy, of segment-level (pooled) Pearson, and the pair-swap test of acc_eq; the
  harness runs ``meta_eval.pearson_test`` (the job's PERM-BOTH of Pearson: every draw's sums from one matrix
  product), ``pairwise_accuracy_test``, ``soft_pairwise_accuracy_test`` and ``acc_eq_pairs_test`` on the same
  pairs. Early stopping is off on both sides (``block_size = draws``) so both make exactly the same number of
  draws. Asserted: the values, the order, every
  ``delta`` (rel 1e-9) and the number of draws; the p-values are Monte Carlo estimates from different random
  streams (MTME draws from the unseeded global ``np.random``, the harness from ``default_rng(seed)``), so they
  are asserted within sampling error (``|p1 - p2| <= 4 sqrt(2 p (1 - p) / draws) + 2 / draws``) and the largest
  difference is printed.

Times are wall and CPU seconds of this process (CPU includes BLAS threads); the point statistics are the median of
``--repeat`` runs (of 4x as many for soft pairwise accuracy, whose MTME side varies by 2x between processes, and
of 10x as many runs of 100 calls for pairwise accuracy, a call of microseconds). The machine may be shared: the
load is printed before and after.

    python benchmarks/bench_meta_eval.py --mtme /path/to/mt-metrics-eval --quick
    python benchmarks/bench_meta_eval.py --mtme /path/to/mt-metrics-eval [--draws 1000] [--slow-draws 100]
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
import types
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT / "harness" / "data"
DATASETS = {"ruen": (DATA / "wmt21_news_ruen_da", "da_z"), "demo": (DATA / "wmt21_news_ende", "mqm")}
VARIANTS = ("sacrebleu", "intl", "char")
REL = 1e-9


# ------------------------------------------------------------------------------------------------ inputs


def load_mtme(path: Path) -> tuple[Any, Any, str]:
    """MTME's ``stats`` and ``data`` modules from a checkout, and its commit (if the checkout is a git work tree).

    ``data.py`` imports apache_beam (only for ``parallel_file``) and ``ratings.py`` imports dacite (only to read
    rating files); neither is used here, so empty stand-ins are registered when they are not installed."""
    if not (path / "mt_metrics_eval" / "stats.py").is_file():
        raise SystemExit(f"--mtme {path}: no mt_metrics_eval/stats.py there (give the checkout's top folder)")
    for name in ("apache_beam", "dacite"):
        try:
            importlib.import_module(name)
        except ImportError:
            sys.modules[name] = types.ModuleType(name)
    sys.path.insert(0, str(path))
    stats = importlib.import_module("mt_metrics_eval.stats")
    data = importlib.import_module("mt_metrics_eval.data")
    if not Path(stats.__file__).resolve().is_relative_to(path.resolve()):
        raise SystemExit(f"mt_metrics_eval was imported from {stats.__file__}, not from {path}")
    try:
        commit = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown (not a git work tree)"
    return stats, data, commit


def variant_options(name: str) -> dict[str, Any]:
    import yaml

    conf = yaml.safe_load((ROOT / "conf" / "bleu" / f"{name}.yaml").read_text(encoding="utf-8"))
    return {k: conf[k] for k in ("tokenize", "lowercase", "smooth_method", "smooth_value", "max_ngram_order",
                                 "effective_order", "ref_length", "profile")}


def prepare(name: str, variants: tuple[str, ...]) -> dict[str, Any]:
    """Sentence and corpus BLEU of every variant (all references) and the human scores, higher is better."""
    from harness.core.bleu import corpus_score, sentence_scores
    from harness.core.options import make_options, sentence_options
    from harness.job.human import read_human_tsv
    from harness.text.pipeline import systems_statistics

    root, kind = DATASETS[name]
    meta = json.loads((root / "meta.json").read_text(encoding="utf-8"))
    systems = list(meta["systems"])

    def lines(path: Path) -> list[str]:
        out = path.read_text(encoding="utf-8").split("\n")
        return out[:-1] if out and out[-1] == "" else out

    hyps = [lines(root / "systems" / f"{s}.txt") for s in systems]
    refs = [lines(root / "refs" / f"{r}.txt") for r in meta["refs"]]
    info = meta["human_scores"][kind]
    import logging

    logging.getLogger("harness").setLevel(logging.ERROR)  # the sparse-DA notes
    human = read_human_tsv(root / info["file_seg"], root / info["file_sys"], systems=systems, n_segments=len(refs[0]),
                           name=kind, higher_is_better=info.get("higher_is_better", True)).oriented()
    keep = [s for s in systems if s in human.sys and s in human.seg]
    idx = [systems.index(s) for s in keep]
    sent, corpus = {}, {}
    for v in variants:
        opts = make_options(**variant_options(v))
        st = systems_statistics([hyps[i] for i in idx], refs, opts)
        sent_opts = sentence_options(opts)  # sentBLEU (effective order on), as the job's segment level
        sent[v] = np.stack([np.asarray(sentence_scores(s, sent_opts).score, dtype=np.float64) for s in st])
        corpus[v] = np.array([corpus_score(s, opts).score for s in st])
    return {"name": name, "kind": kind, "systems": keep, "sent": sent, "corpus": corpus,
            "hseg": np.stack([human.seg[s] for s in keep]), "hsys": np.array([human.sys[s] for s in keep])}


# ------------------------------------------------------------------------------------------------ timing


#: Pairwise accuracy takes microseconds a call: each of its timings is of this many calls in a row.
ACC_INNER = 100


def timed(fns: tuple[Callable[[], Any], ...], repeat: int = 1,
          inner: int = 1) -> list[tuple[float, float, Any]]:
    """For each of ``fns`` (MTME's side, the harness's): (median wall s, median CPU s of this process, last
    result) of one call. Each of the ``repeat`` samples times ``inner`` calls in a row and divides (for calls of
    microseconds, which one reading of the clocks would measure as much as the call); the sides' samples
    alternate, so that a pause of the machine falls on both sides rather than on all the samples of one."""
    walls: list[list[float]] = [[] for _ in fns]
    cpus: list[list[float]] = [[] for _ in fns]
    outs: list[Any] = [None for _ in fns]
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            c, t = time.process_time(), time.perf_counter()
            for _ in range(inner):
                outs[k] = fn()
            walls[k].append((time.perf_counter() - t) / inner)
            cpus[k].append((time.process_time() - c) / inner)
    return [(statistics.median(w), statistics.median(c), o) for w, c, o in zip(walls, cpus, outs)]


def duration(seconds: float) -> str:
    """Three significant digits in the unit that suits them (the rows span microseconds to a minute)."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e6:.3g} us"


def close(a: float, b: float) -> bool:
    a, b = float(a), float(b)
    if math.isnan(a) and math.isnan(b):
        return True
    return math.isclose(a, b, rel_tol=REL, abs_tol=1e-12)


def p_close(p1: float, p2: float, draws: int) -> bool:
    p = (p1 + p2) / 2
    return abs(p1 - p2) <= 4 * math.sqrt(2 * p * (1 - p) / draws) + 2 / draws


def assign_ranks(sig: np.ndarray, pval: float = 0.05) -> list[int]:
    """MTME ``data.AssignRanks`` (the same rule, for the harness's matrix)."""
    ranks, rank, start = [], 1, 0
    for i in range(sig.shape[0]):
        if any(sig[start:i, i] <= pval):
            rank += 1
            start = i
        ranks.append(rank)
    return ranks


# ------------------------------------------------------------------------------------------------ the work


def point_statistics(d: dict[str, Any], ms: Any, repeat: int) -> list[dict[str, Any]]:
    """Pairwise accuracy, soft pairwise accuracy and acc_eq of every variant, both sides."""
    from harness.core import mtme as me

    variants = list(d["sent"])
    hseg, hsys = d["hseg"], d["hsys"]
    s = len(d["systems"])
    gold_sys = [float(x) for x in hsys]
    gold_seg = [None if math.isnan(x) else float(x) for x in hseg.ravel()]
    rows_b, cols_b = me.complete_block(hseg)
    gold_block = [float(x) for x in hseg[np.ix_(rows_b, cols_b)].ravel()]
    block = {v: [float(x) for x in d["sent"][v][np.ix_(rows_b, cols_b)].ravel()] for v in variants}
    seg = {v: [float(x) for x in d["sent"][v].ravel()] for v in variants}
    out = []

    def mtme_acc() -> list[float]:
        res = []
        for v in variants:
            agree, pairs = ms.Agreement(gold_sys, [float(x) for x in d["corpus"][v]])
            res.append(agree / pairs)
        return res

    def harness_acc() -> list[float]:  # every variant in one call, its rows made one array, as the job does
        return me.pairwise_accuracy(np.array([d["corpus"][v] for v in variants]), hsys)[0].tolist()

    def mtme_spa() -> list[float]:
        return [ms.Correlation(rows_b.size, gold_block, block[v]).PairwiseConfidenceError()[0] for v in variants]

    def harness_spa() -> list[float]:
        hp = me.pairwise_p_values(hseg[np.ix_(rows_b, cols_b)])  # once, as the job does
        return [me.soft_pairwise_accuracy(d["sent"][v], hseg, human_p_values=hp) for v in variants]

    def mtme_acc_eq() -> list[tuple[float, float]]:
        return [tuple(float(x) for x in ms.KendallWithTiesOpt(gold_seg, seg[v], "acc23", s, "item", 1.0)[:2])
                for v in variants]

    def harness_acc_eq() -> list[tuple[float, float]]:
        return [tuple(me.acc_eq(d["sent"][v], hseg)) for v in variants]

    for label, mf, hf, rep, inner in (("pairwise accuracy", mtme_acc, harness_acc, repeat * 10, ACC_INNER),
                                      (f"soft pairwise accuracy ({rows_b.size} x {cols_b.size} complete block)",
                                       mtme_spa, harness_spa, repeat * 4, 1),
                                      ("acc_eq + epsilon search (item grouping)", mtme_acc_eq, harness_acc_eq,
                                       max(1, repeat // 2), 1)):
        (mw, mc, mv), (hw, hc, hv) = timed((mf, hf), rep, inner)
        flat_m = [x for v in mv for x in (v if isinstance(v, tuple) else (v,))]
        flat_h = [x for v in hv for x in (v if isinstance(v, tuple) else (v,))]
        bad = [(v, a, b) for v, a, b in zip(variants * 2, flat_m, flat_h) if not close(a, b)]
        if bad:
            raise SystemExit(f"{d['name']} {label}: MTME and harness differ: {bad}")
        out.append({"statistic": label, "work": f"{len(variants)} variants", "mtme": (mw, mc), "harness": (hw, hc),
                    "checked": f"{len(flat_m)} values equal", "values": dict(zip(variants, mv))})
    return out


def significance(d: dict[str, Any], ms: Any, md: Any, draws: int, slow_draws: int, seed: int
                 ) -> list[dict[str, Any]]:
    """The variant-ranking tests, all pairs, both sides (see the module docstring)."""
    import scipy.stats

    from harness.core import mtme as me

    variants = list(d["sent"])
    hseg, hsys = d["hseg"], d["hsys"]
    s = len(d["systems"])
    rows_b, cols_b = me.complete_block(hseg)
    packed = {  # MTME Correlation objects per statistic
        "sys": {v: ms.Correlation(s, [float(x) for x in hsys], [float(x) for x in d["corpus"][v]]) for v in variants},
        "seg": {v: ms.Correlation(s, [None if math.isnan(x) else float(x) for x in hseg.ravel()],
                                  [float(x) for x in d["sent"][v].ravel()]) for v in variants},
        "block": {v: ms.Correlation(rows_b.size, [float(x) for x in hseg[np.ix_(rows_b, cols_b)].ravel()],
                                    [float(x) for x in d["sent"][v][np.ix_(rows_b, cols_b)].ravel()])
                  for v in variants},
    }
    masked = {v: np.where(np.isnan(hseg), np.nan, d["sent"][v]) for v in variants}

    def accuracy(gold: Any, metric: Any) -> tuple[float, int]:  # CompareMetricsWithGlobalAccuracy._Accuracy, 1 LP
        agree, pairs = ms.Agreement(gold, metric)
        return agree / pairs, pairs

    pce = lambda g, m: ms.PairwiseConfidenceError(g, m, num_sys=rows_b.size)  # noqa: E731 - MTME's partial
    tests = [
        # label, MTME corrs, MTME statistic, average_by, perm_test, draws, harness value fn, harness test fn
        ("PERM-BOTH, system-level Pearson", "sys", scipy.stats.pearsonr, "none", "scores", draws,
         lambda v: float(me.pearson_rows(d["corpus"][v][None], hsys)[0]),
         lambda a, b, k: me.pearson_test(d["corpus"][a], d["corpus"][b], hsys, n_draws=k, seed=seed, block_size=k)),
        ("PERM-BOTH, pairwise accuracy", "sys", accuracy, "none", "scores", draws,
         lambda v: me.pairwise_accuracy(d["corpus"][v], hsys)[0],
         lambda a, b, k: me.pairwise_accuracy_test(d["corpus"][a], d["corpus"][b], hsys, n_draws=k, seed=seed,
                                                   block_size=k)),
        ("PERM-BOTH, soft pairwise accuracy", "block", pce, "none", "scores", slow_draws,
         lambda v: me.soft_pairwise_accuracy(d["sent"][v], hseg),
         lambda a, b, k: me.soft_pairwise_accuracy_test(d["sent"][a], d["sent"][b], hseg, n_draws=k, seed=seed,
                                                        block_size=k)),
        ("PERM-BOTH, segment-level Pearson (pooled)", "seg", scipy.stats.pearsonr, "none", "scores", draws,
         lambda v: float(me.pearson_rows(masked[v][None], hseg)[0]),
         lambda a, b, k: me.pearson_test(masked[a], masked[b], hseg, n_draws=k, seed=seed, block_size=k)),
        ("pair-swap test, acc_eq (item grouping)", "seg", ms.KendallWithTiesOpt, "item", "pairs", slow_draws,
         lambda v: me.acc_eq(d["sent"][v], hseg).value,
         lambda a, b, k: me.acc_eq_pairs_test(d["sent"][a], d["sent"][b], hseg, n_draws=k, seed=seed,
                                              block_size=k)),
    ]
    out = []
    for label, kind, fcn, average_by, perm_test, k, h_value, h_test in tests:
        corrs = packed[kind]
        psd = ms.PermutationSigDiffParams(block_size=k)  # no early stopping: exactly k draws on both sides
        extra = {"variant": "acc23", "sample_rate": 1.0} if perm_test == "pairs" else {}

        def mtme_side() -> tuple[list[str], dict[str, float], np.ndarray, np.ndarray, list[int]]:
            # data.CompareMetrics / CompareMetricsWithGlobalAccuracy / ...WithPairwiseConfidenceError, step by step
            first = next(iter(corrs.values()))
            if fcn is pce:
                values = {v: pce(c.gold_scores, c.metric_scores)[0] for v, c in corrs.items()}
            elif fcn is accuracy:
                values = {v: accuracy(c.gold_scores, c.metric_scores)[0] for v, c in corrs.items()}
            else:
                wrapper = ms.AverageCorrelation(fcn, first.num_sys, average_by=average_by,
                                                filter_nones=first.none_count, **extra)
                values = {v: wrapper(c.gold_scores, c.metric_scores)[0] for v, c in corrs.items()}
            order = [v for v, _ in sorted(values.items(), key=lambda x: (-x[1], x[0]))]
            n = len(order)
            sig, delta = np.zeros((n, n)), np.full((n, n), np.nan)
            used = np.zeros((n, n), dtype=int)
            np.random.seed(seed)  # MTME draws from the global RandomState
            for i in range(n):
                for j in range(i + 1, n):
                    if perm_test == "scores":
                        p, dl, kk, _ = ms.PermutationSigDiff(corrs[order[j]], corrs[order[i]], fcn, average_by, k,
                                                             psd, False)
                    else:
                        p, dl, kk, _ = ms.PairwisePermutationSigDiff(corrs[order[j]], corrs[order[i]], "acc23",
                                                                     average_by, k, psd, sample_rate=1.0)
                    sig[i, j], delta[i, j], used[i, j] = p, dl, kk
            return order, values, sig, delta, md.AssignRanks(sig, 0.05), used

        def harness_side() -> tuple[list[str], dict[str, float], np.ndarray, np.ndarray, list[int]]:
            values = {v: h_value(v) for v in variants}
            order = [v for v, _ in sorted(values.items(), key=lambda x: (-x[1], x[0]))]
            n = len(order)
            sig, delta = np.zeros((n, n)), np.full((n, n), np.nan)
            used = np.zeros((n, n), dtype=int)
            for i in range(n):
                for j in range(i + 1, n):
                    r = h_test(order[j], order[i], k)
                    sig[i, j], delta[i, j], used[i, j] = r.p_value, r.delta, r.n_draws
            return order, values, sig, delta, assign_ranks(sig), used

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (mw, mc, (m_order, m_val, m_sig, m_delta, m_rank, m_used)), \
                (hw, hc, (h_order, h_val, h_sig, h_delta, h_rank, h_used)) = timed((mtme_side, harness_side))
        problems = []
        if m_order != h_order:
            problems.append(f"order {m_order} vs {h_order}")
        problems += [f"value {v}: {m_val[v]!r} vs {h_val[v]!r}" for v in variants if not close(m_val[v], h_val[v])]
        n = len(m_order)
        max_dp = 0.0
        for i in range(n):
            for j in range(i + 1, n):
                if not close(m_delta[i, j], h_delta[i, j]):
                    problems.append(f"delta {m_order[i]}>{m_order[j]}: {m_delta[i, j]!r} vs {h_delta[i, j]!r}")
                if m_used[i, j] != h_used[i, j]:
                    problems.append(f"draws {m_order[i]}>{m_order[j]}: {m_used[i, j]} vs {h_used[i, j]}")
                if not p_close(m_sig[i, j], h_sig[i, j], k):
                    problems.append(f"p {m_order[i]}>{m_order[j]}: {m_sig[i, j]} vs {h_sig[i, j]} ({k} draws)")
                max_dp = max(max_dp, abs(m_sig[i, j] - h_sig[i, j]))
        if problems:
            raise SystemExit(f"{d['name']} {label}: MTME and harness differ: " + "; ".join(problems))
        pairs = n * (n - 1) // 2
        out.append({"statistic": label, "work": f"{pairs} pairs x {k} draws", "mtme": (mw, mc), "harness": (hw, hc),
                    "checked": f"values, order, {pairs} deltas, draws equal; max |dp| {max_dp:.3f}",
                    "ranks": (dict(zip(m_order, m_rank)), dict(zip(h_order, h_rank)))})
    return out


# ------------------------------------------------------------------------------------------------ main


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average: %.2f, %.2f, %.2f" % os.getloadavg()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Prints a markdown section (tables) on stdout; progress on stderr.")
    ap.add_argument("--mtme", type=Path, default=None,
                    help="a checkout of google-research/mt-metrics-eval (the folder holding mt_metrics_eval/); "
                         "without it the benchmark is skipped")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 2 variants, 100 draws (10 for the slow tests), 1 repeat")
    ap.add_argument("--datasets", default="ruen,demo", help="comma-separated: ruen, demo (default both)")
    ap.add_argument("--variants", default=None, help=f"comma-separated variants (default {','.join(VARIANTS)})")
    ap.add_argument("--draws", type=int, default=None,
                    help="draws of the PERM-BOTH tests of Pearson and pairwise accuracy (default 1000)")
    ap.add_argument("--slow-draws", type=int, default=None,
                    help="draws of the soft-pairwise-accuracy and acc_eq tests (default 100: MTME takes 0.05-0.35 s "
                         "a draw there)")
    ap.add_argument("--repeat", type=int, default=None, help="runs of each point statistic, median (default 5)")
    ap.add_argument("--seed", type=int, default=12345, help="seed of the harness's draws and of np.random for MTME")
    ap.add_argument("--markdown-out", type=Path, default=None, help="also write the markdown section to this file")
    args = ap.parse_args(argv)
    if args.mtme is None:
        print("bench_meta_eval: skipped: no MTME checkout given. Fetch google-research/mt-metrics-eval (git clone "
              "https://github.com/google-research/mt-metrics-eval) and pass --mtme PATH; do not pip install "
              "'mt-metrics-eval' (that PyPI name is not Google's package).")
        return 0
    datasets = args.datasets.split(",")
    for d in datasets:
        if d not in DATASETS:
            ap.error(f"unknown dataset {d!r}; choose from {', '.join(DATASETS)}")
    variants = tuple((args.variants or (",".join(VARIANTS[:2]) if args.quick else ",".join(VARIANTS))).split(","))
    if len(variants) < 2:
        ap.error("at least 2 variants (the tests compare pairs)")
    draws = args.draws or (100 if args.quick else 1000)
    slow = args.slow_draws or (10 if args.quick else 100)
    repeat = args.repeat or (1 if args.quick else 5)

    ms, md, commit = load_mtme(args.mtme)
    import scipy

    from harness.core.mtme import MTME_COMMIT

    results = []
    loads = []
    for name in datasets:
        load0 = uptime()
        print(f"## {name}: {load0}", file=sys.stderr)
        d = prepare(name, variants)
        rows = point_statistics(d, ms, repeat)
        for r in rows:
            print(f"  {r['statistic']}: MTME {duration(r['mtme'][0])}, harness {duration(r['harness'][0])}",
                  file=sys.stderr)
        sig = significance(d, ms, md, draws, slow, args.seed)
        for r in sig:
            print(f"  {r['statistic']}: MTME {duration(r['mtme'][0])}, harness {duration(r['harness'][0])}",
                  file=sys.stderr)
        load1 = uptime()
        loads.append((name, load0, load1))
        results.append((d, rows + sig))

    def la(text: str) -> str:
        return text.split("load average:")[-1].strip()

    sys.path.insert(0, str(HERE))
    from _results import md_table

    out = ["## WMT meta-evaluation statistics: harness.core.mtme vs mt-metrics-eval (issue 15)", "",
           f"MTME checkout: commit {commit} (the harness transcribes {MTME_COMMIT}); imported by path. Variants "
           f"{', '.join(variants)} against all references; numpy {np.__version__}, scipy {scipy.__version__}, Python "
           f"{sys.version.split()[0]}, {os.cpu_count()} CPUs. In one process, MTME and the harness in turn; point "
           f"statistics: median of {repeat} runs (pairwise accuracy: median per-call time of {repeat * 10} runs of "
           f"{ACC_INNER} calls each; soft pairwise accuracy: of {repeat * 4} runs); tests without early stopping "
           "(block size = draws). Values asserted equal before timing (see the last column).", ""]
    table = []
    for d, rows in results:
        for r in rows:
            (mw, mc), (hw, hc) = r["mtme"], r["harness"]
            table.append([f"{d['name']} ({len(d['systems'])} systems, {d['kind']})", r["statistic"], r["work"],
                          duration(mw), duration(hw), f"**{mw / hw:.0f}x**", f"{mc / hc:.0f}x", r["checked"]])
    out.append(md_table(["dataset", "statistic", "work", "MTME", "harness", "ratio wall", "ratio CPU",
                         "identical"], table))
    out += ["", "Variant ranks (significance clusters, MTME's AssignRanks rule on each side's p-values; MTME | "
                "harness):", ""]
    for d, rows in results:
        for r in rows:
            if "ranks" in r:
                m, h = r["ranks"]
                out.append(f"- {d['name']}, {r['statistic']}: " + ", ".join(f"{v} {m[v]}|{h[v]}" for v in m))
    out += ["", "Load: " + "; ".join(f"{n}: before `{la(a)}`, after `{la(b)}`" for n, a, b in loads)
            + " (1, 5, 15 min)."]
    text = "\n".join(out) + "\n"
    print(text)
    if args.markdown_out:
        args.markdown_out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
