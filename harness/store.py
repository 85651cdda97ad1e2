"""Parquet tables: the system of record (MLflow is the index).

Each table is one file per job, written atomically (a temporary file in the same folder, then ``os.replace``),
so a crash never leaves a table that looks complete, and a rerun of the same job replaces its own file instead
of adding rows. The schema metadata records the harness version, the resolved config and the signatures.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from . import __version__

TABLES = ("system_scores", "segment_scores", "correlations", "significance")


def write_table(table: pa.Table, path: Path, metadata: Mapping[str, Any]) -> Path:
    """Write ``table`` to ``path`` atomically, with ``metadata`` (JSON-encoded values) in the schema."""
    meta = dict(table.schema.metadata or {})
    meta[b"harness_version"] = __version__.encode()
    for key, value in metadata.items():
        meta[key.encode()] = (value if isinstance(value, str) else json.dumps(value, default=str)).encode()
    table = table.replace_schema_metadata(meta)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".parquet.tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_frame(frame: Any, path: Path, metadata: Mapping[str, Any]) -> Path:
    """A pandas DataFrame as a Parquet table (see :func:`write_table`)."""
    return write_table(pa.Table.from_pandas(frame, preserve_index=False), path, metadata)


def read_metadata(path: Path) -> dict[str, str]:
    """The schema metadata of a table written by :func:`write_table` (decoded to str)."""
    meta = pq.read_schema(path).metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items() if not k.startswith(b"pandas")}


def write_text(path: Path, text: str) -> Path:
    """A text file (report, config), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
