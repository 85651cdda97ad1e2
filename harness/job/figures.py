"""Figures of a job, for a paper: PNG at 200 dpi and PDF (vector), drawn from the result only.

- ``bleu_by_system``: BLEU per system against the full reference set with bootstrap intervals, systems sorted by
  score, one panel (and axis) per metric family (word-level and character-level BLEU are not on one scale),
  variants that give identical numbers drawn once.
- ``bleu_vs_human_<kind>``: BLEU against each kind of human score, one panel per distinct variant, least-squares
  line over the MT systems, human translations marked; labels placed so they cover no other label or marker.
- ``blocks`` (paper protocol): mean block BLEU +- one standard deviation per system.

Colours are the Okabe-Ito palette (distinct for colour-blind readers); legends sit outside the data.
matplotlib is imported lazily (Agg backend: no display needed). :func:`drawn_aside` draws them in a child process
forked before the job has its result: it imports matplotlib meanwhile and, once sent the result, draws the
figures (split over two processes) while the job writes its tables.
"""

from __future__ import annotations

import contextlib
import math
import os
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..storage.files import atomic_write, inside
from .aside import Aside, aside
from .result import JobResult

OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
MARKERS = ["o", "s", "D", "^", "v", "P", "X", "*"]
DPI = 200


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 8, "axes.titlesize": 9, "axes.labelsize": 8, "legend.fontsize": 7,
                         "pdf.fonttype": 42, "svg.fonttype": "none"})
    return plt


def _freeze_layout(fig: Any) -> Any:
    """Lay the figure out once (constrained layout, without rendering pixels) and keep that layout for every later
    draw; returns the renderer, for placing labels in the final display coordinates."""
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    return fig.canvas.get_renderer()


def _save(fig: Any, folder: Path, stem: str) -> list[str]:
    """``stem.png`` (200 dpi) and ``stem.pdf``, written atomically; returns their names. The layout is the one
    frozen by :func:`_freeze_layout` (one draw per format)."""
    import io

    plt = pyplot()
    names = []
    for ext in ("png", "pdf"):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=ext, dpi=DPI)
        atomic_write(inside(folder, f"{stem}.{ext}"), buffer.getvalue())
        names.append(f"{stem}.{ext}")
    plt.close(fig)
    return names


def family(variant: Any) -> str:
    """The scale a variant's scores are on: BLEU over characters is on another scale than BLEU over words, chrF
    on its own."""
    if variant.family == "scores":  # an imported metric is on its own scale
        return variant.name
    if not variant.is_bleu:
        return variant.measure.label
    return "character-level BLEU" if str(variant.options.tokenize) == "char" else "word-level BLEU"


def _distinct_variants(result: JobResult) -> list[Any]:
    from .report import identical_variants

    same = identical_variants(result)
    return [v for v in result.spec.variants if v.name not in same]


