"""Google's MQM annotations (google/wmt-mqm-human-evaluation): one row per error (or ``No-error``) a rater marked
in a segment of a system, ``system doc doc_id seg_id rater source target category severity [comment]``, tab
separated, no quoting. Scored as mt-metrics-eval's ``converters/score_mqm.py`` scores them: each error weighs by
the most specific match of ``severity[/category[/subcategory]]`` (case-insensitive) among the weights below, a
rater's score of a segment is the sum over its rows, the segment's score the mean over its raters, negated (0 =
no error, higher is better); a system's score is the mean over its segments.

The texts come from the rows: the source and each system's output (the ``<v>...</v>`` marks of error spans
removed; every row of a segment must then give the same text), on the segments every system has rows for, in ``seg_id`` order.
One system of the file, a human translation, serves as the reference (``reference``): it leaves the systems.
"""

from __future__ import annotations

import csv
import io
import re
from collections import defaultdict
from pathlib import Path
from typing import Mapping

from ..errors import InputError
from .dataset_writer import ImportedDataset, read_utf8, sha256_of

#: mt-metrics-eval's default weights (``score_mqm.py --weights``), the standard ones of Freitag et al. (2021).
WEIGHTS: dict[str, float] = {"major": 5.0, "minor": 1.0, "neutral": 0.0, "major/non-translation!": 25.0,
                             "minor/fluency/punctuation": 0.1}
COLUMNS = ("system", "doc", "doc_id", "seg_id", "rater", "source", "target", "category", "severity")
_SPAN = re.compile(r"</?v>")


def weight(severity: str, category: str, weights: Mapping[str, float] = WEIGHTS) -> float:
    """``score_mqm.Score``: the most specific weight of ``severity/category/...`` (0 if none matches)."""
    items = [x.lower() for x in [severity, *category.split("/")]]
    while items:
        key = "/".join(items)
        if key in weights:
            return weights[key]
        items = items[:-1]
    return 0.0


def parse_weights(spec: str) -> dict[str, float]:
    """``"Major:5 Minor:1 ..."`` (score_mqm.py's format) as a mapping."""
    out = {}
    for item in spec.split():
        key, sep, value = item.rpartition(":")
        try:
            out[key.lower()] = float(value)
        except ValueError:
            raise InputError(f"bad weight {item!r}: expected severity[/category]:number") from None
        if not sep or not key:
            raise InputError(f"bad weight {item!r}: expected severity[/category]:number")
    return out


def read_mqm(path: Path, reference: str | None, name: str | None = None, source_lang: str | None = None,
             target_lang: str | None = None, weights: Mapping[str, float] = WEIGHTS
             ) -> tuple[ImportedDataset, dict[str, dict[int, float]]]:
    """The dataset of one MQM TSV, and the segment scores by system and ``seg_id`` (to check against published
    averages)."""
    path = Path(path)
    text = read_utf8(path)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    header = next(reader, None)
    if header is None or any(c not in header for c in COLUMNS):
        raise InputError(f"expected a header with the columns {', '.join(COLUMNS)}", path, 1)
    at = {c: header.index(c) for c in COLUMNS}
    per_rater: dict[tuple[str, int], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    targets: dict[tuple[str, int], tuple[str, int]] = {}
    sources: dict[int, tuple[str, int]] = {}
    docs: dict[int, str] = {}
    for line, row in enumerate(reader, start=2):
        if len(row) < len(header) - 1 or len(row) > len(header):  # a trailing empty comment may be cut
            raise InputError(f"expected {len(header)} tab-separated fields, got {len(row)}", path, line)
        get = {c: row[i] if i < len(row) else "" for c, i in at.items()}
        try:
            seg = int(get["seg_id"])
        except ValueError:
            raise InputError(f"seg_id {get['seg_id']!r} is not an integer", path, line) from None
        system = get["system"]
        key = (system, seg)
        target = _SPAN.sub("", get["target"])
        first = targets.setdefault(key, (target, line))
        if first[0] != target:
            raise InputError(f"{system} segment {seg}: its text differs from line {first[1]}'s once the <v> marks "
                             "are removed", path, line)
        source = _SPAN.sub("", get["source"])  # a rater may mark a span of the source too
        src = sources.setdefault(seg, (source, line))
        if src[0] != source:
            raise InputError(f"segment {seg}: its source differs from line {src[1]}'s", path, line)
        docs.setdefault(seg, get["doc"])
        per_rater[key][get["rater"]] += weight(get["severity"], get["category"], weights)
    systems = sorted({s for s, _ in per_rater})
    if reference is None or reference not in systems:
        given = "no reference given" if reference is None else f"{reference!r} is not a system of the file"
        raise InputError(f"{given}: name the human translation to score against with --reference (the file's "
                         f"systems: {', '.join(systems)})", path)
    segments = sorted(set.intersection(*({s for (x, s) in per_rater if x == name_} for name_ in systems)))
    if not segments:
        raise InputError("no segment has rows of every system", path)
    scores = {key: -sum(r.values()) / len(r) for key, r in per_rater.items()}
    mt = [s for s in systems if s != reference]
    notes = []
    dropped = sorted({seg for _, seg in per_rater} - set(segments))
    if dropped:
        notes.append(f"{len(dropped)} segment(s) without rows of every system left out")
    consecutive = all(b == a + 1 for a, b in zip(segments, segments[1:]))
    data = ImportedDataset(
        name=name or path.name.removesuffix(".tsv"),
        title=f"MQM annotations {path.name}",
        source_lang=source_lang, target_lang=target_lang,
        source=[sources[s][0] for s in segments],
        refs={reference: [targets[(reference, s)][0] for s in segments]},
        systems={m: [targets[(m, s)][0] for s in segments] for m in mt},
        human_systems=[],
        human={"mqm": ({m: [scores[(m, s)] for s in segments] for m in mt}, None, True)},
        metrics={},
        documents=[docs[s] for s in segments] if consecutive else None,
        primary_ref=reference,
        provenance={"format": "google MQM TSV", "file": str(path.resolve()), "file_sha256": sha256_of(path),
                    "weights": dict(weights), "reference": reference,
                    "seg_ids": f"{segments[0]}..{segments[-1]} ({len(segments)} segments)"},
        notes=notes,
    )
    by_seg: dict[str, dict[int, float]] = defaultdict(dict)
    for (system, seg), value in scores.items():
        by_seg[system][seg] = value
    return data, dict(by_seg)


def check_averages(scores: Mapping[str, Mapping[int, float]], path: Path, names: Mapping[str, str] | None = None,
                   tolerance: float = 5e-7) -> int:
    """Compare with a published ``*.avg_seg_scores.tsv`` (``system score seg_id``, whitespace separated, ``None``
    where unrated; ``names``: its system names -> the TSV's): every rated segment must agree to the file's
    rounding. Returns the number of segments compared."""
    names = names or {}
    n = 0
    for line, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        fields = raw.split()
        if line == 1 or not fields:
            continue
        if len(fields) != 3:
            raise InputError("expected 'system score seg_id'", path, line)
        system, value, seg = names.get(fields[0], fields[0]), fields[1], int(fields[2])
        ours = scores.get(system, {}).get(seg)
        if value == "None":
            if ours is not None:
                raise InputError(f"{system} segment {seg}: unrated there, {ours:.6f} here", path, line)
            continue
        if ours is None or abs(ours - float(value)) > tolerance:
            raise InputError(f"{system} segment {seg}: {value} there, {ours} here", path, line)
        n += 1
    return n
