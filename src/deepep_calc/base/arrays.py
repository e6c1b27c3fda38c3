"""Small NumPy helpers for code that serves one scenario (scalars) and a sweep (arrays) alike.

On a scalar, NumPy costs microseconds per call (argument dispatch, a 0-d array, the ufunc or
reduction machinery) where the builtin costs tens of nanoseconds, and arithmetic on a 0-d
array or a NumPy scalar several times a Python float's. One evaluation asks hundreds of such
questions, so a scalar gets a plain Python answer here and only an array pays for NumPy. Each
helper gives NumPy's value (the same IEEE operation, NaN still propagating); only the type of
a scalar result differs (`float`, not `np.float64`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

SCALARS = (float, np.float64)  # the plain-arithmetic path's inputs (np.float64 is a float)


def every_some(mask: Any) -> tuple[bool, bool]:
    """(all true, any true) of a boolean scalar or array."""
    if type(mask) is bool:
        return mask, mask
    arr = np.asarray(mask, dtype=bool)
    if arr.ndim == 0:
        flag = bool(arr)
        return flag, flag
    return bool(arr.all()), bool(arr.any())


def floats(x: Any) -> Any:
    """`np.asarray(x, dtype=float)`, but a scalar (a number or a 0-d array) as a Python float."""
    if type(x) is float:
        return x
    if type(x) is int or type(x) is np.float64:
        return float(x)
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


def minimum(a: Any, b: Any) -> Any:
    """`np.minimum`; on two floats a comparison (NumPy's rules: NaN wins, a tie gives `b`)."""
    if type(a) in SCALARS and type(b) in SCALARS:
        return a if a < b or a != a else b
    return np.minimum(a, b)


def maximum(a: Any, b: Any) -> Any:
    """`np.maximum`; on two floats a comparison (NumPy's rules: NaN wins, a tie gives `b`)."""
    if type(a) in SCALARS and type(b) in SCALARS:
        return a if a > b or a != a else b
    return np.maximum(a, b)


def ceil(x: Any) -> Any:
    """`np.ceil`; a positive finite float takes `math.ceil` (zero and negatives keep NumPy's
    signed zeros)."""
    return float(math.ceil(x)) if type(x) in SCALARS and 0.0 < x < math.inf else np.ceil(x)


def floor(x: Any) -> Any:
    """`np.floor`; a positive finite float takes `math.floor`."""
    return float(math.floor(x)) if type(x) in SCALARS and 0.0 < x < math.inf else np.floor(x)


def power(base: Any, exponent: Any) -> Any:
    """`np.power`; a positive float base to a float or int power takes `**` (the same C `pow`).

    A zero or negative base (where `**` raises or turns complex) and an overflow take NumPy.
    """
    if type(base) in SCALARS and base > 0.0 and (type(exponent) in SCALARS or type(exponent) is int):
        try:
            return base**exponent
        except OverflowError:
            pass
    return np.power(base, exponent)


def invert(mask: Any) -> Any:
    """`~mask` of a boolean scalar or array; on a plain bool, `not mask` (`~True` is -2)."""
    return not mask if type(mask) is bool else ~mask


def where(condition: Any, a: Any, b: Any) -> Any:
    """`np.where`; on a plain bool condition and scalar branches, `a if condition else b` (no
    0-d array). An array branch takes NumPy, which broadcasts the result to its shape."""
    if type(condition) is bool and not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray):
        return a if condition else b
    return np.where(condition, a, b)
