"""Nested runs written into a SQLite MLflow store in one transaction, and finished in one statement: the rows that
MLflow's own ``create_run`` + ``log_batch`` + ``log_inputs`` and ``set_terminated`` write, with MLflow's
validators, its table models and its value rules (NaN and infinities), but one commit instead of about ten per
run (MLflow's store: ~40 ms per nested run here, ~4.5 s for the demo's 108). And a parent's nested runs read back
as id, name and status only (:func:`child_runs`), what the record-keeping needs, without loading their data.

Only for a store whose schema this code was checked against (:data:`VERIFIED_SCHEMAS`: the revision of MLflow's
migrations; ``tests/sinks/test_mlflow.py`` compares every row of every table with what MLflow's API writes);
:func:`bulk_store` returns None for any other store, which :mod:`harness.sinks.mlflow` then writes through
MLflow's API (and reads through its search). Must not decide what is logged: the runs, their tags, metrics and
params are the caller's.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence
from uuid import uuid4

#: Revisions of MLflow's store schema (``alembic_version``) whose rows :func:`insert_runs` writes as MLflow does.
VERIFIED_SCHEMAS = frozenset({"dc11669786a5"})  # MLflow 3.17.2


class RunBrief(NamedTuple):
    """A run as the record-keeping of :mod:`harness.sinks.mlflow` needs it: no metrics, params or tags."""

    run_id: str
    name: str
    status: str


class RunRows(NamedTuple):
    """One nested run as MLflow's client would be given it: name, tags, and ``Metric``/``Param`` entities."""

    name: str
    tags: dict[str, str]
    metrics: list[Any]
    params: list[Any]


