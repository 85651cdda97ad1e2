"""Dataset folders (docs/contracts.md §6): their layout, read in two steps.

:func:`read_layout` reads ``meta.json`` and lists ``refs/``, ``systems/`` and the human-score files: enough to
name the dataset and decide where the job's results go, before any text is read. :func:`load_dataset` then
reads and checks every text (strict UTF-8, equal line counts) and the human scores.

A dataset folder is self-contained: a ``meta.json`` entry or a symlink must resolve inside the folder or under
one of the allowed roots (``allowed_roots``, and the bundled data). ``systems/NAME@VERSION.txt`` is version
VERSION of system NAME (split at the first ``@``).
"""

from __future__ import annotations

import collections
import json
import os
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError
from ..text.reading import TextFile, check_parallel, read_bytes, read_text, safe_name
from .human import HumanScores, read_human_tsv
from .seg_map import FILE as SEG_MAP
from .seg_map import SegMap, check_seg_map


def refset_name(stems: Sequence[str]) -> str:
    """The name of a reference set in the tables (docs/contracts.md §7): its stems joined with ``+`` in the given
    order."""
    return "+".join(stems)


def split_version(stem: str, where: str = "systems") -> tuple[str, str | None]:
    """``NAME@VERSION`` -> (NAME, VERSION); a stem without ``@`` has no version."""
    name, at, version = stem.partition("@")
    if at and not (name and version):
        raise ConfigError(where, f"{stem!r}: expected NAME@VERSION with a non-empty name and version", got=stem)
    return name, (version if at else None)


def resolve_under(root: str | os.PathLike[str], relative: str | os.PathLike[str], what: str,
                  roots: Sequence[Path] = ()) -> Path:
    """Resolve ``root/relative`` (following symlinks), refusing it if it lands outside ``root`` and outside every
    allowed root. Returns the resolved path; raises :class:`ConfigError` under key ``what``."""
    base = Path(root).resolve()
    try:
        target = (base / Path(relative)).resolve()
    except (RuntimeError, OSError) as exc:  # a symlink loop (RuntimeError up to Python 3.12), a bad link
        raise InputError(f"cannot resolve {str(relative)!r}: {exc}", base / Path(relative)) from None
    inside = [base, *roots]
    if not any(target == r or target.is_relative_to(r) for r in inside):
        raise ConfigError(what, f"path {str(relative)!r} resolves to {target}, outside the dataset folder {base} "
                          "and the allowed roots", [str(r) for r in inside], got=str(target))
    return target


def _meta_str(meta: Mapping[str, Any], key: str, path: Path) -> str | None:
    value = meta.get(key)
    if value is not None and not isinstance(value, str):
        raise InputError(f"'{key}' must be a string, got {type(value).__name__}", path)
    return value


def _meta_name(meta: Mapping[str, Any], key: str, path: Path) -> str | None:
    """A name from ``meta.json`` that will name folders, files, experiments or MLflow runs: one safe path
    component (:func:`~harness.text.reading.safe_name`: no separators, no ``..``, no control characters such as
    newlines or ANSI escapes), else an :class:`InputError` naming the file."""
    value = _meta_str(meta, key, path)
    if value is None:
        return None
    try:
        return safe_name(value, key)
    except ConfigError as exc:
        raise InputError(f"'{key}': {exc.reason}", path) from None


def _display_text(meta: Mapping[str, Any], key: str, path: Path) -> str | None:
    """A text from ``meta.json`` that is only shown (a title): no control characters (newlines, ANSI escapes)."""
    value = _meta_str(meta, key, path)
    if value is not None and any(unicodedata.category(c) == "Cc" for c in value):
        raise InputError(f"'{key}' contains control characters (newlines, escapes): {value[:40]!r}", path)
    return value


def _meta_names(meta: Mapping[str, Any], key: str, path: Path) -> list[str] | None:
    value = meta.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"'{key}' must be a list of names", path)
    for v in value:
        try:
            safe_name(v, key)
        except ConfigError as exc:
            raise InputError(str(exc), path) from None
    dupes = [k for k, n in collections.Counter(value).items() if n > 1]
    if dupes:
        raise InputError(f"'{key}' lists {', '.join(dupes)} more than once", path)
    return list(value)


