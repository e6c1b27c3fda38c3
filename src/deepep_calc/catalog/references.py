"""Serving references beyond the measured cells: DeepSeek-scale A/Bs, single-node EP, engine overheads.

Each row is a scenario plus what was measured on it; the fit stage turns rows (and the measured
cells) into constants and predicts the rest out of sample. See `data/references.toml`.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Annotated, Literal

from ..base.records import Record, row
from ..base.vocabulary import Arm
from ._toml import validate_rows
from .models import ModelSpec

if TYPE_CHECKING:
    from annotated_types import Gt


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
class DisaggRef(Record):
    """One published run of a disaggregated deployment: both sides' layouts, the KV transport,
    the load, and what was measured on it (any of TPOT, TTFT and output tok/s)."""

    id: str
    title: str
    source: str
    trust: Literal["measured", "assumed"]
    group: str  # runs of one campaign (one kit, one arm, one ISL): a cross-validation fold
    use: Literal["compare", "check"] = "compare"
    use_note: str = ""
    model: str
    instance: str
    engine: str
    prefill_nodes: Annotated[int, Gt(0)]
    decode_nodes: Annotated[int, Gt(0)]
    prefill_arm: Arm
    decode_arm: Arm
    prefill_transport: str = "nvlink"
    decode_transport: str = "nvlink"
    prefill_cuda_graphs: bool
    decode_cuda_graphs: bool
    graphs_note: str = ""
    attention_tp: Annotated[int, Gt(0)] = 1
    kv_transport: str
    kv_note: str = ""
    isl: Annotated[int, Gt(0)]
    osl: Annotated[int, Gt(0)]
    concurrency: Annotated[int, Gt(0)]
    concurrency_note: str = ""
    tpot_ms: Annotated[float, Gt(0)] | None = None
    ttft_ms: Annotated[float, Gt(0)] | None = None
    output_tok_s: Annotated[float, Gt(0)] | None = None

    def __post_init__(self) -> None:
        if self.tpot_ms is None and self.ttft_ms is None and self.output_tok_s is None:
            raise ValueError("a disaggregated reference needs a measured TPOT, TTFT or output tok/s")


@row
class NotCompared(Record):
    reference: str
    why: str


@cache
def load_serving_refs() -> dict[str, ServingRef]:
    return validate_rows("references.toml", "serving", ServingRef)


@cache
def load_disagg_refs() -> dict[str, DisaggRef]:
    """The disaggregated deployments (references.toml's last section)."""
    return validate_rows("references.toml", "disagg", DisaggRef)


@cache
def reference_models() -> dict[str, ModelSpec]:
    """Models that only references use (a dense GPT-2 for the engine-overhead rows)."""
    return validate_rows("references.toml", "inline_model", ModelSpec)


@cache
def not_compared() -> list[NotCompared]:
    return list(validate_rows("references.toml", "not_compared", NotCompared).values())
