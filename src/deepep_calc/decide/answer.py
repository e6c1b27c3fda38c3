"""The rule applied to one scenario: the estimate and its verdict, before any words.

`decide_resolved` computes every arm of a resolved question (`estimate/compute.py`) and applies
the rule (`verdict.py`, through `decide`). The words and the what-ifs they quote are
`whatif.explanation.explain_verdict`'s; the public `deepep_calc.evaluate` (`api.py`) does both.
"""

from __future__ import annotations

from typing import Any

from ..base.arrays import first
from ..estimate.arms import check_splittable
from ..estimate.disagg import compute_with_disagg
from ..estimate.result import Result
from ..question.scenario import Resolved
from .explain import assumed_mode_note
from .verdict import Verdict, assess, compare, deciding, status_of


def decide_resolved(r: Resolved) -> Result:
    """Compute every arm of a resolved question and apply the rule: the answer without its words
    (`whatif.explanation.explain_verdict` adds them; `deepep_calc.evaluate` does both)."""
    check_splittable(r)
    result = compute_with_disagg(r)
    result.verdict = decide(result)
    return result


def note_assumed_mode(result: Result) -> Result:
    """Say on the result (its `notes`, shown by the card and the reports) which graph mode was
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