def _read_meta(root: Path) -> tuple[dict[str, Any], Path]:
    path = root / "meta.json"
    if not path.exists():
        return {}, path
    resolve_under(root, "meta.json", "meta.json")
    if not path.is_file():
        raise InputError("not a regular file (a dataset holds regular files only)", path)
    raw = read_bytes(path)
    try:
        meta = json.loads(raw.decode("utf-8-sig"))
    except RecursionError:
        raise InputError("JSON nested too deeply", path) from None
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(f"invalid UTF-8 at byte offset {exc.start}", path, line) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path, exc.lineno) from None
    if not isinstance(meta, dict):
        raise InputError(f"expected a JSON object at the top level, got {type(meta).__name__}", path)
    return meta, path


def _list_stems(root: Path, sub: str, warnings: list[str], roots: Sequence[Path]) -> dict[str, Path]:
    """``NAME -> path`` for every ``root/sub/NAME.txt``, refusing unsafe names and files escaping ``root``."""
    folder = root / sub
    if not folder.is_dir():
        return {}
    found: dict[str, Path] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.startswith("."):
            continue  # hidden files: editor swap files, .DS_Store, ...
        if not entry.name.endswith(".txt"):
            if entry.is_file():
                warnings.append(f"{sub}/{entry.name}: ignored (not a .txt file)")
            continue
        stem = entry.name[: -len(".txt")]
        safe_name(stem, f"{sub}/{entry.name}")
        resolve_under(root, Path(sub) / entry.name, f"{sub}/{entry.name}", roots)
        if not entry.is_file():  # a FIFO without a writer would hang the job, holding its folder
            raise InputError("not a regular file (a pipe, device, socket or folder in a dataset folder)", entry)
        found[stem] = entry
    return found


def _order(meta_names: list[str] | None, found: Mapping[str, Path], key: str, meta_path: Path, sub: str) -> list[str]:
    """Names in ``meta.json`` order (each must exist on disk), then the remaining files sorted."""
    if meta_names is None:
        return sorted(found)
    absent = [n for n in meta_names if n not in found]
    if absent:
        raise InputError(
            f"'{key}' lists {', '.join(absent)} but there is no {sub}/NAME.txt for "
            f"{'it' if len(absent) == 1 else 'them'} (found: {', '.join(sorted(found)) or 'none'})",
            meta_path,
        )
    return meta_names + sorted(n for n in found if n not in meta_names)


