"""Pages: one self-contained HTML file and its tables as Parquet beside it, each file written atomically. Used for
the comparison pages of ``harness-compare``, ``harness-history --compare`` and a job's ``compare=[[A, B], ...]``
(:func:`harness.job.comparison.page_contents` says what to write)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import pyarrow as pa

from ..storage.files import atomic_write
from .parquet import write_table


def write_page(page: Path, html: str, tables: Mapping[str, tuple[Path, pa.Table]], metadata: Mapping[str, str]
               ) -> dict[str, Path]:
    """The page at ``page`` and every table at its path, each with ``metadata`` in its schema; returns
    ``{"page": path, table: path, ...}``."""
    atomic_write(page, html)
    out = {"page": page}
    for name, (path, table) in tables.items():
        out[name] = write_table(table, path, metadata)
    return out
