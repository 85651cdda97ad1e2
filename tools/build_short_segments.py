"""Build the test dataset ``tests/data/short_segments``: real text cut to SHORT segments, sparse MQM-like scores.

Deterministic (``numpy.random.default_rng(20261206)``, every draw made in a fixed order whatever is kept) and
rerunnable: the folder is rewritten from scratch each time and the files are byte-identical between runs.

From the first 80 lines of ``wmt21_news_ende`` (``--source``): references ref-C/ref-D become ref-A/ref-B, and six
systems are kept. For each line:

- 3 lines are kept whole (hypotheses and references unchanged), 3 lines have an empty hypothesis for every system;
- on the other lines each (system, line) keeps the first k whitespace tokens of its hypothesis, k in 0..6
  (P(k=0) = 0.05, the rest uniform), joined with one space;
- on those lines each reference keeps its first m tokens: cut hard (probability 0.35 each, independently) to m in
  0..8, else m in 6..12 (short too, so that the files stay small); never both references empty (ref-B then
  keeps its first token).

Human scores ("mqm", MQM-like penalties, LOWER is better, ``higher_is_better: false``): integers from
{0, 1, 5, 6, 10, 25} with many ties, loosely tied to how much of the hypothesis was kept (empty hypothesis: 25 with
probability 0.75, else 10; else the level index is round(0.5 + 3.5 (1 - f) + N(0, 1.1)) clipped to 0..5, f = kept
tokens / min(6, tokens of the whole hypothesis), capped at 1). Sparse: about 15% of the (system, segment) entries
missing at random, 3 segments missing for every system, and one system has no segment score at all (its whole
column in MTME's item-major view): its scores were drawn like the others but left out of ``seg.tsv``; ``sys.tsv``
still lists it, with the mean of those withheld judged entries. ``sys.tsv`` score = mean of the system's judged
segments (``repr`` precision), n_segments = how many.

    .venv/bin/python tools/build_short_segments.py [--source DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SOURCE = Path("/work/shared/data/wmt21_news_ende")
OUT = ROOT / "tests" / "data" / "short_segments"
SEED = 20261206
N_LINES = 80
REFS = {"ref-A": "ref-C", "ref-B": "ref-D"}  # new name -> name in the source dataset
SYSTEMS = ["Facebook-AI", "HuaweiTSC", "Nemo", "Online-W", "UEdin", "VolcTrans-AT"]
N_WHOLE, N_EMPTY = 3, 3
K_PROBS = np.array([0.05] + [0.95 / 6] * 6)  # hypothesis length k = 0..6 tokens
REF_CUT_P, REF_CUT_MAX = 0.35, 8
REF_SHORT_MIN, REF_SHORT_MAX = 6, 12  # the references not cut hard
LEVELS = [0, 1, 5, 6, 10, 25]  # MQM-like penalties, lower is better
MISSING_P, N_MISSING_SEGMENTS = 0.15, 3


def first_lines(path: Path, n: int) -> list[str]:
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < n:
        raise SystemExit(f"{path}: {len(lines)} lines, need {n}")
    return lines[:n]


def cut(line: str, k: int) -> str:
    return " ".join(line.split()[:k])


def write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    for line in lines:
        assert "\n" not in line and "\r" not in line, path
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8"))


def build(source: Path, out: Path) -> list[Path]:
    rng = np.random.default_rng(SEED)
    n, s = N_LINES, len(SYSTEMS)
    refs_full = {new: first_lines(source / "refs" / f"{old}.txt", n) for new, old in REFS.items()}
    hyps_full = [first_lines(source / "systems" / f"{name}.txt", n) for name in SYSTEMS]

    # -- draws, all made up front in a fixed order
    special = rng.permutation(n)[: N_WHOLE + N_EMPTY]
    whole, empty = set(special[:N_WHOLE].tolist()), set(special[N_WHOLE:].tolist())
    k = rng.choice(len(K_PROBS), size=(s, n), p=K_PROBS)
    ref_cut = rng.random((len(REFS), n)) < REF_CUT_P
    ref_len = rng.integers(0, REF_CUT_MAX + 1, size=(len(REFS), n))
    ref_short = rng.integers(REF_SHORT_MIN, REF_SHORT_MAX + 1, size=(len(REFS), n))
    noise = rng.normal(0.0, 1.1, size=(s, n))
    empty_draw = rng.random((s, n))
    missing = rng.random((s, n)) < MISSING_P
    missing_segments = sorted(rng.choice(n, size=N_MISSING_SEGMENTS, replace=False).tolist())
    no_segments_system = SYSTEMS[int(rng.integers(s))]

    # -- texts
    refs: dict[str, list[str]] = {name: [] for name in REFS}
    for i in range(n):
        cuts = {}
        for r, name in enumerate(REFS):
            full = refs_full[name][i]
            if i in whole:
                cuts[name] = full
            else:
                cuts[name] = cut(full, int(ref_len[r, i] if ref_cut[r, i] else ref_short[r, i]))
        if not any(cuts.values()):
            cuts["ref-B"] = cut(refs_full["ref-B"][i], 1)
        assert any(cuts.values())
        for name in REFS:
            refs[name].append(cuts[name])
    hyps: list[list[str]] = []
    for j in range(s):
        row = []
        for i in range(n):
            if i in whole:
                row.append(hyps_full[j][i])
            elif i in empty:
                row.append("")
            else:
                row.append(cut(hyps_full[j][i], int(k[j, i])))
        hyps.append(row)

    # -- human scores (penalties, lower is better), drawn for every entry
    scores = np.zeros((s, n), dtype=np.int64)
    for j in range(s):
        for i in range(n):
            kept = len(hyps[j][i].split())
            if kept == 0:
                scores[j, i] = 25 if empty_draw[j, i] < 0.75 else 10
                continue
            frac = min(1.0, kept / min(6, len(hyps_full[j][i].split())))
            idx = int(np.clip(np.rint(0.5 + 3.5 * (1.0 - frac) + noise[j, i]), 0, len(LEVELS) - 1))
            scores[j, i] = LEVELS[idx]
    judged = ~missing
    judged[:, missing_segments] = False

    # -- write
    if out.exists():
        shutil.rmtree(out)
    written: list[Path] = []
    for name, lines in refs.items():
        write_lines(out / "refs" / f"{name}.txt", lines)
        written.append(out / "refs" / f"{name}.txt")
    for name, lines in zip(SYSTEMS, hyps):
        write_lines(out / "systems" / f"{name}.txt", lines)
        written.append(out / "systems" / f"{name}.txt")
    seg_rows, sys_rows = ["system\tseg_id\tscore"], ["system\tscore\tn_segments"]
    for j, name in enumerate(SYSTEMS):
        ids = [i for i in range(n) if judged[j, i]]
        if name != no_segments_system:
            seg_rows += [f"{name}\t{i}\t{int(scores[j, i])}" for i in ids]
        mean = sum(int(scores[j, i]) for i in ids) / len(ids)  # exact integer sum, one rounding
        sys_rows.append(f"{name}\t{mean!r}\t{len(ids)}")
    write_lines(out / "human" / "seg.tsv", seg_rows)
    write_lines(out / "human" / "sys.tsv", sys_rows)
    written += [out / "human" / "seg.tsv", out / "human" / "sys.tsv"]

    n_seg_entries = len(seg_rows) - 1
    meta = {
        "name": "short_segments",
        "title": "Short segments: the first 80 lines of WMT21 newstest2021 (wmt21_news_ende) cut to 0-6 tokens, "
                 "with sparse synthetic MQM-like scores (a test dataset)",
        "source_lang": "en",
        "target_lang": "de",
        "n_segments": n,
        "primary_ref": "ref-A",
        "refs": list(REFS),
        "systems": SYSTEMS,
        "human_systems": [],
        "mt_systems": SYSTEMS,
        "human_scores": {
            "mqm": {
                "name": "MQM-like (synthetic)",
                "description": "Synthetic MQM-like penalties (integers from 0, 1, 5, 6, 10, 25; lower is better), "
                               "drawn loosely from how much of each hypothesis was kept; NOT real judgments.",
                "file_seg": "human/seg.tsv",
                "file_sys": "human/sys.tsv",
                "higher_is_better": False,
            }
        },
        "sparse": f"{n_seg_entries} of {s * n} (system, segment) entries in seg.tsv: about {MISSING_P:.0%} missing "
                  f"at random, segments {missing_segments} missing for every system, and {no_segments_system} has "
                  "no segment score at all (sys.tsv lists it: the mean of its withheld judged entries)",
        "provenance": [
            f"built by tools/build_short_segments.py (numpy default_rng({SEED}), numpy {np.__version__}) from the "
            f"first {n} lines of {source.name} (wmt-conference/wmt21-news-systems @ "
            "f41750dadbf2ba6ab01ca5380347d253298a3427, newstest2021 en-de): refs/ref-A.txt <- ref-C, "
            "refs/ref-B.txt <- ref-D, systems/NAME.txt <- the system of that name",
            f"lines {sorted(whole)} kept whole; lines {sorted(empty)} empty for every system; elsewhere each "
            "hypothesis keeps its first k whitespace tokens (k in 0..6, P(0)=0.05, joined with one space) and "
            f"each reference keeps its first 0..{REF_CUT_MAX} tokens (probability {REF_CUT_P}) or else its first "
            f"{REF_SHORT_MIN}..{REF_SHORT_MAX} tokens (never both references empty)",
            "human/seg.tsv and human/sys.tsv are synthetic (see human_scores.mqm.description and 'sparse'); "
            "sys.tsv score = mean of the system's judged segments (repr precision)",
        ],
    }
    (out / "meta.json").write_bytes((json.dumps(meta, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    written.insert(0, out / "meta.json")
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", type=Path, default=SOURCE, help=f"the wmt21_news_ende folder (default {SOURCE})")
    ap.add_argument("--out", type=Path, default=OUT, help=f"output folder, rewritten (default {OUT})")
    args = ap.parse_args(argv)
    written = build(args.source, args.out)
    total = 0
    for p in written:
        size = p.stat().st_size
        total += size
        n_lines = p.read_bytes().count(b"\n")
        print(f"wrote {p.relative_to(args.out.parent) if p.is_relative_to(args.out.parent) else p} "
              f"({size} bytes, {n_lines} lines)")
    print(f"total {total} bytes in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
