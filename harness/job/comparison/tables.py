"""A comparison's files and numbers: the page's name, its tables as Arrow (``<page stem>.<table>.parquet``) with their
metadata, and the JSON of ``harness-compare --format json``. Read the result only; writing is the sinks' job
(:func:`harness.sinks.pages.write_page`, with :func:`page_contents`)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from .page import render_page
from .result import BucketGroup, ComparisonResult, Example, ExampleList, PairedRow, SystemSummary

_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]+")


def page_name(label_a: str, label_b: str) -> str:
    """``compare-A-vs-B.html`` (labels made safe for a file name)."""
    safe = [_UNSAFE.sub("_", x).strip("._") or "system" for x in (label_a, label_b)]
    return f"compare-{safe[0]}-vs-{safe[1]}.html"


def table_files(page: str) -> dict[str, str]:
    """``<page stem>.<table>.parquet`` for every comparison table of the page ``page`` (a file name)."""
    stem = page.rsplit(".", 1)[0]
    return {name: f"{stem}.{name}.parquet" for name in TABLE_NAMES}


def table_metadata(result: ComparisonResult, page: str) -> dict[str, str]:
    """The Parquet schema metadata of a comparison's tables: the signature, the resampling, the pair, the page."""
    return {"signature": result.signature, "seed": str(result.seed), "n_samples": str(result.n_samples),
            "system_a": result.a.label, "system_b": result.b.label, "page": page}


#: The tables of a comparison: ``<page stem>.<name>.parquet``.
TABLE_NAMES: tuple[str, ...] = ("systems", "buckets", "ngrams", "examples")


