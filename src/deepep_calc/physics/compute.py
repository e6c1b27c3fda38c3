"""HBM and tensor-core time of one decode step and of one prefill, per rank."""

from __future__ import annotations

from typing import Any

from ..base.arrays import floats, power
from ..base.quantity import Q, qmax
from ..question.scenario import Resolved
from .layout import Layout
from .params import count_params, kv_bytes_per_sequence, weight_bytes


def experts_touched_fraction(topk: int, experts: int, tokens: Any) -> Any:
    """Chance a given expert is hit when `tokens` tokens each pick top-k of E uniformly."""
    return 1.0 - power(1.0 - topk / experts, tokens)


def _hbm_rate(r: Resolved) -> Q:
    return (r.instance.hbm_bw() * r.assumptions.const("hbm_efficiency")).as_("GB/s")


def _flop_rate(r: Resolved) -> Q:
    dtype = r.model.routed_dtype if r.model.routed_dtype != "bf16" else r.model.weight_dtype
    return (r.instance.tflops(dtype) * r.assumptions.const("compute_efficiency")).as_("TFLOP/s")


def decode_device_us(
    r: Resolved, lay: Layout, isl: Any, osl: Any, expert_efficiency: Q | None = None
) -> dict[str, Q]:
    """HBM traffic and math of one decode step on the busiest rank (roofline: the larger wins).

    Routed-expert weights stream at `expert_efficiency` of the HBM peak: a decode step hands
    each touched expert a token or two, and grouped GEMMs that thin read far below the peak a
    dense matmul reaches (fitted, `fit/engines.py`). Everything else reads at `hbm_efficiency`.
    `expert_raw` is the expert read at the full peak, the coefficient the fit solves against.
    """
    m = r.model
    wb = weight_bytes(m)
    p_hit = experts_touched_fraction(m.topk, m.experts, lay.group_tokens)
    local_experts = m.experts / lay.expert_shard
    expert_bytes = m.moe_layers * local_experts * p_hit * wb.expert_layer
    weight_read = wb.per_token_replicated_read / lay.replicated_shard
    ctx = isl + r.assumptions.const("mean_context_fraction").value * osl
    kv_read = lay.seqs_per_rank * kv_bytes_per_sequence(m, floats(ctx)) / lay.kv_shard
    tag = Q.derived if m.verified else Q.assumed
    bytes_q = tag((weight_read + kv_read) / 1e9, "GB", f"replicated weights + KV read per step ({m.name})")
    expert_q = tag(expert_bytes / 1e9, "GB", f"routed experts touched per step ({m.name})")
    other_us = bytes_q.quotient(_hbm_rate(r), 1e6, "us", "bytes read / (HBM bandwidth x efficiency)")
    expert_eff = expert_efficiency if expert_efficiency is not None else r.assumptions.const("hbm_efficiency")
    expert_raw = expert_q.quotient(r.instance.hbm_bw(), 1e6, "us", "expert bytes / HBM peak")
    expert_us = (expert_raw / expert_eff).as_("us", "expert bytes / (HBM peak x expert read efficiency)")
    hbm_us = (other_us + expert_us).as_("us", "bytes read / (HBM bandwidth x efficiency)")

    tokens = lay.seqs_per_rank if lay.data_parallel else lay.group_tokens
    flops = matmul_flops(r, lay, tokens, lay.group_tokens)
    compute_us = tag(flops / 1e12, "TFLOP", "2 x active params x tokens").quotient(
        _flop_rate(r), 1e6, "us", "2 x active params x tokens / (peak x efficiency)"
    )
    return {
        "hbm": hbm_us,
        "compute": compute_us,
        "device": qmax(hbm_us, compute_us),
        "expert_raw": expert_raw,
    }


def matmul_flops(r: Resolved, lay: Layout, tokens: Any, group_tokens: Any) -> Any:
    """Matmul FLOPs on the busiest rank: its own tokens through the replicated weights (split
    by attention TP), plus its share of every routed selection of the group (split by EP).

    2 x (active - routed active) x tokens / replicated shard
      + 2 x routed active x group tokens / expert shard
    """
    m = r.model
    p = count_params(m)
    routed_active = m.moe_layers * m.topk * p.expert_layer
    replicated = 2.0 * (p.active - routed_active) * floats(tokens) / lay.replicated_shard
    routed = 2.0 * routed_active * floats(group_tokens) / lay.expert_shard
    return replicated + routed


def prefill_device_us(
    r: Resolved, lay: Layout, tokens: Any, prompts: Any = 1.0, group_tokens: Any = None
) -> dict[str, Q]:
    """Tensor-core time of a prefill chunk of `tokens` on one rank (matmuls + causal attention).

    The chunk's own rank runs its attention and replicated weights; its routed selections
    spread over the expert shards like any other tokens. `prompts` prompts of `tokens` each in
    one forward (a disaggregated prefill server batches them) multiply the matmuls and the
    attention, not the weight read; `group_tokens`: the prompt tokens of every busy rank whose
    selections reach this rank's experts (default: this rank's own)."""
    m = r.model
    a = m.attention
    head_dim = a.head_dim or (a.qk_nope_head_dim + a.qk_rope_head_dim)
    full_layers = m.layers - a.linear_layers
    attn_flops = 2.0 * full_layers * a.heads * head_dim * (tokens * tokens)  # QK^T and PV, causal
    if prompts is not None and not (type(prompts) is float and prompts == 1.0):
        attn_flops = attn_flops * prompts
        tokens = tokens * prompts
    group = tokens if group_tokens is None else group_tokens
    flops = matmul_flops(r, lay, tokens, group) + attn_flops / lay.replicated_shard
    tag = Q.derived if m.verified else Q.assumed
    compute = tag(flops / 1e12, "TFLOP", "prefill FLOPs").quotient(_flop_rate(r), 1e6, "us")
    wb = weight_bytes(m)
    weights = wb.per_token_replicated_read / lay.replicated_shard + wb.routed / lay.expert_shard
    hbm = tag(weights / 1e9, "GB", "weights read once per prefill").quotient(_hbm_rate(r), 1e6, "us")
    return {"compute": compute, "hbm": hbm, "device": qmax(compute, hbm)}