def _human_entries(
    meta: Mapping[str, Any], meta_path: Path, root: Path, roots: Sequence[Path]
) -> list[tuple[str, Path | None, Path | None, bool, str | None]]:
    """(name, seg file, sys file, higher_is_better, problem) for each human score the dataset declares or
    contains; ``problem`` says why a declared kind cannot be read (a file it names is missing): an error only when
    the kind is selected (``human=none`` reads no human file)."""
    top_hib = meta.get("higher_is_better", True)
    if not isinstance(top_hib, bool):
        raise InputError("'higher_is_better' must be true or false", meta_path)
    declared = meta.get("human_scores") or {}
    if not isinstance(declared, dict):
        raise InputError("'human_scores' must be an object mapping a score name to its description", meta_path)
    entries: list[tuple[str, Path | None, Path | None, bool, str | None]] = []
    default_files = ("human/seg.tsv", "human/sys.tsv")
    if not declared:
        seg = root / default_files[0]
        sys_ = root / default_files[1]
        if seg.exists() or sys_.exists():
            hname = _meta_name(meta, "human_score", meta_path) or "human"
            found = [resolve_under(root, rel, rel, roots) if p.exists() else None
                     for rel, p in zip(default_files, (seg, sys_))]
            for p in found:
                if p is not None and not p.is_file():
                    raise InputError("not a regular file (a dataset holds regular files only)", p)
            entries.append((hname, found[0], found[1], top_hib, None))
        return entries
    for i, (hname, spec) in enumerate(declared.items()):
        try:  # a kind's name names figure files, table rows and MLflow metrics
            safe_name(hname, "human_scores")
        except ConfigError as exc:
            raise InputError(f"'human_scores': a kind's name must be a plain name: {exc.reason}", meta_path) from None
        if not isinstance(spec, dict):
            raise InputError(f"'human_scores.{hname}' must be an object", meta_path)
        hib = spec.get("higher_is_better", top_hib)
        if not isinstance(hib, bool):
            raise InputError(f"'human_scores.{hname}.higher_is_better' must be true or false", meta_path)
        files: list[Path | None] = []
        problem = None
        for key, default in zip(("file_seg", "file_sys"), default_files):
            rel = spec.get(key)
            if rel is not None and not isinstance(rel, str):
                raise InputError(f"'human_scores.{hname}.{key}' must be a path string", meta_path)
            if rel is None:
                # Only the first declared score may use the default file names.
                rel = default if i == 0 and key not in spec else None
                if rel is None or not (root / rel).exists():
                    files.append(None)
                    continue
            target = resolve_under(root, rel, f"human_scores.{hname}.{key}", roots)
            if not target.is_file():
                problem = problem or f"'human_scores.{hname}.{key}' names {rel!r}, which is not a regular file"
                files.append(None)
                continue
            files.append(target)
        if files[0] is None and files[1] is None:
            problem = problem or f"'human_scores.{hname}' names no existing file_seg or file_sys"
        entries.append((hname, files[0], files[1], hib, problem))
    return entries


# --------------------------------------------------------------------------------------------------------------
# step 1: the layout (meta.json and file names only)
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SystemFile:
    """One ``systems/STEM.txt``: ``stem`` (``NAME`` or ``NAME@VERSION``, the label human scores use), ``name``,
    ``version``, and whether it is a human translation."""

    stem: str
    name: str
    version: str | None
    path: Path
    human: bool


@dataclass(frozen=True)
class HumanKindFiles:
    """One kind of human scores a dataset declares: its files and direction (``meta.json`` ``human_scores``)."""

    name: str
    seg_path: Path | None
    sys_path: Path | None
    higher_is_better: bool
    title: str | None = None
    problem: str | None = None  # why its files cannot be read (an error when the kind is selected)


@dataclass(frozen=True)
class MetricFiles:
    """One metric's scores in a dataset folder (``metrics/NAME/``): ``seg.tsv`` and/or ``sys.tsv`` (the formats of
    the human scores), and ``meta.json`` (``higher_is_better``, default true; ``title``)."""

    name: str
    seg_path: Path | None
    sys_path: Path | None
    higher_is_better: bool = True
    title: str | None = None


METRICS_DIR = "metrics"


def _metric_entries(root: Path, roots: Sequence[Path]) -> list[MetricFiles]:
    """The metrics a dataset folder holds (``metrics/NAME/``, sorted by name)."""
    folder = root / METRICS_DIR
    if not folder.is_dir():
        return []
    out = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        try:
            name = safe_name(sub.name, "metrics")
        except ConfigError as exc:
            raise InputError(f"a metric folder's name must be a plain name: {exc.reason}", sub) from None
        files: list[Path | None] = []
        for fname in ("seg.tsv", "sys.tsv"):
            if (sub / fname).exists():
                path = resolve_under(root, f"{METRICS_DIR}/{name}/{fname}", f"{METRICS_DIR}/{name}/{fname}", roots)
                if not path.is_file():
                    raise InputError("not a regular file (a dataset holds regular files only)", path)
                files.append(path)
            else:
                files.append(None)
        if files == [None, None]:
            raise InputError("a metric folder holds seg.tsv and/or sys.tsv (system<TAB>seg_id<TAB>score, "
                             "system<TAB>score), found neither", sub)
        meta: dict[str, Any] = {}
        if (sub / "meta.json").exists():
            meta, _ = _read_meta(sub)
        hib = meta.get("higher_is_better", True)
        if not isinstance(hib, bool):
            raise InputError("'higher_is_better' must be true or false", sub / "meta.json")
        out.append(MetricFiles(name, files[0], files[1], hib, _display_text(meta, "title", sub / "meta.json")))
    return out


