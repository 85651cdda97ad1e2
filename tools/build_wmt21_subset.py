"""Build ``tests/data/wmt21_enja_small``: the first 60 segments of WMT21 en-ja from the public snapshot, a
Japanese-target dataset folder for the tests (the target language picks the tokenizer).

Source, reference A and five systems (NiuTrans, Facebook-AI, Online-W, Illini, Online-G: the best, the worst and
three between by the official BLEU), unchanged, cut to their first 60 lines; ``meta.json`` names the pair and the
snapshot's commit, and ``human/sys.tsv`` holds the systems' official COMET (reference A) as a stand-in human score
so that a job has something to correlate with. Rerunnable: the folder is rewritten, byte-identical.

    .venv/bin/python tools/build_wmt21_subset.py --snapshot /path/to/wmt21-news-systems [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from wmt21_snapshot import COMMIT, Snapshot

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "wmt21_enja_small"
SYSTEMS = ("NiuTrans", "Facebook-AI", "Online-W", "Illini", "Online-G")
N = 60


def write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snapshot", required=True, help="checkout or git directory of wmt21-news-systems")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    snap = Snapshot(args.snapshot)
    pair = snap.pair("en-ja")
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    write(out / "src.txt", pair.source[:N])
    write(out / "refs" / "ref-A.txt", pair.refs["A"][:N])
    for name in SYSTEMS:
        write(out / "systems" / f"{name}.txt", pair.systems[name][:N])
    comet = snap.comet("en-ja")["A"]
    write(out / "human" / "sys.tsv", ["system\tscore", *(f"{name}\t{comet[name]!r}" for name in SYSTEMS)])
    meta = {"name": "wmt21_enja_small", "source_lang": "en", "target_lang": "ja", "refs": ["ref-A"],
            "systems": list(SYSTEMS),
            "human_scores": {"comet": {"file_sys": "human/sys.tsv", "higher_is_better": True,
                                       "name": "COMET (official, reference A; a stand-in for a human score)"}},
            "provenance": {"source": "github.com/wmt-conference/wmt21-news-systems", "commit": COMMIT,
                           "files": f"txt/*/{pair.test_set}.en-ja.*, scores/COMET/en-ja/", "lines": f"1-{N}",
                           "built_by": "tools/build_wmt21_subset.py"}}
    (out / "meta.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}: {N} segments, {len(SYSTEMS)} systems")


if __name__ == "__main__":
    main()