def bulk_store(client: Any) -> Any | None:
    """The client's SQLAlchemy store if it is a SQLite store of a verified schema, else None."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
    from sqlalchemy import text

    store = getattr(getattr(client, "_tracking_client", None), "store", None)
    if not isinstance(store, SqlAlchemyStore) or store.db_type != "sqlite":
        return None
    with store.ManagedSessionMaker() as session:
        revision = session.execute(text("SELECT version_num FROM alembic_version")).scalar()
    return store if revision in VERIFIED_SCHEMAS else None


def insert_runs(store: Any, exp_id: str, runs: Sequence[RunRows], dataset: tuple[str, str],
                input_tags: dict[str, str], start_time: int | None = None) -> list[str]:
    """Create ``runs`` (RUNNING) in experiment ``exp_id``, each with the experiment's dataset ``(name, digest)``
    (logged before, by the parent) as its input; returns their ids, in order. One transaction: all or nothing."""
    from mlflow.exceptions import MlflowException
    from mlflow.store.tracking.dbmodels.models import (
        SqlDataset,
        SqlInput,
        SqlInputTag,
        SqlLatestMetric,
        SqlMetric,
        SqlParam,
        SqlRun,
        SqlTag,
    )
    from mlflow.utils.mlflow_tags import MLFLOW_RUN_NAME, MLFLOW_USER
    from mlflow.utils.time import get_current_time_millis
    from mlflow.utils.uri import append_to_uri_path
    from mlflow.utils.validation import (
        _validate_batch_log_data,
        _validate_batch_log_limits,
        _validate_param_keys_unique,
    )
    from sqlalchemy import insert

    experiment = store.get_experiment(exp_id)
    if experiment.lifecycle_stage != "active":
        raise MlflowException(f"The experiment {exp_id} must be in the 'active' state. Current state is "
                              f"{experiment.lifecycle_stage}.")
    start = get_current_time_millis() if start_time is None else start_time
    ids: list[str] = []
    rows: dict[Any, list[dict[str, Any]]] = {m: [] for m in (SqlRun, SqlTag, SqlParam, SqlMetric, SqlLatestMetric,
                                                              SqlInput, SqlInputTag)}
    for run in runs:
        metrics, params, _ = _validate_batch_log_data(run.metrics, run.params, [])
        _validate_batch_log_limits(metrics, params, [])
        _validate_param_keys_unique(params)
        run_id = uuid4().hex
        ids.append(run_id)
        rows[SqlRun].append(dict(
            run_uuid=run_id, name=run.name, experiment_id=experiment.experiment_id,
            artifact_uri=append_to_uri_path(experiment.artifact_location, run_id, "artifacts"),
            source_type="UNKNOWN", source_name="", entry_point_name="", source_version="",
            user_id=run.tags.get(MLFLOW_USER, "unknown"), status="RUNNING", start_time=start, end_time=None,
            deleted_time=None, lifecycle_stage="active"))
        tags = {**run.tags, MLFLOW_RUN_NAME: run.tags.get(MLFLOW_RUN_NAME, run.name)}
        rows[SqlTag] += [dict(run_uuid=run_id, key=k, value=v) for k, v in tags.items()]
        rows[SqlParam] += [dict(run_uuid=run_id, key=p.key, value=p.value) for p in params]
        latest: dict[str, dict[str, Any]] = {}
        for m in dict.fromkeys(metrics):  # MLflow drops repeated identical metrics
            is_nan, value = store.sanitize_metric_value(m.value)
            row = dict(run_uuid=run_id, key=m.key, value=value, timestamp=m.timestamp, step=m.step, is_nan=is_nan)
            rows[SqlMetric].append(row)
            before = latest.get(m.key)
            if before is None or (m.step, m.timestamp, value) > (before["step"], before["timestamp"],
                                                                  before["value"]):
                latest[m.key] = row
        rows[SqlLatestMetric] += latest.values()
        input_id = uuid4().hex
        rows[SqlInput].append(dict(input_uuid=input_id, source_type="DATASET", source_id=None,
                                   destination_type="RUN", destination_id=run_id))
        rows[SqlInputTag] += [dict(input_uuid=input_id, name=k, value=v) for k, v in input_tags.items()]
    with store.ManagedSessionMaker(read_only=False) as session:
        (dataset_id,) = (session.query(SqlDataset.dataset_uuid)
                         .filter(SqlDataset.experiment_id == experiment.experiment_id,
                                 SqlDataset.name == dataset[0], SqlDataset.digest == dataset[1]).one())
        for row in rows[SqlInput]:
            row["source_id"] = dataset_id
        for model, found in rows.items():
            if found:
                session.execute(insert(model), found)
    return ids


def finish_runs(store: Any, run_ids: Sequence[str], status: str = "FINISHED") -> None:
    """Set the status and end time of ``run_ids``, as ``set_terminated`` does for each."""
    from mlflow.store.tracking.dbmodels.models import SqlRun
    from mlflow.utils.time import get_current_time_millis
    from sqlalchemy import update

    end = get_current_time_millis()
    with store.ManagedSessionMaker(read_only=False) as session:
        for i in range(0, len(run_ids), 500):  # within SQLite's limit of bound values per statement
            session.execute(update(SqlRun).where(SqlRun.run_uuid.in_(run_ids[i:i + 500]))
                            .values(status=status, end_time=end))


def child_runs(store: Any, exp_id: str, parent_id: str) -> list[RunBrief]:
    """The nested runs of ``parent_id`` in experiment ``exp_id`` that MLflow's ``search_runs`` finds with the filter
    ``tags.mlflow.parentRunId = 'parent_id'`` (its default view: active runs only), as :class:`RunBrief`, without
    loading their metrics, params and tags as ``search_runs`` does (a rerun of the demo checked its 135 nested runs
    in 0.29 s that way)."""
    from mlflow.store.tracking.dbmodels.models import SqlRun, SqlTag
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

    with store.ManagedSessionMaker() as session:
        rows = (session.query(SqlRun.run_uuid, SqlRun.name, SqlRun.status)
                .join(SqlTag, SqlTag.run_uuid == SqlRun.run_uuid)
                .filter(SqlRun.experiment_id == int(exp_id), SqlRun.lifecycle_stage == "active",
                        SqlTag.key == MLFLOW_PARENT_RUN_ID, SqlTag.value == parent_id)
                .all())
    return [RunBrief(str(run_id), str(name), str(status)) for run_id, name, status in rows]
