"""The statistics of a job (harness.job.statistics): every block equals the one-call API and sacrebleu; the cache
returns what was counted (integers, exactly), keyed by content alone; a damaged entry is recomputed with a warning,
never trusted and never a traceback; an unwritable cache costs the cache only."""

from __future__ import annotations

import io
import json
import logging
import zipfile
from pathlib import Path

import numpy as np
import pytest
from sacrebleu.metrics.bleu import BLEU

from harness.api import corpus_statistics
from harness.core.bleu import corpus_score
from harness.job.inputs import SystemInput, layout_of, load_inputs
from harness.job.spec import build_spec
from harness.job.statistics import CACHE_VERSION, StatisticsCache, TokenKey, blocks, job_statistics, token_keys
from support import DEMO, base_config, read_lines, write_lines

N = 25
ARRAYS = ("hyp_len", "ref_lens", "matches", "totals")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """25 demo segments: Nemo, UEdin and the human translation ref-A, which is also a reference (with ref-C)."""
    root = tmp_path_factory.mktemp("stats") / "ds"
    for name, source in (("Nemo", "systems/Nemo"), ("UEdin", "systems/UEdin"), ("ref-A", "systems/ref-A")):
        write_lines(root / "systems" / f"{name}.txt", read_lines(DEMO / f"{source}.txt")[:N])
    write_lines(root / "refs" / "ref-A.txt", read_lines(DEMO / "systems" / "ref-A.txt")[:N])
    write_lines(root / "refs" / "ref-C.txt", read_lines(DEMO / "refs" / "ref-C.txt")[:N])
    return root


def job(tmp_path: Path, root: Path, bleu=("sacrebleu", "char"), refsets=(("ref-C",), ("ref-A", "ref-C"))):
    refsets = refsets if isinstance(refsets, str) else [list(r) for r in refsets]
    cfg = base_config(tmp_path, bleu=bleu, dataset={"root": str(root), "refsets": refsets}, human={"select": "none"})
    spec = build_spec(cfg, [f"dataset.root={root}"])
    return spec, load_inputs(spec, layout_of(spec))


def same(a, b) -> bool:
    return all(np.array_equal(getattr(a, n), getattr(b, n)) and getattr(b, n).dtype == np.int64 for n in ARRAYS)


def entries(root: Path) -> list[Path]:
    return sorted(root.rglob("*.npz"))


# ------------------------------------------------------------------------------------------------ the numbers


def test_every_block_equals_the_api_and_sacrebleu(tmp_path, dataset):
    spec, inputs = job(tmp_path, dataset)
    stats = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "cache"))
    refs = {name: text.lines for name, text in inputs.refs.items()}
    checked = set()
    for refset in inputs.refsets:
        for system in inputs.systems:
            used = inputs.refs_for(system, refset)
            if system.label == "ref-A":
                assert used == tuple(r for r in refset if r != "ref-A")  # leave-one-out
            for v in spec.variants:
                block = stats.of(system, used, v.options)
                tokenize = str(v.options.tokenize)
                api = corpus_statistics(system.text.lines, [refs[r] for r in used], tokenize=tokenize)
                assert same(block, api), (system.label, used, v.name)
                oracle = BLEU(tokenize=tokenize)
                per_seg = np.array(oracle._extract_corpus_statistics(system.text.lines, [refs[r] for r in used]))
                np.testing.assert_array_equal(block.hyp_len, per_seg[:, 0])
                np.testing.assert_array_equal(block.matches, per_seg[:, 2:6])
                np.testing.assert_array_equal(block.totals, per_seg[:, 6:10])
                want = oracle.corpus_score(system.text.lines, [refs[r] for r in used]).score
                assert corpus_score(block, v.options).score == pytest.approx(want, rel=1e-12, abs=1e-12)
                checked.add((system.label, used, tokenize))
    # ref-A is scored against ref-C in both reference sets: one block per tokenizer, not two
    assert len(checked) == len(stats.blocks) == (3 + 2) * 2


