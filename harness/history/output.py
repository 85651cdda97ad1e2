"""What ``harness-history`` prints and draws, from a :class:`~.result.History` only: the text table, JSON and TSV
rows, the line chart, and the regression gate's message."""

from __future__ import annotations

import io
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ..storage.files import atomic_write
from .result import History, HistoryError


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def rows(history: History) -> list[dict[str, Any]]:
    """One JSON/TSV row per version."""
    return [{
        "version": v.version, "bleu": v.bleu, "ci_low": v.ci_low, "ci_high": v.ci_high,
        "delta_prev": s.delta_prev, "p_prev": s.p_prev, "best_before": s.best_before, "delta_best": s.delta_best,
        "p_best": s.p_best, "regression": s.regression, "regression_vs_previous": s.regression_vs_previous,
        "regression_vs_best": s.regression_vs_best, "run_id": v.run_id, "parent_run_id": v.parent_id,
        "start_time": _iso(v.start_time), "n_runs": v.n_runs,
    } for v, s in history.rows]


def as_json(history: History) -> dict[str, Any]:
    """The header fields and the rows (``--format json``)."""
    return {**history.header(), "versions": rows(history)}


def _num(x: float | None, fmt: str, signed: bool = False) -> str:
    if x is None:
        return "-"
    return format(x, ("+" if signed else "") + fmt)


def _p(p: float | None, alpha: float) -> str:
    return "-" if p is None else f"{p:.4f}" + ("*" if p < alpha else " ")


def format_text(history: History) -> str:
    """The header and one aligned line per version, regressions named."""
    h, alpha = history, history.alpha
    head = [f"{h.system}: BLEU by version (experiment {h.experiment}, dataset {h.dataset}, refset {h.refset}, "
            f"variant {h.variant})",
            f"signature: {h.signature}",
            (f"paired tests: none ({h.no_tests})" if h.no_tests else
             f"paired tests: {h.test} with {h.n_samples} samples, seed {h.seed}; "
             f"* = p < {alpha:g}; CI = the job's bootstrap interval"), ""]
    table = [["version", "BLEU", "CI", "delta", "p(prev)", "best", "d(best)", "p(best)", "run", "scored (UTC)", ""]]
    for i, (v, s) in enumerate(h.rows):
        ci = "-" if v.ci_low is None or v.ci_high is None else f"{v.ci_low:.2f}-{v.ci_high:.2f}"
        note = []
        if s.regression_vs_previous:
            note.append(f"worse than {h.versions[i - 1].label}")
        if s.regression_vs_best and s.best_before != h.versions[i - 1].version:
            note.append(f"worse than best {s.best_before or '(none)'}")
        table.append([v.label, f"{v.bleu:.2f}", ci, _num(s.delta_prev, ".2f", True), _p(s.p_prev, alpha),
                      "-" if s.best_before is None else (s.best_before or "(none)"), _num(s.delta_best, ".2f", True),
                      _p(s.p_best, alpha), v.run_id[:8], _iso(v.start_time).replace("T", " ")[:16],
                      ("REGRESSION: " + ", ".join(note)) if note else ""])
    widths = [max(len(r[c]) for r in table) for c in range(len(table[0]))]
    right = {1, 2, 3, 4, 6, 7}
    lines = ["  ".join((cell.rjust(w) if c in right else cell.ljust(w)) for c, (cell, w) in
                       enumerate(zip(r, widths))).rstrip() for r in table]
    if len(h.versions) < 2:
        lines.append("(one version: nothing to compare yet)")
    return "\n".join(head + lines) + "\n"


def format_tsv(history: History) -> str:
    data = rows(history)
    keys = list(data[0]) if data else ["version"]
    out = ["\t".join(keys)]
    for row in data:
        out.append("\t".join("" if row[k] is None else (str(row[k]).lower() if isinstance(row[k], bool)
                                                          else repr(row[k]) if isinstance(row[k], float)
                                                          else str(row[k])) for k in keys))
    return "\n".join(out) + "\n"


def plot(path: Path, history: History) -> Path:
    """Line chart of BLEU over versions with the confidence band; significant regressions vs the previous version
    (p < alpha, BLEU lower) in red."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    versions = history.versions
    x = np.arange(len(versions))
    y = np.array([v.bleu for v in versions])
    lo = np.array([np.nan if v.ci_low is None else v.ci_low for v in versions])
    hi = np.array([np.nan if v.ci_high is None else v.ci_high for v in versions])
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(versions) + 3), 4.0))
    if np.isfinite(lo).any():
        ax.fill_between(x, lo, hi, color="tab:blue", alpha=0.2, linewidth=0, label="confidence interval")
    ax.plot(x, y, "-o", color="tab:blue", label="BLEU")
    bad = [i for i, s in enumerate(history.steps) if s.regression_vs_previous]
    if bad:
        ax.plot(x[bad], y[bad], "o", color="red", markersize=10,
                label=f"significant regression vs previous (p < {history.alpha:g})")
        for i in bad:
            ax.annotate(f"{history.steps[i].delta_prev:+.2f}", (x[i], y[i]), textcoords="offset points",
                        xytext=(0, -16), ha="center", color="red", fontsize=8)
    ax.set_xticks(x, [v.label for v in versions])
    ax.set_xlabel("version")
    ax.set_ylabel(f"BLEU ({history.variant})")
    ax.set_title(f"{history.system}: BLEU by version ({history.refset})", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=200)
    plt.close(fig)
    return atomic_write(path, buffer.getvalue())


def gate(history: History) -> str | None:
    """The regression message for the newest version, or None when it is not significantly worse."""
    h = history
    if h.no_tests:
        raise HistoryError(f"{h.no_tests}: the regression gate cannot test")
    if len(h.versions) < 2:
        raise HistoryError(f"only one version of {h.system} ({h.versions[0].label}) for refset {h.refset}, variant "
                           f"{h.variant}: the regression gate has nothing to compare")
    new, step = h.newest
    prev = h.versions[-2]
    if not step.regression:
        return None
    against = []
    if step.regression_vs_previous:
        against.append(f"the previous version {prev.label} ({prev.bleu:.2f}; delta {step.delta_prev:+.2f}, "
                       f"p = {step.p_prev:.4f})")
    if step.regression_vs_best and step.best_before != prev.version:
        best = next(v for v in h.versions if v.version == step.best_before)
        against.append(f"the best earlier version {best.label} ({best.bleu:.2f}; delta {step.delta_best:+.2f}, "
                       f"p = {step.p_best:.4f})")
    return (f"regression: {h.system} version {new.label} (BLEU {new.bleu:.2f}) is significantly worse than "
            f"{' and '.join(against)} [{h.test}, {h.n_samples} samples, alpha {h.alpha:g}, {h.refset}, "
            f"{h.variant}]")