@dataclass(frozen=True)
class DatasetLayout:
    """What a dataset folder holds, before any text is read."""

    root: Path
    name: str
    title: str | None
    source_lang: str | None
    target_lang: str | None
    refs: dict[str, Path]
    systems: tuple[SystemFile, ...]
    source: Path | None
    primary_ref: str | None
    human_kinds: tuple[HumanKindFiles, ...]
    n_segments: int | None
    meta: dict[str, Any]
    warnings: tuple[str, ...] = ()
    metrics: tuple[MetricFiles, ...] = ()

    def inputs(self) -> list[Path]:
        """Every file the dataset may read (to keep a job's output folder off them)."""
        files = [*self.refs.values(), *(s.path for s in self.systems)]
        for pair in [(k.seg_path, k.sys_path) for k in self.human_kinds] + [(m.seg_path, m.sys_path)
                                                                            for m in self.metrics]:
            files += [p for p in pair if p is not None]
        return files + ([self.source] if self.source is not None else [])


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key putting ``v2`` before ``v10`` and ``step-900`` before ``step-1000``."""
    import re

    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text) if part)


def _system_order(meta_names: list[str] | None, found: Mapping[str, Path]) -> list[str]:
    """``meta.json`` order, then the other files: grouped by system name (names sorted), the versions of a name in
    natural order (``@2`` before ``@10``)."""
    listed = list(meta_names or [])
    rest = [s for s in found if s not in listed]
    names = sorted(dict.fromkeys(split_version(s)[0] for s in sorted(rest)))
    ordered = []
    for name in names:
        stems = [s for s in rest if split_version(s)[0] == name]
        ordered += sorted(stems, key=lambda s: natural_key(split_version(s)[1] or ""))
    return listed + ordered


def checked_name(layout: DatasetLayout) -> str:
    """The dataset's name as it will name an experiment and a folder: ``meta.json``'s (checked when read) or the
    folder's, which must be a plain name too (else give ``dataset.name``)."""
    try:
        return safe_name(layout.name, "dataset.name")
    except ConfigError as exc:
        raise ConfigError("dataset.name", f"the dataset folder's name is not a plain name ({exc.reason}); give "
                          "dataset.name=NAME or a meta.json name", got=layout.name) from None


