"""Experiment results as the long-format tables of DESIGN 1.7 (pandas DataFrames; written by :mod:`harness.store`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .experiment import ExperimentResult, sentence_rows

SYSTEM_COLUMNS = ["dataset", "refset", "system", "variant", "human", "bleu", "precisions", "bp", "ratio", "hyp_len",
                  "ref_len", "signature", "ci_low", "ci_high"]
SEGMENT_COLUMNS = ["dataset", "refset", "system", "variant", "seg_id", "sentence_bleu", "hyp_len", "ref_len",
                   "matches", "totals"]
CORRELATION_COLUMNS = ["dataset", "refset", "variant", "human_score", "level", "method", "grouping", "include_human",
                       "value", "p_value", "ci_low", "ci_high", "n"]
SIGNIFICANCE_COLUMNS = ["refset", "variant", "test", "system_a", "system_b", "delta", "statistic", "p_value",
                        "ci_low", "ci_high"]


def system_scores(result: ExperimentResult) -> pd.DataFrame:
    """One row per system x refset x variant."""
    rows = []
    for c in result.cells:
        s = c.score
        rows.append({
            "dataset": result.spec.dataset, "refset": c.refset, "system": c.system.name,
            "variant": c.variant.name, "human": c.system.human, "bleu": s.score, "precisions": s.precisions,
            "bp": s.bp, "ratio": s.ratio, "hyp_len": float(s.hyp_len), "ref_len": float(s.ref_len),
            "signature": s.signature, "ci_low": c.ci_low, "ci_high": c.ci_high,
            "system_version": c.system.version, "refs_used": "+".join(c.refs_used),
            "counts": s.counts, "totals": s.totals, "system_sha256": c.system.text.sha256,
        })
    frame = pd.DataFrame(rows)
    return frame[SYSTEM_COLUMNS + [c for c in frame.columns if c not in SYSTEM_COLUMNS]]


def segment_scores(result: ExperimentResult) -> pa.Table:
    """One row per system x refset x variant x segment, with the per-segment statistics (built as Arrow columns:
    list columns from flat arrays, no per-row Python objects)."""
    cols: dict[str, list[Any]] = {k: [] for k in SEGMENT_COLUMNS}
    for c in result.cells:
        rows = sentence_rows(c)
        n = len(rows["seg_id"])
        for key, value in (("dataset", result.spec.dataset), ("refset", c.refset), ("system", c.system.name),
                           ("variant", c.variant.name)):
            cols[key].append(pa.array(np.repeat(value, n), pa.string()))
        for key in ("seg_id", "sentence_bleu", "hyp_len", "ref_len"):
            cols[key].append(pa.array(rows[key]))
        for key in ("matches", "totals"):
            arr = np.ascontiguousarray(rows[key], dtype=np.int64)
            offsets = np.arange(0, arr.size + 1, arr.shape[1], dtype=np.int32)
            cols[key].append(pa.ListArray.from_arrays(pa.array(offsets), pa.array(arr.ravel())))
    if not result.cells:
        return pa.table({k: pa.array([]) for k in SEGMENT_COLUMNS})
    return pa.table({k: pa.concat_arrays(v) for k, v in cols.items()})


def rows_frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    """A table from row dicts, with the contract columns first (and present even when there are no rows)."""
    frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=columns)
    for col in columns:
        if col not in frame.columns:
            frame[col] = None
    return frame[columns + [c for c in frame.columns if c not in columns]]
