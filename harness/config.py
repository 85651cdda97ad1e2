"""Structured configs: the schema every YAML file and override is validated against, and the conversion of the
composed Hydra config into plain frozen dataclasses (:class:`ExperimentSpec`) at start-up.

Nothing deeper than :func:`build_spec` ever sees a ``DictConfig``. Unknown keys are rejected by OmegaConf's struct
mode against these dataclasses; unknown tokenizers, smoothing methods, profiles and reference sets are rejected
here with a :class:`~harness.errors.ConfigError` that lists the valid choices, before any work starts. No config
is ever instantiated (no ``_target_``): variants map to BLEU options through our own registry.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from .bleu import BleuOptions, make_options
from .corpus import Dataset, TextFile, check_parallel, load_dataset, read_text, refset_name, safe_name
from .errors import ConfigError

log = logging.getLogger(__name__)

DEMO_DATASET = "wmt21_news_ende"


def bundled_data(name: str = "") -> str:
    """Absolute path of the data shipped inside the package (``harness/data/NAME``)."""
    root = Path(str(resources.files("harness") / "data"))
    return str(root / name) if name else str(root)


# ----------------------------------------------------------------------------------------------------------------
# The schema (OmegaConf structured configs; Optional[...] keys may be null)
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class BleuVariantConfig:
    """One BLEU variant (``conf/bleu/NAME.yaml``); null = the profile's default."""

    name: str = "???"
    profile: str = "sacrebleu"
    tokenize: Optional[str] = None
    lowercase: Optional[bool] = None
    smooth_method: Optional[str] = None
    smooth_value: Optional[float] = None
    max_ngram_order: int = 4
    effective_order: bool = False
    ref_length: Optional[str] = None
    weights: Optional[List[float]] = None
    auto_reweigh: bool = False


@dataclass
class SystemConfig:
    """One explicit MT system (``conf/system/``): a text file aligned with the references."""

    name: str = "???"
    path: str = "???"
    version: Optional[str] = None
    human: bool = False
    metadata: Dict[str, str] = field(default_factory=dict)


@dataclass
class RefsetConfig:
    """Explicit references (``conf/refset/``): one file per reference translation."""

    name: Optional[str] = None
    paths: List[str] = field(default_factory=list)


@dataclass
class DatasetConfig:
    """A dataset folder (DESIGN 1.6)."""

    root: Optional[str] = None
    name: Optional[str] = None
    refs: Optional[List[str]] = None
    refsets: Any = "all"
    systems: Optional[List[str]] = None
    strict: bool = False


@dataclass
class HumanConfig:
    """Human judgments: by default the dataset's ``human/`` folder; explicit TSV paths otherwise."""

    name: Optional[str] = None
    seg_path: Optional[str] = None
    sys_path: Optional[str] = None
    higher_is_better: Optional[bool] = None


@dataclass
class HarnessConfig:
    experiment_name: str = "demo"
    description: str = ""
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    system: Optional[SystemConfig] = None
    refset: Optional[RefsetConfig] = None
    human: Optional[HumanConfig] = None
    bleu: Dict[str, BleuVariantConfig] = field(default_factory=dict)
    output_dir: Optional[str] = None
    runs_dir: str = "runs"
    tracking_uri: Optional[str] = None
    tracking: bool = True
    tracking_retries: int = 2
    tracking_timeout: int = 10
    allowed_roots: Optional[List[str]] = None
    seed: int = 12345
    n_samples: int = 1000
    force: bool = False
    segment_table: bool = True
    significance: bool = True
    correlation: bool = True
    paper_protocol: bool = False
    progress: Optional[bool] = None


def register_configs() -> None:
    """Register the schema with Hydra's ConfigStore (``defaults: [harness_schema, ...]`` in config.yaml)."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name="harness_schema", node=HarnessConfig)


def register_resolvers() -> None:
    """``${harness_data:NAME}``: the absolute path of bundled data, so configs work after a wheel install."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("harness_data"):
        OmegaConf.register_new_resolver("harness_data", bundled_data)


# ----------------------------------------------------------------------------------------------------------------
# The validated experiment, as plain frozen dataclasses
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    name: str
    options: BleuOptions


@dataclass(frozen=True)
class SystemInput:
    name: str
    text: TextFile
    version: str | None = None
    human: bool = False
    metadata: Dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ExperimentSpec:
    """Everything a job needs, validated, with the inputs read and checked (equal line counts, hashes)."""

    experiment: str
    dataset: str
    systems: tuple[SystemInput, ...]
    refs: Dict[str, TextFile]
    refsets: tuple[tuple[str, ...], ...]
    variants: tuple[Variant, ...]
    human: Any
    seed: int
    n_samples: int
    output_dir: Path
    runs_dir: Path
    tracking_uri: str | None
    tracking_retries: int
    tracking_timeout: int
    force: bool
    segment_table: bool
    significance: bool
    correlation: bool
    paper_protocol: bool
    progress: bool | None
    n_segments: int
    config_yaml: str
    dataset_obj: Dataset | None = None

    def refs_for(self, system: SystemInput, refset: Sequence[str]) -> tuple[str, ...]:
        """The references a system is scored against: a human translation that is also a reference is scored
        against the *other* references (leave-one-out, like the paper's H1/H2)."""
        used = tuple(r for r in refset if r != system.name)
        if not used:
            raise ConfigError("dataset.refsets", f"system {system.name!r} is the only reference of refset "
                              f"{refset_name(refset)!r}; nothing is left to score it against")
        return used


