"""A job's results as the long-format tables of docs/contracts.md §7 (Arrow tables; written by
:mod:`harness.sinks.parquet`).

Contract columns first, in the documented order, then ours. Every table has ``system_version`` (empty when a
system has none); ``significance`` has ``system_version_a`` / ``system_version_b``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

from ..core.bleu import BleuScore
from ..core.stats import SegmentStats
from .result import JobResult

SYSTEM_COLUMNS = ["dataset", "refset", "system", "variant", "human", "bleu", "precisions", "bp", "ratio", "hyp_len",
                  "ref_len", "signature", "ci_low", "ci_high"]
SEGMENT_COLUMNS = ["dataset", "refset", "system", "variant", "seg_id", "sentence_bleu", "hyp_len", "ref_len",
                   "matches", "totals"]
CORRELATION_COLUMNS = ["dataset", "refset", "variant", "human_score", "level", "method", "grouping", "include_human",
                       "value", "p_value", "ci_low", "ci_high", "n"]
SIGNIFICANCE_COLUMNS = ["refset", "variant", "test", "system_a", "system_b", "delta", "statistic", "p_value",
                        "ci_low", "ci_high"]
TABLES = ("system_scores", "segment_scores", "significance", "correlations")

_FLOAT = pa.float64()
_COUNTS = pa.list_(pa.int64())
NAN = float("nan")


def _table(columns: dict[str, list[Any]], types: dict[str, pa.DataType]) -> pa.Table:
    return pa.table({k: pa.array(v, type=types.get(k)) for k, v in columns.items()})


def _version(v: str | None) -> str:
    return "" if v is None else v


def _bleu_parts(score: Any) -> dict[str, Any]:
    """The columns only BLEU has (null for other families' rows; ``bleu`` NaN)."""
    if not isinstance(score, BleuScore):
        return {"bleu": NAN, "precisions": None, "bp": NAN, "ratio": NAN, "hyp_len": NAN, "ref_len": NAN,
                "counts": None, "totals": None}
    return {"bleu": score.score, "precisions": score.precisions, "bp": score.bp, "ratio": score.ratio,
            "hyp_len": float(score.hyp_len), "ref_len": float(score.ref_len), "counts": score.counts,
            "totals": score.totals}


def human_column(kind: str) -> str:
    """The ``system_scores`` column of one kind of human scores (as published: see ``human_kinds``)."""
    return f"human.{kind}"


def system_scores(result: JobResult) -> pa.Table:
    """One row per system x refset x variant: ``metric`` (the variant's family: ``bleu``, ``chrf``, ``scores``)
    and ``score`` for every family; ``bleu`` and BLEU's parts on BLEU rows (NaN or null on the others); the
    system's score of every kind of human judgments (``human.<kind>``, as published, NaN without one); ``same_as``:
    the earlier variant whose every number this one's equal (shown once in the report and figures)."""
    kinds = [h for h in result.inputs.human]
    same = result.same_as
    cols: dict[str, list[Any]] = {k: [] for k in [*SYSTEM_COLUMNS, "system_version", "refs_used", "counts", "totals",
                                                  "system_sha256", "sentence_signature", "cluster", "metric",
                                                  "score", "same_as", *(human_column(h.name) for h in kinds)]}
    clusters = {(k.refset, k.variant, k.row.system): k.row.cluster for k in result.clusters}
    for c in result.cells:
        for h in kinds:
            cols[human_column(h.name)].append(h.sys.get(c.system.label, NAN))
        cols["same_as"].append(same.get(c.variant.name))
        s = c.score
        parts = _bleu_parts(s)
        for key, value in (("dataset", result.dataset), ("refset", c.refset), ("system", c.system.name),
                           ("variant", c.variant.name), ("human", c.system.human), *parts.items(),
                           ("metric", c.variant.family), ("score", s.score), ("signature", s.signature),
                           ("ci_low", c.ci_low), ("ci_high", c.ci_high),
                           ("system_version", _version(c.system.version)), ("refs_used", "+".join(c.refs_used)),
                           ("system_sha256", c.system.text.sha256),
                           ("sentence_signature", c.sentence_signature),
                           ("cluster", clusters.get((c.refset, c.variant.name, c.system.label)))):
            cols[key].append(value)
    return _table(cols, {"precisions": pa.list_(_FLOAT), "counts": pa.list_(pa.int64()),
                         "totals": pa.list_(pa.int64()), "bleu": _FLOAT, "ci_low": _FLOAT, "ci_high": _FLOAT,
                         "cluster": pa.int64(), "score": _FLOAT, "bp": _FLOAT, "ratio": _FLOAT, "hyp_len": _FLOAT,
                         "ref_len": _FLOAT, "same_as": pa.string(),
                         **{human_column(h.name): _FLOAT for h in kinds}})


def _repeated(value: str | None, n: int, indices: dict[tuple[int, bool], Any]) -> Any:
    """``value`` ``n`` times, as a dictionary of that one value (null indices for None: Parquet cannot write a
    null in a dictionary); ``indices`` keeps the index arrays made so far."""
    index = indices.get((n, value is None))
    if index is None:
        index = indices[(n, value is None)] = (pa.nulls(n, pa.int32()) if value is None
                                               else pa.array(np.zeros(n, dtype=np.int32)))
    return pa.DictionaryArray.from_arrays(index, pa.array([] if value is None else [value], pa.string()))


def segment_scores(result: JobResult) -> pa.Table:
    """One row per system x refset x variant x segment, with the per-segment statistics (Arrow columns built
    from flat arrays: no per-row Python objects; a cell's strings as a dictionary of its one value, which the file
    holds as strings: :func:`~harness.sinks.parquet.write_table`); ``signature`` is the sentence scores' (segment
    level); ``metric`` and ``score`` for every family, ``sentence_bleu`` and BLEU's statistics on BLEU rows (NaN or
    null on the others)."""
    cols: dict[str, list[Any]] = {k: [] for k in [*SEGMENT_COLUMNS, "system_version", "signature", "metric",
                                                  "score"]}
    indices: dict[tuple[int, bool], Any] = {}  # every segment's index: 0, or null (a null value)
    for c in result.cells:
        n = len(c.stats)
        for key, value in (("dataset", result.dataset), ("refset", c.refset), ("system", c.system.name),
                           ("variant", c.variant.name), ("system_version", _version(c.system.version)),
                           ("signature", c.sentence_signature), ("metric", c.variant.family)):
            cols[key].append(_repeated(value, n, indices))
        cols["seg_id"].append(pa.array(np.arange(n, dtype=np.int64)))
        sentence = pa.array(np.asarray(c.sentence, dtype=np.float64))
        cols["score"].append(sentence)
        if not isinstance(c.stats, SegmentStats):
            cols["sentence_bleu"].append(pa.array(np.full(n, NAN)))
            for key, typ in (("hyp_len", pa.int64()), ("ref_len", _FLOAT), ("matches", _COUNTS),
                             ("totals", _COUNTS)):
                cols[key].append(pa.nulls(n, typ))
            continue
        cols["sentence_bleu"].append(sentence)
        cols["hyp_len"].append(pa.array(c.stats.hyp_len))
        cols["ref_len"].append(pa.array(c.stats.ref_len(c.variant.options.ref_length)))
        for key, arr in (("matches", c.stats.matches), ("totals", c.stats.totals)):
            flat = np.ascontiguousarray(arr, dtype=np.int64)
            offsets = np.arange(0, flat.size + 1, flat.shape[1], dtype=np.int32)
            cols[key].append(pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat.ravel())))
    if not result.cells:
        return pa.table({k: pa.array([]) for k in cols})
    return pa.table({k: pa.chunked_array(v) for k, v in cols.items()})  # one chunk per cell: no concatenated copy