def bleu_by_system(result: JobResult, folder: Path) -> list[str]:
    plt = pyplot()
    full = result.full_refset
    variants = _distinct_variants(result)
    families: dict[str, list[Any]] = {}
    for v in variants:
        families.setdefault(family(v), []).append(v)
    cells = {(c.system.label, c.variant.name): c for c in result.cells_of(full)}
    systems = list(dict.fromkeys(c.system.label for c in result.cells_of(full)))
    colour = {v.name: OKABE_ITO[i % len(OKABE_ITO)] for i, v in enumerate(variants)}
    marker = {v.name: MARKERS[i % len(MARKERS)] for i, v in enumerate(variants)}
    height = max(2.2, 0.32 * len(systems) + 0.9)
    fig, axes = plt.subplots(1, len(families), figsize=(3.6 * len(families) + 1.4, height), squeeze=False,
                             layout="constrained")
    for ax, (fam, vs) in zip(axes[0], families.items()):
        key = vs[0].name
        order = sorted(systems, key=lambda s: np.nan_to_num(cells[(s, key)].score.score, nan=-np.inf))  # best on top
        offsets = np.linspace(-0.22, 0.22, len(vs)) if len(vs) > 1 else [0.0]
        for off, v in zip(offsets, vs):
            xs = np.array([cells[(s, v.name)].score.score for s in order])
            lo = np.array([cells[(s, v.name)].ci_low for s in order])
            hi = np.array([cells[(s, v.name)].ci_high for s in order])
            ys = np.arange(len(order)) + off
            has = np.isfinite(lo)
            ax.errorbar(xs[has], ys[has], xerr=[xs[has] - lo[has], hi[has] - xs[has]], fmt="none",
                        ecolor=colour[v.name], elinewidth=1, capsize=2, alpha=0.8)
            ax.plot(xs, ys, linestyle="none", marker=marker[v.name], color=colour[v.name], markersize=4,
                    label=v.name)
        ax.set_yticks(np.arange(len(order)),
                      [s + (" (human)" if cells[(s, key)].system.human else "") for s in order])
        ax.set_xlabel(fam)
        ax.grid(axis="x", alpha=0.3)
        ax.set_ylim(-0.6, len(order) - 0.4)
        ax.set_title(fam[0].upper() + fam[1:] if fam.endswith("BLEU") else fam)
    for ax in axes[0][1:]:
        ax.tick_params(axis="y", labelleft=True)
    handles, labels = [], []
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="outside lower center", ncol=min(6, len(labels)), frameon=False,
               title=f"variant (references {full}; bars: 95% bootstrap interval)")
    fig.suptitle(f"{'BLEU' if all(v.is_bleu for v in variants) else 'Scores'} per system, {result.dataset}")
    _freeze_layout(fig)
    return _save(fig, folder, "bleu_by_system")


def place_labels(ax: Any, xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray, texts: Sequence[str],
                 renderer: Any,
                 fontsize: float = 6.5) -> None:
    """Labels beside their points where they overlap no other label and no marker and stay inside the axes: the
    nearest free place, right or left of the point, level with it or moved up or down in steps of half a label
    (greedy, lowest points first, in display coordinates), with a thin line back to the point when moved. Call it
    after the figure's layout is final (the display coordinates must be those of the saved figure)."""
    trans = ax.transData
    pts = trans.transform(np.column_stack([xs, ys]))
    inside = ax.get_window_extent(renderer)
    boxes: list[tuple[float, float, float, float]] = []
    marker_r = 4.0
    markers = [(x - marker_r, y - marker_r, x + marker_r, y + marker_r) for x, y in pts]
    x_mid = np.mean(ax.get_xlim())

    def free(box: tuple[float, float, float, float]) -> bool:
        return not any(box[0] <= b[2] and b[0] <= box[2] and box[1] <= b[3] and b[1] <= box[3]
                       for b in boxes + markers)

    def fits(box: tuple[float, float, float, float]) -> bool:
        return inside.x0 <= box[0] and box[2] <= inside.x1 and inside.y0 <= box[1] and box[3] <= inside.y1

    placed = []
    for i in np.argsort(pts[:, 1]):
        px, py = pts[i]
        text = ax.text(xs[i], ys[i], texts[i], fontsize=fontsize)
        bb = text.get_window_extent(renderer)
        text.remove()
        w, h = bb.width, bb.height
        prefer_right = xs[i] <= x_mid
        candidates = [(right, py + sign * k * (h / 2 + 0.5)) for k in range(120) for sign in ((1, -1) if k else (1,))
                      for right in (prefer_right, not prefer_right)]

        def box_of(right: bool, y: float) -> tuple[float, float, float, float]:
            left = px + 6.0 if right else px - 6.0 - w
            return (left, y - h / 2, left + w, y + h / 2)

        options = [(c, box_of(*c)) for c in candidates]
        (right, y), box = next(((c, b) for c, b in options if fits(b) and free(b)),
                               next(((c, b) for c, b in options if free(b)), options[0]))
        boxes.append(box)
        target = trans.inverted().transform((box[0] if right else box[2], y))
        placed.append((i, target, abs(y - py) > 1.0, right))
    for i, (tx, ty), moved, right in placed:
        ax.annotate(texts[i], (xs[i], ys[i]), xytext=(tx, ty), textcoords="data", fontsize=fontsize,
                    ha="left" if right else "right", va="center",
                    arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "0.5"} if moved else None)