def test_variants_sharing_tokens_share_one_block_of_the_highest_order(tmp_path, dataset):
    cfg_bleu = {"four": {"tokenize": "13a"}, "six": {"tokenize": "13a", "max_ngram_order": 6},
                "lc": {"tokenize": "13a", "lowercase": True}}
    cfg = base_config(tmp_path, dataset={"root": str(dataset), "refsets": "all"}, human={"select": "none"})
    cfg["bleu"] = cfg_bleu
    spec = build_spec(cfg, [f"dataset.root={dataset}"])
    inputs = load_inputs(spec, layout_of(spec))
    keys = token_keys(spec.variants)
    assert keys.keys() == {TokenKey("13a", "mixed"), TokenKey("13a", "lc")}
    assert keys[TokenKey("13a", "mixed")][0] == 6 and keys[TokenKey("13a", "lc")][0] == 4
    assert len(blocks(inputs, spec.variants)) == 3 * 2
    stats = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "cache"))
    nemo = inputs.systems[0]
    used = inputs.refs_for(nemo, inputs.refsets[0])
    four, six, lc = (stats.of(nemo, used, v.options) for v in spec.variants)
    assert (four.max_order, six.max_order, lc.max_order) == (4, 6, 4)
    np.testing.assert_array_equal(four.matches, six.matches[:, :4])
    api = corpus_statistics(nemo.text.lines, [inputs.refs[r].lines for r in used], tokenize="13a",
                            max_ngram_order=6)
    assert same(six, api)


# ------------------------------------------------------------------------------------------------ the cache


def test_a_cache_hit_returns_the_same_integers(tmp_path, dataset):
    spec, inputs = job(tmp_path, dataset)
    cold = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "cache"))
    assert (cold.hits, cold.misses) == (0, len(cold.blocks)) and len(entries(tmp_path / "cache")) == len(cold.blocks)
    warm = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "cache"))
    assert (warm.hits, warm.misses) == (len(cold.blocks), 0)
    assert warm.blocks.keys() == cold.blocks.keys()
    assert all(same(cold.blocks[k], warm.blocks[k]) for k in cold.blocks)
    off = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "cache", enabled=False))
    assert (off.hits, off.misses) == (0, len(cold.blocks))  # force=true: counted again, the cache not read


def test_an_entry_holds_its_key_and_a_checksum(tmp_path, dataset):
    spec, inputs = job(tmp_path, dataset, bleu=("sacrebleu",), refsets="all")
    cache = StatisticsCache(tmp_path / "cache")
    job_statistics(inputs, spec.variants, cache)
    path = entries(tmp_path / "cache")[0]
    key = path.stem
    assert path == cache.path(key) and path.parent.name == key[:2]
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(bytes(z["meta"]).decode())
        arrays = {n: z[n] for n in ARRAYS}
    assert meta["key"] == key and meta["version"] == CACHE_VERSION and len(meta["sha256"]) == 64
    assert cache.load(key) is not None
    arrays["matches"] = arrays["matches"].copy()
    arrays["matches"][0, 0] += 1  # a different count under the same key and checksum: a well-formed zip
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    path.write_bytes(buffer.getvalue())
    assert cache.load(key) is None


def _truncate(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _flip(data: bytes) -> bytes:
    out = bytearray(data)
    out[len(out) // 3] ^= 0x10
    return bytes(out)


@pytest.mark.parametrize("damage,reason", [
    (lambda data: b"", ""),
    (_truncate, ""),
    (_flip, ""),
    (lambda data: b"PK\x03\x04 not a zip at all", ""),
    ("other key", "holds the statistics of another key"),
    ("checksum", "checksum does not match"),
])
def test_a_damaged_entry_is_recomputed_with_a_warning(tmp_path, dataset, caplog, damage, reason):
    spec, inputs = job(tmp_path, dataset, bleu=("sacrebleu",), refsets="all")
    first = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "cache"))
    paths = entries(tmp_path / "cache")
    victim, other = paths[0], paths[1]
    if damage == "other key":
        victim.write_bytes(other.read_bytes())
    elif damage == "checksum":
        with zipfile.ZipFile(victim) as z:
            members = {n: z.read(n) for n in z.namelist()}
        meta = json.loads(np.load(io.BytesIO(members["meta.npy"]), allow_pickle=False).tobytes())
        meta["sha256"] = "0" * 64
        buffer = io.BytesIO()
        np.save(buffer, np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))
        members["meta.npy"] = buffer.getvalue()
        with zipfile.ZipFile(victim, "w") as z:
            for name, data in members.items():
                z.writestr(name, data)
    else:
        victim.write_bytes(damage(victim.read_bytes()))
    caplog.set_level(logging.WARNING, logger="harness.job.statistics")
    again = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "cache"))
    assert (again.hits, again.misses) == (len(paths) - 1, 1)
    assert all(same(first.blocks[k], again.blocks[k]) for k in first.blocks)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and str(victim) in warnings[0] and "recomputing it" in warnings[0]
    assert reason in warnings[0] and "Traceback" not in caplog.text
    healed = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "cache"))
    assert (healed.hits, healed.misses) == (len(paths), 0)  # the entry was written again, whole


