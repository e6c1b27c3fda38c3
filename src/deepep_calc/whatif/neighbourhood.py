"""The verdict around one scenario: a grid over two of its inputs, chosen where the verdict changes.

The page's and the report's verdict map draw it (`report/verdict_map.py`). Each pair of axes
tried costs one vectorised `compute()` pass over its grid (a few milliseconds), on the model:
a varied scenario never takes a measured cell's figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..decide.verdict import classify_codes
from ..estimate.compute import compute
from ..estimate.result import Result
from ..question.fields import LIMITS
from ..question.scenario import Resolved

# (y field, x field) pairs tried in order; the first whose grid holds more than one verdict is
# kept. Nodes x concurrency first: it is where capacity and batch size move the verdict.
AXES: tuple[tuple[str, str], ...] = (
    ("nodes", "concurrency"),
    ("isl", "concurrency"),
    ("nodes", "isl"),
    ("comms", "concurrency"),
    ("osl", "concurrency"),
)


@dataclass(frozen=True)
class Neighbourhood:
    """The verdict code and recommended arm per (y, x) cell, with the pass that gave them.

    `uniform` says that no pair of axes tried changes the verdict: the first pair is kept, and
    a map of it should say that one verdict holds everywhere in range."""

    y_field: str
    x_field: str
    ys: np.ndarray
    xs: np.ndarray
    codes: np.ndarray
    rec: np.ndarray
    batch: Result
    uniform: bool


def axis_values(field: str, current: int, cap: float | None = None) -> np.ndarray:
    """The grid of one field around the scenario (its own value included), within LIMITS and
    `cap` (for ISL / OSL: what the model's context window leaves)."""
    base = {
        "nodes": {1, 2, 4, 8, 16, 32},
        "concurrency": {4**i for i in range(8)},
        "isl": {128, 512, 2048, 8192, 32768, 131072},
        "osl": {64, 256, 1024, 4096, 16384},
        "comms": {1, 2, 4, 8, 16},
    }[field]
    top = min(LIMITS[field], cap) if cap is not None else LIMITS[field]
    return np.array(sorted(v for v in base | {int(current)} if 1 <= v <= top), dtype=float)


def _cap(r: Resolved, field: str) -> float | None:
    """ISL and OSL share the context window: the other one's value leaves the rest."""
    window = r.model.max_context
    if not window or field not in ("isl", "osl"):
        return None
    other = r.scenario.osl if field == "isl" else r.scenario.isl
    return float(window - other)


def _grid(r: Resolved, y_field: str, x_field: str) -> tuple[Any, ...]:
    s = r.scenario
    ys = axis_values(y_field, getattr(s, y_field), _cap(r, y_field))
    xs = axis_values(x_field, getattr(s, x_field), _cap(r, x_field))
    y_grid, x_grid = np.meshgrid(ys, xs, indexing="ij")
    batch = compute(r.vary(**{y_field: y_grid, x_field: x_grid}))
    codes, rec = classify_codes(batch)
    return ys, xs, np.broadcast_to(codes, y_grid.shape), np.broadcast_to(rec, y_grid.shape), batch


def neighbourhood(result: Result) -> Neighbourhood:
    """The first pair of axes along which the verdict changes, with its grid; else the first
    pair, marked `uniform`. EP_NUM_COMMS is tried only where the transport reads it."""
    r = result.resolved
    first = None
    for y_field, x_field in AXES:
        if "comms" in (y_field, x_field) and not r.transport.comms_sensitive:
            continue  # EP_NUM_COMMS changes nothing off the NCCL-GIN proxy
        grid = _grid(r, y_field, x_field)
        first = first or (y_field, x_field, grid)
        if len({str(c) for c in np.asarray(grid[2]).reshape(-1)}) > 1:
            return Neighbourhood(y_field, x_field, *grid, uniform=False)
    assert first is not None
    return Neighbourhood(first[0], first[1], *first[2], uniform=True)
