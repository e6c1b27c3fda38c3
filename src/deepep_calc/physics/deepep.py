"""DeepEP dispatch and combine latency of one MoE layer, per transport and instance.

Per direction (dispatch, combine), with T tokens per rank:

    t = f(I) x alpha(transport) + max(wire, nvlink, issue)

    wire   = remote bytes / scale-out bandwidth       (the transport's bandwidth on this instance)
    nvlink = intra-node bytes / NVLink bandwidth
    issue  = f(I) x beta(transport) x remote selections x reference lanes / lanes

The three pipes run concurrently, so the slowest one gates. `alpha` is what remains at T -> 0
(kernel start, the completion handshake with every peer, for host proxies the hand-off to the
CPU) and comes from latency facts; `beta` is the cost per remote selection that the
transport's reference shows beyond `alpha`, fitted (`fit/kernels.py`); `f(I)` scales the host
and NIC side of one instance against the transport's home instance (fitted from same-harness
pairs). Byte and selection counts are computed from the shape, never fitted. Nothing here
reads a reference or solves anything: the constants arrive in `KernelConstants`.

Single-node EP rides NVLink only: `t = alpha_nvlink + nvlink bytes / (NVLink x efficiency)`,
with both constants fitted from kernel references at two token counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..base.arrays import every_some, floats, minimum, np, power
from ..base.quantity import Q, qmax
from ..catalog.hardware import Instance
from ..catalog.transports import Transport

FP8_SCALE_BYTES_PER_128 = 4  # one fp32 scale per 128 FP8 values
META_BYTES = 16  # per-token routing metadata in DeepEP's low-latency format
COMBINE_BYTES = 2  # combine returns BF16


@dataclass(frozen=True, eq=False)
class KernelShape:
    """One dispatch / combine call: tokens per rank and the model dimensions it moves."""

    tokens: Any  # tokens per rank
    hidden: int
    topk: int
    experts: int
    dispatch_dtype: str = "fp8"

    @property
    def dispatch_bytes_per_token(self) -> float:
        """Bytes of one (token, expert) selection: 7168 + 224 + 16 = 7,408 B at DeepSeek's FP8."""
        if self.dispatch_dtype == "fp8":
            return self.hidden + self.hidden / 128 * FP8_SCALE_BYTES_PER_128 + META_BYTES
        return self.hidden * 2.0 + META_BYTES

    @property
    def combine_bytes_per_token(self) -> float:
        return self.hidden * float(COMBINE_BYTES)


@dataclass(frozen=True, eq=False)
class KernelConstants:
    """The fitted constants one kernel evaluation needs (from `fit/`, never computed here)."""

    alpha_dispatch_us: Q  # fixed latency of one dispatch at the home instance
    alpha_combine_us: Q
    beta_dispatch_us: Q  # cost per remote selection at the reference's issue lanes
    beta_combine_us: Q
    reference_lanes: float  # issue lanes of the reference run the betas were fitted at
    instance_factor: Q  # this instance's host / NIC-side costs relative to the home instance
    nvlink_alpha_us: Q  # single-node dispatch + combine fixed latency
    nvlink_efficiency: Q  # fraction of NVLink per-direction peak the kernels reach


@dataclass(frozen=True, eq=False)
class Traffic:
    """What one direction moves: remote and NVLink selections per rank (computed, not fitted)."""

    remote_sel: Any
    nvlink_sel: Any


def traffic(ep: Any, gpn: int, shape: KernelShape, prefill: bool = False) -> Traffic:
    """Selections that leave the node and that stay on NVLink, under uniform routing.

    Low-latency (decode) kernels send one copy per routed expert, so a fraction
    (EP - local) / EP of the T x k selections is remote. High-throughput (prefill) kernels send
    one copy per destination node and fan out over NVLink: a token crosses the network once per
    distinct remote node its experts live on, (nodes - 1) x (1 - (1 - 1/nodes)^k).
    """
    ep = floats(ep)
    local = minimum(float(gpn), ep)
    tokens = floats(shape.tokens)
    sel = tokens * shape.topk
    if prefill:
        nodes = ep / local
        remote = tokens * (nodes - 1.0) * (1.0 - power(1.0 - 1.0 / nodes, shape.topk))
    else:
        remote = sel * (ep - local) / ep
    return Traffic(remote, sel * (local - 1.0) / ep)


_COMMS_TABLE = 64  # the largest EP_NUM_COMMS the tool takes (question/fields.py LIMITS)


@lru_cache(maxsize=32)
def _comms_powers(e: float) -> np.ndarray:
    return np.power(np.arange(_COMMS_TABLE + 1, dtype=float), e)


def comms_power(comms: Any, e: float) -> Any:
    """`comms ** e` elementwise, as `np.power` gives it.

    EP_NUM_COMMS is a whole number from 1 to 64, and a sweep's column of 50,000 rows holds a
    handful of them: a fractional power costs ~45 ns an element, a lookup in the powers of
    0..64 (computed by the same `np.power`) a fiftieth of that. Anything else takes np.power.
    """
    c = floats(comms)
    if type(c) is float or c.size < 256:
        return power(c, e)
    idx = c.astype(np.intp)
    if not (np.array_equal(idx, c) and idx.min() >= 0 and idx.max() <= _COMMS_TABLE):
        return np.power(c, e)
    return _comms_powers(float(e))[idx]


