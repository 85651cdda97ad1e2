"""The report of the paper's validation, computed from the job's numbers (in process, on the demo)."""

from __future__ import annotations

import fcntl
import os
import re
import time
from pathlib import Path

import pytest

from harness.job import figures, report
from harness.job.analysis import analyse
from harness.job.inputs import layout_of, load_inputs
from harness.job.spec import build_spec, bundled_data
from harness.job.statistics import StatisticsCache, job_statistics
from support import base_config

pytestmark = pytest.mark.slow  # end to end: the fast tier (-m 'not slow') leaves it out


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("paper")
    cfg = base_config(tmp, bleu=["paper", "sacrebleu", "char"], n_samples=200, paper_protocol=True,
                      dataset={"root": bundled_data("wmt21_news_ende"), "refsets": "each"}, experiment_name="pv")
    spec = build_spec(cfg)
    inputs = load_inputs(spec, layout_of(spec))
    result = analyse(spec, inputs, job_statistics(inputs, spec.variants, StatisticsCache(tmp / "c")), "pv")
    return result, tmp


def test_paper_protocol_sections(paper):
    result, _ = paper
    text = report.render(result)
    for heading in ("## Correlation with human judgments: mqm", "Table 1 analogue", "### Table 2 analogue",
                    "### One reference against all", "## Which variant agrees best", "## Discussion"):
        assert heading in text, heading
    assert "Papineni et al. (2002) report r = 0.99" in text and "the paper's 0.96 is" in text
    blocks = text.split("### Table 2 analogue")[1].split("###")[0]
    assert not re.search(r"\| 0\.00 \|$", blocks, re.M)  # p-values are never printed as 0.00
    # paper and sacrebleu share every corpus number here, not the sentence scores (smoothing at segment level): the
    # report names what is equal and shows both (it said "exactly the scores" and showed one)
    assert ("Variant `sacrebleu` gives the corpus BLEU, bootstrap intervals and significance tests of `paper` on this "
            "data; its sentence BLEU and correlations (WMT statistics included) differ, so both are shown.") in text
    assert "gives every number of" not in text
    assert "| sacrebleu |" in text.split("## Correlation")[1] and "| paper |" in text.split("## Correlation")[1]
    shown = list(result.agreement)
    kept = sum(a.agreement.identical_order for a in shown)
    assert f"{kept} of {len(shown)} single-reference rankings" in text


@pytest.fixture(scope="module")
def drawn_here(paper, tmp_path_factory):
    """(names, folder): the paper job's figures drawn once, in this process, in every format (as
    ``figure_formats=[svg,pdf,png]`` asks); the other tests compare with them."""
    result, _ = paper
    folder = tmp_path_factory.mktemp("here")
    return figures.draw(figures.FigureTables.of_result(result), folder, ("png", "pdf", "svg")), folder


def test_figures_for_a_paper(drawn_here):
    names, tmp = drawn_here
    assert names == [f"{stem}.{ext}" for stem in ("bleu_by_system", "bleu_vs_human_mqm", "blocks")
                     for ext in ("png", "pdf", "svg")]
    from PIL import Image

    with Image.open(tmp / "bleu_by_system.png") as img:
        dpi = img.info.get("dpi", (0, 0))
        assert round(dpi[0]) == 200 and img.size[0] > 1000
    assert (tmp / "bleu_vs_human_mqm.pdf").read_bytes().startswith(b"%PDF")
    assert b"<svg" in (tmp / "blocks.svg").read_bytes()[:1000]


def test_figures_drawn_aside_are_the_figures_drawn_here(paper, drawn_here, tmp_path):
    """A forked child, warmed up before it has the result (matplotlib imported, a figure drawn to memory), draws
    the same files (PNG bytes equal) and returns their names in the same order; the parent goes on meanwhile.
    Unless asked for more, a figure is a PNG only."""
    result, _ = paper
    names, here = drawn_here
    pngs = [n for n in names if n.endswith(".png")]
    assert len(pngs) == 3  # BLEU per system, BLEU vs MQM, the blocks
    with figures.drawn_aside(tmp_path) as wait:
        wait.send(figures.FigureTables.of_result(result))
        assert wait() == pngs and wait() == pngs
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(pngs)
    for name in pngs:
        assert (tmp_path / name).read_bytes() == (here / name).read_bytes(), name


