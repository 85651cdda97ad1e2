"""Tracking one system across versions (issue #6): `systems/NAME@VERSION.txt`, cached statistics for new versions,
`harness-history` (table, JSON/TSV, chart, regression gate) from the MLflow runs alone, locally and on a server.

Real subprocesses and real MLflow stores; the checkpoints of "mymodel" are outputs of real WMT21 systems.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from support import CANDIDATES
from test_app import mlflow_server, run_harness  # noqa: F401  (the real-server fixture, reused)

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
HISTORY = shutil.which("harness-history") or str(BIN / "harness-history")
SCORE = shutil.which("harness-score") or str(BIN / "harness-score")
DATA = CANDIDATES[0]
REFSET = "ref-C+ref-D"
# The "checkpoints" of mymodel: v3 is the best, v4 a clear regression (about -4 BLEU).
CHECKPOINTS = {"1": "VolcTrans-AT", "2": "UEdin", "3": "Facebook-AI", "4": "eTranslation"}
FOLDER_JOB = ["dataset=folder", "dataset.root=ds", "human=none", "bleu=sacrebleu", "dataset.refsets=all",
              "n_samples=200"]


def make_dataset(root: Path, versions: dict[str, str]) -> Path:
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "systems").mkdir(exist_ok=True)
    for ref in ("ref-C", "ref-D"):
        shutil.copy(DATA / "refs" / f"{ref}.txt", root / "refs" / f"{ref}.txt")
    for version, source in versions.items():
        shutil.copy(DATA / "systems" / f"{source}.txt", root / "systems" / f"mymodel@{version}.txt")
    return root


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def run_history(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([HISTORY, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=_env())


def run_histories(cwd: Path, calls: dict[str, list[str]]) -> dict[str, subprocess.CompletedProcess]:
    """Several `harness-history` processes at once (each spends seconds importing mlflow); argv lists that start
    with the Python executable are run as given."""
    procs = {}
    for key, args in calls.items():
        argv = args if args[0] == sys.executable else [HISTORY, *args]
        procs[key] = (argv, subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                             text=True, env=_env()))
    out = {}
    for key, (argv, proc) in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        out[key] = subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)
    return out


def score_json(*args: str) -> list[dict]:
    proc = subprocess.run([SCORE, *args, "--format", "json"], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(proc.stdout)


# Several error cases in one process (each harness-history start costs seconds of mlflow import), calling the
# console script's main() exactly; also proves the command never imports Hydra (mlflow is imported by then).
ERRORS = """
import contextlib, io, json, sys
from harness.history import main
out = {}
for key, argv in json.loads(sys.argv[1]).items():
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code
    out[key] = {"returncode": code, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()}
