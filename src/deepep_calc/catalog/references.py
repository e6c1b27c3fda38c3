"""Serving references beyond the measured cells: DeepSeek-scale A/Bs, single-node EP, engine overheads.

Each row is a scenario plus what was measured on it; the fit stage turns rows (and the measured
cells) into constants and predicts the rest out of sample. See `data/references.toml`.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Annotated, Literal

from ..base.records import Record, row
from ._toml import validate_rows
from .models import ModelSpec

if TYPE_CHECKING:
    from annotated_types import Gt

Arm = Literal["deepep", "allgather", "tp", "replica"]


@row
class ServingRef(Record):
    """One published serving measurement, as the scenario it ran and its decode step."""

    id: str
    title: str
    source: str
    trust: Literal["measured", "assumed"]
    pair: str = ""
    use: Literal["fit", "check"] = "fit"
    use_note: str = ""
    model: str
    instance: str
    nodes: Annotated[int, Gt(0)]
    gpus_per_node: Annotated[int, Gt(0)] | None = None
    engine: str
    cuda_graphs: bool
    arm: Arm
    transport: str
    comms: Annotated[int, Gt(0)] = 8
    attention_tp: Annotated[int, Gt(0)] = 1
    disaggregated: bool = False
    isl: Annotated[int, Gt(0)]
    osl: Annotated[int, Gt(0)]
    concurrency: Annotated[int, Gt(0)]
    concurrency_note: str = ""
    tpot_ms: Annotated[float, Gt(0)]


@row
class NotCompared(Record):
    reference: str
    why: str


@cache
def load_serving_refs() -> dict[str, ServingRef]:
    return validate_rows("references.toml", "serving", ServingRef)


@cache
def inline_models() -> dict[str, ModelSpec]:
    """Models that only references use (a dense GPT-2 for the engine-overhead rows)."""
    return validate_rows("references.toml", "inline_model", ModelSpec)


@cache
def not_compared() -> list[NotCompared]:
    return list(validate_rows("references.toml", "not_compared", NotCompared).values())
