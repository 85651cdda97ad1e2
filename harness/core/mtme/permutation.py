"""Is metric B better than metric A? MTME's significance tests of the difference of two statistics (PERM-BOTH
over scores, and over pairs for acc_eq), seeded (``numpy.random.default_rng(seed)``) where MTME draws from the global
generator, with early stopping: PERM-BOTH of any statistic (:func:`perm_both_test`), and the WMT statistics' tests of
one pair, which are :mod:`.sig_matrix`'s tests of many pairs run on two metrics (the same draws, so the same
p-value a pair gets in a significance matrix)."""

from __future__ import annotations

from typing import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .draws import draw_bits, run_pairs
from .inputs import (
    _MAX_BYTES,
    FloatArray,
    SigDiff,
    Stat,
    _as_float,
    _check_average_by,
    _check_draw_args,
    _check_metric_present,
    _check_same_shape,
    _check_variant,
)
from .sig_matrix import acc_eq_pairs, pairwise_accuracy_pairs, pearson_pairs, soft_pairwise_accuracy_pairs, zscore_valid
from .tau_optimization import acc_eq


def _run_draws(n_draws: int, chunk: int, draw: Callable[[int], FloatArray], delta: float, block_size: int,
               early_min: float, early_max: float) -> SigDiff:
    """One test's draw loop (:func:`~harness.core.mtme.draws.run_pairs` with one pair)."""
    return run_pairs([delta], n_draws, chunk, lambda k, _live: np.asarray(draw(k)).reshape(k, 1), block_size,
                     early_min, early_max)[0]


def _perm_both_inputs(metric_a: ArrayLike, metric_b: ArrayLike, human: ArrayLike, n_draws: int, block_size: int,
                      zscore: bool) -> tuple[FloatArray, FloatArray, FloatArray, NDArray[np.bool_], int]:
    """Checked PERM-BOTH inputs: ``(a, b, human, valid, extra)`` (``extra`` trailing metric dimensions)."""
    _check_draw_args(n_draws, block_size)
    h = np.asarray(human, dtype=np.float64)
    a = np.asarray(metric_a, dtype=np.float64)
    b = np.asarray(metric_b, dtype=np.float64)
    _check_same_shape(a, b, "metric_a and metric_b")
    if a.shape[:h.ndim] != h.shape:
        raise ValueError(f"metrics must have the shape of human {h.shape} (+ trailing dims), got {a.shape}")
    valid = ~np.isnan(h)
    extra = a.ndim - h.ndim
    vfull = valid.reshape(valid.shape + (1,) * extra)
    for arr, name in ((a, "metric_a"), (b, "metric_b")):
        if np.isnan(np.where(vfull, arr, 0.0)).any():
            raise ValueError(f"{name} has NaN where the human score is present")
    if zscore:
        if extra:
            raise ValueError("zscore needs metrics of the human's shape (pass zscore=False for statistics)")
        a, b = zscore_valid(np.stack([a, b]), valid)
    return a, b, h, valid, extra


