"""The metric families of a job, each with its behaviour: BLEU (any profile) and chrF/chrF++, computed from
per-segment statistics, and imported scores (metrics computed elsewhere, read from files). A job's variant names
its family; everything that scores, resamples or signs a variant asks the family (the corpus score, the sentence
scores, the score function of the resampling engine, the ``[S, n, K]`` stack of several systems, whether the
score is a function of summed statistics, the segment-level signature).

Pure core: statistics in, numbers out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

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


@dataclass(frozen=True, eq=False)
class ImportedScores:
    """A metric the harness does not compute (COMET, BLEURT, MetricX, ...), its scores read from files: ``sys``
    (system label -> system score) for every system of the job and, when given, ``seg`` (label -> one score per
    segment). Kept oriented so that higher is better (``negated``: the files say lower is better and the scores
    were negated); ``sha256``: of its files, ``source``: where they were read."""

    name: str
    sys: Mapping[str, float]
    seg: Mapping[str, FloatArray] | None
    n_segments: int
    negated: bool = False
    sha256: str = ""
    source: str = ""
    missing: tuple[str, ...] = ()  # human translations it has no score for (NaN): compared on the MT systems

    def cell(self, label: str) -> ScoresCell:
        """One system's scores (NaN where it has none: its segment scores without segment scores)."""
        if label in self.missing:
            return ScoresCell(np.nan, np.full(self.n_segments, np.nan))
        segments = self.seg[label] if self.seg else np.full(self.n_segments, np.nan)
        return ScoresCell(float(self.sys[label]), segments)


@dataclass(frozen=True, eq=False)
class ScoresCell:
    """One system's imported scores: its system score and its segment scores (NaN without segment scores)."""

    score: float
    segments: FloatArray
    nrefs_label: str = "file"

    def __len__(self) -> int:
        return int(len(self.segments))


@dataclass(frozen=True)
class FileScore:
    """An imported system score with its signature (what the tables show for BLEU's and chrF's scores)."""

    score: float
    signature: str


@dataclass(frozen=True)
class ScoresFamily:
    """Imported scores: not a function of summed statistics (no bootstrap intervals, no paired tests between
    systems); compared with the human scores as given, by every statistic that reads scores."""

    name: str = "scores"
    label: str = "imported"

    def corpus(self, stats: ScoresCell, opts: ImportedScores) -> FileScore:
        return FileScore(stats.score, self.signature(opts, stats.nrefs_label))

    def sentences(self, stats: ScoresCell, opts: ImportedScores) -> FloatArray:
        return stats.segments

    def score_fn(self, opts: ImportedScores) -> Any:
        raise TypeError(f"{opts.name}: imported scores are not a function of summed statistics")

    def stack(self, stats: Sequence[ScoresCell], opts: ImportedScores) -> FloatArray:
        raise TypeError(f"{opts.name}: imported scores have no statistics to resample")

    def additive(self, opts: ImportedScores) -> bool:
        return False

    def signature(self, opts: ImportedScores, nrefs: int | str) -> str:
        return "|".join([f"metric:{opts.name}", "scores:file", f"sha256:{opts.sha256[:12]}",
                         f"negated:{'yes' if opts.negated else 'no'}"])

    def params(self, opts: ImportedScores, sentence: ImportedScores) -> dict[str, Any]:
        return {"source": opts.source, "negated": opts.negated, "segment_scores": opts.seg is not None}


Family = BleuFamily | ChrfFamily | ScoresFamily
FAMILIES: dict[str, Family] = {"bleu": BleuFamily(), "chrf": ChrfFamily(), "scores": ScoresFamily()}
