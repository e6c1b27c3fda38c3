"""NCCL-style collectives of the dense alternatives: allgather / reduce-scatter and all-reduce.

A hierarchical ring: NVLink steps inside a node, then one scale-out step per extra node, plus
the bytes every rank must receive over the slower of the two links. The per-step latencies
(NVLink, EFA) are fitted from dense arms under CUDA graphs (`fit/engines.py`), where nothing
hides them; they arrive here in `CollectiveConstants`. InfiniBand's step is assumed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..base.arrays import floats, minimum, where
from ..base.quantity import Q, qmax
from ..catalog.constants import const
from ..catalog.hardware import Instance


@dataclass(frozen=True, eq=False)
class CollectiveConstants:
    """Fitted constants of the collectives (from `fit/`)."""

    hop_nvlink_us: Q  # one intra-node step of a small NCCL collective
    hop_efa_us: Q  # one inter-node step of a small NCCL collective on EFA
    nvlink_efficiency: Q


def _hop_us(inst: Instance, c: CollectiveConstants) -> Q:
    return c.hop_efa_us if inst.fabric == "efa" else const("nccl_hop_ib_us")


def latency_us(inst: Instance, ranks: Any, nodes: Any, gpn: int, c: CollectiveConstants) -> Q:
    """Ring latency of an allgather / reduce-scatter: (local - 1) NVLink hops + (nodes - 1)
    scale-out hops, both fitted on dense arms (what the engines' MoE collectives cost)."""
    local = minimum(float(gpn), floats(ranks))
    return (c.hop_nvlink_us * (local - 1.0) + _hop_us(inst, c) * (floats(nodes) - 1.0)).as_(
        "us", "NCCL ring latency: NVLink hops + scale-out hops (fitted on dense graph-mode runs)"
    )


def allreduce_latency_us(inst: Instance, ranks: Any, nodes: Any, gpn: int, c: CollectiveConstants) -> Q:
    """Latency of a tensor-parallel all-reduce: engines use one-shot NVLink kernels inside a node
    (the assumed NVLink step per peer), and NCCL's scale-out step across nodes."""
    local = minimum(float(gpn), floats(ranks))
    return (const("nccl_hop_intra_us") * (local - 1.0) + _hop_us(inst, c) * (floats(nodes) - 1.0)).as_(
        "us", "all-reduce latency: NVLink steps (assumed) + scale-out steps (fitted)"
    )


def _wire_bw(inst: Instance, gpn: int) -> Q:
    return (inst.net_gb_s_per_gpu(gpn) * const("collective_wire_efficiency")).as_("GB/s")


def _nvl_bw(inst: Instance, c: CollectiveConstants) -> Q:
    return (inst.nvlink_gb_s() * c.nvlink_efficiency).as_("GB/s")


Ring = tuple[Q, Q, Q]  # (scale-out GB/s, NVLink GB/s, ring latency us) of one group


def ring(inst: Instance, ranks: Any, nodes: Any, gpn: int, c: CollectiveConstants) -> Ring:
    """What every allgather of one group shares, whatever it moves: the two links' bandwidths
    and the ring's latency. A step runs several collectives over the same group (decode, the
    prefill tokens mixed into it, a prefill), so its caller works this out once."""
    return _wire_bw(inst, gpn), _nvl_bw(inst, c), latency_us(inst, ranks, nodes, gpn, c)


def allgather_us(
    inst: Instance,
    ranks: Any,
    nodes: Any,
    gpn: int,
    tokens_per_rank: Any,
    hidden: int,
    c: CollectiveConstants,
    group: Ring | None = None,
) -> Q:
    """One allgather (or reduce-scatter) of every rank's tokens across the group.

    Each rank receives (ranks - 1) x tokens x hidden elements: (ranks - local) of them over the
    network and (local - 1) over NVLink. `group`: this group's `ring`, when the caller has it.
    """
    wire_bw, nvl_bw, latency = group if group is not None else ring(inst, ranks, nodes, gpn, c)
    cb = const("collective_bytes_per_element")
    local = minimum(float(gpn), floats(ranks))
    remote_mb = (cb * ((ranks - local) * tokens_per_rank * hidden / 1e6)).as_("MB")
    nvl_mb = (cb * ((local - 1.0) * tokens_per_rank * hidden / 1e6)).as_("MB")
    wire = remote_mb.quotient(wire_bw, 1e3, "us")
    nvl = nvl_mb.quotient(nvl_bw, 1e3, "us")
    return (latency + qmax(wire, nvl)).as_("us")


def allgatherv_one_us(
    inst: Instance,
    ranks: Any,
    nodes: Any,
    gpn: int,
    tokens: Any,
    hidden: int,
    c: CollectiveConstants,
    group: Ring | None = None,
) -> Q:
    """Allgather where one rank contributes `tokens` (a prefill chunk) and the others nothing."""
    wire_bw, nvl_bw, latency = group if group is not None else ring(inst, ranks, nodes, gpn, c)
    cb = const("collective_bytes_per_element")
    mb = (cb * (floats(tokens) * hidden / 1e6)).as_("MB")
    wire = mb.quotient(wire_bw, 1e3, "us")
    nvl = mb.quotient(nvl_bw, 1e3, "us")
    link = Q(where(floats(nodes) > 1, wire.value, nvl.value), "us", *_join(wire, nvl))
    return (latency + link).as_("us")


def allreduce_us(
    inst: Instance, ranks: Any, nodes: Any, gpn: int, tokens: Any, hidden: int, c: CollectiveConstants
) -> Q:
    """Ring all-reduce of `tokens` activations: 2 (ranks - 1) / ranks of the bytes, twice the latency."""
    cb = const("collective_bytes_per_element")
    ranks = floats(ranks)
    mb = (cb * (2.0 * (ranks - 1.0) / ranks * floats(tokens) * hidden / 1e6)).as_("MB")
    wire = mb.quotient(_wire_bw(inst, gpn), 1e3, "us")
    nvl = mb.quotient(_nvl_bw(inst, c), 1e3, "us")
    link = Q(where(floats(nodes) > 1, wire.value, nvl.value), "us", *_join(wire, nvl))
    return (allreduce_latency_us(inst, ranks, nodes, gpn, c) * 2.0 + link).as_("us")


def _join(a: Q, b: Q) -> tuple[Any, str]:
    j = a + b
    return j.tag, j.source
