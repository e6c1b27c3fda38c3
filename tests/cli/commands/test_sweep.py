"""`deepep-calc sweep | breakeven | sensitivity` (`cli/commands/sweep.py`): sweep takes a list of
every scenario flag evaluate takes, with the same words; the grid's rows go to a file or stdout
with the summary beside them; breakeven and sensitivity hand the scenario the flags describe to
their engines and print what comes back. The engines themselves are tests/whatif/'s: here the
two slow ones are replaced by recorders, so what is pinned is the command's own wiring."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import click
import pytest

from cli_runner import run_cli
from deepep_calc.cli.commands import sweep
from deepep_calc.cli.completion import LISTS
from deepep_calc.cli.options import MODE_FLAGS, SCENARIO_FLAGS, ListOf
from deepep_calc.io.inputs import resolve_files
from deepep_calc.question.scenario import Scenario

from ..flags import SCENARIO, _command, _mode, _options


def test_sweep_takes_lists_of_every_scenario_flag() -> None:
    options = _options(_command("sweep"))
    for name in SCENARIO:
        assert isinstance(options[name].type, ListOf), name


def test_sweep_lists_both_modes_in_either_spelling() -> None:
    assert _mode("sweep", ["--cuda-graphs", "true,false"]) == {True, False}
    assert _mode("sweep", ["--eager", "true,false"]) == {True, False}
    assert _mode("sweep", ["--cuda-graphs", "false,true", "--eager", "true,false"]) == {True, False}


def test_register_adds_the_three_commands() -> None:
    group = click.Group()
    sweep.register(group)
    assert group.commands == {
        "sweep": sweep.sweep_cmd,
        "breakeven": sweep.breakeven_cmd,
        "sensitivity": sweep.sensitivity_cmd,
    }


def test_each_list_flag_says_what_it_takes() -> None:
    """Named fields get their own help, numeric ones the list / range syntax; the mode flags
    stay bare-able (`--cuda-graphs` alone means true) and the catalog names complete."""
    options = _options(_command("sweep"))
    assert len({id(o) for n, o in options.items() if n in SCENARIO}) == len(SCENARIO_FLAGS)
    assert options["--instance"].help == "instances, comma-separated"
    assert options["--nodes"].help == sweep.NUMERIC_HELP
    assert options["--concurrency"].help == sweep.NUMERIC_HELP
    for flag in MODE_FLAGS:
        assert options[flag].metavar == "[LIST]" and options[flag].flag_value == "true"
    assert options["--nodes"].metavar == "LIST" and not options["--nodes"].is_flag
    for field in ("model", "instance", "engine", "transport"):
        assert options[f"--{field}"]._custom_shell_complete is LISTS[field]
    assert isinstance(options["--alternative"].type, ListOf)


def rows_of(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_a_sweep_writes_one_row_per_combination(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """2 node counts x 2 concurrencies = 4 rows, every field the scenario's own elsewhere."""
    out = tmp_path / "grid.csv"
    code, text, err = run_cli(
        capsys, "sweep", "--nodes", "1,2", "--concurrency", "8:16:x2", "-o", out, "--json"
    )
    assert code == 0, err
    summary = json.loads(text)
    assert (summary["rows"], summary["output"]) == (4, str(out))
    assert summary["varied"] == {"nodes": [1, 2], "concurrency": [8, 16]}
    rows = rows_of(out.read_text())
    assert [(r["nodes"], r["concurrency"]) for r in rows] == [
        ("1", "8"),
        ("1", "16"),
        ("2", "8"),
        ("2", "16"),
    ]
    assert {r["model"] for r in rows} == {Scenario().model}


def test_rows_on_stdout_put_the_summary_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    code, text, err = run_cli(capsys, "sweep", "--nodes", "1,2", "--concurrency", "8", "-o", "-")
    assert code == 0, err
    assert [r["nodes"] for r in rows_of(text)] == ["1", "2"]  # nothing but the rows on stdout
    assert "2 scenarios in 1 combination(s)" in err and "rows: stdout" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-o", "-", "--json"],
            "deepep-calc: error: -o - / --map - write to stdout; drop --json or name a file",
        ),
        (
            ["--precision", "0", "-o", "x.csv"],
            "deepep-calc: error: --precision: 0 is not allowed; expected a whole number from 1 to 17",
        ),
        (
            ["--nodes", "1,x"],
            "deepep-calc: error: --nodes: 'x' is not allowed; "
            "expected whole numbers, a comma list or a range a:b[:xK|:+K]",
        ),
    ],
)
def test_a_sweep_refused_before_it_runs_is_one_line(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "sweep", *args)
    assert (code, out, err.strip()) == (2, "", message)
    assert list(tmp_path.iterdir()) == []


class Answer:
    """What an engine returns: something with a `to_json`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def to_json(self) -> dict[str, str]:
        return {"key": self.name}


def test_breakeven_hands_the_flags_scenario_to_the_engine(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import deepep_calc.whatif.breakeven as engine

    calls: list[tuple[Scenario, Any]] = []

    def recorder(scenario: Scenario, resolve: Any = None) -> list[Answer]:
        calls.append((scenario, resolve))
        return [Answer("kernel_tie_us"), Answer("concurrency_tie")]

    monkeypatch.setattr(engine, "breakeven", recorder)
    code, out, err = run_cli(capsys, "breakeven", "--nodes", "4", "--eager", "--json")
    assert code == 0, err
    assert json.loads(out) == {"answers": [{"key": "kernel_tie_us"}, {"key": "concurrency_tie"}]}
    assert calls == [(Scenario(nodes=4, cuda_graphs=False), resolve_files)]  # files read by the CLI's reader


def test_sensitivity_prints_the_rows_and_their_robustness(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import deepep_calc.whatif.sensitivity as engine

    calls: list[tuple[Scenario, Any]] = []

    def recorder(scenario: Scenario, resolve: Any = None) -> list[Answer]:
        calls.append((scenario, resolve))
        return [Answer("alpha")]

    monkeypatch.setattr(engine, "sensitivity", recorder)
    monkeypatch.setattr(engine, "fragility", lambda rows: f"{len(rows)} row(s) looked at")
    code, out, err = run_cli(capsys, "sensitivity", "--model", "deepseek-v3", "--cuda-graphs", "--json")
    assert code == 0, err
    assert json.loads(out) == {"robustness": "1 row(s) looked at", "rows": [{"key": "alpha"}]}
    assert calls == [(Scenario(model="deepseek-v3", cuda_graphs=True), resolve_files)]
