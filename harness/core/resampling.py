"""The one resampling engine: bootstrap resamples and approximate-randomization masks over segments, drawn
exactly as sacrebleu draws them, and the sums of statistics they select, in chunks of bounded memory.

Significance tests (:mod:`.significance`), correlation intervals (:mod:`.correlation`) and the meta-evaluation
statistics all resample through here, with the same checks of their knobs (``n_samples``, ``seed``, levels).

RNG contract (sacrebleu 2.x ``sacrebleu/significance.py``): ``numpy.random.default_rng(seed)``; a bootstrap
resample is ``rng.choice(n, size=(B, n), replace=True)`` (the same stream as ``rng.integers(0, n, (B, n))``);
AR masks are ``rng.integers(2, size=(T, n), dtype=bool)``. Both are drawn here in chunks of rows whose values
continue the one stream exactly (for masks: chunks of a multiple of 32 rows, since numpy draws booleans from
32-bit words), so any number of resamples fits in bounded memory and still equals sacrebleu's draw.

Resampled sums are matrix products: a resample is a vector of segment counts ``c[n]``, and the sums of every
system at once are ``c @ X.reshape(n, S*K)``. Counts and masks are integers, so every sum is exact.
Pure core: numpy only.
"""

from __future__ import annotations

import functools
from typing import Any, Iterator

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError, InputError

FloatArray = NDArray[np.float64]

DEFAULT_SEED = 12345
#: Largest seed accepted (numpy takes any non-negative integer; MLflow params and signatures hold 64-bit ones).
MAX_SEED = 2**63 - 1
#: Budget for the temporaries of one chunk of resamples (counts/masks, sums, scores).
DEFAULT_MAX_BYTES = 256 << 20
#: Budget for what must be held for all resamples at once (e.g. every resampled score, to sort them).
MEMORY_BUDGET = 2 << 30
# At most this many resamples per chunk: small chunks stay in cache and reuse one buffer.
CHUNK_ROWS = 1024


# ---------------------------------------------------------------------------------------------------------------
# Checks of the knobs (one place for significance, correlation and meta-evaluation)
# ---------------------------------------------------------------------------------------------------------------


def check_n_samples(n: Any, key: str = "n_samples") -> int:
    """A positive integer number of resamples (0 is an error, never "the default")."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ConfigError(key, f"must be a positive integer, got {n!r}", expected="a positive integer", got=n)
    return int(n)


def check_seed(seed: Any, key: str = "seed") -> int | None:
    """``None`` (OS entropy) or an integer in ``0 .. 2**63 - 1``."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= MAX_SEED:
        raise ConfigError(key, f"must be an integer from 0 to {MAX_SEED}, got {seed!r}",
                          expected=f"an integer from 0 to {MAX_SEED}", got=seed)
    return int(seed)


def check_level(level: Any, key: str = "ci") -> float:
    """A confidence level (or significance level) strictly between 0 and 1."""
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)) or not 0.0 < float(level) < 1.0:
        raise ConfigError(key, f"must lie strictly between 0 and 1, got {level!r}",
                          expected="a number strictly between 0 and 1", got=level)
    return float(level)


def check_memory(n_values: int, what: str, key: str = "n_samples", per_sample: int | None = None,
                 budget: int = MEMORY_BUDGET) -> None:
    """Refuse work that would hold more than ``budget`` bytes of float64 values at once, saying how many samples
    would fit (``per_sample``: values held per resample)."""
    need = 8 * int(n_values)
    if need <= budget:
        return
    fit = f"; at most {budget // (8 * per_sample):,} samples fit in the {budget >> 20:,} MiB budget" \
        if per_sample else ""
    raise ConfigError(key, f"{what} would need {_size(need)} of memory{fit}",
                      expected=f"at most {_size(budget)} of resampled values", got=_size(need))


def _size(n_bytes: int) -> str:
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20)):
        if n_bytes >= 1 << shift:
            return f"{n_bytes / (1 << shift):.1f} {unit}"
    return f"{n_bytes} bytes"


# ---------------------------------------------------------------------------------------------------------------
# Draws
# ---------------------------------------------------------------------------------------------------------------


def generator(seed: int | None) -> np.random.Generator:
    return np.random.default_rng(seed)


