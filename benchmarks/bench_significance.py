"""Benchmark: paired significance tests, harness vs sacrebleu 2.x (issue 5).

Corpus (fixed seed): sentences from a Zipfian vocabulary with some punctuation (13a splits it), one reference
= a noisy copy of each sentence, 20 systems = noisier copies at graded noise rates (so neighbouring systems are
close and p-values are not all at their floor). Measured, side by side in one run:

- sacrebleu CLI in a subprocess (``sacrebleu REF -i H1 .. H20 --paired-bs`` / ``--paired-ar``, wall time, with
  ``-f json`` so every p-value can be compared exactly);
- sacrebleu in-process: ``PairedTest(...)()`` (statistics extraction included, as in the CLI);
- harness in-process: statistics (tokenize + count) + test, and the test alone; all pairs (190) with 1000
  resamples;
- harness as a whole process: ``harness-score REF -i ... --paired-bs`` when the CLI has the flag, else a
  ``python -c`` stand-in that reads the files and calls ``harness.significance`` (the table says which).

p-values are checked to be identical (ours vs sacrebleu in-process and vs the CLI's JSON). Medians over
``--repeat`` runs (sacrebleu's slow runs: ``--sacrebleu-repeat``). ``--quick``: 5 systems x 500 segments.

    python benchmarks/bench_significance.py [--quick] [--repeat 5] [--sacrebleu-repeat 1] [--markdown]
"""

from __future__ import annotations

import argparse
import json
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

import numpy as np

VENV_BIN = Path(sys.executable).parent
SACREBLEU = str(VENV_BIN / "sacrebleu")
HARNESS_SCORE = str(VENV_BIN / "harness-score")
PUNCT = [",", ".", "!", "?", ";", ":", "(", ")", "\"", "-", "'s"]


# ------------------------------------------------------------------------------------------------ corpus


def make_corpus(n_systems: int, n_segments: int, seed: int = 20240505, vocab: int = 8000) -> tuple[list[str],
                                                                                                  list[list[str]]]:
    rng = np.random.default_rng(seed)
    words = np.array([_word(rng, i) for i in range(vocab)], dtype=object)
    ranks = np.arange(1, vocab + 1)
    zipf = 1.0 / ranks ** 1.1
    zipf /= zipf.sum()
    truth = []
    for _ in range(n_segments):
        length = int(rng.integers(8, 45))
        toks = list(words[rng.choice(vocab, length, p=zipf)])
        for _ in range(int(rng.integers(0, 4))):
            toks.insert(int(rng.integers(1, len(toks))), PUNCT[int(rng.integers(len(PUNCT)))])
        toks[0] = toks[0].capitalize()
        truth.append(toks)

    pool = iter(words[rng.choice(vocab, 2_000_000, p=zipf)].tolist())  # Zipfian draws, consumed in order

    def noisy(toks: list[str], rate: float) -> str:
        u, ins = rng.random(len(toks)), rng.random(len(toks))
        out = []
        for t, ui, ii in zip(toks, u.tolist(), ins.tolist()):
            if ui < rate * 0.4:
                continue  # drop
            out.append(str(next(pool)) if ui < rate * 0.8 else t)  # substitute or keep
            if ii < rate * 0.15:
                out.append(str(next(pool)))  # insert
        if len(out) > 3 and rng.random() < rate:
            i = int(rng.integers(0, len(out) - 1))
            out[i], out[i + 1] = out[i + 1], out[i]
        text = " ".join(out)
        for p in (",", ".", "!", "?", ";", ":", ")"):  # detokenize a little: "word ," -> "word,"
            text = text.replace(" " + p, p)
        return text.replace("( ", "(") + "."

    refs = [noisy(t, 0.08) for t in truth]
    rates = np.linspace(0.30, 0.40, n_systems)
    systems = [[noisy(t, float(r)) for t in truth] for r in rates]
    return refs, systems


