"""Hydra callbacks of the ``harness`` app: prepare the MLflow store once in the launching process, and collect
the sweep jobs that failed (kept apart from :mod:`harness.tracking`, which must not import Hydra)."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

from .tracking import configure_client, default_uri, prepare_store

log = logging.getLogger(__name__)

FAILED_JOBS: list[str] = []


def _store_of(config: Any) -> tuple[str | None, Path, str]:
    runs_dir = Path(str(config.runs_dir)).resolve()
    if not config.tracking:
        return None, runs_dir, str(config.experiment_name)
    uri = str(config.tracking_uri) if config.tracking_uri else default_uri(runs_dir)
    return uri, runs_dir, str(config.experiment_name)


class PrepareStoreCallback(Callback):
    """Creates the tracking store before a sweep's jobs run (parallel jobs must not race on the SQLite
    migration). A single run creates it itself, after validation, so a bad config costs no database work."""

    def _prepare(self, config: Any) -> None:
        try:
            uri, runs_dir, experiment = _store_of(config)
            if uri is not None:
                configure_client(int(config.tracking_retries), int(config.tracking_timeout))
                prepare_store(uri, experiment, runs_dir)
        except Exception as exc:  # the job itself reports tracking problems; never block scoring here
            log.warning("could not prepare the tracking store: %s", exc)

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        self._started = time.time()
        FAILED_JOBS.clear()
        self._prepare(config)

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        """Collect the jobs of this sweep that failed (each job writes ``job_status.json`` in its folder)."""
        started = getattr(self, "_started", 0.0)
        for path in sorted(Path(str(config.hydra.sweep.dir)).rglob("job_status.json")):
            status = json.loads(path.read_text(encoding="utf-8"))
            if status.get("status") == "failed" and status.get("finished_at", 0) >= started:
                FAILED_JOBS.append(f"{status.get('job', path.parent)}: {status.get('error', '')}")
