"""A comparison's files and numbers: the page's name, its tables as Arrow (``<page stem>.<table>.parquet``) with their
metadata, the JSON of ``harness-compare --format json`` and the LaTeX of its breakdowns (``--latex``, booktabs).
Two systems (a :class:`~.result.ComparisonResult`) or more (a :class:`~.result.ComparisonSet`: the tables hold one
block of rows per pair, the baseline against each other system). Read the result only; writing is the sinks' job
(:func:`harness.sinks.pages.write_page`, with :func:`page_contents`) or the caller's."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Sequence

from ...version import __version__
from .page import render_page
from .result import (
    ALPHA,
    BucketGroup,
    BucketTable,
    ComparisonResult,
    ComparisonSet,
    Example,
    ExampleList,
    PairedRow,
    SystemSummary,
)

Comparison = ComparisonResult | ComparisonSet

_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]+")


def page_name(label_a: str, label_b: str) -> str:
    """``compare-A-vs-B.html`` (labels made safe for a file name)."""
    safe = [_UNSAFE.sub("_", x).strip("._") or "system" for x in (label_a, label_b)]
    return f"compare-{safe[0]}-vs-{safe[1]}.html"


def table_files(page: str) -> dict[str, str]:
    """``<page stem>.<table>.parquet`` for every comparison table of the page ``page`` (a file name)."""
    stem = page.rsplit(".", 1)[0]
    return {name: f"{stem}.{name}.parquet" for name in TABLE_NAMES}


def _as_set(result: Comparison) -> ComparisonSet:
    return result if isinstance(result, ComparisonSet) else ComparisonSet.of_pair(result)


def table_metadata(result: Comparison, page: str) -> dict[str, str]:
    """The Parquet schema metadata of a comparison's tables: the signature, the resampling, the systems (``system_a``
    the baseline, ``system_b`` the other or the others joined with ``, ``, ``systems`` all as a JSON list), the
    page."""
    s = _as_set(result)
    return {"signature": s.signature, "seed": str(s.seed), "n_samples": str(s.n_samples),
            "system_a": s.labels[0], "system_b": ", ".join(s.labels[1:]), "systems": json.dumps(list(s.labels)),
            "page": page}


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
            "ci_high": _none(row.delta_high), "p_value": _none(row.p_value), "n_segments_b": row.n_segments_b,
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


def comparison_tables(result: Comparison) -> dict[str, Any]:
    """The numbers of the page as Arrow tables (:data:`TABLE_NAMES`): ``systems`` (one row per side),
    ``buckets`` (every paired row, long format: ``group``, ``bucket``, ``value_a``/``value_b`` with their
    intervals, ``delta`` = b - a with ``ci_low``/``ci_high`` and ``p_value``; ``n_segments_b`` where each system
    has its own segments), ``ngrams`` and ``examples``; every row carries ``system_a``/``system_b`` and their
    versions. More than two systems: one block of rows per pair, the baseline against each other system."""
    import pyarrow as pa

    if isinstance(result, ComparisonSet):
        blocks = [comparison_tables(p) for p in result.pairs]
        return {name: pa.concat_tables([b[name] for b in blocks]) for name in TABLE_NAMES}

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
                     ("p_value", f64), ("n_segments_b", i64), ("ref_words", i64), ("words_a", i64),
                     ("words_b", i64), ("matched_a", i64), ("matched_b", i64)]
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


def set_json(result: ComparisonSet) -> dict[str, Any]:
    """The numbers of several systems as JSON-ready values: the systems (the baseline first), each one's headline
    test against the baseline (``comparisons``), and every pair's :func:`to_json` (``pairs``)."""
    first = result.first
    return {
        "dataset": result.dataset, "refset": result.refset, "variant": result.variant,
        "baseline": result.labels[0],
        "n_segments": result.n_segments,
        "references": list(result.ref_names),
        "signature": result.signature,
        "n_samples": result.n_samples,
        "seed": result.seed,
        "systems": [_system_dict("a" if k == 0 else "b", s, first) for k, s in enumerate(result.systems)],
        "comparisons": [{"system_a": p.a.label, "system_b": p.b.label, "delta": _none(p.headline.delta),
                         "ci_low": _none(p.headline.delta_low), "ci_high": _none(p.headline.delta_high),
                         "p_value": _none(p.headline.p_value), "significant": p.significant} for p in result.pairs],
        "pairs": [to_json(p) for p in result.pairs],
    }


