"""Scale-out (issue 7): Hydra's submitit launcher (local executor standing in for SLURM) and statistics of one
corpus in shards on a real Dask cluster (2 worker processes on this machine), equal to a single process exactly."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support import CANDIDATES, read_lines
from sacrebleu.metrics.bleu import BLEU

import harness
from harness.bleu import make_options
from harness.corpus import check_parallel, read_text
from harness.errors import InputError
from harness.scoring import segment_statistics
from harness.shards import MissingExtraError, sharded_corpus_bleu, sharded_statistics

HARNESS = shutil.which("harness") or str(Path(sys.executable).parent / "harness")
DEMO = CANDIDATES[0]
DEMO_HYP = DEMO / "systems" / "Nemo.txt"
DEMO_REFS = [DEMO / "refs" / "ref-C.txt", DEMO / "refs" / "ref-D.txt"]



# ------------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def client():
    """A real local Dask cluster: 2 worker processes, 1 thread each; closed at the end of the module."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def _generate(n: int, seed: int = 7) -> dict[str, str]:
    """``n`` segments: a hypothesis and 2 references, noisy copies of Zipfian sentences (umlauts, euro signs,
    capitals and punctuation glued to words, so that 13a has work to do; a few empty hypotheses)."""
    rng = np.random.default_rng(seed)
    syll = np.array(["ka", "te", "mü", "ro", "sä", "li", "nö", "pa", "vu", "xe", "Zi", "bo", "€", "5"], dtype=object)
    words = sorted({"".join(rng.choice(syll, int(rng.integers(1, 4)))) for _ in range(3000)}, key=len)
    vocab = np.array([words[0], ",", words[1], ".", "(", words[2], ")", ";", "-", "'s", *words[3:]], dtype=object)
    cdf = np.cumsum(1.0 / np.arange(1, vocab.size + 1) ** 1.1)
    cdf /= cdf[-1]
    lengths = rng.integers(1, 40, n)
    total = int(lengths.sum())
    base = np.searchsorted(cdf, rng.random(total))
    owner = np.repeat(np.arange(n), lengths)

    def noisy(rate: float) -> str:
        tok = base.copy()
        hit = rng.random(total) < rate
        tok[hit] = np.searchsorted(cdf, rng.random(int(hit.sum())))
        keep = rng.random(total) >= rate / 3
        words = vocab[tok[keep]]
        counts = np.bincount(owner[keep], minlength=n)
        cuts = np.cumsum(counts)[:-1]
        lines = [" ".join(w) for w in np.split(words, cuts)]
        return "\n".join(lines).replace(" ,", ",").replace("( ", "(") + "\n"

    return {"ref1": noisy(0.1), "ref2": noisy(0.15), "hyp": noisy(0.3)}


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> dict[str, Path]:
    """50,000 generated segments with 2 references, written as UTF-8 files."""
    root = tmp_path_factory.mktemp("big")
    paths = {}
    for name, text in _generate(50_000).items():
        paths[name] = root / f"{name}.txt"
        paths[name].write_bytes(text.encode("utf-8"))
    return paths


def _single_process(hyp: Path, refs: list[Path], **options):
    """What one process computes from the same files: read_text + segment_statistics / harness.corpus_bleu."""
    opts = make_options(**options)
    h, rs = read_text(hyp).lines, [read_text(r).lines for r in refs]
    return segment_statistics(h, rs, opts), harness.corpus_bleu(h, rs, **options)


@pytest.fixture(scope="module")
def big_single(big):
    """The single-process statistics and score of the generated corpus (computed once)."""
    return _single_process(big["hyp"], [big["ref1"], big["ref2"]])


def _assert_same_stats(a, b) -> None:
    for field in ("hyp_len", "ref_lens", "matches", "totals"):
        x, y = getattr(a, field), getattr(b, field)
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), field


def _error_of(fn) -> InputError:
    with pytest.raises(InputError) as info:
        fn()
    return info.value


