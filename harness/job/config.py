"""The configuration schema of a harness job: every key of ``conf/`` and of the command line, as dataclasses, and
the one place their defaults live (``conf/config.yaml`` only chooses the config groups; ``harness --cfg job``
prints every key with its value).

OmegaConf validates every YAML file and override against these (struct mode) when the Hydra app composes them and
gives the job a :class:`HarnessConfig` (``OmegaConf.to_object``); callers without Hydra (the tests, the tools)
pass plain containers, which :func:`harness_config` checks and types the same way, defaults from here. Keys
force-added with ``+key=value`` bypass struct mode, so :func:`check_keys` refuses anything the schema does not
know, naming the key and the closest valid one. No config is ever instantiated (``_target_`` is refused): variants
map to BLEU options through our own registry.

This module imports neither Hydra nor OmegaConf: the app registers the schema (``harness.app``).
"""

from __future__ import annotations

import difflib
from dataclasses import MISSING, dataclass, field, fields, is_dataclass, make_dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, get_args, get_origin, get_type_hints

from ..core.chrf import ChrfOptions
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
#: option list; null = the profile's default; a null ``tokenize`` in a profile that reads the target language is
#: the tokenizer its ``language_tokenizer`` rule picks for the dataset's target language: ``sacrebleu`` (null)
#: as ``sacrebleu -l``, or ``wmt21``), and ``sentence_effective_order``, the effective order of its segment level
#: (null = the profile's: on where the profile has it, as sacrebleu's ``sentence_bleu``, WMT's sentBLEU).
BleuVariantConfig = make_dataclass("BleuVariantConfig",
                                   [("name", str, field(default="???")), *map(_option_field, OPTION_NAMES),
                                    (SENTENCE_EFFECTIVE_ORDER, Optional[bool], field(default=None)),
                                    ("language_tokenizer", Optional[str], field(default=None))])


#: One chrF variant (``conf/chrf/NAME.yaml``): its ``name`` and sacrebleu's ``CHRF`` options, the fields of
#: :class:`~harness.core.chrf.ChrfOptions` with their defaults (``word_order: 2`` is chrF++).
ChrfVariantConfig = make_dataclass("ChrfVariantConfig", [("name", str, field(default="???")),
                                                         *((f.name, get_type_hints(ChrfOptions)[f.name],
                                                            field(default=f.default)) for f in fields(ChrfOptions))])


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
    """A dataset folder (docs/contracts.md §6). ``name`` null: the folder's ``meta.json`` name, else the folder's
    name."""

    root: Optional[str] = None
    name: Optional[str] = None
    #: The target language (``ja``, ``zh``, ...; null = ``meta.json``'s ``target_lang``): the variants that leave
    #: the tokenizer to it take the one their rule picks (sacrebleu's: ``zh``, ``ja-mecab``, ``ko-mecab``, else 13a).
    target_lang: Optional[str] = None
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
    """A job. Every key can be overridden on the command line (``key=value``; ``-m`` sweeps)."""

    #: The MLflow experiment and the folder under ``runs_dir``: the bundle's name; null = the dataset's name (and a
    #: ``dataset.root`` given on the command line names the experiment after the dataset unless this is given too).
    experiment_name: Optional[str] = None
    description: str = ""
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    system: Optional[SystemConfig] = None
    refset: Optional[RefsetConfig] = None
    human: HumanConfig = field(default_factory=HumanConfig)
    bleu: Dict[str, BleuVariantConfig] = field(default_factory=dict)  # type: ignore[valid-type]
    #: chrF variants (``conf/chrf``: ``chrf``, ``chrf++``), scored beside BLEU's in the same grid, tables and study.
    chrf: Dict[str, ChrfVariantConfig] = field(default_factory=dict)  # type: ignore[valid-type]
    #: Metrics scored elsewhere, read from the dataset folder's ``metrics/NAME/`` and ranked beside BLEU and chrF:
    #: ``all`` (every one the dataset has), ``none``, or a list of names.
    metrics: Any = "all"
    #: Tables, report and figures of this job (null = ``runs_dir/<experiment_name>/<job name>-<hash>``).
    output_dir: Optional[str] = None
    #: Where generated output, the statistics cache and the local MLflow store live.
    runs_dir: str = "runs"
    #: MLflow tracking URI; null = a SQLite file under runs_dir (``runs/mlflow.db``), artifacts in
    #: ``runs/mlartifacts``.
    tracking_uri: Optional[str] = None
    tracking: bool = True
    tracking_retries: int = 2
    tracking_timeout: int = 10
    #: Paths that config files and dataset files (``meta.json`` entries, symlinks) may point to (null = the working
    #: directory); paths given on the command line and the bundled data are always allowed.
    allowed_roots: Optional[List[str]] = None
    #: Resampling (bootstrap intervals, paired tests, correlation intervals): an explicit seed, sacrebleu's default.
    seed: int = 12345
    n_samples: int = 1000
    #: Recompute the statistics even if they are cached under ``runs/cache``.
    force: bool = False
    segment_table: bool = True
    significance: bool = True
    correlation: bool = True
    figures: bool = True  # the job's figures (false: a faster job, e.g. in a large sweep)
    #: The files each figure is written as: PNG always (the report and MLflow show it), ``pdf`` and ``svg`` (vector,
    #: for a paper) on request, e.g. ``figure_formats=[png,pdf]``: a PDF costs a third of a figure's drawing time.
    figure_formats: List[str] = field(default_factory=lambda: ["png"])
    paper_protocol: bool = False
    meta_eval: bool = False
    #: Pairs of systems to compare in depth (``[[A,B],...]``, or ``[[NAME]]`` for its last two versions): a
    #: comparison page each (as ``harness-compare``).
    compare: List[List[str]] = field(default_factory=list)
    #: Progress bars on stderr: null = only when stderr is a terminal.
    progress: Optional[bool] = None
    #: MLflow's and alembic's logs too.
    verbose: bool = False


