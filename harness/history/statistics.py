"""The paired tests between versions: only between comparable runs (same signature, reference hashes and segments),
on the per-segment statistics each job logged (``segment_scores.parquet``, downloaded through MLflow and trusted
only when the job's manifest lists it with the same SHA-256), never recomputed from text."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .result import HistoryError, Step, Version

SEGMENT_TABLE = "segment_scores.parquet"


def _signature_fields(sig: str) -> dict[str, str]:
    out = {}
    for part in sig.split("|"):
        key, _, value = part.partition(":")
        out[key] = value
    return out


def difference(a: Version, b: Version) -> str | None:
    """What makes ``b`` not comparable with ``a`` (field and both values), or None."""
    if a.signature != b.signature:
        fa, fb = _signature_fields(a.signature), _signature_fields(b.signature)
        keys = list(dict.fromkeys([*fa, *fb]))
        diffs = [k for k in keys if fa.get(k) != fb.get(k)]
        if diffs:
            return "; ".join(f"signature field {k!r} differs: {fa.get(k, '(absent)')!r} (version {a.label}) vs "
                             f"{fb.get(k, '(absent)')!r} (version {b.label})" for k in diffs)
        return f"signature differs: {a.signature!r} (version {a.label}) vs {b.signature!r} (version {b.label})"
    for key in sorted({*a.ref_hashes, *b.ref_hashes}):
        va, vb = a.ref_hashes.get(key, "(absent)"), b.ref_hashes.get(key, "(absent)")
        if va != vb:
            return f"reference hash {key} differs: {va} (version {a.label}) vs {vb} (version {b.label})"
    if a.n_segments is not None and b.n_segments is not None and a.n_segments != b.n_segments:
        return (f"number of segments differs: {a.n_segments} (version {a.label}) vs {b.n_segments} "
                f"(version {b.label})")
    return None


def check_comparable(versions: Sequence[Version], system: str) -> None:
    """Every version must share the first one's signature, reference hashes and segment count."""
    first = versions[0]
    for i, v in enumerate(versions[1:], start=1):
        why = difference(first, v)
        if why is not None:
            hint = f" (--up-to {versions[i - 1].version} stops the history before it)" if i > 1 else ""
            raise HistoryError(f"{system} version {v.label} cannot be compared with version {first.label}: {why}; "
                               f"paired tests need the same signature, reference hashes and segments{hint}")


def segment_matrix(frame: Any, system: str, version: str, refset: str, variant: str, where: str) -> np.ndarray:
    """The ``[n, 2 + 2N]`` statistics ``[hyp_len, ref_len, matches_1..N, totals_1..N]`` of one cell of a
    ``segment_scores`` table (one system version, refset and variant: a job may score several versions of a
    system), ordered by ``seg_id`` (``ref_len`` is already the variant's effective length)."""
    mask = (frame["system"] == system) & (frame["refset"] == refset) & (frame["variant"] == variant)
    if "system_version" in frame.columns:
        mask &= frame["system_version"].fillna("") == version
    rows = frame[mask]
    label = f"{system}@{version}" if version else system
    if rows.empty:
        raise HistoryError(f"{where}: no segment statistics of {label} / {refset} / {variant}")
    rows = rows.sort_values("seg_id", kind="stable")
    seg = rows["seg_id"].to_numpy()
    if not np.array_equal(seg, np.arange(len(rows))):
        raise HistoryError(f"{where}: segment ids of {label} / {refset} / {variant} are not 0..{len(rows) - 1} "
                           "once each")
    matches = np.vstack([np.asarray(m, dtype=np.float64) for m in rows["matches"]])
    totals = np.vstack([np.asarray(t, dtype=np.float64) for t in rows["totals"]])
    return np.column_stack([rows["hyp_len"].to_numpy(np.float64), rows["ref_len"].to_numpy(np.float64),
                            matches, totals])


