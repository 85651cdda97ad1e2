"""Shared fixtures: the real WMT21 en-de data (the copy the project ships, else ../shared/data)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CANDIDATES = [REPO / "harness" / "data" / "wmt21_news_ende", REPO.parent / "shared" / "data" / "wmt21_news_ende"]


def dataset_dirs() -> list[Path]:
    """Every available copy of the real dataset (both are oracle-tested when both exist)."""
    return [p for p in CANDIDATES if (p / "refs").is_dir()]


def read_lines(path: Path) -> list[str]:
    """Lines split on '\\n' only, as the harness reads them."""
    return path.read_text(encoding="utf-8").split("\n")[:-1]


@pytest.fixture(scope="session")
def wmt21() -> dict:
    """{'refs': {name: lines}, 'systems': {name: lines}, 'root': Path} of the first available copy."""
    dirs = dataset_dirs()
    if not dirs:
        pytest.skip("the WMT21 dataset is not available")
    root = dirs[0]
    return {
        "root": root,
        "refs": {p.stem: read_lines(p) for p in sorted((root / "refs").glob("*.txt"))},
        "systems": {p.stem: read_lines(p) for p in sorted((root / "systems").glob("*.txt"))},
    }
