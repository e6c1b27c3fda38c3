"""Small NumPy helpers for code that serves one scenario (scalars) and a sweep (arrays) alike.

On a scalar, NumPy's reductions cost microseconds each (argument dispatch, a 0-d array, the
reduction machinery); an evaluation asks dozens of such questions, so a scalar gets a plain
answer here and only an array pays for the reduction.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def every_some(mask: Any) -> tuple[bool, bool]:
    """(all true, any true) of a boolean scalar or array."""
    if type(mask) is bool:
        return mask, mask
    arr = np.asarray(mask, dtype=bool)
    if arr.ndim == 0:
        flag = bool(arr)
        return flag, flag
    return bool(arr.all()), bool(arr.any())
