"""The metric families a job scores from per-segment statistics, each with its behaviour: BLEU (any profile) and
chrF/chrF++. A job's variant names its family; everything that scores, resamples or signs a variant asks the
family (the corpus score, the sentence scores, the score function of the resampling engine, the ``[S, n, K]``
stack of several systems, whether the score is a function of summed statistics, the segment-level signature).

Pure core: statistics in, numbers out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from . import bleu, chrf
from .chrf import ChrfOptions, ChrfStats
from .options import BleuOptions
from .profiles import get_profile
from .signature import signature
from .stats import SegmentStats

FloatArray = bleu.FloatArray


@dataclass(frozen=True)
class BleuFamily:
    """BLEU: the profile decides additivity, resampling arithmetic and the sentence formula."""

    name: str = "bleu"
    label: str = "BLEU"

    def corpus(self, stats: SegmentStats, opts: BleuOptions) -> bleu.BleuScore:
        return bleu.corpus_score(stats, opts)

    def sentences(self, stats: SegmentStats, opts: BleuOptions) -> FloatArray:
        return np.asarray(bleu.sentence_scores(stats, opts).score, dtype=np.float64)

    def score_fn(self, opts: BleuOptions) -> Any:
        return bleu.score_fn(opts)

    def stack(self, stats: Sequence[SegmentStats], opts: BleuOptions) -> FloatArray:
        return bleu.stack(stats, opts)

    def additive(self, opts: BleuOptions) -> bool:
        return get_profile(opts.profile).additive

    def signature(self, opts: BleuOptions, nrefs: int | str) -> str:
        return signature(opts, nrefs)

    def params(self, opts: BleuOptions, sentence: BleuOptions) -> dict[str, Any]:
        return {**opts.as_params(), "sentence_effective_order": sentence.effective_order}


@dataclass(frozen=True)
class ChrfFamily:
    """chrF and chrF++ (sacrebleu's ``CHRF``): always additive; bootstrap resamples in sacrebleu's float32; the
    segment level is the corpus formula on one segment's statistics (sacrebleu's ``sentence_score``)."""

    name: str = "chrf"
    label: str = "chrF"

    def corpus(self, stats: ChrfStats, opts: ChrfOptions) -> chrf.ChrfScore:
        return chrf.corpus_chrf(stats, opts)

    def sentences(self, stats: ChrfStats, opts: ChrfOptions) -> FloatArray:
        return chrf.sentence_chrf(stats, opts)

    def score_fn(self, opts: ChrfOptions) -> Any:
        return chrf.ChrfScoreFn(opts)

    def stack(self, stats: Sequence[ChrfStats], opts: ChrfOptions) -> FloatArray:
        return np.stack([s.matrix() for s in stats])

    def additive(self, opts: ChrfOptions) -> bool:
        return True

    def signature(self, opts: ChrfOptions, nrefs: int | str) -> str:
        return chrf.chrf_signature(opts, nrefs)

    def params(self, opts: ChrfOptions, sentence: ChrfOptions) -> dict[str, Any]:
        return opts.as_params()


Family = BleuFamily | ChrfFamily
FAMILIES: dict[str, Family] = {"bleu": BleuFamily(), "chrf": ChrfFamily()}
