"""The ``harness`` command as users run it: the README's main job on the bundled demo and a sweep on the local
cores with a failing job in real subprocesses; a job folder named after its dataset, a real tracking server and
one-line errors through the same ``main`` in this process (:func:`support.harness_here`). (Reruns, the cache,
MLflow's record of a rerun and versions are tested on the job runner: tests/test_runner.py.)"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from harness.sinks.parquet import read_metadata
from harness.storage.manifest import verified_files
from support import DEMO, harness_here, job_folder, make_dataset, run_harness, sacrebleu_score

pytestmark = pytest.mark.slow


def mlflow_runs(uri: str, experiment: str) -> tuple[list, list]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=10000)
    return ([r for r in runs if "mlflow.parentRunId" not in r.data.tags],
            [r for r in runs if "mlflow.parentRunId" in r.data.tags])


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """`harness` with no arguments (the README's main job), in a fresh working directory."""
    cwd = tmp_path_factory.mktemp("demo")
    proc = run_harness(cwd)
    return {"cwd": cwd, "proc": proc, "out": job_folder(cwd, "demo"),
            "uri": f"sqlite:///{cwd / 'runs' / 'mlflow.db'}"}


def test_demo_prints_tables_and_locations(demo):
    out = demo["proc"].stdout
    assert "BLEU against ref-C+ref-D" in out and "ref-A (human)" in out and "mqm" in out
    assert "sacrebleu: nrefs:2|case:mixed|eff:no|tok:13a" in out
    assert "mlflow ui --backend-store-uri sqlite:///" in out and str(demo["out"]) in out
    # the command works as printed, without the virtualenv activated: the mlflow next to this Python
    command = next(line for line in out.splitlines() if "open the UI:" in line).split("open the UI: ", 1)[1]
    assert command.split()[0] == str(Path(sys.executable).parent / "mlflow")
    assert Path(command.split()[0]).is_file()
    assert "Traceback" not in demo["proc"].stderr and "Creating initial MLflow database" not in demo["proc"].stderr


def test_demo_tables_match_sacrebleu(demo, sacrebleu_stats):
    table = pd.read_parquet(demo["out"] / "system_scores.parquet")
    assert len(table) == 9 * 3 * 5  # systems x refsets (each + both) x variants
    assert set(table["variant"]) == {"sacrebleu", "intl", "char", "paper", "nltk"}
    # sacrebleu's own statistics of the demo's texts (once per session, see conftest), scored as sacrebleu scores
    # them: BLEU(tokenize=..., smooth_method=...).corpus_score(system, refs) for each row
    for variant, tokenize, smooth in (("sacrebleu", "13a", "exp"), ("intl", "intl", "exp"), ("char", "char", "exp"),
                                      ("paper", "13a", "none")):
        for refset in ("ref-C", "ref-C+ref-D"):
            oracle = sacrebleu_stats(DEMO, tuple(refset.split("+")), tokenize)
            rows = table[(table.variant == variant) & (table.refset == refset)]
            assert sorted(rows["system"]) == sorted(oracle), (variant, refset)
            for row in rows.itertuples():
                want = sacrebleu_score(oracle[row.system], smooth).score
                assert row.bleu == pytest.approx(want, rel=1e-12, abs=1e-12), (variant, refset, row.system)
    assert table["ci_low"].notna().sum() == 9 * 3 * 4  # every additive variant has a bootstrap interval


def test_every_figure_can_be_redrawn_from_the_tables_alone(demo, tmp_path):
    """The figures are drawn from the published Parquet tables and their metadata only: read back from the folder,
    they give the very same PNGs (bytes), and the table holds every point of the BLEU-vs-human scatter."""
    from harness.job.figures import FigureTables, draw

    pngs = sorted(p.name for p in demo["out"].glob("*.png"))
    assert {"bleu_by_system.png", "bleu_vs_human_mqm.png"} <= set(pngs)
    redrawn = draw(FigureTables.read(demo["out"]), tmp_path)
    assert sorted(n for n in redrawn if n.endswith(".png")) == pngs
    for name in pngs:
        assert (tmp_path / name).read_bytes() == (demo["out"] / name).read_bytes(), name
    table = pd.read_parquet(demo["out"] / "system_scores.parquet")
    human = pd.read_csv(DEMO / "human" / "sys.tsv", sep="\t").set_index("system")["score"]
    full = table[table["refset"] == "ref-C+ref-D"]
    assert full.set_index("system")["human.mqm"].groupby(level=0).first().to_dict() == human.to_dict()


def test_demo_folder_is_one_verified_generation(demo):
    trusted = verified_files(demo["out"])
    assert {"system_scores.parquet", "segment_scores.parquet", "significance.parquet", "correlations.parquet",
            "report.md", "config.yaml"} <= set(trusted)
    meta = read_metadata(demo["out"] / "system_scores.parquet")
    assert meta["harness_version"] and "experiment_name: demo" in meta["config"]
    assert "ref:ref-C" in json.loads(meta["inputs_sha256"])
    assert json.loads((demo["out"] / "job_status.json").read_text())["status"] == "ok"


def test_demo_mlflow_runs_equal_the_table(demo):
    table = pd.read_parquet(demo["out"] / "system_scores.parquet")
    parents, runs = mlflow_runs(demo["uri"], "demo")
    assert len(parents) == 1 and len(runs) == len(table)
    by = {(r.data.tags["system"], r.data.tags["refset"], r.data.tags["variant"]): r for r in runs}
    for row in table.itertuples():
        run = by[(row.system, row.refset, row.variant)]
        assert run.data.metrics["bleu"] == pytest.approx(row.bleu, rel=1e-12, abs=1e-12)
        assert run.data.tags["signature"] == row.signature and run.info.status == "FINISHED"
        assert run.data.metrics["human.mqm"] < 0


def test_a_dataset_folder_names_the_experiment_and_the_job(tmp_path):
    ds = make_dataset(tmp_path / "mini")
    proc = harness_here(tmp_path, f"dataset.root={ds}", "bleu=sacrebleu", "tracking=false", "n_samples=50",
                        "figures=false")
    folder = job_folder(tmp_path, "mini")  # not "demo"
    assert folder.name.startswith("bleu=sacrebleu,root=mini,figures=false,n_samples=50-")
    table = pd.read_parquet(folder / "system_scores.parquet")
    assert set(table["dataset"]) == {"mini"} and sorted(table["system"]) == ["Nemo", "Online-W", "UEdin"]
    assert "BLEU against ref-C" in proc.stdout
    # what is saved and shown is what ran: the experiment is the dataset's, the demo's description gone
    saved = yaml.safe_load((folder / "config.yaml").read_text())
    assert saved["experiment_name"] == "mini" and saved["description"] == ""
    assert yaml.safe_load(read_metadata(folder / "system_scores.parquet")["config"])["experiment_name"] == "mini"
    shown = yaml.safe_load(harness_here(tmp_path, "--cfg", "job", f"dataset.root={ds}").stdout)
    assert shown["experiment_name"] is None and shown["description"] == ""  # null: the dataset's name
    demo = yaml.safe_load(harness_here(tmp_path, "--cfg", "job").stdout)
    assert demo["experiment_name"] == "demo" and demo["description"].startswith("WMT21 en-de news")


def test_sweep_on_local_cores_with_a_failing_job(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    ds = make_dataset(tmp_path / "mini")
    # untracked: a sweep's jobs logging into one store are the submitit test's (test_shards.py), jobs writing one
    # store at once the reliability tests'; here each of the two loky workers would import mlflow for nothing
    proc = run_harness(tmp_path, "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", f"dataset.root={ds}",
                       "experiment_name=sweep", "bleu=sacrebleu,char", "n_samples=50", "figures=false",
                       "tracking=false", "dataset.systems=[Nemo,UEdin],[NoSuchSystem]", check=False)
    assert proc.returncode == 1 and "2 job(s) failed" in proc.stderr and "NoSuchSystem" in proc.stderr
    assert "Traceback" not in proc.stderr
    folders = [p for p in (tmp_path / "runs" / "sweep").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(folders) == 2 and all(verified_files(f) for f in folders)  # each job published its own folder
    assert not list(tmp_path.rglob("mlflow.db"))


def test_against_a_real_tracking_server(tmp_path, mlflow_server):
    ds = make_dataset(tmp_path / "mini")
    harness_here(tmp_path, f"tracking_uri={mlflow_server.uri}", f"dataset.root={ds}", "experiment_name=server",
                 "bleu=[sacrebleu,char]", "n_samples=50", "figures=false")
    table = pd.read_parquet(job_folder(tmp_path, "server") / "system_scores.parquet")
    parents, runs = mlflow_runs(mlflow_server.uri, "server")
    assert len(parents) == 1 and len(runs) == len(table) == 3 * 1 * 2
    by = {(r.data.tags["system"], r.data.tags["variant"]): r.data.metrics["bleu"] for r in runs}
    for row in table.itertuples():
        assert by[(row.system, row.variant)] == pytest.approx(row.bleu, rel=1e-12)
    assert not (tmp_path / "runs" / "mlflow.db").exists()  # nothing went to the local store


def test_mlflow_logs_in_the_jobs_log_and_a_config_without_tracking(tmp_path):
    """MLflow's child process is forked before Hydra configures the job's logging: its records are the job's all
    the same (a rerun replacing an incomplete record says so, in the job's format, on stderr); a config that turns
    tracking off (not the command line) ends the child unused."""
    from mlflow.tracking import MlflowClient

    ds = make_dataset(tmp_path / "mini")
    args = (f"dataset.root={ds}", "bleu=sacrebleu", "n_samples=50", "figures=false")
    run_harness(tmp_path, *args)
    uri = f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}"
    (parent,), _ = mlflow_runs(uri, "mini")
    MlflowClient(uri).set_terminated(parent.info.run_id, "FAILED")  # an incomplete record: the rerun replaces it
    proc = run_harness(tmp_path, *args)
    assert re.search(r"^\d\d:\d\d:\d\d INFO harness\.sinks\.mlflow: replaced 1 earlier MLflow record\(s\) of this "
                     r"job$", proc.stderr, re.M), proc.stderr
    (again,), _ = mlflow_runs(uri, "mini")
    assert again.info.run_id != parent.info.run_id and again.info.status == "FINISHED"

    conf = tmp_path / "conf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "quiet.yaml").write_text("# @package _global_\ntracking: false\nexperiment_name: quiet\n")
    proc = run_harness(tmp_path, "--config-dir", str(tmp_path / "conf"), "experiment=quiet", *args)
    assert "Traceback" not in proc.stderr and "open the UI" not in proc.stdout
    assert (tmp_path / "runs" / "quiet").is_dir()
    assert MlflowClient(uri).get_experiment_by_name("quiet") is None


@pytest.mark.parametrize("args,expect,status", [
    (["bleu.sacrebleu.tokenize=bogus"], "bleu.sacrebleu.tokenize", 2),
    (["seed=-1"], "seed: must be an integer from 0", 2),
    (["+n_sampels=5000"], "did you mean n_samples", 2),
    (["n_samples=0"], "n_samples: must be a positive integer", 2),
    (["human=no_such_kind"], "no human scores of kind 'no_such_kind'", 2),
])
def test_user_errors_are_one_line_before_any_work(tmp_path, args, expect, status):
    proc = harness_here(tmp_path, *args, "tracking=false", check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("harness: error")]
    assert proc.returncode == status and len(errors) == 1 and expect in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list(tmp_path.rglob("*.parquet")) and not (tmp_path / "runs" / "cache").exists()


def test_help_lists_our_keys_bundles_and_variants(tmp_path):
    proc = run_harness(tmp_path, "--help")
    for word in ("dataset.root=DIR", "paper_validation", "mteval-v13a", "human=all|none|KIND", "experiment=NAME"):
        assert word in proc.stdout
