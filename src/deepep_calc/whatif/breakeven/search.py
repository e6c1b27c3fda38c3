"""The break-even answers' record and words; the passes they are solved with (the model at
many points, the first crossing) are `estimate/passes.py`'s, which a fix's search shares.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...base.arrays import np
from ...base.quantity import Q
from ...question.scenario import Resolved


@dataclass(eq=False)
class Answer:
    key: str
    question: str
    value: Q | None
    note: str
    check: dict[str, Q] = field(default_factory=dict)  # the model at (and beside) the answer
    short: str = ""  # the answer in a word when there is no value ("never", "not applicable")

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "question": self.question,
            "value": self.value.to_json() if self.value is not None else None,
            "note": self.note,
            "short": self.short,
            "check": {k: v.to_json() for k, v in self.check.items()},
        }


# The model at many points -------------------------------------------------------------------


def _at(q: Q, i: int = 0) -> Q:
    """Row i of a vectorised quantity (a value that did not vary holds for every row)."""
    values = np.asarray(q.value).reshape(-1)
    return Q(float(values[min(i, values.size - 1)]), q.unit, q.tag, q.source)


def plural(n: float, word: str, digits: int = 0) -> str:
    """`1 node`, `2 nodes`, `1,234 requests`: the count and its noun, singular when it is one."""
    text = f"{n:,.{digits}f}"
    return f"{text} {word}" if text == "1" else f"{text} {word}s"


def why_not_served(r: Resolved, arm: Any) -> str:
    """Why an arm cannot serve here, in words (an answer that has no value says so)."""
    if not bool(np.all(arm.fits_memory)):
        return "it does not fit in HBM"
    if not bool(np.all(arm.splits)):
        world = r.scenario.nodes * r.gpus_per_node
        return f"{r.model.experts} experts do not split evenly over EP{world}"
    return "its first token comes after the prompt ceiling (requests queue for a batch slot)"
