"""DeepSeek-V2/V3 and Kimi-K2 (`deepseek_v2`, `deepseek_v3`, `kimi_k2`): MLA attention.

Kimi-K2 ships the DeepSeek-V3 architecture under its own `model_type`, so one adapter serves
all three.
"""

from __future__ import annotations

from typing import Any

from deepep_calc.catalog.hf.base import (
    MAX_LAYERS,
    Adapter,
    Fields,
    check_moe_layers,
    check_topk,
    dense_intermediate,
    layer_count,
)


def deepseek(f: Fields) -> dict[str, Any]:
    """DeepSeek-V2/V3 and Kimi-K2: MLA attention, dense prefix, routed + shared experts."""
    hidden = f.integer("hidden_size")
    layers = layer_count(f)
    experts = f.integer("n_routed_experts")
    topk = f.integer("num_experts_per_tok")
    check_topk(f, "num_experts_per_tok", topk, experts)
    first_dense = f.integer("first_k_dense_replace", 0, minimum=0, maximum=MAX_LAYERS)
    freq = f.integer("moe_layer_freq", 1, maximum=MAX_LAYERS)
    moe_layers = sum(1 for i in range(layers) if i >= first_dense and i % freq == 0)
    check_moe_layers(f, "first_k_dense_replace", moe_layers, layers)
    moe_inter = f.integer("moe_intermediate_size")
    shared = f.integer("n_shared_experts", 0, minimum=0)
    heads = f.integer("num_attention_heads")
    return {
        "hidden": hidden,
        "layers": layers,
        "moe_layers": moe_layers,
        "experts": experts,
        "shared_experts": shared,
        "topk": topk,
        "moe_intermediate": moe_inter,
        # The HF code builds the shared experts as one MLP of moe_intermediate x n_shared.
        "shared_intermediate": moe_inter if shared else 0,
        "dense_intermediate": dense_intermediate(f, "intermediate_size", moe_layers < layers),
        "vocab": f.integer("vocab_size"),
        "tie_embeddings": f.flag("tie_word_embeddings", False),
        "attention": {
            "kind": "mla",
            "heads": heads,
            "kv_heads": heads,
            "head_dim": 0,
            "q_lora_rank": f.integer("q_lora_rank", 0, minimum=0),
            "kv_lora_rank": f.integer("kv_lora_rank"),
            "qk_rope_head_dim": f.integer("qk_rope_head_dim"),
            "qk_nope_head_dim": f.integer("qk_nope_head_dim"),
            "v_head_dim": f.integer("v_head_dim"),
        },
    }


ADAPTERS: dict[str, Adapter] = {"deepseek_v2": deepseek, "deepseek_v3": deepseek, "kimi_k2": deepseek}
"""The `model_type` values this module reads, each with its adapter."""