# ------------------------------------------------------------------------------------------------------ Dask


def test_generated_corpus_sharded_equals_single_process_exactly(big, big_single, client):
    hyp, refs = big["hyp"], [big["ref1"], big["ref2"]]
    want_stats, want = big_single
    # 7,919 (prime) lines per shard: boundaries aligned neither with the 100k counting chunks, nor with the 1 MiB
    # index blocks, nor with anything in the data; 7 shards, the last one short.
    stats = sharded_statistics(hyp, refs, make_options(), shard_segments=7_919, client=client)
    assert len(stats) == 50_000 and stats.n_refs == 2
    _assert_same_stats(stats, want_stats)
    got = sharded_corpus_bleu(hyp, refs, shard_segments=7_919, client=client)
    assert got.score - want.score == 0
    assert got.as_dict() == want.as_dict()
    assert 5 < got.score < 95  # a real, non-degenerate score


def test_tiny_index_blocks_and_ranges(big, big_single, client, monkeypatch):
    """Many index tasks and blocks (odd sizes, not aligned to lines): every boundary is found by scanning."""
    from harness import shards

    monkeypatch.setattr(shards, "INDEX_BLOCK", 4_099)
    monkeypatch.setattr(shards, "INDEX_RANGE", 40 * 4_099 + 17)
    hyp, refs = big["hyp"], [big["ref1"], big["ref2"]]
    _assert_same_stats(sharded_statistics(hyp, refs, make_options(), shard_segments=3_001, client=client),
                       big_single[0])


@pytest.mark.parametrize("options", [{}, {"tokenize": "char"}, {"tokenize": "intl", "lowercase": True},
                                     {"profile": "nltk", "smooth_method": "method7"}],
                         ids=["13a", "char", "intl-lc", "nltk7"])
def test_demo_sharded_equals_corpus_bleu(client, options):
    want_stats, want = _single_process(DEMO_HYP, DEMO_REFS, **options)
    got = sharded_corpus_bleu(DEMO_HYP, DEMO_REFS, shard_segments=100, client=client, **options)
    assert got.score - want.score == 0 and got.as_dict() == want.as_dict()
    _assert_same_stats(sharded_statistics(DEMO_HYP, DEMO_REFS, make_options(**options), shard_segments=100,
                                          client=client), want_stats)


@pytest.mark.parametrize("shard_segments", [1, 13, 526, 527, 10_000])
def test_demo_any_shard_size(client, shard_segments):
    want = harness.corpus_bleu(read_lines(DEMO_HYP), [read_lines(r) for r in DEMO_REFS])
    got = sharded_corpus_bleu(DEMO_HYP, DEMO_REFS, shard_segments=shard_segments, client=client)
    assert got.score - want.score == 0
    # against sacrebleu itself, for good measure
    sb = BLEU().corpus_score(read_lines(DEMO_HYP), [read_lines(r) for r in DEMO_REFS])
    assert got.score == pytest.approx(sb.score, abs=1e-9)


def test_client_as_address_and_default_client(client):
    want = harness.corpus_bleu(read_lines(DEMO_HYP), [read_lines(r) for r in DEMO_REFS])
    by_address = sharded_corpus_bleu(DEMO_HYP, DEMO_REFS, shard_segments=200, client=client.scheduler.address)
    assert by_address.score == want.score
    from distributed import default_client

    assert default_client() is client
    assert sharded_corpus_bleu(DEMO_HYP, DEMO_REFS, shard_segments=200).score == want.score  # client=None


