"""A whole job, in process, on a small dataset (30 segments): the folder it publishes, its tables and report, its
MLflow record, reruns, versions, and the checks that refuse a job before any work."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

import pandas as pd
import pytest
from sacrebleu.metrics.bleu import BLEU

from harness.errors import ConfigError, JobFolderError
from harness.job.folder import STATUS
from harness.job.spec import build_spec
from harness.job.tables import CORRELATION_COLUMNS, SEGMENT_COLUMNS, SIGNIFICANCE_COLUMNS, SYSTEM_COLUMNS
from harness.runner import run_job
from harness.storage.manifest import MANIFEST, verified_files
from support import base_config, read_lines, write_lines

pytestmark = pytest.mark.slow  # end to end: the fast tier (-m 'not slow') leaves it out


def run(tmp_path: Path, dataset: Path, **overrides) -> tuple:
    """A job in process (no figures unless asked: :func:`job` draws them once for the module)."""
    extra = overrides.pop("_overrides", [])
    overrides.setdefault("figures", False)
    cfg = base_config(tmp_path, bleu=overrides.pop("bleu", ("sacrebleu", "char")), n_samples=100,
                      dataset={"root": str(dataset), "refsets": "each", **overrides.pop("dataset_keys", {})},
                      **overrides)
    out = io.StringIO()
    given = [f"dataset.root={dataset}", "experiment_name=test", *extra]  # as typed on the command line
    outcome = run_job(build_spec(cfg, given), "config: test\n", out)
    return outcome, out.getvalue()


def nested(uri: str, experiment: str) -> tuple[list, list]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=10000)
    return ([r for r in runs if "mlflow.parentRunId" not in r.data.tags],
            [r for r in runs if "mlflow.parentRunId" in r.data.tags])


@pytest.fixture(scope="module")
def job(tmp_path_factory, small_dataset) -> tuple:
    """One complete job (figures included, as PNG and PDF) that the read-only tests below share."""
    root = tmp_path_factory.mktemp("job")
    return (*run(root, small_dataset, figures=True, figure_formats=["pdf", "png"]), root)


def test_a_job_publishes_one_complete_generation(job):
    outcome, printed, root = job
    folder = outcome.folder
    assert folder.parent == (root / "runs" / "test").resolve()
    assert folder.name.startswith("root=small,experiment_name=test-")
    status = json.loads((folder / STATUS).read_text())
    manifest = json.loads((folder / MANIFEST).read_text())
    assert status["status"] == "ok" and status["generation"] == manifest["generation"]
    trusted = verified_files(folder)
    for name in ("system_scores.parquet", "segment_scores.parquet", "significance.parquet", "correlations.parquet",
                 "report.md", "config.yaml", "bleu_by_system.png", "bleu_by_system.pdf", "bleu_vs_human_human.png",
                 "bleu_vs_human_human.pdf"):
        assert name in trusted, name
    assert not [name for name in trusted if name.endswith(".svg")]
    assert not [p for p in folder.iterdir() if p.name.startswith(".staging")]
    assert manifest["inputs_sha256"]["ref:ref-C"] == outcome.result.inputs.refs["ref-C"].sha256
    # files get the permissions the umask gives (not mkstemp's 0600)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((folder / "system_scores.parquet").stat().st_mode) == 0o666 & ~umask
    assert "BLEU against ref-C+ref-D" in printed and "ref-A (human)" in printed and str(folder) in printed


def test_tables_have_the_contract_columns_and_equal_sacrebleu(job, small_dataset):
    outcome, _, _ = job
    folder = outcome.folder
    scores = pd.read_parquet(folder / "system_scores.parquet")
    assert list(scores.columns[: len(SYSTEM_COLUMNS)]) == SYSTEM_COLUMNS and "system_version" in scores
    assert len(scores) == 4 * 3 * 2 and (scores["system_version"] == "").all()
    refs = [read_lines(small_dataset / "refs" / f"{r}.txt") for r in ("ref-C", "ref-D")]
    for row in scores[(scores.variant == "sacrebleu") & (scores.refset == "ref-C+ref-D")].itertuples():
        # ref-A (the human translation) is not one of the references here: every system is scored on both
        want = BLEU(references=refs).corpus_score(read_lines(small_dataset / "systems" / f"{row.system}.txt"),
                                                  None).score
        assert row.bleu == pytest.approx(want, rel=1e-12, abs=1e-12)
    seg = pd.read_parquet(folder / "segment_scores.parquet")
    assert list(seg.columns[: len(SEGMENT_COLUMNS)]) == SEGMENT_COLUMNS and len(seg) == 24 * 30
    sig = pd.read_parquet(folder / "significance.parquet")
    assert list(sig.columns[: len(SIGNIFICANCE_COLUMNS)]) == SIGNIFICANCE_COLUMNS
    assert {"system_version_a", "system_version_b"} <= set(sig.columns) and len(sig) == 6 * 3 * 2
    corr = pd.read_parquet(folder / "correlations.parquet")
    assert list(corr.columns[: len(CORRELATION_COLUMNS)]) == CORRELATION_COLUMNS
    assert set(corr["human_score"]) == {"human"} and {True, False} == set(corr["include_human"])


def test_results_are_values(job):
    import dataclasses

    outcome, _, _ = job
    cell = outcome.result.cells[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        cell.ci_low = 0.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        cell.sentence[0] = 1.0
    assert isinstance(outcome.result.cells, tuple) and isinstance(outcome.result.correlations, tuple)


def test_identical_rerun_uses_the_cache_and_replaces_the_mlflow_record(tmp_path, small_dataset, runs_with_store):
    uri = f"sqlite:///{runs_with_store / 'mlflow.db'}"
    first, first_printed = run(tmp_path, small_dataset, tracking=True)
    assert first.parent_run and first.tracking_error is None
    parents, children = nested(uri, "test")
    assert len(parents) == 1 and len(children) == 24
    second, printed = run(tmp_path, small_dataset, tracking=True)
    blocks = 4 * 3 * 2  # systems x reference sets x variants, as the first run computed them
    assert f"({blocks} statistics computed, 0 from cache)" in first_printed
    assert f"(0 statistics computed, {blocks} from cache)" in printed and second.folder == first.folder
    parents, children = nested(uri, "test")
    assert [p.info.run_id for p in parents] == [second.parent_run] and len(children) == 24
    assert all(r.info.status == "FINISHED" for r in [*parents, *children])
    # a changed job adds a record
    run(tmp_path, small_dataset, tracking=True, seed=7)
    parents, _ = nested(uri, "test")
    assert len(parents) == 2


def test_what_mlflow_holds(tmp_path, small_dataset, runs_with_store):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{runs_with_store / 'mlflow.db'}"
    outcome, printed = run(tmp_path, small_dataset, tracking=True, compare=[["Nemo", "UEdin"]])
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("test")
    assert exp.tags.get("mlflow.experimentKind") == "custom_model_development"
    parents, children = nested(uri, "test")
    parent = parents[0]
    assert parent.info.run_name == f"small | {outcome.result.spec.job_name}"
    assert "pearson.mt_only" in parent.data.metrics and len(parent.data.metrics) <= 12
    assert parent.inputs.dataset_inputs and parent.inputs.dataset_inputs[0].dataset.name == "small"
    by = {r.info.run_name: r for r in children}
    run_ = by["Nemo | ref-C+ref-D | sacrebleu"]
    assert run_.data.tags["system"] == "Nemo" and run_.data.params["tokenize"] == "13a"
    assert "human.human" in run_.data.metrics and run_.data.tags["signature"].startswith("nrefs:2|")
    assert all(c.inputs.dataset_inputs[0].dataset.name == "small" for c in children)  # the Dataset column
    # the UI link names the experiment and opens its runs (MLflow 3.17 defaults to the GenAI overview)
    assert f"#/experiments/{exp.experiment_id}?workflowType=machine_learning" in printed
    preview = json.loads(Path(client.download_artifacts(parent.info.run_id, "tables/system_scores.json",
                                                        str(tmp_path))).read_text())
    assert preview["columns"][:5] == ["dataset", "refset", "system", "system_version", "variant"]
    assert not {"precisions", "counts", "totals", "system_sha256"} & set(preview["columns"])
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"system_scores.parquet", "report.md", "manifest.json", "tables", "compare"} <= artifacts
    pages = {a.path for a in client.list_artifacts(parent.info.run_id, "compare")}
    assert {"compare/compare-Nemo-vs-UEdin.html", "compare/compare-Nemo-vs-UEdin.buckets.parquet"} <= pages


def test_versions_in_one_job(tmp_path, small_dataset, runs_with_store):
    ds = tmp_path / "versions"
    for ref in ("ref-C", "ref-D"):
        write_lines(ds / "refs" / f"{ref}.txt", read_lines(small_dataset / "refs" / f"{ref}.txt"))
    for version, source in (("1000", "UEdin"), ("2000", "Nemo"), ("300", "Online-W")):
        write_lines(ds / "systems" / f"mymodel@{version}.txt", read_lines(small_dataset / "systems" / f"{source}.txt"))
    outcome, printed = run(tmp_path, ds, tracking=True, bleu=("sacrebleu",))
    scores = pd.read_parquet(outcome.folder / "system_scores.parquet")
    assert sorted(set(scores["system"])) == ["mymodel"]
    assert list(dict.fromkeys(scores["system_version"])) == ["300", "1000", "2000"]  # natural order
    sig = pd.read_parquet(outcome.folder / "significance.parquet")
    pairs = set(zip(sig["system_version_a"], sig["system_version_b"]))
    assert {("300", "1000"), ("1000", "2000")} <= pairs
    seg = pd.read_parquet(outcome.folder / "segment_scores.parquet")
    assert set(seg["system_version"]) == {"300", "1000", "2000"}
    assert "mymodel@1000" in printed
    _, children = nested(f"sqlite:///{runs_with_store / 'mlflow.db'}", "test")
    steps = {r.info.run_name: r for r in children}
    run_ = steps["mymodel@1000 | ref-C+ref-D | sacrebleu"]
    from mlflow.tracking import MlflowClient

    history = MlflowClient(f"sqlite:///{runs_with_store / 'mlflow.db'}").get_metric_history(run_.info.run_id, "bleu")
    assert [m.step for m in history] == [1000]


def test_folder_that_is_not_ours_or_holds_an_input_is_refused(tmp_path, small_dataset):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    with pytest.raises(JobFolderError, match="did not write"):
        run(tmp_path, small_dataset, output_dir=str(foreign))
    assert (foreign / "thesis.tex").read_text() == "precious" and len(list(foreign.iterdir())) == 1
    with pytest.raises(JobFolderError, match="holds an input"):
        run(tmp_path, small_dataset, output_dir=str(small_dataset / "systems"))
    with pytest.raises(JobFolderError, match="holds an input"):
        run(tmp_path, small_dataset, output_dir=str(small_dataset))


def test_explicit_system_with_a_dataset_systems_name_is_refused(tmp_path, small_dataset):
    other = write_lines(tmp_path / "other.txt", read_lines(small_dataset / "systems" / "UEdin.txt"))
    with pytest.raises(ConfigError) as err:
        run(tmp_path, small_dataset, system={"name": "Nemo", "path": str(other), "version": None, "human": False,
                                             "metadata": {}}, _overrides=["system.path=x"])
    assert str(other) in str(err.value) and "Nemo.txt" in str(err.value)


def test_human_none_reads_no_human_file(tmp_path, small_dataset):
    ds = tmp_path / "broken_human"
    for sub in ("refs", "systems"):
        for f in (small_dataset / sub).glob("*.txt"):
            write_lines(ds / sub / f.name, read_lines(f))
    (ds / "human").mkdir()
    (ds / "human" / "seg.tsv").write_bytes(b"\xff not even utf-8")
    outcome, _ = run(tmp_path, ds, human={"select": "none"})
    assert outcome.result.correlations == () and outcome.result.inputs.human == ()
    with pytest.raises(Exception, match="seg.tsv"):
        run(tmp_path, ds)


def test_unusable_tracking_store_keeps_the_tables(tmp_path, small_dataset):
    outcome, _ = run(tmp_path, small_dataset, tracking=True, tracking_uri="foo://bar")
    assert outcome.tracking_error is not None and "foo://bar" in str(outcome.tracking_error)
    pending = json.loads((outcome.folder / "tracking_pending.json").read_text())
    assert pending["tracking_uri"] == "foo://bar"
    assert "system_scores.parquet" in verified_files(outcome.folder)


def test_an_mlflow_that_fails_to_start_keeps_the_tables_and_is_tried_once(tmp_path, small_dataset, monkeypatch):
    """MLflow starts while the figures are drawn, before the folder is published: any failure there (here an
    error no store would raise) is recorded after publishing, the same way as a store that cannot be used, and
    the start is not tried again."""
    from harness.sinks import mlflow as sink
    from harness.sinks import mlflow_store

    calls = tmp_path / "calls"  # a line a call, from whichever process starts MLflow (a child of the job's)

    def broken(*args, **kwargs):
        with open(calls, "a") as f:
            f.write(f"{args}\n")
        raise RuntimeError("mlflow is broken")

    for module in (sink, mlflow_store):  # the start-up and the logging each have their name for it
        monkeypatch.setattr(module, "prepare_store", broken)
    outcome, _ = run(tmp_path, small_dataset, tracking=True, figures=True)
    assert len(calls.read_text().splitlines()) == 1
    assert str(outcome.tracking_error) == "MLflow could not be started (RuntimeError: mlflow is broken)"
    pending = json.loads((outcome.folder / "tracking_pending.json").read_text())
    assert pending["error"] == str(outcome.tracking_error)
    trusted = set(verified_files(outcome.folder))
    assert {"system_scores.parquet", "report.md", "bleu_by_system.png"} <= trusted
    assert not [name for name in trusted if name.endswith(".pdf")]  # PNG only, unless figure_formats asks for more


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_mlflow_child_ends_on_the_first_signal_the_job_ends_on(sigint):
    """MLflow's child process ends its logging on the first SIGTERM or Ctrl-C, as the job does, and ignores the
    next (the job passes on what reaches it alone, the terminal reaches both); a Ctrl-C the job ignores (a
    background job's) is ignored there too. In a process of its own (signal handlers are per process)."""
    import signal

    from harness.errors import Terminated
    from harness.tracking_child import _interrupted_once

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked process: exit status 0 if every check holds
        code = 1
        try:
            signal.alarm(30)  # never a hang: SIGALRM ends it
            signal.signal(signal.SIGINT, signal.SIG_IGN if sigint == "ignored" else signal.default_int_handler)
            _interrupted_once()
            assert (signal.getsignal(signal.SIGINT) is signal.SIG_IGN) == (sigint == "ignored")
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                signal.pause()
            except Terminated:
                pass
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGTERM)  # ignored: nothing raised
            os.kill(os.getpid(), signal.SIGINT)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_compare_pairs_in_a_job(tmp_path, small_dataset):
    """``compare=[[A, B], ...]``: each pair's page and tables are published with the job (manifest), named in the
    report; the headline test is the job's own paired test of the pair (same p-value); a human translation that
    is a reference is compared with another system against the other references only (leave-one-out)."""
    ds = tmp_path / "ds"
    for sub in ("refs", "systems"):
        for f in (small_dataset / sub).glob("*.txt"):
            write_lines(ds / sub / f.name, read_lines(f))
    write_lines(ds / "systems" / "ref-C.txt", read_lines(ds / "refs" / "ref-C.txt"))  # a reference, as a system
    (ds / "meta.json").write_text('{"human_systems": ["ref-A", "ref-C"]}\n')
    outcome, _ = run(tmp_path, ds, bleu=("sacrebleu",), compare=[["Nemo", "UEdin"], ["ref-C", "Nemo"]],
                     dataset_keys={"refsets": "all"})
    trusted = verified_files(outcome.folder)
    for page in ("compare-Nemo-vs-UEdin", "compare-ref-C-vs-Nemo"):
        assert f"compare/{page}.html" in trusted and f"compare/{page}.buckets.parquet" in trusted
    report = (outcome.folder / "report.md").read_text()
    assert "## Where pairs of systems differ" in report and "(compare/compare-Nemo-vs-UEdin.html)" in report
    first, loo = outcome.result.pairs
    sig = pd.read_parquet(outcome.folder / "significance.parquet")
    row = sig[(sig.refset == "ref-C+ref-D") & (sig.system_a == "Nemo") & (sig.system_b == "UEdin")].iloc[0]
    assert first.headline.p_value == row["p_value"]
    assert first.headline.delta == pytest.approx(row["delta"], rel=1e-12)
    assert loo.ref_names == ("ref-D",)
    ref_d = [read_lines(ds / "refs" / "ref-D.txt")]
    for side, name in ((loo.a, "ref-C"), (loo.b, "Nemo")):
        want = BLEU(references=ref_d).corpus_score(read_lines(ds / "systems" / f"{name}.txt"), None).score
        assert side.score.score == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("pairs,expect", [
    ([["Nemo"]], "'Nemo' has 1 version(s)"),
    ([["Nemo", "Nobody"]], "unknown system 'Nobody'"),
    ([["Nemo", "Nemo"]], "given twice"),
    ([["Nemo", "UEdin", "ref-A"]], "expected pairs of systems"),
])
def test_compare_pairs_are_checked_before_any_work(tmp_path, small_dataset, pairs, expect):
    with pytest.raises(ConfigError, match="compare") as err:
        run(tmp_path, small_dataset, compare=pairs)
    assert expect in str(err.value)
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").rglob("*.parquet"))

