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
