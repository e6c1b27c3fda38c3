"""Parameter and byte counts from a model's structure (total, never active, for memory)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, wraps
from typing import TypeVar

from ..base.arrays import minimum
from ..catalog.models import DTYPE_BYTES, ModelSpec

EMBED_DTYPE = "bf16"  # FP8 and MXFP4 checkpoints keep embeddings and the LM head in BF16

T = TypeVar("T")
_PER_MODEL_CAP = 256


def per_model(fn: Callable[[ModelSpec], T]) -> Callable[[ModelSpec], T]:
    """Cache a pure count of a model: by the row object first, then by value (`lru_cache`).

    Hashing a ModelSpec walks its ~30 fields (~1.5 us), and one evaluation asks for the counts
    of the same catalog row about ten times; a look-up by identity skips the hash. The entry
    holds the row, so its id is not reused while cached.
    """
    by_value = lru_cache(maxsize=_PER_MODEL_CAP)(fn)
    by_id: dict[int, tuple[ModelSpec, T]] = {}

    @wraps(fn)
    def cached(m: ModelSpec) -> T:
        hit = by_id.get(id(m))
        if hit is not None and hit[0] is m:
            return hit[1]
        out = by_value(m)
        if len(by_id) >= _PER_MODEL_CAP:
            by_id.clear()
        by_id[id(m)] = (m, out)
        return out

    return cached


@dataclass(frozen=True, eq=False)
class Params:
    """Parameter counts by placement class: what is replicated and what EP shards."""

    attention: float  # all layers, incl. linear-attention layers
    dense_mlp: float  # MLPs of the non-MoE layers
    shared: float  # shared experts, all MoE layers
    routed: float  # routed experts, all MoE layers
    router: float
    embed: float
    lm_head: float
    expert_layer: float  # one routed expert in one layer
    active: float  # parameters touched per token

    @property
    def total(self) -> float:
        return (
            self.attention
            + self.dense_mlp
            + self.shared
            + self.routed
            + self.router
            + self.embed
            + self.lm_head
        )


def attention_params_per_layer(m: ModelSpec) -> float:
    a, h = m.attention, m.hidden
    if a.kind == "gqa":
        return h * a.heads * a.head_dim + 2 * h * a.kv_heads * a.head_dim + a.heads * a.head_dim * h
    qk = a.qk_nope_head_dim + a.qk_rope_head_dim
    q = h * a.q_lora_rank + a.q_lora_rank * a.heads * qk if a.q_lora_rank else h * a.heads * qk
    kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank * a.heads * (
        a.qk_nope_head_dim + a.v_head_dim
    )
    return q + kv + a.heads * a.v_head_dim * h


@per_model  # ModelSpec is frozen and hashable; the count is pure
def count_params(m: ModelSpec) -> Params:
    att = m.attention
    full_layers = m.layers - att.linear_layers
    attention = full_layers * attention_params_per_layer(m) + att.linear_layers * att.linear_params
    expert_layer = 3.0 * m.hidden * m.moe_intermediate
    routed = m.moe_layers * m.experts * expert_layer
    shared = m.moe_layers * m.shared_experts * 3.0 * m.hidden * m.shared_intermediate
    dense = m.dense_layers * 3.0 * m.hidden * m.dense_intermediate
    router = m.moe_layers * m.hidden * m.experts
    embed = float(m.vocab * m.hidden)
    lm_head = 0.0 if m.tie_embeddings else embed
    active = attention + dense + shared + router + lm_head + m.moe_layers * m.topk * expert_layer
    return Params(attention, dense, shared, routed, router, embed, lm_head, expert_layer, active)


@dataclass(frozen=True, eq=False)
class WeightBytes:
    """Bytes of each placement class in the stored dtypes."""

    replicated: float  # attention, dense MLPs, shared experts, router, embeddings, LM head
    routed: float  # all routed experts (sharded by EP)
    expert_layer: float  # one routed expert in one layer
    lm_head: float
    per_token_replicated_read: float  # replicated weights read per decode step

    @property
    def total(self) -> float:
        return self.replicated + self.routed


@per_model
def weight_bytes(m: ModelSpec) -> WeightBytes:
    p = count_params(m)
    wb = DTYPE_BYTES[m.weight_dtype]
    eb = DTYPE_BYTES[m.routed_dtype]
    emb = DTYPE_BYTES[EMBED_DTYPE]
    lm_head = (p.lm_head if p.lm_head else p.embed) * emb
    replicated = (p.attention + p.dense_mlp + p.shared) * wb + p.router * emb + (p.embed + p.lm_head) * emb
    read = (p.attention + p.dense_mlp + p.shared) * wb + p.router * emb + lm_head
    return WeightBytes(replicated, p.routed * eb, p.expert_layer * eb, lm_head, read)


def kv_bytes_per_token_layer(m: ModelSpec) -> float:
    """KV bytes one token adds to one full-attention layer."""
    a = m.attention
    kb = DTYPE_BYTES[m.kv_dtype]
    if a.kind == "mla":
        return (a.kv_lora_rank + a.qk_rope_head_dim) * kb
    return 2.0 * a.kv_heads * a.head_dim * kb


def kv_bytes_per_token(m: ModelSpec) -> float:
    """Per-token KV of the whole model with no window cap (MLA DeepSeek-V3 BF16: 70,272 B)."""
    a = m.attention
    return kv_bytes_per_token_layer(m) * (m.layers - a.linear_layers)


def kv_bytes_per_sequence(m: ModelSpec, context):
    """KV of one sequence holding `context` tokens: windows cap, linear layers hold a state."""
    a = m.attention
    per = kv_bytes_per_token_layer(m)
    full = m.layers - a.sliding_layers - a.linear_layers
    sliding = a.sliding_layers * minimum(context, float(a.sliding_window)) if a.sliding_layers else 0.0
    return per * (full * context + sliding) + a.linear_layers * a.linear_state_bytes
