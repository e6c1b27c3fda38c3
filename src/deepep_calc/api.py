"""The Python API's one call: a scenario in, its answer out, words and advice included.

It sits above the what-ifs because an explained answer quotes them. `io.inputs.resolve_files`
resolves the question with the files it names read, `decide_resolved` computes and applies the
rule (`decide/answer.py`), and `explain_verdict` words it with the flip search and the fixes
(`whatif/explanation.py`). The faces (CLI, web, reports) call it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .catalog.models import ModelSpec
from .decide.answer import decide_resolved
from .estimate.result import Result
from .io.inputs import resolve_files
from .question.scenario import Scenario
from .whatif.explanation import explain_verdict


def evaluate(
    scenario: Scenario | None = None,
    /,
    models: Mapping[str, ModelSpec] | None = None,
    explain: bool = True,
    **fields: Any,
) -> Result:
    """Evaluate a scenario (or keyword fields on top of the calibration defaults).

    `models`: specs known only in memory (an uploaded config.json) by the key `model` names.
    `explain`: work out the verdict's words and advice now (False: the rule's fields only; a
    face calls `explain_verdict` when it shows them).
    """
    if scenario is None:
        scenario = Scenario(**fields)
    elif fields:
        scenario = scenario.copy(**fields)
    result = decide_resolved(resolve_files(scenario, models))
    if explain:
        explain_verdict(result)
    return result