def page_contents(result: Comparison, page: Path) -> tuple[str, dict[str, tuple[Path, Any]], dict[str, str]]:
    """What :func:`harness.sinks.pages.write_page` writes for the page at ``page``: its HTML, every table with its
    file beside the page, and the tables' metadata."""
    files = table_files(page.name)
    tables = {name: (page.with_name(files[name]), table) for name, table in comparison_tables(result).items()}
    return render_page(result), tables, table_metadata(result, page.name)


# --------------------------------------------------------------------------------------------------------------
# LaTeX (booktabs)
# --------------------------------------------------------------------------------------------------------------

_TEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", "\u2212": "-", "\u2013": "--"}
_TEX_RE = re.compile("|".join(re.escape(k) for k in _TEX_SPECIAL))
#: Bucket labels that are numbers and ranges (``<10``, ``[10,20)``, ``>=21``, ``-5``): set in math mode.
_MATH_LABEL = re.compile(r"^[<>=]*-?[0-9.]+$|^\[-?[0-9.]+,-?[0-9.]+\)$")
_METRIC = {"bleu": "BLEU", "f_measure": "F-measure", "precision": "precision", "human": "mean score"}
#: The first column's heading of each breakdown.
_BUCKET = {"length": "Ref.\\ length", "length_diff": "Out $-$ ref", "sentence_bleu": "Sent.\\ BLEU",
           "word_frequency": "Frequency", "precision": "Order", "human_length": "Ref.\\ length",
           "human_sentence_bleu": "Sent.\\ BLEU"}
#: Breakdowns of the whole test set (every row has every segment: no segment count).
_WHOLE = ("word_frequency", "precision")


def tex(text: object) -> str:
    """Text escaped for LaTeX (every special character of text mode)."""
    return _TEX_RE.sub(lambda m: _TEX_SPECIAL[m.group()], str(text))


def tex_bucket(label: str) -> str:
    """A bucket label: numbers and ranges in math mode (``$<10$``, ``$[10,20)$``, ``$\\geq 21$``), others as
    text."""
    if _MATH_LABEL.match(label):
        return "$" + label.replace(">=", r"\geq ") + "$"
    return tex(label)


