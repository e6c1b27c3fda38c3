"""DBRX (`dbrx`): MosaicML names, experts under `ffn_config`, KV heads under `attn_config`."""

from __future__ import annotations

from typing import Any

from deepep_calc.catalog.hf.base import Adapter, Fields, check_topk, every_layer_moe, gqa, layer_count


def dbrx(f: Fields) -> dict[str, Any]:
    """DBRX: MosaicML names, experts under `ffn_config`, KV heads under `attn_config`."""
    hidden = f.integer("d_model")
    layers = layer_count(f, "n_layers")
    ffn = f.child("ffn_config")
    attn = f.child("attn_config")
    experts = ffn.integer("moe_num_experts")
    topk = ffn.integer("moe_top_k")
    check_topk(ffn, "moe_top_k", topk, experts)
    attention = gqa(f, hidden, derive_head_dim=True, heads_key="n_heads", kv_key="kv_n_heads", kv_owner=attn)
    return every_layer_moe(f, hidden, layers, experts, topk, ffn.integer("ffn_hidden_size"), attention)


ADAPTERS: dict[str, Adapter] = {"dbrx": dbrx}
"""The `model_type` values this module reads, each with its adapter."""