def significance(result: JobResult) -> pa.Table:
    """One row per pair of systems x refset x variant x test (``delta`` = BLEU of b minus a)."""
    names = [*SIGNIFICANCE_COLUMNS, "system_version_a", "system_version_b", "p_holm", "n_samples", "seed",
             "score_a", "score_b"]
    cols: dict[str, list[Any]] = {k: [] for k in names}
    for row in result.differences:
        k = row.outcome
        for key, value in (("refset", row.refset), ("variant", row.variant), ("test", k.test),
                           ("system_a", row.a.name), ("system_b", row.b.name), ("delta", k.delta),
                           ("statistic", k.statistic), ("p_value", k.p_value), ("ci_low", k.ci_low),
                           ("ci_high", k.ci_high), ("system_version_a", _version(row.a.version)),
                           ("system_version_b", _version(row.b.version)), ("p_holm", k.p_holm),
                           ("n_samples", k.n_samples), ("seed", k.seed), ("score_a", k.value_a),
                           ("score_b", k.value_b)):
            cols[key].append(value)
    floats = {k: _FLOAT for k in ("delta", "statistic", "p_value", "ci_low", "ci_high", "p_holm", "score_a",
                                  "score_b")}
    return _table(cols, {**floats, "n_samples": pa.int64(), "seed": pa.int64(), **{
        k: pa.string() for k in ("refset", "variant", "test", "system_a", "system_b", "system_version_a",
                                 "system_version_b")}})


def correlations(result: JobResult) -> pa.Table:
    """One row per variant x refset x human kind x level x method x grouping x subset; ``baseline``: the trivial
    baseline of a WMT statistic on the same data (NaN for the correlations)."""
    cols: dict[str, list[Any]] = {k: [] for k in [*CORRELATION_COLUMNS, "system_version", "epsilon", "baseline"]}
    for row in result.correlations:
        r = row.correlation
        for key, value in (("dataset", result.dataset), ("refset", row.refset), ("variant", row.variant),
                           ("human_score", row.human_score), ("level", r.level), ("method", r.method),
                           ("grouping", r.grouping), ("include_human", row.include_human), ("value", r.value),
                           ("p_value", r.p_value), ("ci_low", r.ci_low), ("ci_high", r.ci_high), ("n", r.n),
                           ("system_version", ""), ("epsilon", row.epsilon), ("baseline", row.baseline)):
            cols[key].append(value)
    strings = {k: pa.string() for k in ("dataset", "refset", "variant", "human_score", "level", "method",
                                        "grouping", "system_version")}
    return _table(cols, {**strings, "include_human": pa.bool_(), "n": pa.int64(),
                         **{k: _FLOAT for k in ("value", "p_value", "ci_low", "ci_high", "epsilon", "baseline")}})


