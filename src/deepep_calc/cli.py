"""The `deepep-calc` command line.

Built on click rather than typer's signature introspection because six commands share the
same two dozen scenario flags: one `scenario_options` decorator declares them once. Heavy
modules (numpy, the physics, the web app) are imported inside commands so `--help` and
errors stay instant. Every `CalcError` and usage error becomes one line on stderr, exit 2.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from .commands.completion import SINGLE as COMPLETE
from .errors import CalcError
from .scenario import DEFAULTS, FIELDS

if TYPE_CHECKING:
    from .scenario import Scenario

# The light field list, not `Scenario.model_fields`: building the pydantic class is most of
# what `--help` would otherwise cost (tests/test_speed_imports.py).
SCENARIO_KEYS = FIELDS


# The value words of --cuda-graphs and --eager, in every command (sweep.py parses the same
# words in lists; tests/test_flag_spelling.py checks the two agree). `true`/`false` answer the
# flag they follow; the mode words name the mode whichever flag carries them.
TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")
MODE_WORDS = {"graphs": True, "cuda-graphs": True, "eager": False}
BOOL_ALLOWED = "true or false (or the mode: graphs, eager)"


class GraphMode(click.ParamType):
    """`--cuda-graphs [WORD]` / `--eager [WORD]`: whether CUDA graphs are on (a bool).

    Bare, the flag means what it says; with a word, `true`/`false` answer it. A word outside
    the list is an `InputError` (one line naming the flag, exit 2), as sweep's parser says it.
    """

    name = "mode"

    def __init__(self, flag: str) -> None:
        self.flag = flag
        self.words = (*TRUE_WORDS, *FALSE_WORDS, *MODE_WORDS)

    def convert(self, value: Any, param: Any, ctx: Any) -> bool:
        if isinstance(value, bool):
            return value
        from .errors import InputError

        low = str(value).strip().lower()
        if low in MODE_WORDS:
            return MODE_WORDS[low]
        if low in TRUE_WORDS or low in FALSE_WORDS:
            return (low in TRUE_WORDS) == (self.flag == "--cuda-graphs")
        raise InputError(self.flag, str(value).strip(), BOOL_ALLOWED)


class ListOf(click.ParamType):
    """A comma list (or range) of the words of `inner`: the sweep (and plan) twin of a scenario
    flag. The text is passed on as given; `sweep.parse_values` parses it, so a bad item is
    refused there with the flag, the item and what is allowed."""

    name = "list"

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        return value


def _opt(name: str, typ: Any, help_: str, default: Any = None) -> Callable[[Any], Any]:
    complete = COMPLETE.get(name[2:])
    return click.option(
        name, type=typ, default=default, show_default=default is not None, help=help_, shell_complete=complete
    )


def _mode_opt(name: str, help_: str, typ: Any = None, metavar: str = "[true|false]") -> Callable[[Any], Any]:
    """A flag that works bare and also takes a value word (`--cuda-graphs`, `--cuda-graphs true`)."""
    return click.option(
        name,
        name[2:].replace("-", "_"),
        type=typ if typ is not None else GraphMode(name),
        is_flag=False,
        flag_value="true",
        default=None,
        metavar=metavar,
        help=help_,
    )


GRAPHS_HELP = "decode with CUDA graphs (bare, or true / false)  [default: eager]"
EAGER_HELP = "decode without CUDA graphs, the measured mode (bare, or true / false)"

# (flag, type, help, default): the scenario flags of DESIGN.md, in one place. `scenario_options`
# declares them on evaluate / report / breakeven / sensitivity; `commands/sweep.py` declares the
# same names with `ListOf(type)` so a sweep takes lists of the same words.
SCENARIO_FLAGS: tuple[tuple[str, Any, str, Any], ...] = (
    ("--model", click.STRING, "preset name or path to a config.json (or its folder)", DEFAULTS["model"]),
    (
        "--instance",
        click.STRING,
        "p5, p5en, p6-b200, p6-b300, ib-h800, ib-h100, ib-h200",
        DEFAULTS["instance"],
    ),
    ("--nodes", click.INT, "nodes in the cluster", DEFAULTS["nodes"]),
    ("--gpus-per-node", click.INT, "GPUs used per node [default: all]", None),
    ("--engine", click.STRING, "trtllm, vllm or sglang", DEFAULTS["engine"]),
    ("--cuda-graphs", GraphMode("--cuda-graphs"), GRAPHS_HELP, None),
    ("--eager", GraphMode("--eager"), EAGER_HELP, None),
    ("--transport", click.STRING, "transport of the DeepEP arm (see `transports`)", DEFAULTS["transport"]),
    ("--alternative", click.Choice(["allgather", "tp"]), "dense alternative arm", "allgather"),
    ("--comms", click.INT, "EP_NUM_COMMS for the NCCL-GIN proxy", DEFAULTS["comms"]),
    ("--max-qps", click.INT, "EP_EFA_MAX_QPS", DEFAULTS["max_qps"]),
    ("--concurrency", click.INT, "concurrent requests", DEFAULTS["concurrency"]),
    ("--isl", click.INT, "input sequence length (tokens)", DEFAULTS["isl"]),
    ("--osl", click.INT, "output sequence length (tokens)", DEFAULTS["osl"]),
    ("--max-batch", click.INT, "sequences per DP rank the engine runs [default: the engine's]", None),
    ("--weight-dtype", click.STRING, "override the model's weight dtype (fp8, bf16, mxfp4, ...)", None),
    ("--kv-dtype", click.STRING, "override the KV-cache dtype", None),
    ("--experts", click.INT, "what-if: routed experts", None),
    ("--topk", click.INT, "what-if: experts per token", None),
    ("--hidden", click.INT, "what-if: hidden size", None),
    ("--moe-layers", click.INT, "what-if: number of MoE layers", None),
    ("--slo-tok-s", click.FLOAT, "per-user decode floor (tok/s)", None),
    ("--ttft-ms", click.FLOAT, "time-to-first-token ceiling (ms)", None),
    ("--price-per-hour", click.FLOAT, "$ per node-hour (default: catalog price)", None),
    ("--calibration", click.STRING, "calibration profile written by `deepep-calc calibrate`", None),
)
MODE_FLAGS = ("--cuda-graphs", "--eager")


def scenario_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Declare the scenario flags (the CLI contract of DESIGN.md) on a command."""
    opts = [
        _mode_opt(name, help_) if name in MODE_FLAGS else _opt(name, typ, help_, default)
        for name, typ, help_, default in SCENARIO_FLAGS
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def graph_mode(cuda_graphs: bool | None, eager: bool | None) -> bool:
    """CUDA graphs on or off from `--cuda-graphs` and `--eager` (each already a mode), default
    eager; the two given with different modes is refused."""
    if cuda_graphs is not None and eager is not None and cuda_graphs != eager:
        from .errors import InputError

        raise InputError("--eager", None, "--cuda-graphs asks for the other mode; give one of the two")
    if cuda_graphs is not None:
        return cuda_graphs
    return bool(eager) if eager is not None else False


def scenario_from(kwargs: dict[str, Any]) -> Scenario:
    """Pop the scenario flags out of a command's keyword arguments."""
    from .scenario import Scenario

    graphs = graph_mode(kwargs.pop("cuda_graphs", None), kwargs.pop("eager", None))
    fields = {k: kwargs.pop(k) for k in list(kwargs) if k in SCENARIO_KEYS}
    fields["cuda_graphs"] = graphs
    return Scenario(**{k: v for k, v in fields.items() if v is not None or k in ("gpus_per_node",)})


SOURCES_HELP = "number every row's source and list the sources under the table"


def emit_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=2, allow_nan=False))


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="deepep-calc")
@click.option("--json", "as_json", is_flag=True, help="with no command: the calibration scenario as JSON")
@click.pass_context
def app(ctx: click.Context, as_json: bool) -> None:
    """DeepEP all-to-all or a dense / allgather alternative, on AWS EFA? Run with no command
    for the calibration scenario."""
    if ctx.invoked_subcommand is not None:
        if as_json:
            name = ctx.invoked_subcommand
            raise click.UsageError(f"--json goes after the command: deepep-calc {name} --json")
        return
    from .evaluate import evaluate
    from .scenario import Scenario

    result = evaluate(Scenario())
    if as_json:
        emit_json(result.to_json())
        return
    from .report.terminal import print_calibration, print_result

    print_result(result)
    print_calibration()