def _kinds(result: JobResult) -> list[Any]:
    """The kinds of human scores with correlations (each has its ``bleu_vs_human_<kind>``)."""
    return [h for h in result.inputs.human if any(r.human_score == h.name for r in result.correlations)]


def _bleu_vs_human(result: JobResult, human: Any, folder: Path) -> list[str]:
    plt = pyplot()
    full = result.full_refset
    variants = _distinct_variants(result)
    h = human.oriented()
    ncol = min(4, len(variants))
    nrow = math.ceil(len(variants) / ncol)
    row_height = 2.9 + 0.1 * max(0, len(h.sys) - 12)  # room for the labels of many systems
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.3 * ncol, row_height * nrow + 0.6), squeeze=False,
                             sharey=True, layout="constrained")
    for ax in axes.ravel()[len(variants):]:
        ax.set_visible(False)
    points = []
    for k, (ax, v) in enumerate(zip(axes.ravel(), variants)):
        cells = [c for c in result.cells_of(full, v.name) if c.system.label in h.sys and np.isfinite(c.score.score)]
        x = np.array([c.score.score for c in cells])
        y = np.array([h.sys[c.system.label] for c in cells])
        human_mask = np.array([c.system.human for c in cells])
        ax.scatter(x[~human_mask], y[~human_mask], s=14, color=OKABE_ITO[0], label="MT system", zorder=3)
        if human_mask.any():
            ax.scatter(x[human_mask], y[human_mask], s=22, color=OKABE_ITO[5], marker="D",
                       label="human translation", zorder=3)
        mt = ~human_mask
        title = v.name
        if mt.sum() >= 2 and np.ptp(x[mt]) > 0:
            slope, icept = np.polyfit(x[mt], y[mt], 1)
            xs = np.linspace(x[mt].min(), x[mt].max(), 10)
            ax.plot(xs, slope * xs + icept, color="0.45", lw=1, zorder=2, label="least squares (MT)")
            if mt.sum() >= 3:
                title += f": r = {np.corrcoef(x[mt], y[mt])[0, 1]:.3f} (MT)"
        ax.set_title(title)
        ax.set_xlabel(f"BLEU ({family(v).split(' ')[0]})" if v.is_bleu else family(v))
        if k % ncol == 0:
            ax.set_ylabel(f"human score: {h.name}" + ("" if human.higher_is_better else " (negated)"))
        ax.grid(alpha=0.3)
        pad = 0.25 * (np.ptp(x) or 1.0)
        ax.set_xlim(x.min() - pad, x.max() + pad)
        ypad = 0.08 * (np.ptp(y) or 1.0)
        ax.set_ylim(min(ax.get_ylim()[0], y.min() - ypad), max(ax.get_ylim()[1], y.max() + ypad))
        points.append((ax, x, y, [c.system.label for c in cells]))
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False)
    what = "BLEU" if all(v.is_bleu for v in variants) else "Metrics"
    fig.suptitle(f"{what} vs human judgments ({h.name}), {result.dataset}, references {full}")
    renderer = _freeze_layout(fig)  # labels are placed in the final display coordinates
    for ax, x, y, text in points:
        place_labels(ax, x, y, text, renderer)
    return _save(fig, folder, f"bleu_vs_human_{human.name}")


