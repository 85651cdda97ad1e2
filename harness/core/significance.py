"""Statistical significance of BLEU differences, over per-segment sufficient statistics only.

Single-system bootstrap confidence intervals, paired bootstrap resampling (``bs``) and paired approximate
randomization (``ar``), plus what sacrebleu does not offer: all-pairs differences with Holm-Bonferroni
correction, an interval for every *difference*, and significance clusters. The paper's block t-test
(``block_t``) is :mod:`.blocks`'.
Resampling goes through :mod:`.resampling`; scores through a score function (:func:`harness.core.bleu.score_fn`).

Pure core: numpy in, dataclasses out (scipy for the t distribution, imported lazily). Every random procedure
takes an explicit ``seed``.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError, InputError
from .resampling import (
    CHUNK_ROWS,
    DEFAULT_MAX_BYTES,
    DEFAULT_SEED,
    check_level,
    check_memory,
    check_n_samples,
    check_seed,
    check_systems,
    chunk_rows,
    exact_dtype,
    flat_systems,
    generator,
    iter_ar_masks,
    percentile_interval,
    resampled_scores,
)

# Array conventions: one system is a float64 matrix ``[n, K]`` of per-segment statistics ``[hyp_len, ref_len,
# correct_1..N, total_1..N]``; systems are stacked ``X[S, n, K]``; ``score_fn(sums[..., K]) -> scores[...]``.
#
# sacrebleu 2.x ``sacrebleu/significance.py``, reproduced call for call (p-values equal sacrebleu's exactly):
#
# - Paired bootstrap (default 1000 resamples): sacrebleu re-creates the generator for every system with the same
#   seed, so every system and the baseline are scored on the *same* resamples (drawn here once and shared).
#   ``d_i = |BLEU_b,i - BLEU_a,i|``, ``p = (#{d_i - mean(d) > |delta|} + 1) / (B + 1)``.
# - Approximate randomization (default 10000 trials): segment ``i`` of trial ``t`` swaps the two systems' statistics
#   where the mask is False; ``p = (#{|BLEU(A_t) - BLEU(B_t)| > |delta|} + 1) / (T + 1)``. With ``confidence``
#   (sacrebleu's ``n_ar_confidence``, 1000 resamples) the *systems'* bootstrap is the next draw of that generator
#   and the *baseline's* a fresh one (a sacrebleu quirk we reproduce).
# - Bootstrap resamples are scored in sacrebleu's float32 arithmetic (:meth:`ScoreFn.resampled`); AR trials and
#   actual scores in float64.
# - Interval of one system (sacrebleu's ``estimate_ci``): sorted resampled scores, ``lo = s[B // 40]``,
#   ``hi = s[B - B // 40 - 1]``, reported as ``mean(s) +- (hi - lo) / 2``.
# - Quirks kept: ``SACREBLEU_SEED=0`` is unseeded for sacrebleu's paired tests (here it is an ordinary seed); a
#   system identical to the baseline gets ``p = 1 / (n + 1)`` (MultEval's strict ``>``); sacrebleu stars
#   ``p <= 0.05``.

FloatArray = NDArray[np.float64]
ScoreFn = Callable[[FloatArray], FloatArray]

#: sacrebleu's ``PairedTest._DEFAULT_SAMPLES``.
DEFAULT_SAMPLES: dict[str, int] = {"bs": 1000, "ar": 10000}
#: Resamples of the bootstrap behind CIs in AR mode (sacrebleu ``n_ar_confidence=0`` -> 1000) and ``--confidence``.
DEFAULT_CONFIDENCE_SAMPLES = 1000
TESTS: tuple[str, ...] = ("bs", "ar")
#: The ``test`` column of the significance table.
TEST_NAMES: dict[str, str] = {"bs": "paired_bs", "ar": "paired_ar", "block_t": "block_t"}
PAIR_MODES: tuple[str, ...] = ("baseline", "all")


# ---------------------------------------------------------------------------------------------------------------
# Knobs
# ---------------------------------------------------------------------------------------------------------------


def sacrebleu_seed(value: str | None = None) -> int | None:
    """Parse a ``SACREBLEU_SEED`` value as sacrebleu does: unset -> 12345, ``none`` (any case) -> None (OS
    entropy), else ``int(value)``. (sacrebleu's paired tests then treat 0 as unseeded; we do not.)"""
    if value is None:
        return DEFAULT_SEED
    text = str(value).strip()
    if text.lower() == "none":
        return None
    try:
        return check_seed(int(text), "SACREBLEU_SEED")
    except ValueError:
        raise ConfigError("SACREBLEU_SEED", f"must be an integer or 'none', got {value!r}", got=value) from None


def seed_label(seed: int | None) -> str:
    """The signature value of a seed (``str(seed).lower()``: ``12345``, ``none``)."""
    return str(seed).lower()


def check_test(test: str) -> str:
    t = {"paired_bs": "bs", "paired_ar": "ar", "paired-bs": "bs", "paired-ar": "ar"}.get(test, test)
    if t not in TESTS:
        raise ConfigError("test", f"unknown paired test {test!r}", TESTS, got=test)
    return t


def samples_for(test: str, n_samples: int | None) -> int:
    """The number of resamples of a test: ``None`` -> sacrebleu's default; otherwise a positive integer."""
    return DEFAULT_SAMPLES[check_test(test)] if n_samples is None else check_n_samples(n_samples)


def signature_extra(test: str, n_samples: int | None = None, seed: int | None = DEFAULT_SEED,
                    n_confidence: int | None = None) -> dict[str, str]:
    """Signature fields of a paired test, in sacrebleu's order (``bs``, ``ar``, ``seed``): pass as ``extra`` to
    :func:`harness.core.signature.signature`. ``n_confidence`` (AR with CIs) adds sacrebleu's ``bs:`` too."""
    test = check_test(test)
    n = samples_for(test, n_samples)
    out: dict[str, str] = {}
    if test == "bs":
        out["bs"] = str(n)
    else:
        if n_confidence:
            out["bs"] = str(n_confidence)
        out["ar"] = str(n)
    out["seed"] = seed_label(seed)
    return out


def _resample_fn(score_fn: ScoreFn) -> ScoreFn:
    return getattr(score_fn, "resampled", score_fn)


def _as_matrix(stats: Any, score_fn: Any) -> FloatArray:
    if hasattr(stats, "matrix") and hasattr(stats, "truncate_order"):  # SegmentStats
        opts = getattr(score_fn, "opts", None)
        if opts is None:
            raise InputError("SegmentStats need a score function of BLEU options (harness.core.bleu.score_fn), "
                             "to know the n-gram order and reference-length rule; pass matrices otherwise")
        return stats.truncate_order(opts.max_ngram_order).matrix(opts.ref_length)
    if hasattr(stats, "matrix"):  # other metrics' statistics (harness.core.chrf.ChrfStats)
        return np.asarray(stats.matrix(), dtype=np.float64)
    return np.asarray(stats, dtype=np.float64)


def stack_systems(systems: Sequence[tuple[str, Any]], score_fn: Any = None) -> tuple[list[str], FloatArray]:
    """``[(name, stats[n, K], SegmentStats or ChrfStats), ...]`` -> (names, ``X[S, n, K]``), checking shapes and
    names."""
    if not systems:
        raise InputError("no systems given")
    names = [str(name) for name, _ in systems]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"system names must be unique, {dup[0]!r} is given twice")
    mats = [_as_matrix(st, score_fn) for _, st in systems]
    shape = mats[0].shape
    if len(shape) != 2 or shape[0] == 0:
        raise InputError(f"system {names[0]!r}: statistics must have shape [n_segments > 0, K], got {shape}")
    for name, m in zip(names, mats):
        if m.shape != shape:
            raise InputError(f"system {name!r} has statistics of shape {m.shape}, expected {shape} like "
                             f"{names[0]!r} (all systems must cover the same segments)")
    return names, np.ascontiguousarray(np.stack(mats))


