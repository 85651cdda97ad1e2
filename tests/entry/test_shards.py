"""Scale-out (issue 7): Hydra's submitit launcher (local executor standing in for SLURM) and statistics of one
corpus in shards on a real Dask cluster, equal to a single process exactly.

The cluster is one per module (per xdist worker) with 2 workers as threads of this process (``processes=False``):
the scheduler, the task graph, the ordering of results and the errors are Dask's own, only without inter-process
serialization. What worker processes would add, pickling every task's arguments and every result, is proven
separately by running whole computations through a client that pickles both ways (:class:`PicklingClient`)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sacrebleu.metrics.bleu import BLEU

import harness
from harness.core.options import make_options
from harness.errors import InputError
from harness.shards import MissingExtraError, sharded_corpus_bleu, sharded_statistics
from harness.text.pipeline import lines_statistics
from harness.text.reading import BadCharacterError, EncodingError, check_parallel, read_text
from support import DEMO, harness_here, read_lines, run_harness, write_lines

DEMO_HYP = DEMO / "systems" / "Nemo.txt"
DEMO_REFS = [DEMO / "refs" / "ref-C.txt", DEMO / "refs" / "ref-D.txt"]
#: Segments of the generated corpus: its files are 1.2-1.3 MB each, so the default 1 MiB index blocks split them.
N_BIG = 20_000
#: Lines per shard on the generated corpus: prime, so boundaries line up with nothing (4 full shards + 4,004 lines).
SHARD = 4_999

# The scheduler's HTTP server (health routes) wants port 8787, taken by the other xdist worker's cluster.
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:Port 8787 is already in use:UserWarning")]


# ------------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def client():
    """A real local Dask cluster, 2 workers of 1 thread each (threads of this process: see the module docstring);
    closed at the end of the module."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


class _Done:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


class PicklingClient:
    """Stands for a cluster of worker processes: every task's function and arguments are pickled and unpickled
    (with Dask's own pickler) before it runs, and its result on the way back, as they would be between processes."""

    def __init__(self):
        from distributed.protocol.pickle import dumps, loads

        self.dumps, self.loads, self.tasks = dumps, loads, 0

    def submit(self, fn, *args, pure=True):
        fn, args = self.loads(self.dumps((fn, args)))
        self.tasks += 1
        return _Done(self.loads(self.dumps(fn(*args))))

    def cancel(self, futures):
        pass


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
    """N_BIG generated segments with 2 references, written as UTF-8 files."""
    root = tmp_path_factory.mktemp("big")
    paths = {}
    for name, text in _generate(N_BIG).items():
        paths[name] = root / f"{name}.txt"
        paths[name].write_bytes(text.encode("utf-8"))
    return paths


def _single_process(hyp: Path, refs: list[Path], **options):
    """What one process computes from the same files: read_text + lines_statistics / harness.corpus_bleu."""
    opts = make_options(**options)
    h, rs = read_text(hyp).lines, [read_text(r).lines for r in refs]
    return lines_statistics(h, rs, opts), harness.corpus_bleu(h, rs, **options)


@pytest.fixture(scope="module")
def big_single(big):
    """The single-process statistics and score of the generated corpus (computed once)."""
    return _single_process(big["hyp"], [big["ref1"], big["ref2"]])


@pytest.fixture(scope="module")
def demo_cut(tmp_path_factory) -> tuple[Path, list[Path]]:
    """The first 61 lines of the demo's Nemo, ref-C and ref-D (where one task per line is the point)."""
    root = tmp_path_factory.mktemp("cut")
    hyp = write_lines(root / "Nemo.txt", read_lines(DEMO_HYP)[:61])
    return hyp, [write_lines(root / r.name, read_lines(r)[:61]) for r in DEMO_REFS]


def _assert_same_stats(a, b) -> None:
    for field in ("hyp_len", "ref_lens", "matches", "totals"):
        x, y = getattr(a, field), getattr(b, field)
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), field


def _error_of(fn) -> InputError:
    with pytest.raises(InputError) as info:
        fn()
    return info.value


def _same_error(a: InputError, b: InputError) -> None:
    """The same error: class, message and location fields."""
    assert type(a) is type(b) and str(a) == str(b)
    for field in ("path", "line", "byte_offset", "column", "expected", "got", "bad_bytes"):
        assert getattr(a, field) == getattr(b, field), field


# ------------------------------------------------------------------------------------------------------ Dask


def test_generated_corpus_sharded_equals_single_process_exactly(big, big_single, client):
    hyp, refs = big["hyp"], [big["ref1"], big["ref2"]]
    assert all(p.stat().st_size > 1 << 20 for p in (hyp, *refs))  # several default index blocks per file
    want_stats, want = big_single
    # 4,999 (prime) lines per shard: boundaries aligned neither with the 1 MiB index blocks nor with anything in the
    # data; 5 shards, the last one short.
    stats = sharded_statistics(hyp, refs, make_options(), shard_segments=SHARD, client=client)
    assert len(stats) == N_BIG and stats.n_refs == 2
    _assert_same_stats(stats, want_stats)
    got = sharded_corpus_bleu(hyp, refs, shard_segments=SHARD, client=client)
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


