"""The spec of a job: what to score and where results go, validated from the composed config, reading nothing.

:func:`build_spec` turns the composed configuration (a :class:`~.config.HarnessConfig`, or plain containers typed
by :func:`~.config.harness_config`) and the command-line overrides into a frozen :class:`JobSpec`. It checks every
value that can be checked without reading an input: keys, BLEU variants and tokenizers, seed range, ``n_samples``,
reference-set syntax, paths of the outputs (not a file, not under a file, writable). Reading the inputs is
:mod:`harness.job.inputs`' job.

Names and places (docs/contracts.md §7): a job's folder is ``runs_dir/<experiment>/<job>``, one level, ``<job>``
a short readable name from the meaningful overrides (a path value shortened to its last component) plus a short
hash of the override list, so different jobs never collide and ``runs/<experiment>/*/system_scores.parquet`` finds
every job. ``experiment_name`` defaults to the bundle's, or to the dataset's name when ``dataset.root`` comes from the
command line (user data never lands in ``demo``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..core.chrf import CHRF_OPTION_NAMES, make_chrf_options
from ..core.families import FAMILIES, Family, ImportedScores
from ..core.options import (
    LANGUAGE_RULES,
    OPTION_NAMES,
    SENTENCE_EFFECTIVE_ORDER,
    language_of,
    language_tokenizer,
    make_options,
    sentence_options,
)
from ..core.profiles import get_profile
from ..core.resampling import check_n_samples, check_seed
from ..errors import ConfigError
from ..text.reading import safe_name
from .config import FIGURE_FORMATS, PRESENTATION_KEYS, HarnessConfig, bleu_variant, chrf_variant, harness_config

DEMO_DATASET = "wmt21_news_ende"
#: ``dataset.refsets`` values besides an explicit list of lists.
REFSET_MODES = ("all", "each")
HUMAN_SELECT = ("all", "none", "files")


def bundled_data(name: str = "") -> str:
    """Absolute path of the data shipped inside the package (``harness/data/NAME``)."""
    root = Path(str(resources.files("harness") / "data"))
    return str(root / name) if name else str(root)


@dataclass(frozen=True)
class Variant:
    """One variant of the job: its config name, metric ``family`` (``bleu`` or ``chrf``,
    :mod:`harness.core.families`), resolved options (corpus level) and the options of its segment level (BLEU:
    :func:`~harness.core.options.sentence_options`, effective order on by default, WMT's sentBLEU; chrF: the same
    options). ``language``: the target language that picked a BLEU variant's tokenizer, and the rule that did
    (None: the tokenizer is the variant's own or the profile's default)."""

    name: str
    options: Any  # BleuOptions or ChrfOptions, as the family says
    sentence: Any
    language: tuple[str, str] | None = None
    family: str = "bleu"

    @property
    def measure(self) -> Family:
        return FAMILIES[self.family]

    @property
    def is_bleu(self) -> bool:
        return self.family == "bleu"

    @property
    def complete(self) -> bool:
        """Whether the variant scores every system (an imported metric may lack the human translation it used as
        its reference: it is then compared on the MT systems only)."""
        return self.family != "scores" or not self.options.missing

    @property
    def has_segments(self) -> bool:
        """Whether the variant scores segments (an imported metric may have system scores only)."""
        return self.family != "scores" or self.options.seg is not None

    @property
    def additive(self) -> bool:
        """Whether the score is a function of summed statistics (then it has intervals and paired tests)."""
        return self.measure.additive(self.options)

    def corpus(self, stats: Any) -> Any:
        return self.measure.corpus(stats, self.options)

    def sentences(self, stats: Any) -> Any:
        return self.measure.sentences(stats, self.sentence)

    def score_fn(self) -> Any:
        return self.measure.score_fn(self.options)

    def stack(self, stats: Sequence[Any]) -> Any:
        return self.measure.stack(stats, self.options)

    def sentence_signature(self, nrefs: int | str) -> str:
        return self.measure.signature(self.sentence, nrefs)

    def params(self) -> dict[str, Any]:
        return self.measure.params(self.options, self.sentence)


@dataclass(frozen=True)
class ExplicitSystem:
    """A system given by path (``system=...``) rather than found in a dataset folder."""

    name: str
    path: Path
    version: str | None
    human: bool
    metadata: Mapping[str, str]

    @property
    def label(self) -> str:
        """``NAME@VERSION`` (or ``NAME``), as the job's tables name it."""
        return self.name if self.version is None else f"{self.name}@{self.version}"


