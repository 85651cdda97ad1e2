"""Progress bars on stderr for anything that can take more than a second (off when stderr is not a terminal)."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator


@contextmanager
def progress_bar(total: int, desc: str, enabled: bool | None = None) -> Iterator[Any]:
    """A tqdm bar with ``.update(n)``; ``enabled=None`` shows it only on a terminal."""
    from tqdm import tqdm

    show = sys.stderr.isatty() if enabled is None else enabled
    with tqdm(total=total, desc=desc, disable=not show, file=sys.stderr, leave=False, unit="block") as bar:
        yield bar
