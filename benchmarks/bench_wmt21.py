"""WMT21's official automatic scores, reproduced: every row of ``scores/automatic-scores.tsv`` in
wmt-conference/wmt21-news-systems (BLEU and chrF of every system of every language pair, against all references
and against each one) recomputed from the snapshot's texts through the harness three ways, and compared to 1e-9:

- **API**: ``harness.corpus_bleu`` with the tokenizer WMT21 used (``language_tokenizer(tgt, "wmt21")``: 13a, zh
  for Chinese, char for Japanese) and ``harness.corpus_chrf`` (sacrebleu's defaults);
- **CLI**: ``harness-score REFS -i SYSTEMS -m bleu chrf -l SRC-TGT --tokenize TOK -f json`` (in process);
- **job**: a dataset folder per pair (``refs/ref-X.txt``, ``systems/*.txt``, ``meta.json`` target_lang), scored by
  the job with ``bleu=wmt21`` (the WMT21 rule, picked from the target language) and ``chrf=[chrf]`` against every
  single reference and all of them (``dataset.refsets=each``).

A row that cannot be reproduced from the snapshot (a reference or a system whose text is not in it) is counted and
explained, never dropped silently. The system names of the table are the texts' (``NVIDIA-NeMo``).

    python benchmarks/bench_wmt21.py --snapshot PATH                   # every pair (several minutes)
    python benchmarks/bench_wmt21.py --snapshot PATH --pairs en-ja de-en --no-job
"""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from wmt21_snapshot import Snapshot  # noqa: E402

from harness import corpus_bleu, corpus_chrf  # noqa: E402
from harness.cli import run as score_run  # noqa: E402
from harness.core.options import language_tokenizer  # noqa: E402

TOLERANCE = 1e-9