@app.command("evaluate")
@scenario_options
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON")
@click.option(
    "--sensitivity",
    "with_sensitivity",
    is_flag=True,
    help="also vary every assumed constant over its spread (tornado; ~0.1 s)",
)
def evaluate_cmd(as_json: bool, with_sensitivity: bool, **kwargs: Any) -> None:
    """Verdict and both arms for one scenario."""
    from .evaluate import evaluate

    result = evaluate(scenario_from(kwargs))
    rows = None
    if with_sensitivity:
        from .sensitivity import annotate, sensitivity

        rows = sensitivity(result.scenario)
        annotate(result, rows)
    if as_json:
        out = result.to_json()
        if rows is not None:
            out["sensitivity"] = [row.to_json() for row in rows]
        emit_json(out)
    else:
        from .report.terminal import print_result

        print_result(result)
        if rows is not None:
            from .commands.sweep import print_sensitivity

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
    from .kernel import kernel_query

    out = kernel_query(**kw)
    if as_json:
        emit_json({k: v.to_json() for k, v in out.items()})
    else:
        from .report.terminal import print_kernel

        print_kernel(out, kw)


@app.command("models")
@click.option("--json", "as_json", is_flag=True)
@click.option("--sources", is_flag=True, help=SOURCES_HELP)
def models_cmd(as_json: bool, sources: bool) -> None:
    """The model presets."""
    from .report.catalogs import models_rows, print_rows

    rows = models_rows()
    emit_json(rows) if as_json else print_rows("Model presets", rows, sources)


