"""`deepep-calc validate` (`cli/commands/validate.py`): one report, printed as JSON, as Markdown
(the accuracy tables, then the disaggregated deployments under their own heading) or as terminal
tables, and `--cv` asked of the report. The report is computed once for the module and handed to
the command in place of `accuracy.validate.validate`, which records what it was asked (the
report's own figures are tests/accuracy/'s); one slow test runs the real cross-validation through
`validate --cv --json`."""

from __future__ import annotations

import json
from typing import Any

import click
import pytest

from cli_runner import run_cli
from deepep_calc.accuracy import validate as accuracy
from deepep_calc.cli import main
from deepep_calc.cli.commands import validate
from deepep_calc.fit.observations import observations, pairs
from deepep_calc.report.accuracy_md import disagg_markdown, validation_markdown


@pytest.fixture(scope="module")
def report() -> Any:
    return accuracy.validate(cross_validated=False)


@pytest.fixture
def asked(report: Any, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The `cross_validated` of each call; every call answers the module's report."""
    calls: list[bool] = []

    def recorder(cross_validated: bool = False) -> Any:
        calls.append(cross_validated)
        return report

    monkeypatch.setattr(accuracy, "validate", recorder)
    return calls


def test_register_adds_the_validate_command() -> None:
    group = click.Group()
    validate.register(group)
    assert group.commands == {"validate": validate.validate_cmd}


def test_json_is_the_reports_own(capsys: pytest.CaptureFixture[str], report: Any, asked: list[bool]) -> None:
    code, out, err = run_cli(capsys, "validate", "--json")
    assert code == 0, err
    assert json.loads(out) == json.loads(json.dumps(report.to_json()))
    assert asked == [False]


def test_cv_asks_for_the_out_of_sample_report(capsys: pytest.CaptureFixture[str], asked: list[bool]) -> None:
    code, _, err = run_cli(capsys, "validate", "--cv", "--json")
    assert code == 0, err
    assert asked == [True]


def test_markdown_is_the_tables_then_the_disaggregated_deployments(
    capsys: pytest.CaptureFixture[str], report: Any, asked: list[bool]
) -> None:
    code, out, err = run_cli(capsys, "validate", "--md")
    assert code == 0, err
    heading = "\n### Disaggregated deployments (never fitted)\n\n"
    assert out == (
        validation_markdown(report) + heading + disagg_markdown(report.disaggregated, report.disaggregated_cv)
    )


def test_without_a_format_the_tables_are_printed(
    capsys: pytest.CaptureFixture[str], asked: list[bool]
) -> None:
    code, out, err = run_cli(capsys, "validate")
    assert code == 0, err
    assert "run with --cv for the out-of-sample errors" in out  # the in-sample report says how to get more
    assert not out.lstrip().startswith("{") and "###" not in out


@pytest.mark.slow
def test_cli_validate_cv_json(capsys: pytest.CaptureFixture[str]) -> None:
    main(["validate", "--cv", "--json"])  # returns normally on success (errors exit 2)
    out = json.loads(capsys.readouterr().out)
    assert out["cross_validated"] is True
    assert {"kinds", "verdict_agreement", "bands", "group_cv", "rows", "ab", "not_compared"} <= set(out)
    assert out["verdict_agreement"]["pairs"] == len(pairs(observations()))
