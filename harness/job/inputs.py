"""The inputs of a job, read once: systems, references, reference sets and the selected human scores.

From a :class:`~harness.job.spec.JobSpec`: a dataset folder (:mod:`harness.job.dataset`), an explicit system file,
explicit reference files, explicit human-score files. Everything is read and checked here, once, in one place;
the rest of the job works on the returned :class:`Inputs`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from ..core.families import ImportedScores
from ..errors import ConfigError, InputError
from ..text.reading import TextFile, check_parallel, read_text, safe_name
from .dataset import DatasetLayout, checked_name, choose_refs, choose_systems, load_dataset, read_layout, refset_name
from .human import HumanScores, read_human_tsv
from .metric_files import choose_metrics, read_metric
from .seg_map import SegMap
from .spec import JobSpec, parse_refsets

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SystemInput:
    """One system of the job: its ``name``, ``version`` (``systems/NAME@VERSION.txt``), text, whether it is a
    human translation, and free metadata (explicit systems)."""

    name: str
    version: str | None
    text: TextFile
    human: bool = False
    metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``NAME@VERSION`` (or ``NAME``): unique within a job; the key of human scores and of comparisons."""
        return self.name if self.version is None else f"{self.name}@{self.version}"


@dataclass(frozen=True, eq=False)
class Inputs:
    """Everything a job reads, checked: aligned texts (``n_segments`` lines each) and human scores."""

    dataset: str
    layout: DatasetLayout | None
    systems: tuple[SystemInput, ...]
    refs: dict[str, TextFile]
    refsets: tuple[tuple[str, ...], ...]
    human: tuple[HumanScores, ...]
    source: TextFile | None
    n_segments: int
    warnings: tuple[str, ...] = ()
    seg_map: SegMap | None = None  # the dataset's checked seg_map.tsv, when segment judgments use it
    metrics: tuple[ImportedScores, ...] = ()  # metrics scored elsewhere (metrics/NAME/ of the dataset)
    metric_files: tuple[Path, ...] = ()

    def refs_for(self, system: SystemInput, refset: tuple[str, ...]) -> tuple[str, ...]:
        """The references a system is scored against: a human translation that is also a reference is scored
        against the *other* references (leave-one-out, like the paper's H1/H2)."""
        used = tuple(r for r in refset if r != system.label)
        if not used:
            raise ConfigError("dataset.refsets", f"system {system.label!r} is the only reference of refset "
                              f"{refset_name(refset)!r}: a human translation is scored against the other references "
                              "(leave-one-out), so this refset needs at least one more reference")
        return used

    @property
    def full_refset(self) -> tuple[str, ...]:
        """The largest reference set of the job (ties: the first)."""
        return max(self.refsets, key=len)

    def input_hashes(self) -> dict[str, str]:
        """SHA-256 of every text scored, by role and name (``ref:ref-C``, ``system:Nemo@3``)."""
        out = {f"ref:{k}": v.sha256 for k, v in self.refs.items()}
        out.update({f"system:{s.label}": s.text.sha256 for s in self.systems})
        out.update({f"metric:{m.name}": m.sha256 for m in self.metrics})
        return out

    def files(self) -> list[Path]:
        """Every file this job read (a job's output folder must not hold any of them)."""
        out = [t.path for t in self.refs.values()] + [s.text.path for s in self.systems]
        for h in self.human:
            out += [p for p in (h.seg_path, h.sys_path) if p is not None]
        return out + list(self.metric_files) + ([self.source.path] if self.source is not None else [])


def layout_of(spec: JobSpec) -> DatasetLayout | None:
    """The dataset folder's layout (meta.json and file names), or None without a dataset folder."""
    return None if spec.dataset_root is None else read_layout(spec.dataset_root, spec.allowed_roots)


def dataset_name(spec: JobSpec, layout: DatasetLayout | None) -> str:
    """``dataset.name`` when given, else the folder's (``meta.json`` ``name``, else the folder name)."""
    if spec.dataset_name is not None:
        return spec.dataset_name
    return checked_name(layout) if layout is not None else "custom"


