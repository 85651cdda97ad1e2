"""Figures of a job, for a paper: PNG at 200 dpi (and vector PDF or SVG when asked for: ``formats``), a column
(3.3 in) or a page (6.9 in) wide, drawn from the job's tables alone (:class:`FigureTables`:
``FigureTables.read(job_folder)`` redraws them).

- ``bleu_by_system``: scores per system against the full reference set with bootstrap intervals, one panel (and
  axis) per scale (word-level and character-level BLEU, chrF, each imported metric), the systems in one order in
  every panel (the first variant's, best on top), variants that give identical numbers drawn once.
- ``bleu_vs_human_<kind>``: each distinct variant against each kind of human scores (``system_scores``'s
  ``human.<kind>``; variants with the same score for every system share a panel), least-squares line over the MT
  systems, human translations marked; labels placed so they cover no other label or marker; every axis says which
  way is better.
- ``blocks`` (paper protocol): mean block BLEU +- one standard deviation per system (the ``blocks`` table).

Colours are the Okabe-Ito palette (distinct for colour-blind readers); legends sit outside the data.
matplotlib is imported lazily (Agg backend: no display needed). :func:`drawn_aside` draws them in a child process
forked before the job has its result: it imports matplotlib meanwhile and, once sent the result, draws the
figures (split over two processes) while the job writes its tables.
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from .. import native
from ..storage.files import atomic_write, inside
from .aside import Aside, aside, in_shares

OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
MARKERS = ["o", "s", "D", "^", "v", "P", "X", "*"]
DPI = 200
#: What a figure is written as unless asked for more (``figure_formats``): a PDF costs a third of the drawing time.
PNG_ONLY = ("png",)
#: A paper's column and page widths (inches): a figure is one or the other.
COLUMN, PAGE = 3.3, 6.9


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # drawn at the resolution they are saved in: the layout's text extents serve the PNG (at another resolution every
    # text is laid out again: 0.4 s of a 2.5 s figure of 15 panels)
    plt.rcParams.update({"figure.dpi": DPI, "font.size": 8, "axes.titlesize": 9, "axes.labelsize": 8,
                         "legend.fontsize": 7, "pdf.fonttype": 42, "svg.fonttype": "none"})
    return plt


def _save(fig: Any, folder: Path, stem: str, formats: Sequence[str]) -> list[str]:
    """``stem.png`` (200 dpi) and ``stem.<format>`` for each other of ``formats``, written atomically; returns
    their names. The PNG's draw lays the figure out (constrained layout) and places its labels
    (:func:`_labels_placed_when_drawn`); that layout is kept for every later format: one draw per format (a draw
    to lay the figure out first cost 0.1 s of ru-en's 1.1-s figures of 12 panels)."""
    import io

    plt = pyplot()
    names = []
    for ext in formats:
        buffer = io.BytesIO()
        fig.savefig(buffer, format=ext, dpi=DPI)
        fig.set_layout_engine("none")  # what the first draw laid out stays
        atomic_write(inside(folder, f"{stem}.{ext}"), buffer.getvalue())
        names.append(f"{stem}.{ext}")
    plt.close(fig)
    return names


@dataclass(frozen=True)
class FigureTables:
    """What the figures read: the job's tables and their metadata, nothing else, so that anyone can redraw every
    figure from the Parquet files (:meth:`read`) as the job drew it."""

    dataset: str
    full_refset: str
    system_scores: list[dict[str, Any]]  # the rows of the full reference set, in table order
    kinds: dict[str, dict[str, Any]]  # kinds of human scores with correlations: higher_is_better, column
    blocks: list[dict[str, Any]]

    @classmethod
    def of(cls, tables: Mapping[str, Any], meta: Mapping[str, str]) -> FigureTables:
        """From Arrow tables (``build_tables``) and the metadata the job writes with them."""
        full = meta["full_refset"]
        rows = [r for r in tables["system_scores"].to_pylist() if r["refset"] == full]
        correlated = set(tables["correlations"].column("human_score").to_pylist()) if "correlations" in tables \
            else set()
        kinds = {k: v for k, v in json.loads(meta.get("human_kinds", "{}")).items() if k in correlated}
        blocks = tables["blocks"].to_pylist() if "blocks" in tables else []
        return cls(meta["dataset"], full, rows, kinds, blocks)

    @classmethod
    def of_result(cls, result: Any) -> FigureTables:
        """From a job's result, through the tables it writes (what the job itself does)."""
        from .tables import build_tables, table_metadata

        return cls.of(build_tables(result), table_metadata(result))

    @classmethod
    def read(cls, folder: str | Path) -> FigureTables:
        """From a job folder's Parquet files."""
        import pyarrow.parquet as pq

        root = Path(folder)
        tables = {p.stem: pq.read_table(p) for p in root.glob("*.parquet")}
        meta = tables["system_scores"].schema.metadata or {}
        return cls.of(tables, {k.decode(): v.decode() for k, v in meta.items()})


def family(row: Mapping[str, Any]) -> str:
    """The scale a row's scores are on: BLEU over characters is on another scale than BLEU over words, chrF on its
    own, an imported metric on its own."""
    if row["metric"] == "scores":
        return str(row["variant"])
    if row["metric"] == "chrf":
        return "chrF"
    return "character-level BLEU" if "|tok:char|" in row["signature"] else "word-level BLEU"


def _label(row: Mapping[str, Any]) -> str:
    version = row.get("system_version") or ""
    return row["system"] + (f"@{version}" if version else "")


def _distinct(data: FigureTables) -> list[str]:
    """The variants to draw, in table order: one of each group of variants with identical numbers."""
    return list(dict.fromkeys(r["variant"] for r in data.system_scores if r["same_as"] is None))


def _same_points(data: FigureTables, variants: Sequence[str]) -> list[list[str]]:
    """``variants`` grouped by the points a scatter of their system scores draws: the same scale and the same score
    for every system (sacrebleu's smoothing methods give one corpus BLEU: their panels would be copies). In the
    order of each group's first variant."""
    groups: dict[tuple[Any, ...], list[str]] = {}
    for v in variants:
        rows = [r for r in data.system_scores if r["variant"] == v]
        key = (family(rows[0]) if rows else v, *((_label(r), r["score"]) for r in rows))
        groups.setdefault(key, []).append(v)
    return list(groups.values())


def _higher(what: str) -> str:
    return f"{what}\n(higher is better)"


def bleu_by_system(data: FigureTables, folder: Path, formats: Sequence[str] = PNG_ONLY) -> list[str]:
    """Scores per system, one panel per scale, the systems in one order everywhere (by the first variant's score,
    best on top)."""
    plt = pyplot()
    variants = _distinct(data)
    cells = {(_label(r), r["variant"]): r for r in data.system_scores}
    families: dict[str, list[str]] = {}
    for v in variants:
        first = next(r for r in data.system_scores if r["variant"] == v)
        families.setdefault(family(first), []).append(v)
    systems = list(dict.fromkeys(_label(r) for r in data.system_scores))
    key = variants[0]
    order = sorted(systems, key=lambda s: np.nan_to_num(cells[(s, key)]["score"], nan=-np.inf))  # best on top
    colour = {v: OKABE_ITO[i % len(OKABE_ITO)] for i, v in enumerate(variants)}
    # colour and marker cycle at different rates: every variant of up to 64 gets its own pair
    marker = {v: MARKERS[(i + i // len(OKABE_ITO)) % len(MARKERS)] for i, v in enumerate(variants)}
    width = COLUMN if len(families) == 1 else PAGE
    height = max(2.0, 0.22 * len(systems) + 1.3)
    ncol = min(len(families), 3)
    nrow = math.ceil(len(families) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(width, height * nrow), squeeze=False, layout="constrained")
    for ax in axes.ravel()[len(families):]:
        ax.set_visible(False)
    for k, (ax, (fam, vs)) in enumerate(zip(axes.ravel(), families.items())):
        offsets = np.linspace(-0.22, 0.22, len(vs)) if len(vs) > 1 else [0.0]
        for off, v in zip(offsets, vs):
            xs = np.array([cells[(s, v)]["score"] for s in order], dtype=float)
            lo = np.array([np.nan if cells[(s, v)]["ci_low"] is None else cells[(s, v)]["ci_low"] for s in order],
                          dtype=float)
            hi = np.array([np.nan if cells[(s, v)]["ci_high"] is None else cells[(s, v)]["ci_high"]
                           for s in order], dtype=float)
            ys = np.arange(len(order)) + off
            has = np.isfinite(lo)
            ax.errorbar(xs[has], ys[has], xerr=[xs[has] - lo[has], hi[has] - xs[has]], fmt="none",
                        ecolor=colour[v], elinewidth=1, capsize=2, alpha=0.8)
            ax.plot(xs, ys, linestyle="none", marker=marker[v], color=colour[v], markersize=3.5, label=v)
        labels = [s + (" (human)" if cells[(s, key)]["human"] else "") for s in order]
        ax.set_yticks(np.arange(len(order)), labels if k % ncol == 0 else [])
        ax.set_xlabel(_higher(fam))
        ax.grid(axis="x", alpha=0.3)
        ax.set_ylim(-0.6, len(order) - 0.4)
        ax.xaxis.set_major_locator(plt.MaxNLocator(4))
    handles, names = [], []
    for ax in axes.ravel():
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in names:
                handles.append(h)
                names.append(lab)
    fig.legend(handles, names, loc="outside lower center", ncol=min(4 if width == PAGE else 2, len(names)),
               frameon=False, title=f"references {data.full_refset}; bars: 95% bootstrap interval")
    return _save(fig, folder, "bleu_by_system", formats)


def _labels_placed_when_drawn(ax: Any, xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray,
                              texts: Sequence[str], fontsize: float = 6.5) -> None:
    """:func:`place_labels` at the first draw of the figure: an artist of ``ax`` that places the labels once the
    layout is final (a figure's draw lays it out before it draws any artist), draws them in that draw, and leaves
    them to the axes for later draws (the labels are the axes' texts and lines from then on)."""
    from matplotlib.artist import Artist

    class PlacedLabels(Artist):
        placed = False

        def draw(self, renderer: Any) -> None:
            if not self.placed:
                self.placed = True
                for artist in place_labels(ax, xs, ys, texts, renderer, fontsize):
                    artist.draw(renderer)  # added during the axes' draw: not in the list it draws

    ax.add_artist(PlacedLabels()).set_zorder(3.5)  # above the markers, as the labels were


def place_labels(ax: Any, xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray, texts: Sequence[str],
                 renderer: Any, fontsize: float = 6.5) -> list[Any]:
    """Labels beside their points where they overlap no other label and no marker and stay inside the axes: the
    nearest free place, right or left of the point, level with it or moved up or down in steps of half a label
    (greedy, lowest points first, in display coordinates), with a thin line back to the point when moved. Call it
    after the figure's layout is final (the display coordinates must be those of the saved figure); returns the
    texts and lines it added to ``ax``, which are left out of any later layout."""
    trans = ax.transData
    pts = trans.transform(np.column_stack([xs, ys]))
    inside = ax.get_window_extent(renderer)
    boxes: list[tuple[float, float, float, float]] = []
    pixel = ax.figure.dpi / 100  # the distances below are pixels at 100 dpi
    marker_r, gap = 4.0 * pixel, 6.0 * pixel
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
        candidates = [(right, py + sign * k * (h / 2 + 0.5 * pixel)) for k in range(120)
                      for sign in ((1, -1) if k else (1,)) for right in (prefer_right, not prefer_right)]

        def box_of(right: bool, y: float) -> tuple[float, float, float, float]:
            left = px + gap if right else px - gap - w
            return (left, y - h / 2, left + w, y + h / 2)

        options = [(c, box_of(*c)) for c in candidates]
        (right, y), box = next(((c, b) for c, b in options if fits(b) and free(b)),
                               next(((c, b) for c, b in options if free(b)), options[0]))
        boxes.append(box)
        target = trans.inverted().transform((box[0] if right else box[2], y))
        placed.append((i, target, box if abs(y - py) > pixel else None, right))  # a moved label keeps its box
    two_points = 2.0 * ax.figure.dpi / 72
    added = []
    for i, (tx, ty), moved_box, right in placed:
        if moved_box is not None:
            added += _leader(ax, moved_box, pts[i], two_points)
        added.append(ax.text(tx, ty, texts[i], fontsize=fontsize, ha="left" if right else "right", va="center"))
    for artist in added:
        artist.set_in_layout(False)
    return added


def _leader(ax: Any, box: tuple[float, float, float, float], point: np.ndarray, two_points: float) -> list[Any]:
    """A thin grey line from a moved label (``box``, display coordinates) to its point, as ``annotate``'s arrow
    ``"-"`` drew it: aimed from the label's centre, beginning 2 points outside the label's box padded by 2 points
    and ending 2 points short of the point; a plain line, without the arrow's clipping against the box (a third of
    the time to save a 15-panel figure of 19 systems). Nothing where the label is that close to its point."""
    centre = np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2])
    span = point - centre
    length = float(np.hypot(*span))
    if length == 0:
        return []
    unit = span / length
    half = np.array([(box[2] - box[0]) / 2, (box[3] - box[1]) / 2]) + two_points  # the padded box
    with np.errstate(divide="ignore"):
        leave = float(np.min(np.where(unit != 0, half / np.abs(unit), np.inf)))  # where the line leaves it
    begin, end = leave + two_points, length - two_points
    if end <= begin:
        return []
    (x0, y0), (x1, y1) = ax.transData.inverted().transform([centre + begin * unit, centre + end * unit])
    return ax.plot([x0, x1], [y0, y1], lw=0.4, color="0.5", scalex=False, scaley=False, clip_on=False, zorder=2.5)


def _bleu_vs_human(data: FigureTables, kind: str, folder: Path, formats: Sequence[str] = PNG_ONLY) -> list[str]:
    """Each distinct variant's score against one kind of human scores, one panel each (column width for one,
    two columns at page width for more; variants with the same score for every system share a panel, titled with
    all their names), least-squares line over the MT systems, human translations marked."""
    plt = pyplot()
    info = data.kinds[kind]
    sign = 1.0 if info["higher_is_better"] else -1.0
    shared = _same_points(data, _distinct(data))
    variants = [names[0] for names in shared]
    names_of = {names[0]: names for names in shared}
    ncol = 1 if len(variants) == 1 else 2
    nrow = math.ceil(len(variants) / ncol)
    n_sys = len({_label(r) for r in data.system_scores})
    panel_h = 2.3 + 0.04 * max(0, n_sys - 10)
    fig, axes = plt.subplots(nrow, ncol, figsize=(COLUMN if ncol == 1 else PAGE, panel_h * nrow + 0.5),
                             squeeze=False, sharey=True, layout="constrained")
    for ax in axes.ravel()[len(variants):]:
        ax.set_visible(False)
    human_axis = _higher(f"{kind}" + ("" if info["higher_is_better"] else ", negated"))
    for k, (ax, v) in enumerate(zip(axes.ravel(), variants)):
        rows = [r for r in data.system_scores if r["variant"] == v and r[info["column"]] is not None
                and np.isfinite(r[info["column"]]) and r["score"] is not None and np.isfinite(r["score"])]
        x = np.array([r["score"] for r in rows], dtype=float)
        y = sign * np.array([r[info["column"]] for r in rows], dtype=float)
        human_mask = np.array([bool(r["human"]) for r in rows], dtype=bool)
        ax.scatter(x[~human_mask], y[~human_mask], s=12, color=OKABE_ITO[0], label="MT system", zorder=3)
        if human_mask.any():
            ax.scatter(x[human_mask], y[human_mask], s=18, color=OKABE_ITO[5], marker="D",
                       label="human translation", zorder=3)
        mt = ~human_mask
        title = " = ".join(names_of[v])
        if mt.sum() >= 2 and np.ptp(x[mt]) > 0:
            slope, icept = np.polyfit(x[mt], y[mt], 1)
            xs = np.linspace(x[mt].min(), x[mt].max(), 10)
            ax.plot(xs, slope * xs + icept, color="0.45", lw=1, zorder=2, label="least squares (MT)")
            if mt.sum() >= 3:
                title += ("\n" if len(names_of[v]) > 1 else ": ") + f"r = {np.corrcoef(x[mt], y[mt])[0, 1]:.3f} (MT)"
        ax.set_title(title)
        fam = family(rows[0]) if rows else v
        ax.set_xlabel(_higher(f"BLEU, {fam.split('-')[0]}-level" if fam.endswith("BLEU") else fam))
        if k % ncol == 0:
            ax.set_ylabel(human_axis)
        ax.grid(alpha=0.3)
        if len(x):
            pad = 0.3 * (np.ptp(x) or 1.0)
            ax.set_xlim(x.min() - pad, x.max() + pad)
            ypad = 0.1 * (np.ptp(y) or 1.0)
            ax.set_ylim(min(ax.get_ylim()[0], y.min() - ypad), max(ax.get_ylim()[1], y.max() + ypad))
        ax.xaxis.set_major_locator(plt.MaxNLocator(4))
        # placed in the final display coordinates, when the figure is drawn
        _labels_placed_when_drawn(ax, x, y, [_label(r) for r in rows], fontsize=5.5)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False)
    return _save(fig, folder, f"bleu_vs_human_{kind}", formats)


def blocks(data: FigureTables, folder: Path, formats: Sequence[str] = PNG_ONLY) -> list[str]:
    if not data.blocks:
        return []
    plt = pyplot()
    variants = list(dict.fromkeys(b["variant"] for b in data.blocks))[:3]
    first = [b for b in data.blocks if b["variant"] == variants[0]]
    order = [_label(b) for b in first]
    fig, ax = plt.subplots(figsize=(PAGE, max(2.2, 0.26 * len(order) + 0.9)), layout="constrained")
    offsets = np.linspace(-0.2, 0.2, len(variants)) if len(variants) > 1 else [0.0]
    for i, (off, v) in enumerate(zip(offsets, variants)):
        rows = {_label(b): b for b in data.blocks if b["variant"] == v}
        ys = np.arange(len(order))[::-1] + off
        ax.errorbar([rows[s]["mean"] for s in order], ys, xerr=[rows[s]["std"] for s in order], fmt=MARKERS[i],
                    color=OKABE_ITO[i], capsize=2, markersize=4, label=v)
    ax.set_yticks(np.arange(len(order))[::-1], order)
    ax.set_xlabel(_higher(f"mean BLEU over {len(first[0]['block_scores'])} blocks, +- one standard deviation"))
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _save(fig, folder, "blocks", formats)


def _figures(result: FigureTables, formats: Sequence[str] = PNG_ONLY) -> list[Callable[[Path], list[str]]]:
    """Every figure of the job as a function of the folder it is drawn into (as ``formats``), in the order of
    :func:`draw`."""
    return [partial(bleu_by_system, result, formats=formats),
            *(partial(_bleu_vs_human, result, k, formats=formats) for k in result.kinds),
            *([partial(blocks, result, formats=formats)] if result.blocks else [])]


def draw(result: FigureTables, folder: Path, formats: Sequence[str] = PNG_ONLY) -> list[str]:
    """Every figure of the job into ``folder``, each as every one of ``formats`` (``png`` first: ``figure_formats``
    of the job's config); returns the file names."""
    return [name for names in _draw_share(result, folder, 0, 1, formats) for name in names]


def _draw_share(result: FigureTables, folder: Path, share: int, shares: int, formats: Sequence[str]
                ) -> list[list[str]]:
    """Figures ``share``, ``share + shares``, ... of :func:`_figures`; the file names of each."""
    return [fig(folder) for fig in _figures(result, formats)[share::shares]]


def warm_up(formats: Sequence[str] = PNG_ONLY) -> None:
    """What drawing needs before it has anything to draw: pyplot, the writers of ``formats`` (PDF's font subsetter
    too) and the font (imports and look-ups; drawing a figure ahead would save little more)."""
    pyplot()
    import matplotlib.backends.backend_agg  # noqa: F401
    from matplotlib import font_manager

    if "pdf" in formats:
        import fontTools.subset  # type: ignore[import-untyped]  # noqa: F401 - the PDF writer's, imported when the first PDF is saved
        import matplotlib.backends.backend_pdf  # noqa: F401
    if "svg" in formats:
        import matplotlib.backends.backend_svg  # noqa: F401
    font_manager.findfont(font_manager.FontProperties())


def _draw_split(result: FigureTables, folder: Path, formats: Sequence[str] = PNG_ONLY) -> list[str]:
    """Every figure, drawn by this process and, on two cores with two figures or more, a copy of it forked now
    (warm: nothing to import again; :func:`~.aside.in_shares`), each every second figure; the file names in the
    order of :func:`draw`."""
    shares = min(2, native.cpus(), len(_figures(result))) or 1
    parts = in_shares(lambda share, _progress: _draw_share(result, folder, share, shares, formats),
                      list(range(shares)), "drawing the figures")
    return [name for k in range(sum(len(p) for p in parts)) for name in parts[k % shares][k // shares]]


@contextlib.contextmanager
def drawn_aside(folder: Path, close_fds: Sequence[int] = (), formats: Sequence[str] = PNG_ONLY) -> Iterator[Aside]:
    """A forked child process that gets ready to draw at once (:func:`warm_up`, while the caller computes the
    result), and draws every figure of the result it is sent (:meth:`~harness.job.aside.Aside.send`) into
    ``folder`` while the caller goes on (:func:`harness.job.aside.aside`; the figures split over two processes,
    see :func:`_draw_split`). The block's value (its :attr:`~harness.job.aside.Aside.pid` the child's), called,
    waits and returns the file names (as :func:`draw`) or raises the child's error; leaving the block without
    waiting kills the child. ``close_fds`` are closed in the child."""
    with aside(partial(_draw_split, folder=folder, formats=formats), "drawing the figures", close_fds,
               prepare=partial(warm_up, formats)) as child:
        yield child