def read_layout(root: str | os.PathLike[str], roots: Sequence[Path] = ()) -> DatasetLayout:
    """``meta.json`` and the file names of a dataset folder (no text is read; see :func:`load_dataset`)."""
    given = Path(root)
    if not given.is_dir():
        raise ConfigError("dataset.root", f"{given} is not a directory" if given.exists() else f"{given} not found",
                          expected="a dataset folder", got=str(given))
    meta, meta_path = _read_meta(given)
    warnings: list[str] = []
    found_refs = _list_stems(given, "refs", warnings, roots)
    found_systems = _list_stems(given, "systems", warnings, roots)
    if not found_refs:
        raise InputError("no reference files: expected refs/NAME.txt", given / "refs")
    if not found_systems:
        raise InputError("no system outputs: expected systems/NAME.txt", given / "systems")
    all_refs = _order(_meta_names(meta, "refs", meta_path), found_refs, "refs", meta_path, "refs")
    meta_systems = _meta_names(meta, "systems", meta_path)
    _order(meta_systems, found_systems, "systems", meta_path, "systems")  # every listed system must exist
    system_order = _system_order(meta_systems, found_systems)
    primary = _meta_str(meta, "primary_ref", meta_path)
    if primary is not None and primary not in found_refs:
        raise InputError(f"'primary_ref' {primary!r} is not a file under refs/ (found: {', '.join(all_refs)})",
                         meta_path)
    human_meta = _meta_names(meta, "human_systems", meta_path) or []
    unknown_human = [s for s in human_meta if s not in found_systems]
    if unknown_human:
        raise InputError(
            f"'human_systems' lists {', '.join(unknown_human)}, which {'is' if len(unknown_human) == 1 else 'are'} "
            "not under systems/", meta_path)
    human_systems = set(human_meta) | {s for s in found_systems if s in found_refs}
    systems = []
    for stem in system_order:
        name, version = split_version(stem, f"systems/{stem}.txt")
        systems.append(SystemFile(stem, name, version, found_systems[stem], stem in human_systems))
    source = None
    if (given / "src.txt").exists():
        source = resolve_under(given, "src.txt", "src.txt", roots)
        if not source.is_file():
            raise InputError("not a regular file (a dataset holds regular files only)", given / "src.txt")
    found = meta.get("human_scores")
    declared: dict[str, Any] = found if isinstance(found, dict) else {}
    kinds = tuple(HumanKindFiles(n, seg, sys_, hib, _display_text(declared.get(n) or {}, "name", meta_path), problem)
                  for n, seg, sys_, hib, problem in _human_entries(meta, meta_path, given, roots))
    declared_n = meta.get("n_segments")
    if declared_n is not None and (isinstance(declared_n, bool) or not isinstance(declared_n, int)):
        raise InputError(f"'n_segments' must be an integer, got {declared_n!r}", meta_path)
    return DatasetLayout(
        root=given.resolve(),
        name=_meta_name(meta, "name", meta_path) or given.resolve().name,  # see checked_name
        title=_display_text(meta, "title", meta_path),
        source_lang=_meta_str(meta, "source_lang", meta_path),
        target_lang=_meta_str(meta, "target_lang", meta_path),
        refs={stem: found_refs[stem] for stem in all_refs},
        systems=tuple(systems),
        source=source,
        primary_ref=primary,
        human_kinds=kinds,
        n_segments=declared_n,
        meta=meta,
        warnings=tuple(warnings),
        metrics=tuple(_metric_entries(given, roots)),
    )


# --------------------------------------------------------------------------------------------------------------
# step 2: the texts and human scores
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Dataset:
    """A dataset folder after every check: its layout, the texts in use and the human scores asked for."""

    layout: DatasetLayout
    refs: dict[str, TextFile]
    systems: tuple[tuple[SystemFile, TextFile], ...]
    source: TextFile | None
    n_segments: int
    human: dict[str, HumanScores]
    warnings: tuple[str, ...] = ()
    seg_map: SegMap | None = None  # checked when segment judgments are in use (:mod:`.seg_map`)

    @property
    def name(self) -> str:
        return checked_name(self.layout)


def choose_refs(layout: DatasetLayout, refs: Sequence[str] | None) -> list[str]:
    """The references in use: ``refs`` (each must exist, once), else every one in the layout's order."""
    all_refs = list(layout.refs)
    if refs is None:
        return all_refs
    chosen = list(refs)
    if not chosen:
        raise ConfigError("dataset.refs", "empty list of references", all_refs)
    for stem in chosen:
        if stem not in layout.refs:
            raise ConfigError("dataset.refs", f"unknown reference {stem!r} in {layout.root / 'refs'}", all_refs,
                              got=stem)
    dupes = [k for k, n in collections.Counter(chosen).items() if n > 1]
    if dupes:
        raise ConfigError("dataset.refs", f"{', '.join(dupes)} listed more than once", all_refs)
    return chosen


def choose_systems(layout: DatasetLayout, wanted: Sequence[str] | None) -> list[SystemFile]:
    """The systems in use: those named in ``wanted`` (a stem, or a name meaning all its versions), else all."""
    if wanted is None:
        return list(layout.systems)
    known = {s.stem for s in layout.systems} | {s.name for s in layout.systems}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise ConfigError("dataset.systems", f"unknown system {unknown[0]!r}", [s.stem for s in layout.systems],
                          got=unknown[0])
    return [s for s in layout.systems if s.stem in wanted or s.name in wanted]