def check_selection(spec: JobSpec, layout: DatasetLayout | None) -> None:
    """What a job selects from its dataset folder must be there (references, systems, reference sets, the human
    kind): checked from the layout alone, before the job's folder is claimed or any text is read."""
    if layout is None:
        if spec.compare:
            system = spec.system
            labels = [] if system is None else [(system.label, system.name)]
            explicit = tuple(safe_name(p.stem, "refset.paths") for p in spec.refset_paths)
            comparison_pairs(spec, labels, explicit, "the job (one explicit system)")
        return
    refs = choose_refs(layout, spec.refs)
    choose_systems(layout, spec.systems)
    if not spec.refset_paths:
        parse_refsets(spec.refsets, refs)
    kinds = [k.name for k in layout.human_kinds]
    if spec.human.select not in ("all", "none", "files") and spec.human.select not in kinds:
        raise ConfigError("human", f"the dataset has no human scores of kind {spec.human.select!r}",
                          ["all", "none", *kinds], got=spec.human.select)
    if spec.compare:
        systems = [(s.stem, s.name) for s in choose_systems(layout, spec.systems)]
        if spec.system is not None:
            systems.append((spec.system.label, spec.system.name))
        full = refs if spec.refset_paths else max(parse_refsets(spec.refsets, refs), key=len)
        comparison_pairs(spec, systems, tuple(full), str(layout.root / "systems"))


def choose_pair(items: Sequence[str], systems: Sequence[tuple[str, str]], where: str,
                key: str = "systems") -> tuple[str, str]:
    """The two systems to compare: ``[A, B]`` (each ``NAME@VERSION``, or ``NAME`` when it has one version), or
    ``[NAME]`` for the last two versions of ``NAME``. ``systems``: the ``(label, name)`` of every system there is,
    versions in their order (natural order of ``systems/NAME@VERSION.txt``); ``where`` names them in errors and
    ``key`` is the option that asked."""
    labels = [label for label, _ in systems]
    if len(items) == 1:
        versions = [label for label, name in systems if name == items[0]]
        if len(versions) < 2:
            raise ConfigError(key, f"{items[0]!r} has {len(versions)} version(s) in {where}; one NAME compares its "
                              "last two versions (systems/NAME@VERSION.txt), else give two systems", labels,
                              got=items[0])
        return versions[-2], versions[-1]
    if len(items) != 2:
        raise ConfigError(key, f"expected two systems (A B) or one NAME with versions, got {len(items)}", labels)
    out = []
    for item in items:
        if item in labels:
            out.append(item)
            continue
        versions = [label for label, name in systems if name == item]
        if versions:
            raise ConfigError(key, f"{item!r} has several versions; name one (NAME@VERSION)", versions, got=item)
        raise ConfigError(key, f"unknown system {item!r} in {where}", labels, got=item)
    if out[0] == out[1]:
        raise ConfigError(key, f"{out[0]!r} is given twice; a system cannot be compared with itself")
    return out[0], out[1]


