"""`Q`: a number that carries its unit and its provenance.

Every figure the calculator prints is a `Q`. Arithmetic between quantities yields the
weakest tag of its inputs, so a number computed from an assumption can never be shown as
measured. A result computed from measured values is `derived`, never `measured`: only an
observation on hardware is measured.

`Q.value` may be a float or a NumPy array, so the same physics serves one scenario and a
million-row sweep.

A modelled figure may carry a band, `low` and `high`: the range its kind of figure has missed
references by out of sample (see `fit/accuracy`). Arithmetic drops bands: errors of
correlated figures do not add like independent ones, so a band is attached to a finished
figure by the code that knows its kind (`with_band`), never propagated blindly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from .arrays import first_float, maximum, minimum, np, plain

if TYPE_CHECKING:
    Number = float | int | np.ndarray

MIN_POSITIVE = 1e-6
"""Floor of the means read from a user's file that a ratio divides by (an AIPerf mean, a profile's
constant): below it (1 ns per token, a token per 11 days) a ratio overflows to inf rather than
saying anything."""


class Tag(IntEnum):
    """Provenance strength: a larger value is a stronger claim."""

    ASSUMED = 0
    DERIVED = 1
    MEASURED = 2

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Tag:
        try:
            return cls[text.upper()]
        except KeyError:
            raise ValueError(f"tag must be measured, derived or assumed, not {text!r}") from None


MEASURED, DERIVED, ASSUMED = Tag.MEASURED, Tag.DERIVED, Tag.ASSUMED

_MAX_SOURCES = 6


_CACHE_CAP = 8192  # distinct (a, b) pairs kept; a sweep of many models stays bounded
_MERGED: dict[tuple[str, str], str] = {}
_UNITS_MUL: dict[tuple[str, str], str] = {}
_UNITS_DIV: dict[tuple[str, str], str] = {}


def _merge_sources(a: str, b: str) -> str:
    """The merged source list of two inputs, from `_MERGED` once computed (see `_merge`)."""
    merged = _MERGED.get((a, b))
    if merged is None:
        merged = _merge(a, b)
        if len(_MERGED) < _CACHE_CAP:
            _MERGED[a, b] = merged
    return merged


def _merge(a: str, b: str) -> str:
    """Union of two source lists, order kept, capped so a long chain stays readable.

    A capped list ends in "+N more"; merging it keeps that count (the larger of the two
    inputs', plus what this merge leaves out), so "+N more" never undercounts a chain's own
    omissions nor disappears: it reads "at least N more".
    """
    if a == b or not b:
        return a
    if not a:
        return b
    seen: list[str] = []
    left_out = 0
    for src in (a, b):
        for part in src.split("; "):
            if part.startswith("+"):
                count = part[1:].removesuffix(" more")
                left_out = max(left_out, int(count)) if count.isdigit() else left_out
            elif part and part not in seen:
                seen.append(part)
    if len(seen) > _MAX_SOURCES:
        left_out += len(seen) - _MAX_SOURCES
        seen = seen[:_MAX_SOURCES]
    if left_out:
        seen.append(f"+{left_out} more")
    return "; ".join(seen)


_BY_VALUE = (Tag.ASSUMED, Tag.DERIVED, Tag.MEASURED)
_TAG_NAMES = tuple(str(t) for t in _BY_VALUE)


def _combine_tag(a: Tag, b: Tag = Tag.DERIVED) -> Tag:
    """Arithmetic on observations is derivation; any assumption weakens the whole result."""
    return _BY_VALUE[min(a, b, 1)]


# _TAG1[a]: tag of (a op plain number); _TAG2[a][b]: tag of (a op b).
_TAG1 = tuple(_combine_tag(a) for a in _BY_VALUE)
_TAG2 = tuple(tuple(_combine_tag(a, b) for b in _BY_VALUE) for a in _BY_VALUE)


def _unit_mul(a: str, b: str) -> str:
    unit = "·".join(u for u in (a, b) if u)
    if len(_UNITS_MUL) < _CACHE_CAP:
        _UNITS_MUL[a, b] = unit
    return unit


def _unit_div(a: str, b: str) -> str:
    unit = f"{a or '1'}/{b}" if b else a
    if len(_UNITS_DIV) < _CACHE_CAP:
        _UNITS_DIV[a, b] = unit
    return unit


@dataclass(slots=True)
class Q:
    """A value with a unit, a provenance tag and a source. Treat as immutable."""

    value: Any
    unit: str
    tag: Tag
    source: str
    low: Any = None
    high: Any = None

    # construction helpers -------------------------------------------------
    @classmethod
    def measured(cls, value: Number, unit: str, source: str) -> Q:
        return cls(value, unit, Tag.MEASURED, source)

    @classmethod
    def derived(cls, value: Number, unit: str, source: str) -> Q:
        return cls(value, unit, Tag.DERIVED, source)

    @classmethod
    def assumed(cls, value: Number, unit: str, source: str) -> Q:
        return cls(value, unit, Tag.ASSUMED, source)

    def as_(self, unit: str, source: str | None = None) -> Q:
        """Rename the unit (after a product or quotient) and optionally restate the source."""
        if unit == self.unit and source is None:
            return self  # nothing to rename; quantities are never mutated, so sharing is safe
        return Q(
            self.value, unit, self.tag, source if source is not None else self.source, self.low, self.high
        )

    def with_band(self, low: Any, high: Any) -> Q:
        """The same figure with the range it is expected to fall in (modelled figures only)."""
        return Q(self.value, self.unit, self.tag, self.source, low, high)

    @property
    def banded(self) -> bool:
        return self.low is not None and self.high is not None

    def weaken(self, tag: Tag) -> Q:
        return Q(self.value, self.unit, _BY_VALUE[min(self.tag, tag)], self.source)

    # arithmetic -------------------------------------------------------------
    # These run hundreds of times per evaluation, so each operator is written out: tags come
    # from lookup tables, unit strings and merged sources from dict caches read inline (the
    # helper is called only on a miss), and no other method is called on the way (a Python
    # call costs as much as the arithmetic itself).
    def __add__(self, o: Any) -> Q:
        if type(o) is Q:
            if o.unit != self.unit:
                raise ValueError(f"cannot + {self.unit!r} and {o.unit!r}")
            a, b = self.source, o.source
            src = a if a == b else (_MERGED.get((a, b)) or _merge_sources(a, b))
            return Q(self.value + o.value, self.unit, _TAG2[self.tag][o.tag], src)
        return Q(self.value + o, self.unit, _TAG1[self.tag], self.source)

    __radd__ = __add__

    def __sub__(self, o: Any) -> Q:
        if type(o) is Q:
            if o.unit != self.unit:
                raise ValueError(f"cannot - {self.unit!r} and {o.unit!r}")
            a, b = self.source, o.source
            src = a if a == b else (_MERGED.get((a, b)) or _merge_sources(a, b))
            return Q(self.value - o.value, self.unit, _TAG2[self.tag][o.tag], src)
        return Q(self.value - o, self.unit, _TAG1[self.tag], self.source)

    def __rsub__(self, o: Any) -> Q:
        return Q(o - self.value, self.unit, _TAG1[self.tag], self.source)

    def __mul__(self, o: Any) -> Q:
        if type(o) is Q:
            a, b = self.source, o.source
            src = a if a == b else (_MERGED.get((a, b)) or _merge_sources(a, b))
            ua, ub = self.unit, o.unit
            unit = _UNITS_MUL.get((ua, ub))
            return Q(
                self.value * o.value,
                unit if unit is not None else _unit_mul(ua, ub),
                _TAG2[self.tag][o.tag],
                src,
            )
        return Q(self.value * o, self.unit, _TAG1[self.tag], self.source)

    __rmul__ = __mul__

    def __truediv__(self, o: Any) -> Q:
        if type(o) is Q:
            a, b = self.source, o.source
            src = a if a == b else (_MERGED.get((a, b)) or _merge_sources(a, b))
            ua, ub = self.unit, o.unit
            unit = _UNITS_DIV.get((ua, ub))
            return Q(
                self.value / o.value,
                unit if unit is not None else _unit_div(ua, ub),
                _TAG2[self.tag][o.tag],
                src,
            )
        return Q(self.value / o, self.unit, _TAG1[self.tag], self.source)

    def __rtruediv__(self, o: Any) -> Q:
        return Q(o / self.value, _unit_div("", self.unit), _TAG1[self.tag], self.source)

    def __neg__(self) -> Q:
        return Q(-self.value, self.unit, self.tag, self.source)

    def over(self, divisor: float, unit: str) -> Q:
        """`(self / divisor).as_(unit)` as one object: a change of scale (us -> ms) is one step."""
        return Q(self.value / divisor, unit, _TAG1[self.tag], self.source)

    def quotient(self, o: Q, scale: float, unit: str, source: str | None = None) -> Q:
        """`(self / o * scale).as_(unit, source)` as one object: a size over a rate, rescaled
        (MB over GB/s, x 1e3, in us). The same value, tag and merged source, two objects fewer."""
        if type(o) is not Q:
            src = source if source is not None else self.source
            return Q(self.value / o * scale, unit, _TAG1[self.tag], src)
        if source is None:
            a, b = self.source, o.source
            source = a if a == b else (_MERGED.get((a, b)) or _merge_sources(a, b))
        return Q(self.value / o.value * scale, unit, _TAG2[self.tag][o.tag], source)

    # presentation -----------------------------------------------------------
    @property
    def scalar(self) -> float:
        v = self.value
        return v if type(v) is float else first_float(v)  # a float, the common case, costs no call

    def to_json(self) -> dict[str, Any]:
        """Plain JSON types; a non-finite number becomes null (JSON has no NaN)."""
        value = plain(self.value)
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        out = {"value": value, "unit": self.unit, "tag": _TAG_NAMES[self.tag], "source": self.source}
        if self.low is not None and self.high is not None:
            out["low"] = _plain_number(self.low)
            out["high"] = _plain_number(self.high)
        return out

    def fmt(self, digits: int = 1) -> str:
        return f"{self.scalar:,.{digits}f} {self.unit}"

    def __repr__(self) -> str:
        return f"Q({self.value!r} {self.unit}, {self.tag}, {self.source!r})"


def _plain_number(v: Any) -> Any:
    v = plain(v)
    return None if isinstance(v, float) and not math.isfinite(v) else v


def weakest(*qs: Q) -> Tag:
    return _BY_VALUE[min(q.tag for q in qs)]


def _elementwise(fn: Any, a: Q, b: Q) -> Q:
    """fn(a, b) elementwise over same-unit quantities; the result rests on both inputs.

    `fn` is one of `base.arrays`' builtin-on-scalars ufuncs: one evaluation compares hundreds
    of scalars, where a NumPy ufunc costs ~20x the builtin."""
    if a.unit != b.unit:
        raise ValueError(f"cannot compare {a.unit!r} and {b.unit!r}")
    sa, sb = a.source, b.source
    src = sa if sa == sb else (_MERGED.get((sa, sb)) or _merge_sources(sa, sb))
    return Q(fn(a.value, b.value), a.unit, _TAG2[a.tag][b.tag], src)


def qmax(a: Q, b: Q) -> Q:
    return _elementwise(maximum, a, b)


def qmin(a: Q, b: Q) -> Q:
    return _elementwise(minimum, a, b)


def qmap(fn: Any, q: Q, unit: str | None = None) -> Q:
    """Apply a NumPy function to the value, keeping provenance (the function adds no data)."""
    return Q(fn(q.value), unit if unit is not None else q.unit, _combine_tag(q.tag), q.source)
