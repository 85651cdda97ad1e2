"""MLflow (harness.sinks.mlflow), in process against a copy of a migrated SQLite store (one test against the
session's real server): the payload a job logs (run names, human.<kind> metrics, version steps), the layout in the
store, one record per job (a rerun reuses or replaces it), what a failure or an interruption leaves, and parents
of dead processes marked KILLED. The job result is computed once per module, in process."""

from __future__ import annotations

import math
import os
import re
import shutil
import socket

import pytest

from harness.core.options import OPTION_NAMES
from harness.errors import TrackingError
from harness.job.analysis import analyse
from harness.job.inputs import layout_of, load_inputs
from harness.job.spec import build_spec, identity_digest
from harness.job.statistics import StatisticsCache, job_statistics
from harness.job.tables import build_tables
from harness.sinks.mlflow import (
    SMALL_TABLES,
    key_part,
    log_job,
    mark_dead_parents,
    run_name,
    settle_records,
    version_step,
)
from harness.sinks.mlflow_store import EXPERIMENT_KIND
from harness.sinks.parquet import write_table
from harness.tracking import build_payload
from support import base_config, read_lines, write_lines

pytestmark = pytest.mark.slow  # end to end: the fast tier (-m 'not slow') leaves it out

EXPERIMENT = "sinks"
REFSETS = [["ref-C"], ["ref-C", "ref-D"]]
VERSIONS = {"mymodel@300": "Online-W", "mymodel@1000": "UEdin", "mymodel@rc1": "Nemo"}


@pytest.fixture(scope="module")
def job(small_dataset, tmp_path_factory):
    """A small job computed in process (no figures, no store): the demo's 30 segments with Nemo, UEdin, Online-W,
    the human translation ref-A (MQM scores for those four), and three versions of one system (no human scores)."""
    tmp = tmp_path_factory.mktemp("sinks")
    root = tmp / "small_versions"
    for sub in ("refs", "systems", "human"):
        for f in (small_dataset / sub).iterdir():
            write_lines(root / sub / f.name, read_lines(f))
    for stem, source in VERSIONS.items():
        write_lines(root / "systems" / f"{stem}.txt", read_lines(small_dataset / "systems" / f"{source}.txt"))
    (root / "meta.json").write_text('{"human_systems": ["ref-A"], "human_score": "mqm"}')
    cfg = base_config(tmp, bleu=("sacrebleu",), n_samples=50, experiment_name=EXPERIMENT,
                      dataset={"root": str(root), "refsets": REFSETS})
    spec = build_spec(cfg, [f"dataset.root={root}", f"experiment_name={EXPERIMENT}", "n_samples=50"])
    inputs = load_inputs(spec, layout_of(spec))
    statistics = job_statistics(inputs, spec.variants, StatisticsCache(tmp / "cache", enabled=False))
    result = analyse(spec, inputs, statistics, EXPERIMENT)
    key = identity_digest(spec, inputs.input_hashes())
    tables = build_tables(result)
    (tmp / "compare").mkdir()
    (tmp / "compare" / "page.html").write_text("<html></html>\n")
    (tmp / "report.md").write_text("# report\n")
    artifacts = {"system_scores.parquet": write_table(tables["system_scores"], tmp / "system_scores.parquet",
                                                      {"experiment": EXPERIMENT}),
                 "report.md": tmp / "report.md", "compare/page.html": tmp / "compare" / "page.html"}
    small = {name: t.to_pydict() for name, t in tables.items() if name in SMALL_TABLES}
    return {"result": result, "key": key, "payload": build_payload(result, key, small), "artifacts": artifacts,
            "root": root}


def store(runs) -> str:
    return f"sqlite:///{runs / 'mlflow.db'}"


