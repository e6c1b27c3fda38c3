"""Request and response models of the JSON API (they are what `/openapi.json` describes).

The `/api/evaluate` body is the CLI's scenario (`Scenario`, flag names in snake_case,
omitted = CLI default) plus two things only a web client needs: `eager` as the CLI spells the
decode mode, and `config_json`, a model's config.json sent inline instead of a path the server
would have to read. The response is exactly `Result.to_json()`, the object `evaluate --json`
prints; `EvaluateResponse` documents it, and a test checks that real responses validate.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import InputError
from ..scenario import Scenario

Tag = Literal["measured", "derived", "assumed"]


class EvaluateRequest(Scenario):
    """A scenario as the CLI flags spell it, plus an optional inline config.json.

    Strict types: `"nodes": "4"` or `"cuda_graphs": 0` are refused rather than coerced, so what
    is evaluated is exactly what was sent (a number where a number is due).
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    eager: bool | None = Field(None, description="CLI --eager (true) / --cuda-graphs (false)")
    config_json: dict[str, Any] | str | None = Field(
        None,
        description="a Hugging Face config.json (object, or its text) to use instead of a preset",
    )

    @model_validator(mode="before")
    @classmethod
    def _eager_or_graphs(cls, data: Any) -> Any:
        """`eager` is the CLI's spelling; `cuda_graphs` the Scenario's. Either is accepted."""
        if not isinstance(data, dict) or data.get("eager") is None:
            return data
        eager = data["eager"]
        if not isinstance(eager, bool):
            raise InputError("--eager", eager, "true or false")
        graphs = data.get("cuda_graphs")
        if graphs is not None and graphs is eager:
            raise InputError(
                "--cuda-graphs", graphs, f"{not eager} when eager is {eager} (send only one of the two)"
            )
        return {**data, "cuda_graphs": not eager}

    def to_scenario(self, **update: Any) -> Scenario:
        fields = self.model_dump(exclude={"eager", "config_json"})
        fields.update(update)
        return Scenario(**fields)


class QOut(BaseModel):
    """A number with its unit and provenance."""

    model_config = ConfigDict(extra="forbid")

    value: float | list[Any] | None = Field(description="null when not defined (e.g. no price)")
    unit: str
    tag: Tag
    source: str
    low: float | list[Any] | None = Field(None, description="modelled figures: low end of the band")
    high: float | list[Any] | None = Field(None, description="modelled figures: high end of the band")


class MemoryDetail(BaseModel):
    model_config = ConfigDict(extra="forbid")

    weights: QOut
    kv_cache: QOut
    buffers: QOut
    reserve: QOut
    usable: QOut
    headroom: QOut


class ArmOut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    feasible: bool
    fits_memory: bool
    why_not: str
    per_user_tok_s: QOut
    step_ms: QOut
    aggregate_tok_s: QOut
    ttft_ms: QOut
    usd_per_mtok: QOut
    memory_gb_per_gpu: QOut
    breakdown_ms: dict[str, QOut]
    memory_detail_gb: MemoryDetail
    max_concurrency: QOut
    kv_token_capacity_per_gpu: QOut
    running_sequences: QOut
    measured_cell: str | None
    meets_slo: bool | None
    meets_ttft: bool | None


class FlagsOut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    engine: str
    arm: str
    args: list[str]
    config: dict[str, str]
    env: dict[str, str]
    cuda_graphs: str
    requires: str


class VerdictOut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: Literal["dense", "capacity", "deepep"]
    symbol: str
    title: str
    headline: str
    recommended_arm: str
    reasons: list[str]
    advisories: list[str]
    flags: FlagsOut
    robustness: str


class ScenarioOut(Scenario):
    """The scenario as evaluated: GPUs per node and weight dtype filled in."""

    gpus_per_node: int  # type: ignore[assignment]
    model_resolved: str


