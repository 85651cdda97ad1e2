"""Build ``tests/data/mtme_wmt21/wmt21.news``: the first 40 segments of WMT21 ru-en in mt-metrics-eval's layout,
from public data only: the texts of wmt-conference/wmt21-news-systems (four MT systems, both references, ref-B
also as the human system ``refB``), the documents and the official DA scores (z and raw) as the shipped
``harness/data/wmt21_news_ruen_da`` places them on lines (``human-scores/ru-en.wmt-{z,raw}.{seg,sys}.score``; the
system scores of the full test set, as published), WMT21's system-level COMET against each reference
(``metric-scores/ru-en/COMET-refA.sys.score``, ``COMET-refB.sys.score``: the latter without refB, its
reference), and sacrebleu's sentence BLEU and corpus BLEU against refA of the 40 segments (``sentBLEU-refA``,
``BLEU-refA``).

    python tools/build_mtme_fixture.py SNAPSHOT
"""

from __future__ import annotations

import sys
from pathlib import Path

import sacrebleu
from wmt21_snapshot import Snapshot

REPO = Path(__file__).resolve().parents[1]
RUEN = REPO / "harness" / "data" / "wmt21_news_ruen_da"
OUT = REPO / "tests" / "data" / "mtme_wmt21" / "wmt21.news"
N = 40
SYSTEMS = ("Facebook-AI", "NiuTrans", "Online-W", "Online-Y")
LP = "ru-en"


def write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def main(snapshot: str) -> None:
    snap = Snapshot(snapshot)
    pair = snap.pair(LP)
    refs = {"refA": pair.refs["A"][:N], "refB": pair.refs["B"][:N]}
    systems = {s: pair.systems[s][:N] for s in SYSTEMS}
    systems["refB"] = refs["refB"]
    docs = [line.split("\t")[2] for line in (RUEN / "seg_map.tsv").read_text().splitlines()[1:N + 1]]
    write(OUT / "documents" / f"{LP}.docs", [f"news {d}" for d in docs])
    write(OUT / "sources" / f"{LP}.txt", pair.source[:N])
    for name, lines in refs.items():
        write(OUT / "references" / f"{LP}.{name}.txt", lines)
    for name, lines in systems.items():
        write(OUT / "system-outputs" / LP / f"{name}.txt", lines)
    for kind, prefix in (("wmt-z", ""), ("wmt-raw", "raw_")):  # mt-metrics-eval's names of WMT21's DA
        seg: dict[str, list[str]] = {s: ["None"] * N for s in SYSTEMS}
        for row in (RUEN / "human" / f"{prefix}seg.tsv").read_text().splitlines()[1:]:
            system, i, score = row.split("\t")
            if system in seg and int(i) < N:
                seg[system][int(i)] = score
        write(OUT / "human-scores" / f"{LP}.{kind}.seg.score", [f"{s} {v}" for s in SYSTEMS for v in seg[s]])
        sys_rows = dict(r.split("\t")[:2] for r in (RUEN / "human" / f"{prefix}sys.tsv").read_text().splitlines()[1:])
        write(OUT / "human-scores" / f"{LP}.{kind}.sys.score", [f"{s} {sys_rows[s]}" for s in SYSTEMS])
    comet = snap.comet(LP)
    names = {"ref-A": "refA", "ref-B": "refB"}
    for ref in ("A", "B"):
        scores = {names.get(k, k): v for k, v in comet[ref].items()}
        write(OUT / "metric-scores" / LP / f"COMET-ref{ref}.sys.score",
              [f"{s} {scores[s]!r}" for s in systems if s in scores])
    bleu = sacrebleu.BLEU()
    write(OUT / "metric-scores" / LP / "BLEU-refA.sys.score",
          [f"{s} {bleu.corpus_score(lines, [refs['refA']]).score!r}" for s, lines in systems.items()])
    write(OUT / "metric-scores" / LP / "sentBLEU-refA.seg.score",
          [f"{s} {sacrebleu.sentence_bleu(h, [r]).score!r}" for s, lines in systems.items()
           for h, r in zip(lines, refs["refA"])])
    print(f"wrote {OUT}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