def scaleout_bw(t: Transport, inst: Instance, gpn: int, comms: Any, prefill: bool = False) -> Q:
    """Scale-out bandwidth per GPU per direction that this transport reaches."""
    line = inst.net_gb_s_per_gpu(gpn)
    if prefill and t.prefill_dispatch_gb_s is not None:
        return Q.measured(t.prefill_dispatch_gb_s, "GB/s", t.prefill_source)
    if t.bw_k1_gb_s is not None:
        assert t.bw_comms_exponent is not None
        bw = t.bw_k1_gb_s * comms_power(comms, t.bw_comms_exponent)
        return Q.derived(minimum(bw, line.value), "GB/s", t.bw_source)
    assert t.wire_efficiency is not None
    return (line * t.wire_efficiency).as_("GB/s", f"{t.wire_efficiency:g} x line rate; {t.bw_source}")


def nvlink_bw(inst: Instance, efficiency: Q) -> Q:
    return (inst.nvlink_gb_s() * efficiency).as_("GB/s", "NVLink per direction x fitted efficiency")


def issue_lanes(t: Transport, comms: Any, qps: Any) -> Any:
    """Parallel issue lanes relative to nothing: comms and queue pairs of the NCCL-GIN proxy.

    Each comm (EP_NUM_COMMS) and each queue pair is a lane posting work requests in order. The
    lanes scale like the transport's measured bandwidth-vs-comms curve (K^e, e from the same
    curve), because that curve is the issue path's throughput; queue pairs above the
    reference's count are not credited (no reference shows them helping).
    """
    if not t.comms_sensitive:
        return float(t.issue_lanes)
    e = t.bw_comms_exponent or 1.0
    k = comms_power(comms, e)
    q = minimum(floats(qps), float(t.reference.qps))
    return k * power(q, e)


def variable_us(
    t: Transport,
    inst: Instance,
    gpn: int,
    ep: Any,
    shape: KernelShape,
    comms: Any,
    qps: Any,
    k: KernelConstants,
    prefill: bool = False,
) -> tuple[Q, Q]:
    """The bandwidth- and issue-limited part of dispatch and combine (no fixed latency)."""
    tr = traffic(ep, gpn, shape, prefill)
    bw = scaleout_bw(t, inst, gpn, comms, prefill)
    bw_comb = (
        Q.measured(t.prefill_combine_gb_s, "GB/s", t.prefill_source)
        if prefill and t.prefill_combine_gb_s is not None
        else bw
    )
    nvl = nvlink_bw(inst, k.nvlink_efficiency)
    scale = Q.derived(
        tr.remote_sel * k.reference_lanes / issue_lanes(t, comms, qps),
        "",
        "remote selections x reference lanes / lanes",
    )
    out = []
    for per_sel, wire, beta in (
        (shape.dispatch_bytes_per_token, bw, k.beta_dispatch_us),
        (shape.combine_bytes_per_token, bw_comb, k.beta_combine_us),
    ):
        wire_us = Q.derived(tr.remote_sel * per_sel / 1e6, "MB", "routed bytes").quotient(wire, 1e3, "us")
        nvl_us = Q.derived(tr.nvlink_sel * per_sel / 1e6, "MB", "routed bytes").quotient(nvl, 1e3, "us")
        issue = (beta * k.instance_factor * scale).as_("us", f"fitted cost per remote selection ({t.name})")
        out.append(qmax(qmax(wire_us, nvl_us), issue))
    return out[0], out[1]


def nvlink_only_us(inst: Instance, gpn: int, ep: Any, shape: KernelShape, k: KernelConstants) -> tuple[Q, Q]:
    """Single-node dispatch and combine: fixed latency (split evenly) plus NVLink bytes."""
    tr = traffic(ep, gpn, shape)
    nvl = nvlink_bw(inst, k.nvlink_efficiency)
    half = (k.nvlink_alpha_us * 0.5).as_("us")
    out = []
    for per_sel in (shape.dispatch_bytes_per_token, shape.combine_bytes_per_token):
        mb = Q.derived(tr.nvlink_sel * per_sel / 1e6, "MB", "routed bytes over NVLink")
        out.append((half + mb.quotient(nvl, 1e3, "us")).as_("us"))
    return out[0], out[1]


def kernel_us(
    t: Transport,
    inst: Instance,
    gpn: int,
    ep: Any,
    shape: KernelShape,
    comms: Any,
    qps: Any,
    k: KernelConstants,
    prefill: bool = False,
) -> dict[str, Q]:
    """Dispatch and combine latency of one MoE layer; EP within one node rides NVLink only."""
    single = floats(ep) <= gpn
    every, some = every_some(single)
    if t.fabric == "nvlink" or every:
        d, c = nvlink_only_us(inst, gpn, ep, shape, k)
    else:
        d_var, c_var = variable_us(t, inst, gpn, ep, shape, comms, qps, k, prefill)
        a_d = (k.alpha_dispatch_us * k.instance_factor).as_("us")
        a_c = (k.alpha_combine_us * k.instance_factor).as_("us")
        d, c = (a_d + d_var).as_("us"), (a_c + c_var).as_("us")
        if some:  # a sweep mixing one-node and multi-node rows
            d1, c1 = nvlink_only_us(inst, gpn, ep, shape, k)
            d = Q(np.where(single, d1.value, d.value), "us", *_weakest_join(d, d1))
            c = Q(np.where(single, c1.value, c.value), "us", *_weakest_join(c, c1))
    return {"dispatch": d, "combine": c, "total": (d + c).as_("us")}


def _weakest_join(a: Q, b: Q) -> tuple[Any, str]:
    joined = a + b
    return joined.tag, joined.source