def _none(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else float(x)


def _pair_columns(result: ComparisonResult) -> dict[str, str]:
    return {"dataset": result.dataset, "refset": result.refset, "variant": result.variant,
            "system_a": result.a.name, "system_version_a": result.a.version or "",
            "system_b": result.b.name, "system_version_b": result.b.version or ""}


def _row_dict(group: str, title: str, metric: str, position: int, row: PairedRow) -> dict[str, Any]:
    w = row.words
    return {"group": group, "title": title, "metric": metric, "position": position, "bucket": row.bucket,
            "n_segments": row.n_segments, "value_a": _none(row.a), "value_b": _none(row.b),
            "ci_low_a": _none(row.a_low), "ci_high_a": _none(row.a_high), "ci_low_b": _none(row.b_low),
            "ci_high_b": _none(row.b_high), "delta": _none(row.delta), "ci_low": _none(row.delta_low),
            "ci_high": _none(row.delta_high), "p_value": _none(row.p_value),
            "ref_words": None if w is None else w.ref, "words_a": None if w is None else w.out_a,
            "words_b": None if w is None else w.out_b, "matched_a": None if w is None else w.matched_a,
            "matched_b": None if w is None else w.matched_b}


def bucket_records(result: ComparisonResult) -> list[dict[str, Any]]:
    """Every paired row: the headline (group ``overall``), the BLEU buckets, words, precisions, human buckets."""
    out = [_row_dict("overall", "Corpus BLEU", "bleu", 0, result.headline)]
    if result.human is not None:
        out.append(_row_dict("human_overall", f"Mean {result.human.name}", "human", 0, result.human.overall))
    for g in result.groups:
        out += [_row_dict(g.key, g.title, g.metric, i, r) for i, r in enumerate(g.rows)]
    return out


def _system_dict(side: str, s: SystemSummary, result: ComparisonResult) -> dict[str, Any]:
    sc = s.score
    return {"side": side, "system": s.name, "system_version": s.version or "", "bleu": sc.score,
            "ci_low": _none(s.ci_low), "ci_high": _none(s.ci_high), "precisions": list(sc.precisions), "bp": sc.bp,
            "ratio": sc.ratio, "hyp_len": float(sc.hyp_len), "ref_len": float(sc.ref_len), "counts": list(sc.counts),
            "totals": list(sc.totals), "signature": sc.signature, "sha256": s.sha256, "human": _none(s.human),
            "n_segments": result.n_segments}


def _example_dict(lst: str, rank: int, e: Example) -> dict[str, Any]:
    return {"list": lst, "rank": rank, "seg_id": e.seg_id, "ref_len": e.ref_len, "sentence_bleu_a": e.sentence_a,
            "sentence_bleu_b": e.sentence_b, "delta": e.delta, "human_a": _none(e.human_a),
            "human_b": _none(e.human_b), "source": e.source, "references": list(e.references),
            "output_a": e.output_a, "output_b": e.output_b, "differs_a": [d for _, d in e.words_a],
            "differs_b": [d for _, d in e.words_b]}


def example_lists(result: ComparisonResult) -> tuple[ExampleList, ...]:
    """The example lists in display order (the human disagreements last, when there are human scores)."""
    return result.examples + ((result.human.disagreements,) if result.human is not None else ())


def comparison_tables(result: ComparisonResult) -> dict[str, Any]:
    """The numbers of the page as Arrow tables (:data:`TABLE_NAMES`): ``systems`` (one row per side),
    ``buckets`` (every paired row, long format: ``group``, ``bucket``, ``value_a``/``value_b`` with their
    intervals, ``delta`` = b - a with ``ci_low``/``ci_high`` and ``p_value``), ``ngrams`` and ``examples``;
    every row carries ``system_a``/``system_b`` and their versions."""
    import pyarrow as pa

    pair = _pair_columns(result)

    def table(rows: list[dict[str, Any]], schema: list[tuple[str, Any]]) -> Any:
        cols = {k: [r[k] for r in rows] for k, _ in schema}
        fields = [pa.field(k, t) for k, t in schema]
        lead = {k: pa.array([v] * len(rows), pa.string()) for k, v in pair.items()}
        body = {k: pa.array(cols[k], t) for k, t in schema}
        return pa.Table.from_pydict({**lead, **body}, schema=pa.schema(
            [pa.field(k, pa.string()) for k in pair] + fields))

    f64, i64, s = pa.float64(), pa.int64(), pa.string()
    systems = [_system_dict("a", result.a, result), _system_dict("b", result.b, result)]
    system_schema = [("side", s), ("system", s), ("system_version", s), ("bleu", f64), ("ci_low", f64),
                     ("ci_high", f64), ("precisions", pa.list_(f64)), ("bp", f64), ("ratio", f64),
                     ("hyp_len", f64), ("ref_len", f64), ("counts", pa.list_(i64)), ("totals", pa.list_(i64)),
                     ("signature", s), ("sha256", s), ("human", f64), ("n_segments", i64)]
    bucket_schema = [("group", s), ("title", s), ("metric", s), ("position", i64), ("bucket", s),
                     ("n_segments", i64), ("value_a", f64), ("value_b", f64), ("ci_low_a", f64), ("ci_high_a", f64),
                     ("ci_low_b", f64), ("ci_high_b", f64), ("delta", f64), ("ci_low", f64), ("ci_high", f64),
                     ("p_value", f64), ("ref_words", i64), ("words_a", i64), ("words_b", i64), ("matched_a", i64),
                     ("matched_b", i64)]
    ngram_rows = [{"kind": lst.kind, "favours": result.a.label if lst.favours == "a" else result.b.label,
                   "favours_side": lst.favours, "rank": i, "ngram": r.ngram, "order": r.order,
                   "count_a": r.count_a, "count_b": r.count_b, "log_ratio": r.log_ratio}
                  for lst in result.ngrams for i, r in enumerate(lst.rows, start=1)]
    ngram_schema = [("kind", s), ("favours", s), ("favours_side", s), ("rank", i64), ("ngram", s), ("order", i64),
                    ("count_a", i64), ("count_b", i64), ("log_ratio", f64)]
    example_rows = [_example_dict(lst.key, i, e) for lst in example_lists(result)
                    for i, e in enumerate(lst.items, start=1)]
    example_schema = [("list", s), ("rank", i64), ("seg_id", i64), ("ref_len", i64), ("sentence_bleu_a", f64),
                      ("sentence_bleu_b", f64), ("delta", f64), ("human_a", f64), ("human_b", f64), ("source", s),
                      ("references", pa.list_(s)), ("output_a", s), ("output_b", s),
                      ("differs_a", pa.list_(pa.bool_())), ("differs_b", pa.list_(pa.bool_()))]
    return {"systems": table(systems, system_schema), "buckets": table(bucket_records(result), bucket_schema),
            "ngrams": table(ngram_rows, ngram_schema), "examples": table(example_rows, example_schema)}


def to_json(result: ComparisonResult) -> dict[str, Any]:
    """The numbers as JSON-ready values (NaN -> null): systems, the headline test, every bucket group, the n-gram
    lists and the examples."""
    def group(g: BucketGroup) -> dict[str, Any]:
        return {"key": g.key, "title": g.title, "metric": g.metric, "note": g.note,
                "rows": [{k: v for k, v in _row_dict(g.key, g.title, g.metric, i, r).items()
                          if k not in ("group", "title", "metric")} for i, r in enumerate(g.rows)]}

    head = _row_dict("overall", "Corpus BLEU", "bleu", 0, result.headline)
    out: dict[str, Any] = {
        **_pair_columns(result),
        "n_segments": result.n_segments,
        "references": list(result.ref_names),
        "signature": result.signature,
        "n_samples": result.n_samples,
        "seed": result.seed,
        "systems": [_system_dict("a", result.a, result), _system_dict("b", result.b, result)],
        "paired_bs": {"delta": head["delta"], "ci_low": head["ci_low"], "ci_high": head["ci_high"],
                      "p_value": head["p_value"], "significant": result.significant},
        "frequency_source": result.frequency_source,
        "groups": [group(g) for g in result.groups],
        "ngrams": [{"kind": lst.kind, "favours": result.a.label if lst.favours == "a" else result.b.label,
                    "rows": [{"ngram": r.ngram, "order": r.order, "count_a": r.count_a, "count_b": r.count_b,
                              "log_ratio": r.log_ratio} for r in lst.rows]} for lst in result.ngrams],
        "examples": {lst.key: [_example_dict(lst.key, i, e) for i, e in enumerate(lst.items, start=1)]
                     for lst in example_lists(result)},
        "human": None,
    }
    if result.human is not None:
        h = _row_dict("human_overall", "", "human", 0, result.human.overall)
        out["human"] = {"name": result.human.name, "n_judged": result.human.n_judged,
                        "mean_a": h["value_a"], "mean_b": h["value_b"], "delta": h["delta"],
                        "ci_low": h["ci_low"], "ci_high": h["ci_high"], "p_value": h["p_value"]}
    return out


def page_contents(result: ComparisonResult, page: Path) -> tuple[str, dict[str, tuple[Path, Any]], dict[str, str]]:
    """What :func:`harness.sinks.pages.write_page` writes for the page at ``page``: its HTML, every table with its
    file beside the page, and the tables' metadata."""
    files = table_files(page.name)
    tables = {name: (page.with_name(files[name]), table) for name, table in comparison_tables(result).items()}
    return render_page(result), tables, table_metadata(result, page.name)