def _alive(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == 0
    except ChildProcessError:  # reaped
        return False


def test_without_fork_the_figures_are_drawn_in_process_when_sent(paper, tmp_path, monkeypatch):
    """Where ``os.fork`` does not exist, the same block warms up and draws in this process, when sent the result
    (nothing before), both shares of the figures, and returns the names in the order of the figures. (Drawing
    itself in this process: :func:`drawn_here`; the shares stand in for it here.)"""
    result, _ = paper
    monkeypatch.delattr(os, "fork")
    warmed = []
    monkeypatch.setattr(figures, "warm_up", lambda formats: warmed.append(True))

    def share(result, folder, share, shares, formats):  # figure k of three, drawn by this process
        assert warmed == [True]
        names = [f"{k}-{os.getpid()}.png" for k in range(3)[share::shares]]
        for name in names:
            (folder / name).write_bytes(b"")
        return [[name] for name in names]

    monkeypatch.setattr(figures, "_draw_share", share)
    with figures.drawn_aside(tmp_path) as wait:
        assert wait.pid == os.getpid() and not warmed and not list(tmp_path.iterdir())
        wait.send(figures.FigureTables.of_result(result))
        names = wait()
    assert names == [f"{k}-{os.getpid()}.png" for k in range(3)]
    assert sorted(p.name for p in tmp_path.iterdir()) == names


def test_two_processes_draw_every_second_figure_each(paper, tmp_path, monkeypatch):
    """On two cores the warm child forks a copy of itself once it has the result: figures 0 and 2 are drawn by
    one process, figure 1 by another; the names come back in the order of the figures."""
    result, _ = paper
    monkeypatch.setattr(figures, "_draw_share", lambda result, folder, share, shares, formats: [
        [f"{k}:{os.getpid()}"] for k in range(3)[share::shares]])
    with figures.drawn_aside(tmp_path) as wait:
        wait.send(figures.FigureTables.of_result(result))
        drawn = [name.split(":") for name in wait()]
    assert [k for k, _ in drawn] == ["0", "1", "2"]
    pids = [pid for _, pid in drawn]
    assert pids[0] == pids[2] == str(wait.pid) and str(os.getpid()) not in pids
    assert (pids[1] != pids[0]) == ((os.cpu_count() or 1) >= 2)


def test_a_failing_child_is_an_error_naming_its_cause(paper, tmp_path, monkeypatch):
    result, _ = paper

    def broken(result, folder, share, shares, formats):
        raise ValueError("no such colour")

    monkeypatch.setattr(figures, "_draw_share", broken)  # the children inherit it
    with figures.drawn_aside(tmp_path) as wait:
        pids = [wait.pid]
        wait.send(figures.FigureTables.of_result(result))
        with pytest.raises(RuntimeError, match=r"^drawing the figures failed: ValueError: no such colour\n"):
            wait()
        with pytest.raises(RuntimeError, match="see the first error"):
            wait()
    assert not any(_alive(pid) for pid in pids)


def test_the_children_get_ready_before_the_result_and_a_failed_warm_up_is_the_error(paper, tmp_path, monkeypatch):
    """The children warm up at once, before anything is sent (the parent computes the result meanwhile); an
    error while warming up is raised when the parent waits, naming its cause, and sending to a child that died
    warming up is not an error of its own."""
    result, _ = paper
    ready = tmp_path / "ready"
    ready.mkdir()
    monkeypatch.setattr(figures, "warm_up", lambda formats: (ready / str(os.getpid())).touch())
    with figures.drawn_aside(tmp_path / "out") as wait:
        for _ in range(6000):
            if (ready / str(wait.pid)).exists():
                break
            time.sleep(0.01)
        assert (ready / str(wait.pid)).exists()  # nothing sent yet
        assert _alive(wait.pid)  # and the child waits for it

    def broken(formats) -> None:
        raise ImportError("no module named 'matplotlib'")

    monkeypatch.setattr(figures, "warm_up", broken)
    with figures.drawn_aside(tmp_path / "out") as wait:
        time.sleep(0.2)  # the child has likely died by now: sending is still quiet
        wait.send(figures.FigureTables.of_result(result))
        with pytest.raises(RuntimeError, match=r"^drawing the figures failed: ImportError: no module named"):
            wait()


def _gone(pid: int) -> bool:
    """Process ``pid`` (not necessarily our child) has ended: no such process, or a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (OSError, IndexError):
        return True


def test_the_child_lets_the_folder_lock_go_and_dies_with_the_block(paper, tmp_path, monkeypatch):
    """The child closes the lock's descriptor (the folder is free once the parent releases it, though the child
    and its copy drawing the other figures still run), and leaving the block by an error kills and reaps the
    child at once; its copy dies with it (Linux)."""
    result, _ = paper
    lock = tmp_path / ".lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    started = tmp_path / "started"

    def stuck(result, folder, share, shares, formats):  # says it has started, then draws "forever"
        (started / str(share)).write_text(str(os.getpid()))
        time.sleep(60)
        return []

    monkeypatch.setattr(figures, "_draw_share", stuck)
    started.mkdir()
    drawers = 2 if (os.cpu_count() or 1) >= 2 else 1
    with pytest.raises(KeyError):
        with figures.drawn_aside(tmp_path, close_fds=[fd]) as wait:
            pids = [wait.pid]
            wait.send(figures.FigureTables.of_result(result))
            for _ in range(6000):  # the processes close their copies of fd before they draw
                if len([p for p in started.iterdir() if p.read_text()]) == drawers:
                    break
                time.sleep(0.01)
            copies = [int(p.read_text()) for p in started.iterdir() if int(p.read_text()) != wait.pid]
            assert len(copies) == drawers - 1
            os.close(fd)  # the parent lets go: no copy may keep the lock
            other = os.open(lock, os.O_RDWR)
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            finally:
                os.close(other)
            assert all(_alive(pid) for pid in pids) and not any(_gone(pid) for pid in copies)
            raise KeyError("the job failed")
    assert not any(_alive(pid) for pid in pids)
    for _ in range(500):  # the copy gets SIGKILL when the child dies, asynchronously
        if all(_gone(pid) for pid in copies):
            break
        time.sleep(0.01)
    assert all(_gone(pid) for pid in copies)


def _small_job(root, tmp_path):
    """The analysed job of the dataset folder ``root`` (sacrebleu and char, 50 resamples), in process."""
    cfg = base_config(tmp_path, bleu=["sacrebleu", "char"], n_samples=50, dataset={"root": str(root)},
                      experiment_name=root.name)
    spec = build_spec(cfg, [f"dataset.root={root}"])
    inputs = load_inputs(spec, layout_of(spec))
    return analyse(spec, inputs, job_statistics(inputs, spec.variants, StatisticsCache(tmp_path / "c")),
                   root.name)


def test_two_kinds_of_sparse_human_scores(tmp_path):
    """A dataset shaped like de-en's (two kinds of human scores of the same systems, some segments unjudged): the
    sentence about the systems' spread is said once, not once per kind; the notes and figures are Markdown
    sections (a blank line after their headings); the variant comparison says which way its delta goes."""
    import json

    from support import make_dataset, read_lines, write_lines

    root = make_dataset(tmp_path / "two_kinds", n=30, systems=("Nemo", "UEdin", "Online-W", "Facebook-AI"),
                        human=True)
    rows = [line.split("\t") for line in read_lines(root / "human" / "seg.tsv")[1:]]
    rows = [r for r in rows if not (r[0] == "Nemo" and int(r[1]) < 5)]  # Nemo's first 5 segments unjudged
    write_lines(root / "human" / "a.tsv", ["system\tseg_id\tscore", *("\t".join(r) for r in rows)])
    write_lines(root / "human" / "b.tsv", ["system\tseg_id\tscore",
                                           *(f"{s}\t{i}\t{100 + 3 * float(v)!r}" for s, i, v in rows)])
    (root / "human" / "seg.tsv").unlink()
    (root / "meta.json").write_text(json.dumps({"human_scores": {
        "ka": {"higher_is_better": False, "file_seg": "human/a.tsv"},
        "kb": {"higher_is_better": False, "file_seg": "human/b.tsv"}}}))
    result = _small_job(root, tmp_path)
    assert [h.name for h in result.inputs.human] == ["ka", "kb"]
    text = report.render(result, ["bleu_by_system.png"])
    assert text.count("**Spread.**") == 1
    assert text.count("**System level (") == 2
    assert "\n## Notes\n\n- " in text and "Nemo (25 of 30)" in text
    assert "\n## Figures\n\n![bleu_by_system](bleu_by_system.png)\n" in text
    assert "| best | other | r best | r other | delta (other - best) |" in text


def test_labels_of_crowded_points_stay_inside_and_apart():
    """19 systems, most of them in one corner (de-en's scatter): every label is inside its axes, no two labels
    overlap, and no label covers a marker. The labels are placed by the figure's first draw, after its layout, and
    are the axes' texts from then on (a second draw adds none)."""
    import numpy as np

    plt = figures.pyplot()
    rng = np.random.default_rng(3)
    xs = np.r_[rng.normal(52, 0.6, 16), 46.0, 53.0, 50.0]
    ys = np.r_[rng.normal(0.1, 0.02, 16), -0.06, -0.12, 0.0]
    fig, ax = plt.subplots(figsize=(3.3, 3.6), layout="constrained")
    ax.scatter(xs, ys, s=14)
    ax.set_xlim(xs.min() - 2, xs.max() + 2)
    ax.set_title("a title the labels must not cover")
    figures._labels_placed_when_drawn(ax, xs, ys, [f"system-{i}" for i in range(len(xs))])
    assert not ax.texts
    fig.canvas.draw()
    fig.set_layout_engine("none")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    from matplotlib.text import Text

    boxes = [Text.get_window_extent(t, renderer) for t in ax.texts]  # the text's box, without the line to its point
    assert len(boxes) == len(xs)
    for b in boxes:
        assert inside.x0 - 0.5 <= b.x0 and b.x1 <= inside.x1 + 0.5
        assert inside.y0 - 0.5 <= b.y0 and b.y1 <= inside.y1 + 0.5
    for i, a in enumerate(boxes):
        assert not any(a.overlaps(b) for b in boxes[i + 1:])
    points = ax.transData.transform(np.column_stack([xs, ys]))
    assert not any(b.contains(px, py) for b in boxes for px, py in points)
    plt.close(fig)


def test_system_level_human_scores_only(tmp_path):
    """Human scores with no segment scores (``sys.tsv`` alone), one reference: the report shows what those can
    give (system-level correlations, pairwise accuracy) and no empty segment-level table or column."""
    from support import make_dataset, read_lines, write_lines

    systems = ("Nemo", "UEdin", "Online-W", "Facebook-AI")
    root = make_dataset(tmp_path / "sys_only", n=40, systems=systems)
    rows = [line for line in read_lines(Path(bundled_data("wmt21_news_ende")) / "human" / "sys.tsv")[1:]
            if line.split("\t")[0] in systems]
    write_lines(root / "human" / "sys.tsv", ["system\tscore", *("\t".join(r.split("\t")[:2]) for r in rows)])
    result = _small_job(root, tmp_path)
    text = report.render(result)
    assert "no segment scores" in text
    assert "| variant | pearson | spearman | kendall |" in text
    assert "Segment level" not in text and "(system, segment) pairs" not in text
    assert "| variant | pairwise accuracy |\n" in text
    assert ("pairwise accuracy (Kocmi et al. 2021); soft pairwise accuracy, soft pairwise accuracy (corpus) and "
            "acc_eq (segment, item) need segment scores, which `human` does not have." in text)
    assert not re.search(r"\|\s*\|\s*$", text, re.M)  # no empty last cell anywhere


def test_variants_with_the_same_points_share_a_scatter_panel(tmp_path, monkeypatch):
    """Variants whose system scores are equal for every system (sacrebleu's smoothing methods give one corpus BLEU)
    draw one panel of the BLEU-vs-human figure, titled with every name; a variant differing in one system's score,
    or on another scale with the same numbers, keeps its own panel."""
    word, char = "BLEU|nrefs:1|tok:13a|", "BLEU|nrefs:1|tok:char|"
    scores = {"a": ([50.0, 52.0, 55.0], word), "b": ([50.0, 52.0, 55.0], word), "c": ([50.0, 52.0, 55.5], word),
              "d": ([50.0, 52.0, 55.0], char)}
    rows = [{"system": s, "system_version": None, "variant": v, "score": x, "human": False, "same_as": None,
             "metric": "bleu", "signature": sig, "human.mqm": -float(k)}
            for v, (xs, sig) in scores.items() for k, (s, x) in enumerate(zip(("s1", "s2", "s3"), xs))]
    data = figures.FigureTables("d", "r", rows, {"mqm": {"higher_is_better": False, "column": "human.mqm"}}, [])
    assert figures._same_points(data, ["a", "b", "c", "d"]) == [["a", "b"], ["c"], ["d"]]
    titles: list[str] = []

    def keep_titles(fig, folder, stem, formats):
        titles.extend(ax.get_title() for ax in fig.axes if ax.get_visible())
        figures.pyplot().close(fig)
        return [f"{stem}.png"]

    monkeypatch.setattr(figures, "_save", keep_titles)
    figures._bleu_vs_human(data, "mqm", tmp_path)
    import numpy as np

    r = {v: f"{np.corrcoef(xs, [0.0, 1.0, 2.0])[0, 1]:.3f}" for v, (xs, _) in scores.items()}  # y: the negated MQM
    assert titles == [f"a = b\nr = {r['a']} (MT)", f"c: r = {r['c']} (MT)", f"d: r = {r['d']} (MT)"]
