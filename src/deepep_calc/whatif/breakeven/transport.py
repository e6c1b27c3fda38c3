"""(d) Where the transport stops being issue-bound: EP_NUM_COMMS and EP_EFA_MAX_QPS."""

from __future__ import annotations

import math
from dataclasses import replace

from ...base.arrays import np
from ...base.quantity import Q, weakest
from ...estimate.result import table_for
from ...physics.deepep import KernelShape, KernelSite, kernel_us, scaleout_bw
from ...physics.layout import layout
from ...question.fields import LIMITS
from ...question.scenario import Resolved
from .search import Answer, _at

# (d) where the transport stops being issue-bound --------------------------------------------

_NA = "not applicable"


def comms_proxy(r: Resolved) -> Answer:
    t = r.transport
    question = "EP_NUM_COMMS beyond which the host proxy stops being issue-bound"
    if not (t.host_proxied and t.comms_sensitive):
        why = (
            "is GPU-initiated (no host proxy)"
            if not t.host_proxied
            else "has a proxy that ignores EP_NUM_COMMS"
        )
        return Answer("comms_proxy", question, None, f"Not applicable: {t.name} {why}.", short=_NA)
    if r.scenario.nodes <= 1:
        return Answer(
            "comms_proxy", question, None, "Not applicable: one node, no scale-out proxy.", short=_NA
        )
    if r.scenario.cuda_graphs:
        return Answer(
            "comms_proxy",
            question,
            None,
            "Not applicable under CUDA graphs: no proxied host cost is charged.",
            short=_NA,
        )
    fit = table_for(r).engine(r.engine.name, False)
    lane, fixed = fit.proxy_lane_us, fit.proxy_fixed_us
    check = {"proxy_lane_us": lane, "proxy_fixed_us": fixed}
    if fixed.scalar <= 0:
        return Answer(
            "comms_proxy",
            question,
            None,
            f"Never up to EP_NUM_COMMS={LIMITS['comms']}: the {r.engine.name} fit puts the whole proxy cost "
            "in the part EP_NUM_COMMS divides, so every added comm still shortens the step.",
            check,
            short="never",
        )
    k = (lane / fixed).as_("comms", f"proxy_lane_us / proxy_fixed_us ({r.engine.name} fit)")
    check = {**check, "solution": k}
    whole = math.ceil(k.scalar)  # the first whole setting at which lane / K <= fixed
    if whole > LIMITS["comms"]:
        note = (
            f"Never up to EP_NUM_COMMS={LIMITS['comms']}: the part more comms divide stays the larger, "
            "so every added comm still shortens the proxy's step."
        )
        return Answer("comms_proxy", question, None, note, check, short="never")
    if k.scalar <= 1:
        note = (
            f"Not issue-bound at any setting: even at EP_NUM_COMMS=1 the part more comms divide "
            f"({lane.scalar:,.0f} µs per layer) is below the fixed part ({fixed.scalar:,.0f} µs), so "
            f"EP_NUM_COMMS barely moves the proxy's step (now {r.scenario.comms})."
        )
        return Answer("comms_proxy", question, None, note, check, short="never issue-bound")
    value = Q(float(whole), "comms", k.tag, f"{k.source}, rounded up to a whole setting")
    note = (
        f"From EP_NUM_COMMS={whole} ({k.scalar:,.1f} rounded up) the fixed {fixed.scalar:,.0f} µs per layer "
        f"outweighs the {lane.scalar:,.0f} µs / K that more comms divide, so more comms than that barely "
        f"help (now {r.scenario.comms})."
    )
    return Answer("comms_proxy", question, value, note, check)


def comms_bandwidth(r: Resolved) -> Answer:
    t, inst = r.transport, r.instance
    question = "EP_NUM_COMMS beyond which more comms add no scale-out bandwidth"
    if not t.comms_sensitive:
        return Answer(
            "comms_bandwidth",
            question,
            None,
            f"Not applicable: {t.name}'s bandwidth does not depend on EP_NUM_COMMS.",
            short=_NA,
        )
    if r.scenario.nodes <= 1:
        return Answer(
            "comms_bandwidth", question, None, "Not applicable: one node, no scale-out traffic.", short=_NA
        )
    assert t.bw_k1_gb_s is not None and t.bw_comms_exponent is not None
    line = inst.net_gb_s_per_gpu(r.gpus_per_node)
    k1 = Q.derived(t.bw_k1_gb_s, "GB/s", t.bw_source)
    k = Q(
        float((line.scalar / k1.scalar) ** (1.0 / t.bw_comms_exponent)),
        "comms",
        weakest(line, k1),
        f"(line rate / k1)^(1/{t.bw_comms_exponent:g}): the measured curve reaches {line.scalar:,.1f} GB/s",
    )
    bw = scaleout_bw(t, inst, r.gpus_per_node, k.scalar)
    check = {"line_gb_s": line, "bandwidth_at": _at(bw), "solution": k}
    whole = math.ceil(k.scalar)  # the first whole setting at which the curve has reached line rate
    if whole > LIMITS["comms"]:
        note = (
            f"Never up to EP_NUM_COMMS={LIMITS['comms']}: the measured curve stays below the "
            f"{line.scalar:,.1f} GB/s line rate, so more comms keep adding bandwidth."
        )
        return Answer("comms_bandwidth", question, None, note, check, short="never")
    value = Q(float(whole), "comms", k.tag, f"{k.source}; rounded up to a whole setting")
    note = (
        f"From EP_NUM_COMMS={whole} ({k.scalar:,.1f} rounded up) the measured curve k1 × K^"
        f"{t.bw_comms_exponent:g} reaches the {line.scalar:,.1f} GB/s per-GPU line rate; more comms add "
        f"no bandwidth (now {r.scenario.comms})."
    )
    return Answer("comms_bandwidth", question, value, note, check)


