"""NCCL collectives of the dense alternatives: allgather, reduce-scatter and all-reduce.

Each collective costs its latency plus the bytes it moves over its bus bandwidth:

    t = latency(kind, nodes) + bus bytes / bus bandwidth(kind, instance)

- latency, one node: (local - 1) NVLink steps (assumed LL step, constants.toml). Across
  nodes: NCCL's measured smallest-message latency at 2 nodes ([B300KIT], collectives.toml),
  plus one scale-out step per extra node for the rings of allgather / reduce-scatter; an
  all-reduce takes NCCL's tree when it is shorter (2 (ceil(log2 N) - 1) extra steps against
  the ring's 2 (N - 2)). A scale-out step is the measured 2-node latency less its NVLink part.
- bus bytes, as nccl-tests counts them: allgather / reduce-scatter of a c-byte chunk per rank
  move (ranks - 1) x c, an all-reduce of S bytes 2 S (ranks - 1) / ranks.
- bus bandwidth: the measured large-message figure across nodes, scaled to another instance by
  the ratio of its slower link (NVLink or EFA per GPU) to the measured instance's (assumed);
  inside one node NVLink at the efficiency the measured run reached over NVLink.

These are NCCL's own figures in a tight loop. What an engine adds around its collectives is a
separate per-engine x exchange term (`ExchangeTerm`, fitted on that engine's dense runs, physics/step.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..base.arrays import floats, is_array, maximum, minimum, np, where
from ..base.quantity import Q
from ..catalog.collectives import measured_collective, reference_collective
from ..catalog.constants import Assumptions
from ..catalog.hardware import Instance, get_instance

KINDS = ("allgather", "reducescatter", "allreduce")


@dataclass(frozen=True, eq=False)
class Link:
    """One collective kind on one instance: what its time is made of (no fit)."""

    latency_2n_us: Q  # smallest-message latency across 2 nodes
    net_step_us: Q  # one more scale-out step (each node beyond 2)
    busbw_gb_s: Q  # large-message bus bandwidth across nodes
    nvlink_busbw_gb_s: Q  # the same inside one node
    measured_local: float = 8.0  # GPUs per node of the 2-node measurement


@dataclass(frozen=True, eq=False)
class CollectiveConstants:
    """NCCL's figures for the kinds a non-DeepEP arm runs, on one instance (`collective_constants`)."""

    links: dict[str, Link]
    intra_step_us: Q  # one NVLink step of a small collective (assumed)
    element_bytes: float  # bytes of one activation element the collectives carry (assumed)

    def link(self, kind: str) -> Link:
        return self.links[kind]


def _intra_us(step: Q, local: Any) -> Q:
    return (step * (local - 1.0)).as_("us", f"(GPUs in the node - 1) x {step.source}")


def collective_constants(inst: Instance, assumptions: Assumptions) -> CollectiveConstants:
    """The measured NCCL figures for `inst`, or the reference instance's scaled to it, under
    the assumed constants in force."""
    return _constants(inst.name, assumptions)


@cache
def _constants(instance: str, assumptions: Assumptions) -> CollectiveConstants:
    """Per instance and assumptions (a sensitivity case moves the NVLink and IB steps)."""
    inst = get_instance(instance)
    step = assumptions.const("nccl_hop_intra_us")
    links = {kind: _link(kind, inst, step, assumptions) for kind in KINDS}
    return CollectiveConstants(links, step, assumptions.const("collective_bytes_per_element").scalar)