def _word(rng: np.random.Generator, i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyzäöüß"
    n = 2 + int(rng.integers(0, 8))
    return "".join(letters[int(k)] for k in rng.integers(0, len(letters), n)) + ("" if i % 7 else str(i % 10))


def write_corpus(root: Path, refs: list[str], systems: list[list[str]]) -> tuple[Path, list[Path]]:
    ref = root / "ref.txt"
    ref.write_text("\n".join(refs) + "\n", encoding="utf-8")
    hyps = []
    for k, lines in enumerate(systems, start=1):
        p = root / f"H{k:02d}.txt"
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
        hyps.append(p)
    return ref, hyps


# ------------------------------------------------------------------------------------------------ timing


def _cpu() -> float:
    """CPU seconds of this process (all threads) plus its waited-for children: less sensitive than wall time to
    other jobs on a shared machine."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """(median wall seconds, median CPU seconds, last result) over ``repeat`` runs."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        c, t = _cpu(), time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - t)
        cpus.append(_cpu() - c)
    return statistics.median(walls), statistics.median(cpus), out


def run_process(cmd: list[str], env: dict[str, str] | None = None) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        raise RuntimeError(f"{cmd[:3]}... failed ({res.returncode}): {res.stderr[-2000:]}")
    return res.stdout


def cli_has_paired() -> bool:
    if not Path(HARNESS_SCORE).exists():
        return False
    res = subprocess.run([HARNESS_SCORE, "--help"], capture_output=True, text=True)
    return res.returncode == 0 and "--paired-bs" in res.stdout


STAND_IN = r"""
import sys
from harness.cli import format_paired_text
from harness.core import significance as sig
from harness.core.bleu import score_fn
from harness.core.options import make_options
from harness.text.pipeline import systems_statistics
test, n, ref, *hyps = sys.argv[1:]
read = lambda p: open(p, encoding="utf-8").read().split("\n")[:-1]
opts = make_options()
systems = list(zip(hyps, systems_statistics([read(h) for h in hyps], [read(ref)], opts)))
res = sig.paired_test(systems, score_fn(opts), test, int(n))
sys.stdout.write(format_paired_text(res))
"""


# ------------------------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="5 systems x 500 segments, fewer samples")
    ap.add_argument("--repeat", type=int, default=None, help="runs per harness measurement (median)")
    ap.add_argument("--sacrebleu-repeat", type=int, default=1, help="runs per sacrebleu measurement (median)")
    ap.add_argument("--markdown", action="store_true", help="also print the table as markdown")
    args = ap.parse_args(argv)

    from sacrebleu.metrics.bleu import BLEU
    from sacrebleu.significance import PairedTest

    from harness.core import significance as sig
    from harness.core.bleu import score_fn
    from harness.core.options import make_options
    from harness.text.pipeline import systems_statistics

    n_sys, n_seg = (5, 500) if args.quick else (20, 3000)
    n_bs, n_ar = (1000, 2000) if args.quick else (1000, 10000)
    repeat = args.repeat or 3
    srep = args.sacrebleu_repeat
    env = dict(os.environ, SACREBLEU_SEED="12345")

    refs, systems = make_corpus(n_sys, n_seg)
    tmp = Path(tempfile.mkdtemp(prefix="bench_sig_"))
    results: list[tuple[str, str, float, float, int]] = []  # (what, test, wall s, cpu s, runs)
    try:
        ref_path, hyp_paths = write_corpus(tmp, refs, systems)
        names = [str(p) for p in hyp_paths]
        named = list(zip(names, systems))
        opts = make_options()
        fn = score_fn(opts)

        def our_stats() -> list[tuple[str, Any]]:
            return list(zip(names, systems_statistics(systems, [refs], opts)))

        our_stats()  # warm-up: the kernels, tokenizer imports
        stats = our_stats()
        print(f"corpus: {n_sys} systems x {n_seg} segments, BLEU "
              f"{fn(stats[0][1].matrix().sum(0)):.2f} .. {fn(stats[-1][1].matrix().sum(0)):.2f}", flush=True)

        t_stats, c_stats, _ = timed(our_stats, repeat)
        results.append(("harness statistics only (tokenize + count)", "-", t_stats, c_stats, repeat))

        checks: list[str] = []
        sacre_p: dict[str, list[float]] = {}
        for test, n in (("bs", n_bs), ("ar", n_ar)):
            flag = "--paired-bs" if test == "bs" else "--paired-ar"
            nflag = "--paired-bs-n" if test == "bs" else "--paired-ar-n"
            cmd = [SACREBLEU, str(ref_path), "-i", *names, flag, nflag, str(n), "-f", "json"]
            t_cli, c_cli, out = timed(lambda: run_process(cmd, env), srep)
            cli_p = [row["BLEU"]["p_value"] for row in json.loads(out)]
            results.append((f"sacrebleu CLI {flag} (process)", test, t_cli, c_cli, srep))
            print(f"  sacrebleu CLI {test}: {t_cli:.2f} s", flush=True)

            os.environ["SACREBLEU_SEED"] = "12345"

            def sacre() -> Any:
                return PairedTest(named, {"BLEU": BLEU(references=[refs])}, None, test_type=test, n_samples=n)()

            t_sin, c_sin, (_, sres) = timed(sacre, srep)
            sacre_p[test] = [r.p_value for r in sres["BLEU"]]
            results.append(("sacrebleu PairedTest in-process (stats + test)", test, t_sin, c_sin, srep))
            print(f"  sacrebleu in-process {test}: {t_sin:.2f} s", flush=True)

            t_full, c_full, ours = timed(lambda: sig.paired_test(our_stats(), fn, test, n), repeat)
            t_test, c_test, ours = timed(lambda: sig.paired_test(stats, fn, test, n), repeat)
            results.append(("harness in-process (stats + test)", test, t_full, c_full, repeat))
            results.append(("harness in-process (test only)", test, t_test, c_test, repeat))
            our_p = [r.p_value for r in ours]
            same = our_p == sacre_p[test] == [None, *cli_p[1:]] and cli_p[0] is None
            for o, s in zip(ours, sres["BLEU"]):
                same &= abs(o.score - s.score) <= 1e-9
                if s.mean is not None:
                    same &= abs(o.mean - s.mean) <= 1e-9 and abs(o.ci - s.ci) <= 1e-9
            checks.append(f"{test}: p-values {'IDENTICAL' if same else 'DIFFERENT'} to sacrebleu (in-process and "
                          f"CLI JSON; {sum(p is not None and p > 1 / (n + 1) for p in our_p)} of {n_sys - 1} above "
                          f"the floor 1/(n+1))")

            if cli_has_paired():
                cmd_ours = [HARNESS_SCORE, str(ref_path), "-i", *names, flag, "--n-samples", str(n)]
                label = f"harness-score {flag} (process)"
            else:
                cmd_ours = [sys.executable, "-c", STAND_IN, test, str(n), str(ref_path), *names]
                label = f"python -c stand-in for harness-score {flag} (process)"
            run_process(cmd_ours)  # warm-up (page cache, imports)
            t_proc, c_proc, _ = timed(lambda: run_process(cmd_ours), repeat)
            results.append((label, test, t_proc, c_proc, repeat))

        t_all, c_all, comps = timed(lambda: sig.all_differences(stats, fn, "bs", n_bs), repeat)
        results.append((f"harness all pairs ({len(comps)}) bs x {n_bs}, test only", "bs", t_all, c_all, repeat))
        t_all_s, c_all_s, _ = timed(lambda: sig.all_differences(our_stats(), fn, "bs", n_bs), repeat)
        results.append((f"harness all pairs ({len(comps)}) bs x {n_bs}, stats + test", "bs", t_all_s, c_all_s, repeat))
        t_all_ar, c_all_ar, _ = timed(lambda: sig.all_differences(stats, fn, "ar", n_ar), max(1, repeat // 2))
        results.append((f"harness all pairs ({len(comps)}) ar x {n_ar}, test only", "ar", t_all_ar, c_all_ar,
                        max(1, repeat // 2)))
        clusters = sig.significance_clusters(comps)
        checks.append(f"all pairs (bs): {sum(c.p_value < 0.05 for c in comps)} of {len(comps)} pairs with p < 0.05, "
                      f"{sum(c.p_holm < 0.05 for c in comps)} after Holm (floor {len(comps)}/{n_bs + 1}); "
                      f"{clusters[-1].cluster} clusters on raw p")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def med(what: str, test: str, col: int = 2) -> float:
        return next(row[col] for row in results if what in row[0] and row[1] == test)

    ratios = []
    for test in ("bs", "ar"):
        for col, kind in ((2, "wall"), (3, "cpu")):
            sin, ours_in = med("sacrebleu PairedTest", test, col), med("harness in-process (stats", test, col)
            cli = med("sacrebleu CLI", test, col)
            ours_proc = med("harness-score", test, col)
            ratios.append(f"{test} ({kind}): in-process {sin / ours_in:.1f}x (sacrebleu PairedTest / harness stats + "
                          f"test), whole process {cli / ours_proc:.1f}x (sacrebleu CLI / harness process)")

    width = max(len(row[0]) for row in results)
    print()
    print(f"{'measurement':<{width}}  test  wall s (median)  cpu s (median)  runs")
    for w, te, t, c, r in results:
        print(f"{w:<{width}}  {te:<4}  {t:15.3f}  {c:14.3f}  {r:4d}")
    print()
    for line in ratios + checks:
        print(line)
    if args.markdown:
        print()
        print("| measurement | test | wall s (median) | CPU s (median) | runs |")
        print("|---|---|---:|---:|---:|")
        for w, te, t, c, r in results:
            print(f"| {w} | {te} | {t:.3f} | {c:.3f} | {r} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
