"""Oracle values from Google's mt-metrics-eval (MTME) for segment-level statistics of WMT's "sentBLEU".

sentBLEU is sacrebleu's sentence BLEU with effective order ON, computed here with sacrebleu itself
(``BLEU(tokenize, lowercase, smooth_method, smooth_value, effective_order=True).sentence_score(hyp, refs)``)
against ALL references of the dataset; for the ``sacrebleu`` variant it is asserted equal (``==``) to
``sacrebleu.sentence_bleu(hyp, refs)``. Nothing of the harness is imported: this is an independent oracle.

For every dataset, human-score kind and variant it records (systems in SORTED name order, ``sorted()``, code
points: the convention the values depend on):

- ``soft_pairwise_accuracy``: 1 - PCE, MTME ``Correlation(...).PairwiseConfidenceError()`` (1000 permutations,
  MTME's seed 4), on the block of segments that every system with any segment score has a score for (systems
  without any segment score dropped first);
- ``acc_eq``, ``acc_eq_epsilon``: MTME ``KendallWithTiesOpt(gold, metric, 'acc23', n_systems, 'item', 1.0)``
  over all judged entries (system-major packed lists, ``None`` where the human score is missing);
- ``pairwise_accuracy``: MTME ``Agreement`` (agree / pairs) of corpus BLEU (``sacrebleu.corpus_bleu`` with the
  variant's options, effective order off, all references) against the system scores of ``file_sys``
  (``None`` for a system without one).

Human scores are oriented higher-is-better (negated when the kind's ``higher_is_better`` is false). Also recorded,
for checks without MTME: the systems, the block's systems and segment ids, corpus BLEU, and the ``sacrebleu``
variant's sentence-BLEU matrix ``[systems, segments]`` (in full for small datasets, else its SHA-256 as
little-endian float64 in C order, and its ``math.fsum``). For ``sacrebleu`` on ``wmt21_news_ruen_da`` / ``da_z``
and ``short_segments`` / ``mqm``, SPA is also computed with the systems in meta.json order, in reversed sorted
order and (up to 6 systems) in every order: MTME's PCE tests "row i > row j" only for i < j, so where the
permutation test has ties (discrete scores: null delta == observed delta) the value depends on the order.

MTME is imported by path from a checkout (``--mtme``; never pip-installed: the PyPI name is not Google's package);
``apache_beam`` and ``dacite`` (imported by ``data.py`` / ``ratings.py`` only for features not used here) get
empty stand-ins when missing.

    .venv/bin/python tools/mtme_sentbleu_oracle.py --mtme /path/to/mt-metrics-eval [--out tests/data/mtme_sentbleu.json]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import importlib
import itertools
import json
import math
import platform
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "mtme_sentbleu.json"
DATASETS = [ROOT / "harness" / "data" / "wmt21_news_ruen_da", ROOT / "tests" / "data" / "short_segments"]
#: Variants: sacrebleu options (the same as conf/bleu/<name>.yaml; checked when that file exists).
VARIANTS: dict[str, dict[str, Any]] = {
    "sacrebleu": {"tokenize": "13a", "lowercase": False, "smooth_method": "exp", "smooth_value": None},
    "intl": {"tokenize": "intl", "lowercase": False, "smooth_method": "exp", "smooth_value": None},
    "char": {"tokenize": "char", "lowercase": False, "smooth_method": "exp", "smooth_value": None},
    "paper": {"tokenize": "13a", "lowercase": False, "smooth_method": "none", "smooth_value": None},
    "floor": {"tokenize": "13a", "lowercase": False, "smooth_method": "floor", "smooth_value": 0.1},
    "add-k": {"tokenize": "13a", "lowercase": False, "smooth_method": "add-k", "smooth_value": 1},
    "lowercase": {"tokenize": "13a", "lowercase": True, "smooth_method": "exp", "smooth_value": None},
}
#: Sentence matrices at most this large are written in full; larger ones as SHA-256 and sum.
FULL_MATRIX_MAX = 2000
#: (dataset, kind, variant) whose SPA is also computed with the systems in other orders.
ORDER_DEMOS = {("wmt21_news_ruen_da", "da_z", "sacrebleu"), ("short_segments", "mqm", "sacrebleu")}
#: With at most this many block systems, the order demo also tries every order (min, max, distinct values).
ALL_ORDERS_MAX = 6


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------ MTME


def load_mtme(path: Path, commit_override: str | None) -> tuple[Any, str]:
    """MTME's ``stats`` module from a checkout (imported as benchmarks/bench_meta_eval.py does), and its commit."""
    if not (path / "mt_metrics_eval" / "stats.py").is_file():
        raise SystemExit(f"--mtme {path}: no mt_metrics_eval/stats.py there (give the checkout's top folder)")
    stubbed = []
    for name in ("apache_beam", "dacite"):
        try:
            importlib.import_module(name)
        except ImportError:
            sys.modules[name] = types.ModuleType(name)
            stubbed.append(name)
    sys.path.insert(0, str(path))
    stats = importlib.import_module("mt_metrics_eval.stats")
    importlib.import_module("mt_metrics_eval.data")  # as the benchmark does: the package imports whole
    if not Path(stats.__file__).resolve().is_relative_to(path.resolve()):
        raise SystemExit(f"mt_metrics_eval was imported from {stats.__file__}, not from {path}")
    if stubbed:
        log(f"MTME: empty stand-ins for {', '.join(stubbed)} (not installed; not used)")
    if commit_override:
        return stats, commit_override
    try:
        commit = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        raise SystemExit(f"--mtme {path} is not a git work tree: give its commit with --mtme-commit") from None
    dirty = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        raise SystemExit(f"--mtme {path}: the checkout has local changes:\n{dirty}")
    return stats, commit


