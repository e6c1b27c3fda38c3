"""`deepep-calc serve` (the local web calculator) and `deepep-calc report` (HTML / Markdown).

Light at import time: every command of the CLI imports this module to register its commands,
so FastAPI, uvicorn, plotly, and even the standard library's socket, ipaddress and logging
(~10 ms together), are imported inside the functions that use them.
"""

from __future__ import annotations

import errno
import signal
from typing import TYPE_CHECKING, Any

import click

from ...base.errors import CalcError, InputError, printable
from ..options import mode_unset, scenario_from, scenario_options
from ..stopping import CleanStop

if TYPE_CHECKING:
    import logging
    import socket

# Longest wait for in-flight requests once asked to stop (a request takes milliseconds; this
# only bounds a client that never finishes sending).
GRACE_S = 10  # the serve help text says "10 seconds"


def register(app: click.Group) -> None:
    app.add_command(serve_cmd)
    app.add_command(report_cmd)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _stop_cleanly(signum: int, frame: Any) -> None:
    """SIGTERM is how service managers ask for a stop: exit 0, not death by signal. The process
    is leaving from here on, so a second SIGTERM (a slow stop asked again) is ignored."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise CleanStop


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything is printed: a busy port or an address this
    machine does not have is one line and exit 2, never a "serving on" that is not true."""
    import socket

    name = host.strip().strip("[]")
    family = socket.AF_INET6 if ":" in name else socket.AF_INET  # as uvicorn chooses
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that say so, and without
    # it every keep-alive response waits ~40 ms for a delayed ACK (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((name, port))
        sock.listen(2048)
    except socket.gaierror:
        sock.close()
        raise InputError("--host", host, "an IP address or a host name of this machine") from None
    except OSError as exc:
        sock.close()
        shown = f"[{name}]:{port}" if ":" in name else f"{name}:{port}"
        why = {
            errno.EADDRINUSE: "the port is already in use (another server?); pick another --port",
            errno.EADDRNOTAVAIL: "this machine has no such address; pick another --host",
            errno.EACCES: "permission denied (ports below 1024 need privileges)",
        }.get(exc.errno or 0, " ".join((exc.strerror or str(exc)).split()))
        raise CalcError(f"--host/--port: cannot listen on {printable(shown)}: {why}", "--port") from None
    except (OverflowError, ValueError):
        sock.close()
        raise InputError("--host", host, "an IP address or a host name of this machine") from None
    return sock


class _QuietShutdown:
    """Drop uvicorn's report of the requests it cancels when the grace period ends.

    A client that never finishes its request is cancelled after GRACE_S; uvicorn then logs
    the cancellation and a CancelledError traceback per request. A stop asked for by SIGTERM
    is silent (docs/security.md), so those records go; every other error is kept. (A logging
    filter is any object with this method: no subclass of `logging.Filter` needed.)
    """

    def filter(self, record: logging.LogRecord) -> bool:
        from asyncio import CancelledError  # here: every other command would pay ~30 ms for it

        if record.exc_info and isinstance(record.exc_info[1], CancelledError):
            return False
        return "timeout graceful shutdown exceeded" not in str(record.msg)


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="address to bind (loopback by default)")
@click.option("--port", type=int, default=8000, show_default=True)
def serve_cmd(host: str, port: int) -> None:
    """The web calculator and its JSON API on this machine.

    On a loopback bind it answers only requests addressed to a loopback name (DNS-rebinding
    protection), and every POST must come from its own pages (Origin / Sec-Fetch-Site). SIGTERM
    or Ctrl-C stop it after the requests in flight are answered (at most 10 seconds); a SIGTERM
    stop exits 0 and prints nothing.
    """
    if not 0 < port < 65536:
        raise InputError("--port", port, "a port from 1 to 65535")
    if not host.strip():
        raise InputError("--host", host, "an IP address or a host name of this machine")
    sock = bind(host, port)
    previous = signal.signal(signal.SIGTERM, _stop_cleanly)
    try:
        import uvicorn

        from ...web.app import create_app
        from ...web.guard import loopback_hosts

        if not is_loopback(host):
            click.echo(
                f"deepep-calc: warning: binding {printable(host)} makes the calculator reachable from "
                "other machines; it has no authentication",
                err=True,
            )
        app = create_app(allowed_hosts=loopback_hosts(host) if is_loopback(host) else None)
        config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=GRACE_S)
        import logging

        quiet = _QuietShutdown()
        for name in ("uvicorn.error", "uvicorn"):
            logging.getLogger(name).addFilter(quiet)
        shown = f"[{host.strip('[]')}]" if ":" in host else host
        click.echo(f"deepep-calc: serving on http://{printable(shown)}:{port}/  (Ctrl-C to stop)")
        # uvicorn drains in-flight requests on SIGTERM / SIGINT, then re-raises the signal,
        # which lands in _stop_cleanly (SIGTERM) or click's interrupt handling (SIGINT).
        uvicorn.Server(config).run(sockets=[sock])
    except CleanStop:
        previous = signal.SIG_IGN  # leaving: further asks stay ignored (see _stop_cleanly)
        raise
    finally:
        sock.close()
        signal.signal(signal.SIGTERM, previous)


@click.command("report")
@scenario_options
@click.option(
    "--html", "html_path", metavar="FILE", help="write one self-contained HTML report (- for stdout)"
)
@click.option("--md", "md_path", metavar="FILE", help="write a Markdown summary (- for stdout)")
def report_cmd(html_path: str | None, md_path: str | None, **kwargs: Any) -> None:
    """A shareable report of one scenario: verdict, arms, charts and provenance.

    With neither --html nor --md, the Markdown goes to stdout (pipe it where you like).
    """
    from ...io.safe_write import check_distinct, check_output, scenario_inputs, writing

    unset = mode_unset(kwargs)
    scenario = scenario_from(kwargs)
    if not html_path and not md_path:
        md_path = "-"
    inputs = scenario_inputs(scenario.model, scenario.calibration)
    # Every target is checked before the model runs: a bad one costs nothing and writes nothing.
    html_out = check_output(html_path, "--html", inputs=inputs) if html_path else None
    md_out = check_output(md_path, "--md", inputs=inputs) if md_path else None
    outputs = check_distinct([html_out, md_out])
    from ...api import evaluate
    from ...decide.answer import note_assumed_mode

    result = evaluate(scenario)
    if unset:
        note_assumed_mode(result)
    with writing(*outputs):  # everything rendered and staged before anything is committed
        if html_out is not None:
            from ...report.html import render_html

            html_out.stage(render_html(result).encode("utf-8"))
        if md_out is not None:
            from ...report.markdown import render_markdown

            md_out.stage(render_markdown(result).encode("utf-8"))
    for out in outputs:
        if out.kind != "fd":  # a report sent to stdout is the output itself: no note beside it
            click.echo(f"deepep-calc: wrote {out.shown}")
