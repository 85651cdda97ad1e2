"""Tracking one system across versions (issue 6): `systems/NAME@VERSION.txt` scored together in one job and across
jobs, and `harness-history` (table, JSON/TSV, chart, regression gate) from the MLflow record alone, locally and on a
server.

Jobs run in process (`harness.runner.run_job`) on a 60-segment cut of the demo, tracked to a copy of the migrated
SQLite store or to the session's MLflow server; `harness-history` runs in process through its console entry point
(`main`), and as a real command twice: the regression gate as users call it, and a batch of errors in a process of
its own (Hydra must never be imported). The "checkpoints" of mymodel are outputs of real WMT21 systems.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from harness.cli import run as score_run
from harness.history import Version, main, order_versions
from harness.job.spec import build_spec
from harness.runner import Outcome, run_job
from harness.sinks.mlflow_store import default_uri
from support import DEMO, base_config, executable, make_dataset, read_lines, write_lines

pytestmark = pytest.mark.slow  # end to end: the fast tier (-m 'not slow') leaves it out

N = 60
REFSET = "ref-C+ref-D"
# The checkpoints of mymodel on the first 60 segments: v3 is the best (55.47), v4 a significant regression
# (51.69, p = 0.008 against v3), v5 byte-identical to v3.
CHECKPOINTS = {"1": "VolcTrans-AT", "2": "UEdin", "3": "Facebook-AI", "4": "HuaweiTSC", "5": "Facebook-AI",
               "6": "Nemo"}


def checkpoints(*versions: str) -> dict[str, str]:
    return {v: CHECKPOINTS[v] for v in versions}


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def history(*argv: str) -> Result:
    """``harness-history ARGV`` in this process, through the console script's entry point."""
    out, err = io.StringIO(), io.StringIO()
    code = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv))
        except SystemExit as exc:
            code = exc.code
    return Result(int(code or 0), out.getvalue(), err.getvalue())


def add_versions(ds: Path, versions: dict[str, str]) -> None:
    """``systems/mymodel@VERSION.txt``: the first N segments of the demo system each version stands for."""
    for v, source in versions.items():
        write_lines(ds / "systems" / f"mymodel@{v}.txt", read_lines(DEMO / "systems" / f"{source}.txt")[:N])


def versions_dataset(root: Path, versions: dict[str, str]) -> Path:
    """A dataset folder ``root`` (its name is the dataset's): references ref-C and ref-D, the given versions."""
    make_dataset(root, n=N, systems=(), refs=("ref-C", "ref-D"))
    add_versions(root, versions)
    return root


def score(work: Path, ds: Path, *given: str, **overrides) -> tuple[Outcome, str]:
    """One tracked job in process: ``given`` are the overrides as typed (they name the job), ``overrides`` the
    config they stand for (``dataset`` merged one level deep, ``bleu`` the whole node)."""
    dataset = {"root": str(ds), "refsets": "all", **overrides.pop("dataset", {})}
    bleu = overrides.pop("bleu", None)
    cfg = base_config(work, n_samples=100, tracking=True, human={"select": "none"}, dataset=dataset, figures=False,
                      **overrides)
    if bleu is not None:
        cfg["bleu"] = bleu
    if "experiment_name" not in overrides:  # else a dataset.root on the command line names the experiment
        given = ("experiment_name=test", *given)
    out = io.StringIO()
    outcome = run_job(build_spec(cfg, [f"dataset.root={ds}", *given]), "config: history\n", out)
    assert outcome.tracking_error is None, outcome.tracking_error
    return outcome, out.getvalue()


def paired(ds: Path, a: str, b: str, test: str = "--paired-bs", *extra: str) -> list[dict]:
    """``harness-score --paired-bs`` (or ``--paired-ar``) of version b against version a, on the texts."""
    refs = [str(ds / "refs" / f"{r}.txt") for r in ("ref-C", "ref-D")]
    hyps = [str(ds / "systems" / f"mymodel@{v}.txt") for v in (a, b)]
    return json.loads(score_run([*refs, "-i", *hyps, test, *extra, "--format", "json", "--full"]))