# ------------------------------------------------------------------------------------------------ inputs


def read_lines(path: Path) -> list[str]:
    text = path.read_bytes().decode("utf-8")
    if "\r" in text:
        raise SystemExit(f"{path}: CR characters (expected '\\n' line ends)")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def read_tsv(path: Path, header: tuple[str, ...]) -> list[list[str]]:
    rows = [r for r in csv.reader(read_lines(path), delimiter="\t", quoting=csv.QUOTE_NONE)]
    if tuple(rows[0]) != header:
        raise SystemExit(f"{path}: header {rows[0]}, expected {list(header)}")
    return rows[1:]


def read_human(root: Path, spec: dict[str, Any], systems: list[str], n: int) -> tuple[np.ndarray, list[Any]]:
    """Segment scores ``[S, n]`` (NaN = missing) and system scores (None = missing) of one kind, oriented
    higher-is-better, systems in the given order."""
    sign = 1.0 if spec.get("higher_is_better", True) else -1.0
    seg = np.full((len(systems), n), np.nan)
    index = {s: i for i, s in enumerate(systems)}
    for system, seg_id, score in read_tsv(root / spec["file_seg"], ("system", "seg_id", "score")):
        i, j = index[system], int(seg_id)
        if not math.isnan(seg[i, j]):
            raise SystemExit(f"{root / spec['file_seg']}: duplicate {system} {seg_id}")
        seg[i, j] = sign * float(score)
    sys_scores: list[Any] = [None] * len(systems)
    for row in read_tsv(root / spec["file_sys"], ("system", "score", "n_segments")):
        sys_scores[index[row[0]]] = sign * float(row[1])
    return seg, sys_scores


def check_variants_against_conf() -> None:
    try:
        import yaml
    except ImportError:
        return
    for name, opts in VARIANTS.items():
        path = ROOT / "conf" / "bleu" / f"{name}.yaml"
        if not path.is_file():
            continue
        conf = yaml.safe_load(path.read_text(encoding="utf-8"))
        diff = {k: (v, conf.get(k)) for k, v in opts.items() if conf.get(k) != v}
        if diff:
            log(f"note: variant {name}: options differ from {path.relative_to(ROOT)}: {diff} (this script's used)")


def sentence_matrix(hyps: list[list[str]], refs: list[list[str]], opts: dict[str, Any], check_compat: bool
                    ) -> np.ndarray:
    import sacrebleu
    from sacrebleu.metrics import BLEU

    metric = BLEU(effective_order=True, **opts)
    out = np.empty((len(hyps), len(refs[0])))
    for s, lines in enumerate(hyps):
        for i, hyp in enumerate(lines):
            line_refs = [r[i] for r in refs]  # every reference file has the line (possibly empty: still a ref)
            out[s, i] = metric.sentence_score(hyp, line_refs).score
            if check_compat:
                compat = sacrebleu.sentence_bleu(hyp, line_refs).score
                if compat != out[s, i]:
                    raise SystemExit(f"sentence_bleu {compat!r} != sentence_score {out[s, i]!r} (system {s}, "
                                     f"line {i})")
    return out


