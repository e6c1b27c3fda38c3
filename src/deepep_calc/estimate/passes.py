"""The model at many values of a field in one vectorised pass, and the first crossing.

The break-even answers (`whatif/breakeven/`) and the fixes' searches (`whatif/fixes.py`) are
solved with these: one pass over a grid of the knob, then narrower passes around the first
point where the predicate turns true.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base.arrays import np
from ..fit.table import Table
from ..question.scenario import Resolved
from .compute import compute
from .result import Result


def model(r: Resolved, table: Table | None = None, **arrays: Any) -> Result:
    """The vectorised model (no measured substitution) at the given numeric fields, with the
    constants of `table` (None: those `r` runs with)."""
    s = r.scenario
    fields = {"concurrency": np.atleast_1d(np.asarray(arrays.pop("concurrency", s.concurrency)))}
    fields.update({k: np.atleast_1d(np.asarray(v)) for k, v in arrays.items()})
    return compute(r.vary(**fields), table=table)


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
    half = max(points // 2, 3)  # three points a spacing at least: one inside the bracket
    geo = np.geomspace(max(lo, 1), hi, half)
    lin = np.linspace(lo, hi, half)
    grid = np.unique(np.round(np.concatenate([geo, lin])).astype(np.int64))
    if include_ends:
        return np.unique(np.concatenate([[lo, hi], grid[(grid >= lo) & (grid <= hi)]]))
    return grid[(grid > lo) & (grid < hi)]