@pytest.mark.parametrize("cut,shard_segments", [(True, 1), (False, 13), (False, 526), (False, 527), (False, 10_000)])
def test_demo_any_shard_size(client, demo_cut, cut, shard_segments):
    hyp, refs = demo_cut if cut else (DEMO_HYP, DEMO_REFS)
    want = harness.corpus_bleu(read_lines(hyp), [read_lines(r) for r in refs])
    got = sharded_corpus_bleu(hyp, refs, shard_segments=shard_segments, client=client)
    assert got.score - want.score == 0
    # against sacrebleu itself, for good measure
    sb = BLEU().corpus_score(read_lines(hyp), [read_lines(r) for r in refs])
    assert got.score == pytest.approx(sb.score, abs=1e-9)


def test_client_as_address_and_default_client(client):
    want = harness.corpus_bleu(read_lines(DEMO_HYP), [read_lines(r) for r in DEMO_REFS])
    by_address = sharded_corpus_bleu(DEMO_HYP, DEMO_REFS, shard_segments=200, client=client.scheduler.address)
    assert by_address.score == want.score
    from distributed import default_client

    assert default_client() is client
    assert sharded_corpus_bleu(DEMO_HYP, DEMO_REFS, shard_segments=200).score == want.score  # client=None


def test_tasks_and_results_survive_pickling(demo_cut, tmp_path):
    """What worker processes add: every task's arguments and result pickled; the statistics are still exact and a
    worker's error arrives with its class and fields (an exception object itself would not unpickle)."""
    hyp, refs = demo_cut
    pickling = PicklingClient()
    _assert_same_stats(sharded_statistics(hyp, refs, make_options(), shard_segments=7, client=pickling),
                       _single_process(hyp, refs)[0])
    assert pickling.tasks == 3 + 3 + 9  # probe and count each file, then 9 shards
    bad = tmp_path / "bad.txt"
    lines = [line.encode() for line in read_lines(refs[0])]
    lines[40] = lines[40][:5] + b"\xe2\x82" + lines[40][5:]  # a truncated euro sign on line 41 (shard 6)
    bad.write_bytes(b"\n".join(lines) + b"\n")
    err = _error_of(lambda: sharded_statistics(hyp, [bad], shard_segments=7, client=PicklingClient()))
    assert isinstance(err, EncodingError) and err.line == 41 and err.bad_bytes == b"\xe2\x82"
    _same_error(err, _error_of(lambda: read_text(bad)))


def test_a_workers_option_error_comes_back_whole(demo_cut, monkeypatch):
    """Not only bad input: any error a user can act on (here: a tokenizer a worker lacks) arrives as itself."""
    from harness import shards
    from harness.errors import ConfigError

    def no_mecab(*args):
        raise ConfigError("tokenize", "ja-mecab needs MeCab on every worker", ["13a", "intl"], got="ja-mecab")

    monkeypatch.setattr(shards, "_shard_impl", no_mecab)
    hyp, refs = demo_cut
    with pytest.raises(ConfigError) as info:
        sharded_statistics(hyp, refs, shard_segments=20, client=PicklingClient())
    err = info.value
    assert (err.key, err.choices, err.got) == ("tokenize", ["13a", "intl"], "ja-mecab")
    assert str(err) == "tokenize: ja-mecab needs MeCab on every worker (valid: 13a, intl)"


def test_bad_utf8_in_a_late_shard_names_file_and_global_line(big, client, tmp_path):
    ref2 = tmp_path / "ref2.txt"
    lines = big["ref2"].read_bytes().split(b"\n")
    lines[19_122] = lines[19_122][:3] + b"\xff\xfe" + lines[19_122][3:]  # line 19,123 (1-based), shard 4 of 5
    ref2.write_bytes(b"\n".join(lines))
    refs = [big["ref1"], ref2]
    err = _error_of(lambda: sharded_statistics(big["hyp"], refs, shard_segments=SHARD, client=client))
    assert err.path == str(ref2) and err.line == 19_123
    assert "invalid UTF-8" in str(err) and str(err).startswith(f"{ref2}:19123: ")
    _same_error(err, _error_of(lambda: read_text(ref2)))  # the very error of a single-process read, fields and all
    # also with the bad byte right at a shard's first byte (line 9,999 starts shard 3)
    lines = big["ref2"].read_bytes().split(b"\n")
    lines[9_998] = b"\xc3" + lines[9_998]
    ref2.write_bytes(b"\n".join(lines))
    err = _error_of(lambda: sharded_statistics(big["hyp"], refs, shard_segments=SHARD, client=client))
    assert err.line == 9_999 and "byte column 1 of the line" in str(err)
    offset = len(b"\n".join(lines[:9_998])) + 1
    assert f"byte offset {offset} in the file" in str(err) and err.byte_offset == offset
    _same_error(err, _error_of(lambda: read_text(ref2)))