def corpus_scores(hyps: list[list[str]], refs: list[list[str]], opts: dict[str, Any]) -> list[float]:
    import sacrebleu

    return [sacrebleu.corpus_bleu(h, refs, smooth_method=opts["smooth_method"], smooth_value=opts["smooth_value"],
                                  lowercase=opts["lowercase"], tokenize=opts["tokenize"],
                                  use_effective_order=False).score for h in hyps]


def as_gold(x: np.ndarray) -> list[Any]:
    return [None if math.isnan(v) else float(v) for v in x.ravel()]


def matrix_digest(m: np.ndarray) -> dict[str, Any]:
    data = np.ascontiguousarray(m, dtype="<f8")
    return {"sha256": hashlib.sha256(data.tobytes()).hexdigest(), "sum": math.fsum(data.ravel().tolist()),
            "shape": list(data.shape),
            "how": "sha256 of the little-endian float64 bytes in C order ([systems sorted, segments]); "
                   "sum = math.fsum"}


# ------------------------------------------------------------------------------------------------ statistics


def spa(ms: Any, hseg: np.ndarray, sent: np.ndarray, order: list[int] | None = None) -> float:
    """1 - PCE on the complete block; ``order``: row indices (into the systems with any segment score)."""
    rows = np.flatnonzero(~np.isnan(hseg).all(axis=1))
    cols = np.flatnonzero(~np.isnan(hseg[rows]).any(axis=0))
    if order is not None:
        rows = rows[order]
    gold = [float(v) for v in hseg[np.ix_(rows, cols)].ravel()]
    metric = [float(v) for v in sent[np.ix_(rows, cols)].ravel()]
    return float(ms.Correlation(rows.size, gold, metric).PairwiseConfidenceError()[0])


