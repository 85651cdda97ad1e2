"""Progress on stderr for every phase of a job that can take more than a second: a bar on a terminal, else one
line when the phase starts (and how long it took when it ends, if more than a second)."""

from __future__ import annotations

import logging
import sys
import time
from contextlib import contextmanager
from typing import Any, Iterator

log = logging.getLogger("harness")


class _Null:
    def update(self, n: int = 1) -> None:
        pass


class Progress:
    """Phases of a job; ``enabled=None`` draws bars only when stderr is a terminal."""

    def __init__(self, enabled: bool | None = None) -> None:
        self.bars = sys.stderr.isatty() if enabled is None else bool(enabled)

    @contextmanager
    def phase(self, name: str, total: int, unit: str = "step") -> Iterator[Any]:
        started = time.perf_counter()
        if self.bars:
            from tqdm import tqdm

            with tqdm(total=total, desc=name, file=sys.stderr, leave=False, unit=unit) as bar:
                yield bar
        else:
            log.info("%s (%d %s%s) ...", name, total, unit, "" if total == 1 else "s")
            yield _Null()
        seconds = time.perf_counter() - started
        if seconds >= 1.0:
            log.info("%s: %.1f s", name, seconds)


@contextmanager
def progress_bar(total: int, desc: str, enabled: bool | None = None) -> Iterator[Any]:
    """One bar (``harness-score`` and ``harness-history``): see :class:`Progress`."""
    with Progress(enabled).phase(desc, total) as bar:
        yield bar
