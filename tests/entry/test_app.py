"""The Hydra application end to end: real subprocesses, real tables, real MLflow stores and a real server."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
from sacrebleu.metrics.bleu import BLEU

from support import CANDIDATES, read_lines

pytestmark = pytest.mark.slow

HARNESS = shutil.which("harness") or str(Path(sys.executable).parent / "harness")
DATA = CANDIDATES[0]  # the copy the project ships


def run_harness(cwd: Path, *args: str, check: bool = True, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    env.pop("MLFLOW_TRACKING_URI", None)
    proc = subprocess.run([HARNESS, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"harness {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def mlflow_client(uri: str):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def nested_runs(uri: str, experiment: str) -> list:
    client = mlflow_client(uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=10000)
    return [r for r in runs if "mlflow.parentRunId" in r.data.tags]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """`harness` with no arguments (the README's main job), in a fresh working directory."""
    cwd = tmp_path_factory.mktemp("demo")
    started = time.perf_counter()
    proc = run_harness(cwd)
    return {"cwd": cwd, "proc": proc, "out": cwd / "runs" / "demo", "seconds": time.perf_counter() - started}


def test_demo_prints_table_and_locations(demo):
    out = demo["proc"].stdout
    assert "BLEU against ref-C+ref-D" in out and "ref-A (human)" in out
    assert "mlflow ui --backend-store-uri sqlite:///" in out
    assert str(demo["out"]) in out


def test_demo_tables_match_sacrebleu(demo):
    table = pd.read_parquet(demo["out"] / "system_scores.parquet")
    assert len(table) == 9 * 3 * 5  # systems x refsets (each + both) x variants
    assert set(table["variant"]) == {"sacrebleu", "intl", "char", "paper", "nltk"}
    assert set(table["refset"]) == {"ref-C", "ref-D", "ref-C+ref-D"}
    refs = {n: read_lines(DATA / "refs" / f"{n}.txt") for n in ("ref-C", "ref-D")}
    for variant, kwargs in (("sacrebleu", {}), ("intl", {"tokenize": "intl"}), ("char", {"tokenize": "char"}),
                            ("paper", {"smooth_method": "none"})):
        for refset in ("ref-C", "ref-C+ref-D"):
            streams = [refs[r] for r in refset.split("+")]
            oracle = BLEU(references=streams, **kwargs)
            rows = table[(table.variant == variant) & (table.refset == refset)]
            for row in rows.itertuples():
                want = oracle.corpus_score(read_lines(DATA / "systems" / f"{row.system}.txt"), None).score
                assert abs(row.bleu - want) <= 1e-9, (variant, refset, row.system)
    assert table["ci_low"].notna().sum() == 9 * 3 * 4  # every additive variant has a bootstrap interval
    assert (table["signature"].str.contains("harness:")).all()


def test_demo_segment_table_and_metadata(demo):
    import json

    from harness.store import read_metadata

    seg = pd.read_parquet(demo["out"] / "segment_scores.parquet")
    assert len(seg) == 9 * 3 * 5 * 527
    first = seg[(seg.system == "Nemo") & (seg.variant == "sacrebleu") & (seg.refset == "ref-C")]
    assert list(first["seg_id"]) == list(range(527))
    assert sum(int(m[0]) for m in first["matches"]) == 9910  # corpus unigram matches of Nemo vs ref-C
    meta = read_metadata(demo["out"] / "system_scores.parquet")
    assert meta["harness_version"] and "experiment_name: demo" in meta["config"]
    assert "ref:ref-C" in json.loads(meta["inputs_sha256"])
    assert (demo["out"] / "report.md").exists() and (demo["out"] / "bleu_by_system.png").exists()
    assert (demo["out"] / "config.yaml").exists()


def test_demo_mlflow_runs_equal_table(demo):
    uri = f"sqlite:///{demo['cwd'] / 'runs' / 'mlflow.db'}"
    table = pd.read_parquet(demo["out"] / "system_scores.parquet")
    runs = nested_runs(uri, "demo")
    assert len(runs) == len(table)
    by = {(r.data.tags["system"], r.data.tags["refset"], r.data.tags["variant"]): r for r in runs}
    for row in table.itertuples():
        run = by[(row.system, row.refset, row.variant)]
        assert run.data.metrics["bleu"] == pytest.approx(row.bleu, abs=1e-12)
        assert run.data.tags["signature"] == row.signature
        assert run.data.params["tokenize"] and run.info.status == "FINISHED"
        assert len(run.data.tags["sha256.system"]) == 64
    parent = mlflow_client(uri).get_run(runs[0].data.tags["mlflow.parentRunId"])
    artifacts = {a.path for a in mlflow_client(uri).list_artifacts(parent.info.run_id)}
    assert {"system_scores.parquet", "report.md", "config.yaml"} <= artifacts


def test_rerun_uses_cache_and_never_duplicates(demo):
    before = pd.read_parquet(demo["out"] / "system_scores.parquet")
    proc = run_harness(demo["cwd"], "tracking=false")
    assert "0 statistics computed, 108 from cache" in proc.stdout
    after = pd.read_parquet(demo["out"] / "system_scores.parquet")
    assert len(after) == len(before)
    pd.testing.assert_frame_equal(before.drop(columns=["ci_low", "ci_high"]), after.drop(columns=["ci_low", "ci_high"]))
    assert not list(demo["out"].glob(".*.tmp"))  # no temporary files left behind


def test_config_error_is_one_line_listing_choices(tmp_path):
    proc = run_harness(tmp_path, "bleu.sacrebleu.tokenize=bogus", check=False)
    assert proc.returncode != 0
    err = [line for line in proc.stderr.splitlines() if line.startswith("harness: error")]
    assert len(err) == 1 and "bleu.sacrebleu.tokenize" in err[0] and "13a" in err[0]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "runs" / "demo" / "system_scores.parquet").exists()


