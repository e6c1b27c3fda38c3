"""Assumed model constants with their stated uncertainty (used by the sensitivity analysis).

A what-if on constants is a value, not hidden state: `Assumptions` holds the constants in force
(the catalog's, `CATALOG`, with some changed) and travels with the question (`Resolved`) and
the table fitted under it (`fit/table.py`), so two evaluations under different values (the
tornado of `sensitivity.py`, concurrent web requests) cannot see each other's. `const()` is the
catalog's own value, for the constants no what-if changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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


@cache
def _const_cached(name: str) -> Q:
    return load_constants()[name].q()


def const(name: str) -> Q:
    """The catalog's constant as a quantity (shared instance: quantities are never mutated).

    Only for constants no what-if changes; a figure a sensitivity case may move is read from
    the `Assumptions` the evaluation carries (`Resolved.assumptions`, `Table.assumptions`)."""
    return _const_cached(name)


TRANSPORT_PREFIX = "transport:"  # `transport:<name>:<field>`: a transport's assumed figure


@dataclass(frozen=True)
class Assumptions:
    """The assumed constants in force: the catalog's, with `values` changed (a what-if).

    Frozen and hashable, so a table fitted under it and every cache of anything derived from
    constants key on it; `CATALOG` (no change) is the normal case. Keys of `values` are
    constant names, or `transport:<name>:<field>` for a transport's assumed figure
    (catalog/transports.py `get_transport`). Kept sorted so equal changes compare equal.
    """

    values: tuple[tuple[str, float], ...] = ()

    def const(self, name: str) -> Q:
        """The constant in force: the catalog's quantity, or the changed value tagged assumed."""
        for key, value in self.values:
            if key == name:
                base = load_constants()[name]
                return Q(value, base.unit, Tag.ASSUMED, f"{name} set to {value:g} (sensitivity case)")
        return _const_cached(name)

    def with_values(self, values: Mapping[str, float]) -> Assumptions:
        """These assumptions with some values changed (later changes win)."""
        merged = dict(self.values)
        merged.update({k: float(v) for k, v in values.items()})
        return Assumptions(tuple(sorted(merged.items())))

    def changed(self, **values: float) -> Assumptions:
        """`with_values` for constant names (a transport figure's key is not an identifier)."""
        return self.with_values(values)

    def transport_figures(self, transport: str) -> dict[str, float]:
        """The changed figures of one transport, by field name (empty: the catalog's row)."""
        prefix = f"{TRANSPORT_PREFIX}{transport}:"
        return {k[len(prefix) :]: v for k, v in self.values if k.startswith(prefix)}


CATALOG = Assumptions()  # the catalog's values, nothing changed
