"""The `deepep-calc` program: the click group, the built-in commands and the entry point.

Built on click rather than typer's signature introspection because six commands share the
same two dozen scenario flags (`options.py` declares them once). Heavy modules (numpy, the
physics, the web app) are imported inside commands so `--help` and errors stay instant. Every
`CalcError` and usage error becomes one line on stderr, exit 2.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import click

from ..base.errors import CalcError
from ..question.fields import DEFAULTS
from .completion import SINGLE as COMPLETE
from .options import SOURCES_HELP, emit_json, mode_unset, scenario_from, scenario_options
from .stopping import CleanStop


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="deepep-calc")
@click.option("--json", "as_json", is_flag=True, help="with no command: the default scenario as JSON")
@click.pass_context
def app(ctx: click.Context, as_json: bool) -> None:
    """DeepEP all-to-all or a dense / allgather alternative, on AWS EFA? Run with no command
    for the default scenario."""
    if ctx.invoked_subcommand is not None:
        if as_json:
            name = ctx.invoked_subcommand
            raise click.UsageError(f"--json goes after the command: deepep-calc {name} --json")
        return
    from ..api import evaluate
    from ..decide.answer import note_assumed_mode
    from ..question.scenario import Scenario

    result = note_assumed_mode(evaluate(Scenario()))
    if as_json:
        emit_json(result.to_json())
        return
    from ..report.reference_views import print_calibration
    from ..report.terminal import print_result

    print_result(result)
    print_calibration()


@app.command("evaluate")
@scenario_options
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON")
@click.option(
    "--sensitivity",
    "with_sensitivity",
    is_flag=True,
    help="also vary every assumed constant over its spread (tornado: a refit per end, a few seconds)",
)
def evaluate_cmd(as_json: bool, with_sensitivity: bool, **kwargs: Any) -> None:
    """Verdict and both arms for one scenario."""
    from ..api import evaluate
    from ..decide.answer import note_assumed_mode

    unset = mode_unset(kwargs)
    result = evaluate(scenario_from(kwargs))
    if unset:
        note_assumed_mode(result)
    rows = None
    if with_sensitivity:
        from ..whatif.sensitivity import annotate, sensitivity

        rows = sensitivity(result.resolved)  # the question evaluate resolved, its files read once
        annotate(result, rows)
    if as_json:
        out = result.to_json()
        if rows is not None:
            out["sensitivity"] = [row.to_json() for row in rows]
        emit_json(out)
    else:
        from ..report.terminal import print_result

        print_result(result)
        if rows is not None:
            from ..report.sweep_view import print_sensitivity

            print_sensitivity(rows)


@app.command("kernel")
@click.option("--transport", default="efa-proxy", show_default=True, shell_complete=COMPLETE["transport"])
@click.option("--instance", default="p5en", show_default=True, shell_complete=COMPLETE["instance"])
@click.option("--ep", type=int, default=16, show_default=True, help="EP ranks")
@click.option("--tokens", type=int, default=128, show_default=True, help="tokens per rank")
@click.option("--hidden", type=int, default=7168, show_default=True)
@click.option("--topk", type=int, default=8, show_default=True)
@click.option("--experts", type=int, default=256, show_default=True)
@click.option("--dispatch-dtype", type=click.Choice(["fp8", "bf16"]), default="fp8", show_default=True)
@click.option("--comms", type=int, default=8, show_default=True, help="EP_NUM_COMMS")
@click.option(
    "--max-qps",
    "--qps",
    "qps",
    type=int,
    default=DEFAULTS["max_qps"],
    show_default=True,
    help="EP_EFA_MAX_QPS (the same knob and default as evaluate)",
)
@click.option("--calibration", help="profile from `deepep-calc calibrate --kernel-log`")
@click.option("--json", "as_json", is_flag=True)
def kernel_cmd(as_json: bool, **kw: Any) -> None:
    """Dispatch + combine latency of one MoE layer (decode shape)."""
    from ..estimate.kernel import kernel_json, kernel_query
    from ..io.profile import load_profile

    out = kernel_query(**kw, read_profile=load_profile)
    if as_json:
        emit_json(kernel_json(out))
    else:
        from ..report.reference_views import print_kernel

        print_kernel(out, kw)


# The catalog listings: (command, table title, rows function of report/catalogs.py, help).
CATALOGS = (
    ("models", "Model presets", "models_rows", "The model presets."),
    (
        "instances",
        "Instances",
        "instances_rows",
        "The instance catalog (network shown per GPU per direction, with the Gb/s conversion).",
    ),
    (
        "transports",
        "Transports",
        "transports_rows",
        "The DeepEP transports and their primary kernel references.",
    ),
)


def _catalog_command(name: str, title: str, rows_of: str, help_: str) -> click.Command:
    """One catalog listing: a table (wider terminals show more columns), `--json` or `--sources`."""

    @click.option("--json", "as_json", is_flag=True)
    @click.option("--sources", is_flag=True, help=SOURCES_HELP)
    def listing(as_json: bool, sources: bool) -> None:
        from ..report import catalogs

        rows = getattr(catalogs, rows_of)()
        emit_json(rows) if as_json else catalogs.print_rows(title, rows, sources)

    return click.command(name, help=help_)(listing)


for _entry in CATALOGS:
    app.add_command(_catalog_command(*_entry))


# Commands that live with their subsystem register themselves here (each module is light:
# it imports its heavy dependencies inside the command body).
EXTENSIONS = (
    "deepep_calc.cli.commands.calibrate",
    "deepep_calc.cli.commands.web",
    "deepep_calc.cli.commands.sweep",
    "deepep_calc.cli.commands.validate",
    "deepep_calc.cli.commands.plan",
)


def _load_extensions() -> None:
    import importlib

    for name in EXTENSIONS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(app)


class Stopped(BaseException):
    """A terminating signal (SIGTERM, SIGHUP) arrived: unwind so every `finally` and every
    temporary-file cleanup runs, then exit with the shell's code for that signal (128 + N).

    A BaseException, like KeyboardInterrupt, so no `except Exception` on the way swallows it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame: Any) -> None:
    """SIGTERM / SIGHUP: `Stopped`; SIGINT: KeyboardInterrupt, as Python's own handler raises.
    Inside a file's create, rename or cleanup (`files.safe_write`), at that section's end."""
    import signal

    from ..io.safe_write import defer_while_held

    def stop() -> None:
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Stopped(signum)

    if not defer_while_held(stop):
        stop()


