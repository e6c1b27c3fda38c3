"""One-dimensional minimisation the fit stages share (deterministic, no tolerance to tune).

Golden-section search narrows a bracket by the same ratio each iteration, so a fixed count
fixes the precision: 80 iterations shrink the bracket by 0.618^80 ~ 1e-17 of its width.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def golden(fn: Callable[[float], float], lo: float, hi: float, iterations: int = 80) -> float:
    """The minimum of a unimodal `fn` on [lo, hi]."""
    g = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = fn(c), fn(d)
    for _ in range(iterations):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = fn(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = fn(d)
    return float(0.5 * (a + b))


def grid_then_golden(fn: Callable[[float], float], lo: float, hi: float, iterations: int = 60) -> float:
    """The minimum of `fn` on [lo, hi] when it may not be unimodal: the best of an 81-point
    grid, then golden-section search between that point's neighbours."""
    grid = np.linspace(lo, hi, 81)
    j = int(np.argmin([fn(x) for x in grid]))
    return golden(fn, grid[max(j - 1, 0)], grid[min(j + 1, len(grid) - 1)], iterations)
