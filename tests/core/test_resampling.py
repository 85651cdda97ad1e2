"""The shared resampling draws (harness.core.resampling)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.core import resampling


def test_seeded_counts_are_the_seeds_resamples_kept_read_only(monkeypatch):
    """The same matrix as drawing from generator(seed), returned again (not redrawn) for the same arguments and
    read-only; a matrix over the cache limit is drawn each time (and can be written)."""
    want = resampling.bootstrap_counts(resampling.generator(9), 40, 30)
    got = resampling.seeded_counts(9, 40, 30)
    assert np.array_equal(got, want) and resampling.seeded_counts(9, 40, 30) is got
    assert not np.array_equal(resampling.seeded_counts(10, 40, 30), want)
    with pytest.raises(ValueError):
        got[0, 0] = 5.0
    monkeypatch.setattr(resampling, "SEEDED_CACHE_BYTES", 100)
    big = resampling.seeded_counts(9, 40, 30)
    assert np.array_equal(big, want) and big is not resampling.seeded_counts(9, 40, 30)
    big[0, 0] = 5.0


@pytest.mark.parametrize("n,samples,rows", [(527, 1000, 64), (7, 33, 5), (1, 4, 3)])
def test_the_kept_counts_are_sacrebleus_resamples_in_every_chunking(n, samples, rows):
    """resampled_sums takes a job's kept counts (seeded_counts) for sacrebleu's resamples, which are
    ``default_rng(seed).choice(n, size=(B, n))`` (bootstrap_indices); a given generator is drawn from in chunks of
    rows: the sums are the same either way."""
    assert np.array_equal(resampling.seeded_counts(12345, n, samples),
                          resampling.counts_of(resampling.bootstrap_indices(n, samples, 12345), n))
    X = np.random.default_rng(0).integers(0, 9, size=(3, n, 4)).astype(np.float64)
    kept = np.concatenate([s for _, s in resampling.resampled_sums(X, samples, 12345)])
    drawn = np.concatenate([s for _, s in resampling.resampled_sums(X, samples, None, resampling.generator(12345),
                                                                     max_bytes=8 * rows * (3 * n + 24))])
    assert np.array_equal(kept, drawn)


def test_resamples_too_many_for_float64_are_kept_as_bytes(monkeypatch):
    """Counts too large to keep as float64 (a paired test's 4,000 resamples of 3,000 segments) are kept as bytes
    when they fit: drawn once for every call with the same seed, and the sums are those of resamples drawn anew."""
    n, samples = 300, 80
    monkeypatch.setattr(resampling, "SEEDED_CACHE_BYTES", n * samples * 4)  # float64 too large, bytes fit
    resampling._seeded_count_bytes.cache_clear()
    X = np.random.default_rng(1).integers(0, 9, size=(3, n, 4)).astype(np.float64)
    kept = np.concatenate([s for _, s in resampling.resampled_sums(X, samples, 7)])
    drawn = np.concatenate([s for _, s in resampling.resampled_sums(X, samples, None, resampling.generator(7))])
    assert np.array_equal(kept, drawn)
    info = resampling._seeded_count_bytes.cache_info()
    assert info.currsize == 1 and info.misses == 1
    again = np.concatenate([s for _, s in resampling.resampled_sums(X, samples, 7)])
    assert np.array_equal(again, kept) and resampling._seeded_count_bytes.cache_info().hits == 1
    assert resampling._seeded_count_bytes(7, n, samples).dtype == np.uint8