def chunk_rows(total: int, bytes_per_row: int, max_bytes: int = DEFAULT_MAX_BYTES, cap: int | None = CHUNK_ROWS,
               multiple: int = 1) -> list[slice]:
    """Row ranges covering ``0..total`` with at most ``max_bytes`` of temporaries each (and at most ``cap`` rows),
    every range but the last a multiple of ``multiple`` rows."""
    step = max(1, int(max_bytes) // max(1, int(bytes_per_row)))
    if cap is not None:
        step = min(step, cap)
    step = max(multiple, step - step % multiple)
    return [slice(s, min(total, s + step)) for s in range(0, total, step)]


def bootstrap_indices(n_segments: int, n_samples: int, seed: int | None = DEFAULT_SEED) -> NDArray[np.int64]:
    """sacrebleu's resample indices: ``default_rng(seed).choice(n_segments, size=(n_samples, n_segments))``."""
    return generator(seed).choice(n_segments, size=(n_samples, n_segments), replace=True)


def counts_of(indices: NDArray[np.int64], n_segments: int) -> NDArray[np.int64]:
    """How often each segment occurs in each resample: ``counts[b, i]`` from ``indices[b, :]``."""
    b = indices.shape[0]
    flat = (indices + (np.arange(b) * n_segments)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n_segments).reshape(b, n_segments)


def bootstrap_counts(rng: np.random.Generator, n_segments: int, n_samples: int) -> FloatArray:
    """``counts[n_samples, n]`` of ``n_samples`` resamples drawn from ``rng`` (one call, sacrebleu's stream)."""
    check_memory(n_samples * n_segments, "the bootstrap resamples", per_sample=n_segments)
    return counts_of(rng.integers(0, n_segments, (n_samples, n_segments)), n_segments).astype(np.float64)


#: Largest count matrix :func:`seeded_counts` keeps (4 of them at most).
SEEDED_CACHE_BYTES = 64 * 2**20


@functools.lru_cache(maxsize=4)
def _seeded_counts(seed: int, n_segments: int, n_samples: int) -> FloatArray:
    counts = bootstrap_counts(generator(seed), n_segments, n_samples)
    counts.flags.writeable = False
    return counts


def seeded_counts(seed: int | None, n_segments: int, n_samples: int) -> FloatArray:
    """``bootstrap_counts(generator(seed), n_segments, n_samples)``, read-only and kept for the next call with
    the same arguments (a job's correlation intervals all draw the same resamples); matrices over
    :data:`SEEDED_CACHE_BYTES`, and draws from OS entropy (``seed=None``), are drawn anew each time."""
    if seed is None or n_segments * n_samples * 8 > SEEDED_CACHE_BYTES:
        return bootstrap_counts(generator(seed), n_segments, n_samples)
    return _seeded_counts(int(seed), int(n_segments), int(n_samples))


@functools.lru_cache(maxsize=2)
def _seeded_count_bytes(seed: int, n_segments: int, n_samples: int) -> NDArray[np.uint8] | None:
    """The counts of :func:`iter_bootstrap_counts` from ``seed`` as bytes (read-only), or None if a count exceeds
    255. Kept for a job's paired tests, whose every reference set and variant draws the same resamples, when there
    are too many for :func:`seeded_counts` (a float64 matrix): 20 systems' 190 pairs need 4,000 resamples, 96 MB
    of float64 for 3,000 segments and 12 MB of bytes; drawing them again for each of 16 variants took 2 s."""
    out = np.empty((n_samples, n_segments), dtype=np.uint8)
    for rows, counts in iter_bootstrap_counts(generator(seed), n_segments, n_samples, 256):
        if counts.max(initial=0) > 255:
            return None
        out[rows] = counts
    out.flags.writeable = False
    return out


def iter_bootstrap_counts(rng: np.random.Generator, n_segments: int, n_samples: int, rows: int
                          ) -> Iterator[tuple[slice, NDArray[np.int64]]]:
    """The resamples of :func:`bootstrap_indices` (the same stream) as counts, ``rows`` resamples at a time."""
    for start in range(0, n_samples, rows):
        b = min(rows, n_samples - start)
        yield slice(start, start + b), counts_of(rng.choice(n_segments, size=(b, n_segments), replace=True),
                                                 n_segments)


def ar_masks(n_segments: int, n_trials: int, seed: int | None = DEFAULT_SEED,
             rng: np.random.Generator | None = None) -> NDArray[np.bool_]:
    """sacrebleu's AR selectors: ``default_rng(seed).integers(2, size=(n_trials, n_segments), dtype=bool)``."""
    rng = generator(seed) if rng is None else rng
    return rng.integers(2, size=(n_trials, n_segments), dtype=bool)


def iter_ar_masks(rng: np.random.Generator, n_segments: int, n_trials: int, rows: int
                  ) -> Iterator[tuple[slice, NDArray[np.bool_]]]:
    """The masks of :func:`ar_masks` (the same stream), ``rows`` trials at a time (rounded to 32 rows)."""
    rows = max(32, rows - rows % 32)
    for start in range(0, n_trials, rows):
        t = min(rows, n_trials - start)
        yield slice(start, start + t), rng.integers(2, size=(t, n_segments), dtype=bool)


# ---------------------------------------------------------------------------------------------------------------
# Sums and scores of resamples
# ---------------------------------------------------------------------------------------------------------------


def exact_dtype(X: FloatArray, bound: float) -> type:
    """float32 when every partial sum of a 0/1- or count-weighted product is an integer below 2**24 (then float32
    accumulation is exact in any order, and twice as fast), else float64."""
    if bound < 2.0 ** 24 and X.min() >= 0 and np.array_equal(X, np.round(X)):
        return np.float32
    return np.float64


def flat_systems(X: FloatArray, dtype: type) -> FloatArray:
    """``X[S, n, K]`` as ``[n, S*K]`` (segments first), the right operand of every resampling product."""
    s, n, k = X.shape
    return np.ascontiguousarray(X.transpose(1, 0, 2).reshape(n, s * k), dtype=dtype)


def resampled_sums(X: FloatArray, n_samples: int, seed: int | None = DEFAULT_SEED,
                   rng: np.random.Generator | None = None, max_bytes: int = DEFAULT_MAX_BYTES
                   ) -> Iterator[tuple[slice, FloatArray]]:
    """Yield ``(rows, sums[b, S, K])`` of every bootstrap resample (sacrebleu's draw from ``seed``, or the next
    draws of ``rng``) for all systems ``X[S, n, K]`` at once: one count matrix times the stacked statistics."""
    s, n, k = X.shape
    dtype = exact_dtype(X, float(n) * float(X.max(initial=0.0)))
    flat = flat_systems(X, dtype)
    step = chunk_rows(n_samples, 8 * (3 * n + 2 * s * k), max_bytes)[0]
    rows_per_step = step.stop - step.start
    drawn: Any = None  # the same resamples for every call of a job: kept, as float64 or as bytes
    if rng is None and seed is not None and n * n_samples * 8 <= SEEDED_CACHE_BYTES:
        drawn = seeded_counts(seed, n, n_samples)
    elif rng is None and seed is not None and n * n_samples <= SEEDED_CACHE_BYTES:
        drawn = _seeded_count_bytes(int(seed), int(n), int(n_samples))
    if drawn is not None:
        chunks: Iterator[tuple[slice, Any]] = (
            (slice(a, min(a + rows_per_step, n_samples)), drawn[a:a + rows_per_step])
            for a in range(0, n_samples, rows_per_step))
    else:
        chunks = iter_bootstrap_counts(generator(seed) if rng is None else rng, n, n_samples, rows_per_step)
    for rows, counts in chunks:
        sums = counts.astype(dtype) @ flat
        yield rows, sums.astype(np.float64, copy=False).reshape(-1, s, k)


def resampled_scores(X: FloatArray, fn: Any, n_samples: int, seed: int | None = DEFAULT_SEED,
                     rng: np.random.Generator | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> FloatArray:
    """Scores ``[S, B]`` (C-contiguous per system, as sacrebleu's 1-D arrays) of every system on every resample."""
    check_memory(n_samples * X.shape[0], f"scoring {X.shape[0]} system(s) on {n_samples:,} resamples",
                 per_sample=X.shape[0])
    out = np.empty((n_samples, X.shape[0]))
    for rows, sums in resampled_sums(X, n_samples, seed, rng, max_bytes):
        out[rows] = fn(sums)
    return np.ascontiguousarray(out.T)


def percentile_interval(values: Any, level: float) -> tuple[Any, Any]:
    """Percentile interval at ``level`` along the last axis. A vector keeps only its finite values (NaN
    resamples, e.g. an undefined correlation, are left out; none finite gives ``(nan, nan)``)."""
    v = np.asarray(values, dtype=np.float64)
    a = 100.0 * (1.0 - level) / 2.0
    if v.ndim > 1:
        lo, hi = np.percentile(v, [a, 100.0 - a], axis=-1)
        return lo, hi
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.percentile(v, [a, 100.0 - a])
    return float(lo), float(hi)


def check_systems(X: Any, what: str = "statistics") -> FloatArray:
    """``X[S, n, K]`` as float64, with at least one segment."""
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 3 or arr.shape[1] == 0:
        raise InputError(f"{what} must have shape [n_systems, n_segments > 0, K], got {arr.shape}")
    return arr