def _kernel_pair(r: Resolved, qps: np.ndarray) -> tuple[dict[str, Q], dict[str, Q]]:
    """The kernel at these QP counts, and the same kernel with a free issue path."""
    s, t, inst = r.scenario, r.transport, r.instance
    world = s.nodes * r.gpus_per_node
    tokens = np.asarray(layout(r, "deepep").seqs_per_rank, dtype=float)
    shape = KernelShape(tokens, r.model.hidden, r.model.topk, r.model.experts, "fp8")
    k = table_for(r).kernel_constants(t.name, inst.name)
    real = kernel_us(KernelSite(t, inst, r.gpus_per_node, world, s.comms, qps), shape, k)
    zero = Q.derived(0.0, "us", "issue path taken as free")
    free = kernel_us(
        KernelSite(t, inst, r.gpus_per_node, world, s.comms, qps),
        shape,
        replace(k, beta_dispatch_us=zero, beta_combine_us=zero),
    )
    return real, free


def issue_bound(r: Resolved, qps: np.ndarray) -> np.ndarray:
    """True where either direction's issue term is the largest of the kernel's three pipes."""
    real, free = _kernel_pair(r, qps)
    out = np.zeros(np.shape(qps), dtype=bool)
    for d in ("dispatch", "combine"):
        out |= np.asarray(real[d].value) > np.asarray(free[d].value) * (1.0 + 1e-9)
    return out


def _qps_not_applicable(r: Resolved, question: str) -> Answer | None:
    """No QP crossing to look for: the transport's issue model has no QP cap, or one node."""
    t = r.transport
    if not t.comms_sensitive:
        return Answer(
            "qps_kernel",
            question,
            None,
            f"Not applicable: the QP cap does not enter {t.name}'s issue model.",
            short=_NA,
        )
    if r.scenario.nodes * r.gpus_per_node <= r.gpus_per_node:
        return Answer(
            "qps_kernel", question, None, "Not applicable: one node, no scale-out issue path.", short=_NA
        )
    return None


def _qps_no_crossing(r: Resolved, question: str, top: float) -> Answer | None:
    """No crossing in 1..`top` QPs: issue-bound at every count, or at none."""
    t = r.transport
    if bool(issue_bound(r, np.array([top]))[0]):
        real, free = _kernel_pair(r, np.array([top]))
        return Answer(
            "qps_kernel",
            question,
            None,
            "Issue-bound at every QP count the model distinguishes: the lanes saturate at "
            f"{t.reference.qps} QPs (the reference's setting), so posting work requests sets the kernel "
            f"time throughout (now EP_EFA_MAX_QPS={r.scenario.max_qps}).",
            {"kernel_us": _at(real["total"]), "issue_free_us": _at(free["total"])},
            short="always issue-bound",
        )
    if not bool(issue_bound(r, np.array([1.0]))[0]):
        return Answer(
            "qps_kernel",
            question,
            None,
            "Not issue-bound even at 1 QP at this shape: the QP cap does not set the kernel time.",
            short="never issue-bound",
        )
    return None


def _qps_crossing(r: Resolved, question: str, top: float) -> Answer:
    """The QP count past which the kernel stops being issue-bound, found on ever finer grids."""
    lo, hi = 1.0, top
    for _ in range(5):  # each pass cuts the bracket 64 ways: 64^5 >> the precision we print
        cand = np.linspace(lo, hi, 65)
        bound = issue_bound(r, cand)
        j = int(np.argmin(bound))  # first point no longer issue-bound
        lo, hi = float(cand[j - 1]), float(cand[j])
    real, free = _kernel_pair(r, np.array([hi, 0.8 * hi]))
    tag = weakest(real["total"], free["total"])
    whole = math.ceil(hi)  # the first whole QP count past the crossing
    value = Q(
        float(whole),
        "QPs",
        tag,
        "bisection: kernel issue term vs wire / NVLink time (physics/deepep.py); rounded up",
    )
    check = {
        "kernel_us_at": _at(real["total"], 0),
        "issue_free_us_at": _at(free["total"], 0),
        "kernel_us_below": _at(real["total"], 1),
        "issue_free_us_below": _at(free["total"], 1),
        "solution": Q(hi, "QPs", tag, "bisection, before rounding"),
    }
    note = (
        f"From EP_EFA_MAX_QPS={whole} ({hi:.1f} rounded up) the latency of leaving the node, the wire or "
        f"NVLink, not posting work requests, "
        f"sets the kernel time; below it the issue path is the bottleneck (now {r.scenario.max_qps})."
    )
    return Answer("qps_kernel", question, value, note, check)


def qps_kernel(r: Resolved) -> Answer:
    """The EP_EFA_MAX_QPS beyond which DeepEP's kernel stops being issue-bound, or why there is none."""
    question = "EP_EFA_MAX_QPS beyond which the kernel stops being issue-bound"
    not_applicable = _qps_not_applicable(r, question)
    if not_applicable is not None:
        return not_applicable
    top = float(r.transport.reference.qps)
    no_crossing = _qps_no_crossing(r, question, top)
    if no_crossing is not None:
        return no_crossing
    return _qps_crossing(r, question, top)