def _catch_signals() -> dict[int, Any]:
    """Turn SIGTERM and SIGHUP into `Stopped` while a command runs, and SIGINT into the
    KeyboardInterrupt it already is, each held off a file's create / rename / cleanup (main
    thread only; SIGINT only where Python's own handler is in place)."""
    import signal
    import threading

    previous: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous
    for name in ("SIGTERM", "SIGHUP", "SIGINT"):
        signum = getattr(signal, name, None)
        if signum is None:
            continue
        if name == "SIGINT" and signal.getsignal(signum) is not signal.default_int_handler:
            continue  # someone (a test runner, an embedding) handles Ctrl-C: leave it theirs
        previous[signum] = signal.signal(signum, _stop)
    return previous


def _stdout_gone() -> bool:
    """True when standard output is a pipe whose reader has closed it (`| head` has exited)."""
    try:
        import select

        poller = select.poll()
        poller.register(sys.__stdout__.fileno() if sys.__stdout__ else 1, select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def _quiet_stdout() -> None:
    """After a closed pipe, point stdout at /dev/null so the interpreter's last flush is silent."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ else 1)
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass


def _closed_pipe(exc: BaseException) -> bool:
    """A failure that is only the reader of stdout going away: rich and click turn a
    BrokenPipeError into SystemExit(1); `| head` is a normal way for output to end."""
    import errno

    if isinstance(exc, BrokenPipeError) or (isinstance(exc, OSError) and exc.errno == errno.EPIPE):
        return True
    return (
        isinstance(exc, SystemExit)
        and exc.code == 1
        and (isinstance(exc.__context__, BrokenPipeError) or _stdout_gone())
    )


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning every expected failure into one line and exit 2.

    SIGTERM / SIGHUP unwind like Ctrl-C (temporary files are removed) and exit 143 / 129; a
    closed stdout pipe ends the command quietly with exit 0.
    """
    import signal

    _load_extensions()
    previous = _catch_signals()
    stopping = False  # a signal asked for this exit: a repeated ask must not kill it halfway
    try:
        app.main(args=argv, prog_name="deepep-calc", standalone_mode=False)
        sys.stdout.flush()  # here, not at interpreter exit, where a closed pipe cannot be caught
    except CalcError as exc:
        click.echo(f"deepep-calc: error: {exc.message}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("deepep-calc: interrupted", err=True)
        sys.exit(130)
    except Stopped as exc:
        stopping = True
        with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
            click.echo(f"deepep-calc: stopped by {signal.Signals(exc.signum).name}", err=True)
        sys.exit(128 + exc.signum)
    except click.ClickException as exc:
        click.echo(f"deepep-calc: error: {exc.format_message()}", err=True)
        sys.exit(2)
    except (OSError, SystemExit) as exc:
        stopping = isinstance(exc, CleanStop)
        if not _closed_pipe(exc):
            raise
        _quiet_stdout()
        sys.exit(0)
    finally:
        for signum, handler in previous.items():
            # Restoring the default would let a service manager's second SIGTERM turn an exit
            # already under way into death by signal; an embedding's own handler comes back.
            keep_out = stopping and handler is signal.SIG_DFL and signum != signal.SIGINT
            signal.signal(signum, signal.SIG_IGN if keep_out else handler)


if __name__ == "__main__":  # pragma: no cover
    main()