def blocks(result: JobResult, folder: Path) -> list[str]:
    if not result.blocks:
        return []
    plt = pyplot()
    variants = list(dict.fromkeys(b.variant for b in result.blocks))[:3]
    first = [b for b in result.blocks if b.variant == variants[0]]
    order = [b.system.label for b in first]
    fig, ax = plt.subplots(figsize=(6.5, max(2.2, 0.32 * len(order) + 0.9)), layout="constrained")
    offsets = np.linspace(-0.2, 0.2, len(variants)) if len(variants) > 1 else [0.0]
    for i, (off, v) in enumerate(zip(offsets, variants)):
        rows = {b.system.label: b for b in result.blocks if b.variant == v}
        ys = np.arange(len(order))[::-1] + off
        ax.errorbar([rows[s].mean for s in order], ys, xerr=[rows[s].std for s in order], fmt=MARKERS[i],
                    color=OKABE_ITO[i], capsize=2, markersize=4, label=v)
    ax.set_yticks(np.arange(len(order))[::-1], order)
    ax.set_xlabel(f"mean BLEU over {len(first[0].blocks)} blocks (+- one standard deviation)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title("The paper's block protocol")
    _freeze_layout(fig)
    return _save(fig, folder, "blocks")


def _figures(result: JobResult) -> list[Callable[[Path], list[str]]]:
    """Every figure of the job as a function of the folder it is drawn into, in the order of :func:`draw`."""
    return [partial(bleu_by_system, result), *(partial(_bleu_vs_human, result, h) for h in _kinds(result)),
            *([partial(blocks, result)] if result.blocks else [])]


def draw(result: JobResult, folder: Path) -> list[str]:
    """Every figure of the job into ``folder``; returns the file names."""
    return [name for names in _draw_share(result, folder, 0, 1) for name in names]


def _draw_share(result: JobResult, folder: Path, share: int, shares: int) -> list[list[str]]:
    """Figures ``share``, ``share + shares``, ... of :func:`_figures`; the file names of each."""
    return [fig(folder) for fig in _figures(result)[share::shares]]


def _share_of(result: JobResult, folder: Path, share: int, shares: int, _sent: Any) -> list[list[str]]:
    """:func:`_draw_share` as the work of an :func:`~.aside.aside` child (which is sent nothing it needs)."""
    return _draw_share(result, folder, share, shares)


def warm_up() -> None:
    """What drawing needs before it has anything to draw: pyplot, both writers, the PDF font subsetter and the
    font (imports and look-ups; drawing a figure ahead would save little more)."""
    pyplot()
    import fontTools.subset  # type: ignore[import-untyped]  # noqa: F401 - the PDF writer's, imported when the first PDF is saved
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.backends.backend_pdf  # noqa: F401
    from matplotlib import font_manager

    font_manager.findfont(font_manager.FontProperties())


def _draw_split(result: JobResult, folder: Path) -> list[str]:
    """Every figure, drawn by this process and, on two cores with two figures or more, a copy of it forked now
    (warm: nothing to import again), each every second figure; the file names in the order of :func:`draw`."""
    shares = min(2 if (os.cpu_count() or 1) >= 2 else 1, len(_figures(result))) or 1
    with contextlib.ExitStack() as stack:
        others = [stack.enter_context(aside(partial(_share_of, result, folder, k, shares), "drawing the figures"))
                  for k in range(1, shares)]
        for other in others:
            other.send(None)
        parts = [_draw_share(result, folder, 0, shares), *(other() for other in others)]
    return [name for k in range(sum(len(p) for p in parts)) for name in parts[k % shares][k // shares]]


@contextlib.contextmanager
def drawn_aside(folder: Path, close_fds: Sequence[int] = ()) -> Iterator[Aside]:
    """A forked child process that gets ready to draw at once (:func:`warm_up`, while the caller computes the
    result), and draws every figure of the result it is sent (:meth:`~harness.job.aside.Aside.send`) into
    ``folder`` while the caller goes on (:func:`harness.job.aside.aside`; the figures split over two processes,
    see :func:`_draw_split`). The block's value (its :attr:`~harness.job.aside.Aside.pid` the child's), called,
    waits and returns the file names (as :func:`draw`) or raises the child's error; leaving the block without
    waiting kills the child. ``close_fds`` are closed in the child."""
    with aside(partial(_draw_split, folder=folder), "drawing the figures", close_fds, prepare=warm_up) as child:
        yield child