def _tex_num(x: float | None, digits: int, sign: bool = False, star: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "--"
    x = float(x) + 0.0
    if round(x, digits) == 0:
        x = 0.0
    text = f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"
    return f"${text}{'^{*}' if star else ''}$" if sign or star or text.startswith("-") else text


def _tex_table(caption: str, label: str, spec: str, head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["\\begin{table}[htbp]", "\\centering", "\\small", f"\\begin{{tabular}}{{{spec}}}", "\\toprule",
             *head, "\\midrule", *(" & ".join(r) + " \\\\" for r in rows), "\\bottomrule", "\\end{tabular}",
             f"\\caption{{{caption}}}", f"\\label{{{label}}}", "\\end{table}"]
    return "\n".join(lines)


def _paired_latex(table: BucketTable, labels: Sequence[str], n_samples: int, seed: int | None, label: str) -> str:
    d = 3 if table.metric == "human" else 2
    words = bool(table.lines) and table.lines[0].first.words is not None
    whole = table.key in _WHOLE
    others = labels[1:]
    cols = [_BUCKET.get(table.key, "Bucket"), *([] if whole else ["Segments"]), *(["Ref.\\ words"] if words else []),
            *(tex(x) for x in labels),
            *(f"$\\Delta$ {tex(x)}" if len(others) > 1 else "$\\Delta$" for x in others)]
    rows = []
    for line in table.lines:
        base = line.first
        row = [tex_bucket(line.bucket), *([] if whole else [f"{base.n_segments:,}".replace(",", "{,}")])]
        if words:
            row.append("--" if base.words is None else f"{base.words.ref:,}".replace(",", "{,}"))
        row.append(_tex_num(base.a, d))
        row += ["--" if r is None else _tex_num(r.b, d) for r in line.rows]
        row += ["--" if r is None else _tex_num(r.delta, d, True, _starred(r)) for r in line.rows]
        rows.append(row)
    diff = (f"$\\Delta$: {tex(others[0])} minus {tex(labels[0])}" if len(others) == 1 else
            f"$\\Delta$: each system minus the baseline {tex(labels[0])}")
    judged = " Mean score on the segments judged for both systems." if table.metric == "human" else ""
    caption = (f"{tex(table.title)}.{judged} {diff}; $^{{*}}$: $p \\leq {ALPHA:g}$, paired bootstrap "
               f"({n_samples:,} resamples, seed {tex(seed)}).")
    return _tex_table(caption, label, "l" + "r" * (len(cols) - 1), [" & ".join(cols) + " \\\\"], rows)


def _starred(row: PairedRow) -> bool:
    return math.isfinite(row.p_value) and not row.p_value > ALPHA


def _own_latex(table: BucketTable, labels: Sequence[str], label: str) -> str:
    d = 3 if table.metric == "human" else 2
    n = len(labels)
    metric = _METRIC.get(table.metric, tex(table.metric))
    top = " & ".join(["", *(f"\\multicolumn{{2}}{{c}}{{{tex(x)}}}" for x in labels)]) + " \\\\"
    rules = " ".join(f"\\cmidrule(lr){{{2 + 2 * k}-{3 + 2 * k}}}" for k in range(n))
    sub = " & ".join([_BUCKET.get(table.key, "Bucket"), *(["Segments", metric] * n)]) + " \\\\"
    rows = []
    for line in table.lines:
        base = line.first
        own = [(base.n_segments, base.a)] + [(0, math.nan) if r is None else (r.n_segments_b or 0, r.b)
                                             for r in line.rows]
        rows.append([tex_bucket(line.bucket), *(x for c, v in own for x in (f"{c:,}".replace(",", "{,}"),
                                                                          _tex_num(v, d) if c else "--"))])
    caption = (f"{tex(table.title)}: each system's segments in the bucket and its {metric} on them (each "
               "system's own segments, so no paired difference).")
    return _tex_table(caption, label, "l" + "rr" * n, [top, rules, sub], rows)


def latex_tables(result: Comparison, prefix: str = "tab:compare") -> str:
    """Every breakdown of a comparison as a booktabs ``table`` (``\\usepackage{booktabs}``): a column per system
    and the difference of each to the baseline (starred when ``p <= 0.05``); the length-difference buckets give
    each system's count and value on its own segments; the human breakdowns one table per pair. Labels
    ``<prefix>-<key>`` (``-<j>`` per pair for the human ones)."""
    s = _as_set(result)
    labels = s.labels
    out = [f"% harness-compare (bleu-harness {tex(__version__)}): {' vs '.join(labels)}",
           f"% {s.signature}", "% needs \\usepackage{booktabs}", ""]
    for t in s.tables:
        if not t.lines:
            continue
        key = f"{prefix}-{t.key}"
        out += [_own_latex(t, labels, key) if t.per_system else _paired_latex(t, labels, s.n_samples, s.seed, key),
                ""]
    for j, p in enumerate(s.pairs, start=1):
        if p.human is None:
            continue
        for g in (p.human.by_length, p.human.by_sentence_bleu):
            if g.rows:
                key = f"{prefix}-{g.key}" + (f"-{j}" if len(s.pairs) > 1 else "")
                out += [_paired_latex(BucketTable.of_group(g), [p.a.label, p.b.label], s.n_samples, s.seed, key), ""]
    return "\n".join(out)
