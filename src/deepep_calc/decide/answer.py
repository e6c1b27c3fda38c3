"""The answer to one scenario: the estimate, the rule, and the words, put together.

`evaluate()` is the public entry point: it resolves the question, computes every arm
(`estimate/evaluate.py`), applies the rule (`verdict.py`) and words it: the headline
(`headline.py`), the reasons and caveats (`explain.py`) and the fixes when nothing fits or no
arm meets the targets (`remedy.py`). The words, and the advisories and the robustness line
(the what-if passes), wait for their first read, in the context this call ran in: a caller
that reads only the code and the figures pays for neither.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from typing import Any

from ..base.arrays import first
from ..catalog.models import ModelSpec
from ..estimate.disagg import compute_with_disagg
from ..estimate.evaluate import Result, check_splittable
from ..question.scenario import Scenario, resolve
from . import disagg
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
    scenario: Scenario | None = None, /, models: Mapping[str, ModelSpec] | None = None, **fields: Any
) -> Result:
    """Evaluate a scenario (or keyword fields on top of the calibration defaults).

    `models`: specs known only in memory (an uploaded config.json) by the key `model` names.
    """
    if scenario is None:
        scenario = Scenario(**fields)
    elif fields:
        scenario = scenario.copy(**fields)
    r = resolve(scenario, models)
    check_splittable(r)
    result = compute_with_disagg(r)
    result.verdict = decide(result)
    return result


def note_assumed_mode(result: Result) -> Result:
    """Say on the result (its `notes`, shown by the card and the reports) which decode mode was
    assumed, for a face whose user left the mode unset (neither --eager nor --cuda-graphs)."""
    note = assumed_mode_note(result)
    if note and note not in result.notes:
        result.notes.append(note)
    return result


def decide(result: Any, lazy: bool = True) -> Verdict:
    """Classify one scenario and word it: headline, reasons, advisories, fixes, flags.

    The rule runs now. `lazy`: leave the words (headline, reasons, caveats, fixes, flags) and
    the advisories and robustness (the what-if passes) to their first read, run in the context
    this call ran in (inline uploaded models, for one); `False` runs them now.
    """
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
    v = Verdict(code, arm, status=status, close_call=close, compared=comparison, deciding=decided)
    context = contextvars.copy_context()
    fixes: list[Any] = []  # the words stage finds them; the advice stage, always after it, reads them

    def words() -> dict[str, Any]:
        fixes[:] = fixes_for(result, status) if status != "ok" else []
        told = caveats(result, arm)
        return {
            "caveats": told,
            "fixes": [f.to_json() for f in fixes],
            "headline": headline(result, v, contending, fixes, told),
            "reasons": reasons(result, v),
            "flags": _with_disaggregated(engine_flags(result, arm), result),
            "blurb": mechanism(result, v),
        }

    # one context copy per run: thread-safe, and in the context this call ran in
    v._pending_words = lambda: context.copy().run(words)
    v._pending = lambda: context.copy().run(_advise, result, v, fixes)
    if not lazy:
        v.settle()
    return v


def _with_disaggregated(flags: dict[str, Any], result: Any) -> dict[str, Any]:
    """The run block, plus both servers' and the router's for a disaggregated scenario."""
    block = disagg.launch_blocks(result)
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
