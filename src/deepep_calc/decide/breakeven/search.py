"""The break-even machinery: an answer, the model at many points, and the first crossing.

Every answer of this package is solved with these: one vectorised pass over a grid of the
knob, then narrower passes around the first point where the predicate turns true.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...base.arrays import np
from ...base.quantity import Q
from ...estimate.evaluate import Result, compute
from ...fit.table import Table
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


def model(r: Resolved, table: Table | None = None, **arrays: Any) -> Result:
    """The vectorised model (no measured substitution) at the given numeric fields, with the
    constants of `table` (None: those `r` runs with)."""
    s = r.scenario
    fields = {"concurrency": np.atleast_1d(np.asarray(arrays.pop("concurrency", s.concurrency)))}
    fields.update({k: np.atleast_1d(np.asarray(v)) for k, v in arrays.items()})
    return compute(r.vary(**fields), table=table)


def _at(q: Q, i: int = 0) -> Q:
    """Row i of a vectorised quantity (a value that did not vary holds for every row)."""
    values = np.asarray(q.value).reshape(-1)
    return Q(float(values[min(i, values.size - 1)]), q.unit, q.tag, q.source)


def first_true(pred: Callable[[np.ndarray], np.ndarray], lo: int, hi: int, points: int = 96) -> int | None:
    """Smallest integer in [lo, hi] where `pred` holds, or None if it holds nowhere on the grid.

    One vectorised pass over a geometric + linear grid finds the first bracket; each further
    pass divides the bracket ~`points` ways (a k-ary bisection). Exact for predicates that turn
    true once; for others it returns the first crossing the grid sees.
    """
    grid = _grid(lo, hi, points, include_ends=True)
    ok = np.asarray(pred(grid), dtype=bool)
    if not ok.any():
        return None
    j = int(np.argmax(ok))
    if j == 0:
        return int(grid[0])
    below, above = int(grid[j - 1]), int(grid[j])
    while above - below > 1:
        cand = _grid(below, above, points, include_ends=False)
        if cand.size == 0:
            break
        ok = np.asarray(pred(cand), dtype=bool)
        if ok.any():
            k = int(np.argmax(ok))
            above = int(cand[k])
            below = int(cand[k - 1]) if k > 0 else below
        else:
            below = int(cand[-1])
    return above


def _grid(lo: int, hi: int, points: int, include_ends: bool) -> np.ndarray:
    half = max(points // 2, 2)
    geo = np.geomspace(max(lo, 1), hi, half)
    lin = np.linspace(lo, hi, half)
    grid = np.unique(np.round(np.concatenate([geo, lin])).astype(np.int64))
    if include_ends:
        return np.unique(np.concatenate([[lo, hi], grid[(grid >= lo) & (grid <= hi)]]))
    return grid[(grid > lo) & (grid < hi)]


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