# Several error cases in one process of its own (proves that the command never imports Hydra; mlflow is imported
# by then), calling the console script's main() exactly.
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


def build_local_store(work: Path, migrated_store: Path) -> dict:
    """Versions of mymodel in one local store: v1-v3 in one job; v3-v5 in a second job (v4 new, v5 v3's bytes);
    v6 lowercased in a third (another signature under the same variant name). Then the job folders, the texts
    and the statistics cache are removed: what harness-history reads is the MLflow store alone. Returns what the
    tests check besides the store (JSON; job A's tables are kept aside as Parquet in ``work/tables``)."""
    runs = work / "runs"
    runs.mkdir(parents=True)
    shutil.copy(migrated_store, runs / "mlflow.db")
    ds = versions_dataset(work / "ds", checkpoints("1", "2", "3"))
    first, first_printed = score(work, ds)  # the whole folder: three versions in one job
    (work / "tables").mkdir()
    for name in ("system_scores", "segment_scores", "significance"):
        shutil.copy(first.folder / f"{name}.parquet", work / "tables")
    add_versions(ds, checkpoints("4", "5"))
    second, second_printed = score(work, ds, "dataset.systems=[mymodel@3,mymodel@4,mymodel@5]",
                                   dataset={"systems": ["mymodel@3", "mymodel@4", "mymodel@5"]})
    add_versions(ds, checkpoints("6"))
    bleu = base_config(work)["bleu"]
    bleu["sacrebleu"]["lowercase"] = True
    third, _ = score(work, ds, "dataset.systems=[mymodel@6]", "bleu.sacrebleu.lowercase=true",
                     dataset={"systems": ["mymodel@6"]}, bleu=bleu)
    oracle = {pair: paired(ds, *pair.split("-")) for pair in ("1-2", "2-3", "3-4", "4-5")}
    # nothing but the MLflow store is left: no job folders, no texts, no statistics cache
    for path in (runs / "test", runs / "cache", ds):
        shutil.rmtree(path)
    assert sorted(p.name for p in runs.iterdir() if not p.name.startswith("mlflow.db")) == ["mlartifacts"]
    return {"oracle": oracle, "printed": [first_printed, second_printed],
            "parents": {"first": first.parent_run, "second": second.parent_run, "third": third.parent_run},
            "folders": [str(first.folder), str(second.folder), str(third.folder)]}


