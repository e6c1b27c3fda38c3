"""The progress bar of the long commands (`cli/progress.py`): shown only on a terminal, at once
when asked or once `delay` seconds have passed, fed by the engine's `(done, total)` callback,
with the time left (`eta`) or the time taken. Whether stderr is a terminal is set for each test
through rich's TTY_COMPATIBLE variable (1: a terminal, 0: not), so the tests do not depend on how
pytest was started."""

from __future__ import annotations

import pytest
from rich.progress import Progress, TimeElapsedColumn, TimeRemainingColumn

from deepep_calc.cli.progress import Bar


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")


@pytest.fixture
def no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "0")


def test_shown_at_once_on_a_terminal_it_follows_the_callback(terminal: None) -> None:
    with Bar("sweep", show_now=True) as bar:
        assert isinstance(bar.progress, Progress)
        bar.update(3, 10)
        task = bar.progress.tasks[0]
        assert (task.completed, task.total, task.description) == (3, 10, "sweep")
        bar.update(10, 10)
        assert task.finished
    assert not bar.progress.live.is_started  # stopped (and, transient, erased) on leaving


def test_eta_shows_the_time_left_else_the_time_taken(terminal: None) -> None:
    with Bar("a", show_now=True, eta=True) as bar:
        assert any(isinstance(c, TimeRemainingColumn) for c in bar.progress.columns)
    with Bar("b", show_now=True) as bar:
        assert any(isinstance(c, TimeElapsedColumn) for c in bar.progress.columns)
        assert not any(isinstance(c, TimeRemainingColumn) for c in bar.progress.columns)


def test_off_a_terminal_nothing_is_drawn(no_terminal: None) -> None:
    with Bar("plan", show_now=True) as bar:
        assert bar.progress is False
        bar.update(1, 2)  # a no-op
        assert bar.task is None


def test_a_delayed_bar_appears_only_once_the_delay_has_passed(terminal: None) -> None:
    with Bar("sweep", delay=1.0) as bar:
        bar.update(1, 100)
        assert bar.progress is None  # well under a second in: not yet
        bar.started -= 2.0  # as if two seconds had passed
        bar.update(2, 100)
        assert isinstance(bar.progress, Progress)
        assert bar.progress.tasks[0].completed == 2


def test_without_a_delay_or_show_now_the_bar_never_appears(terminal: None) -> None:
    with Bar("plan") as bar:
        bar.started -= 3600.0
        bar.update(5, 10)
        assert bar.progress is None
