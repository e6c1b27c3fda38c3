"""Qwen3-MoE and Qwen3-Next (`qwen3_moe`, `qwen3_next`): one layout rule, two attention kinds.

Both place MoE layers by `decoder_sparse_step` / `mlp_only_layers` and name experts alike;
Qwen3-Next adds Gated DeltaNet layers with a constant recurrent state.
"""

from __future__ import annotations

from typing import Any

from deepep_calc.catalog.hf.base import (
    MAX_LAYERS,
    Adapter,
    Fields,
    check_moe_layers,
    check_topk,
    count_types,
    dense_intermediate,
    gqa,
    layer_count,
)


def _qwen_layout(f: Fields, layers: int) -> int:
    """MoE layers under Qwen's `decoder_sparse_step` and `mlp_only_layers` rules."""
    step = f.integer("decoder_sparse_step", 1, maximum=MAX_LAYERS)
    dense_only = set(f.ints("mlp_only_layers"))
    moe_layers = sum(1 for i in range(layers) if i not in dense_only and (i + 1) % step == 0)
    check_moe_layers(f, "decoder_sparse_step", moe_layers, layers)
    return moe_layers


def _qwen_common(f: Fields) -> dict[str, Any]:
    hidden = f.integer("hidden_size")
    layers = layer_count(f)
    experts = f.integer("num_experts")
    topk = f.integer("num_experts_per_tok")
    check_topk(f, "num_experts_per_tok", topk, experts)
    moe_layers = _qwen_layout(f, layers)
    shared_inter = f.integer("shared_expert_intermediate_size", 0, minimum=0)
    return {
        "hidden": hidden,
        "layers": layers,
        "moe_layers": moe_layers,
        "experts": experts,
        "shared_experts": 1 if shared_inter else 0,
        "topk": topk,
        "moe_intermediate": f.integer("moe_intermediate_size"),
        "shared_intermediate": shared_inter,
        "dense_intermediate": dense_intermediate(f, "intermediate_size", moe_layers < layers),
        "vocab": f.integer("vocab_size"),
        "tie_embeddings": f.flag("tie_word_embeddings", False),
        "attention": gqa(f, hidden, derive_head_dim=False),
    }


def qwen3_moe(f: Fields) -> dict[str, Any]:
    """Qwen3-MoE: GQA; sliding window only if `use_sliding_window` (off in released models)."""
    spec = _qwen_common(f)
    layers = spec["layers"]
    window = f.integer("sliding_window", 0, minimum=0)
    sliding = count_types(f, layers, "sliding_attention")
    if sliding is None:
        sliding = 0
        if f.flag("use_sliding_window", False) and window:
            # Qwen keeps full attention in the first max_window_layers layers.
            full = f.integer("max_window_layers", layers, minimum=0, maximum=MAX_LAYERS)
            sliding = max(layers - full, 0)
    if sliding and window:
        spec["attention"].update(sliding_window=window, sliding_layers=sliding)
    return spec


def qwen3_next(f: Fields) -> dict[str, Any]:
    """Qwen3-Next: 3 of 4 layers Gated DeltaNet (constant fp32 state), the rest full GQA."""
    spec = _qwen_common(f)
    layers = spec["layers"]
    hidden = spec["hidden"]
    linear = count_types(f, layers, "linear_attention")
    if linear is None:
        interval = f.integer("full_attention_interval", 4, maximum=MAX_LAYERS)
        linear = sum(1 for i in range(layers) if (i + 1) % interval)
    if linear:
        nk = f.integer("linear_num_key_heads")
        nv = f.integer("linear_num_value_heads")
        dk = f.integer("linear_key_head_dim")
        dv = f.integer("linear_value_head_dim")
        spec["attention"].update(
            linear_layers=linear,
            # Recurrent state per sequence per layer: one dk x dv matrix per value head, fp32.
            linear_state_bytes=nv * dk * dv * 4,
            # in_proj_qkvz + in_proj_ba (one a and one b per value head) + out_proj.
            linear_params=hidden * (2 * nk * dk + 2 * nv * dv) + hidden * 2 * nv + nv * dv * hidden,
        )
    return spec


ADAPTERS: dict[str, Adapter] = {"qwen3_moe": qwen3_moe, "qwen3_next": qwen3_next}
"""The `model_type` values this module reads, each with its adapter."""
