"""The configuration schema of a harness job: every key of ``conf/`` and of the command line, as dataclasses.

OmegaConf validates every YAML file and override against these (struct mode) when the Hydra app composes them;
keys force-added with ``+key=value`` bypass struct mode, so :func:`check_keys` walks the composed config again
and refuses anything the schema does not know, naming the key and the closest valid one. No config is ever
instantiated (``_target_`` is refused): variants map to BLEU options through our own registry.

This module imports neither Hydra nor OmegaConf: the app registers the schema (``harness.app``).
"""

from __future__ import annotations

import difflib
from dataclasses import MISSING, dataclass, field, fields, is_dataclass, make_dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, get_args, get_origin, get_type_hints

from ..core.options import OPTION_NAMES, SENTENCE_EFFECTIVE_ORDER, BleuOptions
from ..errors import ConfigError

# The config types of the BLEU options whose Python type OmegaConf cannot hold (tuples, unions with str).
_OPTION_TYPES: dict[str, Any] = {"weights": Optional[List[float]]}


def _option_field(name: str) -> tuple[str, Any, Any]:
    hint = get_type_hints(BleuOptions)[name]
    typ = _OPTION_TYPES.get(name)
    if typ is None:
        typ = hint if get_origin(hint) is None else Optional[next(a for a in get_args(hint) if a is not type(None))]
    default = next(f.default for f in fields(BleuOptions) if f.name == name)
    return name, typ, field(default=None if default is MISSING else default)


#: One BLEU variant (``conf/bleu/NAME.yaml``): its ``name``, every BLEU option (:data:`OPTION_NAMES`, the one
#: option list; null = the profile's default) and ``sentence_effective_order``, the effective order of its segment
#: level (null = the profile's: on where the profile has it, as sacrebleu's ``sentence_bleu``, WMT's sentBLEU).
BleuVariantConfig = make_dataclass("BleuVariantConfig",
                                   [("name", str, field(default="???")), *map(_option_field, OPTION_NAMES),
                                    (SENTENCE_EFFECTIVE_ORDER, Optional[bool], field(default=None))])


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
    """A dataset folder (DESIGN 1.6). ``name`` null: the folder's ``meta.json`` name, else the folder name."""

    root: Optional[str] = None
    name: Optional[str] = None
    refs: Optional[List[str]] = None
    refsets: Any = "all"
    systems: Optional[List[str]] = None
    strict: bool = False


@dataclass
class HumanConfig:
    """Which human judgments: ``select`` is ``all`` (every kind of the dataset), ``none``, one kind's name, or
    ``files`` (explicit TSVs: ``seg_path`` / ``sys_path``, kind ``name``, ``higher_is_better``)."""

    select: str = "all"
    name: Optional[str] = None
    seg_path: Optional[str] = None
    sys_path: Optional[str] = None
    higher_is_better: Optional[bool] = None


@dataclass
class HarnessConfig:
    experiment_name: Optional[str] = None
    description: str = ""
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    system: Optional[SystemConfig] = None
    refset: Optional[RefsetConfig] = None
    human: HumanConfig = field(default_factory=HumanConfig)
    bleu: Dict[str, BleuVariantConfig] = field(default_factory=dict)  # type: ignore[valid-type]
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
    figures: bool = True  # PNG + PDF figures of the job (false: a faster job, e.g. in a large sweep)
    paper_protocol: bool = False
    meta_eval: bool = False
    compare: List[List[str]] = field(default_factory=list)
    progress: Optional[bool] = None
    verbose: bool = False


#: Keys that change nothing in the job's results (where they go, how they are shown): left out of the job's name,
#: its hash and its identity in MLflow.
PRESENTATION_KEYS: frozenset[str] = frozenset({
    "output_dir", "runs_dir", "tracking_uri", "tracking", "tracking_retries", "tracking_timeout", "force",
    "progress", "verbose"})


#: The keys by which Hydra instantiates an object.
INSTANTIATION_KEYS = ("_target_", "_partial_", "_args_", "_recursive_", "_convert_")


def refuse_targets(node: Any, path: str = "", allowed: Callable[[str, Any], bool] = lambda path, value: False,
                   choices: Sequence[str] = ()) -> None:
    """No config of ours is ever instantiated; a ``_target_`` anywhere (e.g. ``+bleu.x._target_=os.system``) is an
    error rather than something silently carried into the saved config and MLflow params. ``allowed(path,
    value)`` admits a ``_target_`` the project ships (the ``hydra`` node's callbacks and launchers:
    :mod:`harness.composition`), ``choices`` lists them in the error."""
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}.{key}" if path else str(key)
            if key in INSTANTIATION_KEYS:
                if key == "_target_" and allowed(where, value):
                    continue
                raise ConfigError(where, f"object instantiation is not allowed in harness configs (got {value!r}); "
                                  "the harness instantiates only what it ships", list(choices))
            refuse_targets(value, where, allowed, choices)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            refuse_targets(value, f"{path}[{i}]", allowed, choices)


def schema_of(typ: Any) -> Any:
    """The dataclass inside ``Optional[...]`` / ``Dict[str, ...]`` annotations, or None for plain values."""
    origin = get_origin(typ)
    if origin is None:
        return typ if is_dataclass(typ) else None
    if origin in (dict, Dict):
        inner = schema_of(get_args(typ)[1])
        return {"*": inner} if inner is not None else None
    for arg in get_args(typ):
        found = schema_of(arg)
        if found is not None:
            return found
    return None


def check_keys(node: Any, schema: Any = HarnessConfig, path: str = "") -> None:
    """Refuse keys the schema does not know, however they were added (``+n_sampels=5000`` included), naming the
    closest valid key. ``node`` is the composed config as plain containers (``hydra`` excluded)."""
    if not isinstance(node, dict) or schema is None:
        return
    if isinstance(schema, dict):  # Dict[str, schema]: any key, each value checked
        for key, value in node.items():
            check_keys(value, schema["*"], f"{path}.{key}" if path else str(key))
        return
    hints = get_type_hints(schema)
    for key, value in node.items():
        where = f"{path}.{key}" if path else str(key)
        if key not in hints:
            close = difflib.get_close_matches(str(key), list(hints), n=1)
            hint = f"; did you mean {path + '.' if path else ''}{close[0]}?" if close else ""
            raise ConfigError(where, f"unknown configuration key{hint}", sorted(hints))
        check_keys(value, schema_of(hints[key]), where)