def test_unknown_key_is_refused(tmp_path):
    proc = run_harness(tmp_path, "bogus_key=1", check=False)
    assert proc.returncode != 0 and "bogus_key" in proc.stderr


def test_path_outside_allowed_roots_is_refused(tmp_path):
    proc = run_harness(tmp_path, "dataset.root=/etc", check=False)
    assert proc.returncode != 0 and "outside the allowed roots" in proc.stderr


def test_dataset_folder_override(tmp_path):
    ds = tmp_path / "mini"
    (ds / "refs").mkdir(parents=True)
    (ds / "systems").mkdir()
    refs = read_lines(DATA / "refs" / "ref-C.txt")[:40]
    (ds / "refs" / "ref-C.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    for name in ("Nemo", "UEdin", "Online-W"):
        lines = read_lines(DATA / "systems" / f"{name}.txt")[:40]
        (ds / "systems" / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = run_harness(tmp_path, f"dataset.root={ds}", "bleu=sacrebleu", "tracking=false", "dataset.name=mini")
    table = pd.read_parquet(next((tmp_path / "runs" / "demo").rglob("system_scores.parquet")))
    assert sorted(table["system"]) == ["Nemo", "Online-W", "UEdin"]
    want = BLEU().corpus_score(read_lines(ds / "systems" / "Nemo.txt"), [refs]).score
    assert table.set_index("system").loc["Nemo", "bleu"] == pytest.approx(want, abs=1e-9)
    assert "BLEU against ref-C" in proc.stdout


def test_joblib_multirun_three_variants_and_a_failing_job(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    proc = run_harness(tmp_path, "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                       "bleu=sacrebleu,intl,char", "tracking=true", "n_samples=100", "dataset.refsets=all")
    out = tmp_path / "runs" / "demo"
    dirs = sorted(p.parent.name.split(",")[0] for p in out.rglob("system_scores.parquet"))
    assert dirs == ["bleu=char", "bleu=intl", "bleu=sacrebleu"]  # each job writes its own folder
    assert len(list(tmp_path.rglob("mlflow.db"))) == 1  # one store, created by the launching process
    uri = f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}"
    assert len(nested_runs(uri, "demo")) == 3 * 9
    assert "Traceback" not in proc.stderr
    # a failing job (unknown system) does not stop the others, and is reported at the end with exit 1
    bad = run_harness(tmp_path, "-m", "bleu=sacrebleu", "dataset.systems=[Nemo],[NoSuchSystem]", "tracking=false",
                      "n_samples=100", check=False)
    assert bad.returncode == 1
    assert "1 job(s) failed" in bad.stderr and "NoSuchSystem" in bad.stderr
    assert [p for p in out.rglob("system_scores.parquet") if "dataset.systems=[Nemo]" in p.parent.name]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def mlflow_server(tmp_path):
    """A real `mlflow server` on a free 127.0.0.1 port with a SQLite backend, stopped by its PID."""
    port = _free_port()
    exe = shutil.which("mlflow") or str(Path(sys.executable).parent / "mlflow")
    proc = subprocess.Popen(
        [exe, "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{tmp_path / 'server.db'}",
         "--artifacts-destination", str(tmp_path / "server-artifacts")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while True:
        try:
            with urllib.request.urlopen(uri + "/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail("mlflow server did not start")
        time.sleep(0.5)
    yield uri
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    assert proc.poll() is not None


def test_against_a_real_tracking_server(tmp_path, mlflow_server):
    run_harness(tmp_path, f"tracking_uri={mlflow_server}", "bleu=[sacrebleu,char]", "n_samples=100")
    table = pd.read_parquet(next((tmp_path / "runs" / "demo").rglob("system_scores.parquet")))
    runs = nested_runs(mlflow_server, "demo")
    assert len(runs) == len(table) == 9 * 3 * 2
    by = {(r.data.tags["system"], r.data.tags["refset"], r.data.tags["variant"]): r.data.metrics["bleu"] for r in runs}
    for row in table.itertuples():
        assert by[(row.system, row.refset, row.variant)] == pytest.approx(row.bleu, abs=1e-12)
    assert not (tmp_path / "runs" / "mlflow.db").exists()  # nothing went to the local store


def test_unreachable_server_keeps_tables_and_fails_fast(tmp_path):
    port = _free_port()
    started = time.perf_counter()
    proc = run_harness(tmp_path, f"tracking_uri=http://127.0.0.1:{port}", "bleu=sacrebleu", "n_samples=100",
                       check=False)
    assert proc.returncode == 1 and time.perf_counter() - started < 120
    assert "unreachable" in proc.stderr and "Parquet tables are written" in proc.stderr
    out = next((tmp_path / "runs" / "demo").rglob("system_scores.parquet")).parent
    assert (out / "tracking_pending.json").exists()


def test_paper_validation_end_to_end(tmp_path):
    proc = run_harness(tmp_path, "experiment=paper_validation", "tracking=false", "n_samples=200")
    out = tmp_path / "runs" / "paper_validation"
    corr = pd.read_parquet(next(out.rglob("correlations.parquet")))
    job = next(out.rglob("correlations.parquet")).parent
    assert {"system", "segment"} == set(corr["level"]) and {True, False} == set(corr["include_human"])
    assert {"pearson", "spearman", "kendall"} <= set(corr["method"]) and {"none", "item"} == set(corr["grouping"])
    paper = corr[(corr.variant == "paper") & (corr.refset == "ref-C+ref-D") & (corr.level == "system")
                 & (corr.method == "pearson") & ~corr.include_human]
    assert len(paper) == 1 and -1 <= paper["value"].iloc[0] <= 1 and paper["n"].iloc[0] == 8
    sig = pd.read_parquet(job / "significance.parquet")
    blocks = sig[(sig.test == "block_t") & (sig.variant == "paper")]
    assert len(blocks) == 8  # neighbours among 9 systems
    for name in ("report.md", "bleu_vs_human.png", "blocks.png", "bleu_by_system.png"):
        assert (job / name).stat().st_size > 0, name
    report = (job / "report.md").read_text(encoding="utf-8")
    for heading in ("## Correlation with human judgments", "### Blocks", "### One reference vs all references",
                    "### Which variant agrees best", "## Discussion"):
        assert heading in report
    assert "0.99" in report and "0.96" in report
    assert "BLEU against ref-C+ref-D" in proc.stdout
