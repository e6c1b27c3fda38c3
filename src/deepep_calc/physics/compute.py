"""HBM and tensor-core time of one decode step and of one prefill, per rank."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..catalog.constants import const
from ..quantity import Q, qmax
from ..scenario import Resolved
from .layout import Layout
from .params import count_params, kv_bytes_per_sequence, weight_bytes


def experts_touched_fraction(topk: int, experts: int, tokens: Any) -> Any:
    """Chance a given expert is hit when `tokens` tokens each pick top-k of E uniformly."""
    return 1.0 - np.power(1.0 - topk / experts, tokens)


def _hbm_rate(r: Resolved) -> Q:
    return (r.instance.hbm_bw() * const("hbm_efficiency")).as_("GB/s")


def _flop_rate(r: Resolved) -> Q:
    dtype = r.model.routed_dtype if r.model.routed_dtype != "bf16" else r.model.weight_dtype
    return (r.instance.tflops(dtype) * const("compute_efficiency")).as_("TFLOP/s")


def decode_device_us(r: Resolved, lay: Layout, isl: Any, osl: Any) -> dict[str, Q]:
    """HBM traffic and math of one decode step on the busiest rank (roofline: the larger wins)."""
    m = r.model
    wb = weight_bytes(m)
    p_hit = experts_touched_fraction(m.topk, m.experts, lay.group_tokens)
    local_experts = m.experts / lay.expert_shard
    expert_bytes = m.moe_layers * local_experts * p_hit * wb.expert_layer
    weight_read = wb.per_token_replicated_read / lay.replicated_shard + expert_bytes
    ctx = isl + const("mean_context_fraction").value * osl
    kv_read = lay.seqs_per_rank * kv_bytes_per_sequence(m, np.asarray(ctx, dtype=float)) / lay.kv_shard
    tag = Q.derived if m.verified else Q.assumed
    bytes_q = tag((weight_read + kv_read) / 1e9, "GB", f"weights touched + KV read per step ({m.name})")
    hbm_us = (bytes_q / _hbm_rate(r) * 1e6).as_("us", "bytes read / (HBM bandwidth x efficiency)")

    tokens = lay.seqs_per_rank if lay.data_parallel else lay.group_tokens
    flops = 2.0 * count_params(m).active * tokens / lay.replicated_shard
    compute_us = (tag(flops / 1e12, "TFLOP", "2 x active params x tokens") / _flop_rate(r) * 1e6).as_(
        "us", "2 x active params x tokens / (peak x efficiency)"
    )
    return {"hbm": hbm_us, "compute": compute_us, "device": qmax(hbm_us, compute_us)}


def prefill_device_us(r: Resolved, lay: Layout, tokens: Any) -> Q:
    """Tensor-core time of a prefill chunk of `tokens` on one rank (matmuls + causal attention)."""
    m = r.model
    p = count_params(m)
    a = m.attention
    head_dim = a.head_dim or (a.qk_nope_head_dim + a.qk_rope_head_dim)
    full_layers = m.layers - a.linear_layers
    attn_flops = 2.0 * full_layers * a.heads * head_dim * np.square(tokens)  # QK^T and PV, causal
    flops = (2.0 * p.active * tokens + attn_flops) / lay.replicated_shard
    tag = Q.derived if m.verified else Q.assumed
    compute = (tag(flops / 1e12, "TFLOP", "prefill FLOPs") / _flop_rate(r) * 1e6).as_("us")
    wb = weight_bytes(m)
    weights = wb.per_token_replicated_read / lay.replicated_shard + wb.routed / lay.expert_shard
    hbm = (tag(weights / 1e9, "GB", "weights read once per prefill") / _hbm_rate(r) * 1e6).as_("us")
    return qmax(compute, hbm)