def variant_significance(result: JobResult) -> pa.Table:
    """Tests between two variants' agreement with one kind of human scores: the best variant's system-level
    Pearson r against each other's (``paired_bootstrap``), and (``meta_eval``) MTME's tests behind the ranking
    (``perm_both``, ``pairs``); ``delta`` = statistic of b minus a, ``p_value`` as each test defines it, ``p_holm``
    Holm-adjusted over the best variant's comparisons of one human kind (NaN for the ranking's tests: MTME's
    clusters read their raw p-values, every pair ``i < j`` of the variants sorted by value)."""
    names = ["human_score", "statistic", "test", "variant_a", "variant_b", "value_a", "value_b", "delta", "p_value",
             "p_holm", "ci_low", "ci_high", "n_samples", "seed"]
    cols: dict[str, list[Any]] = {k: [] for k in names}
    for row in result.variant_differences:
        k = row.outcome
        for key, value in zip(names, (row.human_score, row.statistic, k.test, k.a, k.b, k.value_a, k.value_b,
                                      k.delta, k.p_value, k.p_holm, k.ci_low, k.ci_high, k.n_samples, k.seed)):
            cols[key].append(value)
    return _table(cols, {**{k: pa.string() for k in names[:5]},
                         **{k: _FLOAT for k in ("value_a", "value_b", "delta", "p_value", "p_holm", "ci_low",
                                                "ci_high")},
                         "n_samples": pa.int64(), "seed": pa.int64()})


def variant_ranking(result: JobResult) -> pa.Table:
    """``meta_eval``: every variant's rank (1 = top significance cluster) by each statistic and human kind."""
    names = ["dataset", "human_score", "level", "statistic", "variant", "value", "rank"]
    cols: dict[str, list[Any]] = {k: [] for k in names}
    for r in result.rankings:
        for key, value in zip(names, (result.dataset, r.human_score, r.level, r.statistic, r.variant, r.value,
                                      r.rank)):
            cols[key].append(value)
    return _table(cols, {**{k: pa.string() for k in names[:5]}, "value": _FLOAT, "rank": pa.int64()})


def blocks(result: JobResult) -> pa.Table:
    """``paper_protocol``: per variant and system, BLEU of each block of the paper's protocol, its mean and
    standard deviation (rows in the protocol's order: by mean, best first)."""
    names = ["refset", "variant", "system", "system_version", "mean", "std", "block_scores"]
    cols: dict[str, list[Any]] = {k: [] for k in names}
    for b in result.blocks:
        for key, value in zip(names, (b.refset, b.variant, b.system.name, _version(b.system.version), b.mean, b.std,
                                      list(b.blocks))):
            cols[key].append(value)
    return _table(cols, {**{k: pa.string() for k in names[:4]}, "mean": _FLOAT, "std": _FLOAT,
                         "block_scores": pa.list_(_FLOAT)})


def human_kinds(result: JobResult) -> dict[str, dict[str, Any]]:
    """The tables' metadata on the kinds of human scores: direction and where the system scores came from."""
    return {h.name: {"higher_is_better": h.higher_is_better, "column": human_column(h.name),
                     "system_scores_from": sorted(set(h.sys_source.values()))} for h in result.inputs.human}


def table_metadata(result: JobResult, config_yaml: str = "") -> dict[str, str]:
    """What every table's schema metadata holds (as text; JSON for the structured values): the config, the
    experiment, the dataset, the full reference set, the kinds of human scores, the signatures, the input hashes.
    The figures read it back with the tables (:class:`~harness.job.figures.FigureTables`)."""
    meta: dict[str, Any] = {"config": config_yaml, "experiment": result.experiment, "dataset": result.dataset,
                            "full_refset": result.full_refset, "human_kinds": human_kinds(result),
                            "signatures": sorted({c.score.signature for c in result.cells}),
                            "inputs_sha256": result.inputs.input_hashes()}
    return {k: v if isinstance(v, str) else json.dumps(v, default=str) for k, v in meta.items()}


def build_tables(result: JobResult, segments: bool = True) -> dict[str, pa.Table]:
    """Every table of the job, by name (``segment_scores`` only with ``segment_table`` and ``segments``;
    ``variant_ranking`` with ``meta_eval``)."""
    out = {"system_scores": system_scores(result)}
    if result.spec.segment_table and segments:
        out["segment_scores"] = segment_scores(result)
    out["significance"] = significance(result)
    out["correlations"] = correlations(result)
    out["variant_significance"] = variant_significance(result)
    if result.spec.meta_eval:
        out["variant_ranking"] = variant_ranking(result)
    if result.blocks:
        out["blocks"] = blocks(result)
    return out
