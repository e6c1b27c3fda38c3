"""Serving references beyond the measured cells: DeepSeek-scale A/Bs, single-node EP, engine overheads.

Each row is a scenario plus what was measured on it; the fit stage turns rows (and the measured
cells) into constants and predicts the rest out of sample. See `data/references.toml`.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ._toml import read_data, validate_rows
from .models import ModelSpec

Arm = Literal["deepep", "allgather", "tp", "replica"]


class ServingRef(BaseModel):
    """One published serving measurement, as the scenario it ran and its decode step."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    title: str
    source: str
    trust: Literal["measured", "assumed"]
    pair: str = ""
    use: Literal["fit", "check"] = "fit"
    use_note: str = ""
    model: str
    instance: str
    nodes: int = Field(gt=0)
    gpus_per_node: int | None = Field(None, gt=0)
    engine: str
    cuda_graphs: bool
    arm: Arm
    transport: str
    comms: int = Field(8, gt=0)
    attention_tp: int = Field(1, gt=0)
    disaggregated: bool = False
    isl: int = Field(gt=0)
    osl: int = Field(gt=0)
    concurrency: int = Field(gt=0)
    concurrency_note: str = ""
    tpot_ms: float = Field(gt=0)


class NotCompared(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    reference: str
    why: str


@cache
def load_serving_refs() -> dict[str, ServingRef]:
    return validate_rows("references.toml", "serving", ServingRef)


@cache
def inline_models() -> dict[str, ModelSpec]:
    """Models that only references use (a dense GPT-2 for the engine-overhead rows)."""
    rows = read_data("references.toml").get("inline_model", [])
    return {row["name"]: ModelSpec.model_validate(row) for row in rows}


@cache
def not_compared() -> list[NotCompared]:
    return [NotCompared.model_validate(r) for r in read_data("references.toml").get("not_compared", [])]