def _draw_chunk(n_draws: int, batched: bool, size: int) -> int:
    """Draws per chunk (memory only: a draw is the same in any chunk, :mod:`.draws`)."""
    return max(1, min(n_draws, 64 if not batched else n_draws, _MAX_BYTES // (3 * 8 * max(size, 1))))


def _swaps(rng: np.random.Generator, k: int, valid: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """The swap decisions of ``k`` draws (``[k, *valid.shape]``): fair coins, never on an entry without a human
    score."""
    return draw_bits(rng, k, valid.shape) & valid


def perm_both_test(
    metric_a: ArrayLike,
    metric_b: ArrayLike,
    human: ArrayLike,
    stat: Stat,
    *,
    n_draws: int = 1000,
    seed: int = 12345,
    zscore: bool = True,
    batched: bool = False,
    block_size: int = 1000,
    early_min: float = 0.02,
    early_max: float = 0.5,
) -> SigDiff:
    """PERM-BOTH permutation test (Deutsch et al. 2021): MTME ``stats.PermutationSigDiff``.

    Is ``stat(B)`` better than ``stat(A)``? ``human`` has the shape of the items (``[S, n]`` segments or ``[S]``
    systems); ``metric_a``/``metric_b`` have that shape, or that shape plus trailing dimensions (e.g. sufficient
    statistics ``[S, n, K]``, then pass ``zscore=False``). MTME's procedure:

    1. with ``zscore`` each metric is z-scored (``scipy.stats.zscore``, ddof=0) over its entries with a human score,
       taken in MTME's packed system-major order; entries without a human score become NaN (never swapped);
    2. ``delta = stat(B) - stat(A)``;
    3. each draw swaps every (human-scored) entry's two metric scores independently with probability 1/2 and
       recomputes both statistics; ``p = #{stat(B') - stat(A') >= delta} / draws``: one-sided, no ``+1``;
    4. early stopping as MTME's ``PermutationSigDiffParams``: after every ``block_size`` draws stop if the running
       p-value is ``< early_min`` or ``> early_max`` (MTME's default ``block_size=1000`` with 1000 draws never stops
       early; WMT tasks use ``block_size=100``).

    ``stat(metric, human) -> float``; with ``batched=True``, ``stat(metric[B, ...], human) -> [B]`` and draws are
    evaluated in chunks. Draws come from ``default_rng(seed)`` (MTME: global ``np.random.binomial``), so p-values
    are not MTME's bit for bit. A non-finite ``delta`` gives ``p = NaN`` (MTME would report 0). For Pearson use
    :func:`pearson_test` (the same draws and p-values, without building the swapped metrics).
    """
    a, b, h, valid, extra = _perm_both_inputs(metric_a, metric_b, human, n_draws, block_size, zscore)

    def evaluate(ms: FloatArray) -> FloatArray:  # ms[B, ...]
        if batched:
            return np.asarray(stat(ms, h), dtype=np.float64).reshape(ms.shape[0])
        return np.array([float(stat(x, h)) for x in ms])

    delta = float(evaluate(b[None])[0] - evaluate(a[None])[0])
    rng = np.random.default_rng(seed)

    def draw(k: int) -> FloatArray:
        swap = _swaps(rng, k, valid)
        swap = swap.reshape(swap.shape + (1,) * extra)
        ma, mb = np.where(swap, b, a), np.where(swap, a, b)
        return evaluate(mb) - evaluate(ma)

    return _run_draws(int(n_draws), _draw_chunk(n_draws, batched, a.size), draw, delta, int(block_size), early_min,
                      early_max)


def pearson_test(
    metric_a: ArrayLike,
    metric_b: ArrayLike,
    human: ArrayLike,
    *,
    n_draws: int = 1000,
    seed: int = 12345,
    zscore: bool = True,
    block_size: int = 1000,
    early_min: float = 0.02,
    early_max: float = 0.5,
) -> SigDiff:
    """PERM-BOTH of Pearson r (system level ``[S]`` or pooled segment level ``[S, n]``): :func:`perm_both_test`
    with :func:`pearson_rows` (``batched=True``), the same draws and hence the same p-values, without building the
    swapped metrics.

    Every sum Pearson needs is linear in a draw's swap decisions, so one matrix product of the decisions gives
    both correlations of every draw (:func:`~.sig_matrix.pearson_pairs`, the test of one pair). The values agree
    with :func:`pearson_rows` to about 1e-13, and a draw that swaps nothing gives ``delta`` exactly. A metric whose
    variance is below 1e-12 of its sum of squares counts as constant (r is NaN:
    :func:`harness.core.correlation.pearson_from_sums`).
    """
    return pearson_pairs(np.stack(_checked_pair(metric_a, metric_b)), human, [(1, 0)], n_draws=n_draws, seed=seed,
                         zscore=zscore, block_size=block_size, early_min=early_min, early_max=early_max)[0]


def _checked_pair(metric_a: ArrayLike, metric_b: ArrayLike) -> tuple[FloatArray, FloatArray]:
    a = np.asarray(metric_a, dtype=np.float64)
    b = np.asarray(metric_b, dtype=np.float64)
    _check_same_shape(a, b, "metric_a and metric_b")
    return a, b


def pearson_rows(ms: ArrayLike, human: ArrayLike) -> FloatArray:
    """Pearson r of every row of ``ms[B, ...]`` (each of ``human``'s shape) with ``human``, over the entries where
    both are finite (the rows share their NaN positions, as :func:`perm_both_test`'s draws do); NaN with fewer than
    3 entries or a constant side. The ``batched`` statistic of :func:`perm_both_test` for Pearson: np.corrcoef's
    value to a few ulps, each row reduced alone (its value does not depend on the other rows of the batch)."""
    h = np.asarray(human, dtype=np.float64).ravel()
    m = np.asarray(ms, dtype=np.float64)
    x = m.reshape(m.shape[0], -1)
    ok = np.isfinite(h) & np.isfinite(x).all(axis=0)
    out = np.full(x.shape[0], np.nan)
    y = h[ok]
    if y.size < 3 or np.ptp(y) == 0:
        return out
    x = x[:, ok]
    xm = x - x.mean(axis=1, keepdims=True)
    ym = y - y.mean()
    sxx = (xm * xm).sum(axis=1)
    live = sxx > 0
    out[live] = np.clip((xm[live] * ym).sum(axis=1) / np.sqrt(sxx[live] * (ym @ ym)), -1.0, 1.0)
    return out


def pairwise_accuracy_test(
    metric_a_sys: ArrayLike,
    metric_b_sys: ArrayLike,
    human_sys: ArrayLike,
    *,
    lp_sizes: tuple[int, ...] | list[int] | None = None,
    n_draws: int = 1000,
    seed: int = 12345,
    block_size: int = 1000,
    early_min: float = 0.02,
    early_max: float = 0.5,
) -> SigDiff:
    """PERM-BOTH test of (global) pairwise accuracy: MTME ``CompareMetricsWithGlobalAccuracy`` significance.

    System-level vectors ``[S]``; with ``lp_sizes`` they are several language pairs concatenated (as MTME's merged
    correlations), z-scored jointly, and the statistic is :func:`global_pairwise_accuracy`. See
    :func:`perm_both_test` (vectorised here).
    """
    a, b = _checked_pair(_as_float(metric_a_sys, "metric_a_sys", 1), _as_float(metric_b_sys, "metric_b_sys", 1))
    return pairwise_accuracy_pairs(np.stack([a, b]), _as_float(human_sys, "human_sys", 1), [(1, 0)],
                                   lp_sizes=lp_sizes, n_draws=n_draws, seed=seed, block_size=block_size,
                                   early_min=early_min, early_max=early_max)[0]


def soft_pairwise_accuracy_test(
    metric_a_seg: ArrayLike,
    metric_b_seg: ArrayLike,
    human_seg: ArrayLike,
    *,
    n_draws: int = 1000,
    seed: int = 12345,
    n_permutations: int = 1000,
    pce_seed: int = 4,
    block_size: int = 1000,
    early_min: float = 0.02,
    early_max: float = 0.5,
) -> SigDiff:
    """PERM-BOTH test of soft pairwise accuracy: MTME ``CompareMetricsWithPairwiseConfidenceError`` significance.

    MTME (``perm_test='scores'``) runs ``PermutationSigDiff`` with ``PairwiseConfidenceError`` as the statistic
    and ``average_by='none'``: it keeps the human-scored entries (here the :func:`complete_block`), z-scores each
    metric over them, and each draw swaps entries between the two z-scored metrics and recomputes both soft
    pairwise accuracies (each with MTME's fixed seed-4 sign matrix; the human p-values never change). ``delta``
    is computed exactly as MTME does (on the z-scored metrics); each draw's pair of statistics is MTME's float32
    computation up to the rounding of the permuted sums (:func:`~.sig_matrix.soft_pairwise_accuracy_pairs`, the
    test of one pair). The swap masks come from ``default_rng(seed)`` instead of MTME's global ``np.random``.
    """
    h = _as_float(human_seg, "human_seg", 2)
    a, b = _checked_pair(metric_a_seg, metric_b_seg)
    return soft_pairwise_accuracy_pairs(np.stack([a, b]), h, [(1, 0)], n_draws=n_draws, seed=seed,
                                        n_permutations=n_permutations, pce_seed=pce_seed, block_size=block_size,
                                        early_min=early_min, early_max=early_max)[0]


def acc_eq_pairs_test(
    metric_a: ArrayLike,
    metric_b: ArrayLike,
    human: ArrayLike,
    *,
    variant: str = "acc23",
    average_by: str = "item",
    epsilon_a: float | None = None,
    epsilon_b: float | None = None,
    n_draws: int = 1000,
    seed: int = 12345,
    replace_nans_with_zeros: bool = False,
    block_size: int = 1000,
    early_min: float = 0.02,
    early_max: float = 0.5,
) -> SigDiff:
    """Pair-swap permutation test for acc_eq: MTME ``stats.PairwisePermutationSigDiff`` (``perm_test='pairs'``).

    MTME's procedure, which WMT23/24/25 use for segment-level acc_eq:

    1. each metric's epsilon is optimised *once*, on the real data (:func:`acc_eq` = ``KendallWithTiesOpt`` with
       ``sample_rate=1.0``), unless given; it is **not** re-optimised per draw;
    2. per group (item), every system pair's outcome under each metric is fixed: metric differences with
       ``|d| <= epsilon`` are ties (``PairwiseDiffs``); groups are the human-scored entries of each item;
    3. ``delta = mean_items(variant(B)) - mean_items(variant(A))`` (``np.average`` of the non-NaN item values);
    4. each draw swaps, independently with probability 1/2 for every pair of every item, the two metrics'
       *pairwise outcomes* (not their scores) and recomputes both means; ``p = #{delta' >= delta} / draws``.

    One coin per pair of every item, as MTME; an item's statistics depend on the swaps only through how many
    outcomes each metric gets from the other, counted for all items at once (:func:`~.sig_matrix.acc_eq_pairs`,
    the test of one pair). Early stopping reproduces MTME's quirk: the block check runs only on draws that counted
    as ``>= delta``. Items with fewer than 2 human scores are skipped (MTME would
    divide by zero on an item with exactly one). ``variant`` may be 'acc23', '23' or 'b' ('c' is undefined here,
    as in MTME); explicit epsilons are required for 'b'.
    """
    _check_variant(variant, ("b", "23", "acc23"))
    _check_average_by(average_by)
    _check_draw_args(n_draws, block_size)
    a = _as_float(metric_a, "metric_a", 2)
    b = _as_float(metric_b, "metric_b", 2)
    h = _as_float(human, "human", 2)
    _check_same_shape(a, h, "metric_a and human")
    _check_same_shape(b, h, "metric_b and human")
    valid_all = ~np.isnan(h)
    _check_metric_present(a, valid_all, "metric_a")
    _check_metric_present(b, valid_all, "metric_b")
    if epsilon_a is None or epsilon_b is None:
        if variant == "b":
            raise ValueError("variant 'b' needs explicit epsilon_a and epsilon_b")
        if epsilon_a is None:
            epsilon_a = acc_eq(a, h, average_by=average_by, variant=variant).epsilon
        if epsilon_b is None:
            epsilon_b = acc_eq(b, h, average_by=average_by, variant=variant).epsilon
    if epsilon_a < 0 or epsilon_b < 0:
        raise ValueError("epsilon must be non-negative")

    return acc_eq_pairs(np.stack([a, b]), h, [(1, 0)], variant=variant, average_by=average_by,
                        epsilons=[epsilon_a, epsilon_b], replace_nans_with_zeros=replace_nans_with_zeros,
                        n_draws=n_draws, seed=seed, block_size=block_size, early_min=early_min,
                        early_max=early_max)[0]
