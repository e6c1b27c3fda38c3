"""`deepep-calc serve` and `deepep-calc report` (`cli/commands/web.py`): serve binds before it
prints, warns off loopback, refuses a bad host or port in one line and stops quietly; report
writes Markdown (stdout by default) and HTML under the safe-write rules.

No server is run: uvicorn's `Server.run` is replaced by a recorder. The last tests read the
Markdown report itself (`report/markdown.py`'s `render_markdown`, called directly), which is
what `report` prints by default."""

from __future__ import annotations

import logging
import re
import signal
import socket
from asyncio import CancelledError
from pathlib import Path

import click
import pytest

from cli_runner import run_cli
from deepep_calc import Scenario, evaluate
from deepep_calc.base.errors import CalcError
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

DOUBLED = re.compile(r"\.\.(?!\.)|[.:;,] ?[.;,]|\) ?\.\)")

SCENARIOS = [
    Scenario(),
    Scenario(  # a fragile verdict
        model="deepseek-v3", nodes=2, engine="vllm", cuda_graphs=True, transport="efa-uccl", concurrency=8
    ),
    Scenario(model="kimi-k2", instance="p5", nodes=1),
    Scenario(instance="p6-b300", transport="efa-gda"),
    Scenario(slo_tok_s=50, ttft_ms=10, alternative="tp"),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: f"{s.model}-{s.instance}-{s.nodes}")
def test_markdown_report_has_no_doubled_punctuation(scenario: Scenario) -> None:
    text = render_markdown(evaluate(scenario))
    hits = [
        m.group(0) for line in text.splitlines() if not line.startswith("|") for m in DOUBLED.finditer(line)
    ]
    assert hits == []


def test_fragile_robustness_line_keeps_one_full_stop() -> None:
    result = evaluate(SCENARIOS[1])
    assert result.verdict.robustness.endswith(".")  # the case that used to print ".."
    line = next(x for x in render_markdown(result).splitlines() if x.startswith("Verdict is"))
    assert line.endswith(".") and not line.endswith("..")
