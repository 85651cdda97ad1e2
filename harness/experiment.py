"""Scoring an experiment: every system x reference set x variant, from statistics computed once.

Tokens are computed once per (text, tokenizer, case); statistics once per (system text, references, tokenizer,
case, order) and cached on disk by content hash (``runs/cache/stats``), so a rerun or a new variant sharing a
tokenizer does not re-tokenize. Every variant is then array arithmetic on the cached statistics.
This module does no tracking and writes no tables: it returns results for :mod:`harness.store`,
:mod:`harness.tracking` and :mod:`harness.report`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from . import token_ids
from .bleu import BleuOptions, corpus_score, get_profile, orders_needed, sentence_scores
from .config import ExperimentSpec, SystemInput, Variant
from .corpus import TextFile, refset_name
from .scoring import case_and_tokenize
from .stats import (
    SegmentStats,
    count_encoded,
    count_statistics,
    encode_references,
    prefer_compiled_for_text,
)

log = logging.getLogger(__name__)

CACHE_VERSION = "1"


@dataclass(frozen=True)
class TokenKey:
    """What tokens depend on: tokenizer and case mode."""

    tokenize: str
    case: str

    @classmethod
    def of(cls, opts: BleuOptions) -> TokenKey:
        return cls(str(opts.tokenize), opts.case_mode)


@dataclass
class ScoredCell:
    """One system x refset x variant: its statistics and scores."""

    system: SystemInput
    refset: str
    refs_used: tuple[str, ...]
    variant: Variant
    stats: SegmentStats
    score: Any  # harness.bleu.BleuScore
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    _sentences: Any = field(default=None, repr=False)

    def sentences(self) -> Any:
        """Sentence BLEU of every segment (:class:`harness.bleu.BleuArrays`), computed once."""
        if self._sentences is None:
            self._sentences = sentence_scores(self.stats, self.variant.options)
        return self._sentences


@dataclass
class ExperimentResult:
    spec: ExperimentSpec
    cells: list[ScoredCell] = field(default_factory=list)
    significance_rows: list[dict[str, Any]] = field(default_factory=list)
    correlation_rows: list[dict[str, Any]] = field(default_factory=list)
    block_rows: list[dict[str, Any]] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)
    cache_hits: int = 0
    cache_misses: int = 0


class StatisticsCache:
    """Per-segment statistics on disk, keyed by the content hashes of the texts and everything tokens depend on."""

    def __init__(self, root: Path, enabled: bool = True) -> None:
        self.root = root
        self.enabled = enabled
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(hyp: TextFile, refs: Sequence[TextFile], tk: TokenKey, order: int) -> str:
        h = hashlib.sha256()
        for part in (CACHE_VERSION, hyp.sha256, *[r.sha256 for r in refs], tk.tokenize, tk.case, str(order)):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()

    def load(self, key: str) -> SegmentStats | None:
        path = self.root / key[:2] / f"{key}.npz"
        if not self.enabled or not path.exists():
            return None
        try:
            with np.load(path) as z:
                stats = SegmentStats(z["hyp_len"], z["ref_lens"], z["matches"], z["totals"])
        except (OSError, ValueError, KeyError) as exc:  # a damaged cache entry is recomputed, never trusted
            log.warning("ignoring unreadable cache entry %s (%s)", path, exc)
            return None
        self.hits += 1
        return stats

    def save(self, key: str, stats: SegmentStats) -> None:
        path = self.root / key[:2] / f"{key}.npz"
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, hyp_len=stats.hyp_len, ref_lens=stats.ref_lens, matches=stats.matches,
                         totals=stats.totals)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


class Tokens:
    """Tokens of every text, computed at most once per (text content, tokenizer, case) in a job."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, TokenKey], list[list[str]]] = {}

    def get(self, text: TextFile, opts: BleuOptions) -> list[list[str]]:
        key = (text.sha256, TokenKey.of(opts))
        if key not in self._cache:
            self._cache[key] = case_and_tokenize(text.lines, opts)
        return self._cache[key]


def _orders(variants: Iterable[Variant]) -> dict[TokenKey, tuple[int, BleuOptions]]:
    """Per token key: the order to count (at least 4, the highest any variant needs) and options to tokenize with."""
    out: dict[TokenKey, tuple[int, BleuOptions]] = {}
    for v in variants:
        tk = TokenKey.of(v.options)
        need = max(4, orders_needed(v.options))
        if tk not in out or need > out[tk][0]:
            out[tk] = (need, v.options)
    return out


