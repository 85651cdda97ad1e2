"""The statistics of a job: every (system, references used, tokenizer and case) once, cached on disk.

Tokens depend on the tokenizer and the case mode only, so every variant that shares them shares one statistics
block (counted to the highest n-gram order any of them needs); everything else about a variant is arithmetic on
it. Blocks are counted by the one text pipeline (:mod:`harness.text.pipeline`): the references of a block are
prepared once and every system missing from the cache is counted against them.

The cache (``runs_dir/cache/stats``) is keyed by the content hashes of the texts and everything tokens depend
on, nothing else: a system's name and version are not inputs of its statistics, so byte-identical outputs (two
versions of a checkpoint that did not change, a system renamed) are counted once, in a job and across jobs.
Each entry stores its key and a SHA-256 of its arrays: an entry that is damaged (empty, truncated), unreadable,
or whose content does not match its key is recomputed with a warning, never trusted. Writing the cache is best
effort: a full disk costs the cache, not the job.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from ..core.chrf import ChrfOptions, ChrfStats
from ..core.options import BleuOptions, orders_needed
from ..core.stats import SegmentStats
from ..errors import HarnessError
from ..storage.files import OutputError, atomic_write, remove_stale_temporaries
from ..text.chrf_counting import ChrfReferences
from ..text.pipeline import PreparedReferences, decide_compiled
from .aside import in_shares
from .inputs import Inputs, SystemInput
from .spec import Variant

log = logging.getLogger(__name__)

CACHE_VERSION = "2"
_ARRAYS = ("hyp_len", "ref_lens", "matches", "totals")


@dataclass(frozen=True)
class TokenKey:
    """What tokens depend on: tokenizer and case mode."""

    tokenize: str
    case: str

    @classmethod
    def of(cls, opts: BleuOptions) -> TokenKey:
        return cls(str(opts.tokenize), opts.case_mode)


#: A statistics block: (system label, references used, token key).
BlockKey = tuple[str, tuple[str, ...], TokenKey]


def _digest(arrays: Mapping[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name, value in arrays.items():
        arr = np.ascontiguousarray(value, dtype=np.int64)
        h.update(name.encode() + str(arr.shape).encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def _bleu_arrays(stats: SegmentStats) -> dict[str, np.ndarray]:
    return {name: getattr(stats, name) for name in _ARRAYS}


class StatisticsCache:
    """Per-segment statistics on disk, keyed by content hashes; entries carry their key and a checksum."""

    def __init__(self, root: Path, enabled: bool = True) -> None:
        self.root = root
        self.enabled = enabled
        self.hits = 0
        self.misses = 0
        self._cleaned: set[Path] = set()

    @staticmethod
    def key(system: SystemInput, refs: Iterable[str], tk: TokenKey, order: int) -> str:
        """The entry of ``system``'s statistics against the references with these content hashes (in this order),
        under these tokens and n-gram order: content only (not the system's name or version)."""
        h = hashlib.sha256()
        for part in (CACHE_VERSION, system.text.sha256, *refs, tk.tokenize, tk.case, str(order)):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.npz"

    @staticmethod
    def chrf_key(system: SystemInput, refs: Iterable[str], opts: ChrfOptions) -> str:
        """The entry of ``system``'s chrF statistics against the references with these content hashes (in this
        order) under these options (each segment's best reference depends on the F-score's ``beta``)."""
        h = hashlib.sha256()
        for part in (CACHE_VERSION, "chrf", system.text.sha256, *refs, json.dumps(dataclasses.asdict(opts),
                                                                                  sort_keys=True)):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()

    def load(self, key: str) -> SegmentStats | None:
        arrays = self._load(key, _ARRAYS)
        return None if arrays is None else SegmentStats(*(arrays[name] for name in _ARRAYS))

    def save(self, key: str, stats: SegmentStats) -> None:
        self._save(key, _bleu_arrays(stats))

    def load_chrf(self, key: str) -> ChrfStats | None:
        arrays = self._load(key, ("stats", "refs"))
        if arrays is None:
            return None
        n_refs, variable = (int(x) for x in arrays["refs"])
        return ChrfStats(arrays["stats"], n_refs, bool(variable))

    def save_chrf(self, key: str, stats: ChrfStats) -> None:
        self._save(key, {"stats": stats.stats, "refs": np.array([stats.n_refs, int(stats.variable_refs)])})

    def _load(self, key: str, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
        path = self.path(key)
        if not self.enabled or not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(bytes(z["meta"]).decode("utf-8"))
                arrays = {name: np.asarray(z[name], dtype=np.int64) for name in names}
            if meta.get("key") != key or meta.get("version") != CACHE_VERSION:
                raise ValueError("it holds the statistics of another key")
            if meta.get("sha256") != _digest(arrays):
                raise ValueError("its checksum does not match its content")
        except Exception as exc:  # a damaged entry is recomputed, never trusted
            log.warning("statistics cache entry %s is damaged (%s: %s); recomputing it", path, type(exc).__name__,
                        exc)
            return None
        self.hits += 1
        return arrays

    def _save(self, key: str, arrays: Mapping[str, np.ndarray]) -> None:
        if not self.enabled:
            return
        path = self.path(key)
        if path.parent not in self._cleaned:
            remove_stale_temporaries(path.parent)
            self._cleaned.add(path.parent)
        meta = json.dumps({"key": key, "version": CACHE_VERSION, "sha256": _digest(arrays)}).encode()

        def write(f: Any) -> None:
            buffer = io.BytesIO()
            entries: dict[str, Any] = {"meta": np.frombuffer(meta, dtype=np.uint8), **arrays}
            np.savez(buffer, **entries)
            f.write(buffer.getvalue())

        try:
            atomic_write(path, write)
        except OutputError as exc:
            log.warning("statistics not cached (%s); the job goes on", exc)


def token_keys(variants: Iterable[Variant]) -> dict[TokenKey, tuple[int, BleuOptions]]:
    """Per token key: the order to count (at least 4, the highest any variant needs) and options to tokenize with."""
    out: dict[TokenKey, tuple[int, BleuOptions]] = {}
    for v in variants:
        if not v.is_bleu:
            continue
        tk = TokenKey.of(v.options)
        need = max(4, orders_needed(v.options))
        if tk not in out or need > out[tk][0]:
            out[tk] = (need, v.options)
    return out


def blocks(inputs: Inputs, variants: Iterable[Variant]) -> dict[BlockKey, tuple[SystemInput, int, BleuOptions]]:
    """Every statistics block the job needs, with its system, order and tokenizing options."""
    keys = token_keys(variants)
    out: dict[BlockKey, tuple[SystemInput, int, BleuOptions]] = {}
    for refset in inputs.refsets:
        for system in inputs.systems:
            used = inputs.refs_for(system, refset)
            for tk, (order, opts) in keys.items():
                out.setdefault((system.label, used, tk), (system, order, opts))
    return out


ChrfKey = tuple[str, tuple[str, ...], ChrfOptions]


def chrf_blocks(inputs: Inputs, variants: Iterable[Variant]) -> dict[ChrfKey, SystemInput]:
    """Every chrF statistics block the job needs: (system, references used, options)."""
    out: dict[ChrfKey, SystemInput] = {}
    for v in variants:
        if v.family == "chrf":
            for refset in inputs.refsets:
                for system in inputs.systems:
                    out.setdefault((system.label, inputs.refs_for(system, refset), v.options), system)
    return out


def n_blocks(inputs: Inputs, variants: Iterable[Variant]) -> int:
    """How many blocks :func:`job_statistics` delivers (its progress bar's total)."""
    variants = list(variants)
    return len(blocks(inputs, variants)) + len(chrf_blocks(inputs, variants))


@dataclass(frozen=True)
class Statistics:
    """The statistics blocks of a job and where they came from (``chrf``: the chrF blocks, counted for the job)."""

    blocks: Mapping[BlockKey, SegmentStats]
    hits: int
    misses: int
    chrf: Mapping[ChrfKey, ChrfStats] = field(default_factory=dict)

    def of(self, system: SystemInput, refs_used: tuple[str, ...], opts: BleuOptions) -> SegmentStats:
        """The block a BLEU variant reads, cut to the orders it needs."""
        return self.blocks[(system.label, refs_used, TokenKey.of(opts))].truncate_order(orders_needed(opts))

    def of_variant(self, system: SystemInput, refs_used: tuple[str, ...], variant: Variant) -> Any:
        """The statistics a variant of any family reads."""
        if variant.is_bleu:
            return self.of(system, refs_used, variant.options)
        if variant.family == "scores":  # imported: read, not counted
            return variant.options.cell(system.label)
        return self.chrf[(system.label, refs_used, variant.options)]


def chrf_statistics_of(inputs: Inputs, variants: Iterable[Variant], cache: StatisticsCache | None = None,
                       progress: Any = None) -> dict[ChrfKey, ChrfStats]:
    """chrF statistics of every block, from ``cache`` when it has them; the others counted with the variants that
    share their character n-grams (order, case, whitespace: chrF and chrF++) together, every reference once
    (:class:`~harness.text.chrf_counting.ChrfReferences`, with the largest word order among them), each system
    matched against each reference once, and every variant's and reference set's statistics chosen from those (the
    best reference per segment under the variant's own F-score, as sacrebleu's)."""
    names = list(inputs.refs)
    groups: dict[tuple[int, bool, bool], dict[str, list[tuple[ChrfKey, tuple[str, ...], str]]]] = {}
    widest: dict[tuple[int, bool, bool], ChrfOptions] = {}
    systems: dict[str, SystemInput] = {}
    out: dict[ChrfKey, ChrfStats] = {}
    for key, system in chrf_blocks(inputs, variants).items():
        label, used, opts = key
        entry = StatisticsCache.chrf_key(system, [inputs.refs[r].sha256 for r in used], opts)
        found = cache.load_chrf(entry) if cache is not None else None
        if found is not None:
            out[key] = found
            if progress is not None:
                progress.update(1)
            continue
        systems[label] = system
        chars = (opts.char_order, opts.lowercase, opts.whitespace)
        if chars not in widest or opts.word_order > widest[chars].word_order:
            widest[chars] = opts
        groups.setdefault(chars, {}).setdefault(label, []).append((key, used, entry))
    for chars, per_system in groups.items():
        refs = ChrfReferences.build([inputs.refs[r].lines for r in names], widest[chars])

        def counted(label: str, bar: Any) -> list[ChrfStats]:  # run at once, in this iteration (in_shares)
            per_ref = refs.per_reference(systems[label].text.lines)
            found = []
            for key, used, _ in per_system[label]:
                found.append(refs.select(per_ref, [names.index(r) for r in used], key[2]))
                if bar is not None:
                    bar.update(1)
            return found

        # the systems split over the cores (forked copies, the references shared): counting is numpy on one core
        for label, found in zip(per_system, in_shares(counted, list(per_system), "counting chrF", progress,
                                                      raises=(HarnessError,))):
            for (key, _, entry), stats in zip(per_system[label], found):
                out[key] = stats
                if cache is not None:
                    cache.misses += 1
                    cache.save_chrf(entry, stats)
    return out


def job_statistics(inputs: Inputs, variants: Iterable[Variant], cache: StatisticsCache,
                   compiled: bool | None = None, progress: Any = None) -> Statistics:
    """Statistics of every block, from the cache when possible; the others counted per (references, tokens):
    the references prepared once, every missing system counted against them. ``compiled`` as in the pipeline
    (None: decided by the size of everything to count). chrF's blocks as :func:`chrf_statistics_of` counts them,
    in the same cache."""
    variants = list(variants)
    needed = blocks(inputs, variants)
    out: dict[BlockKey, SegmentStats] = {}
    missing: dict[tuple[tuple[str, ...], TokenKey], list[tuple[BlockKey, str, SystemInput]]] = {}
    orders: dict[tuple[tuple[str, ...], TokenKey], tuple[int, BleuOptions]] = {}
    twins: dict[str, list[BlockKey]] = {}  # blocks whose key an earlier block of this job already counts
    counting: set[str] = set()
    for bkey, (system, order, opts) in needed.items():
        _, used, tk = bkey
        key = cache.key(system, [inputs.refs[r].sha256 for r in used], tk, order)
        if key in counting:
            twins.setdefault(key, []).append(bkey)
            continue
        stats = cache.load(key)
        if stats is not None:
            out[bkey] = stats
            if progress is not None:
                progress.update(1)
            continue
        counting.add(key)
        missing.setdefault((used, tk), []).append((bkey, key, system))
        orders[(used, tk)] = (order, opts)
    chars = sum(sum(map(len, system.text.lines)) * (1 + len(used))
                for (used, _), todo in missing.items() for _, _, system in todo)
    use = decide_compiled(chars, compiled)
    for group, todo in missing.items():
        used, _ = group
        order, opts = orders[group]
        prepared = PreparedReferences.build([inputs.refs[r].lines for r in used], opts, order, systems=len(todo),
                                            compiled=use)
        counted = prepared.statistics_of([system.text.lines for _, _, system in todo])
        for (bkey, key, _), stats in zip(todo, counted):
            cache.misses += 1
            cache.save(key, stats)
            out[bkey] = stats
            if progress is not None:
                progress.update(1)
            for twin in twins.get(key, ()):  # a byte-identical text: the same statistics, not counted again
                cache.hits += 1
                out[twin] = stats
                if progress is not None:
                    progress.update(1)
    log.info("statistics: %d from cache, %d computed", cache.hits, cache.misses)
    chrf = chrf_statistics_of(inputs, variants, cache, progress)
    return Statistics(out, cache.hits, cache.misses, chrf)
