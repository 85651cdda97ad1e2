"""NLTK-compatible BLEU (``nltk.translate.bleu_score``, checked against nltk 3.10.4), replayed from statistics.

:func:`nltk_bleu` returns exactly what NLTK's ``corpus_bleu`` returns, computed from the per-segment statistics of
:mod:`harness.core.stats` instead of token lists by replaying NLTK's own arithmetic (normally bit-identical).
Pure core: arrays in, a result out; it never imports nltk and emits no warnings. The statistics it reads and every
NLTK behaviour it reproduces (why NLTK's numbers differ from sacrebleu's) are listed in :func:`nltk_bleu`.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["METHOD_NUMBERS", "NltkResult", "nltk_bleu", "nltk_orders_needed", "nltk_sentence_bleu"]

#: The smoothing methods of ``nltk.translate.bleu_score.SmoothingFunction`` (``method0`` .. ``method7``).
METHOD_NUMBERS: tuple[int, ...] = tuple(range(8))

_DEFAULT_WEIGHTS = (0.25, 0.25, 0.25, 0.25)

Number = Any  # a Fraction or a float, exactly as nltk would hold it


@dataclass(frozen=True)
class NltkResult:
    """One NLTK BLEU result.

    ``score`` is on nltk's 0-1 scale (methods 5-7 can exceed 1); ``precisions`` are the ``len(weights)`` values
    nltk passes to ``math.log`` after smoothing (as floats; values ``<= 0`` are the ones nltk skips; when the
    corpus unigram numerator is 0 nltk never smooths and these are the raw corpus ratios); ``bp`` the brevity
    penalty; ``hyp_len`` and ``ref_len`` the corpus sums (closest reference length per segment, ties -> shorter);
    ``weights`` the weights actually applied (after ``auto_reweigh``).
    """

    score: float
    precisions: list[float]
    bp: float
    hyp_len: int
    ref_len: int
    weights: tuple[float, ...] = field(default=())


def nltk_orders_needed(weights: Sequence[float] = _DEFAULT_WEIGHTS, method: int = 0) -> int:
    """How many n-gram orders of statistics ``nltk_bleu`` reads for these weights and smoothing method.

    ``len(weights)``, except methods 5 and 7: ``max(len(weights), 5)``, since nltk's method5 always adds the last
    segment's order-5 precision (``modified_precision(references, hypothesis, 5)``).
    """
    _check_method(method)
    n_orders = len(weights)
    if n_orders == 0:  # nltk returns 0 without computing any precision
        return 0
    return max(n_orders, 5) if method in (5, 7) else n_orders


def nltk_bleu(
    hyp_len: ArrayLike,
    ref_lens: ArrayLike,
    matches: ArrayLike,
    totals: ArrayLike,
    *,
    weights: Sequence[float] = _DEFAULT_WEIGHTS,
    method: int = 0,
    epsilon: float = 0.1,
    alpha: float = 5,
    k: float = 5,
    auto_reweigh: bool = False,
) -> NltkResult:
    """NLTK ``corpus_bleu`` from statistics.

    ``nltk_bleu`` returns exactly what ::

        nltk.translate.bleu_score.corpus_bleu(list_of_references, hypotheses, weights,
            smoothing_function=getattr(SmoothingFunction(epsilon, alpha, k), f"method{method}"),
            auto_reweigh=auto_reweigh)

    returns, but computed from the per-segment statistics of :mod:`harness.core.stats` instead of token lists, and
    without importing nltk. It replays nltk's own arithmetic (the same ``Fraction``/``float`` operations in the same order,
    ``math.fsum`` of the same terms), so the result is normally bit-identical, not merely close.

    The statistics (all integer arrays, ``n`` segments, ``R`` reference slots, ``M`` orders):

    - ``hyp_len[i]``: hypothesis length in tokens;
    - ``ref_lens[i, k]``: length of reference ``k``, ``-1`` where segment ``i`` has no reference ``k``;
    - ``matches[i, j]``: clipped matches of order ``j + 1``, ``sum_g min(count_hyp(g), max_k count_ref_k(g))``
      (nltk ``modified_precision`` numerator);
    - ``totals[i, j]``: hypothesis n-grams of order ``j + 1``, ``max(0, hyp_len - j)``, *not* floored at 1 (the
      floor is nltk's and applied here).

    How many orders are needed (``M`` may be larger; extra columns are ignored), see ``nltk_orders_needed``:
    ``len(weights)`` for methods 0-4 and 6; ``max(len(weights), 5)`` for methods 5 and 7, because nltk's method5
    appends ``modified_precision(references, hypothesis, 5)`` -- literally order **5**, not ``len(weights) + 1`` -- of
    the *last* segment (only ``matches[-1, 4]`` and ``totals[-1, 4]`` of that extra column are read).

    NLTK behaviours reproduced here (all deliberate; they are why NLTK's numbers differ from sacrebleu's):

    1. Per segment and order the denominator is ``max(1, totals)`` (``modified_precision``), so an empty or short
       hypothesis adds 1 to the denominator of every order it is too short for.
    2. Corpus precisions are micro-averaged: numerators and denominators are summed *unreduced* and kept unreduced
       (nltk's ``Fraction(..., _normalize=False)``); methods 1-4 and 6 read ``.numerator``/``.denominator`` and thus
       see the raw corpus sums (e.g. method 2 is ``(sum_matches + 1) / (sum_denominators + 1)``).
    3. If the corpus unigram numerator is 0 the score is 0 (nltk returns the int ``0``; we return ``0.0``) before any
       smoothing, so no method can raise or smooth in that case. ``precisions`` then holds the unsmoothed ratios.
    4. Smoothing receives the references and hypothesis of the **last** segment (a leftover loop variable in
       ``corpus_bleu``) and ``hyp_len`` = the corpus hypothesis length: method 4 uses ``ln(corpus hyp_len)``;
       method 5 (and 7) uses the last segment's 5-gram precision ``matches[-1,4] / max(1, totals[-1,4])`` as the
       "next order" of the highest order; method 6 uses the corpus numerator ``m`` but the last hypothesis' n-gram
       count ``l = totals[-1, j]`` (unfloored), which can push precisions (and the score) far above 1 on corpora.
       The result therefore depends on segment order for methods 5-7.
    5. Method 0 replaces a zero-numerator precision by ``sys.float_info.min`` (``log`` = -708.4), so the score is tiny
       but not 0; nltk also emits a ``UserWarning`` per zero order -- this module emits no warnings.
    6. Method 1: ``(0 + epsilon) / denominator``; method 2: every order but the first becomes
       ``(numerator + 1) / (denominator + 1)``; method 3: the k-th zero order becomes ``1 / (2**k * denominator)``;
       method 4: the k-th zero order becomes ``1 / (2**k * K / ln(hyp_len)) / denominator``, only when the corpus
       ``hyp_len > 1`` (otherwise it stays 0 and is skipped); method 5: ``p_i = (m_{i-1} + p_i + p_{i+1}) / 3`` with
       ``m_{-1} = p_1 + 1`` (so precisions above 1 are possible); method 7 = method 4 then method 5 (the appended
       5-gram precision is *not* method-4 smoothed).
    7. Method 6 requires ``len(weights) >= 3`` (nltk raises ``IndexError``) and a non-zero *trigram* corpus
       numerator (nltk's ``assert p_n[2]``, whose message wrongly says "bigrams"); both raise ``ValueError`` here.
    8. ``score = bp * exp(fsum(w_i * log(p_i) for p_i > 0))``: non-positive precisions are silently *skipped*, not
       treated as zero.
    9. Brevity penalty on corpus sums: 1 if ``c > r``, 0 if ``c == 0``, else ``exp(1 - r / c)``; ``r`` sums the
       closest reference length per segment, ties going to the shorter reference.
    10. ``auto_reweigh``: only if the corpus hypothesis length is below 4 *and* ``weights == (0.25, 0.25, 0.25, 0.25)``
        (tuple equality: a list of four 0.25 does not qualify), the weights become ``(1/hyp_len,) * hyp_len``;
        smoothing still ran on all ``len(weights)`` orders.
    11. ``weights=()`` always scores 0 (nltk computes no precision and the unigram-numerator test is on an empty
        counter).

    Not supported: nltk's ``weights`` given as a *list of weight tuples* (which returns a list of scores from one
    pass). Call ``nltk_bleu`` once per tuple instead -- identical for methods 0-4 and 6, but for methods 5 and 7 nltk's
    list form smooths all tuples over ``max(len)`` orders, so shorter tuples get a different "next order" than in a
    separate call (and method 6 with a 2-tuple only works in nltk's list form when a longer tuple is present).
    Where nltk would raise (or crash) a ``ValueError`` explaining what nltk does is raised instead.


    ``hyp_len``: ``[n]``; ``ref_lens``: ``[n, R]`` (``-1`` = absent); ``matches``/``totals``: ``[n, M]`` with
    ``M >= nltk_orders_needed(weights, method)``. ``epsilon``, ``alpha`` and ``k`` are the arguments of
    ``SmoothingFunction(epsilon, alpha, k)`` (used by methods 1, 6 and 4/7). Raises ``ValueError`` on malformed or
    inconsistent statistics and wherever nltk itself would raise.
    """
    _check_method(method)
    weights = _check_weights(weights)
    n_orders = len(weights)
    hyp, refs, mat, tot = _check_stats(hyp_len, ref_lens, matches, totals, nltk_orders_needed(weights, method))
    n_seg = hyp.shape[0]

    hyp_lengths = int(hyp.sum())
    ref_lengths = int(_closest_ref_lengths(hyp, refs).sum()) if n_seg else 0
    bp = _brevity_penalty(ref_lengths, hyp_lengths)

    # Raw corpus sums, exactly as nltk's p_numerators / p_denominators Counters (denominator floored per segment).
    nums = [int(x) for x in mat[:, :n_orders].sum(axis=0)] if n_seg else [0] * n_orders
    dens = [int(x) for x in np.maximum(tot[:, :n_orders], 1).sum(axis=0)] if n_seg else [0] * n_orders
    if n_orders and n_seg == 0:
        raise ValueError("nltk_bleu: empty corpus (0 segments); nltk raises ZeroDivisionError (Fraction(0, 0))")
    raw = list(zip(nums, dens))

    if n_orders == 0 or nums[0] == 0:
        # nltk: `if p_numerators[1] == 0: return 0`, before smoothing (so no method can raise here).
        return NltkResult(0.0, [n / d for n, d in raw], float(bp), hyp_lengths, ref_lengths, tuple(weights))

    p_n: list[Number] = [Fraction(n, d) for n, d in raw]
    last_hyp_len = int(hyp[-1])
    # Count of (j+1)-grams in the LAST hypothesis (nltk method6's `l`), unfloored.
    last_ngrams = [int(x) for x in tot[-1, :n_orders]]
    last_p5 = Fraction(int(mat[-1, 4]), max(1, int(tot[-1, 4]))) if method in (5, 7) else None

    try:
        p_n = _smooth(method, p_n, raw, hyp_lengths, last_hyp_len, last_ngrams, last_p5, epsilon, alpha, k)
    except ZeroDivisionError as exc:
        raise ValueError(f"nltk_bleu: smoothing method{method} divides by zero here ({exc}); nltk raises "
                         f"ZeroDivisionError (check epsilon/alpha/k)") from exc

    weight: Sequence[float] = weights
    if auto_reweigh:
        # nltk compares with a tuple literal: a list or an array of four 0.25 never qualifies.
        if hyp_lengths < 4 and isinstance(weight, tuple) and weight == _DEFAULT_WEIGHTS:
            weight = (1 / hyp_lengths,) * hyp_lengths
    terms = (w_i * math.log(p_i) for w_i, p_i in zip(weight, p_n) if p_i > 0)
    score = bp * math.exp(math.fsum(terms))
    return NltkResult(float(score), [float(p) for p in p_n], float(bp), hyp_lengths, ref_lengths, tuple(weight))


def nltk_sentence_bleu(
    hyp_len: int,
    ref_lens: ArrayLike,
    matches: ArrayLike,
    totals: ArrayLike,
    *,
    weights: Sequence[float] = _DEFAULT_WEIGHTS,
    method: int = 0,
    epsilon: float = 0.1,
    alpha: float = 5,
    k: float = 5,
    auto_reweigh: bool = False,
) -> NltkResult:
    """NLTK ``sentence_bleu`` of one segment: ``hyp_len`` a scalar, ``ref_lens`` ``[R]``, ``matches``/``totals``
    ``[M]`` (one row of the corpus arrays). As in nltk it is exactly ``nltk_bleu`` over a one-segment corpus, so
    for methods 4-7 "last segment" and "corpus" coincide."""
    return nltk_bleu(
        np.reshape(np.asarray(hyp_len), (1,)),
        np.reshape(np.asarray(ref_lens), (1, -1)),
        np.reshape(np.asarray(matches), (1, -1)),
        np.reshape(np.asarray(totals), (1, -1)),
        weights=weights, method=method, epsilon=epsilon, alpha=alpha, k=k, auto_reweigh=auto_reweigh,
    )


# --------------------------------------------------------------------------------------------------------------
# nltk's SmoothingFunction, replayed. `p_n` holds Fractions/floats with nltk's values (Python's mixed
# Fraction/float arithmetic depends only on the values, so reduced Fractions give bit-identical floats);
# `raw[i]` = (numerator, denominator) as nltk's unnormalised Fraction reports them, read only for positions that
# still hold the original corpus precision -- which is every place nltk reads .numerator/.denominator.
# --------------------------------------------------------------------------------------------------------------


def _smooth(method: int, p_n: list[Number], raw: list[tuple[int, int]], hyp_len: int, last_hyp_len: int,
            last_ngrams: list[int], last_p5: Fraction | None, epsilon: float, alpha: float, k: float
            ) -> list[Number]:
    if method == 0:
        # nltk warns "The hypothesis contains 0 counts of {n}-gram overlaps..." for each zero order; we do not.
        return [p if num != 0 else sys.float_info.min for p, (num, _) in zip(p_n, raw)]
    if method == 1:
        return [(num + epsilon) / den if num == 0 else p for p, (num, den) in zip(p_n, raw)]
    if method == 2:
        return [Fraction(num + 1, den + 1) if i != 0 else p_n[0] for i, (num, den) in enumerate(raw)]
    if method == 3:
        incvnt = 1  # mteval-v13a.pl's k
        for i, (num, den) in enumerate(raw):
            if num == 0:
                p_n[i] = 1 / (2**incvnt * den)
                incvnt += 1
        return p_n
    if method == 4:
        return _method4(p_n, raw, hyp_len, last_hyp_len, k)
    if method == 5:
        return _method5(p_n, last_p5)
    if method == 6:
        return _method6(p_n, raw, last_ngrams, alpha)
    return _method5(_method4(p_n, raw, hyp_len, last_hyp_len, k), last_p5)  # method 7


def _method4(p_n: list[Number], raw: list[tuple[int, int]], hyp_len: int, last_hyp_len: int, k: float
             ) -> list[Number]:
    # nltk#2341: not the paper's formula (invcnt *= K / ln(len)); kept as nltk computes it.
    hyp_len = hyp_len if hyp_len else last_hyp_len
    incvnt = 1
    for i, (num, den) in enumerate(raw):
        if num == 0 and hyp_len > 1:
            numerator = 1 / (2**incvnt * k / math.log(hyp_len))
            p_n[i] = numerator / den
            incvnt += 1
    return p_n


def _method5(p_n: list[Number], last_p5: Fraction | None) -> list[Number]:
    # The "next order" of the highest order is the LAST segment's 5-gram precision, whatever len(weights) is.
    p_n_plus1 = p_n + [last_p5]
    m_prev = p_n[0] + 1
    for i, p_i in enumerate(p_n):
        p_n[i] = (m_prev + p_i + p_n_plus1[i + 1]) / 3
        m_prev = p_n[i]
    return p_n


def _method6(p_n: list[Number], raw: list[tuple[int, int]], last_ngrams: list[int], alpha: float
             ) -> list[Number]:
    if len(p_n) < 3:
        raise ValueError(f"nltk_bleu: smoothing method6 needs at least 3 weights (got {len(p_n)}); nltk raises "
                         f"IndexError at `assert p_n[2]`")
    if raw[2][0] == 0:
        raise ValueError("nltk_bleu: smoothing method6 needs a non-zero corpus trigram precision; nltk raises "
                         "AssertionError ('This smoothing method requires non-zero precision for bigrams.')")
    if raw[1][0] == 0:
        # Impossible for real statistics (a trigram match implies bigram matches); nltk would divide by its
        # unnormalised Fraction(0, d) on Python < 3.12 and use pi0 = 0 on >= 3.12.
        raise ValueError("nltk_bleu: inconsistent statistics: trigram matches but no bigram matches")
    for i in range(2, len(p_n)):
        pi0 = 0 if p_n[i - 2] == 0 else p_n[i - 1] ** 2 / p_n[i - 2]
        m = raw[i][0]  # corpus matches (nltk: p_i.numerator)
        l = last_ngrams[i]  # n-grams of the LAST hypothesis (nltk: len(list(ngrams(hypothesis, i + 1))))
        p_n[i] = (m + alpha * pi0) / (l + alpha)
    return p_n


# --------------------------------------------------------------------------------------------------------------
# Input checking and lengths
# --------------------------------------------------------------------------------------------------------------


def _check_method(method: int) -> None:
    if isinstance(method, bool) or method not in METHOD_NUMBERS:
        raise ValueError(f"nltk smoothing method must be one of 0-7 (SmoothingFunction.method0..method7), "
                         f"got {method!r}; nltk raises AttributeError")


def _check_weights(weights: Sequence[float]) -> Sequence[float]:
    try:
        weights[0][0]  # type: ignore[index]  # nltk's own test for "a list of weight tuples"
    except (TypeError, IndexError):
        return weights
    raise ValueError("nltk_bleu: weights as a list of weight tuples (nltk returns a list of scores) is not "
                     "supported; call nltk_bleu once per tuple (see the module docstring for how that differs "
                     "for methods 5-7)")


def _int_array(name: str, value: ArrayLike, ndim: int) -> NDArray[np.int64]:
    arr = np.asarray(value)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"nltk_bleu: {name} must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise ValueError(f"nltk_bleu: {name} must have {ndim} dimension(s), got shape {arr.shape}")
    return arr.astype(np.int64, copy=False)


def _check_stats(hyp_len: ArrayLike, ref_lens: ArrayLike, matches: ArrayLike, totals: ArrayLike,
                 n_needed: int) -> tuple[NDArray[np.int64], ...]:
    hyp = _int_array("hyp_len", hyp_len, 1)
    refs = _int_array("ref_lens", ref_lens, 2)
    mat = _int_array("matches", matches, 2)
    tot = _int_array("totals", totals, 2)
    n_seg = hyp.shape[0]
    for name, arr in (("ref_lens", refs), ("matches", mat), ("totals", tot)):
        if arr.shape[0] != n_seg:
            raise ValueError(f"nltk_bleu: {name} has {arr.shape[0]} rows but hyp_len has {n_seg} segments")
    if mat.shape != tot.shape:
        raise ValueError(f"nltk_bleu: matches {mat.shape} and totals {tot.shape} differ in shape")
    if n_seg == 0:
        return hyp, refs, mat, tot
    if mat.shape[1] < n_needed:
        raise ValueError(f"nltk_bleu: these weights and smoothing method need {n_needed} n-gram orders of "
                         f"statistics, got {mat.shape[1]}")
    if (hyp < 0).any():
        raise ValueError("nltk_bleu: negative hyp_len")
    if refs.shape[1] == 0 or ((refs < 0).all(axis=1)).any():
        bad = int(np.flatnonzero((refs < 0).all(axis=1))[0]) if refs.shape[1] else 0
        raise ValueError(f"nltk_bleu: segment {bad} has no reference; nltk raises KeyError (modified_precision) "
                         f"or ValueError (closest_ref_length: min() of an empty sequence)")
    expected = np.maximum(0, hyp[:, None] - np.arange(n_needed)[None, :])
    if not np.array_equal(tot[:, :n_needed], expected):
        bad = int(np.flatnonzero((tot[:, :n_needed] != expected).any(axis=1))[0])
        raise ValueError(f"nltk_bleu: totals[{bad}] = {tot[bad, :n_needed].tolist()} is not max(0, hyp_len - n + 1)"
                         f" for hyp_len = {int(hyp[bad])}")
    if (mat[:, :n_needed] < 0).any() or (mat[:, :n_needed] > tot[:, :n_needed]).any():
        raise ValueError("nltk_bleu: matches must lie between 0 and totals")
    return hyp, refs, mat, tot


def _closest_ref_lengths(hyp: NDArray[np.int64], refs: NDArray[np.int64]) -> NDArray[np.int64]:
    """nltk ``closest_ref_length``: ``min(ref_lens, key=lambda r: (abs(r - hyp_len), r))`` per segment."""
    big = np.iinfo(np.int64).max
    present = refs >= 0
    diff = np.where(present, np.abs(refs - hyp[:, None]), big)
    best = diff.min(axis=1, keepdims=True)
    return np.where(present & (diff == best), refs, big).min(axis=1)


def _brevity_penalty(closest_ref_len: int, hyp_len: int) -> float:
    """nltk ``brevity_penalty`` (returns the int 1 or 0 there; same values)."""
    if hyp_len > closest_ref_len:
        return 1
    if hyp_len == 0:
        return 0
    return math.exp(1 - closest_ref_len / hyp_len)
