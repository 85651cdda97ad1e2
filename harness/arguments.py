"""Command-line parsing shared by the entry points: usage errors as one line, bounded integers.

Must stay standard library only: ``harness-score`` imports it on its fast path.
"""

from __future__ import annotations

import argparse
from typing import Callable


class OneLineParser(argparse.ArgumentParser):
    """Usage errors are one line naming the option, exit status 2 (``hint`` is appended, e.g. " (see --help)")."""

    hint = ""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}{self.hint}\n")


def int_in(lo: int, hi: int | None, what: str) -> Callable[[str], int]:
    """An argparse ``type`` accepting integers from ``lo`` to ``hi`` (None: no upper bound); ``what`` names the
    value in the error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer ({what}), got {text!r}") from None
        if value < lo or (hi is not None and value > hi):
            bound = f"from {lo} to {hi}" if hi is not None else f">= {lo}"
            raise argparse.ArgumentTypeError(f"must be {bound} ({what}), got {value}")
        return value

    return parse
