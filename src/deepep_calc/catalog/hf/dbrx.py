"""DBRX (`dbrx`): MosaicML names, experts under `ffn_config`, KV heads under `attn_config`."""

from __future__ import annotations

from typing import Any

from deepep_calc.catalog.hf.base import Adapter, Fields, check_topk, gqa, layer_count


def dbrx(f: Fields) -> dict[str, Any]:
    """DBRX: MosaicML names, experts under `ffn_config`, KV heads under `attn_config`."""
    hidden = f.integer("d_model")
    layers = layer_count(f, "n_layers")
    ffn = f.child("ffn_config")
    attn = f.child("attn_config")
    experts = ffn.integer("moe_num_experts")
    topk = ffn.integer("moe_top_k")
    check_topk(ffn, "moe_top_k", topk, experts)
    return {
        "hidden": hidden,
        "layers": layers,
        "moe_layers": layers,
        "experts": experts,
        "topk": topk,
        "moe_intermediate": ffn.integer("ffn_hidden_size"),
        "vocab": f.integer("vocab_size"),
        "tie_embeddings": f.flag("tie_word_embeddings", False),
        "attention": gqa(
            f,
            hidden,
            derive_head_dim=True,
            heads_key="n_heads",
            kv_key="kv_n_heads",
            kv_owner=attn,
        ),
    }


ADAPTERS: dict[str, Adapter] = {"dbrx": dbrx}
"""The `model_type` values this module reads, each with its adapter."""
