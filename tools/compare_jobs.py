"""Compare the tables of two job folders: the proof that a change of the code left every number as it was.

    python tools/compare_jobs.py OLD_FOLDER NEW_FOLDER [--rel 1e-12]

For each table both folders have, rows are matched on their key columns; every column both tables have is
compared: strings, integers, booleans and p-values exactly, other floats to a relative ``--rel`` (different code
paths may differ by an ulp; see README "Exactness"). Prints one line per table and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

KEYS = {
    "system_scores": ["refset", "system", "variant"],
    "segment_scores": ["refset", "system", "variant", "seg_id"],
    "significance": ["refset", "variant", "test", "system_a", "system_b"],
    "correlations": ["refset", "variant", "human_score", "level", "method", "grouping", "include_human"],
}
EXACT = {"p_value", "p_holm", "n", "n_samples", "seed", "hyp_len", "seg_id"}


def same(a: object, b: object, column: str, rel: float) -> bool:
    if column.startswith("system_version") and a in (None, "") and b in (None, ""):
        return True  # an unversioned system: None in old folders, "" since (docs/contracts.md §7)
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if column in EXACT:
            return a == b
        return math.isclose(a, b, rel_tol=rel, abs_tol=0.0) or a == b
    if hasattr(a, "tolist") or hasattr(b, "tolist"):
        la, lb = list(a), list(b)  # type: ignore[arg-type]
        return len(la) == len(lb) and all(same(float(x), float(y), column, rel) for x, y in zip(la, lb))
    if a is None or b is None:
        return (a is None or (isinstance(a, float) and math.isnan(a))) and \
            (b is None or (isinstance(b, float) and math.isnan(b)))
    return a == b


def compare(old: Path, new: Path, rel: float) -> int:
    bad = 0
    for name, keys in KEYS.items():
        po, pn = old / f"{name}.parquet", new / f"{name}.parquet"
        if not (po.exists() and pn.exists()):
            print(f"{name}: missing in {'old' if not po.exists() else 'new'}")
            bad += int(po.exists() != pn.exists())
            continue
        a, b = pd.read_parquet(po), pd.read_parquet(pn)
        if len(a) != len(b):
            print(f"{name}: {len(a)} rows vs {len(b)}")
            bad += 1
            continue
        a = a.sort_values(keys, kind="stable").reset_index(drop=True)
        b = b.sort_values(keys, kind="stable").reset_index(drop=True)
        cols = [c for c in a.columns if c in b.columns]
        diffs = []
        for col in cols:
            for i, (x, y) in enumerate(zip(a[col].tolist(), b[col].tolist())):
                if not same(x, y, col, rel):
                    diffs.append(f"{col} row {i} ({', '.join(str(a.at[i, k]) for k in keys)}): {x!r} vs {y!r}")
        only = sorted(set(a.columns) ^ set(b.columns))
        print(f"{name}: {len(a)} rows, {len(cols)} common columns compared, {len(diffs)} differences"
              + (f"; columns in one only: {', '.join(only)}" if only else ""))
        for d in diffs[:10]:
            print("   ", d)
        bad += bool(diffs)
    return 1 if bad else 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--rel", type=float, default=1e-12, help="relative tolerance of floats (default 1e-12)")
    args = p.parse_args()
    sys.exit(compare(args.old, args.new, args.rel))


if __name__ == "__main__":
    main()
