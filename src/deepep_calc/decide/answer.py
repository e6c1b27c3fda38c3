"""The answer to one scenario: the estimate, the rule, and the words, put together.

`evaluate()` is the public entry point: it resolves the question, computes every arm
(`estimate/compute.py`), applies the rule (`verdict.py`, `decide`) and, unless asked not to,
words it (`explain_verdict`): the headline (`headline.py`), the reasons and caveats
(`explain.py`), the fixes when nothing fits or no arm meets the targets (`remedy.py`), and the
advisories and robustness line (the what-if passes). A caller that reads only the code and the
figures passes `explain=False` and pays for neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..base.arrays import first
from ..catalog.models import ModelSpec
from ..estimate.arms import check_splittable
from ..estimate.disagg import compute_with_disagg
from ..estimate.result import Result
from ..question.scenario import Scenario, resolve
from . import disagg
from .disagg_launch import launch_blocks
from .explain import (
    advisories,
    assumed_mode_note,
    caveats,
    engine_flags,
    flip_advisory,
    mechanism,
    reasons,
)
from .headline import headline
from .remedy import fixes_for
from .verdict import Verdict, assess, compare, deciding, status_of


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
    r = resolve(scenario, models)
    check_splittable(r)
    result = compute_with_disagg(r)
    result.verdict = decide(result)
    if explain:
        explain_verdict(result)
    return result


def note_assumed_mode(result: Result) -> Result:
    """Say on the result (its `notes`, shown by the card and the reports) which decode mode was
    assumed, for a face whose user left the mode unset (neither --eager nor --cuda-graphs)."""
    note = assumed_mode_note(result)
    if note and note not in result.notes:
        result.notes.append(note)
    return result


def decide(result: Any) -> Verdict:
    """Classify one scenario: the code, the arm to run, its status and the deciding comparison
    (the words and advice are `explain_verdict`'s)."""
    a = assess(result)
    code = str(first(a.codes))
    arm = str(first(a.recommended))
    status = status_of(a)
    comparison = compare(result)
    contending = {n: bool(first(v)) for n, v in a.contending.items()}
    # the pair that decided (DeepEP against the arm it had to beat); capacity picks the faster
    # EP flavour (threshold 1), otherwise the first arm must clear the noise band
    decided = deciding(result, code, arm, contending) if status != "nothing_fits" else None
    close = decided is not None and decided.basis == "model" and decided.status == "within the band"
    return Verdict(
        code,
        arm,
        status=status,
        close_call=close,
        compared=comparison,
        deciding=decided,
        contending=contending,
    )


def explain_verdict(result: Any) -> Verdict:
    """Work out the words and the advice of `result.verdict`, once, and return it.

    The words: headline, reasons, caveats, fixes, the run flags and the blurb. The advice (it
    reads the fixes): advisories, the robustness line and the disaggregation line, the what-if
    passes of the model that take most of an answer's time.
    """
    v: Verdict = result.verdict
    if v.explained:
        return v
    arm, status = v.recommended_arm, v.status
    found = fixes_for(result, status) if status != "ok" else []
    v.caveats = caveats(result, arm)
    v.fixes = [f.to_json() for f in found]
    v.headline = headline(result, v, v.contending, found, v.caveats)
    v.reasons = reasons(result, v)
    v.flags = _with_disaggregated(engine_flags(result, arm), result)
    v.blurb = mechanism(result, v)
    v.advisories, v.robustness, v.disaggregation = _advise(result, v, found)
    v.explained = True
    return v


def _with_disaggregated(flags: dict[str, Any], result: Any) -> dict[str, Any]:
    """The run block, plus both servers' and the router's for a disaggregated scenario."""
    block = launch_blocks(result)
    if block is not None:
        flags["disaggregated"] = block
    return flags


def _advise(result: Any, v: Verdict, fixes: list[Any]) -> tuple[list[str], str, Any]:
    """The advisories, the robustness line and the disaggregation line of a verdict (the
    what-if passes)."""
    out = advisories(result, v, fixes)
    out += disagg.advisories(result)
    line = disagg.comparison(result, v)
    flip = flip_advisory(result, v.code) if v.status != "nothing_fits" else ""
    if flip:
        out.append(flip)
        change = flip.split(" would flip", 1)[0]
        return out, f"fragile: {change} alone flips it (the last advisory).", line
    if v.status == "nothing_fits":
        return out, "untested: nothing fits as asked", line
    robust = "robust: no single change of transport, comms, graphs, concurrency or nodes flips it"
    if v.close_call:  # robust to what-ifs, yet within the model's error: say both, not just one
        robust += ", though the call itself is within the model's error band (headline)"
    return out, robust, line
