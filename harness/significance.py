"""Statistical significance of BLEU differences, over per-segment sufficient statistics only.

Single-system bootstrap confidence intervals, paired bootstrap resampling (``bs``), paired approximate
randomization (``ar``) and the paper's block t-test (``block_t``, computed by
:func:`harness.correlation.block_protocol`), plus what sacrebleu does not offer: all-pairs comparisons with
Holm-Bonferroni correction, a confidence interval for every *difference*, and significance clusters.

Pure core: numpy in, dataclasses and dict rows out (scipy only for the block t-test, imported lazily). Nothing
here tokenizes, reads files or looks at the environment; every random procedure takes an explicit ``seed``.

Array conventions (shared with :mod:`harness.stats`, :mod:`harness.bleu`, :mod:`harness.correlation`)
----------------------------------------------------------------------------------------------------------
- One system = a float64 matrix ``[n, K]`` of per-segment statistics ``[hyp_len, ref_len, correct_1..N,
  total_1..N]`` (``SegmentStats.matrix(rule)``; ``K = 2 + 2N``). Systems are stacked ``X[S, n, K]``.
- ``score_fn(sums[..., K]) -> scores[...]`` maps summed statistics of any leading shape to BLEU (0-100). Use
  :func:`bleu_score_fn` (a :class:`BleuScoreFn`) for sacrebleu-exact numbers; any vectorised callable works.
- Resampled sums are matrix products: a bootstrap resample is a vector of segment counts ``c[n]`` and its sums
  for every system at once are ``c @ X.reshape(n, S*K)``; an AR trial is a 0/1 mask ``m[n]`` and
  ``m @ X`` gives, by linearity, the shuffled pseudo-systems of *every pair* (``A = m@Xa - m@Xb + sum(Xb)``,
  ``B = sum(Xa) - m@Xa + m@Xb``). Counts and masks are integers, so every sum is exact in float64 (the same
  integers sacrebleu sums). Resamples are processed in chunks of at most ``max_bytes`` of temporaries.

RNG contract (sacrebleu 2.x ``sacrebleu/significance.py``, reproduced call for call)
---------------------------------------------------------------------------------
- Generator: ``numpy.random.default_rng(seed)``; default ``seed = 12345`` (sacrebleu's ``SACREBLEU_SEED``
  default). ``seed=None`` draws OS entropy.
- Paired bootstrap (``bs``, default 1000 resamples): ``idx = default_rng(seed).choice(n, size=(B, n),
  replace=True)``; sacrebleu re-creates the generator for every system with the same seed, so every system and
  the baseline are scored on the *same* ``idx`` (drawn here once and shared; the baseline's separate
  ``_bootstrap_resample`` draw is the same first call of a fresh generator, hence the same ``idx``).
- Approximate randomization (``ar``, default 10000 trials): ``mask = default_rng(seed).integers(2, size=(T, n),
  dtype=bool)``, one call (chunked draws would change the stream); segment ``i`` of trial ``t`` swaps the two
  systems' statistics where ``mask[t, i]`` is False (sacrebleu's ``pos_sel @ bl + neg_sel @ sys``).
  With ``confidence`` (sacrebleu's ``n_ar_confidence``, default 1000 resamples) the *systems'* bootstrap
  indices are the *next* call on that same generator, ``rng.choice(n, size=(C, n), replace=True)``, while the
  *baseline's* CI comes from a fresh ``default_rng(seed).choice(...)``: in AR mode the baseline's and the
  systems' CIs are therefore drawn from different resamples (a sacrebleu quirk we reproduce).
- Single-system CI (``--confidence``, :func:`bootstrap_ci`): ``default_rng(seed).choice(n, (B, n))``.
- Statistics and p-values: bs: ``d_i = |BLEU_b,i - BLEU_a,i|``, ``p = (#{d_i - mean(d) > |delta|} + 1) / (B + 1)``;
  ar: ``p = (#{|BLEU(A_t) - BLEU(B_t)| > |delta|} + 1) / (T + 1)`` (strict ``>``, the ``+1`` of MultEval). Both
  are two-sided ("different", not "better"). The smallest reportable p is ``1 / (n + 1)``.
- Per-system interval (sacrebleu's ``estimate_ci``): sort the resampled scores, ``lo = s[B // 40]``,
  ``hi = s[B - B // 40 - 1]``, report ``mean(s) +- (hi - lo) / 2`` (``ci`` is that half-width; ``ci_low`` /
  ``ci_high`` here are ``mean -+ ci``, the interval sacrebleu prints; ``q_low``/``q_high`` are ``lo``/``hi``).
- sacrebleu's quirks, documented (and reproduced where they change numbers):

  * ``SACREBLEU_SEED``: the string ``none`` (any case) means OS entropy; anything else goes through ``int()``.
    ``SACREBLEU_SEED=0`` is silently *unseeded* for the paired tests (``seed if seed else None``) but seeded
    for the baseline CI and for ``--confidence``; :func:`sacrebleu_seed` parses the variable, here ``0`` is an
    ordinary seed. Unseeded, sacrebleu draws fresh indices per system; we draw one shared set (unseeded runs
    cannot be compared to anything anyway).
  * Bootstrap resamples (bs, the AR confidence bootstrap and ``--confidence``) are scored from *float32*
    statistics, so their n-gram precisions are float32-rounded (``100. * correct / total`` in float32); this moves
    resampled BLEU by ~1e-6. :class:`BleuScoreFn` reproduces it (``sacrebleu_float32=True``, the default for
    the sacrebleu profile). AR trials sum int64 statistics and are float64, like the actual scores.
  * The bs statistic centres the *absolute* resampled differences (``|d_i| - mean|d|``), as the Moses script.
  * A system identical to the baseline gets ``p = 1 / (n + 1)`` (every resampled difference is 0 and
    ``0 > 0`` is false): "significantly different" from itself, by design of MultEval's strict ``>``.
  * The text output stars ``p <= 0.05`` (it colours ``p > 0.05`` red) although it says "p-values < 0.05".
  * ``--confidence`` (single system) averages with ``statistics.mean`` (exact), the paired tests with
    ``numpy.mean`` of the sorted scores; both are reproduced.

Rows
----
:class:`Comparison` ``.as_row()`` gives the DESIGN 1.7 ``significance`` columns: ``refset``, ``variant`` (the
caller fills them), ``test`` (``paired_bs`` / ``paired_ar`` / ``block_t``), ``system_a``, ``system_b``,
``delta`` (BLEU of b minus a), ``statistic``, ``p_value``, ``ci_low``, ``ci_high`` (the interval of the
*difference*), plus ``p_holm``, ``n_samples``, ``seed``, ``score_a``, ``score_b``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from .errors import ConfigError, InputError

FloatArray = NDArray[np.float64]
ScoreFn = Callable[[FloatArray], FloatArray]

DEFAULT_SEED = 12345
#: sacrebleu's ``PairedTest._DEFAULT_SAMPLES``.
DEFAULT_SAMPLES: dict[str, int] = {"bs": 1000, "ar": 10000}
#: Resamples of the bootstrap behind CIs in AR mode (sacrebleu ``n_ar_confidence=0`` -> 1000) and ``--confidence``.
DEFAULT_CONFIDENCE_SAMPLES = 1000
TESTS: tuple[str, ...] = ("bs", "ar")
#: The ``test`` column of the significance table.
TEST_NAMES: dict[str, str] = {"bs": "paired_bs", "ar": "paired_ar", "block_t": "block_t"}
PAIR_MODES: tuple[str, ...] = ("baseline", "all")
# Budget for the temporaries of one chunk of resamples (counts/masks, sums, scores).
DEFAULT_MAX_BYTES = 256 << 20
# At most this many resamples / trials per chunk: small chunks stay in cache and reuse one buffer (faster than
# one huge product on this kind of machine).
_CHUNK_ROWS = 1024

_LOG_ZERO = -9999999999.0  # sacrebleu.utils.my_log(0)


# ---------------------------------------------------------------------------------------------------------------
# Score functions
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BleuScoreFn:
    """BLEU of summed statistics under resolved options: ``fn(sums[..., K]) -> scores[...]`` (float64).

    :meth:`resampled` is what bootstrap resamples are scored with: with ``sacrebleu_float32`` (and a profile that
    uses sacrebleu's formula without custom weights) it reproduces sacrebleu's float32 precisions; otherwise it
    is the same function. Paired tests look for ``resampled`` on any score function (``getattr``).
    """

    opts: Any  # harness.bleu.BleuOptions
    sacrebleu_float32: bool = True

    def __call__(self, sums: Any) -> FloatArray:
        from .bleu import get_profile

        return np.asarray(get_profile(self.opts.profile).from_sums(sums, self.opts).score, dtype=np.float64)

    @property
    def emulates_float32(self) -> bool:
        from .bleu import get_profile, sacrebleu_formula

        return (self.sacrebleu_float32 and self.opts.weights is None
                and get_profile(self.opts.profile).formula is sacrebleu_formula)

    def resampled(self, sums: Any) -> FloatArray:
        if self.emulates_float32:
            return sacrebleu_float32_scores(sums, self.opts)
        return self(sums)


def bleu_score_fn(opts: Any, *, sacrebleu_float32: bool = True) -> BleuScoreFn:
    """The score function of resolved :class:`~harness.bleu.BleuOptions` (see :class:`BleuScoreFn`)."""
    return BleuScoreFn(opts, sacrebleu_float32)


def _resample_fn(score_fn: ScoreFn) -> ScoreFn:
    return getattr(score_fn, "resampled", score_fn)


def sacrebleu_float32_scores(sums: Any, opts: Any) -> FloatArray:
    """sacrebleu 2.x ``BLEU._compute_score_from_stats`` on *float32* summed statistics, vectorised.

    This is how sacrebleu scores bootstrap resamples (``np.array(stats, dtype='float32')[idxs].sum(0)``): lengths go
    through ``int()`` (float64 brevity penalty), but ``100. * correct / total`` and the smoothed precisions are
    float32 operations (NumPy's weak Python scalars), then ``math.log`` of each precision is summed left to right
    and ``bp * exp(sum / eff_order)`` is float64. Sums must be integers below 2**24 (where float32 sums are exact).
    """
    order = int(opts.max_ngram_order)
    s = np.asarray(sums, dtype=np.float64)
    if s.shape[-1] != 2 + 2 * order:
        raise InputError(f"statistics have {s.shape[-1]} columns, expected 2 + 2 * {order}")
    c, r = s[..., 0], s[..., 1]
    correct = s[..., 2:2 + order].astype(np.float32)
    total = s[..., 2 + order:2 + 2 * order].astype(np.float32)
    method, k = opts.smooth_method, opts.smooth_value
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        bp = np.where(c < r, np.where(c > 0, np.exp(1.0 - r / np.where(c > 0, c, 1.0)), 0.0), 1.0)
        nothing = ~(correct != 0).any(axis=-1)  # `if not any(correct)`: before add-k touches anything
        if method == "add-k":
            correct[..., 1:] = correct[..., 1:] + np.float32(k)
            total[..., 1:] = total[..., 1:] + np.float32(k)
        stopped = np.logical_or.accumulate(total == 0, axis=-1)
        zero = (correct == 0) & ~stopped
        safe = np.where(total == 0, np.float32(1.0), total)
        plain = (np.float32(100.0) * correct) / safe
        if method == "exp":
            smoothed = np.float32(100.0) / (np.exp2(np.cumsum(zero, axis=-1)).astype(np.float32) * safe)
        elif method == "floor":
            smoothed = np.float32(100.0 * k) / safe
        else:
            smoothed = np.zeros_like(plain)
        prec = np.where(stopped, np.float32(0.0), np.where(zero, smoothed, plain)).astype(np.float64)
        logs = np.where(prec == 0.0, _LOG_ZERO, np.log(np.where(prec == 0.0, 1.0, prec)))
        if opts.effective_order:
            n_used = (~stopped).sum(axis=-1)
            eff = np.where(n_used > 0, n_used, order)
        else:
            eff = np.full(c.shape, order)
        acc = np.zeros(c.shape)
        for j in range(order):  # Python's sum(): strictly left to right
            acc = acc + np.where(j < eff, logs[..., j], 0.0)
        score = bp * np.exp(acc / eff)
    return np.where(nothing, 0.0, score)


# ---------------------------------------------------------------------------------------------------------------
# Seeds, inputs, resampling primitives
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
        return int(text)
    except ValueError:
        raise ConfigError("seed", f"must be an integer or 'none', got {value!r}") from None


def seed_label(seed: int | None) -> str:
    """The signature value of a seed (``str(seed).lower()``: ``12345``, ``none``)."""
    return str(seed).lower()


def signature_extra(test: str, n_samples: int | None = None, seed: int | None = DEFAULT_SEED,
                    n_confidence: int | None = None) -> dict[str, str]:
    """Signature fields of a paired test, in sacrebleu's order (``bs``, ``ar``, ``seed``): pass as ``extra`` to
    :func:`harness.bleu.signature`. ``n_confidence`` (AR with CIs) adds sacrebleu's ``bs:`` field too."""
    test = _check_test(test)
    n = _n_samples(test, n_samples)
    out: dict[str, str] = {}
    if test == "bs":
        out["bs"] = str(n)
    else:
        if n_confidence:
            out["bs"] = str(n_confidence)
        out["ar"] = str(n)
    out["seed"] = seed_label(seed)
    return out


def _check_test(test: str) -> str:
    t = {"paired_bs": "bs", "paired_ar": "ar", "paired-bs": "bs", "paired-ar": "ar"}.get(test, test)
    if t not in TESTS:
        raise ConfigError("test", f"unknown paired test {test!r}", TESTS)
    return t


def _n_samples(test: str, n_samples: int | None) -> int:
    if n_samples is None or n_samples == 0:
        return DEFAULT_SAMPLES[test]
    return _positive(n_samples, "n_samples")


def _positive(n: Any, key: str) -> int:
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ConfigError(key, f"must be a positive integer, got {n!r}")
    return int(n)


def _as_matrix(stats: Any, score_fn: Any) -> FloatArray:
    if hasattr(stats, "matrix") and hasattr(stats, "truncate_order"):  # SegmentStats
        opts = getattr(score_fn, "opts", None)
        if opts is None:
            raise InputError("SegmentStats need a BleuScoreFn (to know the n-gram order and reference-length "
                             "rule); pass stats.matrix(rule) arrays with other score functions")
        return stats.truncate_order(opts.max_ngram_order).matrix(opts.ref_length)
    return np.asarray(stats, dtype=np.float64)


def stack_systems(systems: Sequence[tuple[str, Any]], score_fn: Any = None) -> tuple[list[str], FloatArray]:
    """``[(name, stats[n, K] or SegmentStats), ...]`` -> (names, ``X[S, n, K]``), checking shapes and names."""
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


def bootstrap_indices(n_segments: int, n_samples: int, seed: int | None = DEFAULT_SEED) -> NDArray[np.int64]:
    """sacrebleu's resample indices: ``default_rng(seed).choice(n_segments, size=(n_samples, n_segments))``."""
    rng = np.random.default_rng(seed)
    return rng.choice(n_segments, size=(n_samples, n_segments), replace=True)


def ar_masks(n_segments: int, n_trials: int, seed: int | None = DEFAULT_SEED,
             rng: np.random.Generator | None = None) -> NDArray[np.bool_]:
    """sacrebleu's AR selectors: ``default_rng(seed).integers(2, size=(n_trials, n_segments), dtype=bool)``."""
    rng = np.random.default_rng(seed) if rng is None else rng
    return rng.integers(2, size=(n_trials, n_segments), dtype=bool)


def _chunk_rows(total: int, bytes_per_row: int, max_bytes: int, cap: int | None = None) -> list[slice]:
    step = max(1, int(max_bytes) // max(1, int(bytes_per_row)))
    if cap is not None:
        step = min(step, cap)
    return [slice(s, min(total, s + step)) for s in range(0, total, step)]


def _exact_dtype(X: FloatArray, bound: float) -> type:
    """float32 when every partial sum of a 0/1- or count-weighted product is an integer below 2**24 (then float32
    accumulation is exact in any order, and twice as fast), else float64."""
    if bound < 2.0 ** 24 and X.min() >= 0 and np.array_equal(X, np.round(X)):
        return np.float32
    return np.float64


def resampled_sums(X: FloatArray, idx: NDArray[np.int64], max_bytes: int = DEFAULT_MAX_BYTES) -> Iterable[
        tuple[slice, FloatArray]]:
    """Yield ``(rows, sums[b, S, K])`` of every bootstrap resample ``idx[rows]`` for all systems ``X[S, n, K]``.

    Each chunk turns its index rows into segment counts (one ``bincount``) and multiplies them with the stacked
    statistics (one matrix product): exact integer sums (float32 products when they are provably exact).
    """
    s, n, k = X.shape
    dtype = _exact_dtype(X, float(n) * float(X.max(initial=0.0)))
    flat = np.ascontiguousarray(X.transpose(1, 0, 2).reshape(n, s * k), dtype=dtype)
    b_total = idx.shape[0]
    for rows in _chunk_rows(b_total, 8 * (3 * n + 2 * s * k), max_bytes, _CHUNK_ROWS):
        part = idx[rows]
        b = part.shape[0]
        counts = np.bincount((part + (np.arange(b) * n)[:, None]).ravel(), minlength=b * n)
        sums = counts.reshape(b, n).astype(dtype) @ flat
        yield rows, sums.astype(np.float64, copy=False).reshape(b, s, k)


def _resampled_scores(X: FloatArray, idx: NDArray[np.int64], fn: ScoreFn, max_bytes: int) -> FloatArray:
    """Scores ``[S, B]`` (C-contiguous per system, as sacrebleu's 1-D arrays) of every system on every resample."""
    out = np.empty((idx.shape[0], X.shape[0]))
    for rows, sums in resampled_sums(X, idx, max_bytes):
        out[rows] = fn(sums)
    return np.ascontiguousarray(out.T)


def _estimate_ci(scores: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """sacrebleu ``significance.estimate_ci`` per row: (mean of the sorted scores, half-width, lo, hi)."""
    srt = np.sort(scores, axis=-1)
    n = srt.shape[-1]
    lo_i = n // 40
    lo, hi = srt[..., lo_i], srt[..., n - lo_i - 1]
    return srt.mean(axis=-1), 0.5 * (hi - lo), lo, hi


def _percentile(values: FloatArray, level: float) -> tuple[FloatArray, FloatArray]:
    a = 100.0 * (1.0 - level) / 2.0
    lo, hi = np.percentile(values, [a, 100.0 - a], axis=-1)
    return lo, hi


def _check_level(level: float) -> float:
    if not 0.0 < float(level) < 1.0:
        raise ConfigError("ci", f"confidence level must lie strictly between 0 and 1, got {level}")
    return float(level)


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


def bootstrap_ci(stats: Any, score_fn: ScoreFn, n_samples: int = DEFAULT_CONFIDENCE_SAMPLES,
                 seed: int | None = DEFAULT_SEED, *, names: Sequence[str] | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> ConfidenceInterval | list[ConfidenceInterval]:
    """sacrebleu's ``--confidence`` (``corpus_score(n_bootstrap=n)``) over statistics ``[n, K]`` (one result) or
    ``[S, n, K]`` / a list of ``(name, stats)`` (one result per system, all on the same resamples)."""
    if not callable(score_fn):
        score_fn = bleu_score_fn(score_fn)
    n_samples = _positive(n_samples, "n_samples")
    single = False
    if isinstance(stats, (list, tuple)) and stats and isinstance(stats[0], tuple):
        names_, X = stack_systems(stats, score_fn)
    else:
        arr = np.asarray(_as_matrix(stats, score_fn), dtype=np.float64)
        single = arr.ndim == 2
        X = arr[None] if single else arr
        if X.ndim != 3:
            raise InputError(f"statistics must have shape [n, K] or [S, n, K], got {arr.shape}")
        names_ = [str(i) for i in range(X.shape[0])] if names is None else [str(x) for x in names]
    idx = bootstrap_indices(X.shape[1], n_samples, seed)
    res = _resampled_scores(X, idx, _resample_fn(score_fn), max_bytes)
    actual = np.asarray(score_fn(X.sum(axis=1)), dtype=np.float64)
    out = []
    lo_i = n_samples // 40
    for s in range(X.shape[0]):
        raw = sorted(float(v) for v in res[s])  # sacrebleu Score.estimate_ci: sorted() + statistics.mean
        lo, hi = raw[lo_i], raw[n_samples - lo_i - 1]
        out.append(ConfidenceInterval(names_[s], float(actual[s]), float(statistics.mean(raw)), 0.5 * (hi - lo),
                                      lo, hi, n_samples, seed))
    return out[0] if single else out


# ---------------------------------------------------------------------------------------------------------------
# Pairwise comparisons (the engine), Holm correction
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """One pair of systems under one test; ``delta = score_b - score_a``.

    ``statistic``: the test statistic (bs / ar: the observed ``|delta|``; block_t: paired t of b vs a).
    ``ci_low``/``ci_high``: interval of the difference b - a (bs: percentile over the paired resamples; ar: the
    same over a paired bootstrap of ``n_confidence`` resamples; block_t: t-interval), NaN when not computed.
    ``p_holm``: Holm-Bonferroni adjusted p over the comparisons returned together.
    """

    test: str
    system_a: str
    system_b: str
    score_a: float
    score_b: float
    delta: float
    statistic: float
    p_value: float
    ci_low: float
    ci_high: float
    p_holm: float
    n_samples: int
    seed: int | None

    def as_row(self, refset: str | None = None, variant: str | None = None) -> dict[str, Any]:
        """The DESIGN 1.7 ``significance`` row (``refset``/``variant`` are the caller's)."""
        return {
            "refset": refset, "variant": variant, "test": self.test, "system_a": self.system_a,
            "system_b": self.system_b, "delta": self.delta, "statistic": self.statistic, "p_value": self.p_value,
            "ci_low": self.ci_low, "ci_high": self.ci_high, "p_holm": self.p_holm, "n_samples": self.n_samples,
            "seed": self.seed, "score_a": self.score_a, "score_b": self.score_b,
        }


def rows(comparisons: Iterable[Comparison], refset: str | None = None, variant: str | None = None) -> list[dict]:
    """``[c.as_row(refset, variant) for c in comparisons]``."""
    return [c.as_row(refset, variant) for c in comparisons]


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


def _pairs(names: Sequence[str], pairs: str | Sequence[tuple[Any, Any]]) -> list[tuple[int, int]]:
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


def _bs_p_values(R: FloatArray, ia: NDArray[np.intp], ib: NDArray[np.intp], delta_abs: FloatArray,
                 chunk: int = 4096) -> NDArray[np.int64]:
    """Counts ``#{|d_i| - mean|d| > |delta|}`` per pair (sacrebleu's exact operation order, per row)."""
    counts = np.empty(ia.size, dtype=np.int64)
    for start in range(0, ia.size, chunk):
        sl = slice(start, start + chunk)
        d = np.abs(R[ib[sl]] - R[ia[sl]])
        centred = d - d.mean(axis=1, keepdims=True)
        counts[sl] = (centred > delta_abs[sl, None]).sum(axis=1)
    return counts


def _ar_counts(X: FloatArray, mask: NDArray[np.bool_], ia: NDArray[np.intp], ib: NDArray[np.intp],
               delta_abs: FloatArray, fn: ScoreFn, max_bytes: int) -> NDArray[np.int64]:
    """``#{|BLEU(A_t) - BLEU(B_t)| > |delta|}`` per pair, all pairs from one product ``mask @ X`` per chunk.

    ``mask @ X_s`` sums system ``s`` over the segments where the mask is True, so pseudo-system A of pair (a, b)
    (a where True, b where False) is ``P_a - P_b + sum(X_b)`` and ``B = sum(X_a) + sum(X_b) - A``: exact integer
    arithmetic, the same sums as sacrebleu's ``pos_sel @ bl + neg_sel @ sys``.
    """
    s, n, k = X.shape
    tot = X.sum(axis=1)  # [S, K]
    dtype = _exact_dtype(X, float(tot.max(initial=0.0)))
    flat = np.ascontiguousarray(X.transpose(1, 0, 2).reshape(n, s * k), dtype=dtype)
    both = tot[ia] + tot[ib]
    p = ia.size
    counts = np.zeros(p, dtype=np.int64)
    per_row = 4 * n + 8 * (2 * s * k + 4 * p * k + 4 * p)
    chunks = _chunk_rows(mask.shape[0], per_row, max_bytes, _CHUNK_ROWS)
    buf = np.empty((chunks[0].stop - chunks[0].start, n), dtype=dtype) if chunks else None
    for rows_ in chunks:
        m = buf[: rows_.stop - rows_.start]
        np.copyto(m, mask[rows_])
        pm = (m @ flat).astype(np.float64, copy=False).reshape(-1, s, k)  # [t, S, K]
        a = pm[:, ia] - pm[:, ib] + tot[ib]  # pseudo-system A: system a where True, b where False
        counts += (np.abs(fn(a) - fn(both - a)) > delta_abs).sum(axis=0)
    return counts


def compare(systems: Sequence[tuple[str, Any]], score_fn: ScoreFn, test: str = "bs",
            pairs: str | Sequence[tuple[Any, Any]] = "all", n_samples: int | None = None,
            seed: int | None = DEFAULT_SEED, *, ci: float = 0.95,
            n_confidence: int = DEFAULT_CONFIDENCE_SAMPLES, max_bytes: int = DEFAULT_MAX_BYTES) -> list[Comparison]:
    """Paired tests between systems: every pair (``pairs='all'``), the first system against each other
    (``'baseline'``, sacrebleu's mode) or explicit ``[(a, b), ...]`` (names or indices).

    One index matrix (bs) or mask matrix (ar) from ``seed`` is shared by all systems, so the p-value of
    (baseline, X) here is exactly sacrebleu's. ``ci`` is the level of the difference intervals; in AR mode they
    come from a paired bootstrap of ``n_confidence`` resamples drawn after the masks (0 disables them).
    Holm's correction runs over the returned family.
    """
    if not callable(score_fn):
        score_fn = bleu_score_fn(score_fn)
    names, X = stack_systems(systems, score_fn)
    return _engine(names, X, score_fn, test, pairs, n_samples, seed, ci, n_confidence, max_bytes)[0]


def _engine(names: list[str], X: FloatArray, score_fn: ScoreFn, test: str, pairs: Any, n_samples: int | None,
            seed: int | None, ci: float, n_confidence: int, max_bytes: int
            ) -> tuple[list[Comparison], FloatArray | None]:
    """:func:`compare` on stacked statistics; also returns the resampled scores ``R[S, B]`` (bs: the test's
    resamples; ar: the confidence bootstrap drawn after the masks, or None)."""
    test = _check_test(test)
    n = _n_samples(test, n_samples)
    level = _check_level(ci)
    idx_pairs = _pairs(names, pairs)
    ia = np.array([a for a, _ in idx_pairs], dtype=np.intp)
    ib = np.array([b for _, b in idx_pairs], dtype=np.intp)
    actual = np.asarray(score_fn(X.sum(axis=1)), dtype=np.float64)  # [S]
    delta = actual[ib] - actual[ia]
    delta_abs = np.abs(actual[ia] - actual[ib])  # sacrebleu: abs(bl_result.score - sys_score.score)
    resample = _resample_fn(score_fn)
    R = None
    lo = hi = np.full(ia.size, np.nan)
    if test == "bs":
        R = _resampled_scores(X, bootstrap_indices(X.shape[1], n, seed), resample, max_bytes)
        counts = _bs_p_values(R, ia, ib, delta_abs)
        if ia.size:
            lo, hi = _percentile(R[ib] - R[ia], level)
    else:
        rng = np.random.default_rng(seed)
        counts = _ar_counts(X, ar_masks(X.shape[1], n, rng=rng), ia, ib, delta_abs, score_fn, max_bytes)
        if n_confidence:
            nc = _positive(n_confidence, "n_confidence")
            idx = rng.choice(X.shape[1], size=(nc, X.shape[1]), replace=True)
            R = _resampled_scores(X, idx, resample, max_bytes)
            if ia.size:
                lo, hi = _percentile(R[ib] - R[ia], level)
    p = np.array([(int(c) + 1) / (n + 1) for c in counts])
    ph = holm(p)
    name = TEST_NAMES[test]
    comps = [
        Comparison(name, names[a], names[b], float(actual[a]), float(actual[b]), float(delta[j]),
                   float(delta_abs[j]), float(p[j]), float(lo[j]), float(hi[j]), float(ph[j]), n, seed)
        for j, (a, b) in enumerate(idx_pairs)
    ]
    return comps, R


def all_pairs(systems: Sequence[tuple[str, Any]], score_fn: ScoreFn, test: str = "bs",
              n_samples: int | None = None, seed: int | None = DEFAULT_SEED, **kwargs: Any) -> list[Comparison]:
    """Every pair ``(i, j), i < j`` in the given order (see :func:`compare`), Holm-corrected together."""
    return compare(systems, score_fn, test, "all", n_samples, seed, **kwargs)


# ---------------------------------------------------------------------------------------------------------------
# sacrebleu's paired test (baseline vs each system): results for the CLI
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
    comparison: Comparison | None = field(default=None, repr=False, compare=False)

    @property
    def ci_low(self) -> float | None:
        return None if self.mean is None or self.ci is None else self.mean - self.ci

    @property
    def ci_high(self) -> float | None:
        return None if self.mean is None or self.ci is None else self.mean + self.ci

    def significant(self, alpha: float = 0.05) -> bool:
        """sacrebleu's star: ``not p > alpha`` (so p == alpha is starred); never for the baseline."""
        return self.p_value is not None and not self.p_value > alpha

    def json_fields(self, confidence: bool = False) -> dict[str, Any]:
        """The DESIGN 1.2 JSON additions: ``p_value`` (null for the baseline); with ``confidence`` also
        ``ci_low``/``ci_high`` (``mean -+ ci``), ``mean`` and ``ci`` (null where not computed)."""
        out: dict[str, Any] = {"p_value": self.p_value}
        if confidence:
            out.update({"ci_low": self.ci_low, "ci_high": self.ci_high, "mean": self.mean, "ci": self.ci})
        return out


def paired_test(systems: Sequence[tuple[str, Any]], score_fn: ScoreFn | Any, test: str = "bs",
                n_samples: int | None = None, seed: int | None = DEFAULT_SEED, confidence: bool = False, *,
                n_confidence: int = DEFAULT_CONFIDENCE_SAMPLES, ci: float = 0.95,
                max_bytes: int = DEFAULT_MAX_BYTES) -> list[PairedResult]:
    """sacrebleu's ``--paired-bs`` / ``--paired-ar``: the first system is the baseline, every other is compared
    to it. Numbers equal ``sacrebleu.significance.PairedTest`` (``n_samples`` 0/None = 1000 bs, 10000 ar)
    with ``SACREBLEU_SEED=seed`` when ``score_fn`` is a :class:`BleuScoreFn` (or resolved ``BleuOptions``).

    bs always reports bootstrap means and CIs (sacrebleu does); ``confidence`` adds them in AR mode, with
    sacrebleu's ``n_ar_confidence`` resampling (``n_confidence`` resamples; see the module docstring).
    ``delta_low``/``delta_high`` (interval of system - baseline at level ``ci``) come from the same resamples.
    """
    if not callable(score_fn):
        score_fn = bleu_score_fn(score_fn)
    test = _check_test(test)
    n = _n_samples(test, n_samples)
    names, X = stack_systems(systems, score_fn)
    if len(names) < 2:
        raise InputError("paired tests need at least two systems (the first is the baseline)")
    nc = _positive(n_confidence, "n_confidence") if (test == "ar" and confidence) else 0
    comps, R = _engine(names, X, score_fn, test, "baseline", n, seed, ci, nc, max_bytes)
    if R is not None and test == "ar":
        # sacrebleu: the baseline's CI comes from a fresh generator (_bootstrap_resample), the systems' from
        # the draw after the AR masks (which R holds).
        R = R.copy()
        R[0] = _resampled_scores(X[:1], bootstrap_indices(X.shape[1], nc, seed), _resample_fn(score_fn),
                                 max_bytes)[0]
    if R is not None:
        mean, half, qlo, qhi = _estimate_ci(R)
        ci_of = [(float(mean[s]), float(half[s]), float(qlo[s]), float(qhi[s])) for s in range(len(names))]
    else:
        ci_of = [(None, None, None, None)] * len(names)
    name = TEST_NAMES[test]
    (m0, h0, l0, u0) = ci_of[0]
    out = [PairedResult(names[0], comps[0].score_a, None, m0, h0, True, name, n, seed, q_low=l0, q_high=u0)]
    for j, c in enumerate(comps, start=1):
        m, h, lo, hi = ci_of[j]
        has = R is not None
        out.append(PairedResult(names[j], c.score_b, c.p_value, m, h, False, name, n, seed, c.delta,
                                c.ci_low if has else None, c.ci_high if has else None, lo, hi, c))
    return out


def paired_rows(results: Sequence[PairedResult], refset: str | None = None,
                variant: str | None = None) -> list[dict[str, Any]]:
    """Significance-table rows (baseline vs each system) of :func:`paired_test` results."""
    return [r.comparison.as_row(refset, variant) for r in results if r.comparison is not None]


_EXPLANATION = """\
 - Each system is pairwise compared to {baseline}.
{what}
 - Null hypothesis: the system and the baseline translations are essentially
   generated by the same underlying process. For a given system and the baseline,
   the p-value is roughly the probability of the absolute score difference (delta)
   or higher occurring due to chance, under the assumption that the null hypothesis is correct.

 - Assuming a significance threshold of 0.05, the null hypothesis can be rejected
   for p-values < 0.05 (marked with "*"). This means that the delta is unlikely to be attributed
   to chance, hence the system is significantly "different" than the baseline.

 - NOTE: Significance does not tell whether a system is "better" than the baseline but rather
   emphasizes the "difference" of the systems in terms of the replicability of the delta.
"""


def format_paired_text(results: Sequence[PairedResult], width: int = 2, signature: str | None = None,
                       metric: str = "BLEU", explain: bool = True) -> str:
    """sacrebleu-like text of :func:`paired_test` results (no colours, one line per system):

    ``Baseline: A  30.12 (30.10 ± 0.85)`` then ``B  31.02 (31.00 ± 0.88) (p = 0.0010)*``, the test header and
    explanation, and the signature (``metric|signature``) when given.
    """
    if not results:
        return ""
    first = results[0]
    has_ci = any(r.mean is not None for r in results)
    labels = [f"Baseline: {r.name}" if r.baseline else r.name for r in results]
    cells = []
    for r in results:
        cell = f"{r.score:.{width}f}"
        if r.mean is not None and r.ci is not None:
            cell += f" ({r.mean:.{width}f} ± {r.ci:.{width}f})"
        if r.p_value is not None:
            cell += f" (p = {r.p_value:.4f})" + ("*" if r.significant() else "")
        cells.append(cell)
    head = (metric + " (μ ± 95% CI)") if has_ci else metric
    name_w = max(len("System"), *(len(x) for x in labels))
    cell_w = max(len(head), *(len(x) for x in cells))
    lines = [f"{'System':>{name_w}}  {head}", f"{'-' * name_w}  {'-' * cell_w}"]
    lines += [f"{lab:>{name_w}}  {cell:<{cell_w}}".rstrip() for lab, cell in zip(labels, cells)]
    lines.append("")
    if first.test == "paired_bs":
        msg = f"Paired bootstrap resampling test with {first.n_samples} resampling trials"
        what = "   Actual system score / bootstrap estimated true mean / 95% CI are provided for each metric.\n"
    else:
        msg = f"Paired approximate randomization test with {first.n_samples} trials"
        what = ("   Actual system score / bootstrap estimated true mean / 95% CI are provided for each metric.\n"
                if has_ci else "   Actual system score is provided for each metric.\n")
    lines += ["-" * len(msg), msg, "-" * len(msg)]
    if explain:
        lines.append(_EXPLANATION.format(baseline=f"Baseline: {first.name}", what=what))
    if signature:
        lines += ["-----------------", "Metric signatures", "-----------------", f" - {metric:<10} {signature}"]
    return "\n".join(lines).rstrip() + "\n"


# ---------------------------------------------------------------------------------------------------------------
# Block t-test (the paper's protocol; computed by harness.correlation) and significance clusters
# ---------------------------------------------------------------------------------------------------------------


def block_t(systems: Sequence[tuple[str, Any]], score_fn: ScoreFn, n_blocks: int = 20, block_size: int = 25,
            pairs: str | Sequence[tuple[Any, Any]] = "neighbours", *, alpha: float = 0.05) -> list[Comparison]:
    """The paper's block t-test as :class:`Comparison` rows (``test='block_t'``).

    Block BLEU and the paired t come from :func:`harness.correlation.block_protocol` (not re-implemented here):
    ``pairs='neighbours'`` are its pairs of systems adjacent in mean-block-BLEU order; ``'all'``, ``'baseline'``
    or explicit pairs use the same block scores and t-test. ``score_a``/``score_b``/``delta`` are block means,
    ``statistic`` the t, ``ci_low``/``ci_high`` the (1 - alpha) t-interval of the mean block difference b - a,
    ``n_samples`` the number of blocks.
    """
    from .correlation import _paired_t, block_protocol

    if not callable(score_fn):
        score_fn = bleu_score_fn(score_fn)
    names, X = stack_systems(systems, score_fn)
    res = block_protocol(X, score_fn, n_blocks, block_size, systems=names, alpha=alpha)
    if isinstance(pairs, str) and pairs == "neighbours":
        idx_pairs = [(names.index(r["system_a"]), names.index(r["system_b"])) for r in res.pairs]
        found = [(r["statistic"], r["p_value"], r["ci_low"], r["ci_high"]) for r in res.pairs]
    else:
        idx_pairs = _pairs(names, pairs)
        found = [_paired_t(res.block_scores[b], res.block_scores[a], alpha) for a, b in idx_pairs]
        found = [(t, p, lo, hi) for t, p, lo, hi in found]
    ph = holm([f[1] for f in found])
    return [
        Comparison("block_t", names[a], names[b], float(res.mean[a]), float(res.mean[b]),
                   float(res.mean[b] - res.mean[a]), float(t), float(p), float(lo), float(hi), float(ph[j]),
                   int(n_blocks), None)
        for j, ((a, b), (t, p, lo, hi)) in enumerate(zip(idx_pairs, found))
    ]


def _get(row: Any, key: str) -> Any:
    return row[key] if isinstance(row, Mapping) else getattr(row, key)


def significance_clusters(comparisons: Sequence[Comparison | Mapping[str, Any]],
                          scores: Mapping[str, float] | None = None, alpha: float = 0.05,
                          p_key: str = "p_value") -> list[dict[str, Any]]:
    """Group systems into significance clusters: rank by BLEU (descending, ties by name); the best system opens
    cluster 1; walking down the ranking, a system opens a new cluster (and becomes its head) when it is
    significantly worse than the head of the current cluster (``p < alpha`` in the pair's ``p_key``: the raw
    ``p_value`` by default, or ``p_holm``; ``p_value`` is used when the rows have no ``p_key``).

    Holm over ``m`` pairs can only reject when ``m / (n_samples + 1) < alpha`` (the smallest p of a resampling
    test is ``1 / (n_samples + 1)``): all 190 pairs of 20 systems need more than 3800 resamples at 0.05, so
    with sacrebleu's 1000 every Holm-adjusted p is >= 0.19 and ``p_key='p_holm'`` gives one cluster.

    ``comparisons`` (all pairs needed between heads and the systems below them) are :class:`Comparison` objects
    or their rows; ``scores`` default to the ``score_a``/``score_b`` found there. Returns one row per system:
    ``system``, ``score``, ``rank`` (1 = best), ``cluster`` (1 = top), ``head`` (the cluster's best system),
    ``p_vs_head`` (None for a head).
    """
    pv: dict[tuple[str, str], float] = {}
    sc: dict[str, float] = dict(scores or {})
    for c in comparisons:
        a, b = str(_get(c, "system_a")), str(_get(c, "system_b"))
        try:
            p = _get(c, p_key)
        except (KeyError, AttributeError):
            p = _get(c, "p_value")
        pv[(a, b)] = pv[(b, a)] = float(p)
        if scores is None:
            sc.setdefault(a, float(_get(c, "score_a")))
            sc.setdefault(b, float(_get(c, "score_b")))
    ranked = sorted(sc, key=lambda s: (-sc[s], s))
    out: list[dict[str, Any]] = []
    cluster, head = 0, None
    for rank, system in enumerate(ranked, start=1):
        p = None
        if head is not None:
            if (head, system) not in pv:
                raise InputError(f"no comparison between {head!r} and {system!r}; clusters need all pairs "
                                 "(use all_pairs)")
            p = pv[(head, system)]
        if head is None or (p is not None and p < alpha and sc[system] < sc[head]):
            cluster, head, p = cluster + 1, system, None
        out.append({"system": system, "score": sc[system], "rank": rank, "cluster": cluster, "head": head,
                    "p_vs_head": p})
    return out


__all__ = [
    "DEFAULT_CONFIDENCE_SAMPLES", "DEFAULT_SAMPLES", "DEFAULT_SEED", "TESTS", "TEST_NAMES", "BleuScoreFn",
    "Comparison", "ConfidenceInterval", "PairedResult", "all_pairs", "ar_masks", "block_t", "bleu_score_fn",
    "bootstrap_ci", "bootstrap_indices", "compare", "format_paired_text", "holm", "paired_rows", "paired_test",
    "resampled_sums", "rows", "sacrebleu_float32_scores", "sacrebleu_seed", "seed_label",
    "significance_clusters", "signature_extra", "stack_systems",
]
