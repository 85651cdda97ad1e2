"""Scores of metrics the harness does not compute (COMET, BLEURT, MetricX, ...), read from a dataset folder's
``metrics/NAME/`` (``seg.tsv``: ``system<TAB>seg_id<TAB>score``; ``sys.tsv``: ``system<TAB>score``; the formats of
the human scores; ``meta.json``: ``higher_is_better``, default true), checked, and kept as
:class:`~harness.core.families.ImportedScores` for the study to rank beside BLEU and chrF.

A metric must score every MT system of the job (at system level, and at every segment if it has segment scores):
a study compares the metrics on the same systems. What is missing is one error naming the file and the system,
and how to leave the metric or the system out. A human translation it does not score (a reference-based metric
does not score its own reference) is allowed: the metric is then compared on the MT systems only.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

import numpy as np

from ..core.families import ImportedScores
from ..errors import ConfigError, InputError
from .dataset import METRICS_DIR, MetricFiles
from .human import read_seg_tsv, read_sys_tsv


def _sha256(paths: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for p in paths:
        digest.update(hashlib.sha256(p.read_bytes()).digest())
    return digest.hexdigest()


def choose_metrics(found: Sequence[MetricFiles], select: str | Sequence[str]) -> list[MetricFiles]:
    """``metrics=all`` (every metric of the dataset), ``none``, or a list of names."""
    if select == "all":
        return list(found)
    if select == "none":
        return []
    names = [m.name for m in found]
    for name in select:
        if name not in names:
            raise ConfigError("metrics", f"the dataset has no metric {name!r} (expected {METRICS_DIR}/{name}/)",
                              ["all", "none", *names], got=name)
    return [m for m in found if m.name in select]


def read_metric(files: MetricFiles, labels: Sequence[str], all_systems: Sequence[str], n_segments: int,
                human: Sequence[str] = ()) -> ImportedScores:
    """One metric's scores for the systems ``labels`` (``all_systems``: every system the dataset has, which the
    files may name). Without ``sys.tsv`` a system's score is the mean of its segment scores (a metric's system
    score is often not that mean, e.g. corpus BLEU; ``sys.tsv`` is then the score). A human translation among
    ``human`` may be missing (a reference-based metric does not score the reference it used): the metric is then
    compared on the MT systems only."""
    found = read_seg_tsv(files.seg_path, systems=all_systems, n_segments=n_segments) \
        if files.seg_path is not None else None
    rows = read_sys_tsv(files.sys_path, systems=all_systems, n_segments=n_segments) \
        if files.sys_path is not None else None
    named = set(found or ()) | set(rows or ())
    lacking = [label for label in labels if label in human and label not in named]
    labels = [label for label in labels if label not in lacking]
    hint = ("score it, leave the system out with dataset.systems=[...], or leave the metric out with "
            "metrics=none or metrics=[...]")
    seg = None
    if found is not None:
        for label in labels:
            values = found.get(label)
            scored = 0 if values is None else int(np.count_nonzero(~np.isnan(values)))
            if scored < n_segments:
                raise InputError(f"metric {files.name!r} scores {scored} of {n_segments} segments of system "
                                 f"{label!r}: segment scores must cover every segment; {hint}", files.seg_path)
        seg = {label: found[label] for label in labels}
    if rows is not None:
        for label in labels:
            if label not in rows:
                raise InputError(f"metric {files.name!r} has no score for system {label!r}; {hint}", files.sys_path)
        system = {label: rows[label][0] for label in labels}
    else:
        assert seg is not None
        system = {label: float(np.mean(seg[label])) for label in labels}
    sign = 1.0 if files.higher_is_better else -1.0
    if seg is not None and sign < 0:
        seg = {label: _readonly(-v) for label, v in seg.items()}
    paths = [p for p in (files.seg_path, files.sys_path) if p is not None]
    return ImportedScores(files.name, {label: sign * v for label, v in system.items()}, seg, n_segments,
                          not files.higher_is_better, _sha256(paths),
                          ", ".join(f"{METRICS_DIR}/{files.name}/{p.name}" for p in paths), tuple(lacking))


def _readonly(values: np.ndarray) -> np.ndarray:
    values.flags.writeable = False
    return values
