"""Assumed model constants with their stated uncertainty (used by the sensitivity analysis).

`overrides()` lets one evaluation run with other values (the tornado of `sensitivity.py`).
It is a context variable, so concurrent requests of the web server (threads or tasks) never
see each other's values; with no override active `const()` is the cached lookup it always was.
Caches of anything fitted from constants key themselves on `override_key()`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from typing import TYPE_CHECKING, Annotated, Literal

from ..base.quantity import Q, Tag
from ..base.records import Record, row
from ._toml import validate_table

if TYPE_CHECKING:
    from annotated_types import Ge


@row
class Constant(Record):
    tag: Literal["measured", "derived", "assumed"] = "assumed"
    value: float
    spread: Annotated[float, Ge(0)]
    unit: str
    source: str

    def q(self) -> Q:
        return Q(self.value, self.unit, Tag.parse(self.tag), self.source)


@cache
def load_constants() -> dict[str, Constant]:
    return validate_table("constants.toml", Constant)


_OVERRIDES: ContextVar[tuple[tuple[str, float], ...]] = ContextVar("constant_overrides", default=())


@contextmanager
def overrides(values: Mapping[str, float]) -> Iterator[None]:
    """Run the block with some constants replaced (keys: constant names, or
    `transport:<name>:<field>` for a transport's assumed figure, see catalog/transports.py)."""
    merged = dict(_OVERRIDES.get())
    merged.update({k: float(v) for k, v in values.items()})
    token = _OVERRIDES.set(tuple(sorted(merged.items())))
    try:
        yield
    finally:
        _OVERRIDES.reset(token)


def override_key() -> tuple[tuple[str, float], ...]:
    """The active overrides, hashable: `()` when none (the normal, cached case)."""
    return _OVERRIDES.get()


@cache
def _const_cached(name: str) -> Q:
    return load_constants()[name].q()


def const(name: str) -> Q:
    """The constant as a quantity (shared instance: quantities are never mutated)."""
    active = _OVERRIDES.get()
    if active:
        for key, value in active:
            if key == name:
                base = load_constants()[name]
                return Q(value, base.unit, Tag.ASSUMED, f"{name} set to {value:g} (sensitivity case)")
    return _const_cached(name)