def test_bad_utf8_in_a_late_shard_names_file_and_global_line(big, client, tmp_path):
    ref2 = tmp_path / "ref2.txt"
    lines = big["ref2"].read_bytes().split(b"\n")
    lines[48_122] = lines[48_122][:3] + b"\xff\xfe" + lines[48_122][3:]  # line 48,123 (1-based), shard 7 of 7
    ref2.write_bytes(b"\n".join(lines))
    refs = [big["ref1"], ref2]
    err = _error_of(lambda: sharded_statistics(big["hyp"], refs, shard_segments=7_919, client=client))
    assert err.path == str(ref2) and err.line == 48_123
    assert "invalid UTF-8" in str(err) and str(err).startswith(f"{ref2}:48123: ")
    assert str(err) == str(_error_of(lambda: read_text(ref2)))  # the very message of a single-process read
    # also with the bad byte right at a shard's first byte (line 15,839 starts shard 3)
    lines = big["ref2"].read_bytes().split(b"\n")
    lines[15_838] = b"\xc3" + lines[15_838]
    ref2.write_bytes(b"\n".join(lines))
    err = _error_of(lambda: sharded_statistics(big["hyp"], refs, shard_segments=7_919, client=client))
    assert err.line == 15_839 and "byte column 1 of the line" in str(err)
    offset = len(b"\n".join(lines[:15_838])) + 1
    assert f"byte offset {offset} in the file" in str(err)
    assert str(err) == str(_error_of(lambda: read_text(ref2)))


def test_control_character_and_inner_bom_in_late_shards(client, tmp_path):
    ref = [f"segment number {i} ." for i in range(1, 101)]
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("\n".join(ref) + "\n", encoding="utf-8")
    bad = tmp_path / "ref.txt"
    bad.write_text("\n".join(ref[:60] + ["a\x00b"] + ref[61:]) + "\n", encoding="utf-8")
    err = _error_of(lambda: sharded_statistics(hyp, [bad], shard_segments=9, client=client))
    assert err.line == 61 and "U+0000 NUL" in str(err) and err.path == str(bad)
    bad.write_text("\n".join(ref[:63] + ["\ufeff" + ref[63]] + ref[64:]) + "\n", encoding="utf-8")  # line 64
    err = _error_of(lambda: sharded_statistics(hyp, [bad], shard_segments=9, client=client))  # shard 8 starts at 64
    assert str(err) == str(_error_of(lambda: read_text(bad)))
    assert err.line == 64 and "byte order mark inside the file" in str(err)


def test_bom_crlf_and_stray_cr_files_read_as_a_single_process_reads_them(client, tmp_path):
    segs = [f"Das ist Satz {i}, nicht wahr?" for i in range(40)]
    ref = tmp_path / "ref.txt"
    ref.write_text("\n".join(segs) + "\n", encoding="utf-8")
    cases = {
        "bom_crlf": b"\xef\xbb\xbf" + "\r\n".join(s.replace("Satz", "Sätze") for s in segs).encode() + b"\r\n",
        "crlf_no_final_newline": "\r\n".join(segs).encode() + b"\r",
        # CRLF only in the first shard's lines: not a CRLF file, the CRs stay (a stray-CR file, as read_text says)
        "mixed": ("\r\n".join(segs[:8]) + "\r\n" + "\n".join(segs[8:]) + "\n").encode(),
    }
    for name, data in cases.items():
        hyp = tmp_path / f"{name}.txt"
        hyp.write_bytes(data)
        want_stats, _ = _single_process(hyp, [ref])
        for k in (3, 8, 40):
            got = sharded_statistics(hyp, [ref], make_options(), shard_segments=k, client=client)
            _assert_same_stats(got, want_stats)
    assert read_text(tmp_path / "mixed.txt").lines[0].endswith("\r")


def test_unequal_line_counts_are_the_single_process_error(big, client, tmp_path):
    short = tmp_path / "short.txt"
    short.write_bytes(big["ref1"].read_bytes().rsplit(b"\n", 2)[0] + b"\n")  # one line less
    blank = tmp_path / "blank.txt"
    blank.write_bytes(big["ref2"].read_bytes() + b"\n")  # a blank line at the end
    for refs in ([short, big["ref2"]], [big["ref1"], blank]):
        err = _error_of(lambda refs=refs: sharded_statistics(big["hyp"], refs, shard_segments=10_000, client=client))
        single = _error_of(lambda refs=refs: check_parallel([read_text(p) for p in [big["hyp"], *refs]]))
        assert str(err) == str(single)
    assert "blank line at the end" in str(err)