#: What ``figure_formats`` may name (matplotlib's writers), in the order a figure's files are written.
FIGURE_FORMATS = ("png", "pdf", "svg")


#: Keys that change nothing in the job's results (where they go, how they are shown): left out of the job's name,
#: its hash and its identity in MLflow.
PRESENTATION_KEYS: frozenset[str] = frozenset({
    "output_dir", "runs_dir", "tracking_uri", "tracking", "tracking_retries", "tracking_timeout", "force",
    "progress", "verbose", "figure_formats"})


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


def check_node(node: Mapping[str, Any], schema: Any = HarnessConfig) -> None:
    """No ``_target_`` anywhere and no key the schema does not know (:func:`refuse_targets`, :func:`check_keys`):
    what struct mode misses in a composed config (keys force-added with ``+key=value``)."""
    refuse_targets(dict(node))
    check_keys(dict(node), schema)


def harness_config(node: Mapping[str, Any]) -> HarnessConfig:
    """A composed config given as plain containers (``hydra`` excluded), checked (:func:`check_node`) and typed:
    every key it leaves out takes the schema's default. Values are not converted;
    :func:`harness.job.spec.build_spec` checks them."""
    check_node(node)
    return _typed(dict(node), HarnessConfig)


def bleu_variant(node: Mapping[str, Any]) -> Any:
    """One BLEU variant given as a plain mapping, checked and typed (a ``BleuVariantConfig``)."""
    check_node(node, BleuVariantConfig)
    return _typed(dict(node), BleuVariantConfig)


def chrf_variant(node: Mapping[str, Any]) -> Any:
    """One chrF variant given as a plain mapping, checked and typed."""
    check_node(node, ChrfVariantConfig)
    return _typed(dict(node), ChrfVariantConfig)


def _typed(node: Mapping[str, Any], schema: Any) -> Any:
    hints = get_type_hints(schema)
    values = {}
    for key, value in node.items():
        inner = schema_of(hints[key])
        if isinstance(inner, dict) and isinstance(value, Mapping):
            value = {k: _typed(v, inner["*"]) if isinstance(v, Mapping) else v for k, v in value.items()}
        elif inner is not None and isinstance(value, Mapping):
            value = _typed(value, inner)
        values[key] = value
    return schema(**values)
