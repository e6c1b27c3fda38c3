"""The verdict legend's cases, shared by the two functions that list it.

`report/verdict_map.py: shown` reads a grid of code strings (the page's map, None where no row
reached); `report/sweep_maps.py: _verdicts_shown` reads a sweep's int8 grid (indices into
`VERDICT_CODES`, -1 where no row reached). Both must give the same list for the same cells, so
`test_verdict_map.py` and `test_sweep_maps.py` pin them on these cases, and one can replace the
other.

Worked by hand: `VERDICT_CODES` is (dense, deepep, capacity), so 0 is dense, 1 deepep, 2
capacity; the legend lists them in the cards' order (dense, capacity, deepep), whatever order
the cells hold them in. Each case lays its cells out over two rows (two panels of a sweep).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deepep_calc.base.vocabulary import VERDICT_CODES

_SUBSETS: list[tuple[tuple[int, ...], list[str]]] = [
    ((), []),
    ((0,), ["dense"]),
    ((1,), ["deepep"]),
    ((2,), ["capacity"]),
    ((1, 0), ["dense", "deepep"]),
    ((2, 0), ["dense", "capacity"]),
    ((1, 2), ["capacity", "deepep"]),  # deepep comes first in the cells, last in the legend
    ((1, 2, 0), ["dense", "capacity", "deepep"]),
]

# (the cells, the legend): every subset of the codes, alone and beside cells no row reached,
# then codes that only one of the two panels holds
CASES: list[tuple[tuple[int, ...], list[str]]] = [
    case
    for held, legend in _SUBSETS
    for case in ((held * 2 or (-1, -1), legend), ((*held, -1, -1) * 2, legend))
] + [
    ((1, -1, 0, 2), ["dense", "capacity", "deepep"]),
    ((-1, -1, 2, 1), ["capacity", "deepep"]),
    ((0, 0, -1, -1), ["dense"]),
]


def int_grid(cells: tuple[int, ...]) -> np.ndarray:
    """The cells as a sweep holds them: int8, (panel, y, x), half in each of two panels."""
    return np.asarray(cells, dtype=np.int8).reshape(2, 1, -1)


def str_grid(cells: tuple[int, ...]) -> list[list[Any]]:
    """The same cells as the page's map holds them: rows of code strings, None for -1."""
    half = len(cells) // 2
    return [[VERDICT_CODES[c] if c >= 0 else None for c in row] for row in (cells[:half], cells[half:])]


def case_id(case: tuple[tuple[int, ...], list[str]]) -> str:
    return ",".join(str(c) for c in case[0])
