"""Request and response models of the JSON API (they are what `/openapi.json` describes).

The `/api/evaluate` body is the CLI's scenario (`Scenario`, flag names in snake_case,
omitted = CLI default) plus two things only a web client needs: `eager` as the CLI spells the
graph mode, and `config_json`, a model's config.json sent inline instead of a path the server
would have to read. The response is exactly `Result.to_json()`, the object `evaluate --json`
prints; `EvaluateResponse` documents it, and a test checks that real responses validate.

Why one module: the request and response models are what `/openapi.json` publishes; one
file reads as the API's contract.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from ..base.errors import InputError
from ..base.vocabulary import VerdictCode, bool_word, flag_of
from ..estimate.kernel import LIMITS as KERNEL_LIMITS
from ..question.fields import DEFAULTS, FLOAT_LIMIT, LIMITS, OVERRIDE_LIMIT
from ..question.scenario import FLOAT_FIELDS, Scenario

Tag = Literal["measured", "derived", "assumed"]

# The limits the server enforces, stated in /openapi.json. They are enforced where the CLI
# enforces them (`scenario.resolve`, `kernel.kernel_query`), with the CLI's one-line messages;
# the schema repeats the same tables, so what the contract allows is what the server takes.
EVALUATE_INT_LIMITS = {
    **LIMITS,
    **dict.fromkeys(("experts", "topk", "hidden", "moe_layers"), OVERRIDE_LIMIT),
}
NON_EMPTY = (
    "model",
    "instance",
    "engine",
    "transport",
    "weight_dtype",
    "kv_dtype",
    "kv_transport",
    "prefill_arm",
    "decode_arm",
    "prefill_transport",
    "decode_transport",
)


def _constrain(prop: dict[str, Any], kind: str, **limits: Any) -> None:
    """Add limits to the branch of this JSON type (a nullable field is an anyOf)."""
    if prop.get("type") == kind:
        prop.update(limits)
        return
    for branch in prop.get("anyOf", []):
        if branch.get("type") == kind:
            branch.update(limits)


def _evaluate_limits(schema: dict[str, Any]) -> None:
    from ..catalog.hardware import load_instances

    props = schema.get("properties", {})
    # GPUs per node: at most what the largest instance of the catalog has (resolve() refuses
    # more than the chosen instance's, a cross-field rule the schema cannot state).
    most_gpus = max(i.gpus_per_node for i in load_instances().values())
    limits = {**EVALUATE_INT_LIMITS, "gpus_per_node": min(most_gpus, LIMITS["gpus_per_node"])}
    for name, limit in limits.items():
        if name in props:
            _constrain(props[name], "integer", minimum=1, maximum=limit)
    for name in FLOAT_FIELDS:
        if name in props:
            _constrain(props[name], "number", exclusiveMinimum=0, maximum=FLOAT_LIMIT)
    for name in NON_EMPTY:
        if name in props:
            _constrain(props[name], "string", minLength=1)
    if "calibration" in props:  # the server reads no files: any profile path is refused
        props["calibration"] = {
            "type": "null",
            "default": None,
            "description": "always null over HTTP (the server reads no files; use the CLI)",
        }
    if "config_json" in props:
        _constrain(props["config_json"], "string", minLength=1)
        _constrain(props["config_json"], "object", minProperties=1)


def _kernel_limits(schema: dict[str, Any]) -> None:
    props = schema.get("properties", {})
    for name, limit in KERNEL_LIMITS.items():
        if name in props:
            _constrain(props[name], "integer", minimum=1, maximum=limit)
    for name in ("transport", "instance"):
        _constrain(props[name], "string", minLength=1)


# Where the server's answer differs from the CLI's: it reads no file, so a model is a preset.
WEB_WORDS = {"model": "preset name or a preset's HF id (the server reads no file: send config_json)"}


def _scenario_body() -> type[BaseModel]:
    """`Scenario`'s fields (types, defaults, descriptions) as a pydantic model: the body of
    `/api/evaluate` is the CLI's scenario, declared once, in `question/scenario.py`."""
    hints = get_type_hints(Scenario)
    fields: dict[str, Any] = {
        f.name: (
            hints[f.name],
            Field(f.default, description=WEB_WORDS.get(f.name, f.metadata.get("description"))),
        )
        for f in dataclasses.fields(Scenario)
    }
    return create_model("ScenarioBody", __config__=ConfigDict(extra="forbid"), **fields)