def dataset_values(root: Path, ms: Any) -> tuple[str, dict[str, Any]]:
    t0 = time.perf_counter()
    meta = json.loads((root / "meta.json").read_text(encoding="utf-8"))
    name = meta["name"]
    meta_systems = list(meta["systems"])
    systems = sorted(meta_systems)
    refs = [read_lines(root / "refs" / f"{r}.txt") for r in meta["refs"]]
    hyps = [read_lines(root / "systems" / f"{s}.txt") for s in systems]
    n = len(refs[0])
    if any(len(x) != n for x in refs + hyps):
        raise SystemExit(f"{root}: files of different line counts")
    log(f"## {name}: {len(systems)} systems, {n} segments, {len(refs)} references")

    sent: dict[str, np.ndarray] = {}
    corpus: dict[str, list[float]] = {}
    for v, opts in VARIANTS.items():
        t = time.perf_counter()
        sent[v] = sentence_matrix(hyps, refs, opts, check_compat=(v == "sacrebleu"))
        corpus[v] = corpus_scores(hyps, refs, opts)
        log(f"  sacrebleu {v}: {time.perf_counter() - t:.1f} s")

    out: dict[str, Any] = {
        "path": str(root.relative_to(ROOT)) if root.is_relative_to(ROOT) else str(root),
        "n_segments": n,
        "refs": list(meta["refs"]),
        "systems": systems,
        "meta_systems": meta_systems,
        "corpus_bleu": {v: corpus[v] for v in VARIANTS},
        "kinds": {},
    }
    for kind, spec in meta["human_scores"].items():
        t = time.perf_counter()
        hseg, hsys = read_human(root, spec, systems, n)
        seg_rows = np.flatnonzero(~np.isnan(hseg).all(axis=1))
        block = np.flatnonzero(~np.isnan(hseg[seg_rows]).any(axis=0))
        gold_all = as_gold(hseg)
        kd: dict[str, Any] = {
            "higher_is_better": spec.get("higher_is_better", True),
            "n_judged": int(np.count_nonzero(~np.isnan(hseg))),
            "systems_without_segment_scores": [systems[i] for i in range(len(systems)) if i not in set(seg_rows)],
            "systems_without_system_score": [s for s, x in zip(systems, hsys) if x is None],
            "block_systems": [systems[i] for i in seg_rows],
            "n_block_segments": int(block.size),
            "block_segments": block.tolist(),
            "variants": {},
        }
        for v in VARIANTS:
            metric_all = [float(x) for x in sent[v].ravel()]
            value, eps, _ = ms.KendallWithTiesOpt(gold_all, metric_all, "acc23", len(systems), "item", 1.0)
            agree, pairs = ms.Agreement(hsys, corpus[v])
            kd["variants"][v] = {
                "soft_pairwise_accuracy": spa(ms, hseg, sent[v]),
                "acc_eq": float(value),
                "acc_eq_epsilon": float(eps),
                "pairwise_accuracy": float(agree / pairs),
            }
        for v in [v for d, k, v in sorted(ORDER_DEMOS) if (d, k) == (name, kind)]:
            kept = [systems[i] for i in seg_rows]
            meta_order = [kept.index(s) for s in meta_systems if s in kept]
            reversed_order = list(range(len(kept)))[::-1]
            kd["variants"][v]["spa_meta_order"] = spa(ms, hseg, sent[v], meta_order)
            kd["variants"][v]["spa_reversed_order"] = spa(ms, hseg, sent[v], reversed_order)
            if len(kept) <= ALL_ORDERS_MAX:
                values = [spa(ms, hseg, sent[v], list(p)) for p in itertools.permutations(range(len(kept)))]
                kd["variants"][v]["spa_all_orders"] = {"n_orders": len(values), "min": min(values),
                                                       "max": max(values), "distinct": len(set(values))}
        out["kinds"][kind] = kd
        log(f"  MTME {kind}: {time.perf_counter() - t:.1f} s (block {len(seg_rows)} systems x {block.size} "
            f"segments; {kd['n_judged']} judged entries)")
    m = sent["sacrebleu"]
    out["sentence_bleu_sacrebleu"] = ([[float(x) for x in row] for row in m] if m.size <= FULL_MATRIX_MAX
                                      else matrix_digest(m))
    log(f"  {name}: {time.perf_counter() - t0:.1f} s")
    return name, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mtme", type=Path, required=True,
                    help="a checkout of google-research/mt-metrics-eval (the folder holding mt_metrics_eval/)")
    ap.add_argument("--mtme-commit", default=None, help="the checkout's commit, if it is not a git work tree")
    ap.add_argument("--out", type=Path, default=OUT, help=f"JSON output (default {OUT})")
    ap.add_argument("--datasets", type=Path, nargs="*", default=DATASETS, help="dataset folders")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    ms, commit = load_mtme(args.mtme, args.mtme_commit)
    check_variants_against_conf()
    import sacrebleu
    import scipy

    result: dict[str, Any] = {
        "mtme_commit": commit,
        "sacrebleu_version": sacrebleu.__version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "python": platform.python_version(),
        "generated_by": "tools/mtme_sentbleu_oracle.py",
        "conventions": "systems in sorted() order; human scores oriented higher-is-better; sentence BLEU = sacrebleu "
                       "BLEU(..., effective_order=True).sentence_score against all references; SPA = 1 - MTME PCE "
                       "(1000 permutations, seed 4) on the complete block of the systems with any segment score; "
                       "acc_eq = MTME KendallWithTiesOpt acc23, item grouping, sample_rate 1.0; pairwise accuracy "
                       "= MTME Agreement of corpus BLEU (effective order off) vs sys.tsv",
        "variant_options": VARIANTS,
        "datasets": {},
    }
    for root in args.datasets:
        name, values = dataset_values(root, ms)
        result["datasets"][name] = values
    seconds = time.perf_counter() - t0  # not in the JSON: the file is the same on every run
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")
    log(f"wrote {args.out} ({args.out.stat().st_size} bytes) in {seconds:.1f} s")
    for name, d in result["datasets"].items():
        for kind, kd in d["kinds"].items():
            for v, x in kd["variants"].items():
                print(f"{name}\t{kind}\t{v}\t" + "\t".join(f"{k}={val!r}" for k, val in x.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
