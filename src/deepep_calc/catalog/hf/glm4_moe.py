"""GLM-4.5 (`glm4_moe`): DeepSeek-style layout (dense prefix, shared expert) with GQA attention."""

from __future__ import annotations

from typing import Any

from deepep_calc.catalog.hf.base import (
    MAX_LAYERS,
    Adapter,
    Fields,
    check_moe_layers,
    check_topk,
    dense_intermediate,
    gqa,
    layer_count,
)


def glm4_moe(f: Fields) -> dict[str, Any]:
    """GLM-4.5: DeepSeek-style layout (dense prefix, shared expert) with GQA attention."""
    hidden = f.integer("hidden_size")
    layers = layer_count(f)
    experts = f.integer("n_routed_experts")
    topk = f.integer("num_experts_per_tok")
    check_topk(f, "num_experts_per_tok", topk, experts)
    first_dense = f.integer("first_k_dense_replace", 0, minimum=0, maximum=MAX_LAYERS)
    moe_layers = max(layers - first_dense, 0)
    check_moe_layers(f, "first_k_dense_replace", moe_layers, layers)
    moe_inter = f.integer("moe_intermediate_size")
    shared = f.integer("n_shared_experts", 0, minimum=0)
    return {
        "hidden": hidden,
        "layers": layers,
        "moe_layers": moe_layers,
        "experts": experts,
        "shared_experts": shared,
        "topk": topk,
        "moe_intermediate": moe_inter,
        "shared_intermediate": moe_inter if shared else 0,
        "dense_intermediate": dense_intermediate(f, "intermediate_size", moe_layers < layers),
        "vocab": f.integer("vocab_size"),
        "tie_embeddings": f.flag("tie_word_embeddings", False),
        "attention": gqa(f, hidden, derive_head_dim=False),
    }


ADAPTERS: dict[str, Adapter] = {"glm4_moe": glm4_moe}
"""The `model_type` values this module reads, each with its adapter."""