ScenarioBody = _scenario_body()


class EvaluateRequest(ScenarioBody):  # type: ignore[misc, valid-type]
    """A scenario as the CLI flags spell it, plus an optional inline config.json.

    Strict types: `"nodes": "4"` or `"cuda_graphs": 0` are refused rather than coerced, so what
    is evaluated is exactly what was sent (a number where a number is due).
    """

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=_evaluate_limits)

    eager: bool | None = Field(None, description="CLI --eager (true) / --cuda-graphs (false)")
    disagg: str | None = Field(
        None, description="CLI --disagg: xPyD, e.g. 1P3D (= prefill_nodes 1, decode_nodes 3)"
    )
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
                "--cuda-graphs",
                graphs,
                f"{bool_word(not eager)} when eager is {bool_word(eager)} (send only one of the two)",
            )
        return {**data, "cuda_graphs": not eager}

    @model_validator(mode="before")
    @classmethod
    def _disagg_split(cls, data: Any) -> Any:
        """`disagg` is the CLI's xPyD spelling of prefill_nodes and decode_nodes; a nodes sent
        beside a split must be P + D (left out, it is)."""
        if not isinstance(data, dict):
            return data
        from ..question.disagg import parse_disagg

        out = dict(data)
        if out.get("disagg") is not None:
            p, d = parse_disagg(out["disagg"])
            for name, value in (("prefill_nodes", p), ("decode_nodes", d)):
                given = out.get(name)
                if given is not None and given != value:
                    raise InputError(flag_of(name), given, f"{value}, as disagg {out['disagg']} says")
                out[name] = value
        p, d = out.get("prefill_nodes"), out.get("decode_nodes")
        if isinstance(p, int) and isinstance(d, int) and not isinstance(p, bool) and not isinstance(d, bool):
            nodes = out.get("nodes")
            if nodes is not None and nodes != p + d and not isinstance(nodes, bool):
                raise InputError(
                    "--nodes", nodes, f"{p + d} = P + D for a {p}P{d}D split (or leave nodes out)"
                )
        return out

    def to_scenario(self, **update: Any) -> Scenario:
        fields = self.model_dump(exclude={"eager", "config_json", "disagg"})
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


BoundName = Literal[
    "launches",
    "host",
    "hbm",
    "compute",
    "kernels",
    "exchange_latency",
    "messages",
    "wire",
    "nvlink",
    "collective_latency",
    "arm_term",
    "prefill",
    "proxy",
]


class BoundPartOut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: BoundName
    label: str
    part_ms: QOut


class TakeOverOut(BaseModel):
    """The smallest load above this one at which another part binds the step (solved on the model)."""

    model_config = ConfigDict(extra="forbid")

    name: BoundName
    label: str
    factor: QOut = Field(description="running sequences there / here (mean tokens per rank alike)")
    running: int = Field(description="running sequences across the cluster there")
    tokens_per_rank: QOut
    fits: bool = Field(description="whether that load still fits in HBM")


class BoundOut(BaseModel):
    """What sets the decode step: the largest part on the path that sets it."""

    model_config = ConfigDict(extra="forbid")

    name: BoundName
    label: str
    path: Literal["cpu", "gpu"] = Field(description="cpu: eager host launches outlast the GPU work")
    part_ms: QOut = Field(description="what the bound adds to the step")
    step_ms: QOut = Field(description="the model's step: the parts below add up to it")
    hidden_ms: QOut | None = Field(description="the other path, hidden under this one (null under graphs)")
    parts_ms: dict[BoundName, QOut] = Field(description="the step along its binding path, parts that add")
    runner_up: BoundPartOut | None
    takes_over: TakeOverOut | None = Field(description="null: no other part binds within 1,024x the load")


class ExchangeBoundOut(BaseModel):
    """What gates the arm's exchange itself."""

    model_config = ConfigDict(extra="forbid")

    name: Literal["latency", "messages", "bandwidth", "engine"]
    label: str
    parts_ms: dict[Literal["latency", "messages", "bandwidth", "engine"], QOut]
    exchange_ms: QOut = Field(description="the exchange's own duration, joining requests' tokens in")
    wire_mb: QOut = Field(description="MB per GPU per direction the exchanges put on the scale-out wire")


