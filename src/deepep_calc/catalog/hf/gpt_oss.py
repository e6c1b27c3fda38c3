"""gpt-oss (`gpt_oss`): every layer MoE, alternating sliding / full attention."""

from __future__ import annotations

from typing import Any

from deepep_calc.catalog.hf.base import (
    Adapter,
    Fields,
    check_topk,
    count_types,
    every_layer_moe,
    gqa,
    layer_count,
)


def _alternating_sliding(f: Fields, layers: int) -> dict[str, int]:
    """gpt-oss style: `layer_types` if listed, else sliding on even-indexed layers (HF default)."""
    window = f.integer("sliding_window", 0, minimum=0)
    if not window:
        return {}
    count = count_types(f, layers, "sliding_attention")
    if count is None:
        count = sum(1 for i in range(layers) if (i + 1) % 2)
    return {"sliding_window": window, "sliding_layers": count} if count else {}


def gpt_oss(f: Fields) -> dict[str, Any]:
    """gpt-oss: every layer MoE, alternating sliding-128 / full attention."""
    hidden = f.integer("hidden_size")
    layers = layer_count(f)
    experts = f.integer("num_local_experts")
    # Released configs carry both spellings; older exports only the second.
    topk_key = "num_experts_per_tok"
    if not f.has(topk_key) and f.has("experts_per_token"):
        topk_key = "experts_per_token"
    topk = f.integer(topk_key)
    check_topk(f, topk_key, topk, experts)
    attention = gqa(f, hidden, derive_head_dim=False)
    attention.update(_alternating_sliding(f, layers))
    return every_layer_moe(f, hidden, layers, experts, topk, f.integer("intermediate_size"), attention)


ADAPTERS: dict[str, Adapter] = {"gpt_oss": gpt_oss}
"""The `model_type` values this module reads, each with its adapter."""
