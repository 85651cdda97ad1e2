"""The result of a job's analysis: immutable values that the tables, the report, the figures and the MLflow
payload only read (nothing writes into a result after it is made; no field is looked up by a string key)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
from numpy.typing import NDArray

from ..core.bleu import BleuScore
from ..core.chrf import ChrfScore, ChrfStats
from ..core.correlation import Agreement, Correlation
from ..core.significance import ClusterRow, DifferenceTest
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
    stats: SegmentStats | ChrfStats  # as the variant's family counts them
    score: BleuScore | ChrfScore
    sentence: NDArray[np.float64]
    ci_low: float = NAN
    ci_high: float = NAN

    @property
    def sentence_signature(self) -> str:
        """The signature of the sentence scores (the variant's segment-level options: ``eff:yes`` for sentBLEU)."""
        return str(self.variant.sentence_signature(self.stats.nrefs_label))


@dataclass(frozen=True)
class SystemDifference:
    """A paired test (``paired_bs``, ``paired_ar``, ``block_t``) between systems ``a`` and ``b``."""

    refset: str
    variant: str
    a: SystemInput
    b: SystemInput
    outcome: DifferenceTest


@dataclass(frozen=True)
class Cluster:
    """A system's significance cluster within one reference set and variant."""

    refset: str
    variant: str
    row: ClusterRow


@dataclass(frozen=True)
class CorrelationResult:
    """One correlation of a variant's BLEU with one kind of human scores; ``epsilon``: the tie threshold of
    ``acc_eq`` (NaN for the other statistics); ``baseline``: the value of the statistic's trivial baseline on the
    same data (WMT statistics: ordering at random, an undecided metric, calling every pair a tie; else NaN)."""

    refset: str
    variant: str
    human_score: str
    include_human: bool
    correlation: Correlation
    epsilon: float = NAN
    baseline: float = NAN


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


#: ``VariantDifference.statistic`` of the best variant's system-level Pearson r against each other variant's (every
#: job); ``meta_eval`` adds the rank tests of its statistics, named ``<level>.<statistic>``.
BEST_VS_EACH = "pearson"


@dataclass(frozen=True)
class VariantDifference:
    """Is variant ``b``'s correlation with the humans different from the best variant ``a``'s?"""

    human_score: str
    statistic: str
    outcome: DifferenceTest


@dataclass(frozen=True)
class VariantRank:
    """A variant's place among the job's variants by one statistic: ``rank`` 1 = the top significance cluster."""

    human_score: str
    level: str
    statistic: str
    variant: str
    value: float
    rank: int


def _numbers(values: Iterable[float]) -> tuple[float | str, ...]:
    """Values compared as the report shows them: NaN equal to NaN (``-0.0`` and ``0.0`` alike)."""
    return tuple("nan" if isinstance(v, float) and math.isnan(v) else float(v) for v in values)


def variant_numbers(cells: Iterable[Cell], correlations: Iterable[CorrelationResult] = (),
                    clusters: Iterable[Cluster] = (), differences: Iterable[SystemDifference] = ()
                    ) -> dict[str, dict[str, Any]]:
    """What a job shows of each variant, by part: ``corpus`` (scores), ``intervals``, ``sentence`` (scores),
    ``correlations`` (values, intervals, epsilons, baselines), ``significance`` (clusters and paired tests)."""
    out: dict[str, dict[str, Any]] = {}

    def part(variant: str, name: str) -> list[Any]:
        return out.setdefault(variant, {}).setdefault(name, [])

    for c in cells:
        key = (c.refset, c.system.label)
        part(c.variant.name, "corpus").append((key, c.score.score))
        part(c.variant.name, "intervals").append((key, _numbers((c.ci_low, c.ci_high))))
        part(c.variant.name, "sentence").append((key, np.asarray(c.sentence, dtype=np.float64).tobytes()))
    for r in correlations:
        k = r.correlation
        part(r.variant, "correlations").append(((r.refset, r.human_score, r.include_human, k.level, k.method,
                                                 k.grouping), _numbers((k.value, k.ci_low, k.ci_high, k.p_value,
                                                                        r.epsilon, r.baseline))))
    for cl in clusters:
        part(cl.variant, "significance").append(((cl.refset, cl.row.system), cl.row.cluster))
    for d in differences:
        t = d.outcome
        part(d.variant, "significance").append(((d.refset, t.test, t.a, t.b), _numbers((t.p_value, t.p_holm,
                                                                                         t.ci_low, t.ci_high))))
    return {v: {name: sorted(items, key=repr) for name, items in parts.items()} for v, parts in out.items()}


#: The parts of :func:`variant_numbers`, as the report names them.
PARTS = {"corpus": "corpus BLEU", "intervals": "bootstrap intervals", "sentence": "sentence BLEU",
         "correlations": "correlations (WMT statistics included)", "significance": "significance tests"}


def identical_variants(cells: Iterable[Cell], correlations: Iterable[CorrelationResult] = (),
                       clusters: Iterable[Cluster] = (), differences: Iterable[SystemDifference] = ()
                       ) -> dict[str, str]:
    """Variants every number of which (:func:`variant_numbers`) equals an earlier variant's: ``{variant: the
    earlier one}``. Equal corpus scores alone are not enough (``paper`` and ``sacrebleu`` agree on corpus BLEU
    when no system's corpus has an order without matches, and differ on sentence BLEU)."""
    numbers = variant_numbers(cells, correlations, clusters, differences)
    same: dict[str, str] = {}
    names = list(numbers)
    for i, name in enumerate(names):
        for earlier in names[:i]:
            if earlier not in same and numbers[name] == numbers[earlier]:
                same[name] = earlier
                break
    return same


def equal_parts(cells: Iterable[Cell], correlations: Iterable[CorrelationResult] = (),
                clusters: Iterable[Cluster] = (), differences: Iterable[SystemDifference] = ()
                ) -> dict[str, tuple[str, list[str], list[str]]]:
    """Variants that share some but not all of their numbers with an earlier variant: ``{variant: (earlier, the
    parts equal, the parts that differ)}``, parts named as :data:`PARTS`; only where the corpus scores are equal."""
    numbers = variant_numbers(cells, correlations, clusters, differences)
    out: dict[str, tuple[str, list[str], list[str]]] = {}
    names = list(numbers)
    for i, name in enumerate(names):
        for earlier in names[:i]:
            a, b = numbers[name], numbers[earlier]
            if a == b or a.get("corpus") != b.get("corpus"):
                continue
            parts = [p for p in PARTS if p in a or p in b]
            out[name] = (earlier, [PARTS[p] for p in parts if a.get(p) == b.get(p)],
                         [PARTS[p] for p in parts if a.get(p) != b.get(p)])
            break
    return out


@dataclass(frozen=True, eq=False)
class JobResult:
    """Everything a job computed."""

    spec: JobSpec
    inputs: Inputs
    experiment: str
    cells: tuple[Cell, ...]
    differences: tuple[SystemDifference, ...] = ()
    clusters: tuple[Cluster, ...] = ()
    correlations: tuple[CorrelationResult, ...] = ()
    blocks: tuple[BlockSummary, ...] = ()
    agreement: tuple[RankingAgreement, ...] = ()
    variant_differences: tuple[VariantDifference, ...] = ()
    notes: tuple[str, ...] = ()
    cache_hits: int = 0
    cache_misses: int = 0
    dropped: tuple[str, ...] = field(default=())
    rankings: tuple[VariantRank, ...] = ()
    pairs: tuple[ComparisonResult, ...] = ()  # compare=[[A, B], ...]

    @functools.cached_property
    def same_as(self) -> dict[str, str]:
        """:func:`identical_variants` of this result, computed once (the tables and most sections of the report
        ask: 0.5 s of a ru-en study's report when each asked anew). Read it, do not change it."""
        return identical_variants(self.cells, self.correlations, self.clusters, self.differences)

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
