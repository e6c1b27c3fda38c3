"""NCCL collectives measured across nodes: smallest-message latency and large-message bus
bandwidth per kind (catalog/data/collectives.toml)."""

from __future__ import annotations

from dataclasses import field
from functools import cache
from typing import TYPE_CHECKING, Annotated, Literal

from ..base.records import Record, row
from ._toml import validate_rows

if TYPE_CHECKING:
    from annotated_types import Gt

Kind = Literal["allreduce", "allgather", "reducescatter", "alltoall"]


@row
class SizePoint(Record):
    """The bus bandwidth NCCL reached at one message size."""

    bytes: Annotated[int, Gt(0)]
    busbw_gb_s: Annotated[float, Gt(0)]


@row
class Collective(Record):
    """One kind of NCCL collective measured on one instance type and node count."""

    id: str  # kind@instance
    kind: Kind
    instance: str
    nodes: Annotated[int, Gt(1)]
    ranks: Annotated[int, Gt(1)]
    latency_us: Annotated[float, Gt(0)]
    busbw_gb_s: Annotated[float, Gt(0)]
    source: str
    sizes: list[SizePoint] = field(default_factory=list)


@cache
def load_collectives() -> dict[str, Collective]:
    """Rows keyed `kind@instance`."""
    return validate_rows("collectives.toml", "collective", Collective)


def measured_collective(kind: str, instance: str) -> Collective | None:
    """This instance's own measurement of `kind`, if the catalog has one."""
    return load_collectives().get(f"{kind}@{instance}")


def reference_collective(kind: str) -> Collective:
    """The measurement other instances are scaled from (the catalog has one per kind)."""
    rows = [c for c in load_collectives().values() if c.kind == kind]
    return rows[0]
