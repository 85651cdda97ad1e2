"""What the benchmark scripts share: markdown tables and updating their own section of RESULTS.md."""

from __future__ import annotations

import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def md_table(header: list[str], rows: list[list[str]], right_align: bool = False) -> str:
    """A markdown table; ``right_align`` right-aligns every column but the first (numbers)."""
    rule = "|" + "|".join("---:" if right_align and i else "---" for i in range(len(header))) + "|"
    return "\n".join(["| " + " | ".join(header) + " |", rule] + ["| " + " | ".join(r) + " |" for r in rows])


def write_section(section: str, text: str, path: Path = RESULTS) -> None:
    """Replace (or append) the section headed ``section`` (a ``## `` line) of RESULTS.md with ``text``, leaving
    every other section byte for byte as it was."""
    body = text.rstrip("\n") + "\n"
    if not path.exists():
        path.write_text("# Benchmark results\n\n" + body, encoding="utf-8")
        return
    old = path.read_text(encoding="utf-8")
    start = old.find(section + "\n")
    if start < 0:
        path.write_text(old.rstrip("\n") + "\n\n" + body, encoding="utf-8")
        return
    nxt = re.compile(r"^## ", re.MULTILINE).search(old, start + len(section))
    tail = old[nxt.start():] if nxt else ""
    path.write_text(old[:start] + body + ("\n" + tail if tail else ""), encoding="utf-8")