@app.command("instances")
@click.option("--json", "as_json", is_flag=True)
@click.option("--sources", is_flag=True, help=SOURCES_HELP)
def instances_cmd(as_json: bool, sources: bool) -> None:
    """The instance catalog (network shown per GPU per direction, with the Gb/s conversion)."""
    from .report.catalogs import instances_rows, print_rows

    rows = instances_rows()
    emit_json(rows) if as_json else print_rows("Instances", rows, sources)


@app.command("transports")
@click.option("--json", "as_json", is_flag=True)
@click.option("--sources", is_flag=True, help=SOURCES_HELP)
def transports_cmd(as_json: bool, sources: bool) -> None:
    """The DeepEP transports and their primary kernel references."""
    from .report.catalogs import print_rows, transports_rows

    rows = transports_rows()
    emit_json(rows) if as_json else print_rows("Transports", rows, sources)


# Commands that live with their subsystem register themselves here (each module is light:
# it imports its heavy dependencies inside the command body).
EXTENSIONS = (
    "deepep_calc.commands.calibrate",
    "deepep_calc.commands.web",
    "deepep_calc.commands.sweep",
    "deepep_calc.commands.plan",
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
    raise Stopped(signum)


def _catch_signals() -> dict[int, Any]:
    """Turn SIGTERM and SIGHUP into `Stopped` while a command runs (main thread only)."""
    import signal
    import threading

    previous: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None:
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
        with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
            click.echo(f"deepep-calc: stopped by {signal.Signals(exc.signum).name}", err=True)
        sys.exit(128 + exc.signum)
    except click.ClickException as exc:
        click.echo(f"deepep-calc: error: {exc.format_message()}", err=True)
        sys.exit(2)
    except (OSError, SystemExit) as exc:
        if not _closed_pipe(exc):
            raise
        _quiet_stdout()
        sys.exit(0)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


if __name__ == "__main__":  # pragma: no cover
    main()