out["hydra_imported"] = "hydra" in sys.modules
out["mlflow_imported"] = "mlflow" in sys.modules
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """Six versions of mymodel in one local store, scored in separate jobs; then every job folder, text and the
    statistics cache are removed and the harness-history calls run against what is left: the MLflow store."""
    work = tmp_path_factory.mktemp("history")
    ds = make_dataset(work / "ds", {v: CHECKPOINTS[v] for v in ("1", "2", "3")})
    first = run_harness(work, "-m", *FOLDER_JOB, "dataset.systems=[mymodel@1],[mymodel@2],[mymodel@3]")
    job = next((work / "runs" / "demo").glob("*dataset.systems=[[]mymodel@2[]]*"))
    tables = {"first_sweep": first.stdout, "system_scores_v2": pd.read_parquet(job / "system_scores.parquet"),
              "segment_scores_v2": pd.read_parquet(job / "segment_scores.parquet")}
    # new checkpoints arrive: v4 (a regression) and v5 (byte-identical to v3's output, so as good as the best);
    # rescoring the folder computes only v4's statistics
    shutil.copy(DATA / "systems" / f"{CHECKPOINTS['4']}.txt", ds / "systems" / "mymodel@4.txt")
    shutil.copy(DATA / "systems" / f"{CHECKPOINTS['3']}.txt", ds / "systems" / "mymodel@5.txt")
    tables["second_sweep"] = run_harness(
        work, "-m", *FOLDER_JOB, "dataset.systems=[mymodel@1],[mymodel@2],[mymodel@3],[mymodel@4],[mymodel@5]").stdout
    tables["refused"] = run_harness(work, *FOLDER_JOB, check=False)  # the whole folder: 5 versions in one job
    # v6 in the explicit-system form, against the bundled dataset (byte-identical references), scored lowercased:
    # another signature under the same variant name
    (work / "ckpt").mkdir()
    shutil.copy(DATA / "systems" / "Nemo.txt", work / "ckpt" / "v6.txt")
    tables["v6"] = run_harness(work, "system=example", "system.name=mymodel", f"system.path={work / 'ckpt' / 'v6.txt'}",
                               "system.version=6", "dataset.systems=[]", "bleu=sacrebleu", "dataset.refsets=all",
                               "n_samples=200", "human=none", "bleu.sacrebleu.lowercase=true").stdout
    refs = [str(ds / "refs" / f"{r}.txt") for r in ("ref-C", "ref-D")]
    hyp = {v: str(ds / "systems" / f"mymodel@{v}.txt") for v in CHECKPOINTS}
    oracle = {"1-2": score_json(*refs, "-i", hyp["1"], hyp["2"], "--paired-bs"),
              "3-4": score_json(*refs, "-i", hyp["3"], hyp["4"], "--paired-bs")}
    # nothing but the MLflow store is left: no job folders, no texts, no statistics cache
    for path in (work / "runs" / "demo", work / "runs" / "cache", work / "ds", work / "ckpt"):
        shutil.rmtree(path)
    assert sorted(p.name for p in (work / "runs").iterdir()) == ["mlartifacts", "mlflow.db"]
    s = ["--system", "mymodel"]
    errors = {"unknown_system": ["--system", "nobody"], "unknown_experiment": [*s, "--experiment", "nope"],
              "single": [*s, "--up-to", "1", "--format", "text", "--fail-on-regression"],
              "bad_up_to": [*s, "--up-to", "7"], "usage": [*s, "--test", "zz"]}
    results = run_histories(work, {
        "table": [*s, "--up-to", "4", "--format", "text", "--plot", str(work / "charts" / "mymodel.png"),
                  "--fail-on-regression"],
        "json": [*s, "--up-to", "5", "--format", "json", "--fail-on-regression"],
        "gate3": [*s, "--up-to", "3", "--fail-on-regression"],
        "mismatch": [*s, "--fail-on-regression"],
        "errors": [sys.executable, "-c", ERRORS, json.dumps(errors)],
    })
    return {"work": work, "results": results, "errors": json.loads(results["errors"].stdout), "oracle": oracle,
            **tables}


# --- NAME@VERSION and the statistics cache -----------------------------------------------------------------------


def test_folder_naming_scheme_gives_system_and_version(local):
    scores, segments = local["system_scores_v2"], local["segment_scores_v2"]
    assert list(scores["system"]) == ["mymodel"] and list(scores["system_version"]) == ["2"]
    assert set(segments["system"]) == {"mymodel"} and len(segments) == 527
    assert "\nmymodel      51.96\n" in local["first_sweep"]  # the printed tables name the system, not the file


def test_new_version_reuses_cached_statistics_of_the_old_ones(local):
    assert local["first_sweep"].count("(1 statistics computed, 0 from cache)") == 3
    second = local["second_sweep"]
    # v1..v3 from the cache; v4 is new; v5 too, but its text is v3's, and the cache is keyed by content
    assert second.count("(0 statistics computed, 1 from cache)") == 4
    assert second.count("(1 statistics computed, 0 from cache)") == 1
    assert "(1 statistics computed, 0 from cache)" in local["v6"]  # lowercased: other tokens, other statistics


def test_several_versions_of_one_system_in_one_job_are_refused(local):
    proc = local["refused"]
    assert proc.returncode == 2
    assert "systems/mymodel@1.txt and systems/mymodel@2.txt are two versions of system 'mymodel'" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.fixture()
def compose(tmp_path):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    from harness.config import register_configs, register_resolvers

    register_resolvers()
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="harness.conf", version_base="1.3"):
        yield lambda *o: hydra_compose("config", overrides=[f"runs_dir={tmp_path / 'runs'}",
                                                           f"allowed_roots=[{tmp_path}]", *o])
    GlobalHydra.instance().clear()


