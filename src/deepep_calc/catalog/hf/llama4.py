"""Llama 4 (`llama4`, `llama4_text`): text model under `text_config`, chunked attention.

A text-only export (`llama4_text`) has the same fields at the top level; `spec` records both
as the llama4 family.
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


def llama4(top: Fields) -> dict[str, Any]:
    """Llama 4: text model under `text_config`; MoE every Nth layer; chunked attention."""
    f = top.child("text_config") if top.data.get("model_type") == "llama4" else top
    hidden = f.integer("hidden_size")
    layers = layer_count(f)
    experts = f.integer("num_local_experts")
    topk = f.integer("num_experts_per_tok")
    check_topk(f, "num_experts_per_tok", topk, experts)
    listed = f.ints("moe_layers")
    if listed:
        if any(i >= layers for i in listed):
            f.fail("moe_layers", f"field '{f.path('moe_layers')}' names a layer beyond {layers}")
        moe_layers = len(set(listed))
        layout_key = "moe_layers"
    else:
        step = f.integer("interleave_moe_layer_step", 1, maximum=MAX_LAYERS)
        moe_layers = len(range(step - 1, layers, step))
        layout_key = "interleave_moe_layer_step"
    check_moe_layers(f, layout_key, moe_layers, layers)
    moe_inter = f.integer("intermediate_size")
    attention = gqa(f, hidden, derive_head_dim=False)
    chunk = f.integer("attention_chunk_size", 0, minimum=0)
    if chunk:
        # Chunked layers keep at most one chunk of KV, so they are modelled as sliding layers.
        # RoPE layers are chunked; every `no_rope_layer_interval`-th layer is NoPE and full.
        chunked = count_types(f, layers, "chunked_attention")
        if chunked is None:
            flags = f.ints("no_rope_layers")
            if flags and len(flags) != layers:
                # one 0/1 flag per layer, like `layer_types`: a list of another length is refused
                f.fail(
                    "no_rope_layers",
                    f"field '{f.path('no_rope_layers')}' has {len(flags)} entries for {layers} layers",
                )
            if flags:
                chunked = sum(1 for v in flags if v)
            else:
                interval = f.integer("no_rope_layer_interval", 4, maximum=MAX_LAYERS)
                chunked = sum(1 for i in range(layers) if (i + 1) % interval)
        if chunked:
            attention.update(sliding_window=chunk, sliding_layers=chunked)
    tie = f.flag("tie_word_embeddings", top.flag("tie_word_embeddings", False))
    return {
        "hidden": hidden,
        "layers": layers,
        "moe_layers": moe_layers,
        "experts": experts,
        "shared_experts": 1,  # every Llama 4 MoE layer has one shared expert of the same size
        "topk": topk,
        "moe_intermediate": moe_inter,
        "shared_intermediate": moe_inter,
        "dense_intermediate": dense_intermediate(f, "intermediate_size_mlp", moe_layers < layers),
        "vocab": f.integer("vocab_size"),
        "tie_embeddings": tie,
        "attention": attention,
    }


ADAPTERS: dict[str, Adapter] = {"llama4": llama4, "llama4_text": llama4}
"""The `model_type` values this module reads, each with its adapter."""
