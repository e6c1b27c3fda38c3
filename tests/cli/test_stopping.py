"""The clean stop (`cli/stopping.py`): a `SystemExit(0)` of its own kind, so the entry point can
tell a stop a signal asked for from any other exit and leave a second SIGTERM ignored while the
process leaves."""

from __future__ import annotations

import signal

import pytest

from cli_runner import run_cli
from deepep_calc.cli import program
from deepep_calc.cli.commands import web
from deepep_calc.cli.stopping import CleanStop
from web_fixtures import free_port


@pytest.fixture
def default_sigterm():
    """SIGTERM at its default for the test, and whatever it was put back after."""
    before = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGTERM, before)


def test_a_clean_stop_is_a_successful_exit() -> None:
    stop = CleanStop()
    assert isinstance(stop, SystemExit) and stop.code == 0
    assert not isinstance(stop, Exception)  # no `except Exception` on the way swallows it


def test_the_entry_point_lets_a_clean_stop_out_and_ignores_a_second_sigterm(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], default_sigterm: None
) -> None:
    def stopped(*_a, **_k):
        raise CleanStop

    monkeypatch.setattr(program.app, "main", stopped)
    assert run_cli(capsys) == (0, "", "")
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN


def test_any_other_exit_puts_the_default_handler_back(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], default_sigterm: None
) -> None:
    def exits(*_a, **_k):
        raise SystemExit(0)

    monkeypatch.setattr(program.app, "main", exits)
    assert run_cli(capsys)[0] == 0
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_serve_told_to_stop_by_sigterm_exits_0_and_prints_nothing_more(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], default_sigterm: None
) -> None:
    """uvicorn drains its requests and re-raises the signal, which lands in serve's handler."""
    import uvicorn

    monkeypatch.setattr(
        uvicorn.Server, "run", lambda server, sockets=None: web._stop_cleanly(signal.SIGTERM, None)
    )
    code, out, err = run_cli(capsys, "serve", "--port", free_port())
    assert code == 0 and err == ""
    assert out.startswith("deepep-calc: serving on http://127.0.0.1:")  # only the line printed before
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
