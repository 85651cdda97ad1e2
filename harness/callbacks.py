"""Hydra callbacks of the ``harness`` app (kept apart from the sinks, which must not import Hydra): prepare the
MLflow store once in the launching process of a sweep, and collect the sweep's jobs that failed."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

from .errors import HarnessError
from .sinks.mlflow_store import configure_client, default_uri, prepare_store

log = logging.getLogger(__name__)

FAILED_JOBS: list[str] = []


class PrepareStoreCallback(Callback):
    """Creates the tracking store before a sweep's jobs run (they then only open it). A single run creates it
    itself, after validation, so a bad config costs no database work."""

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        FAILED_JOBS.clear()
        if not config.tracking or not config.get("experiment_name"):
            return  # without a fixed experiment name each job names (and creates) its own
        runs_dir = Path(str(config.runs_dir)).resolve()
        uri = str(config.tracking_uri) if config.tracking_uri else default_uri(runs_dir)
        try:
            configure_client(int(config.tracking_retries), int(config.tracking_timeout))
            prepare_store(uri, str(config.experiment_name), runs_dir)
        except (HarnessError, ValueError) as exc:  # the jobs report tracking problems themselves
            log.warning("could not prepare the tracking store: %s", exc)

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        """Collect the failed jobs of this sweep (each job records its outcome in its sweep subfolder), in the
        order of the jobs' numbers (the subfolders' names: job 10 after job 9)."""
        records = Path(str(config.hydra.sweep.dir)).glob("*/sweep_job.json")
        for path in sorted(records, key=_job_order):
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if record.get("status") == "failed":
                FAILED_JOBS.append(f"{record.get('job', path.parent.name)}: {record.get('error', '')}")


def _job_order(path: Path) -> tuple[int, int, str]:
    """Sweep subfolders by job number (``hydra.sweep.subdir`` is ``${hydra.job.num}``), others after them by name."""
    name = path.parent.name
    return (0, int(name), "") if name.isdigit() else (1, 0, name)
