"""Comparison pages: where two systems differ (:mod:`harness.job.comparison`) as one self-contained HTML page and
its tables as Parquet next to it (``<page stem>.<table>.parquet``), each file written atomically. Used by
``harness-compare``, ``harness-history --compare`` and a job's ``compare=[[A, B], ...]``; reads the result only."""

from __future__ import annotations

from pathlib import Path

from ..job.comparison import ComparisonResult, comparison_tables, table_files, table_metadata
from ..job.comparison_page import render_page
from ..storage.files import atomic_write
from .parquet import write_table


def write_comparison(result: ComparisonResult, page: Path) -> dict[str, Path]:
    """The page at ``page`` and every comparison table beside it; returns ``{"page": path, table: path, ...}``."""
    atomic_write(page, render_page(result))
    out = {"page": page}
    meta = table_metadata(result, page.name)
    files = table_files(page.name)
    for name, table in comparison_tables(result).items():
        out[name] = write_table(table, page.with_name(files[name]), meta)
    return out