@pytest.fixture(scope="module")
def local(tmp_path_factory, migrated_store):
    """The store of :func:`build_local_store`, built once per test session: under xdist the workers share it
    (the first to take the lock builds it, the others wait and read it; the tests only read the store)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # this session's folder, shared by its workers
    work = base / "history-local"
    with open(str(work) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = work / "built.json"
        if not done.exists():
            shutil.rmtree(work, ignore_errors=True)
            built = build_local_store(work, migrated_store)
            done.write_text(json.dumps(built))
        built = json.loads(done.read_text())
    tables = {name: pd.read_parquet(work / "tables" / f"{name}.parquet")
              for name in ("system_scores", "segment_scores", "significance")}
    return {**built, "work": work, "runs": work / "runs", "tables": tables,
            "folders": [Path(f) for f in built["folders"]]}


def args(local, *extra: str) -> list[str]:
    return ["--system", "mymodel", "--experiment", "test", "--runs-dir", str(local["runs"]), *extra]


# --- versions in one job and across jobs -------------------------------------------------------------------------


def test_versions_scored_in_one_job(local):
    scores, segments = local["tables"]["system_scores"], local["tables"]["segment_scores"]
    assert set(scores["system"]) == {"mymodel"} and list(scores["system_version"]) == ["1", "2", "3"]
    assert set(segments["system"]) == {"mymodel"} and len(segments) == 3 * N
    assert segments.groupby("system_version")["seg_id"].apply(list).to_dict() == {v: list(range(N)) for v in "123"}
    sig = local["tables"]["significance"]
    assert {("1", "2"), ("1", "3"), ("2", "3")} <= set(zip(sig["system_version_a"], sig["system_version_b"]))
    assert "mymodel@2" in local["printed"][0]  # the printed table names system and version
    # flat job folders: runs/<experiment>/<name>-<hash>, one per job
    folders = local["folders"]
    assert len({f.name for f in folders}) == 3 and all(f.parent.name == "test" for f in folders)
    assert folders[0].name.startswith("root=ds,experiment_name=test-")
    assert folders[1].name.startswith("root=ds,systems=mymodel@3+mymodel@4+mymodel@5,experiment_name=test-")


def test_a_new_version_reuses_cached_statistics_of_the_old_ones(local):
    assert "(3 statistics computed, 0 from cache)" in local["printed"][0]
    # v3 from the cache, v4 computed; v5 (v3's bytes) from the cache or not, as the cache's key decides
    found = re.search(r"\((\d+) statistics computed, (\d+) from cache\)", local["printed"][1])
    computed, cached = int(found.group(1)), int(found.group(2))
    assert computed + cached == 3 and 1 <= cached <= 2


# --- harness-history from MLflow alone ----------------------------------------------------------------------------


def test_history_numbers_are_the_paired_tests_of_the_texts(local):
    """p-values from the statistics downloaded from MLflow equal harness-score's paired bootstrap on the texts,
    between versions of one job (1-2, 3-4, 4-5) and of two jobs (2-3)."""
    proc = history(*args(local, "--up-to", "5", "--format", "json", "--fail-on-regression"))
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr  # v5 equals the best: the gate passes
    doc = json.loads(proc.stdout)
    assert (doc["system"], doc["refset"], doc["variant"], doc["test"], doc["n_samples"]) == (
        "mymodel", REFSET, "sacrebleu", "paired_bs", 1000)
    v = {row["version"]: row for row in doc["versions"]}
    assert list(v) == ["1", "2", "3", "4", "5"]
    for pair, oracle in local["oracle"].items():
        a, b = pair.split("-")
        assert v[a]["bleu"] == pytest.approx(oracle[0]["score"], abs=1e-9), pair
        assert v[b]["bleu"] == pytest.approx(oracle[1]["score"], abs=1e-9), pair
        assert v[b]["p_prev"] == oracle[1]["p_value"], pair  # exactly: the same resamples of the same statistics
        assert v[b]["delta_prev"] == pytest.approx(oracle[1]["score"] - oracle[0]["score"], abs=1e-9), pair
    assert v["4"]["best_before"] == "3" and v["4"]["regression"] and v["4"]["p_prev"] < 0.05
    assert v["4"]["p_best"] == v["4"]["p_prev"]  # the best earlier version is the previous one
    assert v["5"]["bleu"] == pytest.approx(v["3"]["bleu"], abs=1e-12)
    assert v["5"]["best_before"] == "3" and v["5"]["delta_best"] == 0.0 and not v["5"]["regression"]
    assert v["5"]["delta_prev"] > 0 and v["5"]["p_prev"] < 0.05  # significantly better than v4
    # the newest run of each version: v3 was scored by both jobs
    parents = local["parents"]
    assert [v[k]["n_runs"] for k in "12345"] == [1, 1, 2, 1, 1]
    assert [v[k]["parent_run_id"] for k in "12345"] == [parents["first"]] * 2 + [parents["second"]] * 3
    for row in doc["versions"]:
        assert row["ci_low"] < row["bleu"] < row["ci_high"]


def test_history_table_chart_and_gate_as_a_command(local, tmp_path):
    """The real ``harness-history`` command: the table, the chart and the gate's exit status and one line."""
    chart = tmp_path / "charts" / "mymodel.png"
    proc = subprocess.run([executable("harness-history"), *args(local, "--up-to", "4", "--format", "text",
                                                                   "--plot", str(chart), "--fail-on-regression")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr  # v4 is a regression
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("mymodel: BLEU by version") and f"refset {REFSET}" in lines[0]
    assert lines[1].startswith("signature: nrefs:2|case:mixed|")
    header = next(i for i, line in enumerate(lines) if line.startswith("version"))
    body = lines[header + 1:]
    assert [line.split()[0] for line in body] == ["1", "2", "3", "4"]
    oracle = local["oracle"]
    want = [oracle["1-2"][0]["score"], oracle["1-2"][1]["score"], oracle["3-4"][0]["score"], oracle["3-4"][1]["score"]]
    assert [line.split()[1] for line in body] == [f"{b:.2f}" for b in want]
    assert "REGRESSION" in body[3] and "REGRESSION" not in "".join(body[:3])
    message = proc.stderr.strip().splitlines()
    assert len(message) == 1 and message[0].startswith(
        f"harness-history: regression: mymodel version 4 (BLEU {want[3]:.2f})")
    assert "worse than the previous version 3" in message[0] and "paired_bs" in message[0]
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.image import imread

    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    img = imread(chart)
    red = (img[..., 0] > 0.9) & (img[..., 1] < 0.15) & (img[..., 2] < 0.15)
    assert red.sum() > 50  # the significant regression (v4) is marked in red


def test_gate_is_quiet_without_a_regression(local):
    assert history(*args(local, "--up-to", "3", "--fail-on-regression")) == Result(0, "", "")


def test_tsv_output(local):
    proc = history(*args(local, "--up-to", "4", "--format", "tsv"))
    assert proc.returncode == 0 and proc.stderr == ""  # no gate asked for: the regression is only reported
    frame = pd.read_csv(io.StringIO(proc.stdout), sep="\t", dtype={"version": str})
    assert list(frame["version"]) == ["1", "2", "3", "4"] and list(frame["regression"]) == [False] * 3 + [True]


def test_signature_mismatch_is_refused_naming_the_field(local):
    proc = history(*args(local, "--fail-on-regression"))
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "version 6 cannot be compared with version 1" in lines[0]
    assert "signature field 'case' differs: 'mixed' (version 1) vs 'lc' (version 6)" in lines[0]
    assert "--up-to 5" in lines[0]


def test_errors_are_one_line_and_hydra_is_never_imported(local):
    s = ["--system", "mymodel", "--runs-dir", str(local["runs"])]
    errors = {"unknown_system": ["--system", "nobody", "--experiment", "test", "--runs-dir", str(local["runs"])],
              "unknown_experiment": [*s, "--experiment", "nope"],
              "single": [*s, "--experiment", "test", "--up-to", "1", "--format", "text", "--fail-on-regression"],
              "bad_up_to": [*s, "--experiment", "test", "--up-to", "7"],
              "usage": [*s, "--experiment", "test", "--test", "zz"],
              "bad_n_samples": [*s, "--experiment", "test", "--n-samples", "0"]}
    proc = subprocess.run([sys.executable, "-c", ERRORS, json.dumps(errors)], capture_output=True, text=True,
                          timeout=300, check=True)
    err = json.loads(proc.stdout)
    assert err["mlflow_imported"] and not err["hydra_imported"]
    for key in errors:
        assert err[key]["returncode"] == 2, key
        assert len(err[key]["stderr"].strip().splitlines()) == 1 and "Traceback" not in err[key]["stderr"], key
    store = f"[store sqlite:///{(local['runs'] / 'mlflow.db').resolve()}"
    assert err["unknown_system"]["stderr"].strip() == (
        f"harness-history: error: no finished runs of system 'nobody' (systems found: mymodel) {store}, "
        "experiment 'test']")
    assert err["unknown_experiment"]["stderr"].strip() == (
        "harness-history: error: no experiment 'nope' in the tracking store (experiments found: Default, template, "
        f"test) {store}, experiment 'nope']")
    assert "no such version (versions found: 1, 2, 3, 4, 5, 6)" in err["bad_up_to"]["stderr"]
    assert "--n-samples must be a positive integer" in err["bad_n_samples"]["stderr"]
    single = err["single"]
    assert "only one version of mymodel (1)" in single["stderr"] and "nothing to compare" in single["stderr"]
    assert single["stdout"].splitlines()[-2].split()[:2] == ["1", f"{local['oracle']['1-2'][0]['score']:.2f}"]
    assert single["stdout"].splitlines()[-1] == "(one version: nothing to compare yet)"


def test_the_experiment_defaults_to_the_jobs_under_runs(local, tmp_path):
    """Without --experiment: the experiment of the jobs under --runs-dir, or (no job folders left there, as
    here) the only experiment of the store with runs of the system: test."""
    proc = history("--system", "mymodel", "--runs-dir", str(local["runs"]), "--up-to", "5", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["experiment"] == "test"


def test_no_store(tmp_path):
    proc = history("--system", "mymodel", "--runs-dir", str(tmp_path / "runs"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("harness-history: error: no MLflow store at ") and proc.stderr.count("\n") == 1
    assert not (tmp_path / "runs").exists()  # reading never creates a store


# --- the manifest guards the statistics ----------------------------------------------------------------------------


def test_segment_table_must_be_the_one_its_manifest_lists(tmp_path, runs_with_store):
    """Paired tests only run on a job's segment table when its manifest.json artifact lists that very file."""
    ds = versions_dataset(tmp_path / "ds", checkpoints("3", "4"))
    outcome, _ = score(tmp_path, ds)
    artifacts = runs_with_store / "mlartifacts"
    table = next(artifacts.rglob("segment_scores.parquet"))
    assert table.parent.name == "artifacts" and outcome.parent_run in str(table)
    argv = ["--system", "mymodel", "--experiment", "test", "--runs-dir", str(runs_with_store), "--format", "tsv"]
    assert history(*argv).returncode == 0  # as logged: verified, tested
    manifest = table.parent / "manifest.json"
    listed = json.loads(manifest.read_text())
    listed["files"]["segment_scores.parquet"]["sha256"] = "0" * 64  # another generation's table
    manifest.write_text(json.dumps(listed))
    proc = history(*argv)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert proc.stderr.strip() == (f"harness-history: error: job run {outcome.parent_run}: segment_scores.parquet is "
                                   "not the one its manifest.json lists (an incomplete or mixed generation); refusing "
                                   f"to test on it [store {default_uri(runs_with_store)}, experiment 'test']")
    manifest.unlink()
    proc = history(*argv)
    assert proc.returncode == 2 and f"job run {outcome.parent_run} has no manifest.json artifact" in proc.stderr


# --- ordering --------------------------------------------------------------------------------------------------------


def _version(label: str, first_seen: int) -> Version:
    return Version(version=label, run_id=label, parent_id="p", start_time=first_seen, first_seen=first_seen,
                   bleu=1.0, ci_low=None, ci_high=None, signature="", ref_hashes={}, n_segments=None, dataset="d")


def test_order_of_versions():
    # numbers: numerically
    assert [v.version for v in order_versions([_version(x, 0) for x in ("10", "9", "2.5")])] == ["2.5", "9", "10"]
    # names: by the start of the first job that scored them, the versions of one job in natural order
    found = [_version("step-10", 5), _version("step-9", 5), _version("rc", 1), _version("step-100", 9)]
    assert [v.version for v in order_versions(found)] == ["rc", "step-9", "step-10", "step-100"]


# --- a real tracking server ---------------------------------------------------------------------------------------


def test_history_against_a_tracking_server(tmp_path, mlflow_server):
    """Both versions in one job logged to a server; the history from the server alone (artifacts downloaded
    through it), with approximate randomization equal to harness-score --paired-ar on the texts."""
    ds = versions_dataset(tmp_path / "ds", {"1": "Facebook-AI", "2": "VolcTrans-AT"})  # about -7 BLEU
    outcome, _ = score(tmp_path, ds, f"tracking_uri={mlflow_server.uri}", "experiment_name=history_server",
                       tracking_uri=mlflow_server.uri, experiment_name="history_server")
    assert outcome.parent_run and not (tmp_path / "runs" / "mlflow.db").exists()
    oracle = paired(ds, "1", "2", "--paired-ar", "--n-samples", "2000")
    shutil.rmtree(tmp_path / "runs")
    shutil.rmtree(ds)
    proc = history("--tracking-uri", mlflow_server.uri, "--experiment", "history_server", "--system", "mymodel",
                   "--format", "tsv", "--test", "ar", "--n-samples", "2000", "--fail-on-regression")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("harness-history: regression: mymodel version 2") and "paired_ar" in proc.stderr
    assert proc.stderr.count("\n") == 1
    frame = pd.read_csv(io.StringIO(proc.stdout), sep="\t", dtype={"version": str})
    assert list(frame["version"]) == ["1", "2"] and list(frame["regression"]) == [False, True]
    assert frame["bleu"][0] == pytest.approx(oracle[0]["score"], abs=1e-9)
    assert frame["bleu"][1] == pytest.approx(oracle[1]["score"], abs=1e-9)
    assert frame["delta_prev"][1] < -3 and frame["p_prev"][1] == oracle[1]["p_value"]
    assert {"ci_low", "ci_high", "p_best", "best_before", "run_id", "parent_run_id"} <= set(frame)


def test_compare_writes_the_page_of_the_last_two_versions(tmp_path, runs_with_store):
    """``--compare``: the comparison of the last two versions, from the dataset folder they were scored in; its
    headline is the paired test harness-score gives on the texts (p-value exact); refused once a text changed."""
    ds = versions_dataset(tmp_path / "ds", checkpoints("2", "3", "4"))
    score(tmp_path, ds)
    page = tmp_path / "last.html"
    proc = history(*args({"runs": runs_with_store}, "--refset", REFSET, "--compare", str(page)))
    assert proc.returncode == 0, proc.stderr
    assert f"comparison of the last two versions: {page}" in proc.stdout
    html = page.read_text()
    assert "mymodel@3" in html and "mymodel@4" in html
    systems = pd.read_parquet(tmp_path / "last.systems.parquet")
    oracle = paired(ds, "3", "4")  # harness-score --paired-bs: baseline v3, then v4
    assert list(systems["system"] + "@" + systems["system_version"]) == ["mymodel@3", "mymodel@4"]
    assert systems["bleu"].tolist() == pytest.approx([o["score"] for o in oracle], rel=1e-12)
    buckets = pd.read_parquet(tmp_path / "last.buckets.parquet")
    headline = buckets[buckets["group"] == "overall"].iloc[0]
    assert headline["p_value"] == oracle[1]["p_value"]
    # a version's text changed since it was scored: no comparison of a text that was not scored
    write_lines(ds / "systems" / "mymodel@4.txt", read_lines(ds / "systems" / "mymodel@2.txt"))
    proc = history(*args({"runs": runs_with_store}, "--refset", REFSET, "--compare", str(page)))
    assert proc.returncode == 2 and "mymodel@4.txt changed since version 4 was scored" in proc.stderr


def _tagged(refset: str, nrefs: int) -> object:
    from types import SimpleNamespace

    signature = f"nrefs:{nrefs}|case:mixed|eff:no|tok:13a|smooth:exp|order:4|reflen:closest|profile:sacrebleu"
    return SimpleNamespace(data=SimpleNamespace(tags={"refset": refset, "signature": signature}))


def test_the_default_refset_is_the_one_with_most_references():
    """A job with dataset.refsets=each scores every reference alone and all together: without --refset the
    history follows the full set; with two sets of equal size it cannot choose (the caller then asks)."""
    from harness.history.runs import _widest_refset

    each = [_tagged("ref-C", 1), _tagged("ref-D", 1), _tagged("ref-C+ref-D", 2), _tagged("ref-C", 1)]
    assert _widest_refset(each) == "ref-C+ref-D"
    assert _widest_refset([_tagged("ref-C", 1), _tagged("ref-D", 1)]) is None
    assert _widest_refset([_tagged("ref-C", 1)]) is None  # one refset: nothing to choose


def test_a_rerun_on_a_new_checkpoint_supersedes_the_record_on_fewer(tmp_path, runs_with_store):
    """The checkpoint folder scored with @1 and @2, then again once @3 arrived (same config, grown inputs): the
    newer record supersedes the older (deleted: hidden in the UI, restorable), so the experiment shows one parent
    and one nested run per system version; a rerun after a text changed keeps the record it cannot replace."""
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    work = tmp_path
    ds = versions_dataset(work / "ckpts", checkpoints("1", "2"))
    first, _ = score(work, ds)
    add_versions(ds, checkpoints("3"))
    second, _ = score(work, ds)
    client = MlflowClient(tracking_uri=default_uri(work / "runs"))
    exp = client.get_experiment_by_name("test").experiment_id
    live = client.search_runs([exp], max_results=1000)
    parents = [r for r in live if "mlflow.parentRunId" not in r.data.tags]
    assert [r.info.run_id for r in parents] == [second.parent_run]
    names = sorted(r.info.run_name for r in live if "mlflow.parentRunId" in r.data.tags)
    assert names == [f"mymodel@{v} | {REFSET} | sacrebleu" for v in ("1", "2", "3")]  # one run per version
    deleted = client.search_runs([exp], run_view_type=ViewType.DELETED_ONLY, max_results=1000)
    assert first.parent_run in {r.info.run_id for r in deleted}  # hidden, restorable
    got = json.loads(history("--system", "mymodel", "--experiment", "test", "--runs-dir", str(work / "runs"),
                             "--format", "json").stdout)
    assert [v["version"] for v in got["versions"]] == ["1", "2", "3"]
    write_lines(ds / "systems" / "mymodel@1.txt", read_lines(DEMO / "systems" / "Nemo.txt")[:N])  # a changed text
    third, _ = score(work, ds)
    live = {r.info.run_id for r in client.search_runs([exp], max_results=1000)}
    assert {second.parent_run, third.parent_run} <= live  # the record of the text before the change stays


def test_history_shows_the_current_record_after_a_revert(tmp_path, runs_with_store):
    """Score mymodel@1 as A, then as B, then as A again: the third job reuses the first record (same config, same
    input), whose start time is the oldest; history must show A, what the folder holds now, not B."""
    work = tmp_path  # runs_with_store: tmp_path / "runs" holds a migrated store
    ds = versions_dataset(work / "rev", checkpoints("1", "2"))
    a = read_lines(ds / "systems" / "mymodel@1.txt")
    b = read_lines(DEMO / "systems" / "HuaweiTSC.txt")[:N]
    first, _ = score(work, ds)
    write_lines(ds / "systems" / "mymodel@1.txt", b)
    second, _ = score(work, ds)
    write_lines(ds / "systems" / "mymodel@1.txt", a)
    third, _ = score(work, ds)
    assert third.parent_run == first.parent_run  # reused, not logged again
    bleu_a = next(c.score.score for c in third.result.cells if c.system.label == "mymodel@1")
    bleu_b = next(c.score.score for c in second.result.cells if c.system.label == "mymodel@1")
    assert bleu_a != bleu_b
    got = json.loads(history("--system", "mymodel", "--experiment", "test", "--runs-dir", str(work / "runs"),
                             "--format", "json").stdout)
    row = next(v for v in got["versions"] if v["version"] == "1")
    assert row["bleu"] == pytest.approx(bleu_a, rel=1e-12)


def test_the_results_are_frozen():
    """A version, its step and the history are values: nothing downstream (output, gate, plot) can change them."""
    import dataclasses

    from harness.history import History, Step

    v = _version("1", 0)
    history = History("sys", "exp", "uri", "d", "ref", "sacrebleu", "", 0.05, 1, "bs", 10, (v,), (Step(),))
    for obj, field in ((v, "bleu"), (Step(), "p_prev"), (history, "versions")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, field, None)
    with pytest.raises(ValueError, match="1 steps for 2 versions"):
        History("sys", "exp", "uri", "d", "ref", "sacrebleu", "", 0.05, 1, "bs", 10, (v, v), (Step(),))
