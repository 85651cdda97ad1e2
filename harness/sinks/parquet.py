"""Parquet tables: the system of record (MLflow is the index).

Each table is one file, written atomically (:func:`harness.storage.files.atomic_write`) into the job's staging
folder; the job folder publishes them together (:mod:`harness.job.folder`). The schema metadata records the
harness version, the resolved config, the signatures and the input hashes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError
from ..storage.files import atomic_write
from ..storage.manifest import verified_bytes
from ..version import __version__


def write_table(table: pa.Table, path: Path, metadata: Mapping[str, Any]) -> Path:
    """Write ``table`` to ``path`` atomically, with ``metadata`` (JSON-encoded values) in the schema.

    Arrow's own schema is not stored (``store_schema=False``): every column reads back with the type its Parquet
    type gives (strings, int64, float64, lists), which is the type it was built with, except that a dictionary
    column (the segment table's repeated strings: one value per cell, ``segment_scores``) reads back as its
    values, as if it had been written out in full. Writing it in full cost the synthetic study's segment table
    ~100 MB of repeated signature strings to build and hash (0.4-1.4 s of the job's last phase); a stored Arrow
    schema would give readers the dictionary type instead. The metadata is the file's key-value metadata, which
    readers see as the schema's."""
    meta: dict[str, str] = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
    meta["harness_version"] = __version__
    for key, value in metadata.items():
        meta[key] = value if isinstance(value, str) else json.dumps(value, default=str)
    table = table.replace_schema_metadata(None)

    def write(f: Any) -> None:
        with pq.ParquetWriter(f, table.schema, compression="zstd", store_schema=False) as writer:
            writer.write_table(table)
            writer.add_key_value_metadata(meta)

    return atomic_write(path, write)


def read_metadata(path: Path) -> dict[str, str]:
    """The schema metadata of a table written by :func:`write_table` (decoded to str)."""
    meta = pq.read_schema(path).metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items() if not k.startswith(b"pandas")}


def read_table(folder: str | Path, name: str) -> pa.Table:
    """A table of a job folder, only if the folder's manifest lists it with its hash (a complete generation).

    The bytes are read once, checked against the manifest and parsed from memory: the table returned is the one
    checked, even if a new generation is published meanwhile, and the folder's other files are not hashed."""
    data = verified_bytes(folder, f"{name}.parquet")
    if data is None:
        raise InputError(f"no complete, verified {name}.parquet here (job_status.json and manifest.json of one "
                         "published generation must list it)", folder)
    return pq.read_table(pa.BufferReader(data))
