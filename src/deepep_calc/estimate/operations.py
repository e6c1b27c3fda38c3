"""One decode step of the DeepEP arm counted operation by operation, and the kernels' measured
standing against InfiniBand: the numbers the mechanism page explains the tax with.

Each count is derived from the scenario's layout and the catalogs (tokens per rank, the (token,
expert) selections that leave the node, the work requests and bytes they cost, the wire time at
line rate); the step's own figures come from the evaluated result. The web page only labels
them. The units and sources keep the printed word "pairs".
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base.quantity import Q
from ..catalog.measured import load_facts
from ..catalog.transports import KernelRef, load_transports
from ..physics.deepep import KernelShape
from ..physics.layout import layout
from .result import Result


@dataclass(frozen=True)
class StepOperations:
    """The DeepEP arm's step at one scenario, per rank and per MoE layer, every figure a Q."""

    tokens: Q  # per rank per step
    selections: Q  # (token, expert) selections per rank per MoE layer
    remote: Q  # of which leave the node
    posts: Q  # work requests per direction
    dispatch_kb: Q  # dispatch bytes leaving the node per layer
    wire_us: Q  # their time at line rate
    path_us: Q  # what the path spends per MoE layer (kernels + proxy)
    proxy_ms: Q  # host-proxy cost per step
    kernels_ms: Q  # dispatch + combine kernels per step
    moe_layers: int
    nic_pct: Q  # measured NIC utilisation on the dispatch path
    idle_pct: Q  # the rest of the time


def nic_utilisation_pct() -> Q:
    """The measured NIC utilisation, in percent (a unit change, not a derivation)."""
    nic = load_facts()["nic_utilisation"].q()
    return Q(nic.value * 100.0, "%", nic.tag, nic.source)


def step_operations(base: Result) -> StepOperations:
    """The counts of one DeepEP decode step at `base`'s scenario (FP8 dispatch)."""
    r = base.resolved
    m, t, inst = r.model, r.transport, r.instance
    lay = layout(r, "deepep")
    world = int(lay.ranks)
    gpn = r.gpus_per_node
    tokens = Q.derived(
        float(lay.seqs_per_rank), "tokens", f"concurrency {r.scenario.concurrency} / {world} ranks"
    )
    selections = (tokens * m.topk).as_("pairs", f"tokens x top-{m.topk}")
    remote_share = (world - gpn) / world
    remote = (selections * remote_share).as_("pairs", f"x (EP - GPUs per node) / EP = {remote_share:g}")
    posts = (remote * t.ops_per_token).as_(
        "work requests", f"x {t.ops_per_token} per remote pair on SRD ({t.name})"
    )
    shape = KernelShape(1, m.hidden, m.topk, m.experts, "fp8")
    dispatch_kb = (remote * shape.dispatch_bytes_per_token / 1000.0).as_(
        "KB",
        f"x {shape.dispatch_bytes_per_token:,.0f} B per FP8 token (hidden {m.hidden} + scales + routing)",
    )
    line = inst.net_gb_s_per_gpu(gpn)
    wire_us = (dispatch_kb / line).as_("us", f"at line rate: {line.source}")
    dee = base.arms["deepep"]
    layers = m.moe_layers
    kernels = dee.breakdown_ms["moe_comm"]
    proxy = dee.breakdown_ms["proxy"]
    path_us = ((kernels + proxy) * (1000.0 / layers)).as_(
        "us", "model: (kernels + proxy) per step / MoE layers"
    )
    nic_pct = nic_utilisation_pct()
    idle_pct = (100.0 - nic_pct).as_("%", "100 % - NIC utilisation")
    return StepOperations(
        tokens,
        selections,
        remote,
        posts,
        dispatch_kb,
        wire_us,
        path_us,
        proxy,
        kernels,
        layers,
        nic_pct,
        idle_pct,
    )


def campaign_proxy() -> KernelRef:
    """The host-proxy arm measured in the same campaign as the native CQ-poll kernels."""
    proxy = load_transports()["efa-proxy"]
    for ref in proxy.cross_check:
        if "campaign" in ref.source:
            return ref
    return proxy.reference


def measured_pair(ref: KernelRef) -> tuple[Q, Q]:
    """A kernel reference's dispatch and combine p50, measured."""
    assert ref.dispatch_us is not None and ref.combine_us is not None
    return Q.measured(ref.dispatch_us, "us", ref.source), Q.measured(ref.combine_us, "us", ref.source)


@dataclass(frozen=True)
class KernelStanding:
    """One transport's measured kernels and their ratio to InfiniBand IBGDA's."""

    transport: str
    ref: KernelRef
    dispatch: Q
    combine: Q
    vs_ib_dispatch: Q
    vs_ib_combine: Q


def kernel_standing(refs: list[tuple[str, KernelRef]]) -> list[KernelStanding]:
    """Each (transport, reference) against InfiniBand IBGDA's reference kernels."""
    ib_d, ib_c = measured_pair(load_transports()["ib-ibgda"].reference)
    out = []
    for name, ref in refs:
        d, c = measured_pair(ref)
        out.append(KernelStanding(name, ref, d, c, (d / ib_d).as_("x"), (c / ib_c).as_("x")))
    return out


def native_vs_proxy() -> tuple[Q, Q]:
    """Native GPU-initiated CQ-poll kernels over the same campaign's host proxy: dispatch, combine."""
    pd, pc = measured_pair(campaign_proxy())
    nd, nc = measured_pair(load_transports()["efa-native-cqpoll"].reference)
    return (nd / pd).as_("x"), (nc / pc).as_("x")
