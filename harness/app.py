"""``harness``: the Hydra application (the main job). It only composes and hands over:

Hydra composes ``conf/`` and the overrides -> :func:`harness.job.spec.build_spec` (validate, describe) ->
:func:`harness.runner.run_job` (inputs, statistics, analysis, published folder, MLflow).

``harness`` with no arguments runs the bundled demo. Errors the user can fix are one line on stderr and a non-zero
exit (2 for configuration, 1 for input and output); in a sweep (``-m``) a failed job is recorded and the others go
on, and the failures are listed at the end.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from .arguments import console_command, skip_last_collection
from .errors import HarnessError, Terminated
from .tracking_child import early

log = logging.getLogger("harness")

HELP = """\
harness: BLEU of MT systems x reference sets x variants, with intervals, paired tests and correlations with human
judgments; Parquet tables, report and figures in runs/<experiment>/<job>/, every score logged to MLflow.

usage: harness [KEY=VALUE ...] [-m KEY=A,B ...]

  experiment=NAME         a bundle: {experiments}
  dataset.root=DIR        a dataset folder (refs/, systems/, human/, meta.json; README "Dataset folder layout")
  dataset.refs=[A,B]      references to use            dataset.refsets=all|each|[[A],[A,B]]
  dataset.systems=[A,B]   systems to score (NAME or NAME@VERSION)
  bleu=NAME | bleu=[A,B]  BLEU variants: {variants}
  chrf=[chrf,chrf++]      chrF variants beside BLEU's (default none)
  metrics=all|none|[A,B]  metrics scored elsewhere, from the dataset's metrics/NAME/ (default all)
  dataset.target_lang=LANG  the target language: it picks the tokenizer, as sacrebleu -l (default meta.json's)
  human=all|none|KIND     human-score kinds of the dataset (default all)
  system=example system.path=FILE system.name=NAME [system.version=V]   an explicit system file
  seed=N n_samples=N      resampling (default 12345, 1000)
  output_dir=DIR runs_dir=DIR tracking_uri=URI tracking=false experiment_name=NAME
  significance=false correlation=false figures=false paper_protocol=true meta_eval=true compare=[[A,B]]
  figure_formats=[png,pdf]   vector figures for a paper beside the PNGs (pdf, svg; default png only)
  progress=true|false verbose=true force=true

  -m                      sweep: one job per combination (hydra/launcher=joblib for local cores, =slurm)
  --cfg job               print the composed config;  --help  this text;  --hydra-help  Hydra's options
  harness-import mtme|mqm ...   a dataset folder from mt-metrics-eval's layout or Google's MQM annotations
"""


def _conf_dir() -> Path:
    from importlib import resources

    return Path(str(resources.files("harness.conf")))


def _options(group: str) -> list[str]:
    return sorted(p.stem for p in (_conf_dir() / group).glob("*.yaml"))


def register() -> None:
    """The schema, the ``${harness_data:NAME}`` resolver, and ``human=KIND`` for a kind no file names."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    from .job.config import HarnessConfig
    from .job.spec import bundled_data

    ConfigStore.instance().store(name="harness_schema", node=HarnessConfig)
    if not OmegaConf.has_resolver("harness_data"):
        OmegaConf.register_new_resolver("harness_data", bundled_data)
    if not OmegaConf.has_resolver("harness_demo_only"):
        OmegaConf.register_new_resolver("harness_demo_only", demo_only)
    known = set(_options("human"))
    for arg in sys.argv[1:]:
        # human=KIND selects one kind of the dataset's human scores; KIND is checked against the dataset later.
        if arg.startswith("human=") and arg.split("=", 1)[1] not in known and "," not in arg:
            kind = arg.split("=", 1)[1]
            ConfigStore.instance().store(group="human", name=kind, node={"select": kind})


def demo_only(value: Any, root: Any, otherwise: Any = None) -> Any:
    """``${harness_demo_only:VALUE,${dataset.root}[,OTHERWISE]}``: a bundle's name and description hold for the
    data they describe, the bundled demo; for any other ``dataset.root`` they give way (the experiment is then
    named after the dataset, and the saved config says what ran)."""
    from .job.spec import DEMO_DATASET, bundled_data

    try:
        same = root is not None and Path(str(root)).resolve() == Path(bundled_data(DEMO_DATASET)).resolve()
    except OSError:
        same = False
    return value if same else otherwise


def _record(job_dir: str, record: dict[str, Any]) -> None:
    """A sweep job's outcome in its sweep subfolder (read by :class:`harness.callbacks.PrepareStoreCallback`)."""
    try:
        path = Path(job_dir) / "sweep_job.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        log.warning("could not record the sweep job's outcome in %s: %s", job_dir, exc)


def typed_config(cfg: Any) -> Any:
    """The composed config as the schema's dataclasses (:class:`harness.job.config.HarnessConfig`), interpolations
    resolved, after the checks struct mode misses (a key force-added with ``+key=value``, a ``_target_``); a value
    the configs leave required (``???``) is a configuration error naming its key."""
    from omegaconf import OmegaConf

    from .errors import ConfigError
    from .job.config import check_node

    node = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(node, dict)  # the composed config is a mapping
    check_node({str(k): v for k, v in node.items()})
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        raise ConfigError(missing[0], "a value is required here (the config leaves it ???); give it as "
                          f"{missing[0]}=VALUE")
    return OmegaConf.to_object(cfg)


def task(cfg: Any) -> float | None:
    """One job: the Hydra task function."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    from .job.spec import build_spec

    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    if multirun:  # a launcher's worker process (joblib, submitit) ends after its jobs without a console command
        skip_last_collection()
    overrides = [str(o) for o in hc.overrides.task]
    label = " ".join(overrides) or "(no overrides)"
    try:
        config_yaml = OmegaConf.to_yaml(cfg, resolve=True)
        spec = build_spec(typed_config(cfg), overrides)
        from .runner import run_job  # after the config is checked: a config error costs no import of the job

        outcome = run_job(spec, config_yaml)
    except HarnessError as exc:
        print(f"harness: error: {exc}" + (f" ({exc.kept})" if exc.kept else ""), file=sys.stderr)
        if multirun:
            _record(hc.runtime.output_dir, {"status": "failed", "job": label, "error": str(exc)})
            return None
        raise SystemExit(exc.exit_status) from None
    except BrokenPipeError:  # `harness ... | head -1`: the reader has what it wanted; the job is done
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0.0
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, Terminated)
        print(f"harness: {'terminated (SIGTERM)' if terminated else 'interrupted'}; job_status.json in the job's "
              "folder says what was kept", file=sys.stderr)
        raise SystemExit(Terminated.exit_status if terminated else 130) from None
    if outcome.tracking_error is not None:
        err = outcome.tracking_error
        details = err.kept or f"rerun the job to log it (details in {outcome.folder / 'tracking_pending.json'})"
        print(f"harness: error: {err}; the tables are published in {outcome.folder}; {details}", file=sys.stderr)
        if multirun:
            _record(hc.runtime.output_dir, {"status": "failed", "job": label, "folder": str(outcome.folder),
                                            "error": str(outcome.tracking_error)})
            return None
        raise SystemExit(1)
    if multirun:
        _record(hc.runtime.output_dir, {"status": "ok", "job": label, "folder": str(outcome.folder)})
    return 0.0


def main() -> None:
    """Console entry point: ``harness [key=value ...] [-m]``."""
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(HELP.format(experiments=", ".join(_options("experiment")), variants=", ".join(_options("bleu"))))
        return
    with early(sys.argv[1:]):  # MLflow's child imports MLflow on the other core while Hydra composes the config
        _compose_and_run()
    from .callbacks import FAILED_JOBS

    if FAILED_JOBS:
        print(f"harness: {len(FAILED_JOBS)} job(s) failed:", file=sys.stderr)
        for line in FAILED_JOBS:
            print(f"  {line}", file=sys.stderr)
        sys.exit(1)


def _compose_and_run() -> None:
    """Check the command line, then hand it to Hydra (which calls :func:`task` per job)."""
    register()
    from .composition import check_command_line

    argv = sys.argv[1:]
    shows_job = any(a in ("--cfg", "-c") and argv[i + 1:i + 2] == ["job"] for i, a in enumerate(argv))
    if shows_job and "--resolve" not in argv:  # show the values that will run, not interpolations
        sys.argv.append("--resolve")

    try:  # before Hydra instantiates anything the config names (callbacks, launcher, logging)
        check_command_line(sys.argv[1:])
    except HarnessError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_status)
    import hydra

    hydra_main = hydra.main(version_base="1.3", config_path="pkg://harness.conf", config_name="config")(task)
    hydra_main()


def console() -> None:
    """The ``harness`` command: :func:`main`, then the process ends (:func:`~harness.arguments.console_command`)."""
    console_command(main)


if __name__ == "__main__":  # pragma: no cover
    console()
