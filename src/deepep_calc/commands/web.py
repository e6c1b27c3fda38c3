"""`deepep-calc serve` (the local web calculator) and `deepep-calc report` (HTML / Markdown).

Light at import time: FastAPI, uvicorn and plotly are imported inside the commands.
"""

from __future__ import annotations

import ipaddress
import signal
from typing import Any

import click

from ..cli import scenario_from, scenario_options
from ..errors import InputError

# Longest wait for in-flight requests once asked to stop (a request takes milliseconds; this
# only bounds a client that never finishes sending).
GRACE_S = 10  # the serve help text says "10 seconds"


def register(app: click.Group) -> None:
    app.add_command(serve_cmd)
    app.add_command(report_cmd)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _stop_cleanly(signum: int, frame: Any) -> None:
    """SIGTERM is how service managers ask for a stop: exit 0, not death by signal."""
    raise SystemExit(0)


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="address to bind (loopback by default)")
@click.option("--port", type=int, default=8000, show_default=True)
def serve_cmd(host: str, port: int) -> None:
    """The web calculator and its JSON API on this machine.

    On a loopback bind it answers only requests addressed to a loopback name (DNS-rebinding
    protection). SIGTERM or Ctrl-C stop it after the requests in flight are answered (at most
    10 seconds); a SIGTERM stop exits 0.
    """
    if not 0 < port < 65536:
        raise InputError("--port", port, "a port from 1 to 65535")
    previous = signal.signal(signal.SIGTERM, _stop_cleanly)
    try:
        import uvicorn

        from ..web.app import create_app
        from ..web.guard import loopback_hosts

        if not is_loopback(host):
            click.echo(
                f"deepep-calc: warning: binding {host} makes the calculator reachable from other machines; "
                "it has no authentication",
                err=True,
            )
        app = create_app(allowed_hosts=loopback_hosts(host) if is_loopback(host) else None)
        shown = f"[{host}]" if ":" in host else host
        click.echo(f"deepep-calc: serving on http://{shown}:{port}/  (Ctrl-C to stop)")
        # uvicorn drains in-flight requests on SIGTERM / SIGINT, then re-raises the signal,
        # which lands in _stop_cleanly (SIGTERM) or click's interrupt handling (SIGINT).
        uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=GRACE_S)
    finally:
        signal.signal(signal.SIGTERM, previous)


@click.command("report")
@scenario_options
@click.option("--html", "html_path", metavar="FILE", help="write one self-contained HTML report")
@click.option("--md", "md_path", metavar="FILE", help="write a Markdown summary")
def report_cmd(html_path: str | None, md_path: str | None, **kwargs: Any) -> None:
    """A shareable report of one scenario: verdict, arms, charts and provenance.

    With neither --html nor --md, the Markdown goes to stdout (pipe it where you like).
    """
    from ..evaluate import evaluate

    result = evaluate(scenario_from(kwargs))
    if not html_path and not md_path:
        from ..report.markdown import render_markdown

        click.echo(render_markdown(result), nl=False)
        return
    rendered = []
    if html_path:
        from ..report.html import render_html

        rendered.append((html_path, render_html(result)))
    if md_path:
        from ..report.markdown import render_markdown

        rendered.append((md_path, render_markdown(result)))
    from ..report.html import write_atomic

    for path, text in rendered:  # everything rendered before anything is written
        written = write_atomic(path, text)
        click.echo(f"deepep-calc: wrote {written}")
