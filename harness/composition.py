"""The ``harness`` command line composed and checked before Hydra acts on it.

Hydra instantiates what the composed config names under ``hydra.*`` (callbacks, the launcher, the sweeper, the
logging handlers) *before* the task function runs, so a ``_target_`` planted there (``+hydra.callbacks.x._target_=
builtins.open``, or a shared YAML loaded with ``--config-dir``) would run before any check of the job. Hydra's own
block-list stops ``os.system`` and ``subprocess.run``, not ``builtins.open`` or ``shutil.copyfile``. So
:func:`check_command_line` composes the command line first, with Hydra's own machinery and search path (its
argument parser, ``Hydra.compose_config``: the config the run will compose), and refuses:

- any ``_target_`` (or ``_partial_``, ``_args_``, ...) anywhere in the composed config, ``hydra.*`` included, but
  the objects the project ships (:data:`ALLOWED_TARGETS`: its store callback, Hydra's basic launcher and sweeper,
  the joblib and submitit launchers);
- logging configs that construct anything but a stream handler (``()`` factories, other handler classes, e.g. a
  ``logging.FileHandler`` that truncates a file it names);
- every composition error (unknown key, a value of the wrong type, an unknown option of a group, a malformed
  override), as one line naming the key with the valid choices or a "did you mean", exit status 2.

A sweep (``-m``) is checked on its first combination and on every value of every swept key.

This uses Hydra internals (``hydra._internal``: the argument parser and ``Hydra.compose_config`` that
``hydra.main`` itself uses), pinned by ``hydra-core>=1.3.4,<1.4``; ``tests/entry/test_composition.py`` fails if
they change.
"""

from __future__ import annotations

import difflib
import os
import re
from typing import Any, Iterator, Sequence, get_type_hints

from .errors import ConfigError
from .job.config import refuse_targets

#: Objects a harness config may name, by where: the project's store callback and the launchers and sweeper it
#: ships or documents (``conf/hydra/launcher``, README "Scaling out").
ALLOWED_TARGETS: dict[str, frozenset[str]] = {
    "hydra.callbacks": frozenset({"harness.callbacks.PrepareStoreCallback"}),
    "hydra.launcher": frozenset({
        "hydra._internal.core_plugins.basic_launcher.BasicLauncher",
        "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher",
        "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher",
        "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"}),
    "hydra.sweeper": frozenset({"hydra._internal.core_plugins.basic_sweeper.BasicSweeper"}),
}
#: Logging handler classes a config may use (``hydra.job_logging`` / ``hydra.hydra_logging``).
ALLOWED_HANDLERS = frozenset({"logging.StreamHandler", "logging.NullHandler"})

CONFIG_MODULE = "harness.conf"
CONFIG_NAME = "config"


# --------------------------------------------------------------------------------------------------------------
# what may be instantiated
# --------------------------------------------------------------------------------------------------------------


def _allowed_target(path: str, value: Any) -> bool:
    """A ``_target_`` of :data:`ALLOWED_TARGETS`, where it belongs: a launcher's or sweeper's own node, or one
    named entry of the callbacks."""
    parent = path.rsplit(".", 1)[0]
    for root, targets in ALLOWED_TARGETS.items():
        owner = parent if root != "hydra.callbacks" else parent.rsplit(".", 1)[0]
        if owner == root and value in targets:
            return True
    return False


def _logging_entries(node: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}.{key}"
            yield where, key, value
            yield from _logging_entries(value, where)


