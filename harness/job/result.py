"""The result of a job's analysis: immutable values that the tables, the report, the figures and the MLflow
payload only read (nothing writes into a result after it is made; no field is looked up by a string key)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np
from numpy.typing import NDArray

from ..core.bleu import BleuScore
from ..core.correlation import Agreement, Correlation
from ..core.significance import ClusterRow, Comparison
from ..core.stats import SegmentStats
from .comparison import ComparisonResult
from .inputs import Inputs, SystemInput
from .spec import JobSpec, Variant

NAN = math.nan


@dataclass(frozen=True, eq=False)
class Cell:
    """One system x reference set x variant: its statistics, corpus score, sentence scores and bootstrap interval
    (sacrebleu's convention: mean +- half the 2.5-97.5% range; NaN where the variant cannot be resampled)."""

    system: SystemInput
    refset: str
    refs_used: tuple[str, ...]
    variant: Variant
    stats: SegmentStats
    score: BleuScore
    sentence: NDArray[np.float64]
    ci_low: float = NAN
    ci_high: float = NAN


@dataclass(frozen=True)
class SystemComparison:
    """A paired test (``paired_bs``, ``paired_ar``, ``block_t``) between systems ``a`` and ``b``."""

    refset: str
    variant: str
    a: SystemInput
    b: SystemInput
    comparison: Comparison


@dataclass(frozen=True)
class Cluster:
    """A system's significance cluster within one reference set and variant."""

    refset: str
    variant: str
    row: ClusterRow


@dataclass(frozen=True)
class CorrelationResult:
    """One correlation of a variant's BLEU with one kind of human scores; ``epsilon``: the tie threshold of
    ``acc_eq`` (NaN for the other statistics); ``n_judged``: segments with a human score in the data it used."""

    refset: str
    variant: str
    human_score: str
    include_human: bool
    correlation: Correlation
    epsilon: float = NAN


@dataclass(frozen=True)
class BlockSummary:
    """The paper's block protocol for one system: mean and standard deviation of BLEU over the blocks."""

    refset: str
    variant: str
    system: SystemInput
    mean: float
    std: float
    blocks: tuple[float, ...]


@dataclass(frozen=True)
class RankingAgreement:
    """How a reference set ranks the systems compared with the full one (the paper's 1 vs 4 references)."""

    variant: str
    refset: str
    versus: str
    agreement: Agreement


#: ``VariantComparison.statistic`` of the best variant's system-level Pearson r against each other variant's (every
#: job); ``meta_eval`` adds the rank tests of its statistics, named ``<level>.<statistic>``.
BEST_VS_EACH = "pearson"


@dataclass(frozen=True)
class VariantComparison:
    """Is variant ``b``'s correlation with the humans different from the best variant ``a``'s?"""

    human_score: str
    statistic: str
    comparison: Comparison


@dataclass(frozen=True)
class VariantRank:
    """A variant's place among the job's variants by one statistic: ``rank`` 1 = the top significance cluster."""

    human_score: str
    level: str
    statistic: str
    variant: str
    value: float
    rank: int


def identical_variants(cells: Iterable[Cell]) -> dict[str, str]:
    """Variants whose every score equals an earlier variant's (e.g. ``paper`` = ``sacrebleu`` when no system's
    corpus has an order without matches): ``{variant: the earlier one}``."""
    scores: dict[str, list[float]] = {}
    for c in cells:
        scores.setdefault(c.variant.name, []).append(c.score.score)
    same: dict[str, str] = {}
    names = list(scores)
    for i, name in enumerate(names):
        for earlier in names[:i]:
            if earlier not in same and scores[name] == scores[earlier]:
                same[name] = earlier
                break
    return same


@dataclass(frozen=True, eq=False)
class JobResult:
    """Everything a job computed."""

    spec: JobSpec
    inputs: Inputs
    experiment: str
    cells: tuple[Cell, ...]
    comparisons: tuple[SystemComparison, ...] = ()
    clusters: tuple[Cluster, ...] = ()
    correlations: tuple[CorrelationResult, ...] = ()
    blocks: tuple[BlockSummary, ...] = ()
    agreement: tuple[RankingAgreement, ...] = ()
    variant_comparisons: tuple[VariantComparison, ...] = ()
    notes: tuple[str, ...] = ()
    cache_hits: int = 0
    cache_misses: int = 0
    dropped: tuple[str, ...] = field(default=())
    rankings: tuple[VariantRank, ...] = ()
    pairs: tuple[ComparisonResult, ...] = ()  # compare=[[A, B], ...]

    @property
    def dataset(self) -> str:
        return self.inputs.dataset

    @property
    def refsets(self) -> list[str]:
        return list(dict.fromkeys(c.refset for c in self.cells))

    @property
    def full_refset(self) -> str:
        from .dataset import refset_name

        return refset_name(self.inputs.full_refset)

    def cells_of(self, refset: str | None = None, variant: str | None = None) -> list[Cell]:
        return [c for c in self.cells if (refset is None or c.refset == refset)
                and (variant is None or c.variant.name == variant)]

    def correlations_of(self, **match: object) -> list[CorrelationResult]:
        """Correlations whose fields (of the row or of its :class:`Correlation`) equal ``match``."""
        out = []
        for r in self.correlations:
            if all(getattr(r, k) == v if hasattr(r, k) else getattr(r.correlation, k) == v
                   for k, v in match.items()):
                out.append(r)
        return out

    def groups(self) -> Iterable[tuple[str, str, list[Cell]]]:
        """``(refset, variant, cells)`` in table order."""
        seen: dict[tuple[str, str], list[Cell]] = {}
        for c in self.cells:
            seen.setdefault((c.refset, c.variant.name), []).append(c)
        for (refset, variant), cells in seen.items():
            yield refset, variant, cells