def test_an_unwritable_cache_costs_the_cache_only(tmp_path, dataset, caplog):
    spec, inputs = job(tmp_path, dataset, bleu=("sacrebleu",), refsets="all")
    (tmp_path / "a_file").write_text("x")
    caplog.set_level(logging.WARNING, logger="harness.job.statistics")
    stats = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "a_file" / "stats"))
    assert stats.misses == len(stats.blocks) == 3
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3 and all("statistics not cached" in w and "the job goes on" in w for w in warnings)
    assert str(tmp_path / "a_file") in warnings[0]


# ------------------------------------------------------------------------------------------------ content only


def test_byte_identical_versions_are_counted_once(tmp_path, dataset):
    """A system's version is not an input of its statistics: m@1 and m@2 (the same bytes) share one entry, in a
    job and in a later job where m@3 is a copy of one of them."""
    root = tmp_path / "versions"
    for ref in ("ref-C",):
        write_lines(root / "refs" / f"{ref}.txt", read_lines(dataset / "refs" / f"{ref}.txt"))
    for stem, source in (("m@1", "Nemo"), ("m@2", "Nemo"), ("m@10", "UEdin")):
        write_lines(root / "systems" / f"{stem}.txt", read_lines(dataset / "systems" / f"{source}.txt"))
    spec, inputs = job(tmp_path, root, bleu=("sacrebleu",), refsets="all")
    stats = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "cache"))
    assert (stats.hits, stats.misses) == (1, 2) and len(entries(tmp_path / "cache")) == 2
    one, two, ten = (stats.of(s, ("ref-C",), spec.variants[0].options) for s in inputs.systems)
    assert same(one, two) and not np.array_equal(one.matches, ten.matches)
    write_lines(root / "systems" / "m@11.txt", read_lines(dataset / "systems" / "UEdin.txt"))
    spec, inputs = job(tmp_path, root, bleu=("sacrebleu",), refsets="all")
    later = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "cache"))
    assert (later.hits, later.misses) == (4, 0)
    text = inputs.systems[0].text
    tk = TokenKey("13a", "mixed")
    assert StatisticsCache.key(SystemInput("m", "1", text), ["r"], tk, 4) == \
        StatisticsCache.key(SystemInput("renamed", None, text), ["r"], tk, 4)
    assert StatisticsCache.key(SystemInput("m", "1", text), ["r"], tk, 4) != \
        StatisticsCache.key(SystemInput("m", "1", text), ["r"], tk, 5)
    assert StatisticsCache.key(SystemInput("m", "1", text), ["r", "s"], tk, 4) != \
        StatisticsCache.key(SystemInput("m", "1", text), ["s", "r"], tk, 4)  # reference order: ref_lens columns


def test_chrf_blocks_are_cached_and_a_damaged_one_is_recounted(tmp_path, dataset, caplog):
    """chrF's blocks (chrF and chrF++, every reference set) go to the same cache: a second job reads every one,
    with the very integers counted, and a damaged entry is counted again with a warning."""
    from harness.job.statistics import chrf_blocks

    refsets = [["ref-C"], ["ref-A", "ref-C"]]
    cfg = base_config(tmp_path, bleu=(), dataset={"root": str(dataset), "refsets": refsets}, human={"select": "none"},
                      chrf={"chrf": {"name": "chrF"}, "chrf_pp": {"name": "chrF++", "word_order": 2},
                            "chrf_b1": {"name": "chrF-b1", "beta": 1}})
    spec = build_spec(cfg, [f"dataset.root={dataset}"])
    inputs = load_inputs(spec, layout_of(spec))
    n = len(chrf_blocks(inputs, spec.variants))
    # variants x blocks: Nemo and UEdin against each set, ref-A against ref-C alone (leave-one-out) in both sets;
    # chrF-b1 has entries of its own (beta chooses each segment's best reference)
    assert n == 3 * 5
    cold = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "cache"))
    assert (cold.hits, cold.misses) == (0, n) and len(entries(tmp_path / "cache")) == n
    warm = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "cache"))
    assert (warm.hits, warm.misses) == (n, 0) and warm.chrf.keys() == cold.chrf.keys()
    for key, stats in cold.chrf.items():
        got = warm.chrf[key]
        assert np.array_equal(got.stats, stats.stats) and got.stats.dtype == stats.stats.dtype
        assert (got.n_refs, got.variable_refs) == (stats.n_refs, stats.variable_refs)
    victim = entries(tmp_path / "cache")[0]
    victim.write_bytes(victim.read_bytes()[:100])
    caplog.set_level(logging.WARNING, logger="harness.job.statistics")
    again = job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "cache"))
    assert (again.hits, again.misses) == (n - 1, 1) and "damaged" in caplog.text
    assert all(np.array_equal(again.chrf[k].stats, cold.chrf[k].stats) for k in cold.chrf)