def refuse_instantiation(config: dict[str, Any]) -> None:
    """Refuse every object the composed config (``hydra`` node included, as plain containers) would have Hydra or
    the logging module construct, but those of :data:`ALLOWED_TARGETS` / :data:`ALLOWED_HANDLERS`."""
    refuse_targets(config, allowed=_allowed_target, choices=sorted(set().union(*ALLOWED_TARGETS.values())))
    hydra = config.get("hydra") or {}
    for name in ("job_logging", "hydra_logging"):
        for path, key, value in _logging_entries(hydra.get(name) or {}, f"hydra.{name}"):
            if key == "()":
                raise ConfigError(path, "logging factories ('()') are not allowed in harness configs", got=value)
            if key == "class" and ".handlers." in path and value not in ALLOWED_HANDLERS:
                raise ConfigError(path, f"logging handler {value!r} is not allowed (handlers write to the console "
                                  "only; a job's files are the harness's)", sorted(ALLOWED_HANDLERS), got=value)
            if key == "class" and ".formatters." in path and value != "logging.Formatter":
                raise ConfigError(path, f"logging formatter class {value!r} is not allowed", ["logging.Formatter"],
                                  got=value)


# --------------------------------------------------------------------------------------------------------------
# composition errors as one line
# --------------------------------------------------------------------------------------------------------------


def _schema_keys(path: Sequence[str]) -> list[str] | None:
    """The valid keys at ``path`` of the config schema (through ``bleu.NAME``), or None where any key goes."""
    from .job.config import HarnessConfig, schema_of

    schema: Any = HarnessConfig
    for part in path:
        if isinstance(schema, dict):  # Dict[str, schema]: any name
            schema = schema["*"]
            continue
        hints = get_type_hints(schema) if schema is not None else {}
        if part not in hints:
            return None
        schema = schema_of(hints[part])
    return None if schema is None or isinstance(schema, dict) else sorted(get_type_hints(schema))


def did_you_mean(key: str) -> ConfigError | None:
    """A :class:`ConfigError` for a key the schema does not know (with the closest valid one), else None."""
    parts = key.split(".")
    if parts[0] == "hydra" or not key:
        return None
    for depth in range(len(parts)):
        valid = _schema_keys(parts[:depth])
        if valid is None:
            return None
        if parts[depth] not in valid:
            close = difflib.get_close_matches(parts[depth], valid, n=1)
            prefix = ".".join(parts[:depth])
            hint = f"; did you mean {prefix + '.' if prefix else ''}{close[0]}?" if close else ""
            return ConfigError(".".join(parts[: depth + 1]), f"unknown configuration key{hint}", valid)
    return None


_GROUPS = ("bleu", "dataset", "experiment", "human", "refset", "system")


def one_line(exc: BaseException, overrides: Sequence[str]) -> ConfigError:
    """Hydra's or OmegaConf's composition error as a :class:`ConfigError` (one line, the key, the choices)."""
    from hydra.errors import MissingConfigException, OverrideParseException

    text = str(exc)
    cause = exc.__cause__
    if isinstance(exc, MissingConfigException):
        found = re.search(r"Could not find '([^']+)/([^']+)'", text)
        options = re.findall(r"^\t(\S+)$", text.split("Config search path")[0], re.M)
        if found:
            group, name = found.groups()
            close = difflib.get_close_matches(name, options, n=1)
            hint = f"; did you mean {group}={close[0]}?" if close else ""
            return ConfigError(group, f"no {group} config {name!r}{hint}", options, got=name)
        return ConfigError("config", text.splitlines()[0])
    if isinstance(exc, OverrideParseException):
        bad = next((o for o in overrides if o in text), None)
        first = text.splitlines()[0]
        hint = ("; quote a value with spaces, brackets or non-ASCII characters (key='value')"
                if bad is not None and not bad.isascii() or " " in (bad or "") else "")
        return ConfigError("override", (f"cannot parse {bad!r}: {first}" if bad else f"cannot parse the overrides: "
                                        f"{first}") + hint,
                           expected="key=value (see https://hydra.cc/docs/advanced/override_grammar/basic)")
    found = re.search(r"Could not (?:override|append to config)[^']*'([^']+)'", text)
    if found:
        unknown = did_you_mean(found.group(1))
        if unknown is not None:
            return unknown
        if "An item is already at" in text:
            return ConfigError(found.group(1), f"already set: give {found.group(1)}=VALUE, without '+'")
    key = getattr(cause, "full_key", None)
    reason = getattr(cause, "msg", None) or (str(cause) if cause is not None else text)
    reason = reason.splitlines()[0]
    merging = re.search(r"Error merging override (\S+?)=", text)
    if merging and merging.group(1).lstrip("+~").startswith("bleu.") and "BleuVariantConfig" in reason:
        name = merging.group(1).lstrip("+~").split(".")[1]
        return ConfigError(f"bleu.{name}", "a new BLEU variant starts from a shipped one: "
                           f"+bleu@bleu.{name}=intl (then bleu.{name}.name={name} bleu.{name}.KEY=VALUE), or a file "
                           f"conf/bleu/{name}.yaml on the search path (README 'Your own BLEU variant')")
    if merging and not key:
        key = merging.group(1).lstrip("+~")
    if key:
        key = re.sub(r"^\+?", "", str(key))
        if merging and "." not in key and "." in merging.group(1):  # OmegaConf names the key within its node
            key = merging.group(1).lstrip("+~")
    if "is not a ListConfig, list or tuple" in reason:  # OmegaConf's words for a list key given one value
        reason = f"expected a list in brackets, e.g. {key or 'key'}=[a,b] (one item: [a]); {reason}"
    return ConfigError(str(key or "config"), reason)