@dataclass(frozen=True)
class HumanSelection:
    """Which human judgments: ``select`` is ``all``, ``none``, a kind of the dataset, or ``files`` (explicit)."""

    select: str = "all"
    name: str | None = None
    seg_path: Path | None = None
    sys_path: Path | None = None
    higher_is_better: bool = True


@dataclass(frozen=True)
class JobSpec:
    """Everything a job is, described; nothing read yet."""

    experiment: str | None
    job_name: str
    output_dir: Path | None
    runs_dir: Path
    dataset_root: Path | None
    dataset_name: str | None
    refs: tuple[str, ...] | None
    refsets: Any
    systems: tuple[str, ...] | None
    strict: bool
    system: ExplicitSystem | None
    refset_paths: tuple[Path, ...]
    human: HumanSelection
    variants: tuple[Variant, ...]
    seed: int
    n_samples: int
    significance: bool
    correlation: bool
    figures: bool
    paper_protocol: bool
    meta_eval: bool
    compare: tuple[tuple[str, ...], ...]  # [A, B], or [NAME] for its last two versions
    segment_table: bool
    force: bool
    progress: bool | None
    verbose: bool
    tracking_uri: str | None
    tracking_retries: int
    tracking_timeout: int
    allowed_roots: tuple[Path, ...]
    overrides: tuple[str, ...]
    target_lang: str | None = None  # dataset.target_lang (None: the dataset's meta.json says, if anything)
    metrics: str | tuple[str, ...] = "all"  # imported metrics: all, none, or names (metrics/NAME/ of the dataset)
    figure_formats: tuple[str, ...] = ("png",)  # the files of each figure (png first)
    config: Mapping[str, Any] = field(repr=False, compare=False, default_factory=dict)

    def folder(self, experiment: str) -> Path:
        """The job's folder: ``output_dir`` when given, else ``runs_dir/<experiment>/<job_name>``, checked to lie
        one level under ``runs_dir/<experiment>`` (``experiment`` may come from a file: ``meta.json``'s name)."""
        if self.output_dir is not None:
            return self.output_dir
        safe_name(experiment, "experiment_name")
        folder = self.runs_dir / experiment / self.job_name
        if folder.resolve().parent.parent != self.runs_dir.resolve():
            raise ConfigError("experiment_name", f"the job's folder {folder} would not lie under runs_dir "
                              f"{self.runs_dir}", got=experiment)
        return folder

    def for_target_language(self, found: str | None) -> JobSpec:
        """The spec with its variants' tokenizers picked for the target language: ``dataset.target_lang``, else
        ``found`` (the dataset's ``meta.json``), else none (every variant keeps its own or the profile's)."""
        lang = self.target_lang or found
        if not lang:
            return self
        return replace(self, variants=build_variants(self.config.get("bleu") or {}, lang,
                                                     self.config.get("chrf") or {}))

    def language_choices(self) -> dict[tuple[str, str, str], list[str]]:
        """``(language, rule, tokenizer) -> variant names``: the tokenizers the target language picked."""
        picked: dict[tuple[str, str, str], list[str]] = {}
        for v in self.variants:
            if v.language is not None:
                picked.setdefault((*v.language, str(v.options.tokenize)), []).append(v.name)
        return picked

    def with_imported(self, metrics: Sequence[ImportedScores]) -> JobSpec:
        """The spec with a variant (family ``scores``) for every imported metric, after BLEU's and chrF's."""
        if not metrics:
            return self
        added = tuple(Variant(m.name, m, m, None, "scores") for m in metrics)
        names = [v.name for v in (*self.variants, *added)]
        clash = sorted({n for n in names if names.count(n) > 1})
        if clash:
            raise ConfigError("metrics", f"the imported metric {clash[0]!r} has the name of a variant of the job; "
                              "rename its folder or the variant", got=clash[0])
        return replace(self, variants=self.variants + added)

    def experiment_for(self, dataset_name: str | None) -> str:
        """The MLflow experiment (and folder under ``runs_dir``): the configured one, else the dataset's name."""
        return self.experiment or dataset_name or "custom"

    @property
    def identity(self) -> dict[str, Any]:
        """What makes two jobs the same job (before input hashes): the resolved config without the keys that only
        say where results go or how they are shown."""
        return {k: v for k, v in self.config.items() if k not in PRESENTATION_KEYS}


# ---------------------------------------------------------------------------------------------------------------
# pieces
# ---------------------------------------------------------------------------------------------------------------


