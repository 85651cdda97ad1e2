"""google-research/mt-metrics-eval's data layout, read as its ``data.py`` reads it, for one language pair of one
evaluation set (e.g. ``mt-metrics-eval-v2/wmt21.news``, ``en-de``):

- ``documents/LP.docs``: ``DOMAIN DOC`` per line (the document of each segment);
- ``sources/LP.txt``, ``references/LP.REF.txt``, ``system-outputs/LP/SYS.txt``: one segment per line, each line
  right-stripped, ``[No translation supplied]`` a missing translation (written as an empty line, and counted in
  the import's notes); a system named like a reference is that human translation;
- ``human-scores/LP.NAME.LEVEL.score`` and ``metric-scores/LP/NAME-REF.LEVEL.score``: ``SYSTEM SCORE`` per line
  (``None``: no score), one line per system at level ``sys`` and one per segment, in order, at level ``seg``
  (``doc`` and ``domain`` levels are not imported; the notes say so).

Checked as mt-metrics-eval checks them (every text as long as the source, known systems, the right number of
scores; no ``None`` in a metric's scores); a problem is one error naming the file and line. A metric missing a
system other than the references it used (which mt-metrics-eval would pad with zeros) is left out, with a note.
"""

from __future__ import annotations

import io
import math
import re
from pathlib import Path

from ..errors import InputError
from .dataset_writer import ImportedDataset, read_utf8, sha256_of

#: mt-metrics-eval's marker of a missing translation.
NO_TRANSLATION = "[No translation supplied]"
LEVELS = ("sys", "seg")


def read_lines(path: Path) -> list[str | None]:
    """``data._ReadTextFile``: lines split as Python's text mode splits them, right-stripped, the missing
    translation marker as None."""
    text = read_utf8(path)
    out: list[str | None] = []
    for line in io.StringIO(text, newline=None):
        line = line.rstrip()
        out.append(None if line == NO_TRANSLATION else line)
    return out


def read_scores(path: Path, n_items: int, systems: set[str], what: str) -> dict[str, list[float | None]]:
    """``data.ReadScoreFile`` with ``CheckScores``' checks: ``SYSTEM SCORE`` lines, ``n_items`` per system."""
    out: dict[str, list[float | None]] = {}
    lines = read_lines(path)
    for i, line in enumerate(lines, start=1):
        fields = (line or "").split()
        if len(fields) != 2:
            raise InputError(f"expected 'SYSTEM SCORE', got {len(fields)} fields", path, i)
        system, text = fields
        if system not in systems:
            raise InputError(f"unknown system {system!r} in {what} (not under system-outputs/)", path, i)
        if text == "None":
            value = None
        else:
            try:
                value = float(text)
            except ValueError:
                raise InputError(f"score {text!r} is not a number", path, i) from None
            if not math.isfinite(value):
                raise InputError(f"score {text!r} is not finite", path, i)
        out.setdefault(system, []).append(value)
    for system, values in out.items():
        if len(values) != n_items:
            raise InputError(f"{what}: system {system!r} has {len(values)} scores, expected {n_items}", path)
    return out


def _single(scores: dict[str, list[float | None]]) -> dict[str, float]:
    return {s: v[0] for s, v in scores.items() if v[0] is not None}


