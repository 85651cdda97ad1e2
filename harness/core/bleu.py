"""BLEU as pure functions of sufficient statistics: the formulas of each profile, scores, score functions.

Every formula is vectorised over leading axes: ``stats[..., 2 + 2N]`` (summed statistics ``[hyp_len, ref_len,
matches_1..N, totals_1..N]``, see :mod:`.stats`) maps to arrays of scores, so one call scores a corpus, every
segment (sentence BLEU), or thousands of bootstrap resamples at once.

Pure core: numpy in, numbers out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from .formulas import BleuArrays, FloatArray
from .options import BleuOptions
from .profiles import get_profile
from .signature import signature
from .stats import SegmentStats


@dataclass(frozen=True)
class BleuScore:
    """One BLEU score with everything needed to check and reproduce it."""

    score: float
    precisions: list[float]
    bp: float
    ratio: float
    hyp_len: int | float
    ref_len: int | float
    counts: list[int]
    totals: list[int]
    signature: str
    options: BleuOptions = field(repr=False, compare=False, default_factory=BleuOptions)

    @property
    def sys_len(self) -> int | float:
        """sacrebleu's name for ``hyp_len``."""
        return self.hyp_len

    def format(self, width: int = 2, signature: bool = True, score_only: bool = False) -> str:
        """sacrebleu's score line: ``BLEU|sig = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = ...)``."""
        if score_only:
            return f"{self.score:.{width}f}"
        prec = "/".join(f"{p:.1f}" for p in self.precisions)
        name = f"BLEU|{self.signature}" if signature else "BLEU"
        return (
            f"{name} = {self.score:.{width}f} {prec} (BP = {self.bp:.3f} ratio = {self.ratio:.3f} "
            f"hyp_len = {_fmt_len(self.hyp_len)} ref_len = {_fmt_len(self.ref_len)})"
        )

    def __str__(self) -> str:
        return self.format()

    def as_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "precisions": list(self.precisions),
            "bp": self.bp,
            "ratio": self.ratio,
            "hyp_len": self.hyp_len,
            "ref_len": self.ref_len,
            "counts": list(self.counts),
            "totals": list(self.totals),
            "signature": self.signature,
        }


def _fmt_len(value: int | float) -> str:
    return f"{int(value):d}" if float(value).is_integer() else f"{value:.1f}"


def from_sums(sums: Any, opts: BleuOptions) -> BleuArrays:
    """Scores from summed statistics ``[..., 2 + 2N]`` under a profile that has a formula (vectorised)."""
    return get_profile(opts.profile).from_sums(sums, opts)


# --------------------------------------------------------------------------------------------------------------
# Scores from statistics
# --------------------------------------------------------------------------------------------------------------


def corpus_arrays(stats: SegmentStats, opts: BleuOptions) -> BleuArrays:
    """The corpus score of a statistics block, as arrays of shape ``()``."""
    return get_profile(opts.profile).corpus(stats, opts)


def sentence_scores(stats: SegmentStats, opts: BleuOptions) -> BleuArrays:
    """Sentence BLEU of every segment (vectorised from the statistics; no per-segment re-tokenization)."""
    return get_profile(opts.profile).sentences(stats, opts)


def corpus_score(stats: SegmentStats, opts: BleuOptions, extra: Mapping[str, Any] | None = None) -> BleuScore:
    """The corpus BLEU of a statistics block under resolved options."""
    order = opts.max_ngram_order
    return to_score(corpus_arrays(stats, opts), stats.matches[:, :order].sum(axis=0),
                    stats.totals[:, :order].sum(axis=0), signature(opts, stats.nrefs_label, extra), opts)


def to_score(arrays: BleuArrays, counts: Any, totals: Any, sig: str, opts: BleuOptions) -> BleuScore:
    """A :class:`BleuScore` from 0-d arrays (a corpus score or one row of vectorised results)."""
    hyp_len, ref_len = float(arrays.hyp_len), float(arrays.ref_len)
    return BleuScore(
        score=float(arrays.score),
        precisions=[float(p) for p in np.atleast_1d(arrays.precisions)],
        bp=float(arrays.bp),
        ratio=float(arrays.ratio),
        hyp_len=int(hyp_len) if hyp_len.is_integer() else hyp_len,
        ref_len=int(ref_len) if ref_len.is_integer() else ref_len,
        counts=[int(x) for x in np.asarray(counts)],
        totals=[int(x) for x in np.asarray(totals)],
        signature=sig,
        options=opts,
    )


def segment_score(arrays: BleuArrays, stats: SegmentStats, i: int, opts: BleuOptions) -> BleuScore:
    """Segment ``i`` of :func:`sentence_scores` as a :class:`BleuScore` (its signature counts its references)."""
    order = opts.max_ngram_order
    nrefs = int((stats.ref_lens[i] >= 0).sum())
    return to_score(arrays.row(i), stats.matches[i, :order], stats.totals[i, :order], signature(opts, nrefs), opts)


# --------------------------------------------------------------------------------------------------------------
# Score functions (for resampling)
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreFn:
    """BLEU of summed statistics under resolved options: ``fn(sums[..., K]) -> scores[...]`` (float64).

    :meth:`resampled` is what bootstrap resamples are scored with: as the profile's tool scores them
    (:meth:`~.profiles.Profile.resampled`: sacrebleu's float32 arithmetic, so p-values equal sacrebleu's) when
    ``sacrebleu_float32``, else the same function.
    """

    opts: BleuOptions
    sacrebleu_float32: bool = True

    def __call__(self, sums: Any) -> FloatArray:
        return np.asarray(from_sums(sums, self.opts).score, dtype=np.float64)

    def resampled(self, sums: Any) -> FloatArray:
        if self.sacrebleu_float32:
            return np.asarray(get_profile(self.opts.profile).resampled(sums, self.opts).score, dtype=np.float64)
        return self(sums)


def score_fn(opts: BleuOptions, *, sacrebleu_float32: bool = True) -> ScoreFn:
    """The score function of resolved options (see :class:`ScoreFn`)."""
    get_profile(opts.profile)
    return ScoreFn(opts, sacrebleu_float32)


def stats_matrix(stats: SegmentStats, opts: BleuOptions) -> FloatArray:
    """The ``[n, 2 + 2N]`` matrix a score function of ``opts`` reads (its order, its reference-length rule)."""
    return stats.truncate_order(opts.max_ngram_order).matrix(opts.ref_length)


def stack(stats: Sequence[SegmentStats], opts: BleuOptions) -> FloatArray:
    """``X[S, n, K]`` of several systems' statistics under ``opts``."""
    return np.stack([stats_matrix(s, opts) for s in stats])
