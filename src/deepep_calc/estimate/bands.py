"""The error band a modelled figure carries: its kind's out-of-sample misses (measured by
`accuracy/validate.py`, shipped in the fit as `Table.bands`).

A module of its own because the arms (`arms.py`) and what bounds their steps (`bounds.py`)
both band their figures, the same way.
"""

from __future__ import annotations

from typing import Any

from ..base.arrays import floats, where
from ..base.quantity import Q, Tag
from ..fit.table import Table


def banded(q: Q, table: Table, kind: str, inverse: bool = False, covered: Any = True) -> Q:
    """The figure with the band of its kind (modelled figures only; measured ones have none).

    A band (low, high) bounds model / reference over the cross-validated misses of that kind
    (accuracy/validate.py); `covered` False (or per row) takes the wider band of combinations no
    reference covered. For a figure that is the inverse of the banded kind (per-user rate from
    the step, cost from the aggregate) the factors swap and invert.
    """
    if q.tag == Tag.MEASURED:
        return q
    near, far = table.band(kind), table.band(kind, covered=False)
    if near is None:
        return q
    if covered is True or far is None:
        lo, hi = near
    elif covered is False:
        lo, hi = far
    else:  # per row
        lo, hi = where(covered, near[0], far[0]), where(covered, near[1], far[1])
    if inverse:  # model / reference: the truth lies in value / hi .. value / lo
        lo, hi = 1.0 / hi, 1.0 / lo
    value = floats(q.value)
    return q.with_band(value / hi, value / lo)