def comparison_pairs(spec: JobSpec, systems: Sequence[tuple[str, str]], full_refset: tuple[str, ...],
                     where: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """The job's ``compare=[[A, B], [NAME], ...]`` as ``(label A, label B, references)``: both systems scored
    against the largest reference set less any of the two that is a reference (leave-one-out, so both are scored
    against the same references). ``systems``: ``(label, name)`` of every system of the job, in order."""
    if not any(v.additive for v in spec.variants):
        raise ConfigError("compare", "comparing systems needs a variant whose score is a function of summed "
                          "statistics (not only the nltk profile)", [v.name for v in spec.variants])
    out = []
    for items in spec.compare:
        a, b = choose_pair(items, systems, where, key="compare")
        refs = tuple(r for r in full_refset if r not in (a, b))
        if not refs:
            raise ConfigError("compare", f"no reference left to compare {a!r} and {b!r}: each of the references "
                              f"{refset_name(full_refset)!r} is one of them (a human translation is compared "
                              "against the other references)", got=list(items))
        out.append((a, b, refs))
    return out


def _scores_of_its_text(human: list[HumanScores], label: str, text: TextFile, layout: DatasetLayout | None
                        ) -> tuple[list[HumanScores], list[str]]:
    """A dataset's human scores of ``label`` belong to the dataset's text of that name (``systems/LABEL.txt``),
    identified by its hash: an explicit system of the same name (the dataset's left out with
    ``dataset.systems``) gets them only if it is that very text; else none, and a warning says so."""
    import hashlib

    if not any(label in h.seg or label in h.sys for h in human):
        return human, []
    theirs = None
    if layout is not None:
        found = next((s for s in layout.systems if s.stem == label), None)
        if found is not None:
            theirs = hashlib.sha256(found.path.read_bytes()).hexdigest()
    if theirs == text.sha256:
        return human, []
    note = (f"system {label!r} ({text.path}) is not the dataset's text of that name, so the dataset's human scores "
            f"of {label!r} are not used for it (give its own with human=tsv)")
    log.warning("%s", note)
    return [h.without([label]) for h in human], [note]


def load_inputs(spec: JobSpec, layout: DatasetLayout | None) -> Inputs:
    """Read and check every input of the job (raises ConfigError / InputError before any scoring)."""
    systems: list[SystemInput] = []
    refs: dict[str, TextFile] = {}
    human: list[HumanScores] = []
    warnings: list[str] = []
    source = None
    seg_map = None
    select = spec.human.select
    if layout is not None:
        kinds = None if select == "all" else [] if select in ("none", "files") else [select]
        ds = load_dataset(layout, refs=spec.refs, systems=spec.systems, human=kinds, strict=spec.strict)
        systems = [SystemInput(f.name, f.version, text, f.human) for f, text in ds.systems]
        refs = dict(ds.refs)
        human = list(ds.human.values())
        source = ds.source
        seg_map = ds.seg_map
        warnings += ds.warnings
    elif select not in ("all", "none", "files"):
        raise ConfigError("human", f"human={select} selects a kind of human scores of a dataset folder, and there is "
                          "none; give dataset.root, or explicit files (human=tsv human.seg_path=...)", got=select)
    if spec.refset_paths:
        refs = {}
        for path in spec.refset_paths:
            text = read_text(path, strict=spec.strict)
            refs[safe_name(text.name, "refset.paths")] = text
    if spec.system is not None:
        s = spec.system
        label = s.label
        twin = next((x for x in systems if x.label in (label, s.name) or (x.name == s.name and s.version is None)),
                    None)
        if twin is not None:
            raise ConfigError("system.name", f"system {s.name!r} ({s.path}) has the name of the dataset's system "
                              f"{twin.label!r} ({twin.text.path}), whose human scores would be taken for it; give it "
                              "another name, or leave the dataset's out with dataset.systems=[...]", got=s.name)
        if label in refs and not s.human:
            raise ConfigError("system.name", f"{label!r} is the name of a reference: a system of that name is scored "
                              "against the other references (leave-one-out, for a human translation that is also a "
                              "reference); give it another name, or say it is that translation with "
                              "system.human=true", list(refs), got=label)
        text = read_text(s.path, strict=spec.strict, name=s.name)
        systems.append(SystemInput(s.name, s.version, text, s.human, dict(s.metadata)))
        human, note = _scores_of_its_text(human, label, text, layout)
        warnings += note
    if not systems:
        raise ConfigError("dataset.systems", "no systems to score")
    labels = [s.label for s in systems]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise ConfigError("system", f"system {dup[0]!r} appears twice")
    n_segments = check_parallel([*refs.values(), *(s.text for s in systems)])
    if layout is None:
        for text in [*refs.values(), *(s.text for s in systems)]:
            warnings += [f"{text.path}: {w}" for w in text.warnings]
    if spec.human.select == "files":
        h = spec.human
        human = [read_human_tsv(h.seg_path, h.sys_path, systems=labels, n_segments=n_segments,
                                name=str(h.name), higher_is_better=h.higher_is_better)]
        warnings += human[0].warnings
    refsets = parse_refsets(spec.refsets, list(refs))
    metrics: list[ImportedScores] = []
    metric_files: list[Path] = []
    if layout is not None:
        chosen = choose_metrics(layout.metrics, spec.metrics)
        stems = [s.stem for s in layout.systems]
        for files in chosen:
            metrics.append(read_metric(files, labels, stems, n_segments, [s.label for s in systems if s.human]))
            metric_files += [p for p in (files.seg_path, files.sys_path) if p is not None]
    elif spec.metrics not in ("all", "none"):
        raise ConfigError("metrics", "imported metrics are read from a dataset folder (metrics/NAME/), and there is "
                          "none; give dataset.root", got=list(spec.metrics))
    inputs = Inputs(dataset_name(spec, layout), layout, tuple(systems), refs, refsets, tuple(human), source,
                    n_segments, tuple(warnings), seg_map, tuple(metrics), tuple(metric_files))
    for refset in refsets:
        for system in systems:
            inputs.refs_for(system, refset)
    if n_segments == 0:
        raise InputError("no segments to score")
    return inputs


@dataclass(frozen=True, eq=False)
class ComparedInputs:
    """What a comparison of systems of a dataset folder reads (``harness-compare --dataset``, ``harness-history
    --compare``): the systems' labels and texts (the baseline first), the references in use, the source, one kind
    of human scores (or None) with its display title, the dataset's name and the warnings of reading."""

    labels: tuple[str, ...]
    systems: tuple[TextFile, ...]
    refs: tuple[TextFile, ...]
    source: TextFile | None
    human: HumanScores | None
    human_title: str | None
    dataset: str
    warnings: tuple[str, ...]


def compared_inputs(layout: DatasetLayout, stems: Sequence[str], refs: Sequence[str] | None = None,
                    human: str | None = None, shown_root: str | None = None) -> ComparedInputs:
    """Systems ``stems`` of a dataset folder, its references (``refs``, default all) less any of them that is one
    of the systems (leave-one-out), its source, and the human scores of kind ``human`` (None: the first kind;
    ``"none"``: none). ``shown_root``: the folder as the user gave it, to name its texts in errors."""
    kinds = [k.name for k in layout.human_kinds]
    if human is None:
        chosen: list[str] = kinds[:1]
    elif human == "none":
        chosen = []
    else:
        if human not in kinds:
            raise ConfigError("human", f"the dataset has no human scores of kind {human!r}", ["none", *kinds],
                              got=human)
        chosen = [human]
    in_use = choose_refs(layout, refs)
    used = [r for r in in_use if r not in stems]
    if not used:
        raise ConfigError("refs", f"no reference left: {', '.join(map(repr, in_use))} "
                          f"{'is' if len(in_use) == 1 else 'are'} among the systems compared, and a human translation "
                          "is compared against the other references", list(layout.refs))
    ds = load_dataset(layout, refs=used, systems=list(stems), human=chosen, shown_root=shown_root)
    by_stem = {f.stem: t for f, t in ds.systems}
    scores = ds.human[chosen[0]] if chosen else None
    title = next((k.title for k in layout.human_kinds if chosen and k.name == chosen[0]), None)
    return ComparedInputs(tuple(stems), tuple(by_stem[s] for s in stems), tuple(ds.refs[r] for r in used), ds.source,
                          scores, title or (chosen[0] if chosen else None), ds.name, tuple(ds.warnings))


def pair_inputs(layout: DatasetLayout, items: Sequence[str], refs: Sequence[str] | None = None,
                human: str | None = None) -> ComparedInputs:
    """Two systems of a dataset folder (``[A, B]``, or ``[NAME]`` for its last two versions):
    :func:`compared_inputs` of that pair."""
    stems = choose_pair(items, [(s.stem, s.name) for s in layout.systems], str(layout.root / "systems"))
    return compared_inputs(layout, stems, refs, human)