def _link(kind: str, inst: Instance, step: Q, assumptions: Assumptions) -> Link:
    own = measured_collective(kind, inst.name)
    ref = own or reference_collective(kind)
    ref_inst = get_instance(ref.instance)
    ref_gpn = ref_inst.gpus_per_node
    intra_ref = _intra_us(step, float(min(ref_gpn, ref.ranks)))
    if inst.fabric == "ib":  # no NCCL measurement over InfiniBand in the catalog
        hop = assumptions.const("nccl_hop_ib_us")
        steps = 2.0 if kind == "allreduce" else 1.0
        lat2 = (intra_ref + hop * steps).as_("us", f"NVLink steps + {steps:g} x {hop.source}")
    elif own is not None:
        lat2 = Q.measured(own.latency_us, "us", own.source)
    else:
        lat2 = Q.assumed(
            ref.latency_us,
            "us",
            f"{ref.source}; taken as {inst.name}'s (the same NCCL and OFI plugin over EFA: assumed)",
        )
    net = (lat2 - intra_ref).as_(
        "us", f"one scale-out step: the 2-node latency less its NVLink part ({kind})"
    )
    busbw = Q.measured(ref.busbw_gb_s, "GB/s", ref.source)
    nvl_ratio = inst.nvlink_gb_s().scalar / ref_inst.nvlink_gb_s().scalar
    if own is None:
        net_ratio = inst.net_gb_s_per_gpu().scalar / ref_inst.net_gb_s_per_gpu().scalar
        scale = min(nvl_ratio, net_ratio)
        busbw = Q.assumed(
            busbw.scalar * scale,
            "GB/s",
            f"{ref.source}; x {scale:.3g} for {inst.name} (its slower link against {ref.instance}'s: "
            "assumed)",
        )
    eff = ref.busbw_gb_s / ref_inst.nvlink_gb_s().scalar
    nvl = Q.assumed(
        inst.nvlink_gb_s().scalar * min(eff, 1.0),
        "GB/s",
        f"NVLink per direction x {min(eff, 1.0):.3g}, the fraction NCCL's {kind} reached on "
        f"{ref.instance} ({ref.source}; assumed inside one node)",
    )
    return Link(lat2, net, busbw, nvl, float(min(ref_gpn, ref.ranks)))


def _log2_ceil(nodes: Any) -> Any:
    if is_array(nodes):
        return np.ceil(np.log2(np.maximum(nodes, 1.0)))
    return float(math.ceil(math.log2(max(nodes, 1.0))))


@dataclass(frozen=True)
class CollectiveGroup:
    """The GPUs one collective spans: `ranks` of them over `nodes` nodes of `gpn` GPUs each
    (`ranks` and `nodes` may be row arrays, a sweep's)."""

    ranks: Any
    nodes: Any
    gpn: int


def latency_us(kind: str, group: CollectiveGroup, c: CollectiveConstants) -> Q:
    """Smallest-message latency of one collective over the group's GPUs."""
    gpn = group.gpn
    local = minimum(float(gpn), floats(group.ranks))
    nodes = floats(group.nodes)
    intra = _intra_us(c.intra_step_us, local)
    link = c.link(kind)
    extra = maximum(nodes - 2.0, 0.0)
    if kind == "allreduce":  # NCCL picks the tree when it has fewer steps than the ring
        extra = minimum(2.0 * extra, 2.0 * maximum(_log2_ceil(nodes) - 1.0, 0.0))
    # the 2-node figure includes its NVLink steps at a full node; a narrower node has fewer
    measured_intra = _intra_us(c.intra_step_us, link.measured_local)
    cross = (link.latency_2n_us - measured_intra + intra + link.net_step_us * extra).as_("us")
    one = where(nodes > 1.0, cross.value, intra.value)
    return Q(one, "us", *_join(cross, intra))


def _transfer_us(kind: str, bus_mb: Any, nodes: Any, c: CollectiveConstants) -> Q:
    link = c.link(kind)
    bus = Q.derived(bus_mb, "MB", f"bus bytes of the {kind}")
    wire = bus.quotient(link.busbw_gb_s, 1e3, "us")
    nvl = bus.quotient(link.nvlink_busbw_gb_s, 1e3, "us")
    return Q(where(floats(nodes) > 1.0, wire.value, nvl.value), "us", *_join(wire, nvl))


