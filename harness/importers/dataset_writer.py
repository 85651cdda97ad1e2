"""A dataset folder (docs/contracts.md §6) written from imported data: the texts, human scores and metric scores,
a ``seg_map.tsv`` with the documents, and a ``meta.json`` that records where everything came from (the source
files with their SHA-256) and what the import changed. The folder is written under a temporary name next to its
destination and renamed into place when complete: a failed import leaves nothing that looks like a dataset."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import InputError
from ..text.reading import parse_text, safe_name
from ..version import __version__


@dataclass
class ImportedDataset:
    """Everything a dataset folder holds, read from a published format (lines are ``str``; the importer turned
    missing translations into empty lines and said so in ``notes``)."""

    name: str
    title: str
    source_lang: str | None
    target_lang: str | None
    source: list[str] | None
    refs: dict[str, list[str]]
    systems: dict[str, list[str]]
    human_systems: list[str]
    #: kind -> ({system: [score or None per segment]} or None, {system: score} or None, higher_is_better)
    human: dict[str, tuple[dict[str, list[float | None]] | None, dict[str, float] | None, bool]]
    #: metric -> ({system: [score per segment]} or None, {system: score} or None)
    metrics: dict[str, tuple[dict[str, list[float]] | None, dict[str, float] | None]]
    documents: list[str] | None = None  # the document of each line
    primary_ref: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def read_utf8(path: Path) -> str:
    """A source file's text, or one error naming it (unreadable, not UTF-8)."""
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"invalid UTF-8 at byte offset {exc.start}", path) from None


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _text(lines: Sequence[str]) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode("utf-8")


def _check_name(name: str, what: str, origin: str) -> str:
    try:
        return safe_name(name, what)
    except Exception as exc:
        raise InputError(f"{what} {name!r} cannot name a file of the dataset ({exc})", origin) from None


def write_dataset(data: ImportedDataset, out: Path, origin: Mapping[str, str] | None = None) -> Path:
    """Write ``data`` as a dataset folder at ``out`` (which must not exist). ``origin``: where each written text
    came from (relative path -> source file), to name the source in an error about a line."""
    out = Path(out)
    if out.exists():
        raise InputError("the destination exists; give a new folder (nothing was written)", out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        _write(data, stage, origin or {})
        os.replace(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return out


def _write(data: ImportedDataset, root: Path, origin: Mapping[str, str]) -> None:
    written: dict[str, str] = {}

    def put(rel: str, payload: bytes, check: bool = False) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(payload)
        if check:  # the job's own reading: an unreadable line fails here, naming where it came from
            try:
                parse_text(payload, path)
            except InputError as exc:
                raise InputError(exc.reason, origin.get(rel, rel), exc.line) from None
        written[rel] = hashlib.sha256(payload).hexdigest()

    if data.source is not None:
        put("src.txt", _text(data.source), True)
    for name, lines in data.refs.items():
        put(f"refs/{_check_name(name, 'reference', origin.get(f'refs/{name}.txt', name))}.txt", _text(lines), True)
    for name, lines in data.systems.items():
        put(f"systems/{_check_name(name, 'system', origin.get(f'systems/{name}.txt', name))}.txt", _text(lines),
            True)
    human_meta: dict[str, Any] = {}
    for kind, (seg, sys_, hib) in data.human.items():
        _check_name(kind, "human score", kind)
        entry: dict[str, Any] = {"name": kind, "higher_is_better": hib}
        if seg is not None:
            rows = [f"{s}\t{i}\t{v!r}" for s, values in seg.items() for i, v in enumerate(values) if v is not None]
            put(f"human/{kind}.seg.tsv", ("system\tseg_id\tscore\n" + "".join(r + "\n" for r in rows)).encode())
            entry["file_seg"] = f"human/{kind}.seg.tsv"
        if sys_ is not None:
            put(f"human/{kind}.sys.tsv", ("system\tscore\n" + "".join(f"{s}\t{v!r}\n" for s, v in sys_.items())
                                          ).encode())
            entry["file_sys"] = f"human/{kind}.sys.tsv"
        human_meta[kind] = entry
    for metric, (seg_m, sys_m) in data.metrics.items():
        _check_name(metric, "metric", metric)
        if seg_m is not None:
            rows = [f"{s}\t{i}\t{v!r}" for s, values in seg_m.items() for i, v in enumerate(values)]
            put(f"metrics/{metric}/seg.tsv", ("system\tseg_id\tscore\n" + "".join(r + "\n" for r in rows)).encode())
        if sys_m is not None:
            put(f"metrics/{metric}/sys.tsv", ("system\tscore\n" + "".join(f"{s}\t{v!r}\n" for s, v in sys_m.items())
                                              ).encode())
        put(f"metrics/{metric}/meta.json", (json.dumps({"higher_is_better": True}, indent=2) + "\n").encode())
    meta: dict[str, Any] = {
        "name": data.name, "title": data.title, "source_lang": data.source_lang, "target_lang": data.target_lang,
        "n_segments": len(next(iter(data.refs.values()))), "refs": list(data.refs),
        "systems": list(data.systems), "human_systems": data.human_systems,
    }
    if data.primary_ref is not None:
        meta["primary_ref"] = data.primary_ref
    if human_meta:
        meta["human_scores"] = human_meta
    if data.documents is not None:
        rows = [f"{i}\t{i}\t{doc}" for i, doc in enumerate(data.documents)]
        put("seg_map.tsv", ("line\tseg\tdoc\n" + "".join(r + "\n" for r in rows)).encode())
        meta["seg_map"] = {"id_order": "lines"}
    meta["imported"] = {"by": f"harness-import {__version__}", **data.provenance, "notes": data.notes,
                        "written_sha256": dict(sorted(written.items()))}
    (root / "meta.json").write_text(json.dumps({k: v for k, v in meta.items() if v is not None}, indent=2,
                                               ensure_ascii=False) + "\n", encoding="utf-8")
