"""The exception family of bleu-harness: errors a user can act on, carrying their location as fields.

Every error holds what it is about in attributes (``path``, ``line``, ``byte_offset``, ``key``, ``expected``,
``got``, ``choices``), so code that needs a detail reads the field, never the message; ``str(error)`` renders
the one line that the handler at the top of each command prints before exiting non-zero (no traceback).

This module sits under every layer (it imports nothing of the package).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence


class HarnessError(Exception):
    """Base class: an error the user can act on; ``str()`` is the one line the entry points print. ``kept``: what
    the failure left usable (set where that is known, e.g. a job's folder), printed after the error."""

    #: Exit status of the command-line entry points for this kind of error.
    exit_status = 1
    kept: str | None = None


class InputError(HarnessError, ValueError):
    """Bad input data: the file (or stream), the 1-based ``line`` and ``byte_offset`` in the file when known, what
    was ``expected`` and what came (``got``). ``reason`` is the message without the location."""

    def __init__(self, reason: str, path: str | Path | None = None, line: int | None = None, *,
                 byte_offset: int | None = None, column: int | None = None, expected: str | None = None,
                 got: str | None = None, bad_bytes: bytes | None = None) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.reason = reason
        self.byte_offset = byte_offset
        self.column = column
        self.expected = expected
        self.got = got
        self.bad_bytes = bad_bytes
        super().__init__(self.render())

    def render(self) -> str:
        where = ""
        if self.path is not None:
            where = (self.path if self.line is None else f"{self.path}:{self.line}") + ": "
        return where + self.reason

    def relocated(self, path: str | Path, line_offset: int, byte_offset: int) -> InputError:
        """The same error seen from a bigger file: this text started at ``line_offset`` lines and ``byte_offset``
        bytes into ``path`` (shards read line ranges of a file)."""
        return InputError(self.reason, path, None if self.line is None else self.line + line_offset,
                          byte_offset=None if self.byte_offset is None else self.byte_offset + byte_offset,
                          column=self.column, expected=self.expected, got=self.got, bad_bytes=self.bad_bytes)


class ConfigError(HarnessError, ValueError):
    """A bad option or configuration key: the ``key``, the ``reason``, and the valid ``choices`` when there are any
    (``expected``/``got`` when one value was expected and another came)."""

    exit_status = 2

    def __init__(self, key: str, reason: str, choices: Sequence[Any] | None = None, *, expected: str | None = None,
                 got: Any = None) -> None:
        self.key = key
        self.reason = reason
        self.choices = None if choices is None else [str(c) for c in choices]
        self.expected = expected
        self.got = got
        super().__init__(self.render())

    def detail(self) -> str:
        """The message without the key: the reason and the valid choices."""
        text = self.reason
        if self.choices:
            text += f" (valid: {', '.join(self.choices)})"
        return text

    def render(self) -> str:
        return f"{self.key}: {self.detail()}"

    def under(self, prefix: str) -> ConfigError:
        """The same error with its key placed under ``prefix`` (``tokenize`` -> ``bleu.intl.tokenize``)."""
        return ConfigError(f"{prefix}.{self.key}", self.reason, self.choices, expected=self.expected, got=self.got)


class JobFolderError(HarnessError):
    """The job folder cannot be used: another job holds it, it is not ours, or it cannot be written."""

    exit_status = 2

    def __init__(self, folder: str | Path, reason: str, *, holder: dict[str, Any] | None = None) -> None:
        self.folder = str(folder)
        self.reason = reason
        self.holder = holder
        super().__init__(f"{self.folder}: {reason}")


class TrackingError(HarnessError):
    """The tracking store could not be used (the Parquet tables are written regardless)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (a SLURM time limit, ``kill``), raised where the job is, so that it ends like an interruption:
    the folder's status says so, MLflow's runs are marked KILLED, one line is printed, exit status 143."""

    exit_status = 143
