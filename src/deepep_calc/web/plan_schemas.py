"""The `/api/plan` body and response (what `/openapi.json` says about them).

The body is `deepep-calc plan`'s flags in snake_case. `model` must be a preset (the server
reads no files) and has no default here, so a client always says which model it plans.
The web bounds `max_nodes` at 64 (the CLI goes to the scenario limit), so one request stays
within a few seconds of model time. The response is exactly what `plan --json` prints.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..base.vocabulary import Arm
from .schemas import FlagsOut, QOut

WEB_MAX_NODES = 64


class PlanRequestBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    model: str = Field(description="a preset name")
    isl: int = Field(120, ge=1, description="input sequence length")
    osl: int = Field(128, ge=1, description="output sequence length")
    concurrency: int | None = Field(None, ge=1, description="requests in flight (or request_rate)")
    request_rate: float | None = Field(None, gt=0, description="requests per second (or concurrency)")
    slo_tok_s: float | None = Field(None, gt=0, description="per-user decode floor")
    ttft_ms: float | None = Field(None, gt=0, description="time-to-first-token ceiling")
    budget_per_hour: float | None = Field(None, gt=0, description="$ per hour for the whole deployment")
    instances: list[str] | str | None = Field(None, description="instance names (list or comma text)")
    max_nodes: int = Field(16, ge=1, le=WEB_MAX_NODES, description="largest node count searched")
    engines: list[str] | str | None = Field(None, description="engine names (list or comma text)")
    max_batch: int | None = Field(None, ge=1, description="sequences per DP rank (default: the engine's)")
    measured_only: bool = Field(False, description="only configurations anchored by measured references")
    price_per_hour: float | str | None = Field(
        None, description="$ per node-hour for every instance, or 'NAME=P,NAME=P'"
    )
    price_kinds: list[str] | str | None = Field(
        None, description="'all', or the price kinds ranked together (default: like with like)"
    )
    layouts: Literal["all", "aggregated", "disaggregated"] = Field(
        "all", description="aggregated deployments, disaggregated xPyD splits, or both"
    )
    disagg: str | None = Field(None, description="search only this prefill / decode split, e.g. 1P3D")


class PointOut(BaseModel):
    """One (configuration, arm): `config` is a scenario `/api/evaluate` takes as it is."""

    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any]
    arm: Arm
    per_user_tok_s: QOut
    aggregate_tok_s: QOut
    ttft_ms: QOut
    usd_per_mtok: QOut
    memory_gb_per_gpu: QOut
    meets_targets: bool
    label: str
    usd_per_hour: QOut
    aggregate_tok_s_per_node: QOut
    evidence: Literal["anchored", "assumed"]
    notes: list[str]
    misses: list[str]
    change: str
    sustainable: bool | None
    max_request_rate: QOut | None
    measured_cell: str | None
    card_url: str
    flags: FlagsOut
    chosen_over: str = Field(
        "", description="best only: the cheaper configuration the verdict's rule set aside"
    )
    price_kind: Literal["on-demand", "capacity-block", "quote", "given"] | None = Field(
        None, description="what its price is: a list price, a Capacity Block, a quote, or the one you gave"
    )
    target_status: dict[str, Literal["meets", "misses", "within the band"]] = Field(
        default_factory=dict,
        description="each target set (slo_tok_s, ttft_ms): meets, misses, or within the band of the figure",
    )
    disaggregated: bool = Field(False, description="an xPyD split: arm is its decode side's")
    layout: str = Field("aggregated", description="'aggregated' or the split, e.g. '1P3D'")


class PlanTargets(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str
    isl: int
    osl: int
    concurrency: int | None
    request_rate: float | None
    slo_tok_s: float | None
    ttft_ms: float | None
    budget_per_hour: float | None


class PlanSpace(BaseModel):
    model_config = ConfigDict(extra="forbid")

    instances: list[str]
    engines: list[str]
    max_nodes: int
    max_batch: int | None
    comms: list[int]
    measured_only: bool
    prices: dict[str, float]
    price_kinds: list[str] = Field(default_factory=list, description="kinds ranked together on purpose")
    layouts: str = "all"
    disagg: str | None = None
    disaggregated_note: str = ""


class PriceKinds(BaseModel):
    """Which kinds of price the plan ranked together (like with like unless asked to mix)."""

    model_config = ConfigDict(extra="forbid")

    ranked: list[str]
    mixed_on_purpose: bool
    by_instance: dict[str, str | None]


class PlanResponse(BaseModel):
    """Exactly what `deepep-calc plan --json` prints."""

    model_config = ConfigDict(extra="forbid")

    targets: PlanTargets
    searched: int
    skipped: int
    best: PointOut | None
    frontier: list[PointOut]
    nearest_misses: list[PointOut]
    note: str
    space: PlanSpace
    skipped_reasons: dict[str, int]
    frontier_per_node: list[PointOut]
    changes: list[str]
    measured_only_rule: str
    price_kinds: PriceKinds | None = None
