"""One spelling of every scenario flag (issue 13, item 4): evaluate, report, breakeven, sensitivity,
sweep and plan name a scenario field the same way and take the same value words; sweep takes
lists of them. Checked on the click options themselves, then on how the mode flags parse."""

from __future__ import annotations

from typing import Any

import click
import pytest

from deepep_calc.base.errors import InputError
from deepep_calc.cli import options
from deepep_calc.cli.options import GraphMode, ListOf, scenario_from
from deepep_calc.cli.program import _load_extensions, app
from deepep_calc.whatif.sweep import grid as sweep_mod

_load_extensions()
COMMANDS = ("evaluate", "report", "breakeven", "sensitivity", "sweep", "plan")
LIST_COMMANDS = ("sweep", "plan")  # flags that take a list of evaluate's words


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


def _bare(option: click.Option) -> bool:
    """Whether the option may be given with no value (`--cuda-graphs` alone)."""
    return option.is_flag or option.flag_value is not None


# evaluate's scenario flags: the names every other command must spell the same way
SCENARIO = {n: o for n, o in _options(_command("evaluate")).items() if n not in ("--json", "--sensitivity")}


@pytest.mark.parametrize("command", COMMANDS)
def test_shared_flags_take_the_same_value_words(command: str) -> None:
    """A flag evaluate also has takes the same words here (as a list in sweep and plan)."""
    options = _options(_command(command))
    shared = sorted(set(options) & set(SCENARIO))
    assert shared, command
    for name in shared:
        mine, theirs = options[name], SCENARIO[name]
        assert _words(mine) == _words(theirs), (command, name)
        assert _bare(mine) == _bare(theirs), (command, name)
        if command in LIST_COMMANDS and name not in ("--model",) and isinstance(mine.type, ListOf):
            assert mine.metavar in ("LIST", "[LIST]", "P | NAME=P,..."), (command, name)


@pytest.mark.parametrize("command", ("evaluate", "report", "breakeven", "sensitivity", "sweep"))
def test_every_scenario_flag_is_there(command: str) -> None:
    """The scenario commands carry every scenario flag of evaluate, under the same name."""
    missing = set(SCENARIO) - set(_options(_command(command)))
    assert not missing, (command, sorted(missing))


def test_sweep_takes_lists_of_every_scenario_flag() -> None:
    options = _options(_command("sweep"))
    for name in SCENARIO:
        assert isinstance(options[name].type, ListOf), name


def test_plan_spells_its_scenario_flags_as_evaluate_does() -> None:
    """plan's search lists answer to evaluate's singular names too; its other shared flags match."""
    options = _options(_command("plan"))
    assert options["--instance"] is options["--instances"]
    assert options["--engine"] is options["--engines"]
    for name in ("--model", "--isl", "--osl", "--concurrency", "--slo-tok-s", "--ttft-ms", "--max-batch"):
        assert _words(options[name]) == _words(SCENARIO[name]), name


def test_one_set_of_mode_words() -> None:
    """cli/options.py (one value) and sweep.py (lists) accept the same words with the same meaning."""
    assert set(options.TRUE_WORDS) == set(sweep_mod.TRUE_WORDS)
    assert set(options.FALSE_WORDS) == set(sweep_mod.FALSE_WORDS)
    assert options.MODE_WORDS == sweep_mod.MODE_WORDS
    for flag in ("--cuda-graphs", "--eager"):
        for word in GraphMode(flag).words:
            assert GraphMode(flag).convert(word, None, None) == sweep_mod.graphs_word(flag, word)


# How the mode flags parse, command by command ------------------------------------------------

CASES = [
    ([], False),
    (["--cuda-graphs"], True),
    (["--cuda-graphs", "true"], True),
    (["--cuda-graphs", "false"], False),
    (["--eager"], False),
    (["--eager", "true"], False),
    (["--eager", "false"], True),
    (["--cuda-graphs", "graphs"], True),
    (["--cuda-graphs", "eager"], False),
    (["--cuda-graphs", "--eager", "false"], True),
]


def _mode(command: str, args: list[str]) -> Any:
    """The CUDA-graph modes a command line asks for (a set for sweep), without running it."""
    ctx = _command(command).make_context(command, [*args, "--json"] if command != "report" else list(args))
    params = dict(ctx.params)
    if command == "sweep":
        raw = {k: v for k, v in params.items() if k in ("cuda_graphs", "eager") and v is not None}
        folded = sweep_mod._graph_modes(raw)
        return set(sweep_mod.parse_values("cuda_graphs", folded.get("cuda_graphs")))
    return scenario_from(params).cuda_graphs


@pytest.mark.parametrize("command", ("evaluate", "report", "breakeven", "sensitivity", "sweep"))
@pytest.mark.parametrize(("args", "graphs"), CASES)
def test_mode_flags_parse_alike(command: str, args: list[str], graphs: bool) -> None:
    got = _mode(command, args)
    assert got == ({graphs} if command == "sweep" else graphs)


@pytest.mark.parametrize("command", ("evaluate", "sweep"))
def test_mode_flag_refuses_an_unknown_word(command: str) -> None:
    with pytest.raises(InputError, match=r"--cuda-graphs: 'maybe' is not allowed; expected true or false"):
        _mode(command, ["--cuda-graphs", "maybe"])


@pytest.mark.parametrize("command", ("evaluate", "sweep"))
def test_contradicting_mode_flags_are_refused(command: str) -> None:
    with pytest.raises(InputError, match=r"^--eager"):
        _mode(command, ["--cuda-graphs", "--eager"])


def test_sweep_lists_both_modes_in_either_spelling() -> None:
    assert _mode("sweep", ["--cuda-graphs", "true,false"]) == {True, False}
    assert _mode("sweep", ["--eager", "true,false"]) == {True, False}
    assert _mode("sweep", ["--cuda-graphs", "false,true", "--eager", "true,false"]) == {True, False}
