"""`deepep-calc serve` and `deepep-calc report` (`cli/commands/web.py`): serve binds before it
prints, warns off loopback, refuses a bad host or port in one line and stops quietly; report
writes Markdown (stdout by default) and HTML under the safe-write rules (`io/safe_write.py`): no
temporary file left, the file's mode from the umask, and a bad flag or a missing folder refused
before anything is written.

No server is run: uvicorn's `Server.run` is replaced by a recorder. The Markdown the report
prints is `tests/report/test_markdown.py`'s."""

from __future__ import annotations

import logging
import os
import signal
import socket
from asyncio import CancelledError
from pathlib import Path

import click
import pytest

from cli_runner import run_cli
from deepep_calc import Scenario, evaluate
from deepep_calc.base.errors import CalcError
from deepep_calc.cli import main
from deepep_calc.cli.commands import web
from deepep_calc.cli.stopping import CleanStop
from deepep_calc.decide.answer import note_assumed_mode
from deepep_calc.report.markdown import render_markdown
from web_fixtures import free_port


def test_register_adds_serve_and_report() -> None:
    group = click.Group()
    web.register(group)
    assert group.commands == {"serve": web.serve_cmd, "report": web.report_cmd}


# serve ----------------------------------------------------------------------------------------


def test_serve_prints_the_url_and_warns_off_loopback(monkeypatch, capsys):
    import uvicorn

    from deepep_calc.cli import main

    calls = []

    def record(server, sockets=None):  # nothing is served; the socket was bound beforehand
        c = server.config
        calls.append((c.log_level, c.timeout_graceful_shutdown, [s.getsockname()[:2] for s in sockets]))

    monkeypatch.setattr(uvicorn.Server, "run", record)
    port = free_port()
    main(["serve", "--port", str(port)])
    out = capsys.readouterr()
    assert out.out.strip() == f"deepep-calc: serving on http://127.0.0.1:{port}/  (Ctrl-C to stop)"
    assert out.err == ""
    assert calls == [("warning", 10, [("127.0.0.1", port)])]
    main(["serve", "--host", "0.0.0.0", "--port", str(free_port())])
    err = capsys.readouterr().err
    assert "warning" in err and "0.0.0.0" in err
    with pytest.raises(SystemExit) as info:
        main(["serve", "--port", "70000"])
    assert info.value.code == 2


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.8.9.1", True), ("localhost", True), ("::1", True), ("[::1]", True),
     ("0.0.0.0", False), ("10.1.2.3", False), ("example.org", False)],
)  # fmt: skip
def test_loopback_detection(host, loopback):
    from deepep_calc.cli.commands.web import is_loopback

    assert is_loopback(host) is loopback


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "0"], "deepep-calc: error: --port: 0 is not allowed; expected a port from 1 to 65535"),
        (
            ["--host", " "],
            "deepep-calc: error: --host: ' ' is not allowed; "
            "expected an IP address or a host name of this machine",
        ),
    ],
)
def test_serve_refuses_a_bad_host_or_port_in_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = run_cli(capsys, "serve", *args)
    assert (code, out, err.strip()) == (2, "", message)


def test_bind_says_why_it_cannot_listen() -> None:
    """A busy port and an address this machine lacks (192.0.2.1 is TEST-NET-1, never local) are
    each one line naming what to change, before anything is printed."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(CalcError) as info:
            web.bind("127.0.0.1", port)
    assert info.value.message == (
        f"--host/--port: cannot listen on 127.0.0.1:{port}: the port is already in use (another server?); "
        "pick another --port"
    )
    with pytest.raises(CalcError) as info:
        web.bind("192.0.2.1", free_port())
    assert info.value.message.endswith("this machine has no such address; pick another --host")


def test_bind_listens_on_the_address_it_was_given() -> None:
    port = free_port()
    sock = web.bind(" 127.0.0.1 ", port)
    try:
        assert sock.getsockname()[:2] == ("127.0.0.1", port)
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR) != 0
        assert sock.proto == socket.IPPROTO_TCP  # so asyncio sets TCP_NODELAY on its connections
    finally:
        sock.close()


def test_serve_stops_cleanly_on_sigterm_while_it_serves(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """While uvicorn runs, SIGTERM is `_stop_cleanly`'s; afterwards the handler before it is back."""
    import uvicorn

    seen = []
    monkeypatch.setattr(
        uvicorn.Server, "run", lambda server, sockets=None: seen.append(signal.getsignal(signal.SIGTERM))
    )
    before = signal.getsignal(signal.SIGTERM)
    web.serve_cmd.main(["--port", str(free_port())], standalone_mode=False)
    assert seen == [web._stop_cleanly]
    assert signal.getsignal(signal.SIGTERM) == before
    assert capsys.readouterr().out.startswith("deepep-calc: serving on http://127.0.0.1:")