def _callable(score_fn: Any) -> ScoreFn:
    if callable(score_fn):
        return score_fn
    from .bleu import score_fn as make_score_fn

    return make_score_fn(score_fn)


# ---------------------------------------------------------------------------------------------------------------
# Single-system bootstrap confidence interval (sacrebleu --confidence)
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfidenceInterval:
    """Bootstrap CI of one system's BLEU, sacrebleu's convention: ``mean +- ci`` (``ci = (hi - lo) / 2``).

    ``ci_low``/``ci_high`` = ``mean -+ ci`` (the interval sacrebleu prints); ``q_low``/``q_high`` = the order
    statistics ``s[B // 40]`` and ``s[B - B // 40 - 1]`` themselves.
    """

    name: str
    score: float
    mean: float
    ci: float
    q_low: float
    q_high: float
    n_samples: int
    seed: int | None

    @property
    def ci_low(self) -> float:
        return self.mean - self.ci

    @property
    def ci_high(self) -> float:
        return self.mean + self.ci

    def format(self, width: int = 2) -> str:
        """``30.12 (μ = 30.10 ± 0.85)`` as in sacrebleu's score line."""
        return f"{self.score:.{width}f} (μ = {self.mean:.{width}f} ± {self.ci:.{width}f})"


def _estimate_ci(scores: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """sacrebleu ``significance.estimate_ci`` per row: (mean of the sorted scores, half-width, lo, hi)."""
    srt = np.sort(scores, axis=-1)
    n = srt.shape[-1]
    lo_i = n // 40
    lo, hi = srt[..., lo_i], srt[..., n - lo_i - 1]
    return srt.mean(axis=-1), 0.5 * (hi - lo), lo, hi


def exact_mean(values: Sequence[float]) -> float:
    """``statistics.mean`` of floats (sacrebleu's mean of the bootstrap scores): the correctly rounded quotient of
    their exact sum, without a fraction per value. The exact sum is split into a few doubles by repeated
    ``math.fsum`` of the values minus the parts found so far (each fsum is correctly rounded, so it returns 0 only
    when the parts add up to the values exactly); only those parts become fractions."""
    vals = [float(v) for v in values]
    parts: list[float] = []
    try:
        rest = math.fsum(vals)
        if not vals or not math.isfinite(rest):  # nothing, an inf or a nan: statistics.mean's error or value
            return float(statistics.mean(vals))
        while rest != 0.0:
            parts.append(rest)
            rest = math.fsum([*vals, *(-p for p in parts)])
    except (OverflowError, ValueError):  # sums beyond the float range (or inf - inf): the fractions all the way
        return float(statistics.mean(vals))
    return float(sum((Fraction(p) for p in parts), Fraction(0)) / len(vals))


def bootstrap_ci(stats: Any, score_fn: Any, n_samples: int = DEFAULT_CONFIDENCE_SAMPLES,
                 seed: int | None = DEFAULT_SEED, *, names: Sequence[str] | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> ConfidenceInterval | list[ConfidenceInterval]:
    """sacrebleu's ``--confidence`` (``corpus_score(n_bootstrap=n)``) over statistics ``[n, K]`` (one result) or
    ``[S, n, K]`` / a list of ``(name, stats)`` (one result per system, all on the same resamples)."""
    score_fn = _callable(score_fn)
    n_samples = check_n_samples(n_samples)
    seed = check_seed(seed)
    single = False
    if isinstance(stats, (list, tuple)) and stats and isinstance(stats[0], tuple):
        names_, X = stack_systems(stats, score_fn)
    else:
        arr = np.asarray(_as_matrix(stats, score_fn), dtype=np.float64)
        single = arr.ndim == 2
        X = check_systems(arr[None] if single else arr)
        names_ = [str(i) for i in range(X.shape[0])] if names is None else [str(x) for x in names]
    res = resampled_scores(X, _resample_fn(score_fn), n_samples, seed, max_bytes=max_bytes)
    actual = np.asarray(score_fn(X.sum(axis=1)), dtype=np.float64)
    out = []
    lo_i = n_samples // 40
    for s in range(X.shape[0]):
        raw = np.sort(res[s]).tolist()  # sacrebleu Score.estimate_ci: sorted() + statistics.mean (no NaN here)
        lo, hi = raw[lo_i], raw[n_samples - lo_i - 1]
        out.append(ConfidenceInterval(names_[s], float(actual[s]), exact_mean(raw), 0.5 * (hi - lo),
                                      lo, hi, n_samples, seed))
    return out[0] if single else out


def systems_ci(systems: Sequence[tuple[str, Any]], score_fn: Any, n_samples: int = DEFAULT_CONFIDENCE_SAMPLES,
               seed: int | None = DEFAULT_SEED, *, max_bytes: int = DEFAULT_MAX_BYTES) -> list[ConfidenceInterval]:
    """:func:`bootstrap_ci` of several ``(name, stats)`` systems: one interval each, on the same resamples."""
    out = bootstrap_ci(list(systems), score_fn, n_samples, seed, max_bytes=max_bytes)
    assert isinstance(out, list)  # a list of (name, stats) gives one interval per system
    return out


# ---------------------------------------------------------------------------------------------------------------
# Differences between systems (the engine), Holm correction
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DifferenceTest:
    """One comparison of ``b`` against ``a`` under one test, ``delta = value_b - value_a``: two systems' BLEU
    (tests ``paired_bs``, ``paired_ar``, ``block_t``) or two variants' correlations with human scores.

    ``statistic``: the test statistic (bs / ar: the observed ``|delta|``; block_t: paired t of b vs a).
    ``ci_low``/``ci_high``: interval of the difference b - a (NaN when not computed). ``p_holm``:
    Holm-Bonferroni adjusted p over the comparisons made together. ``n_samples``: resamples, trials or blocks.
    """

    test: str
    a: str
    b: str
    value_a: float
    value_b: float
    delta: float
    statistic: float
    p_value: float
    ci_low: float
    ci_high: float
    n_samples: int
    seed: int | None
    p_holm: float = math.nan

    def as_row(self) -> dict[str, Any]:
        """The ``significance`` columns (docs/contracts.md §7) of a comparison of two systems."""
        return {
            "test": self.test, "system_a": self.a, "system_b": self.b, "delta": self.delta,
            "statistic": self.statistic, "p_value": self.p_value, "ci_low": self.ci_low, "ci_high": self.ci_high,
            "p_holm": self.p_holm, "n_samples": self.n_samples, "seed": self.seed, "score_a": self.value_a,
            "score_b": self.value_b,
        }


def holm(p_values: Any) -> FloatArray:
    """Holm-Bonferroni step-down adjusted p-values (same order as given; NaNs stay NaN and do not count).

    Sorted ascending ``p_(1) <= ... <= p_(m)``: ``adj_(i) = min(1, max_{j <= i} (m - j + 1) p_(j))``.
    """
    p = np.asarray(p_values, dtype=np.float64).ravel()
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out[order] = adj
    return out


def holm_samples(n_tests: int, alpha: float = 0.05, smallest: int = 1, step: int = 100) -> int:
    """The fewest resamples (a multiple of ``step``) with which Holm's correction over ``n_tests`` tests can
    reach ``p < alpha``, for tests whose smallest p-value is ``smallest / (B + 1)`` (1 for the paired bootstrap and
    approximate randomization, 2 for the two-sided bootstrap of a difference of correlations).

    Holm multiplies the smallest p by the number of comparisons: 171 pairs of 19 systems with 1000 resamples can
    reach no less than 171/1001 = 0.171, so nothing is significant after correction, however large a difference.
    ``B + 1 > smallest * n / alpha`` is needed; 0 when there is nothing to correct (fewer than 2 comparisons)."""
    if n_tests < 2:
        return 0
    b = max(0, math.floor(smallest * n_tests / alpha) - 1)
    while smallest * n_tests / (b + 1) >= alpha:  # the same float arithmetic as the test's p-value
        b += 1
    return -(-b // step) * step


def pair_indices(names: Sequence[str], pairs: str | Sequence[tuple[Any, Any]]) -> list[tuple[int, int]]:
    """``'all'`` (every ``i < j``), ``'baseline'`` (0 against each other) or explicit pairs of names/indices."""
    s = len(names)
    if isinstance(pairs, str):
        if pairs == "baseline":
            return [(0, j) for j in range(1, s)]
        if pairs == "all":
            return [(i, j) for i in range(s) for j in range(i + 1, s)]
        raise ConfigError("pairs", f"unknown pair mode {pairs!r}", PAIR_MODES)
    pos = {n: i for i, n in enumerate(names)}
    out = []
    for a, b in pairs:
        ia = a if isinstance(a, (int, np.integer)) else pos.get(str(a))
        ib = b if isinstance(b, (int, np.integer)) else pos.get(str(b))
        if ia is None or ib is None or not (0 <= ia < s and 0 <= ib < s):
            raise InputError(f"unknown system in pair ({a!r}, {b!r}); systems: {list(names)}")
        out.append((int(ia), int(ib)))
    return out


def _bs_counts(R: FloatArray, ia: NDArray[np.intp], ib: NDArray[np.intp], delta_abs: FloatArray,
               chunk: int = 4096) -> NDArray[np.int64]:
    """Counts ``#{|d_i| - mean|d| > |delta|}`` per pair (sacrebleu's exact operation order, per row)."""
    counts = np.empty(ia.size, dtype=np.int64)
    for start in range(0, ia.size, chunk):
        sl = slice(start, start + chunk)
        d = np.abs(R[ib[sl]] - R[ia[sl]])
        centred = d - d.mean(axis=1, keepdims=True)
        counts[sl] = (centred > delta_abs[sl, None]).sum(axis=1)
    return counts


def _ar_counts(X: FloatArray, rng: np.random.Generator, n_trials: int, ia: NDArray[np.intp],
               ib: NDArray[np.intp], delta_abs: FloatArray, fn: ScoreFn, max_bytes: int) -> NDArray[np.int64]:
    """``#{|BLEU(A_t) - BLEU(B_t)| > |delta|}`` per pair, all pairs from one product ``mask @ X`` per chunk of
    trials (masks drawn chunk by chunk: bounded memory for any number of trials, sacrebleu's stream).

    ``mask @ X_s`` sums system ``s`` over the segments where the mask is True, so pseudo-system A of pair (a, b)
    (a where True, b where False) is ``P_a - P_b + sum(X_b)`` and ``B = sum(X_a) + sum(X_b) - A``: exact integer
    arithmetic, the same sums as sacrebleu's ``pos_sel @ bl + neg_sel @ sys``.
    """
    s, n, k = X.shape
    tot = X.sum(axis=1)  # [S, K]
    dtype = exact_dtype(X, float(tot.max(initial=0.0)))
    flat = flat_systems(X, dtype)
    both = tot[ia] + tot[ib]
    p = ia.size
    counts = np.zeros(p, dtype=np.int64)
    per_row = 5 * n + 8 * (2 * s * k + 4 * p * k + 4 * p)
    step = chunk_rows(n_trials, per_row, max_bytes, max(32, CHUNK_ROWS), multiple=32)[0]
    for _, mask in iter_ar_masks(rng, n, n_trials, step.stop - step.start):
        pm = (mask.astype(dtype) @ flat).astype(np.float64, copy=False).reshape(-1, s, k)  # [t, S, K]
        a = pm[:, ia] - pm[:, ib] + tot[ib]  # pseudo-system A: system a where True, b where False
        counts += (np.abs(fn(a) - fn(both - a)) > delta_abs).sum(axis=0)
    return counts


def differences(systems: Sequence[tuple[str, Any]], score_fn: Any, test: str = "bs",
            pairs: str | Sequence[tuple[Any, Any]] = "all", n_samples: int | None = None,
            seed: int | None = DEFAULT_SEED, *, ci: float = 0.95,
            n_confidence: int = DEFAULT_CONFIDENCE_SAMPLES, max_bytes: int = DEFAULT_MAX_BYTES) -> list[DifferenceTest]:
    """Paired tests between systems: every pair (``pairs='all'``), the first system against each other
    (``'baseline'``, sacrebleu's mode) or explicit ``[(a, b), ...]`` (names or indices).

    One set of resamples (bs) or masks (ar) from ``seed`` is shared by all systems, so the p-value of
    (baseline, X) here is exactly sacrebleu's. ``ci`` is the level of the difference intervals; in AR mode they
    come from a paired bootstrap of ``n_confidence`` resamples drawn after the masks (0 disables them).
    Holm's correction runs over the returned family.
    """
    score_fn = _callable(score_fn)
    names, X = stack_systems(systems, score_fn)
    return _engine(names, X, score_fn, test, pairs, n_samples, seed, ci, n_confidence, max_bytes)[0]


def all_differences(systems: Sequence[tuple[str, Any]], score_fn: Any, test: str = "bs",
              n_samples: int | None = None, seed: int | None = DEFAULT_SEED, **kwargs: Any) -> list[DifferenceTest]:
    """Every pair ``(i, j), i < j`` in the given order (see :func:`differences`), Holm-corrected together."""
    return differences(systems, score_fn, test, "all", n_samples, seed, **kwargs)


def _engine(names: list[str], X: FloatArray, score_fn: ScoreFn, test: str, pairs: Any, n_samples: int | None,
            seed: int | None, ci: float, n_confidence: int, max_bytes: int
            ) -> tuple[list[DifferenceTest], FloatArray | None]:
    """:func:`differences` on stacked statistics; also returns the resampled scores ``R[S, B]`` (bs: the test's
    resamples; ar: the confidence bootstrap drawn after the masks, or None)."""
    test = check_test(test)
    n = samples_for(test, n_samples)
    seed = check_seed(seed)
    level = check_level(ci)
    idx_pairs = pair_indices(names, pairs)
    ia = np.array([a for a, _ in idx_pairs], dtype=np.intp)
    ib = np.array([b for _, b in idx_pairs], dtype=np.intp)
    actual = np.asarray(score_fn(X.sum(axis=1)), dtype=np.float64)  # [S]
    delta = actual[ib] - actual[ia]
    delta_abs = np.abs(actual[ia] - actual[ib])  # sacrebleu: abs(bl_result.score - sys_score.score)
    resample = _resample_fn(score_fn)
    R = None
    lo = hi = np.full(ia.size, np.nan)
    if test == "bs":
        R = resampled_scores(X, resample, n, seed, max_bytes=max_bytes)
        counts = _bs_counts(R, ia, ib, delta_abs)
        if ia.size:
            lo, hi = percentile_interval(R[ib] - R[ia], level)
    else:
        rng = generator(seed)
        counts = _ar_counts(X, rng, n, ia, ib, delta_abs, score_fn, max_bytes)
        if n_confidence:
            nc = check_n_samples(n_confidence, "n_confidence")
            R = resampled_scores(X, resample, nc, rng=rng, max_bytes=max_bytes)
            if ia.size:
                lo, hi = percentile_interval(R[ib] - R[ia], level)
    p = np.array([(int(c) + 1) / (n + 1) for c in counts])
    ph = holm(p)
    name = TEST_NAMES[test]
    comps = [
        DifferenceTest(name, names[a], names[b], float(actual[a]), float(actual[b]), float(delta[j]),
                   float(delta_abs[j]), float(p[j]), float(lo[j]), float(hi[j]), n, seed, float(ph[j]))
        for j, (a, b) in enumerate(idx_pairs)
    ]
    return comps, R


# ---------------------------------------------------------------------------------------------------------------
# sacrebleu's paired test (baseline vs each system)
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedResult:
    """One line of sacrebleu's paired-test output (the baseline first).

    ``score``: actual BLEU; ``p_value``: vs the baseline (None for the baseline); ``mean``/``ci``: bootstrap
    mean and half-width (bs always, ar only with ``confidence``; None otherwise); ``ci_low``/``ci_high`` =
    ``mean -+ ci``. ``delta``, ``delta_low``/``delta_high``: the difference to the baseline and its interval.
    """

    name: str
    score: float
    p_value: float | None
    mean: float | None
    ci: float | None
    baseline: bool
    test: str
    n_samples: int
    seed: int | None
    delta: float | None = None
    delta_low: float | None = None
    delta_high: float | None = None
    q_low: float | None = None
    q_high: float | None = None
    outcome: DifferenceTest | None = field(default=None, repr=False, compare=False)

    @property
    def ci_low(self) -> float | None:
        return None if self.mean is None or self.ci is None else self.mean - self.ci

    @property
    def ci_high(self) -> float | None:
        return None if self.mean is None or self.ci is None else self.mean + self.ci

    def significant(self, alpha: float = 0.05) -> bool:
        """sacrebleu's star: ``not p > alpha`` (so p == alpha is starred); never for the baseline."""
        return self.p_value is not None and not self.p_value > alpha


def paired_test(systems: Sequence[tuple[str, Any]], score_fn: Any, test: str = "bs",
                n_samples: int | None = None, seed: int | None = DEFAULT_SEED, confidence: bool = False, *,
                n_confidence: int = DEFAULT_CONFIDENCE_SAMPLES, ci: float = 0.95,
                max_bytes: int = DEFAULT_MAX_BYTES) -> list[PairedResult]:
    """sacrebleu's ``--paired-bs`` / ``--paired-ar``: the first system is the baseline, every other is compared
    to it. Numbers equal ``sacrebleu.significance.PairedTest`` (``n_samples`` None = 1000 bs, 10000 ar) with
    ``SACREBLEU_SEED=seed`` when ``score_fn`` is a BLEU score function (or resolved ``BleuOptions``).

    bs always reports bootstrap means and CIs (sacrebleu does); ``confidence`` adds them in AR mode, with
    sacrebleu's ``n_ar_confidence`` resampling (``n_confidence`` resamples; see the module docstring).
    """
    score_fn = _callable(score_fn)
    test = check_test(test)
    n = samples_for(test, n_samples)
    names, X = stack_systems(systems, score_fn)
    if len(names) < 2:
        raise InputError("paired tests need at least two systems (the first is the baseline)")
    if test == "bs":
        check_memory(n * len(names), f"the paired bootstrap of {len(names)} systems", per_sample=len(names))
    nc = check_n_samples(n_confidence, "n_confidence") if (test == "ar" and confidence) else 0
    comps, R = _engine(names, X, score_fn, test, "baseline", n, seed, ci, nc, max_bytes)
    if R is not None and test == "ar":
        # sacrebleu: the baseline's CI comes from a fresh generator (_bootstrap_resample), the systems' from
        # the draw after the AR masks (which R holds).
        R = R.copy()
        R[0] = resampled_scores(X[:1], _resample_fn(score_fn), nc, seed, max_bytes=max_bytes)[0]
    ci_of: list[tuple[float | None, float | None, float | None, float | None]]
    if R is not None:
        mean, half, qlo, qhi = _estimate_ci(R)
        ci_of = [(float(mean[s]), float(half[s]), float(qlo[s]), float(qhi[s])) for s in range(len(names))]
    else:
        ci_of = [(None, None, None, None)] * len(names)
    name = TEST_NAMES[test]
    (m0, h0, l0, u0) = ci_of[0]
    out = [PairedResult(names[0], comps[0].value_a, None, m0, h0, True, name, n, seed, q_low=l0, q_high=u0)]
    for j, c in enumerate(comps, start=1):
        m, h, lo, hi = ci_of[j]
        has = R is not None
        out.append(PairedResult(names[j], c.value_b, c.p_value, m, h, False, name, n, seed, c.delta,
                                c.ci_low if has else None, c.ci_high if has else None, lo, hi, c))
    return out


# ---------------------------------------------------------------------------------------------------------------
# Significance clusters
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterRow:
    """One system's place in the significance clusters: ``rank`` (1 = best), ``cluster`` (1 = top), ``head``
    (the cluster's best system) and ``p_vs_head`` (None for a head)."""

    system: str
    score: float
    rank: int
    cluster: int
    head: str
    p_vs_head: float | None


def significance_clusters(comparisons: Sequence[DifferenceTest], scores: Mapping[str, float] | None = None,
                          alpha: float = 0.05, holm_adjusted: bool = False) -> list[ClusterRow]:
    """Group systems into significance clusters: rank by BLEU (descending, ties by name); the best system opens
    cluster 1; walking down the ranking, a system opens a new cluster (and becomes its head) when it is
    significantly worse than the head of the current cluster (``p < alpha``, raw p-values unless
    ``holm_adjusted``).

    Holm over ``m`` pairs can only reject when ``m / (n_samples + 1) < alpha`` (the smallest p of a resampling
    test is ``1 / (n_samples + 1)``): all 190 pairs of 20 systems need more than 3800 resamples at 0.05.
    ``comparisons`` must hold every pair needed between heads and the systems below them; ``scores`` default to
    the values found there.
    """
    pv: dict[tuple[str, str], float] = {}
    sc: dict[str, float] = dict(scores or {})
    for c in comparisons:
        pv[(c.a, c.b)] = pv[(c.b, c.a)] = float(c.p_holm if holm_adjusted else c.p_value)
        if scores is None:
            sc.setdefault(c.a, float(c.value_a))
            sc.setdefault(c.b, float(c.value_b))
    ranked = sorted(sc, key=lambda s: (-sc[s], s))
    out: list[ClusterRow] = []
    cluster, head = 0, None
    for rank, system in enumerate(ranked, start=1):
        p: float | None = None
        if head is not None:
            if (head, system) not in pv:
                raise InputError(f"no comparison between {head!r} and {system!r}; clusters need all pairs "
                                 "(use all_differences)")
            p = pv[(head, system)]
        if head is None or (p is not None and p < alpha and sc[system] < sc[head]):
            cluster, head, p = cluster + 1, system, None
        out.append(ClusterRow(system, sc[system], rank, cluster, str(head), p))
    return out