def read_mtme(root: Path, lp: str, name: str | None = None) -> tuple[ImportedDataset, dict[str, str]]:
    """One language pair of an mt-metrics-eval evaluation set (``root`` is e.g. ``.../wmt21.news``), and where
    each written text came from."""
    root = Path(root)
    if not re.fullmatch(r"[A-Za-z_]+-[A-Za-z_]+", lp):
        raise InputError(f"expected a language pair SRC-TGT (e.g. en-de), got {lp!r}")
    for sub in ("sources", "references", "system-outputs"):
        if not (root / sub).is_dir():
            raise InputError(f"not an mt-metrics-eval evaluation set: no {sub}/ (expected e.g. "
                             ".../mt-metrics-eval-v2/wmt21.news)", root)
    files: dict[str, str] = {}
    origin: dict[str, str] = {}

    def text(path: Path) -> list[str | None]:
        if not path.is_file():
            raise InputError("not found", path)
        files[str(path.relative_to(root))] = sha256_of(path)
        return read_lines(path)

    source = text(root / "sources" / f"{lp}.txt")
    n = len(source)
    refs_raw: dict[str, list[str | None]] = {}
    for path in sorted((root / "references").glob(f"{lp}.*.txt")):
        ref = path.name.split(".")[-2]
        refs_raw[ref] = text(path)
        origin[f"refs/{ref}.txt"] = str(path)
    if not refs_raw:
        raise InputError(f"no references of {lp} (expected references/{lp}.REF.txt)", root / "references")
    systems_raw: dict[str, list[str | None]] = {}
    out_dir = root / "system-outputs" / lp
    for path in sorted(out_dir.glob("*.txt")) if out_dir.is_dir() else []:
        systems_raw[path.name[:-len(".txt")]] = text(path)
        origin[f"systems/{path.name}"] = str(path)
    if not systems_raw:
        raise InputError(f"no system outputs of {lp}", out_dir)
    for kind, texts in (("reference", refs_raw), ("system output", systems_raw)):
        for nm, lines in texts.items():
            if len(lines) != n:
                raise InputError(f"{kind} {nm} has {len(lines)} lines, the source {n}",
                                 origin.get(f"refs/{nm}.txt") or origin.get(f"systems/{nm}.txt"))
    notes: list[str] = []

    def filled(nm: str, lines: list[str | None]) -> list[str]:
        missing = sum(line is None for line in lines)
        if missing:
            notes.append(f"{nm}: {missing} missing translation(s) ({NO_TRANSLATION!r}) written as empty lines")
        return ["" if line is None else line for line in lines]

    documents = None
    docs_path = root / "documents" / f"{lp}.docs"
    if docs_path.is_file():
        doc_lines = text(docs_path)
        if len(doc_lines) != n:
            raise InputError(f"{len(doc_lines)} lines, the source {n}", docs_path)
        documents = []
        for i, line in enumerate(doc_lines, start=1):
            fields = (line or "").split()
            if len(fields) != 2:
                raise InputError("expected 'DOMAIN DOC'", docs_path, i)
            documents.append(fields[1])
    names = set(systems_raw)
    human: dict[str, tuple[dict[str, list[float | None]] | None, dict[str, float] | None, bool]] = {}
    for path in sorted((root / "human-scores").glob(f"{lp}.*.score")):
        parts = path.name.split(".")
        kind, level = ".".join(parts[1:-2]), parts[-2]
        if level not in LEVELS:
            notes.append(f"human-scores/{path.name}: {level}-level scores not imported")
            continue
        files[str(path.relative_to(root))] = sha256_of(path)
        scores = read_scores(path, 1 if level == "sys" else n, names, f"human score {kind}")
        seg, sys_, _ = human.get(kind, (None, None, True))
        human[kind] = (scores if level == "seg" else seg, _single(scores) if level == "sys" else sys_, True)
    metrics: dict[str, tuple[dict[str, list[float]] | None, dict[str, float] | None]] = {}
    metric_dir = root / "metric-scores" / lp
    for path in sorted(metric_dir.glob("*.score")) if metric_dir.is_dir() else []:
        metric, level, _ = path.name.rsplit(".", 2)
        if level not in LEVELS:
            notes.append(f"metric-scores/{lp}/{path.name}: {level}-level scores not imported")
            continue
        files[str(path.relative_to(root))] = sha256_of(path)
        scores = read_scores(path, 1 if level == "sys" else n, names, f"metric {metric}")
        for system, values in scores.items():
            if any(v is None for v in values):
                raise InputError(f"metric {metric}: None among the scores of {system!r} (mt-metrics-eval allows "
                                 "none)", path)
        refs_used = set(refs_raw) if metric.rsplit("-", 1)[-1] == "all" else set(metric.rsplit("-", 1)[-1].split("."))
        lacking = sorted(s for s in names if s not in scores and s not in refs_used)
        if lacking:
            notes.append(f"metric {metric} ({level}) left out: no scores for {', '.join(lacking)}")
            continue
        seg_m, sys_m = metrics.get(metric, (None, None))
        full = {s: [float(v) for v in values if v is not None] for s, values in scores.items()}
        metrics[metric] = (full if level == "seg" else seg_m, _single(scores) if level == "sys" else sys_m)
    src_lang, tgt_lang = lp.split("-")
    data = ImportedDataset(
        name=name or f"{root.name}.{lp}".replace("/", "_"),
        title=f"{root.name} {lp} (mt-metrics-eval layout)",
        source_lang=src_lang, target_lang=tgt_lang,
        source=filled("source", source),
        refs={r: filled(f"reference {r}", lines) for r, lines in refs_raw.items()},
        systems={s: filled(f"system {s}", lines) for s, lines in systems_raw.items()},
        human_systems=sorted(s for s in systems_raw if s in refs_raw),
        human=human, metrics=metrics, documents=documents,
        provenance={"format": "mt-metrics-eval", "root": str(root.resolve()), "lp": lp,
                    "source_sha256": dict(sorted(files.items()))},
        notes=notes,
    )
    return data, origin
