"""The paper's block protocol (Papineni et al. 2002, section 4.1, Table 2 / Figure 3) and the block t-test.

The test set is cut into ``n_blocks`` consecutive blocks of ``block_size`` segments; BLEU of every block, the mean
and standard deviation over blocks per system, and a paired t-test between systems on the block scores
(``block_t``, Holm-corrected together), from the per-segment sufficient statistics only. Pure core (scipy for the
t distribution, imported lazily).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import ConfigError, InputError
from .resampling import check_level, check_systems
from .significance import DifferenceTest, FloatArray, _callable, holm, pair_indices, stack_systems


def paired_t(b: FloatArray, a: FloatArray, alpha: float = 0.05) -> tuple[float, float, float, float]:
    """Paired t of ``b`` vs ``a`` (``scipy.stats.ttest_rel(b, a)``): ``(t, two-sided p, ci_low, ci_high)`` with the
    ``1 - alpha`` t-interval of the mean difference b - a. Zero variance of the differences gives the limits
    (``t = +-inf, p = 0`` for a non-zero mean, NaN for a zero one) without scipy's precision warning."""
    from scipy import stats

    d = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    k = d.size
    mean = float(d.mean())
    if np.all(d == d[0]):
        if mean == 0:
            return math.nan, math.nan, mean, mean
        return math.copysign(math.inf, mean), 0.0, mean, mean
    res = stats.ttest_rel(b, a)
    half = float(stats.t.ppf(1.0 - alpha / 2.0, k - 1)) * float(d.std(ddof=1)) / math.sqrt(k)
    return float(res.statistic), float(res.pvalue), mean - half, mean + half


@dataclass(frozen=True)
class BlockResult:
    """Corpus BLEU on contiguous blocks of segments, and paired t-tests between neighbouring systems.

    ``block_scores[S, n_blocks]``; ``mean[S]``; ``std[S]`` (sample std, ddof=1); ``order``: system indices from
    the highest mean BLEU down (or as given); ``pairs``: one :class:`DifferenceTest` (test ``block_t``) per
    neighbouring pair in ``order``: ``a = order[i]``, ``b = order[i + 1]``, values the block means, ``statistic``
    the paired t of b vs a (df = n_blocks - 1), ``p_value`` two-sided, ``ci_low``/``ci_high`` the t-interval.
    """

    systems: tuple[str, ...]
    n_blocks: int
    block_size: int
    block_scores: FloatArray
    mean: FloatArray
    std: FloatArray
    order: tuple[int, ...]
    pairs: tuple[DifferenceTest, ...] = ()


def block_protocol(stats: Any, score_fn: Any, n_blocks: int = 20, block_size: int = 25,
                   order: Sequence[int] | None = None, *, systems: Sequence[str] | None = None,
                   alpha: float = 0.05) -> BlockResult:
    """The paper's protocol: the first ``n_blocks * block_size`` segments cut into contiguous blocks (20 of 25 in
    the paper), corpus BLEU per block and system, its mean and sample standard deviation, and paired t-statistics
    between neighbouring systems ranked by mean BLEU (descending unless ``order`` gives system indices).

    ``systems`` names the systems (default ``"0"``, ``"1"``, ...). Raises :class:`InputError` if there are fewer
    segments than ``n_blocks * block_size``.
    """
    score_fn = _callable(score_fn)
    st = check_systems(stats)
    s, n, k = st.shape
    if int(n_blocks) != n_blocks or n_blocks < 2:
        raise ConfigError("n_blocks", f"needs at least 2 blocks for a standard deviation and a t-test, got {n_blocks}")
    if int(block_size) != block_size or block_size < 1:
        raise ConfigError("block_size", f"must be a positive integer, got {block_size}")
    check_level(alpha, "alpha")
    need = n_blocks * block_size
    if n < need:
        raise InputError(
            f"block protocol needs n_blocks * block_size = {n_blocks} * {block_size} = {need} segments, "
            f"but there are only {n}; lower n_blocks or block_size"
        )
    names = tuple(str(i) for i in range(s)) if systems is None else tuple(str(x) for x in systems)
    if len(names) != s:
        raise InputError(f"systems must name all {s} systems, got {len(names)} names")
    blocks = st[:, :need, :].reshape(s, n_blocks, block_size, k).sum(axis=2)
    scores = np.asarray(score_fn(blocks), dtype=np.float64)  # [S, n_blocks]
    mean = scores.mean(axis=1)
    std = scores.std(axis=1, ddof=1)
    if order is None:
        ranked = tuple(int(i) for i in np.argsort(-mean, kind="stable"))
    else:
        ranked = tuple(int(i) for i in order)
        if sorted(ranked) != list(range(s)):
            raise InputError(f"order must be a permutation of the system indices 0..{s - 1}, got {list(ranked)}")
    pairs = tuple(_block_difference(scores, mean, names, ia, ib, alpha, n_blocks)
                  for ia, ib in zip(ranked[:-1], ranked[1:]))
    return BlockResult(names, int(n_blocks), int(block_size), scores, mean, std, ranked, pairs)


def _block_difference(scores: FloatArray, mean: FloatArray, names: Sequence[str], ia: int, ib: int, alpha: float,
                      n_blocks: int, p_holm: float = math.nan) -> DifferenceTest:
    t, p, lo, hi = paired_t(scores[ib], scores[ia], alpha)
    return DifferenceTest("block_t", names[ia], names[ib], float(mean[ia]), float(mean[ib]), float(mean[ib] - mean[ia]),
                      t, p, lo, hi, int(n_blocks), None, p_holm)


def block_t(systems: Sequence[tuple[str, Any]], score_fn: Any, n_blocks: int = 20, block_size: int = 25,
            pairs: str | Sequence[tuple[Any, Any]] = "neighbours", *, alpha: float = 0.05) -> list[DifferenceTest]:
    """The paper's block t-test as :class:`DifferenceTest` rows (``test='block_t'``), Holm-corrected together:
    ``pairs='neighbours'`` are the pairs of :func:`block_protocol`; ``'all'``, ``'baseline'`` or explicit pairs
    use the same block scores and t-test. ``n_samples`` is the number of blocks."""
    score_fn = _callable(score_fn)
    names, X = stack_systems(systems, score_fn)
    res = block_protocol(X, score_fn, n_blocks, block_size, systems=names, alpha=alpha)
    if isinstance(pairs, str) and pairs == "neighbours":
        idx_pairs = [(names.index(c.a), names.index(c.b)) for c in res.pairs]
    else:
        idx_pairs = pair_indices(names, pairs)
    found = [_block_difference(res.block_scores, res.mean, names, a, b, alpha, n_blocks) for a, b in idx_pairs]
    ph = holm([c.p_value for c in found])
    return [DifferenceTest(**{**c.__dict__, "p_holm": float(ph[j])}) for j, c in enumerate(found)]


