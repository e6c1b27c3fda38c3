"""Small NumPy helpers for code that serves one scenario (scalars) and a sweep (arrays) alike.

On a scalar, NumPy costs microseconds per call (argument dispatch, a 0-d array, the ufunc or
reduction machinery) where the builtin costs tens of nanoseconds, and arithmetic on a 0-d
array or a NumPy scalar several times a Python float's. One evaluation asks hundreds of such
questions, so a scalar gets a plain Python answer here and only an array pays for NumPy. Each
helper gives NumPy's value (the same IEEE operation, NaN still propagating); only the type of
a scalar result differs (`float`, not `np.float64`).

One scenario therefore needs no NumPy at all, and importing it is about half of a CLI run
(~0.1 s). So the modules a single evaluation imports (base, question, physics, estimate,
decide) take `np` from here, where it is NumPy imported on the first name asked of it: by the
first array (a sweep, a search, a fit, a chart), not by the import of the module.
The array-only layers (fit, whatif, report's charts) import NumPy as usual.
"""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Any

# The plain-arithmetic path's input types; NumPy's float64 (a float subclass) joins when NumPy
# is loaded, as no value can be one before.
SCALARS: set[type] = {float}


class _NumPy:
    """The `numpy` module, imported on the first attribute asked of it.

    Each name is then kept as an attribute of this object, so the next lookup is as quick as a
    module's. Nothing else differs from `import numpy as np`.
    """

    def __getattr__(self, name: str) -> Any:
        import numpy

        SCALARS.add(numpy.float64)
        value = getattr(numpy, name)
        setattr(self, name, value)
        return value


if TYPE_CHECKING:
    import numpy as np
else:
    np = _NumPy()


def loaded() -> bool:
    """Whether NumPy is imported in this process (by us or anyone): until then no value is an
    array or a NumPy scalar, so a type check against one can be skipped without importing it."""
    return "numpy" in sys.modules


def is_array(x: Any) -> bool:
    """`isinstance(x, np.ndarray)`, without importing NumPy to learn that a float is not one."""
    return "numpy" in sys.modules and isinstance(x, np.ndarray)


def first(x: Any) -> Any:
    """The first element of an array, or a scalar as it is: one scenario's value of a state."""
    return np.ravel(x)[0] if is_array(x) else x


def first_float(x: Any) -> float:
    """The first element of a scalar or an array, as a float: one scenario's figure."""
    if type(x) in SCALARS or type(x) is int:
        return float(x)
    return float(np.asarray(x, dtype=float).reshape(-1)[0])


def plain(x: Any) -> Any:
    """`x` in plain Python types for JSON: an array as a list, a NumPy scalar as its item."""
    if type(x) in _PLAIN or "numpy" not in sys.modules:
        return x
    if isinstance(x, np.ndarray):
        return x.tolist()
    return x.item() if isinstance(x, np.generic) else x


_PLAIN = (float, int, bool, str, type(None))


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
    if type(x) is int or type(x) in SCALARS:
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
    """`np.ceil`; a float takes `math.ceil`, with NumPy's signed zero for -1 < x < 0 and the
    zeros, infinities and NaN returned as they are (their own ceiling)."""
    if type(x) not in SCALARS:
        return np.ceil(x)
    if x != x or x == 0.0 or x in (math.inf, -math.inf):
        return float(x)
    return -0.0 if -1.0 < x < 0.0 else float(math.ceil(x))


def floor(x: Any) -> Any:
    """`np.floor`; a float takes `math.floor` (zeros, infinities and NaN are their own floor)."""
    if type(x) not in SCALARS:
        return np.floor(x)
    if x != x or x == 0.0 or x in (math.inf, -math.inf):
        return float(x)
    return float(math.floor(x))


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
    if type(condition) is bool and not is_array(a) and not is_array(b):
        return a if condition else b
    return np.where(condition, a, b)
