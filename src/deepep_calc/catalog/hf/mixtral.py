"""Mixtral (`mixtral`): every layer MoE, no shared expert, head_dim derived as hidden / heads."""

from __future__ import annotations

from typing import Any

from deepep_calc.catalog.hf.base import Adapter, Fields, check_topk, every_layer_moe, gqa, layer_count


def mixtral(f: Fields) -> dict[str, Any]:
    """Mixtral: every layer MoE, no shared expert; a sliding window applies to all layers."""
    hidden = f.integer("hidden_size")
    layers = layer_count(f)
    experts = f.integer("num_local_experts")
    topk = f.integer("num_experts_per_tok")
    check_topk(f, "num_experts_per_tok", topk, experts)
    attention = gqa(f, hidden, derive_head_dim=True)
    window = f.integer("sliding_window", 0, minimum=0)
    if window:
        attention.update(sliding_window=window, sliding_layers=layers)
    return every_layer_moe(f, hidden, layers, experts, topk, f.integer("intermediate_size"), attention)


ADAPTERS: dict[str, Adapter] = {"mixtral": mixtral}
"""The `model_type` values this module reads, each with its adapter."""