def test_naming_scheme_in_build_spec(compose, tmp_path):
    from harness.config import build_spec
    from harness.errors import ConfigError

    ds = make_dataset(tmp_path / "ds", {"step-1000": "UEdin", "v2.1@rc": "Nemo"})
    shutil.copy(DATA / "systems" / "eTranslation.txt", ds / "systems" / "baseline.txt")
    spec = build_spec(compose("dataset=folder", f"dataset.root={ds}", "human=none",
                              "dataset.systems=[baseline,mymodel@step-1000]"))
    assert [(s.name, s.version) for s in spec.systems] == [("baseline", None), ("mymodel", "step-1000")]
    spec = build_spec(compose("dataset=folder", f"dataset.root={ds}", "human=none",
                              "dataset.systems=[mymodel@v2.1@rc]"))
    assert [(s.name, s.version) for s in spec.systems] == [("mymodel", "v2.1@rc")]  # split at the first '@'
    with pytest.raises(ConfigError, match="two versions of system 'mymodel'") as err:
        build_spec(compose("dataset=folder", f"dataset.root={ds}", "human=none"))
    assert err.value.key == "dataset.systems" and "mymodel@step-1000" in str(err.value)
    shutil.copy(DATA / "systems" / "UEdin.txt", ds / "systems" / "mymodel@.txt")
    with pytest.raises(ConfigError, match="NAME@VERSION"):
        build_spec(compose("dataset=folder", f"dataset.root={ds}", "human=none", "dataset.systems=[mymodel@]"))


# --- harness-history from MLflow alone ----------------------------------------------------------------------------


def test_history_table_and_gate(local):
    proc = local["results"]["table"]
    assert proc.returncode == 1, proc.stderr  # v4 is a regression
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("mymodel: BLEU by version") and "refset ref-C+ref-D" in lines[0]
    assert lines[1].startswith("signature: nrefs:2|case:mixed|")
    header = next(i for i, line in enumerate(lines) if line.startswith("version"))
    body = lines[header + 1:]
    assert [line.split()[0] for line in body] == ["1", "2", "3", "4"]
    assert [line.split()[1] for line in body] == ["51.15", "51.96", "56.33", "52.22"]
    assert "REGRESSION" in body[3] and "REGRESSION" not in "".join(body[:3])
    message = proc.stderr.strip().splitlines()
    assert len(message) == 1 and message[0].startswith("harness-history: regression: mymodel version 4 (BLEU 52.22)")
    assert "worse than the previous version 3" in message[0]
    print("\n" + proc.stdout)


def test_history_numbers_are_the_paired_tests_of_the_texts(local):
    """p-values from the statistics downloaded from MLflow equal harness-score's paired bootstrap on the texts."""
    proc = local["results"]["json"]
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr  # v5 equals the best: the gate passes
    doc = json.loads(proc.stdout)
    assert (doc["system"], doc["refset"], doc["variant"], doc["test"], doc["n_samples"]) == (
        "mymodel", REFSET, "sacrebleu", "paired_bs", 1000)
    v = {row["version"]: row for row in doc["versions"]}
    assert list(v) == ["1", "2", "3", "4", "5"]
    o12, o34 = local["oracle"]["1-2"], local["oracle"]["3-4"]
    assert v["1"]["bleu"] == pytest.approx(o12[0]["score"], abs=1e-9)
    assert v["2"]["p_prev"] == pytest.approx(o12[1]["p_value"], abs=1e-12)
    assert v["2"]["delta_prev"] == pytest.approx(o12[1]["score"] - o12[0]["score"], abs=1e-9)
    assert v["4"]["p_prev"] == pytest.approx(o34[1]["p_value"], abs=1e-12)
    assert v["4"]["delta_prev"] == pytest.approx(o34[1]["score"] - o34[0]["score"], abs=1e-9)
    assert v["4"]["best_before"] == "3" and v["4"]["regression"] and v["4"]["p_prev"] < 0.05
    assert v["5"]["bleu"] == pytest.approx(v["3"]["bleu"], abs=1e-12)
    assert v["5"]["best_before"] == "3" and v["5"]["delta_best"] == 0.0 and not v["5"]["regression"]
    assert v["5"]["delta_prev"] > 0 and v["5"]["p_prev"] < 0.05  # significantly better than v4
    assert v["1"]["n_runs"] == 2 and v["4"]["n_runs"] == 1  # v1..v3 were scored twice: the newest run is used
    for row in doc["versions"]:
        assert row["ci_low"] < row["bleu"] < row["ci_high"]


