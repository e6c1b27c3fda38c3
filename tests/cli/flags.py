"""How the commands' click options are read by the flag-spelling tests of `cli/options.py`,
`cli/commands/sweep.py` and `cli/commands/plan.py`: every long option of a command, what it
accepts, evaluate's scenario flags as the names every command must spell alike, and the graph
modes a command line asks for (parsed, never run)."""

from __future__ import annotations

from typing import Any

import click

from deepep_calc.cli.options import GraphMode, ListOf, scenario_from
from deepep_calc.cli.program import _load_extensions, app
from deepep_calc.whatif.sweep import grid as sweep_mod

_load_extensions()


def _command(name: str) -> click.Command:
    command = app.commands[name]
    assert isinstance(command, click.Command)
    return command


def _options(command: click.Command) -> dict[str, click.Option]:
    """Every long option name of a command -> its click option (aliases included)."""
    out: dict[str, click.Option] = {}
    for param in command.params:
        if isinstance(param, click.Option):
            for name in (*param.opts, *param.secondary_opts):
                if name.startswith("--"):
                    out[name] = param
    return out


def _words(option: click.Option) -> tuple[str, Any]:
    """What an option accepts: ("flag", None) for a plain switch, else its kind and value words,
    unwrapped from a list type (a sweep list takes the words of evaluate's single value)."""
    if option.is_flag and not isinstance(option.type, GraphMode):
        return ("flag", None)
    typ = option.type.inner if isinstance(option.type, ListOf) else option.type
    if isinstance(typ, GraphMode):
        return ("mode", tuple(sorted(typ.words)))
    if isinstance(typ, click.Choice):
        return ("choice", tuple(sorted(typ.choices)))
    return (typ.name, None)


# evaluate's scenario flags: the names every other command must spell the same way
SCENARIO = {n: o for n, o in _options(_command("evaluate")).items() if n not in ("--json", "--sensitivity")}


def _mode(command: str, args: list[str]) -> Any:
    """The CUDA-graph modes a command line asks for (a set for sweep), without running it."""
    ctx = _command(command).make_context(command, [*args, "--json"] if command != "report" else list(args))
    params = dict(ctx.params)
    if command == "sweep":
        raw = {k: v for k, v in params.items() if k in ("cuda_graphs", "eager") and v is not None}
        folded = sweep_mod._graph_modes(raw)
        return set(sweep_mod.parse_values("cuda_graphs", folded.get("cuda_graphs")))
    return scenario_from(params).cuda_graphs