def _choices(value: Any) -> Any:
    from omegaconf import DictConfig, ListConfig, OmegaConf

    if isinstance(value, (DictConfig, ListConfig)):
        return OmegaConf.to_container(value, resolve=True)
    return value


def build_variants(bleu: Dict[str, Any]) -> tuple[Variant, ...]:
    """Every selected ``conf/bleu`` variant as resolved options (a ConfigError names ``bleu.NAME.KEY``)."""
    if not bleu:
        raise ConfigError("bleu", "no BLEU variant selected; pick one or more, e.g. bleu=sacrebleu or "
                          "'bleu=[sacrebleu,intl]'")
    out = []
    for key, v in bleu.items():
        options = {k: _choices(v[k]) for k in ("profile", "tokenize", "lowercase", "smooth_method", "smooth_value",
                                               "max_ngram_order", "effective_order", "ref_length", "weights",
                                               "auto_reweigh")}
        if options["weights"] is not None:
            options["weights"] = tuple(options["weights"])
        try:
            opts = make_options(**options)
        except ConfigError as exc:
            raise ConfigError(f"bleu.{key}.{exc.key}", str(exc).split(": ", 1)[1].split(" (valid")[0],
                              exc.choices) from None
        out.append(Variant(str(v["name"] or key), opts))
    names = [v.name for v in out]
    if len(set(names)) != len(names):
        raise ConfigError("bleu", f"variant names must be unique, got {names}")
    return tuple(out)


def parse_refsets(value: Any, refs: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """``all`` (one set of every reference), ``each`` (every single one, then all together), or a list of lists."""
    value = _choices(value)
    if value == "all" or value is None:
        return (tuple(refs),)
    if value == "each":
        singles = tuple((r,) for r in refs)
        return singles + ((tuple(refs),) if len(refs) > 1 else ())
    if isinstance(value, list) and value and all(isinstance(x, list) and x for x in value):
        out = []
        for group in value:
            for stem in group:
                if stem not in refs:
                    raise ConfigError("dataset.refsets", f"unknown reference {stem!r}", list(refs))
            out.append(tuple(str(s) for s in group))
        return tuple(out)
    raise ConfigError("dataset.refsets", f"expected all, each or a list of lists of reference names, got {value!r}",
                      ["all", "each", "[[A],[A,B]]"])


def _allowed_roots(cfg: Any) -> list[Path]:
    roots = cfg.get("allowed_roots")
    if roots is None:
        return [Path.cwd().resolve(), Path(bundled_data()).resolve()]
    return [Path(str(r)).resolve() for r in roots]


def check_allowed(path: str, key: str, roots: Sequence[Path]) -> Path:
    """Refuse input paths outside the allowed roots (``allowed_roots``, default: the working directory and the
    bundled data), so a config or an override cannot make the job read arbitrary files."""
    resolved = Path(os.path.expanduser(path)).resolve()
    if not any(resolved == r or r in resolved.parents for r in roots):
        raise ConfigError(key, f"path {path!r} is outside the allowed roots; add its folder to allowed_roots",
                          [str(r) for r in roots])
    return resolved


def _human_scores(hcfg: Any, from_dataset: Any, systems: list[str], n_segments: int, roots: Sequence[Path]) -> Any:
    """The human judgments of the experiment: none, the dataset's (optionally one named score), or explicit TSVs."""
    from .corpus import read_human_tsv

    if hcfg is None or hcfg.name == "none":
        return None
    if hcfg.seg_path is None and hcfg.sys_path is None:
        return from_dataset
    seg = None if hcfg.seg_path is None else check_allowed(str(hcfg.seg_path), "human.seg_path", roots)
    sys_ = None if hcfg.sys_path is None else check_allowed(str(hcfg.sys_path), "human.sys_path", roots)
    return read_human_tsv(seg, sys_, systems=systems, n_segments=n_segments, name=str(hcfg.name or "human"),
                          higher_is_better=True if hcfg.higher_is_better is None else bool(hcfg.higher_is_better))


def refuse_targets(node: Any, path: str = "") -> None:
    """No config of ours is ever instantiated; a ``_target_`` anywhere (e.g. ``+bleu.x._target_=os.system``) is an
    error rather than something silently carried into the saved config and MLflow params."""
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}.{key}" if path else str(key)
            if key in ("_target_", "_partial_", "_args_"):
                raise ConfigError(where, "object instantiation is not allowed in harness configs")
            refuse_targets(value, where)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            refuse_targets(value, f"{path}[{i}]")