class Artifacts:
    """Each job's ``segment_scores.parquet``, downloaded once through MLflow into a temporary folder, and trusted
    only when the job's ``manifest.json`` artifact lists it with the same SHA-256 (a complete generation)."""

    def __init__(self, client: Any, folder: str) -> None:
        self.client = client
        self.folder = Path(folder)
        self._frames: dict[str, Any] = {}

    def segments(self, parent_id: str) -> Any:
        """The job's segment table (the columns the paired tests need), verified against its manifest."""
        if parent_id not in self._frames:
            import pandas as pd
            import pyarrow.parquet as pq

            dst = self.folder / parent_id
            dst.mkdir(parents=True, exist_ok=True)
            try:
                path = self.client.download_artifacts(parent_id, SEGMENT_TABLE, str(dst))
            except Exception as exc:
                raise HistoryError(f"job run {parent_id} has no {SEGMENT_TABLE} artifact ({type(exc).__name__}: "
                                   f"{str(exc).splitlines()[0] if str(exc) else ''}; scored with "
                                   "segment_table=false?): no paired tests without segment statistics") from None
            self._verify(parent_id, Path(path), dst)
            columns = ["refset", "system", "variant", "seg_id", "hyp_len", "ref_len", "matches", "totals"]
            # every table has it (docs/contracts.md §7); be lenient
            if "system_version" in pq.read_schema(path).names:
                columns.append("system_version")
            self._frames[parent_id] = pd.read_parquet(path, columns=columns)
        return self._frames[parent_id]

    def _verify(self, parent_id: str, path: Path, dst: Path) -> None:
        from ..storage.manifest import MANIFEST, sha256_of

        try:
            manifest = json.loads(Path(self.client.download_artifacts(parent_id, MANIFEST, str(dst))).read_text())
        except Exception:
            raise HistoryError(f"job run {parent_id} has no {MANIFEST} artifact: its tables cannot be verified "
                               "(rerun the job to log it with a manifest)") from None
        want = manifest.get("files", {}).get(SEGMENT_TABLE, {}).get("sha256")
        if want is None or want != sha256_of(path):
            raise HistoryError(f"job run {parent_id}: {SEGMENT_TABLE} is not the one its {MANIFEST} lists (an "
                               "incomplete or mixed generation); refusing to test on it")


def logged_statistics(client: Any, versions: Sequence[Version], system: str, refset: str, variant: str,
                      score_fn: Any) -> list[np.ndarray]:
    """Every version's statistics matrix, checked: same shape, and they reproduce the logged BLEU."""
    with tempfile.TemporaryDirectory(prefix="harness-history-") as tmp:
        store = Artifacts(client, tmp)
        mats: list[np.ndarray] = []
        for v in versions:
            where = f"version {v.label} (run {v.run_id})"
            X = segment_matrix(store.segments(v.parent_id), system, v.version, refset, variant, where)
            if mats and X.shape != mats[0].shape:
                raise HistoryError(f"{system} version {v.label} cannot be compared with version "
                                   f"{versions[0].label}: number of segments differs: {mats[0].shape[0]} vs "
                                   f"{X.shape[0]} (or statistics columns {mats[0].shape[1]} vs {X.shape[1]})")
            again = float(np.asarray(score_fn(X.sum(axis=0))))
            if not math.isclose(again, v.bleu, rel_tol=0.0, abs_tol=1e-6):
                raise HistoryError(f"{where}: the stored segment statistics give BLEU {again:.6f}, the run logged "
                                   f"{v.bleu:.6f}; refusing to test on inconsistent statistics")
            mats.append(X)
    return mats


def best_before(versions: Sequence[Version], i: int) -> int:
    """Index of the best version before ``i`` (highest BLEU; ties: the earliest)."""
    return max(range(i), key=lambda j: (versions[j].bleu, -j))


def untested_steps(versions: Sequence[Version]) -> tuple[Step, ...]:
    """BLEU differences to the previous and to the best earlier version (what needs no test)."""
    out = [Step()]
    for i in range(1, len(versions)):
        v, best = versions[i], versions[best_before(versions, i)]
        out.append(Step(delta_prev=v.bleu - versions[i - 1].bleu, best_before=best.version,
                        delta_best=v.bleu - best.bleu))
    return tuple(out)


def tested_steps(versions: Sequence[Version], mats: Sequence[np.ndarray], score_fn: Any, test: str,
                 n_samples: int | None, seed: int | None, alpha: float) -> tuple[tuple[Step, ...], str, int]:
    """Every version after the first against the previous version and against the best earlier one, paired tests
    on one shared set of resamples for all pairs. Returns the steps, the test's name and number of samples."""
    from ..core.significance import DEFAULT_SAMPLES, TEST_NAMES, differences

    n = n_samples if n_samples is not None else DEFAULT_SAMPLES[test]
    if len(versions) < 2:
        return untested_steps(versions), TEST_NAMES[test], n
    pairs: list[tuple[int, int]] = []
    best_of: list[int] = []
    for i in range(1, len(versions)):
        best = best_before(versions, i)
        best_of.append(best)
        pairs.extend([(i - 1, i), (best, i)])
    systems = [(f"v{k}", X) for k, X in enumerate(mats)]
    comps = differences(systems, score_fn, test=test, pairs=pairs, n_samples=n, seed=seed)
    steps = [Step()]
    for i in range(1, len(versions)):
        to_prev, to_best = comps[2 * (i - 1)], comps[2 * (i - 1) + 1]
        steps.append(Step(delta_prev=to_prev.delta, p_prev=to_prev.p_value,
                          best_before=versions[best_of[i - 1]].version, delta_best=to_best.delta,
                          p_best=to_best.p_value, regression_vs_previous=to_prev.delta < 0 and to_prev.p_value < alpha,
                          regression_vs_best=to_best.delta < 0 and to_best.p_value < alpha))
    return tuple(steps), TEST_NAMES[test], n