def build_variants(bleu: Mapping[str, Any], target_lang: str | None = None, chrf: Mapping[str, Any] | None = None
                   ) -> tuple[Variant, ...]:
    """Every selected ``conf/bleu`` variant (a ``BleuVariantConfig``) as resolved options (a ConfigError names
    ``bleu.NAME.KEY``); a variant that leaves the tokenizer to a profile that reads the target language gets the
    one its rule picks for ``target_lang`` (:func:`~harness.core.options.language_tokenizer`)."""
    if not bleu and not chrf:
        raise ConfigError("bleu", "no BLEU or chrF variant selected; pick one or more, e.g. bleu=sacrebleu or "
                          "'bleu=[sacrebleu,intl]' or 'chrf=[chrf,chrf++]'")
    out = []
    for key, v in _typed_variants(bleu, "bleu", bleu_variant, "a BLEU variant"):
        options = {name: getattr(v, name) for name in OPTION_NAMES}
        if options["weights"] is not None:
            options["weights"] = tuple(options["weights"])
        rule = v.language_tokenizer or "sacrebleu"
        language = None
        try:
            if rule not in LANGUAGE_RULES:
                raise ConfigError("language_tokenizer", f"unknown rule {rule!r}", list(LANGUAGE_RULES), got=rule)
            if options["tokenize"] is None and target_lang and get_profile(options["profile"]).language_tokenizer:
                options["tokenize"] = language_tokenizer(target_lang, rule)
                language = (language_of(target_lang), rule)
            opts = make_options(**options)
            sentence = sentence_options(opts, getattr(v, SENTENCE_EFFECTIVE_ORDER))
        except ConfigError as exc:
            raise exc.under(f"bleu.{key}") from None
        name = v.name if v.name not in (None, "", "???") else key
        out.append(Variant(safe_name(str(name), f"bleu.{key}.name"), opts, sentence, language))
    out += chrf_variants(chrf or {})
    names = [v.name for v in out]
    if len(set(names)) != len(names):
        raise ConfigError("bleu", f"variant names must be unique (BLEU's and chrF's together), got {names}")
    return tuple(out)


def _typed_variants(node: Mapping[str, Any], group: str, typed: Any, what: str) -> list[tuple[str, Any]]:
    """The variants of a config group, each typed by its schema (plain mappings are checked and typed)."""
    out = []
    for key, v in node.items():
        if isinstance(v, Mapping):
            v = typed(v)
        if not hasattr(v, "name"):
            raise ConfigError(f"{group}.{key}", f"expected {what} (its options), got {v!r}", got=v)
        out.append((key, v))
    return out


def chrf_variants(chrf: Mapping[str, Any]) -> list[Variant]:
    """Every selected ``conf/chrf`` variant as resolved :class:`~harness.core.chrf.ChrfOptions` (a ConfigError
    names ``chrf.NAME.KEY``)."""
    out = []
    for key, v in _typed_variants(chrf, "chrf", chrf_variant, "a chrF variant"):
        try:
            opts = make_chrf_options(**{k: getattr(v, k) for k in CHRF_OPTION_NAMES})
        except ConfigError as exc:
            raise exc.under(f"chrf.{key}") from None
        name = v.name if v.name not in (None, "", "???") else key
        out.append(Variant(safe_name(str(name), f"chrf.{key}.name"), opts, opts, None, "chrf"))
    return out


