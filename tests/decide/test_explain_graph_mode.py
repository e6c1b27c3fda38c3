"""Graph mode said out loud (issue #26 item 6): a scenario's `cuda_graphs` left unset.

Eager is the default for every model (the calibration cells ran eager), so a scenario that
leaves the decode mode unset gets one line saying which mode is assumed and why; and a step the
host's kernel launches bind is named as such in the Why (GLM-4.5 over efa-gda, eager: three
deployments with the same figures, because the launching thread sets every arm's step).

The lines are written by `decide/explain.py` (`assumed_mode_note`, the launch-bound reason);
these tests follow them through the card, the JSON, the report and the Why.
"""

from __future__ import annotations

import json

import pytest

from cli_runner import run_cli
from deepep_calc import Scenario, evaluate

NOTE = "Decode mode not given: eager assumed (the calibration cells ran eager)"


def flat(card: str) -> str:
    """A card's text with its box and line breaks gone, so a wrapped sentence reads whole."""
    return " ".join(card.replace("│", " ").split())


@pytest.mark.parametrize(
    ("flags", "said"),
    [([], True), (["--eager"], False), (["--cuda-graphs"], False), (["--cuda-graphs", "false"], False)],
    ids=["unset", "eager", "graphs", "graphs-false"],
)
def test_an_unset_mode_is_named_on_the_card_and_in_the_json(capsys, flags: list[str], said: bool) -> None:
    code, out, _ = run_cli(capsys, "evaluate", "--engine", "vllm", *flags)
    assert code == 0
    assert (NOTE in flat(out)) is said
    if said:  # vLLM captures graphs unless told not to: the line says so
        assert "vllm captures CUDA graphs by default" in flat(out)
    code, out, _ = run_cli(capsys, "evaluate", "--engine", "vllm", *flags, "--json")
    notes = json.loads(out)["notes"]
    assert any(n.startswith(NOTE) for n in notes) is said


def test_the_default_card_and_the_report_say_it_too(capsys) -> None:
    code, out, _ = run_cli(capsys)
    assert code == 0 and NOTE in flat(out)
    code, out, _ = run_cli(capsys, "report", "--md", "-")
    assert code == 0 and NOTE in out
    code, out, _ = run_cli(capsys, "report", "--md", "-", "--eager")
    assert code == 0 and NOTE not in out


def test_a_launch_bound_step_is_named_in_the_why() -> None:
    result = evaluate(Scenario(model="glm-4.5", nodes=2, transport="efa-gda"))
    steps = {round(a.step_ms.scalar, 6) for a in result.arms.values()}
    assert len(steps) == 1  # the premise: the three deployments show one step
    bound = [r for r in result.verdict.reasons if r.startswith("Launch-bound")]
    assert bound and "host's kernel launches bind every arm's step" in bound[0]
    for arm in result.arms.values():  # each arm's host time past its GPU work, quoted
        assert f"{arm.breakdown_ms['engine'].scalar:,.2f} ms" in bound[0]
    graphs = evaluate(Scenario(model="glm-4.5", nodes=2, transport="efa-gda", cuda_graphs=True))
    assert not any(r.startswith("Launch-bound") for r in graphs.verdict.reasons)
