"""The inputs of ``harness-score`` as sacrebleu reads them: reference and hypothesis files (``.gz`` files,
``--encoding``, ``--num-refs`` tab-separated references, tab-separated systems on standard input), the systems'
names as sacrebleu and we show them, sacrebleu's refusals (:class:`DropInError`) and its count of tokenized
hypotheses (the warning it prints for them)."""

from __future__ import annotations

import argparse
import codecs
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from .errors import ConfigError, HarnessError, InputError
from .score_output import Log
from .text.chunks import Source
from .text.reading import STDIN, read_bytes

PROG = "harness-score"


class DropInError(HarnessError):
    """What sacrebleu refuses, refused with sacrebleu's exit status (1; 17 for malformed tab-separated input), in
    one line naming the option (sacrebleu's own words, where it has some)."""

    def __init__(self, flag: str, message: str, status: int = 1) -> None:
        self.flag = flag
        self.exit_status = status
        super().__init__(f"{flag}: {message}")


@dataclass(frozen=True)
class Inputs:
    """The texts to score: the references, one source per system, the systems' names as sacrebleu shows them
    (``labels``: the paths given, ``System 1``... from standard input), and ours (``names``: stems, ``stdin``;
    ``paths``: the paths)."""

    refs: list[Source]
    hyps: list[Source]
    labels: list[str]
    names: list[str]
    paths: list[str]
    stdin: bool


def _system_names(paths: Sequence[str]) -> list[str]:
    stems = [Path(p).stem for p in paths]
    return stems if len(set(stems)) == len(stems) else list(paths)


def _line_breaks(refs: Sequence[Source]) -> int | None:
    """The most line breaks a hypothesis of these references can have (the first reference's, plus one for a
    missing final newline); None if it cannot be read (its error is reported in its turn)."""
    try:
        data = refs[0].data if refs[0].data is not None else refs[0].path.read_bytes()
    except OSError:
        return None
    return data.count(b"\n") + 1


def _encoding(name: str) -> str | None:
    """The codec of ``--encoding``, None for UTF-8 (read as it is)."""
    try:
        codec = codecs.lookup(name).name
    except LookupError:
        raise ConfigError("encoding", f"unknown encoding {name!r}", expected="a Python codec name, e.g. latin-1",
                          got=name) from None
    return None if codec == "utf-8" else name


def _decoded(source: Source, encoding: str | None) -> Source:
    """A ``.gz`` file decompressed, a file in another encoding as UTF-8 (as sacrebleu's ``smart_open`` reads
    them); other sources as they are."""
    gz = source.path.name.endswith(".gz") and str(source.path) != STDIN
    if source.error is not None or not (gz or encoding):
        return source
    try:
        data = source.data if source.data is not None else read_bytes(source.path)
    except InputError as exc:
        return replace(source, error=exc)
    if gz:
        import gzip
        import zlib

        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            return replace(source, data=None, error=InputError(f"not a readable gzip file ({exc})", source.path))
    if encoding:
        try:
            data = data.decode(encoding).encode("utf-8")
        except UnicodeError as exc:
            where = f" at byte offset {exc.start}" if isinstance(exc, UnicodeDecodeError) else ""
            return replace(source, data=None, error=InputError(
                f"cannot be read as {encoding} (--encoding){where}: {getattr(exc, 'reason', exc)}", source.path))
    return replace(source, data=data)


def _in_memory(path: str, lines: Sequence[str]) -> Source:
    return Source(Path(path), Path(path).stem, data=("\n".join(lines) + "\n").encode("utf-8"))


def warn_notes(text: Any) -> None:
    for warning in text.warnings:
        print(f"{PROG}: warning: {text.path}: {warning}", file=sys.stderr)


