"""Add WMT21's official system-level COMET scores (``scores/COMET/LP/``) to a dataset folder built from the same
texts: ``metrics/COMET-ref-R/sys.tsv`` and ``meta.json`` (higher is better, provenance), for the systems of the
dataset, each checked to be byte for byte the snapshot's output it was scored on.

    python tools/add_wmt21_metrics.py SNAPSHOT LP DATASET_DIR

The snapshot names NVIDIA's system ``Nemo`` in its scores and ``NVIDIA-NeMo`` in its texts; the dataset keeps the
texts' names.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from wmt21_snapshot import COMMIT, Snapshot

#: Names of the scores files -> names of the text files, where they differ.
SCORE_NAMES = {"Nemo": "NVIDIA-NeMo"}


def main(snapshot: str, lp: str, dataset: str) -> None:
    snap, root = Snapshot(snapshot), Path(dataset)
    pair = snap.pair(lp)
    systems = sorted(p.stem for p in (root / "systems").glob("*.txt"))
    for name in systems:
        ours = (root / "systems" / f"{name}.txt").read_text(encoding="utf-8").split("\n")[:-1]
        if pair.systems.get(name) != ours:
            raise SystemExit(f"{root}/systems/{name}.txt is not the snapshot's output of {name} ({lp})")
    for ref, scores in sorted(snap.comet(lp).items()):
        by_text_name = {SCORE_NAMES.get(k, k): v for k, v in scores.items()}
        missing = [s for s in systems if s not in by_text_name]
        if missing:
            raise SystemExit(f"COMET ref-{ref} of {lp} has no score for {', '.join(missing)}")
        name = f"COMET-ref-{ref}"
        folder = root / "metrics" / name
        folder.mkdir(parents=True, exist_ok=True)
        rows = ["system\tscore"] + [f"{s}\t{by_text_name[s]!r}" for s in systems]
        (folder / "sys.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
        meta = {"name": name, "higher_is_better": True,
                "title": f"COMET against ref-{ref}: WMT21's official system-level scores",
                "provenance": f"wmt-conference/wmt21-news-systems @ {COMMIT} : "
                              f"scores/COMET/{lp}/COMET_{pair.test_set}_ref-{ref}.tsv (system names: "
                              + ", ".join(f"{a} -> {b}" for a, b in SCORE_NAMES.items()) + ")"}
        (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        print(f"{folder}: {len(systems)} systems")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