def test_missing_file_and_bad_arguments(client, tmp_path):
    err = _error_of(lambda: sharded_statistics(DEMO_HYP, [tmp_path / "nope.txt"], client=client))
    assert "file not found" in str(err) and "nope.txt" in str(err)
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    assert "empty file" in str(_error_of(lambda: sharded_statistics(empty, DEMO_REFS, client=client)))
    with pytest.raises(TypeError):
        sharded_statistics(DEMO_HYP, str(DEMO_REFS[0]), client=client)
    with pytest.raises(ValueError, match="shard_segments"):
        sharded_statistics(DEMO_HYP, DEMO_REFS, shard_segments=0, client=client)


def test_without_dask_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(MissingExtraError, match=r"pip install 'bleu-harness\[dask\]'"):
        sharded_corpus_bleu(DEMO_HYP, DEMO_REFS)
    with pytest.raises(ImportError):
        sharded_statistics(DEMO_HYP, DEMO_REFS)


# ------------------------------------------------------------------------------------------------------ submitit


def run_harness(cwd: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    env.pop("MLFLOW_TRACKING_URI", None)
    proc = subprocess.run([HARNESS, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env,
                          check=False)
    if proc.returncode != 0:
        raise AssertionError(f"harness {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_shipped_slurm_launcher_config_composes(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    out = run_harness(tmp_path, "hydra/launcher=slurm", "hydra.launcher.partition=gpu", "--cfg", "hydra",
                      "-p", "hydra.launcher").stdout
    assert "_target_: hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher" in out
    for line in ("timeout_min: 120", "cpus_per_task: 4", "mem_gb: 8", "array_parallelism: 64", "partition: gpu"):
        assert line in out.splitlines(), line


@pytest.mark.slow
def test_submitit_local_multirun_two_variants_with_tracking(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    runs = tmp_path / "shared" / "runs"  # stands for runs_dir=/shared/...
    proc = run_harness(tmp_path, "-m", "hydra/launcher=submitit_local", "bleu=sacrebleu,char",
                       "dataset.refsets=all", "n_samples=100", f"runs_dir={runs}")
    assert "Submitit 'local' sweep" in proc.stdout + proc.stderr
    sweep = runs / "demo"
    assert list((sweep / ".submitit").glob("*/*_result.pkl"))  # the jobs really went through submitit
    tables = {v: pd.read_parquet(sweep / f"bleu={v},dataset.refsets=all,n_samples=100" / "system_scores.parquet")
              for v in ("sacrebleu", "char")}
    hyps, refs = read_lines(DEMO_HYP), [read_lines(r) for r in DEMO_REFS]
    for variant, tokenize in (("sacrebleu", "13a"), ("char", "char")):
        table = tables[variant]
        assert set(table["variant"]) == {variant} and len(table) == 9
        row = table.set_index("system").loc["Nemo"]
        assert row["refset"] == "ref-C+ref-D"
        assert row["bleu"] == pytest.approx(BLEU(tokenize=tokenize).corpus_score(hyps, refs).score, abs=1e-9)
    # tracking: one store, created by the launching process, a parent run per job and a nested run per row
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{runs / 'mlflow.db'}")
    runs_ = client.search_runs([client.get_experiment_by_name("demo").experiment_id], max_results=1000)
    nested = [r for r in runs_ if "mlflow.parentRunId" in r.data.tags]
    assert len(runs_) - len(nested) == 2 and len(nested) == 18
    by = {(r.data.tags["variant"], r.data.tags["system"]): r.data.metrics["bleu"] for r in nested}
    assert by[("char", "Nemo")] == pytest.approx(tables["char"].set_index("system").loc["Nemo", "bleu"], abs=1e-12)