def test_control_character_and_inner_bom_in_late_shards(client, tmp_path):
    ref = [f"segment number {i} ." for i in range(1, 101)]
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("\n".join(ref) + "\n", encoding="utf-8")
    bad = tmp_path / "ref.txt"
    bad.write_text("\n".join(ref[:60] + ["a\x00b"] + ref[61:]) + "\n", encoding="utf-8")
    err = _error_of(lambda: sharded_statistics(hyp, [bad], shard_segments=9, client=client))
    assert isinstance(err, BadCharacterError) and err.line == 61 and err.column == 2 and err.path == str(bad)
    assert "U+0000 NUL" in str(err)
    bad.write_text("\n".join(ref[:63] + ["\ufeff" + ref[63]] + ref[64:]) + "\n", encoding="utf-8")  # line 64
    err = _error_of(lambda: sharded_statistics(hyp, [bad], shard_segments=9, client=client))  # shard 8 starts at 64
    _same_error(err, _error_of(lambda: read_text(bad)))
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
    _same_error(err, _error_of(lambda: read_text(tmp_path / "nope.txt")))
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    assert "empty file" in str(_error_of(lambda: sharded_statistics(empty, DEMO_REFS, client=client)))
    with pytest.raises(TypeError):
        sharded_statistics(DEMO_HYP, str(DEMO_REFS[0]), client=client)
    with pytest.raises(ValueError, match="shard_segments"):
        sharded_statistics(DEMO_HYP, DEMO_REFS, shard_segments=0, client=client)


def test_without_dask_the_error_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(MissingExtraError, match=r"pip install 'bleu-harness\[dask\]'"):
        sharded_corpus_bleu(DEMO_HYP, DEMO_REFS)
    with pytest.raises(ImportError):
        sharded_statistics(DEMO_HYP, DEMO_REFS)


# ------------------------------------------------------------------------------------------------------ submitit


def test_shipped_slurm_launcher_config_composes(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    out = harness_here(tmp_path, "hydra/launcher=slurm", "hydra.launcher.partition=gpu", "--cfg", "hydra",
                       "-p", "hydra.launcher").stdout
    assert "_target_: hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher" in out
    for line in ("timeout_min: 120", "cpus_per_task: 4", "mem_gb: 8", "array_parallelism: 64", "partition: gpu"):
        assert line in out.splitlines(), line


@pytest.mark.slow
def test_submitit_local_multirun_two_variants_with_tracking(tmp_path, small_dataset):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    runs = tmp_path / "shared" / "runs"  # stands for runs_dir=/shared/...
    proc = run_harness(tmp_path, "-m", "hydra/launcher=submitit_local", "bleu=sacrebleu,char",
                       f"dataset.root={small_dataset}", "dataset.refsets=all", "human=none", "n_samples=100",
                       "figures=false", f"runs_dir={runs}")
    assert "Submitit 'local' sweep" in proc.stdout + proc.stderr
    assert list(runs.glob(".sweeps/*/.submitit/*/*_result.pkl"))  # the jobs really went through submitit
    # flat job folders runs/<experiment>/<name>-<hash>, the experiment named after the dataset folder
    folders = sorted(p.parent for p in runs.glob("small/*/system_scores.parquet"))
    assert len(folders) == 2
    tables = {}
    for folder in folders:
        match = re.fullmatch(r"(.+)-[0-9a-f]{8}", folder.name)  # the overrides, shortened, and their hash
        assert match, folder.name
        parts = dict(part.split("=") for part in match.group(1).split(","))
        variant = parts.pop("bleu")
        assert parts == {"refsets": "all", "root": "small", "human": "none", "n_samples": "100",
                         "figures": "False"}, folder.name
        tables[variant] = pd.read_parquet(folder / "system_scores.parquet")
    assert sorted(tables) == ["char", "sacrebleu"]
    refs = [read_lines(small_dataset / "refs" / f"{r}.txt") for r in ("ref-C", "ref-D")]
    hyps = read_lines(small_dataset / "systems" / "Nemo.txt")
    for variant, tokenize in (("sacrebleu", "13a"), ("char", "char")):
        table = tables[variant]
        assert set(table["variant"]) == {variant} and len(table) == 4  # Nemo, UEdin, Online-W, ref-A
        row = table.set_index("system").loc["Nemo"]
        assert row["refset"] == "ref-C+ref-D"
        assert row["bleu"] == pytest.approx(BLEU(tokenize=tokenize).corpus_score(hyps, refs).score, abs=1e-9)
    # tracking: one store, created by the launching process, a parent run per job and a nested run per row
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{runs / 'mlflow.db'}")
    runs_ = client.search_runs([client.get_experiment_by_name("small").experiment_id], max_results=1000)
    nested = [r for r in runs_ if "mlflow.parentRunId" in r.data.tags]
    assert len(runs_) - len(nested) == 2 and len(nested) == 8
    by = {(r.data.tags["variant"], r.data.tags["system"]): r.data.metrics["bleu"] for r in nested}
    assert by[("char", "Nemo")] == pytest.approx(tables["char"].set_index("system").loc["Nemo", "bleu"], abs=1e-12)