class ArmOut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    feasible: bool
    fits_memory: bool
    why_not: str
    why_code: Literal["", "split", "reach", "memory", "queue", "left out"] = Field(
        "",
        description="short form of why_not: experts do not split, transport does not reach, HBM, queue, "
        "or left out (a plan's card: the plan did not compare this arm)",
    )
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
    slo_status: Literal["meets", "misses", "within the band"] | None = Field(
        None, description="the per-user floor, three-valued: the figure's band may span it"
    )
    ttft_status: Literal["meets", "misses", "within the band"] | None = Field(
        None, description="the TTFT ceiling, three-valued: the figure's band may span it"
    )
    model_aggregate_tok_s: QOut | None = Field(None, description="the model's figure, before a measured cell")
    model_step_ms: QOut | None = Field(None, description="the model's step, before a measured cell")
    evidence_covered: bool | list[bool] = Field(
        True,
        description="whether references cover this arm's engine x exchange x route x model family x graph "
        "mode; where none does its figures carry the wider band of combinations left out",
    )
    layout: str | list[str] | None = Field(
        None,
        description="the replicas only: the one-node layout each replica runs, the best the model rates "
        "(replica: EP over allgather, replica:deepep: EP over DeepEP's NVLink kernels, replica:tp: TP)",
    )
    bound: BoundOut | None = None
    exchange_bound: ExchangeBoundOut | None = None
    nic_busy_pct: QOut | None = Field(
        None, description="wire bytes of the step's exchanges / (step x the instance's line rate per GPU)"
    )
    nic_busy_exchange_pct: QOut | None = Field(None, description="the same over the exchange's own duration")


class ConfigFileOut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    text: str


class LaunchOut(BaseModel):
    """The run block, each part ready to paste on its own."""

    model_config = ConfigDict(extra="forbid")

    config_file: ConfigFileOut | None = Field(description="the engine's config file, when it takes one")
    command: str = Field(description="the server command line (notes as # comments)")
    exports: str = Field(description="`export` lines, one per variable")
    notes: list[str]
    blocks: list[dict[str, str]] = Field(description="caption, lang and text of each part, in order")


class FlagsOut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    engine: str
    arm: str | None = Field(description="null when nothing fits as asked")
    args: list[str]
    config: dict[str, str]
    env: dict[str, str]
    cuda_graphs: str
    requires: str
    launch: LaunchOut | None = None
    disaggregated: dict[str, Any] | None = Field(
        None, description="a disaggregated scenario: both servers' and the router's launch blocks"
    )


class ComparedOut(BaseModel):
    """The figures the verdict rule compared, like with like."""

    model_config = ConfigDict(extra="forbid")

    basis: Literal["measured", "model"]
    aggregate_tok_s: dict[str, QOut]
    ratio: QOut | None
    per_user_ratio: QOut | None
    tax_ms_per_token: QOut | None
    threshold: float
    set_aside: list[str]
    note: str


class DecidingOut(BaseModel):
    """The comparison that decided the verdict: the first arm's figures over the second's."""

    model_config = ConfigDict(extra="forbid")

    arms: list[str] = Field(description="[first, second]: usually DeepEP and the arm it had to beat")
    basis: Literal["measured", "model"]
    aggregate_tok_s: dict[str, QOut]
    ratio: QOut
    per_user_ratio: QOut
    tax_ms_per_token: QOut
    threshold: float
    status: Literal["meets", "misses", "within the band"] = Field(
        description="whether the first arm clears the threshold over the second, band included"
    )


class FixOut(BaseModel):
    """One change that would make the scenario fit or meet its targets, checked on the model."""

    model_config = ConfigDict(extra="forbid")

    change: str
    update: dict[str, Any]
    arm: str
    note: str
    figures: dict[str, QOut]


class VerdictOut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: VerdictCode
    symbol: str
    title: str
    headline: str
    recommended_arm: str | None = Field(description="null when nothing fits as asked")
    reasons: list[str]
    advisories: list[str]
    flags: FlagsOut
    robustness: str
    status: Literal["ok", "targets_missed", "nothing_fits"] = "ok"
    close_call: bool = False
    compared: ComparedOut | None = None
    caveats: list[str] = Field(default_factory=list)
    fixes: list[FixOut] = Field(default_factory=list)
    deciding: DecidingOut | None = None
    blurb: str = Field("", description="the one reason that says why (the page's lit card shows it)")
    disaggregation: dict[str, Any] | None = Field(
        None, description="disaggregated against aggregated on the same nodes: the line and its figures"
    )


