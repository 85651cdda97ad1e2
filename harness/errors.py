"""The exception family of bleu-harness.

Every error a user can cause carries its location, so the one handler at the top of each command can print a
single line (``file:line: what was expected``) and exit non-zero instead of a traceback.
"""

from __future__ import annotations

from pathlib import Path


class HarnessError(Exception):
    """Base class: an error the user can act on; printed as one line by the command-line entry points."""


class InputError(HarnessError, ValueError):
    """Bad input data: names the file (or stream), the 1-based line when known, and what was expected."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.reason = message
        where = ""
        if self.path is not None:
            where = self.path if line is None else f"{self.path}:{line}"
            where += ": "
        super().__init__(where + message)


class ConfigError(HarnessError, ValueError):
    """A bad option or configuration key: names the key and lists the valid choices when there are any."""

    def __init__(self, key: str, message: str, choices: list[str] | tuple[str, ...] | None = None) -> None:
        self.key = key
        self.choices = None if choices is None else list(choices)
        text = f"{key}: {message}"
        if choices:
            text += f" (valid: {', '.join(str(c) for c in choices)})"
        super().__init__(text)