def load_dataset(layout: DatasetLayout, *, refs: Sequence[str] | None = None,
                 systems: Sequence[str] | None = None, human: Sequence[str] | None = None,
                 strict: bool = False, shown_root: str | None = None) -> Dataset:
    """Read and check the texts of a dataset folder and the human scores of the kinds in ``human`` (None: all;
    empty: none, and no human file is read).

    Every text in use (references, ``src.txt``, systems) is read with :func:`read_text` and checked parallel, and
    against ``meta.json`` ``n_segments`` when given; human scores are checked against the systems and the
    segment count; with segment scores in use, the folder's ``seg_map.tsv`` (if it has one) is checked
    (:func:`~harness.job.seg_map.check_seg_map`). ``shown_root``: the folder as the user gave it, to name the texts
    in errors (``ds/systems/B.txt``); else errors name them relative to their common folder.
    """
    used_refs = choose_refs(layout, refs)
    chosen = choose_systems(layout, systems)

    def shown(path: Path) -> str:
        return os.path.join(str(shown_root), os.path.relpath(path, layout.root))

    def read(path: Path, name: str) -> TextFile:
        try:
            return read_text(path, strict=strict, name=name)
        except InputError as exc:
            if shown_root is None or exc.path != str(path):
                raise
            raise exc.relocated(shown(path), 0, 0) from None

    ref_files = {stem: read(layout.refs[stem], stem) for stem in used_refs}
    source = None if layout.source is None else read(layout.source, "src")
    system_files = tuple((s, read(s.path, s.stem)) for s in chosen)
    texts = [*ref_files.values(), *([source] if source is not None else []), *(t for _, t in system_files)]
    n_segments = check_parallel(texts, None if shown_root is None else [shown(t.path) for t in texts])
    if layout.n_segments is not None and layout.n_segments != n_segments:
        raise InputError(f"'n_segments' is {layout.n_segments!r} but the text files have {n_segments} lines",
                         layout.root / "meta.json")
    warnings = list(layout.warnings)
    for tf in texts:
        rel = os.path.relpath(tf.path, layout.root)
        warnings.extend(f"{rel}: {w}" for w in tf.warnings)
    by_hash: dict[str, str] = {}
    for stem, tf in ref_files.items():
        by_hash.setdefault(tf.sha256, stem)
    for s, tf in system_files:
        twin = by_hash.get(tf.sha256)
        if twin is not None and twin != s.stem:
            warnings.append(
                f"systems/{s.stem}.txt is byte-identical to refs/{twin}.txt (it would score 100 against it); "
                f"name it {twin}.txt if it is that human translation, to get leave-one-out scoring")
    kinds = {k.name: k for k in layout.human_kinds}
    selected = list(kinds) if human is None else list(human)
    for name in selected:
        if name not in kinds:
            raise ConfigError("human", f"the dataset has no human scores of kind {name!r}",
                              ["all", "none", *kinds], got=name)
    all_stems = [s.stem for s in layout.systems]
    scores: dict[str, HumanScores] = {}
    for name in selected:
        k = kinds[name]
        if k.problem is not None:
            raise InputError(k.problem, layout.root / "meta.json")
        hs = read_human_tsv(k.seg_path, k.sys_path, systems=all_stems, n_segments=n_segments, name=name,
                            higher_is_better=k.higher_is_better)
        scores[name] = hs
        warnings.extend(hs.warnings)
    seg_map = None
    if any(hs.has_segments for hs in scores.values()) and (layout.root / SEG_MAP).exists():
        declared = layout.meta.get("seg_map") or {}
        if not isinstance(declared, dict) or not isinstance(declared.get("id_order", ""), str):
            raise InputError("'seg_map' must be an object like {\"id_order\": \"documents_sorted\"}",
                             layout.root / "meta.json")
        seg_map = check_seg_map(resolve_under(layout.root, SEG_MAP, SEG_MAP), n_segments, declared.get("id_order"))
    return Dataset(layout, ref_files, system_files, source, n_segments, scores, tuple(warnings), seg_map)