def test_history_chart(local):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.image import imread

    path = local["work"] / "charts" / "mymodel.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    img = imread(path)
    red = (img[..., 0] > 0.9) & (img[..., 1] < 0.15) & (img[..., 2] < 0.15)
    assert red.sum() > 50  # the significant regression (v4) is marked in red


def test_gate_is_quiet_without_a_regression(local):
    proc = local["results"]["gate3"]
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_signature_mismatch_is_refused_naming_the_field(local):
    proc = local["results"]["mismatch"]
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "version 6 cannot be compared with version 1" in lines[0]
    assert "signature field 'case' differs: 'mixed' (version 1) vs 'lc' (version 6)" in lines[0]
    assert "--up-to 5" in lines[0]


def test_errors_are_one_line_and_hydra_is_never_imported(local):
    err = local["errors"]
    assert err["mlflow_imported"] and not err["hydra_imported"]
    for key in ("unknown_system", "unknown_experiment", "single", "bad_up_to", "usage"):
        assert err[key]["returncode"] == 2, key
        assert len(err[key]["stderr"].strip().splitlines()) == 1 and "Traceback" not in err[key]["stderr"], key
    assert err["unknown_system"]["stderr"].strip() == (
        "harness-history: error: no finished runs of system 'nobody' (systems found: mymodel)")
    assert err["unknown_experiment"]["stderr"].strip() == (
        "harness-history: error: no experiment 'nope' in the tracking store (experiments found: Default, demo)")
    assert "no such version (versions found: 1, 2, 3, 4, 5, 6)" in err["bad_up_to"]["stderr"]
    single = err["single"]
    assert "only one version of mymodel (1)" in single["stderr"] and "nothing to compare" in single["stderr"]
    assert single["stdout"].splitlines()[-2].split()[:2] == ["1", "51.15"]  # the table itself is fine
    assert single["stdout"].splitlines()[-1] == "(one version: nothing to compare yet)"


def test_no_store(tmp_path):
    proc = run_history(tmp_path, "--system", "mymodel")
    assert proc.returncode == 2
    assert proc.stderr.startswith("harness-history: error: no MLflow store at ") and proc.stderr.count("\n") == 1
    assert not (tmp_path / "runs").exists()  # reading never creates a store


# --- a real tracking server ---------------------------------------------------------------------------------------


def test_history_against_a_tracking_server(tmp_path, mlflow_server):  # noqa: F811
    make_dataset(tmp_path / "ds", {"1": "Facebook-AI", "2": "eTranslation"})
    run_harness(tmp_path, "-m", *FOLDER_JOB, f"tracking_uri={mlflow_server}", "dataset.systems=[mymodel@1],[mymodel@2]")
    shutil.rmtree(tmp_path / "runs" / "demo")
    shutil.rmtree(tmp_path / "ds")
    proc = run_history(tmp_path, "--tracking-uri", mlflow_server, "--system", "mymodel", "--format", "tsv",
                       "--test", "ar", "--n-samples", "2000", "--fail-on-regression")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("harness-history: regression: mymodel version 2") and "paired_ar" in proc.stderr
    frame = pd.read_csv(io.StringIO(proc.stdout), sep="\t", dtype={"version": str})
    assert list(frame["version"]) == ["1", "2"] and list(frame["regression"]) == [False, True]
    assert frame["bleu"][0] == pytest.approx(56.32852528192844, abs=1e-9)  # Facebook-AI, as harness-score says
    assert frame["delta_prev"][1] < -3 and frame["p_prev"][1] == pytest.approx(1 / 2001)  # never reached by chance
    assert {"ci_low", "ci_high", "p_best", "best_before", "run_id", "parent_run_id"} <= set(frame)
    assert not (tmp_path / "runs" / "mlflow.db").exists()  # everything came from the server
