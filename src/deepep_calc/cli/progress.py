"""One progress bar on stderr for the long commands (sweep, plan), drawn by rich.

The engine reports progress through a plain `(done, total)` callback and never imports rich;
this is the callback. The bar only appears on a terminal, and only once the work is worth
watching: at once when the caller says so, else after `delay` seconds.
"""

from __future__ import annotations

import time
from typing import Any


class Bar:
    """Use as a context manager; pass `bar.update` to the engine as its progress callback."""

    def __init__(self, label: str, *, show_now: bool = False, delay: float | None = None, eta: bool = False):
        self.label, self.show_now, self.delay, self.eta = label, show_now, delay, eta
        self.started = time.perf_counter()
        self.progress: Any = None  # None: not started yet; False: not a terminal
        self.task: Any = None

    def __enter__(self) -> Bar:
        self.started = time.perf_counter()
        if self.show_now:
            self._start()
        return self

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        console = Console(stderr=True)
        if not console.is_terminal:
            self.progress = False
            return
        clock = TimeRemainingColumn() if self.eta else TimeElapsedColumn()
        self.progress = Progress(
            TextColumn(self.label), BarColumn(), MofNCompleteColumn(), clock, console=console, transient=True
        )
        self.progress.start()
        self.task = self.progress.add_task(self.label, total=None)

    def update(self, done: int, total: int) -> None:
        if (
            self.progress is None
            and self.delay is not None
            and time.perf_counter() - self.started > self.delay
        ):
            self._start()
        if self.progress:
            self.progress.update(self.task, completed=done, total=total)

    def __exit__(self, *exc: Any) -> None:
        if self.progress:
            self.progress.stop()