# --------------------------------------------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------------------------------------------


def _combinations(overrides: Sequence[str]) -> list[list[str]]:
    """The overrides of a sweep's first job, then one list per further value of each swept key (the others at
    their first value); a plain command line is its one list."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(overrides))
    choices = []
    for o in parsed:
        if o.is_sweep_override():
            prefix = o.get_key_element()
            values = [f"{prefix}={v}" for v in o.sweep_string_iterator()]
            choices.append(values or [str(o.input_line)])
        else:
            choices.append([str(o.input_line)])
    first = [c[0] for c in choices]
    out = [first]
    for i, values in enumerate(choices):
        for v in values[1:]:
            out.append(first[:i] + [v] + first[i + 1:])
    return out


def check_command_line(argv: Sequence[str]) -> None:
    """Compose ``argv`` as ``harness`` will and check it (module docstring); raises :class:`ConfigError`."""
    from hydra._internal.hydra import Hydra
    from hydra._internal.utils import create_config_search_path, get_args_parser
    from hydra.core.config_search_path import SearchPathQuery
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from hydra.types import RunMode
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    args, _ = get_args_parser().parse_known_args(list(argv))
    if args.help or args.hydra_help or args.info or args.shell_completion:
        return
    config_path = args.config_path or f"pkg://{CONFIG_MODULE}"
    search_path = create_config_search_path(config_path)
    if args.config_dir is not None:  # as hydra.main's add_conf_dir
        config_dir = os.path.abspath(args.config_dir)
        if not os.path.isdir(config_dir):
            raise ConfigError("--config-dir", f"{config_dir} is not a folder", expected="a folder of configs")
        search_path.prepend(provider="command-line", path=f"file://{config_dir}",
                            anchor=SearchPathQuery(provider="schema"))
    GlobalHydra.instance().clear()
    try:
        try:
            combos = _combinations(args.overrides)
        except HydraException as exc:
            raise one_line(exc, args.overrides) from None
        hydra = Hydra.create_main_hydra2(task_name="harness", config_search_path=search_path)
        for overrides in combos:
            try:
                cfg = hydra.compose_config(args.config_name or CONFIG_NAME, overrides, run_mode=RunMode.RUN,
                                           with_log_configuration=False)
            except (HydraException, OmegaConfBaseException) as exc:
                raise one_line(exc, overrides) from None
            refuse_instantiation(OmegaConf.to_container(cfg, resolve=False))  # type: ignore[arg-type]
    finally:
        GlobalHydra.instance().clear()