def test_stop_cleanly_ignores_a_second_sigterm_and_exits_0() -> None:
    before = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(CleanStop) as info:
            web._stop_cleanly(signal.SIGTERM, None)
        assert info.value.code == 0
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, before)


def record(msg: str, exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(exc), exc, None) if exc is not None else None
    return logging.LogRecord("uvicorn.error", logging.ERROR, __file__, 1, msg, None, exc_info)


def test_quiet_shutdown_drops_only_the_cancelled_requests_report() -> None:
    quiet = web._QuietShutdown()
    assert quiet.filter(record("Exception in ASGI application", CancelledError())) is False
    assert quiet.filter(record("Cancel 1 running task(s), timeout graceful shutdown exceeded")) is False
    assert quiet.filter(record("Exception in ASGI application", ValueError("real"))) is True
    assert quiet.filter(record("Application startup failed")) is True


# report ---------------------------------------------------------------------------------------


def test_report_without_a_file_prints_markdown(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "report", "--nodes", "4")
    assert code == 0, err
    assert out.startswith("# deepep-calc report\n")
    assert "## The arms" in out and "--nodes 4" in out
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_report_writes_both_files_and_names_them(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    code, out, err = run_cli(capsys, "report", "--html", html, "--md", md)
    assert code == 0, err
    assert out.splitlines() == [f"deepep-calc: wrote {html}", f"deepep-calc: wrote {md}"]
    # no mode flag: the report says which mode it assumed, as the card does
    assert md.read_text(encoding="utf-8") == render_markdown(note_assumed_mode(evaluate(Scenario())))
    assert "Decode mode not given: eager assumed" in md.read_text(encoding="utf-8")
    assert html.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")


def test_report_refuses_one_file_for_both_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "r.out"
    code, out, err = run_cli(capsys, "report", "--html", target, "--md", target)
    assert (code, out) == (2, "")
    assert (
        err.strip() == f"deepep-calc: error: {target}: is the same output as --html {target}; give two names"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_report_to_stdout_is_the_document_alone(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "report", "--md", "-", "--nodes", "3", "--eager")
    assert code == 0 and out == render_markdown(evaluate(Scenario(nodes=3)))
    assert "wrote" not in out and "Decode mode not given" not in out  # a mode given: no note


# The Markdown the report prints ---------------------------------------------------------------


def test_cli_writes_both_files(tmp_path, capsys):
    html_path, md_path = tmp_path / "r.html", tmp_path / "r.md"
    main(["report", "--html", str(html_path), "--md", str(md_path), "--model", "kimi-k2"])
    assert html_path.stat().st_size > 1_000_000
    assert "◆ Use EP for CAPACITY: allgather" in md_path.read_text()  # title names the arm run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "r.md"]  # no temp files left
    out = capsys.readouterr().out
    assert out.count("deepep-calc: wrote") == 2
    assert oct(html_path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_bad_input_writes_nothing(tmp_path, capsys):
    target = tmp_path / "r.html"
    target.write_text("previous report")
    with pytest.raises(SystemExit) as info:
        main(["report", "--html", str(target), "--md", str(tmp_path / "r.md"), "--concurrency", "-1"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "deepep-calc: error: --concurrency: -1 is not allowed; expected a whole number greater than 0"
    ]
    assert target.read_text() == "previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]


def test_missing_folder_and_missing_target_are_one_line_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["report", "--html", str(tmp_path / "no" / "such" / "r.html")])
    assert info.value.code == 2
    assert "does not exist" in capsys.readouterr().err
    main(["report"])  # no file named: Markdown to stdout, nothing written
    assert capsys.readouterr().out.startswith("# deepep-calc report")
