"""The random draws of MTME's permutation tests, and its early stopping, for many pairs of metrics at once.

Every test draws its swap decisions from ``numpy.random.default_rng(seed)`` in one layout: draw ``t`` takes the next
``ceil(size / 64)`` raw 64-bit words of the generator and uses their first ``size`` bits (little-endian), one fair
coin per swappable entry. A draw is therefore the same whatever the chunk of draws it is computed in, and the same
for every pair of metrics tested over the same entries with the same seed: the pairs of a significance matrix share
their draws (each pair's test is still MTME's, with MTME's distribution of swaps; only MTME's stream differs, as it
draws from the unseeded global ``np.random``), and a test of one pair gives the p-value the matrix gives that pair.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from .inputs import FloatArray, SigDiff


def draw_bits(rng: np.random.Generator, k: int, shape: tuple[int, ...]) -> NDArray[np.bool_]:
    """``k`` draws of independent fair coins, ``[k, *shape]`` (see the module docstring for the layout)."""
    size = math.prod(shape)
    words = max(1, -(-size // 64))
    raw = np.ascontiguousarray(rng.bit_generator.random_raw((k, words)), dtype="<u8")
    bits = np.unpackbits(raw.view(np.uint8).reshape(k, 8 * words), axis=1, count=size, bitorder="little")
    return bits.view(bool).reshape((k, *shape))


def early_stop_scan(large: NDArray[np.bool_], done: int, count: int, block_size: int, early_min: float,
                    early_max: float, pairs_quirk: bool) -> tuple[int, int, bool]:
    """Advance MTME's draw loop of one test over one chunk of draws (``large``: which draws counted, ``>=
    delta``) from ``done`` draws and ``count`` counted; returns (count, draws, stopped). After every
    ``block_size`` draws the test stops if its running p-value is ``< early_min`` or ``> early_max``; with
    ``pairs_quirk`` (MTME's ``PairwisePermutationSigDiff``) that check runs only on draws that counted."""
    idx = done + 1 + np.arange(large.shape[0])
    cum = count + np.cumsum(large)
    check = idx % block_size == 0
    if pairs_quirk:  # PairwisePermutationSigDiff checks only inside ``if c2 - c1 >= delta:``
        check &= large
    pval = cum / idx
    stop = np.flatnonzero(check & ((pval < early_min) | (pval > early_max)))
    if stop.size:
        t = int(stop[0])
        return int(cum[t]), int(idx[t]), True
    return int(cum[-1]), done + large.shape[0], False


def run_pairs(deltas: Sequence[float] | FloatArray, n_draws: int, chunk: int,
              draw: Callable[[int, NDArray[np.intp]], FloatArray], block_size: int, early_min: float,
              early_max: float, pairs_quirk: bool = False) -> list[SigDiff]:
    """MTME's draw loop for many tests at once, each with its own early stopping.

    ``deltas[q]``: test ``q``'s observed difference; ``draw(k, live)`` returns the differences of the next ``k``
    draws for the tests ``live`` (``[k, len(live)]``) and must advance the random stream by ``k`` draws whatever
    ``live`` is. A test counts a draw when its difference is ``>= delta`` (NaN never counts); a test whose delta is
    not finite gets ``p = NaN`` and no draws. Returns one :class:`SigDiff` per test."""
    d = np.asarray(deltas, dtype=np.float64)
    count = np.zeros(d.size, dtype=np.int64)
    done = np.zeros(d.size, dtype=np.int64)
    live = np.isfinite(d)
    drawn = 0
    while drawn < n_draws and live.any():
        k = min(chunk, n_draws - drawn)
        act = np.flatnonzero(live)
        large = np.asarray(draw(k, act), dtype=np.float64) >= d[act]  # [k, tests]: early_stop_scan, every column
        idx = drawn + 1 + np.arange(k)[:, None]
        cum = count[act] + np.cumsum(large, axis=0)
        check = idx % block_size == 0
        if pairs_quirk:
            check = check & large
        pval = cum / idx
        stop = check & ((pval < early_min) | (pval > early_max))
        stopped = stop.any(axis=0)
        at = np.where(stopped, stop.argmax(axis=0), k - 1)  # the draw each test ends this chunk on
        cols = np.arange(act.size)
        count[act], done[act] = cum[at, cols], idx[at, 0]
        live[act[stopped]] = False
        drawn += k
    return [SigDiff(float(x), float(count[q] / done[q]) if done[q] else math.nan, int(done[q]))
            for q, x in enumerate(d)]