def runs_of(uri: str, experiment: str = EXPERIMENT) -> tuple[list, list]:
    """(parents, nested runs) that search finds (deleted runs are not found)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    found = client.search_runs([exp.experiment_id], max_results=1000)
    return ([r for r in found if "mlflow.parentRunId" not in r.data.tags],
            [r for r in found if "mlflow.parentRunId" in r.data.tags])


def n_runs(result) -> int:
    return len(result.inputs.systems) * len(REFSETS) * len(result.spec.variants)


# ------------------------------------------------------------------------------------------------ the payload


def test_names_steps_and_run_names():
    assert run_name("Nemo", None, "ref-C+ref-D", "sacrebleu") == "Nemo | ref-C+ref-D | sacrebleu"
    assert run_name("mymodel", "1000", "ref-C", "char") == "mymodel@1000 | ref-C | char"
    steps = {None: 0, "1000": 1000, "+5": 5, "-3": -3, " 7 ": 7, "rc1": 0, "1.5": 0, "": 0, str(2**70): 0,
             "+-5": 0, "--5": 0, "\u00b2": 0, "\u0661\u0662": 0}  # superscript two, Arabic-Indic digits
    assert {v: version_step(v) for v in steps} == steps


def test_names_become_valid_mlflow_keys():
    """A human kind, reference or metadata key with characters MLflow refuses in keys is logged under a safe key
    (it would fail the whole tracking after the tables are published)."""
    from mlflow.utils.validation import _validate_metric_name

    for name in ("MQM (v2)", "da:z", "ref#1", "déjà", "a/b c-d_e.f"):
        _validate_metric_name(f"human.{key_part(name)}")
    assert key_part("MQM (v2)") == "MQM _v2_" and key_part("da:z") == "da_z"
    assert key_part("a/b c-d_e.f") == "a/b c-d_e.f" and key_part("déjà") == "déjà"


def test_the_payload_of_a_job(job):
    result, payload = job["result"], job["payload"]
    human = {h.name: h for h in result.inputs.human}
    assert list(human) == ["mqm"] and payload.experiment == EXPERIMENT and payload.key == job["key"]
    assert payload.name == f"small_versions | {result.spec.job_name}"
    assert len(payload.runs) == len(result.cells) == n_runs(result) == 7 * 2
    by_name = {r.name: r for r in payload.runs}
    assert len(by_name) == len(payload.runs)
    for cell in result.cells:
        run = by_name[f"{cell.system.label} | {cell.refset} | {cell.variant.name}"]
        assert run.metrics["bleu"] == cell.score.score and run.metrics["bp"] == cell.score.bp
        assert run.step == (int(cell.system.version) if cell.system.version in ("300", "1000") else 0)
        assert run.tags["system"] == cell.system.name and run.tags["system_version"] == (cell.system.version or "")
        assert run.tags["refset"] == cell.refset and run.tags["variant"] == "sacrebleu"
        assert run.tags["signature"] == cell.score.signature and run.tags["dataset"] == "small_versions"
        assert run.tags["human"] == str(cell.system.human).lower()
        assert set(OPTION_NAMES) | {"variant", "metric", "sentence_effective_order"} == set(run.params)
        assert run.params["metric"] == "bleu" and run.metrics["score"] == cell.score.score
        assert run.params["sentence_effective_order"] is True and "eff:yes" in run.tags["sentence_signature"]
        if cell.system.name == "mymodel":
            assert "human.mqm" not in run.metrics  # no human score: no metric, not a NaN
        else:
            assert run.metrics["human.mqm"] == human["mqm"].sys[cell.system.label] < 0  # MQM: a negated penalty
    assert by_name["ref-A | ref-C+ref-D | sacrebleu"].tags["refs_used"] == "ref-C+ref-D"
    name, digest, source = payload.dataset
    assert name == "small_versions" and len(digest) == 12 and source == str(job["root"].resolve())
    assert payload.tags["harness.job_key"] == job["key"] and payload.params["n_samples"] == 50
    assert set(payload.tables) == set(SMALL_TABLES)


# ------------------------------------------------------------------------------------------------ the store


@pytest.fixture(params=["in bulk", "through MLflow's API"])
def path(request, monkeypatch) -> str:
    """Nested runs written in one transaction (:mod:`harness.sinks.sqlite_runs`, the store's schema verified), or
    through MLflow's API run by run (as into a store of a schema not verified)."""
    import harness.sinks.sqlite_runs as bulk

    if request.param != "in bulk":
        monkeypatch.setattr(bulk, "VERIFIED_SCHEMAS", frozenset())
    return request.param


def test_a_job_in_the_store(job, runs_with_store, path):
    from mlflow.tracking import MlflowClient

    from harness.sinks.sqlite_runs import bulk_store

    uri, payload, result = store(runs_with_store), job["payload"], job["result"]
    parent_id = log_job(uri, runs_with_store, payload, job["artifacts"]).parent_id
    client = MlflowClient(uri)
    assert (bulk_store(client) is not None) == (path == "in bulk")
    exp = client.get_experiment_by_name(EXPERIMENT)
    assert exp.tags["mlflow.experimentKind"] == EXPERIMENT_KIND["mlflow.experimentKind"]
    assert exp.artifact_location == (runs_with_store.resolve() / "mlartifacts").as_uri()
    parents, children = runs_of(uri)
    (parent,) = parents
    assert parent.info.run_id == parent_id and parent.info.run_name == payload.name
    assert parent.info.status == "FINISHED" and parent.data.tags["harness.job_key"] == job["key"]
    assert parent.data.tags["harness.pid"] == str(os.getpid())
    assert parent.data.tags["harness.host"] == socket.gethostname()
    assert parent.data.params["n_samples"] == "50" and parent.data.params["variants"] == '["sacrebleu"]'
    assert payload.metrics and parent.data.metrics == pytest.approx(
        {k: v for k, v in payload.metrics.items() if math.isfinite(v)}, rel=1e-12, abs=0)
    (dataset,) = parent.inputs.dataset_inputs
    assert (dataset.dataset.name, dataset.dataset.digest) == payload.dataset[:2]
    assert {t.key: t.value for t in dataset.tags} == {"mlflow.data.context": "eval"}
    assert len(children) == n_runs(result)
    assert all(c.info.status == "FINISHED" and c.data.tags["mlflow.parentRunId"] == parent_id for c in children)
    by_name = {c.info.run_name: c for c in children}
    assert set(by_name) == {r.name for r in payload.runs}
    nemo = by_name["Nemo | ref-C+ref-D | sacrebleu"]
    cell = next(c for c in result.cells if c.system.label == "Nemo" and c.refset == "ref-C+ref-D")
    assert nemo.data.metrics["bleu"] == pytest.approx(cell.score.score, rel=1e-12, abs=0)
    assert nemo.data.metrics["human.mqm"] == pytest.approx(result.inputs.human[0].sys["Nemo"], rel=1e-12)
    assert nemo.data.params["tokenize"] == "13a" and nemo.data.tags["signature"] == cell.score.signature
    for label, step in (("mymodel@1000", 1000), ("mymodel@300", 300), ("mymodel@rc1", 0), ("Nemo", 0)):
        child = by_name[f"{label} | ref-C | sacrebleu"]
        assert [m.step for m in client.get_metric_history(child.info.run_id, "bleu")] == [step], label
        assert ("human.mqm" in child.data.metrics) == (not label.startswith("mymodel"))
    artifacts = {a.path for a in client.list_artifacts(parent_id)}
    assert artifacts == {"system_scores.parquet", "report.md", "tables", "compare"}
    assert {a.path for a in client.list_artifacts(parent_id, "compare")} == {"compare/page.html"}
    assert {a.path for a in client.list_artifacts(parent_id, "tables")} == {f"tables/{t}.json" for t in SMALL_TABLES}
    # the parent run's page shows the job's tables: scores beside the human scores, clusters, correlations
    note = parent.data.tags["mlflow.note.content"]
    assert f"#/experiments/{exp.experiment_id}/runs/{parent_id}/artifactPath/report.md?workflowType=machine_learning" \
        in note
    assert "@@" not in note and len(note) <= 8000
    assert "| system | sacrebleu | mqm |" in note
    nemo_row = next(line for line in note.splitlines() if line.startswith("| Nemo |"))
    assert f"{cell.score.score:.2f} [" in nemo_row and f"{result.inputs.human[0].sys['Nemo']:.4g}" in nemo_row
    assert "**Significance clusters**" in note and "- **sacrebleu** @ ref-C+ref-D:" in note
    assert "| variant | mqm pearson | mqm kendall |" in note


def test_an_experiment_made_elsewhere_gets_the_kind_tag(runs_with_store):
    """An experiment created without the tag (by hand, by an older harness) is tagged by the next job, so MLflow's
    UI opens on its runs."""
    from mlflow.tracking import MlflowClient

    from harness.sinks.mlflow_store import prepare_store

    client = MlflowClient(store(runs_with_store))
    made = client.create_experiment("by-hand")
    assert "mlflow.experimentKind" not in client.get_experiment(made).tags
    assert prepare_store(store(runs_with_store), "by-hand", runs_with_store) == made
    assert client.get_experiment(made).tags["mlflow.experimentKind"] == "custom_model_development"


def test_a_rerun_reuses_a_complete_record_and_replaces_an_incomplete_one(job, runs_with_store, path):
    from mlflow.tracking import MlflowClient

    uri, payload = store(runs_with_store), job["payload"]
    first = log_job(uri, runs_with_store, payload, job["artifacts"]).parent_id
    assert log_job(uri, runs_with_store, payload, job["artifacts"]).parent_id == first  # the same numbers: reused
    parents, children = runs_of(uri)
    assert [p.info.run_id for p in parents] == [first] and len(children) == n_runs(job["result"])
    assert "harness.reused_at" in parents[0].data.tags
    client = MlflowClient(uri)
    client.set_terminated(first, "FAILED")  # an incomplete record
    second = log_job(uri, runs_with_store, payload, job["artifacts"]).parent_id
    assert second != first and client.get_run(first).info.lifecycle_stage == "deleted"
    parents, children = runs_of(uri)
    assert [p.info.run_id for p in parents] == [second] and len(children) == n_runs(job["result"])
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {second}


def test_a_parents_nested_runs_read_in_sql_are_those_mlflow_finds(job, runs_with_store):
    """The record-keeping reads a parent's nested runs (id, name, status) from the SQLite store directly: the same
    runs MLflow's search finds (active ones of that parent only: not a deleted one, not another parent's)."""
    from mlflow.tracking import MlflowClient

    from harness.sinks.mlflow import _children
    from harness.sinks.sqlite_runs import RunBrief, bulk_store, child_runs

    uri, payload = store(runs_with_store), job["payload"]
    first = log_job(uri, runs_with_store, payload, job["artifacts"]).parent_id
    client = MlflowClient(uri)
    exp_id = client.get_experiment_by_name(EXPERIMENT).experiment_id
    other = client.create_run(exp_id, run_name="another parent's", tags={"mlflow.parentRunId": "elsewhere"})
    kids = _children(client, exp_id, first)
    client.delete_run(kids[0].info.run_id)
    client.set_terminated(kids[1].info.run_id, "FAILED")

    def brief(runs):
        return sorted(RunBrief(r.info.run_id, r.info.run_name, r.info.status) for r in runs)

    found = sorted(child_runs(bulk_store(client), exp_id, first))
    assert found == brief(_children(client, exp_id, first)) and len(found) == n_runs(job["result"]) - 1
    assert {r.status for r in found} == {"FINISHED", "FAILED"}
    assert kids[0].info.run_id not in {r.run_id for r in found}
    assert child_runs(bulk_store(client), exp_id, "elsewhere") == brief([client.get_run(other.info.run_id)])


def test_a_reused_record_holds_each_table_once(job, runs_with_store, tmp_path):
    """MLflow's log_table appends to a table the run holds: each identical rerun, reusing the record, added every
    row of the previewed tables once more. Now a reused record's tables are logged anew."""
    import json
    from pathlib import Path

    from mlflow.tracking import MlflowClient

    uri, payload = store(runs_with_store), job["payload"]
    first = log_job(uri, runs_with_store, payload, job["artifacts"]).parent_id
    for _ in range(2):
        assert log_job(uri, runs_with_store, payload, job["artifacts"]).parent_id == first
    client = MlflowClient(uri)
    assert set(payload.tables) == set(SMALL_TABLES)
    for name, table in payload.tables.items():
        logged = json.loads(Path(client.download_artifacts(first, f"tables/{name}.json", str(tmp_path))).read_text())
        assert len(logged["data"]) == len(next(iter(table.values()))), name
    tagged = json.loads(client.get_run(first).data.tags["mlflow.loggedArtifacts"])
    assert sorted(t["path"] for t in tagged) == sorted(f"tables/{name}.json" for name in SMALL_TABLES)


class Interrupting:
    """A progress bar that raises after ``after`` nested runs (a real exception from inside log_job)."""

    def __init__(self, after: int, exc: BaseException) -> None:
        self.after, self.exc, self.n = after, exc, 0

    def update(self, n: int) -> None:
        self.n += n
        if self.n >= self.after:
            raise self.exc


@pytest.mark.parametrize("exc,status", [(RuntimeError("disk on fire"), "FAILED"), (KeyboardInterrupt(), "KILLED")])
def test_a_failure_while_logging_marks_what_was_created(job, runs_with_store, exc, status, path):
    """Interrupted after the third nested run (through the API) or after the transaction that wrote them all."""
    uri, payload = store(runs_with_store), job["payload"]
    if status == "FAILED":
        with pytest.raises(TrackingError) as err:
            log_job(uri, runs_with_store, payload, job["artifacts"], progress=Interrupting(3, exc)).parent_id
        assert str(err.value) == f"MLflow logging to {uri} failed (RuntimeError: disk on fire)"
    else:
        with pytest.raises(KeyboardInterrupt):
            log_job(uri, runs_with_store, payload, job["artifacts"], progress=Interrupting(3, exc)).parent_id
    parents, children = runs_of(uri)
    assert len(parents) == 1 and len(children) == (n_runs(job["result"]) if path == "in bulk" else 3)
    assert {r.info.status for r in [*parents, *children]} == {status}  # never RUNNING, never FINISHED
    rerun = log_job(uri, runs_with_store, payload, job["artifacts"]).parent_id
    parents, children = runs_of(uri)
    assert [p.info.run_id for p in parents] == [rerun] and len(children) == n_runs(job["result"])


def test_parents_of_dead_processes_are_marked_killed(runs_with_store):
    from mlflow.tracking import MlflowClient

    from harness.sinks.mlflow_store import prepare_store

    uri = store(runs_with_store)
    exp = prepare_store(uri, EXPERIMENT, runs_with_store)
    client = MlflowClient(uri)
    gone = os.fork()
    if gone == 0:
        os._exit(0)
    os.waitpid(gone, 0)
    alive, host = os.getppid(), socket.gethostname()

    def parent(key: str, pid: int, on: str = host, children: int = 2, folder: str = "/runs/x/job"
               ) -> tuple[str, list[str]]:
        run = client.create_run(exp, tags={"harness.job_key": key, "harness.pid": str(pid), "harness.host": on,
                                           "output_dir": folder})
        kids = [client.create_run(exp, tags={"mlflow.parentRunId": run.info.run_id}).info.run_id
                for _ in range(children)]
        return run.info.run_id, kids

    dead, dead_kids = parent("job-a", gone)  # this host, its pid gone
    other_host, _ = parent("job-b", gone, on="another-host")  # a pid we cannot judge
    running, running_kids = parent("job-c", alive)  # alive, another job
    same_job, same_kids = parent("job-d", alive)  # alive, but the job whose folder lock we hold
    elsewhere, _ = parent("job-d", alive, folder="/runs/x/other")  # the same job, alive, into another folder
    finished, _ = parent("job-a", gone)
    client.set_terminated(finished, "FAILED")
    killed = mark_dead_parents(client, exp, "job-d", "/runs/x/job")
    assert sorted(killed) == sorted([dead, same_job])
    status = {r: client.get_run(r).info.status for r in [dead, *dead_kids, same_job, *same_kids]}
    assert set(status.values()) == {"KILLED"}
    for run in (other_host, running, *running_kids, elsewhere):
        assert client.get_run(run).info.status == "RUNNING"
    assert client.get_run(finished).info.status == "FAILED"
    assert mark_dead_parents(client, exp, "job-d", "/runs/x/job") == []
    # the record of the same job still running elsewhere is not deleted as an earlier record
    assert settle_records(client, exp, "job-d") == (None, 0)
    assert client.get_run(elsewhere).info.lifecycle_stage == "active"


# ------------------------------------------------------------------------------------------------ a real server


def test_a_job_on_a_tracking_server(job, mlflow_server, tmp_path):
    """The same calls through HTTP: the server keeps the artifacts (no local store, no local artifact folder)."""
    from mlflow.tracking import MlflowClient

    payload = job["payload"]
    server_payload = type(payload)(**{**payload.__dict__, "experiment": "sinks-server", "tables": {}})
    parent_id = log_job(mlflow_server.uri, tmp_path / "runs", server_payload, job["artifacts"]).parent_id
    client = MlflowClient(mlflow_server.uri)
    assert client.get_experiment_by_name("sinks-server").tags["mlflow.experimentKind"] == "custom_model_development"
    parents, children = runs_of(mlflow_server.uri, "sinks-server")
    assert [p.info.run_id for p in parents] == [parent_id] and len(children) == n_runs(job["result"])
    assert {a.path for a in client.list_artifacts(parent_id)} == {"system_scores.parquet", "report.md", "compare"}
    assert log_job(mlflow_server.uri, tmp_path / "runs", server_payload, job["artifacts"]).parent_id == parent_id
    assert not (tmp_path / "runs").exists()


def test_parent_metrics_name_mt_only_when_every_system_is_mt(job):
    """Jobs compare on one name: without human translations among the systems, the correlations over all
    systems are the MT-only ones too."""
    from dataclasses import replace

    from harness.tracking import parent_metrics

    result = job["result"]
    with_human = parent_metrics(result)
    assert any(s.human for s in result.inputs.systems)
    assert with_human["pearson.mt_only"] != with_human["pearson.all_systems"]
    mt = [s for s in result.inputs.systems if not s.human]
    only_mt = replace(result, inputs=replace(result.inputs, systems=tuple(mt)),
                      correlations=tuple(r for r in result.correlations if r.include_human))
    metrics = parent_metrics(only_mt)
    assert metrics["pearson.mt_only"] == metrics["pearson.all_systems"] == with_human["pearson.all_systems"]


def test_datasets_are_logged_under_the_store_lock(job, runs_with_store, monkeypatch, path):
    """MLflow inserts a new dataset after looking it up, and two jobs of a sweep raced between the two steps
    (UNIQUE constraint failed: datasets...): every log_inputs to a SQLite store holds the store's lock (in bulk,
    the nested runs refer to the dataset the parent logged: one log_inputs)."""
    import fcntl

    from mlflow.tracking import MlflowClient

    uri = store(runs_with_store)
    lock = uri[len("sqlite:///"):] + ".lock"
    original, held = MlflowClient.log_inputs, []

    def checked(self, *args, **kwargs):
        fd = os.open(lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.append(False)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            held.append(True)
        finally:
            os.close(fd)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(MlflowClient, "log_inputs", checked)
    log_job(uri, runs_with_store, job["payload"], job["artifacts"])
    assert len(held) == 1 + (0 if path == "in bulk" else n_runs(job["result"])) and all(held)


def _dump(db) -> dict:
    """Schema and every row of a SQLite store, with the times of its experiments and its own folder left out."""
    import sqlite3

    with sqlite3.connect(db) as con:
        tables = sorted(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        out = {"schema": sorted(r for r in con.execute("SELECT type, name, sql FROM sqlite_master"))}
        for table in tables:
            cur = con.execute(f'SELECT * FROM "{table}"')
            cols = [d[0] for d in cur.description]
            rows = [{k: v for k, v in zip(cols, row) if k not in ("creation_time", "last_update_time")}
                    for row in cur]
            out[table] = sorted(str(r).replace(str(db.parent), "STORE") for r in rows)
    return out


def test_a_new_store_is_seeded_from_the_template_mlflow_made(tmp_path, monkeypatch):
    """The first new store of a folder is migrated by MLflow and kept (without its Default experiment) beside it,
    readable by this user only, as the template; the next new store there is a copy of it, opened without a
    migration, and holds exactly what the first one holds."""
    import mlflow.store.db.utils as db_utils

    from harness.sinks.mlflow_store import prepare_store, store_template

    monkeypatch.chdir(tmp_path)  # MLflow's Default experiment points into the working directory
    first = tmp_path / "runs" / "mlflow.db"
    prepare_store(f"sqlite:///{first}", "exp", first.parent)
    template = store_template(first)
    assert template.is_file() and template.parent == first.parent and template.name.startswith(".mlflow-")
    assert template.stat().st_mode & 0o077 == 0
    first_dump = _dump(first)
    first.unlink()

    def no_migration(engine):
        raise AssertionError("a seeded store is migrated again")

    with monkeypatch.context() as m:
        m.setattr(db_utils, "_initialize_tables", no_migration)
        prepare_store(f"sqlite:///{first}", "exp", first.parent)
    assert _dump(first) == first_dump
    assert _dump(template)["experiments"] == []
    assert not list(template.parent.glob("*.tmp")) and not list(first.parent.glob("*.seed"))


def test_a_forked_process_opens_its_own_store_connections(runs_with_store):
    """The job's MLflow child is forked from a process that may hold the store open already (a sweep's, a
    test's): it opens its own SQLite connections instead of using the pooled ones it inherits (SQLite
    connections must not cross a fork), and leaves those to the parent, which goes on with them."""
    from harness.sinks.mlflow_store import _client, prepare_store

    uri = store(runs_with_store)
    exp = prepare_store(uri, EXPERIMENT, runs_with_store)
    client = _client(uri)
    engine = client._tracking_client.store.engine
    with engine.connect() as c:  # pooled here, then inherited
        inherited = id(c.connection.dbapi_connection)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked process: exit status 0 if it logged on a connection of its own
        code = 1
        try:
            child_run = client.create_run(exp, run_name="forked").info.run_id
            client.log_metric(child_run, "bleu", 1.0)
            with engine.connect() as c:
                code = 0 if id(c.connection.dbapi_connection) != inherited else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    with engine.connect() as c:
        assert id(c.connection.dbapi_connection) == inherited  # the parent's own, still open
    forked = client.search_runs([exp], filter_string="attributes.run_name = 'forked'")
    assert len(forked) == 1 and forked[0].data.metrics["bleu"] == 1.0
    client.log_metric(forked[0].info.run_id, "bleu", 2.0)  # the parent writes on its connection
    assert client.get_run(forked[0].info.run_id).data.metrics["bleu"] == 2.0


def test_a_process_killed_while_it_creates_a_store_leaves_none(tmp_path, monkeypatch):
    """A new store is migrated in a temporary file and moved into place whole: a process killed in the middle of
    MLflow's migrations (a job stopped while its MLflow child starts) leaves no half-migrated store that would
    fail every later job ("duplicate column name"), and the next creation removes what it left."""
    import signal

    import mlflow.store.db.utils as db_utils
    from mlflow.tracking import MlflowClient

    from harness.sinks.mlflow_store import prepare_store

    monkeypatch.chdir(tmp_path)  # MLflow's Default experiment points into the working directory
    db = tmp_path / "runs" / "mlflow.db"
    uri = f"sqlite:///{db}"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the killed process: the initial tables are created, then it dies
        try:
            db_utils._upgrade_db = lambda engine: os.kill(os.getpid(), signal.SIGKILL)
            prepare_store(uri, "exp", db.parent)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert not db.exists() and list(db.parent.glob("mlflow.db.*.new"))  # only its temporary file
    exp_id = prepare_store(uri, "exp", db.parent)
    assert not list(db.parent.glob("mlflow.db.*.new*"))
    client = MlflowClient(uri)
    assert client.get_experiment(exp_id).name == "exp" and client.get_experiment("0").name == "Default"
    run = client.create_run(exp_id)
    client.log_metric(run.info.run_id, "bleu", 53.06)
    assert client.get_run(run.info.run_id).data.metrics["bleu"] == 53.06


@pytest.mark.parametrize("plant", ["garbage", "trigger", "view", "a row", "an artifact root", "other owner",
                                   "group-writable", "symlink", "a log beside it"])
def test_a_planted_or_damaged_template_is_never_used(tmp_path, monkeypatch, migrated_store, plant):
    """A template that is not this user's alone or holds more than MLflow's empty schema is removed and MLflow
    creates the store. A trigger planted in a template once stored every bleu metric as 99.0 while the console
    showed 53.06."""
    import contextlib
    import sqlite3

    from harness.sinks.mlflow_store import _client, _trusted, prepare_store, store_template

    def sql(*statements):
        with contextlib.closing(sqlite3.connect(template)) as con:
            for statement in statements:
                con.execute(statement)
                con.commit()

    monkeypatch.chdir(tmp_path)
    db = tmp_path / "runs" / "mlflow.db"
    db.parent.mkdir()
    template = store_template(db)
    shutil.copy(migrated_store, template)
    sql("DELETE FROM experiment_tags", "DELETE FROM experiments", "PRAGMA journal_mode=DELETE")
    os.chmod(template, 0o600)
    assert _trusted(template) is None  # MLflow's empty store as it made it: trusted
    if plant == "garbage":
        template.write_bytes(b"not a database" * 100)
    elif plant == "trigger":
        sql("CREATE TRIGGER evil AFTER INSERT ON metrics BEGIN UPDATE metrics SET value = 99.0 WHERE key = 'bleu'; "
            "END")
    elif plant == "view":
        sql("CREATE VIEW v AS SELECT 1")
    elif plant == "a row":
        sql("INSERT INTO experiments (experiment_id, name, lifecycle_stage) VALUES (7, 'x', 'active')")
    elif plant == "an artifact root":
        sql("UPDATE workspaces SET default_artifact_root = '/tmp/elsewhere'")
    elif plant == "other owner":
        os.chown(template, 65534, 65534)
    elif plant == "group-writable":
        os.chmod(template, 0o664)
    elif plant == "symlink":
        real = tmp_path / "elsewhere.db"
        template.rename(real)
        template.symlink_to(real)
    else:
        template.with_name(template.name + "-wal").write_bytes(b"\0" * 100)
    assert _trusted(template) is not None
    exp_id = prepare_store(f"sqlite:///{db}", "exp", db.parent)
    client = _client(f"sqlite:///{db}")

    def programs(path):
        with sqlite3.connect(path) as con:
            return con.execute("SELECT type, name, sql FROM sqlite_master WHERE type IN ('trigger', 'view')").fetchall()

    assert programs(db) == programs(migrated_store)  # MLflow's own trigger, nothing planted
    run = client.create_run(exp_id)
    client.log_metric(run.info.run_id, "bleu", 53.06)
    assert client.get_run(run.info.run_id).data.metrics["bleu"] == 53.06
    assert client.get_experiment("0").name == "Default"  # MLflow migrated the store itself
    assert not template.is_symlink() and (not template.exists() or _dump(template)["experiments"] == [])


# ------------------------------------------------------------------------------------------------ written in bulk


def _normalised(db) -> dict:
    """:func:`_dump` of a store with its ids replaced by what they name (a run by its name, an input by its run, a
    dataset by its name) and every time by whether it is set."""
    import sqlite3

    times = {"start_time", "end_time", "timestamp", "creation_time", "last_update_time", "deleted_time"}
    with sqlite3.connect(db) as con:
        ids = {run_id: f"RUN<{name}>" for run_id, name in con.execute("SELECT run_uuid, name FROM runs")}
        ids.update({i: f"INPUT<{ids[run]}>" for i, run in con.execute("SELECT input_uuid, destination_id FROM inputs")})
        ids.update({i: f"DATASET<{n}>" for i, n in con.execute("SELECT dataset_uuid, name FROM datasets")})
        out = {}
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            cur = con.execute(f'SELECT * FROM "{table}"')
            cols = [d[0] for d in cur.description]
            rows = []
            for row in cur:
                text = str({k: (v is not None) if k in times else v for k, v in zip(cols, row)})
                for old, new in {**ids, str(db.parent): "STORE"}.items():
                    text = text.replace(old, new)
                text = re.sub(r"('key': 'harness\.logged_at', 'value': ')\d+", r"\1TIME", text)  # a time too
                rows.append(text)
            out[table] = sorted(rows)
    return out


def test_runs_in_bulk_are_the_rows_mlflow_writes(job, tmp_path, migrated_store, monkeypatch):
    """The same job logged into two new stores, its nested runs in one transaction and through MLflow's own API
    (create_run, log_batch, log_inputs, set_terminated): every row of every table is the same (ids and times
    aside), and the store MLflow's API wrote was one bulk_store accepts."""
    import shutil

    import harness.sinks.sqlite_runs as bulk
    from harness.sinks.mlflow_store import _client

    stores = {}
    for way in ("bulk", "api"):
        runs = tmp_path / way
        runs.mkdir()
        shutil.copy(migrated_store, runs / "mlflow.db")
        if way == "api":
            monkeypatch.setattr(bulk, "VERIFIED_SCHEMAS", frozenset())
        log_job(store(runs), runs, job["payload"], job["artifacts"])
        stores[way] = runs / "mlflow.db"
    monkeypatch.undo()
    assert bulk.bulk_store(_client(store(tmp_path / "api"))) is not None
    found = {way: _normalised(db) for way, db in stores.items()}
    assert len(found["bulk"]["runs"]) == 1 + n_runs(job["result"])
    assert found["bulk"] == found["api"]


def test_the_installed_mlflow_schema_is_verified(migrated_store):
    """A new MLflow may change its store: then its revision is not verified, every job logs through MLflow's API
    (correct, ~30x slower), and this test says so: run test_runs_in_bulk_are_the_rows_mlflow_writes with the
    revision added to VERIFIED_SCHEMAS, and keep it if it passes."""
    import sqlite3

    from harness.sinks.sqlite_runs import VERIFIED_SCHEMAS

    with sqlite3.connect(migrated_store) as con:
        (revision,) = con.execute("SELECT version_num FROM alembic_version").fetchone()
    assert revision in VERIFIED_SCHEMAS


def test_runs_in_bulk_are_all_or_nothing(job, runs_with_store, monkeypatch):
    """A failure inside the transaction (two runs given one id) writes no nested run; the parent is FAILED and the
    rerun is complete."""
    import harness.sinks.sqlite_runs as bulk

    real, calls = bulk.uuid4, []

    def repeating():  # a run id, then its input's id, per run: the third run gets the second run's id
        calls.append(calls[2] if len(calls) == 4 else real())
        return calls[-1]

    monkeypatch.setattr(bulk, "uuid4", repeating)
    uri = store(runs_with_store)
    with pytest.raises(TrackingError, match=r"^MLflow logging to .* failed \(MlflowException: \(sqlite3\."
                                             r"IntegrityError\) UNIQUE constraint failed: runs.run_uuid\)$"):
        log_job(uri, runs_with_store, job["payload"], job["artifacts"])
    parents, children = runs_of(uri)
    assert [p.info.status for p in parents] == ["FAILED"] and children == []
    monkeypatch.undo()
    rerun = log_job(uri, runs_with_store, job["payload"], job["artifacts"]).parent_id
    parents, children = runs_of(uri)
    assert [p.info.run_id for p in parents] == [rerun] and len(children) == n_runs(job["result"])
    assert {c.info.status for c in children} == {"FINISHED"}


def test_two_identical_jobs_finishing_together_leave_one_record(job, runs_with_store, monkeypatch):
    """Two identical jobs into two folders, both paused just before they replace the earlier records of their job
    (the case where each deleted the other's record and both printed a parent run that no longer existed): now
    both settle on the same survivor and it exists."""
    import dataclasses
    import threading

    import harness.sinks.mlflow as sink
    from harness.sinks import mlflow_store

    both_checked, both_logged = threading.Barrier(2, timeout=60), threading.Barrier(2, timeout=60)
    real_complete, real_settle = sink.complete_record, sink.settle_records

    def complete_record(*args, **kwargs):  # neither finds the other's record complete: both log anew
        found = real_complete(*args, **kwargs)
        both_checked.wait()
        return found

    def settle_records(*args, **kwargs):  # both records FINISHED before either job deletes anything
        both_logged.wait()
        return real_settle(*args, **kwargs)

    monkeypatch.setattr(sink, "complete_record", complete_record)
    monkeypatch.setattr(sink, "settle_records", settle_records)
    uri = store(runs_with_store)
    payloads = [dataclasses.replace(job["payload"], tags={**job["payload"].tags, "output_dir": f"/runs/x/{n}"})
                for n in ("one", "two")]
    logged: dict[int, object] = {}

    def run(i: int) -> None:
        logged[i] = log_job(uri, runs_with_store, payloads[i], job["artifacts"])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert set(logged) == {0, 1}
    client = mlflow_store._client(uri)
    parents = [r for r in sink.all_runs(client, logged[0].experiment_id, f"tags.`harness.job_key` = '{job['key']}'")
               if "mlflow.parentRunId" not in r.data.tags]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert logged[0].parent_id == logged[1].parent_id == parents[0].info.run_id
    assert len(sink._children(client, logged[0].experiment_id, parents[0].info.run_id)) == len(job["payload"].runs)