def parse_refsets(value: Any, refs: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """``all`` (one set of every reference), ``each`` (every single one, then all together), or a list of lists."""
    if value == "all" or value is None:
        return (tuple(refs),)
    if value == "each":
        singles = tuple((r,) for r in refs)
        return singles + ((tuple(refs),) if len(refs) > 1 else ())
    if isinstance(value, (list, tuple)) and value and all(isinstance(x, (list, tuple)) and x for x in value):
        out: list[tuple[str, ...]] = []
        for group in value:
            for stem in group:
                if stem not in refs:
                    raise ConfigError("dataset.refsets", f"unknown reference {stem!r}", list(refs), got=stem)
            names = tuple(str(s) for s in group)
            if len(set(names)) != len(names):
                raise ConfigError("dataset.refsets", f"reference set {list(names)} names a reference twice (it would "
                                  "count as two references)", got=list(names))
            if names in out:
                raise ConfigError("dataset.refsets", f"reference set {list(names)} is given twice", got=list(names))
            out.append(names)
        return tuple(out)
    raise ConfigError("dataset.refsets", f"expected all, each or a list of lists of reference names, got {value!r}",
                      ["all", "each", "[[A],[A,B]]"], got=value)


def _check_refsets_syntax(value: Any) -> Any:
    """The form of ``dataset.refsets`` (names are checked once the references are known)."""
    if value in REFSET_MODES or value is None:
        return value
    if isinstance(value, list) and value and all(isinstance(x, list) and x for x in value):
        for group in value:
            for stem in group:
                safe_name(stem, "dataset.refsets")
        return value
    raise ConfigError("dataset.refsets", f"expected all, each or a list of lists of reference names, got {value!r}",
                      ["all", "each", "[[A],[A,B]]"], got=value)


def override_keys(overrides: Sequence[str]) -> dict[str, str]:
    """``key -> value`` of command-line overrides (``+key=v``, ``++key=v`` and ``~key`` included)."""
    out = {}
    for item in overrides:
        key, _, value = item.lstrip("+~").partition("=")
        out[key] = value
    return out


def _short_value(value: str) -> str:
    """A value as it appears in a job folder's name: a list joined with ``+``, a path shortened to its last
    component."""
    items = [v.strip(" '\"") for v in re.sub(r"[\[\]]", "", value).split(",")] if value.startswith("[") else [value]
    return "+".join(re.split(r"[/\\]+", v.rstrip("/\\"))[-1] or v for v in items)


#: Config keys whose values are paths: resolved (``~`` expanded, absolute, links followed) before they name or
#: identify a job, so ``dataset.root=ds`` and ``dataset.root=/abs/ds`` are one job, one folder, one MLflow record.
PATH_KEYS = ("dataset.root", "system.path", "refset.paths", "human.seg_path", "human.sys_path")


def _resolved(value: Any) -> Any:
    if isinstance(value, list):
        return [_resolved(v) for v in value]
    if isinstance(value, str) and value.strip():
        return str(Path(os.path.expanduser(value)).resolve())
    return value


def resolve_paths(config: HarnessConfig, overrides: Sequence[str]) -> tuple[HarnessConfig, list[str]]:
    """``config`` and ``overrides`` with every value of :data:`PATH_KEYS` resolved (see there)."""
    for key in PATH_KEYS:
        group, name = key.split(".")
        node = getattr(config, group)
        if node is not None and getattr(node, name) is not None:
            config = replace(config, **{group: replace(node, **{name: _resolved(getattr(node, name))})})
    out = []
    for item in overrides:
        sign = item[: len(item) - len(item.lstrip("+~"))]
        key, eq, value = item[len(sign):].partition("=")
        if eq and key in PATH_KEYS:
            if value.startswith("[") and value.endswith("]"):
                parts = [v.strip(" '\"") for v in value[1:-1].split(",") if v.strip()]
                value = "[" + ",".join(_resolved(parts)) + "]"
            else:
                value = _resolved(value.strip("'\""))
        out.append(f"{sign}{key}{eq}{value}")
    return config, out


def job_name(overrides: Sequence[str]) -> str:
    """The job's folder name: a readable part from the meaningful overrides (a path value shortened to its last
    component; keys of :data:`PRESENTATION_KEYS` left out) plus the first 8 hex digits of the SHA-256 of the
    (sorted) meaningful overrides, so jobs that differ anywhere get different folders. ``default-...`` without
    overrides."""
    kept = sorted(o for o in overrides if override_keys([o]).popitem()[0].split(".")[0] not in PRESENTATION_KEYS)
    digest = hashlib.sha256("\n".join(kept).encode()).hexdigest()[:8]
    parts = []
    for item in kept:
        key, _, value = item.lstrip("+~").partition("=")
        parts.append(f"{key.split('.')[-1]}={_short_value(value)}")
    readable = re.sub(r"[^A-Za-z0-9._=+@,-]+", "_", ",".join(parts)).strip("_.") or "default"
    if len(readable) > 80:
        readable = readable[:80].rstrip("_.,=")
    return f"{readable}-{digest}"


def _path(value: Any, key: str) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(key, f"expected a path, got {value!r}", got=value)
    return Path(os.path.expanduser(value)).resolve()


def check_allowed(path: Path, key: str, roots: Sequence[Path]) -> Path:
    """Refuse a path outside the allowed roots (a path a config file refers to; the command line's are allowed)."""
    if not any(path == r or r in path.parents for r in roots):
        raise ConfigError(key, f"path {str(path)!r} is outside the allowed roots; add its folder to allowed_roots "
                          "or give it on the command line", [str(r) for r in roots], got=str(path))
    return path


def check_output_folder(path: Path, key: str) -> Path:
    """An output folder must be creatable and writable: not a file, not under a file, not read-only."""
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        what = "is a file" if probe == path else f"is under {probe}, which is a file"
        raise ConfigError(key, f"{path} {what}, not a folder", expected="a folder", got="a file")
    if probe.exists() and not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(key, f"{probe} is not writable (read-only or no permission)", expected="a writable folder",
                          got="not writable")
    return path


def _language(value: Any) -> str:
    """A language code (``ja``, ``zh-Hans``, ``pt_BR``): letters, digits, ``-`` and ``_``."""
    code = str(value).strip()
    if not re.fullmatch(r"[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*", code):
        raise ConfigError("dataset.target_lang", f"expected a language code such as ja or zh-Hans, got {value!r}",
                          expected="a language code", got=value)
    return code


def _metrics_selection(value: Any) -> str | tuple[str, ...]:
    if value in ("all", "none"):
        return str(value)
    if isinstance(value, (list, tuple)):
        return tuple(safe_name(str(v), "metrics") for v in value)
    raise ConfigError("metrics", f"expected all, none or a list of metric names, got {value!r}",
                      ["all", "none", "[NAME,...]"], got=value)


def _int(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(key, f"expected an integer, got {value!r}", expected="an integer", got=value)
    return value


# ---------------------------------------------------------------------------------------------------------------
# the spec
# ---------------------------------------------------------------------------------------------------------------


def build_spec(config: HarnessConfig | Mapping[str, Any], overrides: Sequence[str] = ()) -> JobSpec:
    """Validate the composed config and describe the job.

    ``config`` is the typed config Hydra composed (``OmegaConf.to_object``) or plain containers (the schema's
    defaults fill what they leave out). ``overrides`` are the command-line overrides: they name the job, and
    paths given there may lie anywhere (paths from config files must lie under ``allowed_roots``); with
    ``dataset.root`` among them, the experiment is named after the dataset unless ``experiment_name`` is given too).
    """
    cfg = config if isinstance(config, HarnessConfig) else harness_config(config)
    cfg, overrides = resolve_paths(cfg, overrides)
    given = override_keys(overrides)
    from_cli = set(given)

    variants = build_variants(cfg.bleu, None, cfg.chrf)
    if cfg.compare and not any(v.is_bleu and v.additive for v in variants):
        raise ConfigError("compare", "comparing systems needs a BLEU variant whose score is a function of summed "
                          "statistics (e.g. bleu=sacrebleu)", got=[v.name for v in variants])
    seed = int(check_seed(_int(cfg.seed, "seed")) or 0)
    n_samples = check_n_samples(cfg.n_samples, "n_samples")

    roots = [Path(bundled_data()).resolve()]
    roots += ([Path.cwd().resolve()] if cfg.allowed_roots is None
              else [_path(r, "allowed_roots") for r in cfg.allowed_roots])

    def input_path(value: Any, key: str) -> Path:
        path = _path(value, key)
        return path if key in from_cli else check_allowed(path, key, roots)

    ds = cfg.dataset
    root = None if ds.root is None else input_path(ds.root, "dataset.root")
    dataset_name = None if ds.name is None else safe_name(str(ds.name), "dataset.name")
    system = None
    if cfg.system is not None:
        s = cfg.system
        system = ExplicitSystem(safe_name(s.name, "system.name"), input_path(s.path, "system.path"),
                                None if s.version is None else str(s.version), bool(s.human),
                                {str(k): str(v) for k, v in (s.metadata or {}).items()})
    refset_paths: tuple[Path, ...] = ()
    if cfg.refset is not None:
        if not cfg.refset.paths:
            raise ConfigError("refset.paths", "an explicit refset needs at least one file")
        key = "refset.paths"
        refset_paths = tuple(_path(p, key) if key in from_cli else check_allowed(_path(p, key), key, roots)
                             for p in cfg.refset.paths)
    if root is None and not refset_paths:
        raise ConfigError("dataset.root", "no references: give a dataset folder (dataset.root=DIR) or an explicit "
                          "refset (refset=NAME)")
    if root is None and system is None:
        raise ConfigError("system", "no systems to score: give a dataset folder or a system config")

    h = cfg.human
    select = str(h.select)
    human = HumanSelection(select=select)
    if select == "files":
        seg = None if h.seg_path is None else input_path(h.seg_path, "human.seg_path")
        sys_ = None if h.sys_path is None else input_path(h.sys_path, "human.sys_path")
        if seg is None and sys_ is None:
            raise ConfigError("human.seg_path", "explicit human scores need human.seg_path or human.sys_path")
        human = HumanSelection("files", safe_name(str(h.name or "human"), "human.name"), seg, sys_,
                               True if h.higher_is_better is None else bool(h.higher_is_better))
    elif select not in ("all", "none"):
        safe_name(select, "human")

    runs_dir = check_output_folder(_path(cfg.runs_dir, "runs_dir"), "runs_dir")
    experiment = cfg.experiment_name  # null: the dataset's name, known once its folder is read
    if experiment is not None:
        experiment = safe_name(str(experiment), "experiment_name")
    out = None if cfg.output_dir is None else check_output_folder(_path(cfg.output_dir, "output_dir"), "output_dir")

    tracking_uri = None
    if cfg.tracking:
        tracking_uri = str(cfg.tracking_uri) if cfg.tracking_uri else f"sqlite:///{runs_dir / 'mlflow.db'}"
    compare = []
    for pair in cfg.compare or []:
        if not isinstance(pair, (list, tuple)) or len(pair) not in (1, 2):
            raise ConfigError("compare", "expected pairs of systems [[A,B],...] or [[NAME]] for the last two "
                              f"versions of NAME, got {pair!r}", got=pair)
        compare.append(tuple(str(x) for x in pair))
    for key in ("tracking_retries", "tracking_timeout"):
        if _int(getattr(cfg, key), key) < 0:
            raise ConfigError(key, f"must be >= 0, got {getattr(cfg, key)}", got=getattr(cfg, key))

    return JobSpec(
        experiment=experiment,
        job_name=job_name(overrides),
        output_dir=out,
        runs_dir=runs_dir,
        dataset_root=root,
        dataset_name=dataset_name,
        refs=None if ds.refs is None else tuple(safe_name(r, "dataset.refs") for r in ds.refs),
        refsets=_check_refsets_syntax(ds.refsets),
        systems=None if ds.systems is None else tuple(str(s) for s in ds.systems),
        strict=bool(ds.strict),
        system=system,
        refset_paths=refset_paths,
        human=human,
        variants=variants,
        seed=seed,
        n_samples=n_samples,
        significance=bool(cfg.significance),
        correlation=bool(cfg.correlation),
        figures=bool(cfg.figures),
        paper_protocol=bool(cfg.paper_protocol),
        meta_eval=bool(cfg.meta_eval),
        compare=tuple(compare),
        segment_table=bool(cfg.segment_table),
        force=bool(cfg.force),
        progress=cfg.progress,
        verbose=bool(cfg.verbose),
        tracking_uri=tracking_uri,
        tracking_retries=int(cfg.tracking_retries),
        tracking_timeout=int(cfg.tracking_timeout),
        allowed_roots=tuple(roots),
        overrides=tuple(overrides),
        target_lang=None if ds.target_lang is None else _language(ds.target_lang),
        metrics=_metrics_selection(cfg.metrics),
        figure_formats=_figure_formats(cfg.figure_formats),
        config=asdict(cfg),
    )


def _figure_formats(value: Any) -> tuple[str, ...]:
    """``figure_formats``: PNG first (the report and MLflow show it), then each other format asked for, once."""
    given = [value] if isinstance(value, str) else list(value or [])
    unknown = [f for f in given if f not in FIGURE_FORMATS]
    if unknown:
        raise ConfigError("figure_formats", f"unknown figure format {unknown[0]!r}", choices=list(FIGURE_FORMATS),
                          got=value)
    if "png" not in given:
        raise ConfigError("figure_formats", "png is always written (the report and MLflow show it); add the "
                          "others to it, e.g. figure_formats=[png,pdf], or draw no figures with figures=false",
                          got=value)
    return tuple(f for f in FIGURE_FORMATS if f in given)


def family_digest(spec: JobSpec) -> str:
    """The job without its inputs: SHA-256 of its meaningful config (a rerun on grown inputs keeps it)."""
    return hashlib.sha256(json.dumps({"config": spec.identity}, sort_keys=True, default=str).encode()).hexdigest()


def identity_digest(spec: JobSpec, input_hashes: Mapping[str, str]) -> str:
    """The job's identity in MLflow: SHA-256 of its meaningful config and the hashes of everything it read."""
    payload = json.dumps({"config": spec.identity, "inputs": dict(sorted(input_hashes.items()))}, sort_keys=True,
                         default=str)
    return hashlib.sha256(payload.encode()).hexdigest()
