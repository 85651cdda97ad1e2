"""What ``harness-history`` finds, immutable: each version as MLflow recorded it (:class:`Version`), how it
compares with the versions before it (:class:`Step`), and the whole answer (:class:`History`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import HarnessError


class HistoryError(HarnessError):
    """Nothing sensible can be answered (exit status 2): the message says why and what was found instead."""


@dataclass(frozen=True)
class Version:
    """The newest finished run of one version of the system (for one refset and variant), as logged."""

    version: str
    run_id: str
    parent_id: str
    start_time: int  # ms since the epoch, of this (newest) run
    first_seen: int  # ms, the start of the earliest job (parent run) that scored this version
    bleu: float
    ci_low: float | None
    ci_high: float | None
    signature: str
    ref_hashes: Mapping[str, str]
    n_segments: int | None
    dataset: str
    n_runs: int = 1
    system_sha256: str = ""  # of the text scored (tag sha256.system)
    refs_used: tuple[str, ...] = ()
    dataset_root: str | None = None  # the job's dataset folder (parent tag dataset_root), if it had one

    @property
    def label(self) -> str:
        return self.version if self.version else "(none)"


@dataclass(frozen=True)
class Step:
    """A version against the history before it: the BLEU difference to the previous version and to the best
    earlier one, the paired tests' p-values (None without tests), and whether either is a significant
    regression."""

    delta_prev: float | None = None
    p_prev: float | None = None
    best_before: str | None = None
    delta_best: float | None = None
    p_best: float | None = None
    regression_vs_previous: bool = False
    regression_vs_best: bool = False

    @property
    def regression(self) -> bool:
        return self.regression_vs_previous or self.regression_vs_best


@dataclass(frozen=True)
class History:
    """One system's BLEU across its versions (in history order, each with its :class:`Step`) for one experiment,
    refset and variant; ``test``/``n_samples``/``seed``/``alpha`` of the paired tests, or ``no_tests`` saying
    why there are none."""

    system: str
    experiment: str
    tracking_uri: str
    dataset: str
    refset: str
    variant: str
    signature: str
    alpha: float
    seed: int | None
    test: str
    n_samples: int
    versions: tuple[Version, ...]
    steps: tuple[Step, ...]
    no_tests: str | None = None

    def __post_init__(self) -> None:
        if len(self.steps) != len(self.versions):
            raise ValueError(f"{len(self.steps)} steps for {len(self.versions)} versions")

    @property
    def rows(self) -> tuple[tuple[Version, Step], ...]:
        """Every version with its step."""
        return tuple(zip(self.versions, self.steps))

    @property
    def newest(self) -> tuple[Version, Step]:
        return self.versions[-1], self.steps[-1]

    def header(self) -> dict[str, Any]:
        """The header fields of the JSON output, in their order (``no_tests`` only when there are none)."""
        out: dict[str, Any] = {"system": self.system, "experiment": self.experiment,
                               "tracking_uri": self.tracking_uri, "dataset": self.dataset, "refset": self.refset,
                               "variant": self.variant, "signature": self.signature, "alpha": self.alpha,
                               "seed": self.seed, "test": self.test, "n_samples": self.n_samples}
        if self.no_tests is not None:
            out["no_tests"] = self.no_tests
        return out