StatsKey = tuple[str, tuple[str, ...], TokenKey]


def compute_statistics(spec: ExperimentSpec, progress: Any = None) -> tuple[dict[StatsKey, SegmentStats],
                                                                             StatisticsCache]:
    """Statistics of every (system, references used, token key), from the cache when possible."""
    cache = StatisticsCache(spec.runs_dir / "cache" / "stats", enabled=not spec.force)
    tokens = Tokens()
    orders = _orders(spec.variants)
    out: dict[StatsKey, SegmentStats] = {}
    jobs = {}
    for refset in spec.refsets:
        for system in spec.systems:
            used = spec.refs_for(system, refset)
            for tk, (order, opts) in orders.items():
                jobs.setdefault((system.name, used, tk), (system, used, tk, order, opts))
    missing = []
    for system, used, tk, order, opts in jobs.values():
        key = cache.key(system.text, [spec.refs[r] for r in used], tk, order)
        stats = cache.load(key)
        if stats is None:
            missing.append((key, system, used, tk, order, opts))
        else:
            out[(system.name, used, tk)] = stats
            if progress is not None:
                progress.update(1)
    # all blocks to count, together: worth the compiled kernel's start-up?
    prefer_compiled_for_text(sum(sum(map(len, s.text.lines)) * (1 + len(u)) for _, s, u, *_ in missing))
    encoded: dict[tuple[tuple[str, ...], TokenKey], Any] = {}
    for key, system, used, tk, order, opts in missing:
        cache.misses += 1
        fast = token_ids.usable(opts)  # straight from text to ids once the compiled kernel is loaded
        if (used, tk) not in encoded:
            encoded[(used, tk)] = (token_ids.encode_references([spec.refs[r].lines for r in used], opts) if fast
                                   else encode_references([tokens.get(spec.refs[r], opts) for r in used]))
        if fast:
            h_ids, h_off = token_ids.encode_hypotheses(system.text.lines, encoded[(used, tk)], opts)
            stats = count_encoded(h_ids, h_off, encoded[(used, tk)], order)
        else:
            stats = count_statistics(tokens.get(system.text, opts), encoded[(used, tk)], order)
        cache.save(key, stats)
        out[(system.name, used, tk)] = stats
        if progress is not None:
            progress.update(1)
    log.info("statistics: %d from cache, %d computed", cache.hits, cache.misses)
    return out, cache


def n_statistics_jobs(spec: ExperimentSpec) -> int:
    """How many statistics blocks :func:`compute_statistics` produces (for progress bars)."""
    keys = set()
    for refset in spec.refsets:
        for system in spec.systems:
            for tk in _orders(spec.variants):
                keys.add((system.name, spec.refs_for(system, refset), tk))
    return len(keys)


def score_experiment(spec: ExperimentSpec, progress: Any = None) -> ExperimentResult:
    """Scores of every system x refset x variant (statistics once; every variant from them)."""
    stats, cache = compute_statistics(spec, progress)
    result = ExperimentResult(spec, cache_hits=cache.hits, cache_misses=cache.misses)
    for refset in spec.refsets:
        for variant in spec.variants:
            for system in spec.systems:
                used = spec.refs_for(system, refset)
                s = stats[(system.name, used, TokenKey.of(variant.options))].truncate_order(
                    orders_needed(variant.options))
                result.cells.append(ScoredCell(system, refset_name(refset), used, variant, s,
                                               corpus_score(s, variant.options)))
    return result


def sentence_rows(cell: ScoredCell) -> dict[str, Any]:
    """Column arrays of the ``segment_scores`` rows of one cell."""
    arrays = cell.sentences()
    ref_len = cell.stats.ref_len(cell.variant.options.ref_length)  # type: ignore[arg-type]
    return {
        "seg_id": np.arange(len(cell.stats), dtype=np.int64),
        "sentence_bleu": np.asarray(arrays.score, dtype=np.float64),
        "hyp_len": cell.stats.hyp_len,
        "ref_len": ref_len,
        "matches": cell.stats.matches,
        "totals": cell.stats.totals,
    }


def score_fn(opts: BleuOptions) -> Any:
    """BLEU (0-100) of summed statistics ``[..., 2 + 2N]`` under ``opts`` (for resampling)."""
    profile = get_profile(opts.profile)
    return lambda sums: profile.from_sums(sums, opts).score
