"""The harness version: the last field of every signature and a column of every table's metadata."""

__version__ = "0.1.0"