def collective_us(kind: str, group: CollectiveGroup, bus_mb: Any, c: CollectiveConstants) -> Q:
    """One collective that moves `bus_mb` bus megabytes: latency + bytes / bus bandwidth."""
    return (latency_us(kind, group, c) + _transfer_us(kind, bus_mb, group.nodes, c)).as_("us")


def allgather_bus_mb(ranks: Any, tokens_per_rank: Any, hidden: int, element_bytes: float) -> Any:
    """Bus MB of an allgather (or reduce-scatter) of every rank's tokens, as nccl-tests counts
    them: (ranks - 1) chunks of `tokens x hidden` elements, what each rank's busiest link carries."""
    return (floats(ranks) - 1.0) * floats(tokens_per_rank) * hidden * element_bytes / 1e6


def allreduce_bus_mb(ranks: Any, tokens: Any, hidden: int, element_bytes: float) -> Any:
    """Bus MB of an all-reduce of `tokens` activations: 2 (ranks - 1) / ranks of its bytes."""
    ranks = floats(ranks)
    return 2.0 * (ranks - 1.0) / ranks * floats(tokens) * hidden * element_bytes / 1e6


def ring_crossings(nodes: Any, gpn: int) -> Any:
    """Node boundaries one chunk crosses on average in a ring over `nodes` blocks of `gpn` GPUs:
    it travels every link but the one into its own rank, so every boundary but, for the rank at
    the start of a block, the one into it: N - 1/gpn (0 inside one node). NCCL spreads its rings
    over the nodes' NICs, so per GPU the NIC carries this many chunks."""
    nodes = floats(nodes)
    return where(nodes > 1.0, nodes - 1.0 / gpn, 0.0 * nodes)


def allgather_nic_mb(nodes: Any, gpn: int, tokens_per_rank: Any, hidden: int, element_bytes: float) -> Any:
    """MB one GPU's NICs carry per direction in a ring allgather (or reduce-scatter) of every
    rank's tokens: its chunk times the ring's crossings. Far fewer than the bus bytes, which
    count every hop, NVLink ones included."""
    return ring_crossings(nodes, gpn) * floats(tokens_per_rank) * hidden * element_bytes / 1e6


def allreduce_nic_mb(group: CollectiveGroup, tokens: Any, hidden: int, element_bytes: float) -> Any:
    """The same for a ring all-reduce of `tokens` activations: a reduce-scatter and an allgather
    of 1 / ranks of them."""
    size = floats(tokens) * hidden * element_bytes / 1e6
    return 2.0 * ring_crossings(group.nodes, group.gpn) * size / floats(group.ranks)


def allgather_rs_us(group: CollectiveGroup, tokens_per_rank: Any, hidden: int, c: CollectiveConstants) -> Q:
    """An allgather of every rank's tokens and the reduce-scatter that returns them."""
    bus_mb = allgather_bus_mb(group.ranks, tokens_per_rank, hidden, c.element_bytes)
    ag = collective_us("allgather", group, bus_mb, c)
    rs = collective_us("reducescatter", group, bus_mb, c)
    return (ag + rs).as_("us")


def allgatherv_one_us(group: CollectiveGroup, tokens: Any, hidden: int, c: CollectiveConstants) -> Q:
    """An allgather and reduce-scatter where one rank holds `tokens` (a prefill chunk) and the
    others nothing: every other rank receives the chunk once."""
    bus_mb = floats(tokens) * hidden * c.element_bytes / 1e6
    ag = collective_us("allgather", group, bus_mb, c)
    rs = collective_us("reducescatter", group, bus_mb, c)
    return (ag + rs).as_("us")


def allreduce_us(group: CollectiveGroup, tokens: Any, hidden: int, c: CollectiveConstants) -> Q:
    """An all-reduce of `tokens` activations across the group's GPUs."""
    bus_mb = allreduce_bus_mb(group.ranks, tokens, hidden, c.element_bytes)
    return collective_us("allreduce", group, bus_mb, c)


def _join(a: Q, b: Q) -> tuple[Any, str]:
    j = a + b
    return j.tag, j.source