def write_pair(root: Path, pair, meta: dict) -> None:
    for folder in ("refs", "systems"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for ref, lines in pair.refs.items():
        (root / "refs" / f"ref-{ref}.txt").write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
    for name, lines in pair.systems.items():
        (root / "systems" / f"{name}.txt").write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
    (root / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


def api_scores(pair, tok: str) -> dict[tuple[str, str, str], float]:
    out = {}
    refs = sorted(pair.refs)
    for system, hyps in pair.systems.items():
        for which in ["all", *refs]:
            streams = [pair.refs[r] for r in (refs if which == "all" else [which])]
            out[(system, "bleu", which)] = corpus_bleu(hyps, streams, tokenize=tok).score
            out[(system, "chrf", which)] = corpus_chrf(hyps, streams).score
    return out


def cli_scores(root: Path, pair, tok: str) -> dict[tuple[str, str, str], float]:
    out = {}
    refs = sorted(pair.refs)
    systems = sorted(pair.systems)
    for which in ["all", *refs]:
        ref_files = [str(root / "refs" / f"ref-{r}.txt") for r in (refs if which == "all" else [which])]
        objs = json.loads(score_run([*ref_files, "-i", *(str(root / "systems" / f"{s}.txt") for s in systems),
                                     "-m", "bleu", "chrf", "-l", pair.lp, "--tokenize", tok, "-f", "json"]))
        for obj in objs:
            metric = "bleu" if obj["name"] == "BLEU" else "chrf"
            out[(Path(obj["system"]).stem, metric, which)] = obj["score"]
    return out


def job_scores(root: Path, pair) -> dict[tuple[str, str, str], float]:
    import pandas as pd
    from omegaconf import OmegaConf

    from harness.job.config import HarnessConfig
    from harness.job.spec import build_spec
    from harness.runner import run_job

    cfg = OmegaConf.to_container(OmegaConf.structured(HarnessConfig))
    cfg.update(experiment_name="wmt21", runs_dir=str(root / "runs"), tracking=False, progress=False,
               figures=False, significance=False, correlation=False, n_samples=1, segment_table=False,
               bleu={"wmt21": OmegaConf.to_container(OmegaConf.load(REPO / "conf" / "bleu" / "wmt21.yaml"))},
               chrf={"chrf": OmegaConf.to_container(OmegaConf.load(REPO / "conf" / "chrf" / "chrf.yaml"))},
               metrics="none")
    cfg["dataset"].update(root=str(root), refsets="each")
    outcome = run_job(build_spec(cfg, [f"dataset.root={root}"]), "", io.StringIO())
    table = pd.read_parquet(outcome.folder / "system_scores.parquet")
    n_refs = len(pair.refs)
    out = {}
    for row in table.itertuples():
        used = row.refs_used.split("+")
        if len(used) == n_refs:
            out[(row.system, row.metric, "all")] = row.score
        if len(used) == 1:
            out[(row.system, row.metric, used[0].removeprefix("ref-"))] = row.score
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--snapshot", required=True, help="a checkout or git directory of wmt21-news-systems")
    p.add_argument("--pairs", nargs="*", default=None, help="language pairs (default: every pair of the table)")
    p.add_argument("--no-job", action="store_true", help="API and CLI only")
    p.add_argument("--json-out", default=None, help="write the counts and every mismatch as JSON")
    args = p.parse_args()
    snap = Snapshot(args.snapshot)
    rows = snap.official_scores()
    pairs = args.pairs or sorted({r["pair"] for r in rows})
    paths = ["api", "cli"] + ([] if args.no_job else ["job"])
    matched: Counter[tuple[str, str]] = Counter()
    worst: dict[str, float] = defaultdict(float)
    problems: list[dict] = []
    unreproducible: list[dict] = []
    started = time.perf_counter()
    for lp in pairs:
        t0 = time.perf_counter()
        pair = snap.pair(lp)
        tok = language_tokenizer(pair.target_lang, "wmt21")
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / lp
            write_pair(root, pair, {"name": f"wmt21_{lp}", "source_lang": lp.split("-")[0],
                                    "target_lang": pair.target_lang})
            found = {"api": api_scores(pair, tok), "cli": cli_scores(root, pair, tok)}
            if not args.no_job:
                found["job"] = job_scores(root, pair)
        n = 0
        for r in (r for r in rows if r["pair"] == lp):
            metric, which = r["metric"].split("-", 1)
            key = (r["system"], metric, which)
            if r["system"] not in pair.systems or (which != "all" and which not in pair.refs):
                what = f"system {r['system']}" if r["system"] not in pair.systems else f"reference {which}"
                unreproducible.append({**r, "why": f"{what} not in the snapshot's texts"})
                continue
            n += 1
            want = float(r["score"])
            for path in paths:
                got = found[path].get(key, math.nan)
                diff = abs(got - want)
                worst[path] = max(worst[path], diff if math.isfinite(diff) else math.inf)
                if diff <= TOLERANCE:
                    matched[(path, metric)] += 1
                else:
                    problems.append({**r, "path": path, "harness": got, "diff": diff})
        print(f"{lp}: {n} rows, tokenizer {tok}, {time.perf_counter() - t0:.1f} s", flush=True)
    total = {m: sum(1 for r in rows if r["pair"] in pairs and r["metric"].startswith(m)) for m in ("bleu", "chrf")}
    print(f"\nWMT21 official automatic scores ({sum(total.values())} rows of {len(pairs)} pairs), "
          f"{time.perf_counter() - started:.0f} s:")
    for path in paths:
        print(f"  {path:4} BLEU {matched[(path, 'bleu')]}/{total['bleu']}, chrF {matched[(path, 'chrf')]}/"
              f"{total['chrf']} equal to {TOLERANCE:g} (largest difference {worst[path]:.2e})")
    why = Counter(u["why"] for u in unreproducible)
    for text, count in why.items():
        print(f"  not reproducible from the snapshot: {count} rows: {text}")
    for prob in problems[:20]:
        print(f"  MISMATCH {prob}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"matched": {f"{a}/{b}": c for (a, b), c in matched.items()},
                                                   "total": total, "unreproducible": unreproducible,
                                                   "mismatches": problems}, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
