"""Benchmark: how the cost of scoring grows on this machine (issue 7), with fitted scaling exponents.

Axes (13a, sacrebleu profile, 2 references, everything from the files on disk: reading and checking included):

(a) segments: 10k, 100k, 1M segments, one system: ``read_text`` of the 3 files + ``harness.corpus_bleu``;
(b) systems: 1, 10, 100 systems of 10k segments against the *same prepared references* (read and
    ``PreparedReferences.build`` once, then per system ``read_text`` + ``statistics`` + ``corpus_score``);
(c) variants sharing a tokenizer: 1, 5 BLEU variants (sacrebleu, floor, add-k, none, shortest reference) on 100k
    segments, statistics once and every variant from them, next to the naive way (one ``corpus_bleu`` per
    variant);
(d) scale-out: the 100k and 1M corpora with ``harness.shards.sharded_corpus_bleu`` on a local Dask cluster (2
    worker processes, 1 thread each; 10 shards), alternating with the single-process run of (a) in the same
    process (same load for both), checked equal (exactly) to it.

For each axis the scaling exponent is the least-squares slope of log(time) against log(size): 1 = linear,
0 = free. Corpora: benchmarks/bench_bleu.py's generated ones (reused through its ``ensure_corpus``: Zipfian
50k-word vocabulary, fixed seed, ``benchmarks/_data/``, gitignored), refs 1 and 2; the 100 systems of (b) are
noisy copies of its 10k hypothesis (substitutions and deletions at graded rates, seed 20240507), written once to
``benchmarks/_data/scaling-systems-*``. Every measurement runs in a fresh subprocess that first loads the compiled
counting kernel (used from 400k tokens on; an extension module built at install), so that times are steady-state and
peak RSS (``VmHWM``) is that measurement's alone. Medians of ``--repeats`` runs (3; the 1M runs once).

    python benchmarks/bench_scaling.py [--quick] [--repeats 3] [--write | --no-write]

``--quick``: a smoke run (about a minute: 3k/10k segments, 1/5 systems, 1/5 variants on 10k, sharded 10k),
printed but not written to RESULTS.md unless ``--write``. The full run writes ``## Scaling (issue 7)``.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _results import RESULTS, md_table, write_section  # benchmarks/ is the script directory

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "_data"
SECTION = "## Scaling (issue 7)"
SYSTEMS_SEED = 20240507
SYSTEMS_VERSION = 1
N_REFS = 2
VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("sacrebleu", {}),
    ("floor", {"smooth_method": "floor"}),
    ("add-k", {"smooth_method": "add-k"}),
    ("none", {"smooth_method": "none"}),
    ("shortest", {"ref_length": "shortest"}),
]


def _bench_bleu() -> Any:
    """benchmarks/bench_bleu.py as a module (its corpus generator and cache of generated corpora)."""
    spec = importlib.util.spec_from_file_location("bench_bleu", HERE / "bench_bleu.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------------------------------------------ data


def corpus(n: int) -> Path:
    """The n-segment corpus of bench_bleu.py (generated there once if missing)."""
    return _bench_bleu().ensure_corpus(n)


def systems_dir(n: int, m: int) -> Path:
    return DATA / f"scaling-systems-{n}x{m}-s{SYSTEMS_SEED}-v{SYSTEMS_VERSION}"


def ensure_systems(n: int, m: int) -> Path:
    """``m`` systems of ``n`` segments: noisy copies of the corpus hypothesis, written once."""
    d = systems_dir(n, m)
    meta = d / "meta.json"
    if meta.exists() and json.loads(meta.read_text()).get("systems") == m:
        return d
    import numpy as np

    src = corpus(n) / "hyp.txt"
    lines = src.read_text(encoding="utf-8").split("\n")[:-1]
    words = np.array(" ".join(lines).split(" "), dtype=object)
    lengths = np.array([line.count(" ") + 1 for line in lines])
    owner = np.repeat(np.arange(len(lines)), lengths)
    d.mkdir(parents=True, exist_ok=True)
    for k in range(m):
        rng = np.random.default_rng(SYSTEMS_SEED + k)
        rate = 0.02 + 0.3 * k / max(m - 1, 1)
        tok = words.copy()
        sub = rng.random(tok.size) < rate
        tok[sub] = words[rng.integers(0, words.size, int(sub.sum()))]
        keep = rng.random(tok.size) >= rate / 4
        keep[np.r_[0, np.cumsum(lengths)[:-1]]] = True  # every line keeps its first word
        counts = np.bincount(owner[keep], minlength=len(lines))
        out = [" ".join(part) for part in np.split(tok[keep], np.cumsum(counts)[:-1])]
        (d / f"sys{k:03d}.txt").write_text("\n".join(out) + "\n", encoding="utf-8", newline="\n")
    meta.write_text(json.dumps({"segments": n, "systems": m, "seed": SYSTEMS_SEED, "source": str(src.name)}))
    return d


# ------------------------------------------------------------------------------------------------------ timing


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def _maxrss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def timed(fn: Callable[[], Any], repeats: int) -> dict[str, Any]:
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        gc.collect()
        c, t = _cpu(), time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - t)
        cpus.append(_cpu() - c)
    return {"wall": statistics.median(walls), "cpu": statistics.median(cpus), "walls": walls, "runs": repeats,
            "result": out}


def _warm() -> None:
    """Import everything and load the compiled kernels (a large input takes the compiled path)."""
    import harness
    from harness.text import kernels

    kernels.loaded()
    harness.corpus_bleu(["a b c d e"] * 50_000, [["a b c d f"] * 50_000, ["a b x d e"] * 50_000])


# ------------------------------------------------------------------------------------------------------ tasks


def _task_segments(spec: dict[str, Any]) -> dict[str, Any]:
    import harness
    from harness.text.reading import read_text

    d = Path(spec["dir"])
    _warm()

    def run() -> float:
        hyp = read_text(d / "hyp.txt").lines
        refs = [read_text(d / f"ref{k + 1}.txt").lines for k in range(N_REFS)]
        return harness.corpus_bleu(hyp, refs).score

    r = timed(run, spec["repeats"])
    return {"wall": r["wall"], "cpu": r["cpu"], "runs": r["runs"], "score": r["result"], "rss": _maxrss_mb()}


def _task_systems(spec: dict[str, Any]) -> dict[str, Any]:
    from harness.core.bleu import corpus_score
    from harness.core.options import make_options
    from harness.text.pipeline import PreparedReferences
    from harness.text.reading import read_text

    d, sys_dir, m = Path(spec["dir"]), Path(spec["systems_dir"]), spec["m"]
    opts = make_options()
    _warm()

    def run() -> list[float]:
        refs = [read_text(d / f"ref{k + 1}.txt").lines for k in range(N_REFS)]
        prepared = PreparedReferences.build(refs, opts)
        return [corpus_score(prepared.statistics(read_text(sys_dir / f"sys{k:03d}.txt").lines), opts).score
                for k in range(m)]

    r = timed(run, spec["repeats"])
    scores = r["result"]
    return {"wall": r["wall"], "cpu": r["cpu"], "runs": r["runs"], "score": scores[0],
            "range": [min(scores), max(scores)], "rss": _maxrss_mb()}


def _task_variants(spec: dict[str, Any]) -> dict[str, Any]:
    import harness
    from harness.core.bleu import corpus_score
    from harness.core.options import make_options
    from harness.text.pipeline import lines_statistics
    from harness.text.reading import read_text

    d, v = Path(spec["dir"]), spec["v"]
    variants = [make_options(**o) for _, o in VARIANTS[:v]]
    _warm()
    hyp = read_text(d / "hyp.txt").lines
    refs = [read_text(d / f"ref{k + 1}.txt").lines for k in range(N_REFS)]

    def shared() -> list[float]:
        stats = lines_statistics(hyp, refs, variants[0])  # 13a for all of them: one tokenization, one count
        return [corpus_score(stats, o).score for o in variants]

    def naive() -> list[float]:
        return [harness.corpus_bleu(hyp, refs, **o).score for _, o in VARIANTS[:v]]

    a = timed(shared, spec["repeats"])
    b = timed(naive, spec["repeats"]) if spec.get("naive", True) else None
    if b is not None and a["result"] != b["result"]:
        raise AssertionError(f"shared statistics give {a['result']} but per-variant runs {b['result']}")
    return {"wall": a["wall"], "cpu": a["cpu"], "runs": a["runs"], "scores": a["result"], "rss": _maxrss_mb(),
            "naive_wall": b["wall"] if b else float("nan"), "naive_cpu": b["cpu"] if b else float("nan")}


def _task_sharded(spec: dict[str, Any]) -> dict[str, Any]:
    """Sharded on a local cluster, and single-process in this (client) process while the cluster idles, run
    alternately so that both see the same load."""
    import distributed

    import harness
    from harness.shards import sharded_corpus_bleu
    from harness.text.reading import read_text

    d = Path(spec["dir"])
    hyp, refs = d / "hyp.txt", [d / f"ref{k + 1}.txt" for k in range(N_REFS)]
    _warm()
    t = time.perf_counter()
    with distributed.LocalCluster(n_workers=spec["workers"], threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        startup = time.perf_counter() - t
        client.run(_warm)  # every worker imports the compiled kernels once, as a long-lived cluster would have

        def sharded() -> float:
            return sharded_corpus_bleu(hyp, refs, shard_segments=spec["shard"], client=client).score

        def single() -> float:
            return harness.corpus_bleu(read_text(hyp).lines, [read_text(r).lines for r in refs]).score

        runs: dict[str, list[dict[str, Any]]] = {"sharded": [], "single": []}
        worker_cpu = 0.0
        for _ in range(spec["repeats"]):
            runs["single"].append(timed(single, 1))
            before = sum(client.run(_cpu).values())
            runs["sharded"].append(timed(sharded, 1))
            worker_cpu += sum(client.run(_cpu).values()) - before
    out: dict[str, Any] = {"runs": spec["repeats"], "startup": startup,
                           "worker_cpu_total": worker_cpu / spec["repeats"]}
    for name, rs in runs.items():
        out[f"{name}_wall"] = statistics.median(r["wall"] for r in rs)
        out[f"{name}_cpu"] = statistics.median(r["cpu"] for r in rs)
        out[f"{name}_score"] = rs[-1]["result"]
    if out["sharded_score"] != out["single_score"]:
        raise AssertionError(f"sharded BLEU {out['sharded_score']!r} != single-process {out['single_score']!r}")
    return out


TASKS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "segments": _task_segments, "systems": _task_systems, "variants": _task_variants, "sharded": _task_sharded}


def worker(spec: dict[str, Any], timeout: float = 3600) -> dict[str, Any]:
    res = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)],
                         capture_output=True, text=True, timeout=timeout, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"worker {spec} failed ({res.returncode}):\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------------------ report


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(y) on log(x)."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def fmt_s(x: float) -> str:
    if math.isnan(x):
        return "-"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run (about a minute), not written unless --write")
    ap.add_argument("--repeats", type=int, default=None, help="runs per measurement, median (default 3; 1M: 1)")
    ap.add_argument("--write", action="store_true", help="update RESULTS.md even with --quick")
    ap.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        spec = json.loads(args.worker)
        sys.stdout.write(json.dumps(TASKS[spec["task"]](spec)) + "\n")
        return 0
    from harness.text.pipeline import CHUNK_SEGMENTS

    quick = args.quick
    reps = args.repeats or (1 if quick else 3)
    seg_sizes = [3_000, 10_000] if quick else [10_000, 100_000, 1_000_000]
    sys_n, sys_counts = (3_000, [1, 5]) if quick else (10_000, [1, 10, 100])
    var_n, var_counts = (10_000, [1, 5]) if quick else (100_000, [1, 5])
    shard_sizes = [10_000] if quick else [100_000, 1_000_000]
    t0 = time.perf_counter()
    load0 = os.getloadavg()

    def say(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:6.0f} s] {msg}", flush=True)

    def reps_for(n: int) -> int:
        return 1 if n >= 1_000_000 else reps

    say(f"bench_scaling: {os.cpu_count()} CPUs, load {load0[0]:.1f}, repeats {reps}")
    dirs = {n: corpus(n) for n in sorted(set(seg_sizes + [sys_n, var_n] + shard_sizes))}
    sys_dir = ensure_systems(sys_n, max(sys_counts))

    seg = {}
    for n in seg_sizes:
        seg[n] = worker({"task": "segments", "dir": str(dirs[n]), "repeats": reps_for(n)})
        say(f"segments {n:>9,}: {seg[n]['wall']:.2f} s wall, {seg[n]['cpu']:.2f} s CPU, BLEU {seg[n]['score']:.4f}")
    syst = {}
    for m in sys_counts:
        syst[m] = worker({"task": "systems", "dir": str(dirs[sys_n]), "systems_dir": str(sys_dir), "m": m,
                          "repeats": 1 if m >= 100 else reps})
        say(f"systems {m:>4} x {sys_n:,}: {syst[m]['wall']:.2f} s wall, {syst[m]['cpu']:.2f} s CPU")
    var = {}
    for v in var_counts:
        var[v] = worker({"task": "variants", "dir": str(dirs[var_n]), "v": v, "repeats": reps})
        say(f"variants {v} x {var_n:,}: shared {var[v]['wall']:.2f} s, naive {var[v]['naive_wall']:.2f} s")
    shd = {}
    for n in shard_sizes:
        shd[n] = worker({"task": "sharded", "dir": str(dirs[n]), "workers": 2, "shard": max(n // 10, 1),
                         "repeats": reps_for(n)})
        if n in seg and shd[n]["sharded_score"] != seg[n]["score"]:
            raise AssertionError(f"sharded BLEU {shd[n]['sharded_score']!r} != {seg[n]['score']!r} at {n}")
        say(f"sharded {n:>9,}: {shd[n]['sharded_wall']:.2f} s wall vs single process {shd[n]['single_wall']:.2f} s "
            "(same load), score equal")
    load1 = os.getloadavg()
    elapsed = time.perf_counter() - t0

    seg_x = [n for n in seg_sizes]
    exps = {
        "segments": (slope(seg_x, [seg[n]["wall"] for n in seg_x]), slope(seg_x, [seg[n]["cpu"] for n in seg_x])),
        "systems": (slope(sys_counts, [syst[m]["wall"] for m in sys_counts]),
                    slope(sys_counts, [syst[m]["cpu"] for m in sys_counts])),
        "variants (shared statistics)": (slope(var_counts, [var[v]["wall"] for v in var_counts]),
                                         slope(var_counts, [var[v]["cpu"] for v in var_counts])),
        "variants (naive, one corpus_bleu each)": (slope(var_counts, [var[v]["naive_wall"] for v in var_counts]),
                                                   slope(var_counts, [var[v]["naive_cpu"] for v in var_counts])),
    }
    if len(sys_counts) > 1:
        m0, m1 = sys_counts[0], sys_counts[-1]
        per_system = (syst[m1]["wall"] - syst[m0]["wall"]) / (m1 - m0)
    rows = []
    for n in seg_x:
        r = seg[n]
        rows.append(["segments", f"{n:,} x 1 system x 1 variant", fmt_s(r["wall"]), fmt_s(r["cpu"]),
                     f"{r['wall'] / n * 1e6:.1f} us/segment", f"{r['rss']:,.0f}", str(r["runs"])])
    for m in sys_counts:
        r = syst[m]
        rows.append(["systems", f"{sys_n:,} x {m} system(s) x 1 variant", fmt_s(r["wall"]), fmt_s(r["cpu"]),
                     f"{r['wall'] / m:.3f} s/system", f"{r['rss']:,.0f}", str(r["runs"])])
    for v in var_counts:
        r = var[v]
        rows.append(["variants", f"{var_n:,} x 1 system x {v} variant(s), shared statistics", fmt_s(r["wall"]),
                     fmt_s(r["cpu"]), f"{r['wall'] / v:.3f} s/variant", f"{r['rss']:,.0f}", str(r["runs"])])
        rows.append(["variants", f"{var_n:,} x 1 system x {v} variant(s), naive", fmt_s(r["naive_wall"]),
                     fmt_s(r["naive_cpu"]), f"{r['naive_wall'] / v:.3f} s/variant", "-", str(r["runs"])])
    for n in shard_sizes:
        r = shd[n]
        rows.append(["scale-out", f"{n:,} x 1 system, single process (alternating with the next row)",
                     fmt_s(r["single_wall"]), fmt_s(r["single_cpu"]), f"{r['single_wall'] / n * 1e6:.1f} us/segment",
                     "-", str(r["runs"])])
        rows.append(["scale-out", f"{n:,} x 1 system, Dask 2 workers, 10 shards of {max(n // 10, 1):,}",
                     fmt_s(r["sharded_wall"]), f"{fmt_s(r['sharded_cpu'])} + {fmt_s(r['worker_cpu_total'])} workers",
                     f"{r['single_wall'] / r['sharded_wall']:.2f}x vs single process", "-", str(r["runs"])])
    table = md_table(["axis", "workload", "wall s", "CPU s", "per unit", "peak RSS MB", "runs"], rows, right_align=True)
    etable = md_table(["axis", "points", "exponent (wall)", "exponent (CPU)"], right_align=True, rows=[
        ["segments", ", ".join(f"{n:,}" for n in seg_x), f"{exps['segments'][0]:.2f}", f"{exps['segments'][1]:.2f}"],
        ["systems (same prepared references)", ", ".join(map(str, sys_counts)), f"{exps['systems'][0]:.2f}",
         f"{exps['systems'][1]:.2f}"],
        *[[k, ", ".join(map(str, var_counts)), f"{a:.2f}", f"{b:.2f}"] for k, (a, b) in exps.items()
          if k.startswith("variants")],
    ])
    import numpy

    from harness import __version__

    with open("/proc/cpuinfo") as f:
        cpu_model = next((line.split(":", 1)[1].strip() for line in f if "model name" in line), "?")
    notes = [
        (f"- Segments: exponent {exps['segments'][0]:.2f} (wall) / {exps['segments'][1]:.2f} (CPU) over "
        f"{seg_x[0]:,}..{seg_x[-1]:,} segments; {seg[seg_x[-1]]['wall'] / seg_x[-1] * 1e6:.0f} us per segment at "
        f"{seg_x[-1]:,} (vs {seg[seg_x[0]]['wall'] / seg_x[0] * 1e6:.0f} at {seg_x[0]:,}), peak RSS "
        f"{seg[seg_x[-1]]['rss']:,.0f} MB there (the lines of the 3 files, plus the work of one "
        f"{CHUNK_SEGMENTS:,}-segment chunk at a time)."),
    ]
    if len(sys_counts) > 1:
        notes.append(
            f"- Systems: exponent {exps['systems'][0]:.2f}: the references are read, tokenized and encoded once, then "
            f"each further system costs {per_system:.3f} s (its own reading, tokenizing and counting); {m1} systems x {sys_n:,} segments ({m1 * sys_n:,} scored segments) "
            f"take {syst[m1]['wall']:.1f} s vs {seg.get(seg_x[-1], {}).get('wall', float('nan')):.1f} s for one "
            f"system of {seg_x[-1]:,} segments (whose references are {seg_x[-1] // sys_n}x larger).")
    notes.append(
        f"- Variants sharing a tokenizer: exponent {exps['variants (shared statistics)'][0]:.2f}: 5 variants cost "
        f"{var[var_counts[-1]]['wall'] / var[var_counts[0]]['wall']:.2f}x one"
        f"{' (below 1: run-to-run noise of this shared machine)' if var[var_counts[-1]]['wall'] < var[var_counts[0]]['wall'] else ''}"
        f" (each extra variant is array arithmetic on the same statistics), against "
        f"{var[var_counts[-1]]['naive_wall'] / var[var_counts[0]]['naive_wall']:.2f}x when every variant "
        f"re-tokenizes and re-counts (naive exponent "
        f"{exps['variants (naive, one corpus_bleu each)'][0]:.2f}). Scores identical both ways (asserted).")
    big = shard_sizes[-1]
    notes.append(
        f"- Scale-out: the sharded Dask run gives exactly the single-process score (asserted, == on the float) and "
        f"takes {shd[big]['sharded_wall']:.1f} s at {big:,} segments on 2 local worker processes vs "
        f"{shd[big]['single_wall']:.1f} s in one process, run alternately "
        f"({shd[big]['single_wall'] / shd[big]['sharded_wall']:.2f}x; {shd[shard_sizes[0]]['single_wall'] / shd[shard_sizes[0]]['sharded_wall']:.2f}x at {shard_sizes[0]:,}). "
        f"The {os.cpu_count()} cores are shared with other jobs, so this shows the overhead of sharding more than "
        f"a cluster's speed-up. The shards exchange nothing but their statistics ({8 * (1 + N_REFS + 8)} bytes "
        f"per segment back to the client). Cluster start-up ({shd[big]['startup']:.1f} s) and importing the compiled "
        f"kernel in each worker are not included.")
    report = "\n".join([
        SECTION, "",
        (f"`benchmarks/bench_scaling.py`{' --quick' if quick else ''}, measured {time.strftime('%Y-%m-%d')} on "
        f"{os.cpu_count()} CPUs ({cpu_model}), load average {load0[0]:.1f} at the start and {load1[0]:.1f} at the "
        f"end (a shared machine: CPU seconds next to wall seconds); harness {__version__}, numpy {numpy.__version__}, "
        f"Python {platform.python_version()}; total {elapsed / 60:.1f} min. 13a, sacrebleu profile, 2 references, "
        f"from the files (reading and checking included), compiled kernels imported before timing; medians of {reps} runs "
        f"(1M segments and 100 systems: 1 run)."),
        "", table, "", "Scaling exponents (least-squares slope of log time on log size; 1 = linear, 0 = free):",
        "", etable, "", *notes, ""])
    print()
    print(report)
    if (not quick or args.write) and not args.no_write:
        write_section(SECTION, report)
        say(f"updated {RESULTS.relative_to(ROOT)} ({SECTION})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
