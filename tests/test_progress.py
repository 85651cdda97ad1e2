"""Progress of a job's phases: one log line when a phase starts, its length when it took a second or more, a bar
on a terminal."""

from __future__ import annotations

import logging

import pytest

from harness import progress
from harness.progress import Progress, progress_bar


@pytest.fixture()
def clock(monkeypatch):
    """progress's ``time.perf_counter``, moved by hand: ``clock.append(seconds)``."""
    now = [100.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: now[-1])
    return now


@pytest.mark.parametrize(("total", "unit", "start"), [(1, "step", "tables (1 step) ..."),
                                                      (48, "block", "statistics (48 blocks) ..."),
                                                      (0, "run", "MLflow runs (0 runs) ...")])
def test_without_a_terminal_a_phase_is_one_line_and_its_length_only_if_long(caplog, clock, total, unit, start):
    name = start.split(" (")[0]
    with caplog.at_level(logging.INFO, logger="harness"):
        with Progress(enabled=False).phase(name, total, unit) as bar:
            bar.update()
            bar.update(5)
            clock.append(100.999)
        with Progress(enabled=False).phase(name, total, unit):
            clock.append(102.25)
    assert [r.getMessage() for r in caplog.records] == [start, start, f"{name}: 1.3 s"]


def test_on_a_terminal_a_bar_of_the_steps_is_drawn_and_cleared(capsys, clock, caplog):
    with caplog.at_level(logging.INFO, logger="harness"):
        with Progress(enabled=True).phase("statistics", 4, "block") as bar:
            bar.update(3)
            bar.update()
            clock.append(103.0)
    err = capsys.readouterr().err
    assert err.startswith("\rstatistics:") and "/4 [" in err and "block/s]" in err  # tqdm's own line
    assert err.endswith(" " * 20 + "\r")  # cleared at the end: the next line starts clean
    assert [r.getMessage() for r in caplog.records] == ["statistics: 3.0 s"]  # no start line beside the bar


def test_enabled_none_draws_a_bar_only_on_a_terminal(monkeypatch):
    monkeypatch.setattr(progress.sys.stderr, "isatty", lambda: True)
    assert Progress().bars
    monkeypatch.setattr(progress.sys.stderr, "isatty", lambda: False)
    assert not Progress().bars


def test_progress_bar_is_one_phase_in_steps(caplog, clock):
    with caplog.at_level(logging.INFO, logger="harness"):
        with progress_bar(2, "files", enabled=False) as bar:
            bar.update(2)
    assert [r.getMessage() for r in caplog.records] == ["files (2 steps) ..."]
