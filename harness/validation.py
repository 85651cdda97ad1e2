"""BLEU vs human judgments on an experiment's results: the paper's validation (Papineni et al. 2002, sections 4-5).

System level (Pearson, Spearman, Kendall tau-b with bootstrap CIs over segments), segment level (sentence BLEU vs
segment scores, pooled and item-grouped, plus WMT's tau-like), with and without human translations among the
systems; and with ``paper_protocol``: the 20-block protocol with paired t between neighbours, the reference-count
experiment (does the ranking survive with one reference?) and the comparison of variants' correlations.
Only array arithmetic on the statistics already computed: nothing is re-tokenized.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from .bleu import get_profile
from .correlation import (block_protocol, compare_system_correlations, correlate, ranking_agreement,
                          segment_level, system_level)
from .experiment import ExperimentResult, ScoredCell, score_fn

log = logging.getLogger(__name__)

SEGMENT_CI_SAMPLES = 200  # segment-level CIs: each resample re-ranks thousands of pairs; 200 keeps the demo fast


def _groups(result: ExperimentResult) -> dict[tuple[str, str], list[ScoredCell]]:
    groups: dict[tuple[str, str], list[ScoredCell]] = {}
    for cell in result.cells:
        groups.setdefault((cell.refset, cell.variant.name), []).append(cell)
    return groups


def _human(result: ExperimentResult) -> Any:
    human = result.spec.human
    if human is None:
        return None
    return human if human.higher_is_better else human.oriented()


def validate(result: ExperimentResult) -> None:
    """Fill ``result.correlation_rows`` (and, with ``paper_protocol``, block_t rows and extras)."""
    spec = result.spec
    human = _human(result)
    if human is None:
        log.info("no human judgments in this experiment: no correlations")
        return
    scored = [s.name for s in spec.systems if s.name in human.seg and np.isfinite(human.seg[s.name]).any()]
    dropped = [s.name for s in spec.systems if s.name not in scored]
    if dropped:
        log.warning("systems without human scores are left out of the correlations: %s", ", ".join(dropped))
    result.extras["correlation_dropped"] = dropped
    if len(scored) < 3:
        log.warning("fewer than 3 systems with human scores: no correlations")
        return
    hname = human.name
    full = "+".join(max(spec.refsets, key=len))
    for (refset, variant), cells in _groups(result).items():
        cells = [c for c in cells if c.system.name in scored]
        opts = cells[0].variant.options
        is_human = np.array([c.system.human for c in cells])
        hseg = np.stack([human.seg[c.system.name] for c in cells])
        masks = [(True, None)] + ([(False, ~is_human)] if is_human.any() else [])
        base = {"dataset": spec.dataset, "refset": refset, "variant": variant, "human_score": hname}
        sent = np.stack([c.sentences().score for c in cells])
        for include_human, mask in masks:
            if get_profile(opts.profile).additive:
                stats = np.stack([c.stats.matrix(opts.ref_length) for c in cells])
                rows = system_level(stats, hseg, score_fn(opts), system_mask=mask, n_samples=spec.n_samples,
                                    seed=spec.seed)
            else:
                rows = _point_rows(cells, hseg, mask)
            # segment-level CIs (each resample re-ranks every pair) for the full reference set only
            seg_samples = min(spec.n_samples, SEGMENT_CI_SAMPLES) if refset == full else 0
            rows += segment_level(sent, hseg, system_mask=mask, n_samples=seg_samples, seed=spec.seed)
            result.correlation_rows.extend({**base, "include_human": include_human, **r} for r in rows)
    if spec.paper_protocol:
        paper_protocol(result, scored)


def _point_rows(cells: list[ScoredCell], hseg: np.ndarray, mask: Any) -> list[dict[str, Any]]:
    """System-level rows without CIs, for profiles whose score is not a function of summed statistics."""
    bleu = np.array([c.score.score for c in cells])
    hum = np.nanmean(hseg, axis=1)
    if mask is not None:
        bleu, hum = bleu[mask], hum[mask]
    rows = []
    for method in ("pearson", "spearman", "kendall"):
        value, p = correlate(bleu, hum, method)
        rows.append({"level": "system", "method": method, "grouping": "none", "value": value, "p_value": p,
                     "ci_low": float("nan"), "ci_high": float("nan"), "n": int(len(bleu))})
    return rows


def paper_protocol(result: ExperimentResult, scored: list[str]) -> None:
    """Blocks with paired t, 1 vs all references, and which variant agrees best with the humans."""
    spec = result.spec
    groups = _groups(result)
    full = "+".join(max(spec.refsets, key=len))
    blocks: list[dict[str, Any]] = []
    for (refset, variant), cells in groups.items():
        opts = cells[0].variant.options
        if refset != full or not get_profile(opts.profile).additive:
            continue
        n_blocks, size = 20, 25
        if spec.n_segments < n_blocks * size:
            size = max(1, spec.n_segments // n_blocks)
        stats = np.stack([c.stats.matrix(opts.ref_length) for c in cells])
        res = block_protocol(stats, score_fn(opts), n_blocks, size, systems=[c.system.name for c in cells])
        result.significance_rows.extend({"refset": refset, "variant": variant, **row} for row in res.pairs)
        blocks.extend({"refset": refset, "variant": variant, **row} for row in res.system_rows())
    result.extras["blocks"] = blocks
    agreement = []
    for variant in spec.variants:
        full_scores = {c.system.name: c.score.score for c in groups.get((full, variant.name), [])}
        for refset in spec.refsets:
            name = "+".join(refset)
            if name == full:
                continue
            cells = groups.get((name, variant.name), [])
            names = [c.system.name for c in cells]
            agree = ranking_agreement([c.score.score for c in cells], [full_scores[n] for n in names])
            agreement.append({"variant": variant.name, "refset": name, "versus": full, **agree})
    result.extras["ranking_agreement"] = agreement
    result.extras["variant_comparison"] = compare_variants(result, groups, full, scored)


def compare_variants(result: ExperimentResult, groups: dict, full: str, scored: list[str]) -> list[dict[str, Any]]:
    """Paired bootstrap over segments: the best variant's system-level Pearson r (MT systems, all references)
    against each other variant's, on the same resamples."""
    spec = result.spec
    human = _human(result)
    with_human = not any(s.human for s in spec.systems)  # compare on MT systems only when humans are among them
    corr = {r["variant"]: r["value"] for r in result.correlation_rows
            if r["refset"] == full and r["level"] == "system" and r["method"] == "pearson"
            and bool(r["include_human"]) == with_human}
    candidates = [v for v in spec.variants if get_profile(v.options.profile).additive and v.name in corr
                  and np.isfinite(corr[v.name])]
    if len(candidates) < 2:
        return []
    best = max(candidates, key=lambda v: corr[v.name])
    rows = []

    def inputs(variant: Any) -> tuple[np.ndarray, Any, np.ndarray]:
        cells = [c for c in groups[(full, variant.name)] if c.system.name in scored and not c.system.human]
        return (np.stack([c.stats.matrix(variant.options.ref_length) for c in cells]), score_fn(variant.options),
                np.stack([human.seg[c.system.name] for c in cells]))

    sa, fa, hseg = inputs(best)
    for other in candidates:
        if other.name == best.name:
            continue
        sb, fb, _ = inputs(other)
        comp = compare_system_correlations(sa, fa, sb, fb, hseg, method="pearson", n_samples=spec.n_samples,
                                           seed=spec.seed)
        rows.append({"best": best.name, "other": other.name, "r_best": comp.value_a, "r_other": comp.value_b,
                     "delta": comp.delta, "p_value": comp.p_value, "ci_low": comp.ci_low, "ci_high": comp.ci_high})
    return rows
