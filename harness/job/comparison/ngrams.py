"""The n-grams (orders 1..N) that A gets right more often than B and the reverse, and those each over-produces (in
its output beyond the clipped reference count), ranked as compare-mt's ``extract_salient_features``: compare-mt
sorts by ``(c_A + alpha) / (c_A + c_B + 2 alpha)``; we report the smoothed log ratio ``log((c_A + alpha) / (c_B +
alpha))``, that score's logit, so the order is the same (ties: more frequent first, then alphabetical). The
counts are BLEU's clipped matches (maximum over the present references), from
:func:`harness.text.counting.count_grams`.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ...text.counting import NgramCounts
from .result import NAN, NGRAM_ALPHA, FloatArray, IntArray, NgramList, NgramRow


def rank_ngrams(count_a: IntArray, count_b: IntArray, top: int, alpha: float = NGRAM_ALPHA
                ) -> tuple[IntArray, IntArray, FloatArray]:
    """compare-mt's salient n-grams: ``log((c_a + alpha) / (c_b + alpha))`` over ids seen in either system; the
    ``top`` ids in favour of A (largest log ratio first) and of B (smallest first). Ties: the more frequent
    first; ties at the cut are all kept, for the caller to order by text)."""
    seen = np.flatnonzero((count_a + count_b) > 0)
    score = np.log((count_a[seen] + alpha) / (count_b[seen] + alpha))
    freq = count_a[seen] + count_b[seen]
    order_a = np.lexsort((seen, -freq, -score))
    order_b = np.lexsort((seen, -freq, score))
    keep_a = _with_ties(order_a[score[order_a] > 0], score, freq, top)
    keep_b = _with_ties(order_b[score[order_b] < 0], score, freq, top)
    full = np.full(count_a.size, NAN)
    full[seen] = score
    return seen[keep_a], seen[keep_b], full


def _with_ties(ranked: IntArray, score: FloatArray, freq: IntArray, top: int) -> IntArray:
    """The first ``top`` of ``ranked``, and every later one tied with the last of them on (score, frequency), so a
    final sort by text can pick among ties independently of the ids."""
    if ranked.size <= top:
        return ranked
    last = ranked[top - 1]
    k = top
    while k < ranked.size and score[ranked[k]] == score[last] and freq[ranked[k]] == freq[last]:
        k += 1
    return ranked[:k]


def ngram_lists(counts: NgramCounts, words: Callable[[Sequence[int]], list[str]], top: int,
                alpha: float = NGRAM_ALPHA, streams: tuple[int, int] = (0, 1)) -> tuple[NgramList, ...]:
    """The four compare-mt lists (matches and over-productions, each direction) of streams A and B (``streams``,
    default 0 and 1), all orders ranked together: one ranking over the n-grams of every order, text (``words`` of
    token ids) built only for the top ones and the ties at the cut. The n-grams seen in neither stream take no
    part, so other streams counted alongside change nothing."""
    sa, sb = streams
    per = [(g.order, *g.per_gram(sa), *g.per_gram(sb)) for g in counts.orders]  # order, total/match of A, of B
    orders = np.concatenate([np.full(g.n_grams, g.order, dtype=np.int64) for g in counts.orders])
    gids = np.concatenate([np.arange(g.n_grams, dtype=np.int64) for g in counts.orders])
    out = []
    for kind in ("match", "over"):
        ca = np.concatenate([m_a if kind == "match" else t_a - m_a for _, t_a, m_a, _, _ in per])
        cb = np.concatenate([m_b if kind == "match" else t_b - m_b for _, _, _, t_b, m_b in per])
        ids_a, ids_b, score = rank_ngrams(ca, cb, top, alpha)
        for side, ids in (("a", ids_a), ("b", ids_b)):
            rows = [NgramRow(" ".join(words(counts.gram_tokens(int(orders[i]), int(gids[i])).tolist())),
                             int(orders[i]), int(ca[i]), int(cb[i]), float(score[i])) for i in ids]
            sign = -1.0 if side == "a" else 1.0
            rows.sort(key=lambda r: (sign * r.log_ratio, -(r.count_a + r.count_b), r.ngram))
            out.append(NgramList(kind, side, tuple(rows[:top])))
    return tuple(out)
