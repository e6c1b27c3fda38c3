"""The MoE model description the physics consumes, and the bytes of each data type.

A `ModelSpec` is what a preset row in `data/models.toml` or an HF `config.json` (through the
per-family adapters of `hf/`) turns into. It holds structure only (sizes and counts); parameter and byte
counts are computed from it in `physics/params.py`, so changing the expert count, hidden size
or data type changes memory and time, as it should.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Annotated, Literal

from ..base.records import Record, row

if TYPE_CHECKING:
    from annotated_types import Ge, Gt

# Bytes per stored weight or cache element. Block-scaled formats include their scales:
# FP8 block-128 keeps one fp32 scale per 128x128 block; MXFP4 one 8-bit scale per 32 values;
# NVFP4 one FP8 scale per 16 values.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0 + 4.0 / (128 * 128),
    "int8": 1.0,
    "mxfp4": (4 + 8 / 32) / 8,
    "nvfp4": (4 + 8 / 16) / 8,
    "int4": 0.5 + 2.0 / 128,
}

DTYPES = tuple(DTYPE_BYTES)


@row
class Attention(Record):
    """Attention layout: enough to count its weights and its KV cache per token."""

    kind: Literal["mla", "gqa"]
    heads: Annotated[int, Gt(0)]
    kv_heads: Annotated[int, Gt(0)]  # GQA key/value heads; MLA: equal to heads
    head_dim: Annotated[int, Ge(0)]  # GQA head dimension; 0 for MLA
    q_lora_rank: Annotated[int, Ge(0)] = 0  # MLA query compression; 0 = none
    kv_lora_rank: Annotated[int, Ge(0)] = 0
    qk_rope_head_dim: Annotated[int, Ge(0)] = 0
    qk_nope_head_dim: Annotated[int, Ge(0)] = 0
    v_head_dim: Annotated[int, Ge(0)] = 0
    sliding_window: Annotated[int, Ge(0)] = 0  # tokens kept by sliding layers; 0 = none
    sliding_layers: Annotated[int, Ge(0)] = 0  # layers whose KV is capped at the window
    linear_layers: Annotated[int, Ge(0)] = 0  # linear-attention layers (constant state)
    linear_state_bytes: Annotated[int, Ge(0)] = 0  # state per sequence per linear layer
    linear_params: Annotated[int, Ge(0)] = 0  # weights of one linear-attention layer

    def __post_init__(self) -> None:
        if self.kind == "mla" and (self.kv_lora_rank <= 0 or self.qk_rope_head_dim <= 0):
            raise ValueError("MLA attention needs kv_lora_rank and qk_rope_head_dim > 0")
        if self.kind == "gqa" and self.head_dim <= 0:
            raise ValueError("GQA attention needs head_dim > 0")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if self.sliding_layers and not self.sliding_window:
            raise ValueError("sliding_layers given without sliding_window")


@row
class ModelSpec(Record):
    """One MoE model's structure, with where it came from."""

    name: str
    hf_id: str = ""
    family: str  # HF model_type, e.g. deepseek_v3, qwen3_moe
    source: str
    verified: bool = True  # False where facts say '(nv)': tag figures assumed

    hidden: Annotated[int, Gt(0)]
    layers: Annotated[int, Gt(0)]
    moe_layers: Annotated[int, Ge(0)]  # 0 only for the dense models of engine-overhead references
    experts: Annotated[int, Gt(0)]  # routed experts per MoE layer
    shared_experts: Annotated[int, Ge(0)] = 0
    topk: Annotated[int, Gt(0)]
    moe_intermediate: Annotated[int, Gt(0)]
    shared_intermediate: Annotated[int, Ge(0)] = 0  # intermediate size of ONE shared expert
    dense_intermediate: Annotated[int, Ge(0)] = 0  # MLP size of non-MoE layers
    vocab: Annotated[int, Gt(0)]
    tie_embeddings: bool = False
    attention: Attention

    weight_dtype: str = "bf16"
    expert_dtype: str | None = None  # routed-expert dtype when it differs
    kv_dtype: str = "bf16"
    # max_position_embeddings: the longest ISL + OSL the model takes; 0 = unknown
    max_context: Annotated[int, Ge(0)] = 0

    stated_total_params_b: float | None = None
    stated_active_params_b: float | None = None

    # Published checkpoints of this model in another weight dtype (dtype -> HF repository),
    # for the launch command; documentation, not structure: never compared or hashed.
    checkpoints: dict[str, str] = field(default_factory=dict, compare=False)
    checkpoints_source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.moe_layers > self.layers:
            raise ValueError(f"moe_layers ({self.moe_layers}) exceeds layers ({self.layers})")
        if self.topk > self.experts:
            raise ValueError(f"topk ({self.topk}) exceeds experts ({self.experts})")
        if self.moe_layers < self.layers and self.dense_intermediate <= 0:
            raise ValueError("dense layers present but dense_intermediate is 0")
        if self.shared_experts and self.shared_intermediate <= 0:
            raise ValueError("shared_experts given but shared_intermediate is 0")
        for label, dt in (
            ("weight_dtype", self.weight_dtype),
            ("expert_dtype", self.expert_dtype),
            ("kv_dtype", self.kv_dtype),
        ):
            if dt is not None and dt not in DTYPE_BYTES:
                raise ValueError(f"{label} {dt!r} is not one of {', '.join(DTYPES)}")
        att = self.attention
        if att.sliding_layers + att.linear_layers > self.layers:
            raise ValueError("sliding_layers + linear_layers exceed layers")
        for dt in self.checkpoints:
            if dt not in DTYPE_BYTES:
                raise ValueError(f"checkpoints: {dt!r} is not one of {', '.join(DTYPES)}")
        if self.checkpoints and not self.checkpoints_source:
            raise ValueError("checkpoints given without checkpoints_source")

    @property
    def dense_layers(self) -> int:
        return self.layers - self.moe_layers

    @property
    def routed_dtype(self) -> str:
        return self.expert_dtype or self.weight_dtype
