"""Memory per GPU: weights from TOTAL parameters, KV cache, EP buffers and framework reserve."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..base.arrays import floats, floor, maximum
from ..base.quantity import Q
from ..question.scenario import Resolved
from .layout import Layout
from .params import kv_bytes_per_sequence, weight_bytes

GB = 1e9
MIB = 2**20
# DeepEP buffers were measured at the DeepSeek shape; they scale with hidden x experts.
_BUFFER_REF_HIDDEN_EXPERTS = 7168 * 256


@dataclass(frozen=True, eq=False)
class Memory:
    weights_gb: Q
    kv_gb: Q
    buffers_gb: Q
    reserve_gb: Q
    total_gb: Q
    usable_gb: Q
    headroom_gb: Q
    fits: Any  # bool or bool array
    max_concurrency: Q  # largest concurrency whose KV fits
    kv_tokens: Q  # tokens of context the free HBM of one GPU holds at this ISL + OSL


def memory(r: Resolved, lay: Layout, isl: Any, osl: Any) -> Memory:
    m = r.model
    wb = weight_bytes(m)
    src = f"{m.name}: total parameters x dtype bytes ({m.source})"
    model_tag = Q.derived if m.verified else Q.assumed
    weights = model_tag((wb.replicated / lay.replicated_shard + wb.routed / lay.expert_shard) / GB, "GB", src)
    per_seq_bytes = kv_bytes_per_sequence(m, floats(isl + osl)) / lay.kv_shard
    kv_per_seq = model_tag(per_seq_bytes / GB, "GB", f"KV cache per sequence, {m.attention.kind}")
    kv = (kv_per_seq * lay.seqs_per_rank).as_("GB")

    a = r.assumptions
    if lay.exchange == "deepep":
        scale = m.hidden * m.experts / _BUFFER_REF_HIDDEN_EXPERTS
        buffers = (a.const("deepep_decode_buffer_mib") * (MIB / GB) * scale).as_("GB")
    else:
        buffers = a.const("allgather_buffer_gb")
    reserve = a.const("framework_reserve_gb")
    usable = (r.instance.hbm() * a.const("hbm_usable_fraction")).as_("GB")
    fixed = weights + buffers + reserve
    total = fixed + kv
    headroom = usable - total
    free = usable - fixed
    seqs_fit = floor(maximum(free.value, 0.0) / maximum(kv_per_seq.value, 1e-30))
    ranks_serving = lay.ranks * lay.groups if lay.data_parallel else lay.groups
    max_conc = Q(
        seqs_fit * ranks_serving, "sequences", free.tag, f"free HBM / KV per sequence; {free.source}"
    ).weaken(kv_per_seq.tag)
    context = floats(isl + osl)
    kv_tokens = Q(
        floor(maximum(free.value, 0.0) / maximum(kv_per_seq.value, 1e-30) * context),
        "tokens",
        free.tag,
        f"free HBM / KV bytes per token at ISL + OSL; {free.source}",
    ).weaken(kv_per_seq.tag)
    return Memory(
        weights,
        kv,
        buffers,
        reserve,
        total,
        usable,
        headroom,
        total.value <= usable.value,
        max_conc,
        kv_tokens,
    )