def _split_references(source: Source, n: int) -> list[Source]:
    """``--num-refs N``: one file of N tab-separated references per line as N references (sacrebleu's split of
    each right-stripped line; another number of fields is its exit status 17)."""
    text = source.read()
    warn_notes(text)
    columns: list[list[str]] = [[] for _ in range(n)]
    for lineno, line in enumerate(text.lines, 1):
        fields = line.rstrip().split("\t", n - 1)
        if len(fields) != n:
            raise DropInError("--num-refs", f"{source.path}:{lineno}: expected {n} tab-separated fields, but found "
                              f"{len(fields)}", status=17)
        for column, field in zip(columns, fields):
            column.append(field)
    return [_in_memory(f"{source.path} (reference {k + 1})", column) for k, column in enumerate(columns)]


def _split_systems(source: Source) -> list[Source] | None:
    """Standard input holding tab-separated systems, split as sacrebleu splits it (the first line's fields say
    how many; every line right-stripped); None when it holds one system."""
    if source.data is None or b"\t" not in source.data:
        return None
    text = source.read()
    rows = [line.rstrip().split("\t") for line in text.lines]
    n = len(rows[0])
    if any(len(row) != n for row in rows):
        raise DropInError("<stdin>", "the number of tab-delimited fields in the input stream differ across lines",
                          status=17)
    if n == 1:
        return None
    warn_notes(text)
    return [_in_memory(f"System {k + 1}", [rows[0][k]] + [row[k].rstrip() for row in rows[1:]]) for k in range(n)]


def read_inputs(args: argparse.Namespace, log: Log, dropin: bool) -> Inputs:
    """The references and systems as sacrebleu reads them: ``.gz`` files, ``--encoding``, ``--num-refs``,
    standard input's tab-separated systems; in sacrebleu's output mode (``dropin``) a system named twice is its
    error (its repetition of the baseline of a paired test is dropped, as sacrebleu drops it)."""
    encoding = _encoding(args.encoding)
    refs = [_decoded(Source.of_path(p), encoding) for p in args.refs]
    if args.num_refs > 1:
        refs = _split_references(refs[0], args.num_refs)
    if args.input is None:
        stdin = _decoded(Source.of_stdin(max_lines=_line_breaks(refs)), encoding)
        split = _split_systems(stdin)
        if split is None:
            return Inputs(refs, [stdin], ["System 1"], ["stdin"], [STDIN], True)
        labels = [f"System {k + 1}" for k in range(len(split))]
        return Inputs(refs, split, labels, labels, labels, True)
    paths = list(args.input)
    if dropin:
        kept: list[str] = []
        for path in paths:
            if path in kept:
                if (args.paired_bs or args.paired_ar) and path == kept[0]:
                    log.info(f"Ignoring {path!r} as it was also given as the baseline.")
                    continue
                raise DropInError("--input", f"{path!r} already used to name a system. Make sure to have a "
                                  "different basename for each system.")
            kept.append(path)
        paths = kept
    hyps = [_decoded(Source.of_path(p), encoding) for p in paths]
    return Inputs(refs, hyps, paths, _system_names(paths), paths, False)


#: A line whose right-stripped text ends in `` .`` (the test of sacrebleu's BLEU for tokenized hypotheses), on
#: UTF-8 bytes: the space and period, then only what ``str.rstrip`` strips, to the end of the line.
_TOKENIZED_PERIOD = re.compile(
    rb" \.(?:[ \t\x0b\x0c\r\x1c-\x1f]|\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f"
    rb"|\xe3\x80\x80)*$", re.MULTILINE)


def tokenized_periods(source: Source, block: int = 1 << 22) -> int:
    """How many lines of ``source`` end in a tokenized period (read in blocks; 0 if it cannot be read: its error
    is reported where it is scored)."""
    if source.error is not None:
        return 0
    if source.data is not None:
        return len(_TOKENIZED_PERIOD.findall(source.data))
    count, rest = 0, b""
    try:
        with open(source.path, "rb") as f:
            while chunk := f.read(block):
                buf = rest + chunk
                cut = buf.rfind(b"\n") + 1
                count += len(_TOKENIZED_PERIOD.findall(buf, 0, cut))
                rest = buf[cut:]
    except OSError:
        return 0
    return count + len(_TOKENIZED_PERIOD.findall(rest))