class EvaluateResponse(BaseModel):
    """Exactly what `deepep-calc evaluate --json` prints."""

    model_config = ConfigDict(extra="forbid")

    scenario: ScenarioOut
    verdict: VerdictOut
    arms: dict[str, ArmOut]
    ratio_deepep_vs_alternative: QOut
    ratio_per_user: QOut
    tax_ms_per_token: QOut
    notes: list[str]


class ErrorOut(BaseModel):
    """Every refusal: one line, and the input it is about (snake_case) when there is one."""

    error: str
    field: str | None = None


class KernelRequest(BaseModel):
    """The options of `deepep-calc kernel`, with its defaults."""

    model_config = ConfigDict(extra="forbid", strict=True)

    transport: str = "efa-proxy"
    instance: str = "p5en"
    ep: int = Field(16, description="EP ranks")
    tokens: int = Field(128, description="tokens per rank")
    hidden: int = 7168
    topk: int = 8
    experts: int = 256
    dispatch_dtype: Literal["fp8", "bf16"] = "fp8"
    comms: int = Field(8, description="EP_NUM_COMMS")
    qps: int = Field(6, description="EP_EFA_MAX_QPS")


class KernelResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dispatch_us: QOut
    combine_us: QOut
    total_us: QOut


class ModelRow(BaseModel):
    name: str
    hf_id: str
    family: str
    hidden: int
    layers: int
    moe_layers: int
    experts: int
    shared_experts: int
    topk: int
    attention: str
    weight_dtype: str
    expert_dtype: str
    total_params_b: float
    active_params_b: float
    weights_gb: float
    kv_bytes_per_token: int
    tag: Tag
    source: str


class InstanceRow(BaseModel):
    name: str
    aws_name: str
    fabric: str
    gpu: str
    gpus_per_node: int
    hbm_gb: float
    hbm_tb_s: float
    nvlink_gb_s_per_dir: float
    network_gbit_per_node: float
    network_gb_s_per_gpu_per_dir: float
    network_conversion: str
    price_per_hour: float | None
    price_source: str
    efa_gda: bool
    tag: Tag
    source: str


class KernelRefOut(BaseModel):
    instance: str
    ep: int
    dispatch_us: float | None
    combine_us: float | None
    total_us: float
    tag: Tag
    source: str


class TransportRow(BaseModel):
    name: str
    label: str
    fabric: str
    initiation: str
    ops_per_token: int
    instances: list[str]
    reference: KernelRefOut
    alpha_dispatch_us: float
    alpha_combine_us: float
    beta_dispatch_us: float
    beta_combine_us: float
    bandwidth: str
    env: dict[str, str]


class ModelSummary(BaseModel):
    """The structure actually evaluated (a preset, a what-if, or an uploaded config)."""

    name: str
    family: str
    source: str
    experts: int
    topk: int
    shared_experts: int
    hidden: int
    layers: int
    moe_layers: int
    attention: str
    weight_dtype: str
    expert_dtype: str
    kv_dtype: str
    total_params_b: QOut
    active_params_b: QOut


class ProvenanceRow(BaseModel):
    where: str
    value: str
    unit: str
    tag: Tag
    source: str


class Segment(BaseModel):
    """Part of a sentence: plain text, or a tag drawn as a badge."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    tag: Tag | None = None


class VerdictText(BaseModel):
    """The verdict's sentences as segments, so the page draws their tags as badges."""

    model_config = ConfigDict(extra="forbid")

    headline: list[Segment]
    reasons: list[list[Segment]]
    advisories: list[list[Segment]]
    robustness: list[Segment]


class DetailsResponse(BaseModel):
    """What the page draws beside the numbers: the model evaluated, the charts, the provenance."""

    model: ModelSummary
    summary: str = Field(description="the scenario in one sentence")
    flag_lines: list[str] = Field(description="engine flags of the recommended arm, one per line")
    verdict_text: VerdictText = Field(description="the verdict's sentences split around their tags")
    cli: str | None = Field(description="the CLI command giving the same result (none for an upload)")
    charts: dict[str, dict[str, Any]] = Field(description="plotly figures: {data, layout}")
    provenance: list[ProvenanceRow]