def build_spec(cfg: Any, output_dir: str | None = None) -> ExperimentSpec:
    """Validate the composed config and read every input; raises ConfigError / InputError before any scoring."""
    from omegaconf import OmegaConf

    refuse_targets(OmegaConf.to_container(cfg, resolve=False))
    roots = _allowed_roots(cfg)
    variants = build_variants(cfg.bleu)
    ds_cfg = cfg.dataset
    dataset: Dataset | None = None
    systems: list[SystemInput] = []
    refs: dict[str, TextFile] = {}
    human = None
    dataset_name = ds_cfg.name
    if ds_cfg.root is not None:
        root = check_allowed(str(ds_cfg.root), "dataset.root", roots)
        dataset = load_dataset(root, refs=_choices(ds_cfg.refs), strict=bool(ds_cfg.strict))
        dataset_name = dataset_name or dataset.name
        wanted = _choices(ds_cfg.systems)
        if wanted is not None:
            unknown = [s for s in wanted if s not in dataset.systems]
            if unknown:
                raise ConfigError("dataset.systems", f"unknown system {unknown[0]!r}", list(dataset.systems))
        for stem, text in dataset.systems.items():
            if wanted is None or stem in wanted:
                # systems/NAME@VERSION.txt is version VERSION of system NAME (split at the first '@'). A job
                # holds at most one version of a system: the tables and MLflow tags say system=NAME,
                # system_version=VERSION, and versions are compared across jobs (harness-history).
                name, at, version = stem.partition("@")
                if at and not (name and version):
                    raise ConfigError("dataset.root", f"systems/{stem}.txt: expected NAME@VERSION with a non-empty "
                                      "name and version")
                other = next((s for s in systems if s.name == name), None)
                if other is not None:
                    first = name if other.version is None else f"{name}@{other.version}"
                    raise ConfigError("dataset.systems", f"systems/{first}.txt and systems/{stem}.txt are two "
                                      f"versions of system {name!r}; a job scores one version of a system (select "
                                      f"one, or one job each: harness -m 'dataset.systems=[{first}],[{stem}]'; "
                                      "compare them with harness-history)", list(dataset.systems))
                systems.append(SystemInput(name, text, version or None, stem in dataset.human_systems))
        refs = dict(dataset.refs)
        human = dataset.human
    if cfg.refset is not None:
        paths = [str(p) for p in cfg.refset.paths]
        if not paths:
            raise ConfigError("refset.paths", "an explicit refset needs at least one file")
        refs = {}
        for p in paths:
            text = read_text(check_allowed(p, "refset.paths", roots), strict=bool(ds_cfg.strict))
            refs[safe_name(text.name, "refset.paths")] = text
    if cfg.system is not None:
        s = cfg.system
        name = safe_name(str(s.name), "system.name")
        text = read_text(check_allowed(str(s.path), "system.path", roots), strict=bool(ds_cfg.strict), name=name)
        systems = [x for x in systems if x.name != name]
        version = None if s.version is None else str(s.version)
        systems.append(SystemInput(name, text, version, bool(s.human), {str(k): str(v) for k, v in s.metadata.items()}))
    if not refs:
        raise ConfigError("dataset.root", "no references: give a dataset folder (dataset.root=DIR) or an explicit "
                          "refset (refset=NAME)")
    if not systems:
        raise ConfigError("system", "no systems to score: give a dataset folder or a system config")
    n_segments = check_parallel([*refs.values(), *(s.text for s in systems)])
    for text in [*refs.values(), *(s.text for s in systems)]:
        for warning in text.warnings:
            log.warning("%s: %s", text.path, warning)
    human = _human_scores(cfg.human, human, [s.name for s in systems], n_segments, roots)
    refsets = parse_refsets(ds_cfg.refsets, list(refs))
    experiment = str(cfg.experiment_name)
    runs_dir = Path(str(cfg.runs_dir)).resolve()
    out = Path(str(cfg.output_dir if cfg.output_dir is not None else output_dir or runs_dir / experiment)).resolve()
    tracking_uri = None if not cfg.tracking else (str(cfg.tracking_uri) if cfg.tracking_uri else
                                                   f"sqlite:///{runs_dir / 'mlflow.db'}")
    return ExperimentSpec(
        experiment=experiment,
        dataset=str(dataset_name or "custom"),
        systems=tuple(systems),
        refs=refs,
        refsets=refsets,
        variants=variants,
        human=human,
        seed=int(cfg.seed),
        n_samples=int(cfg.n_samples),
        output_dir=out,
        runs_dir=runs_dir,
        tracking_uri=tracking_uri,
        tracking_retries=int(cfg.tracking_retries),
        tracking_timeout=int(cfg.tracking_timeout),
        force=bool(cfg.force),
        segment_table=bool(cfg.segment_table),
        significance=bool(cfg.significance),
        correlation=bool(cfg.correlation),
        paper_protocol=bool(cfg.paper_protocol),
        progress=cfg.progress,
        n_segments=n_segments,
        config_yaml=OmegaConf.to_yaml(cfg, resolve=True),
        dataset_obj=dataset,
    )
