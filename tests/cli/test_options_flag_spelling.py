"""One spelling of every scenario flag (issue 13, item 4), as `cli/options.py` declares them once:
evaluate, report, breakeven, sensitivity, sweep and plan name a scenario field the same way and
take the same value words. Checked on the click options themselves, then on how the mode flags
parse. (That sweep takes a list of each and plan's list flags answer to the singular names are
tests/cli/commands/test_sweep.py's and test_plan.py's.)"""

from __future__ import annotations

import click
import pytest

from deepep_calc.base.errors import InputError
from deepep_calc.cli import options
from deepep_calc.cli.options import GraphMode, ListOf
from deepep_calc.whatif.sweep import grid as sweep_mod

from .flags import SCENARIO, _command, _mode, _options, _words

COMMANDS = ("evaluate", "report", "breakeven", "sensitivity", "sweep", "plan")
LIST_COMMANDS = ("sweep", "plan")  # flags that take a list of evaluate's words


def _bare(option: click.Option) -> bool:
    """Whether the option may be given with no value (`--cuda-graphs` alone)."""
    return option.is_flag or option.flag_value is not None


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
