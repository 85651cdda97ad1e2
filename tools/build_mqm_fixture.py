"""Build ``tests/data/mqm_ted_ende_small/``: the rows of segments 1-30 of Google's MQM annotations of WMT21 TED
en-de (``ted/ende/mqm_ted_ende.tsv``, google/wmt-mqm-human-evaluation) and the published segment averages of the
same segments (``mqm_ted_ende.avg_seg_scores.tsv``), unchanged but cut.

    python tools/build_mqm_fixture.py SNAPSHOT    # a checkout or git directory of wmt-mqm-human-evaluation
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "mqm_ted_ende_small"
LAST = 30


def read(snapshot: Path, path: str) -> str:
    if (snapshot / path).exists():
        return (snapshot / path).read_text(encoding="utf-8")
    git = snapshot / ".git" if (snapshot / ".git").exists() else snapshot
    return subprocess.run(["git", f"--git-dir={git}", "show", f"HEAD:{path}"], capture_output=True, check=True,
                          text=True, encoding="utf-8").stdout


def main(snapshot: str) -> None:
    root = Path(snapshot)
    rows = read(root, "ted/ende/mqm_ted_ende.tsv").split("\n")
    kept = [rows[0]] + [r for r in rows[1:] if r and int(r.split("\t")[3]) <= LAST]
    avg = read(root, "ted/ende/mqm_ted_ende.avg_seg_scores.tsv").split("\n")
    kept_avg = [avg[0]] + [r for r in avg[1:] if r and int(r.split()[2]) <= LAST]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "mqm_ted_ende.tsv").write_text("\n".join(kept) + "\n", encoding="utf-8")
    (OUT / "mqm_ted_ende.avg_seg_scores.tsv").write_text("\n".join(kept_avg) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(kept) - 1} rows, {len(kept_avg) - 1} averages")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
