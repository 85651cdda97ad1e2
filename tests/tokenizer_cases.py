"""Cases shared by the tokenizer and text-to-ids tests: the real data files, sacrebleu as the oracle of tokens,
exhaustive small alphabets, random pieces, edge lines."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import sacrebleu
from sacrebleu.metrics.bleu import BLEU

from support import DEMO, once_per_session

#: The shipped WMT21 en-de data (part of the package: its absence is an error, never a skip).
DATA = DEMO


def _read(path: Path) -> list[str]:
    """Lines split on '\\n' only (no universal newlines), without the empty string after the final newline."""
    with open(path, encoding="utf-8", newline="\n") as handle:
        lines = handle.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _data_files() -> list[Path]:
    return sorted((DATA / "refs").glob("*.txt")) + sorted((DATA / "systems").glob("*.txt")) + [DATA / "src.txt"]


_ORACLES: dict[tuple[str, bool], BLEU] = {}
#: From this many lines on, sacrebleu's tokens are counted once per session (test_tokenizers and test_token_ids
#: hold the Python and the compiled path to the same oracle on the same real data and alphabets).
SHARE_FROM = 500


def _sacrebleu_tokens(lines: list[str], name: str, lowercase: bool) -> list[list[str]]:
    bleu = _ORACLES.get((name, lowercase))
    if bleu is None:
        bleu = _ORACLES[(name, lowercase)] = BLEU(tokenize=name, lowercase=lowercase)
    return [bleu._preprocess_segment(line).split() for line in lines]


def oracle(lines: list[str], name: str, lowercase: bool) -> list[list[str]]:
    """sacrebleu's tokens for each line (one BLEU object per configuration, as sacrebleu users have)."""
    if len(lines) < SHARE_FROM:
        return _sacrebleu_tokens(lines, name, lowercase)
    key = json.dumps(["sacrebleu tokens", name, lowercase, sacrebleu.__version__, lines])
    return once_per_session(key, lambda: _sacrebleu_tokens(lines, name, lowercase))


def _all_strings(pieces: str | list[str], max_len: int) -> list[str]:
    """Every concatenation of up to ``max_len`` pieces (characters of a str, or the items of a list)."""
    return ["".join(t) for n in range(max_len + 1) for t in itertools.product(pieces, repeat=n)]


PIECES = [
    "&quot;", "&amp;", "&lt;", "&gt;", "&amp;quot;", "&amp;lt;", "&", ";", "<skipped>", "<skip", "ped>",
    "-\n", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\u2028", "\u2029", "\u00a0", "\u3000",
    "\u2001", "\u200b", "\t", " ", "  ",
    "1.5", "1,000", "2019.", ".5", "5.", ".", ",", "..", "...", ".,", "-", "--", "1-", "-1", "5-3", "a-b",
    "'", '"', "$", "%", "/", "(", ")", "\u2019", "\u00bf", "\u2026",
    "\u03a3", "\u0391\u03a3", "\u0130", "\u00df", "\u1e9e",  # final sigma, dotted I, sharp s: lower() specials
    "\u4e2d", "\u6587", "\u2a6d", "\u2a6e", "\u2f81", "\ufa30", "\uff01", "\uff10", "\U00020000",
    "\u0663", "\u00bd", "\U0001d7ce", "\U0001f600", "\U00010100",
    "\x00", "\x01", "\x02",  # the fast paths' separator and place-holders: force the per-line fallback
    "a", "A", "9", "0",
]

EDGE_LINES = [
    "", " ", "   ", "\t\n", "\n", "\r\n", "\u2028", "\u00a0\u3000", "\x0b\x0c\x1c\x1d\x1e\x1f\x85",
    ".", ",", "...", "!?", "-", "- -", "&", "&amp;", "<skipped>", "-\n", "a-\n", "a-\nb", "1.", ".1", "1,", "1-",
    "\"'()[]{}<>", "!!!", "$%&/()=?", "\u4e2d\u6587\u3002", "\u3002", "2019.", "(1.5)", "1..5", "a..5", "1...5",
]


