"""The manifest of a published job folder, and what a reader may trust by it.

``manifest.json`` is written last when a job publishes (:mod:`harness.job.folder`): it lists every file of the
generation with its SHA-256 and size. While it exists it describes the files on disk, so a reader trusts a file
only when the manifest lists it with the same size and hash (:func:`verified_files`, :func:`verified_bytes`).
Knows nothing of jobs: the layers above (the job's folder, the Parquet sink, ``harness-history``) share it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePosixPath
from typing import Any, Mapping

MANIFEST = "manifest.json"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def listed_files(manifest: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The file entries of a manifest, leaving out anything malformed and any name that leaves the folder."""
    files = manifest.get("files")
    if not isinstance(files, dict):
        return {}
    out: dict[str, Mapping[str, Any]] = {}
    for rel, info in files.items():
        parts = PurePosixPath(rel).parts if isinstance(rel, str) else ()
        if isinstance(info, dict) and parts and not PurePosixPath(rel).is_absolute() and ".." not in parts:
            out[rel] = info
    return out


def verified_files(folder: str | Path) -> dict[str, Path]:
    """The files of a job folder that can be trusted: those ``manifest.json`` lists, with the size and SHA-256 it
    records. The manifest is removed before a generation's files are moved in and written after, so while it
    exists it describes the files on disk; empty when the folder holds no complete generation (a damaged manifest
    trusts nothing, never raises)."""
    folder = Path(folder)
    out = {}
    for rel, info in listed_files(read_json(folder / MANIFEST) or {}).items():
        path = folder / rel
        try:
            if path.is_file() and path.stat().st_size == info.get("bytes") and sha256_of(path) == info.get("sha256"):
                out[rel] = path
        except OSError:
            continue
    return out


def verified_bytes(folder: str | Path, rel: str) -> bytes | None:
    """The content of one file of a job folder if ``manifest.json`` lists it with this size and SHA-256, else
    None. Read once and checked in memory, so what the caller gets is what was checked (a generation published
    between a check and a second read could otherwise slip in), and no other file of the folder is hashed."""
    folder = Path(folder)
    info = listed_files(read_json(folder / MANIFEST) or {}).get(rel)
    if info is None:
        return None
    try:
        data = (folder / rel).read_bytes()
    except OSError:
        return None
    if len(data) != info.get("bytes") or hashlib.sha256(data).hexdigest() != info.get("sha256"):
        return None
    return data