class ScenarioOut(ScenarioBody):  # type: ignore[misc, valid-type]
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
    disaggregated: dict[str, Any] | None = Field(
        None, description="a disaggregated scenario: both sides, the KV transfer and the deployment's figures"
    )


class ErrorOut(BaseModel):
    """Every refusal: one line, and the input it is about (snake_case) when there is one."""

    error: str
    field: str | None = None


class KernelRequest(BaseModel):
    """The options of `deepep-calc kernel`, with its defaults."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=_kernel_limits)

    transport: str = "efa-proxy"
    instance: str = "p5en"
    ep: int = Field(16, description="EP ranks")
    tokens: int = Field(128, description="tokens per rank")
    hidden: int = 7168
    topk: int = 8
    experts: int = 256
    dispatch_dtype: Literal["fp8", "bf16"] = "fp8"
    comms: int = Field(DEFAULTS["comms"], description="EP_NUM_COMMS")
    qps: int = Field(DEFAULTS["max_qps"], description="EP_EFA_MAX_QPS")


class KernelParts(BaseModel):
    """One direction of the kernel: the library's local part and the concurrent pipes."""

    model_config = ConfigDict(extra="forbid")

    local: QOut
    leaving: QOut
    data: QOut
    signals: QOut
    wire: QOut
    nvlink: QOut


class KernelMeasurement(BaseModel):
    """One published run of exactly the queried cell, with the setting that sets it apart."""

    model_config = ConfigDict(extra="forbid")

    setting: str
    total_us: float
    source: str


class KernelResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dispatch_us: QOut
    combine_us: QOut
    total_us: QOut
    parts_us: dict[Literal["dispatch", "combine"], KernelParts]
    binds: dict[Literal["dispatch", "combine"], Literal["leaving", "messages", "wire", "nvlink"]]
    measurements: list[KernelMeasurement]


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
    price_kind: Literal["on-demand", "capacity-block", "quote"] | None = None
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
    setting: str = ""
    tag: Tag
    source: str


class OtherRun(BaseModel):
    """Another published run of the reference's cell, with the setting that sets it apart."""

    setting: str
    total_us: float
    source: str


class TransportRow(BaseModel):
    name: str
    label: str
    fabric: str
    initiation: str
    library: str  # the DeepEP implementation an engine loads for it
    ops_per_token: int
    instances: list[str]
    reference: KernelRefOut
    other_runs_of_the_reference_cell: list[OtherRun] = []
    local_us: float = Field(description="the library's own fixed part per direction (one node too)")
    alpha_dispatch_us: float = Field(description="latency of leaving the node, dispatch")
    alpha_combine_us: float = Field(description="latency of leaving the node, combine")
    beta_dispatch_us: float = Field(description="cost per data message, dispatch")
    beta_combine_us: float = Field(description="cost per data message, combine")
    signal_ratio: float = Field(description="a signal's cost in data messages")
    graphs_evidence: str = ""
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
    band: str = Field("", description="the figure's 10th-90th percentile band, as shown ('' if none)")


class Bands(BaseModel):
    """The band strings the arms and comparison tables show beside their numbers ('' for none)."""

    arms: dict[str, dict[str, str]] = Field(description="arm -> result path -> band string")
    compared: dict[str, str] | None = Field(description="arm -> band of the aggregate the verdict compared")
    compare: list[str] = Field(description="one band string per row of the comparison table")


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
    blurb: list[Segment] = Field(default_factory=list, description="the lit card's reason")


class DetailsResponse(BaseModel):
    """What the page draws beside the numbers: the model evaluated, the charts, the provenance."""

    model: ModelSummary
    summary: str = Field(description="the scenario in one sentence")
    flag_lines: list[str] = Field(description="engine flags of the recommended arm, one per line")
    verdict_text: VerdictText = Field(description="the verdict's sentences split around their tags")
    cli: str | None = Field(description="the CLI command giving the same result (none for an upload)")
    charts: dict[str, dict[str, Any]] = Field(description="plotly figures: {data, layout}")
    provenance: list[ProvenanceRow]
    bands: Bands
    arm_labels: dict[str, str] = Field(description="each arm's column head, as the CLI's card names it")
    disaggregated: dict[str, Any] | None = Field(
        None,
        description="a disaggregated scenario: its figures, sides and time split, as the page draws them",
    )
