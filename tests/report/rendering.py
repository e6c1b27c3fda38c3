"""Rendering a terminal view the way a user's shell would, and the checks every view must pass.

Shared by the tests of the views (`test_term.py`, `test_catalogs.py`, `test_terminal.py`,
`test_reference_views.py`, `test_validation_view.py`, `test_breakeven_view.py`): a view is run
through the CLI with COLUMNS set; it fits when no line is wider than the terminal and rich never
had to cut a cell (no ellipsis).
"""

from __future__ import annotations

import pytest

from cli_runner import run_cli

WIDTHS = (80, 200)


def render(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int, *args: str
) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    return out


def assert_fits(text: str, width: int) -> None:
    lines = text.splitlines()
    assert lines, "nothing printed"
    too_wide = [line for line in lines if len(line) > width]
    assert too_wide == [], f"{len(too_wide)} line(s) wider than {width}: {too_wide[0]!r}"
    assert "…" not in text, next(line for line in lines if "…" in line)


def one_line(text: str, token: str) -> bool:
    return any(token in line for line in text.splitlines())
