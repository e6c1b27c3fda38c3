"""DeepEP dispatch and combine latency of one MoE layer, per transport and instance.

Per direction (dispatch, combine), with T tokens per rank, across nodes:

    t       = f(I) x local + max(f(I) x leaving, wire, nvlink, f(I) x issue)
    issue   = cost per message x (data + r x signals) x reference lanes / lanes
    wire    = remote bytes / scale-out bandwidth       (the transport's bandwidth on this instance)
    nvlink  = intra-node bytes / (NVLink x the library's efficiency)

The message counts come from the low-latency protocol, never from a fit: each (token, expert)
selection whose expert sits on another node is one data message (a put of that token), and
every operation also sends one signal per expert hosted on another node (a count in dispatch,
a finishing flag in combine), whatever the token count: `experts x remote fraction` of them.
Selections to a peer in the same node are NVLink stores. A signal goes through the same issue
path as a put: `r` is how many puts one costs, fitted per transport where small-token
references show where the issue path starts to bind (an 8-byte atomic carries no payload).

`local` is what the library pays inside one node too (kernel start, its own synchronisation):
half its fitted one-node fixed latency. `leaving` is the latency of leaving the node (the
round trip the completion waits for); the messages, the wire and NVLink are posted and move
while it runs, so the four overlap and the slowest gates: at a few tokens per rank the
exchange is flat at `local + leaving`, at 128 the issue path or the wire sets it. `leaving`
and the cost per message are fitted per transport (`fit/kernels.py`), `f(I)` scales the host
and NIC side of one instance against the transport's home instance. Nothing here reads a
reference or solves anything: the constants arrive in `KernelConstants`.

One node: `t = local + NVLink bytes / (NVLink x efficiency)` per direction, with the fixed
latency and efficiency of the library the transport loads (DeepEP 1.x, 2.x, UCCL-EP,
pplx-garden each measured on one node at several token counts).
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
DIRECTIONS = ("dispatch", "combine")
PARTS = ("local", "leaving", "data", "signals", "wire", "nvlink")  # `kernel_parts`, per direction


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

    leaving_dispatch_us: Q  # latency of leaving the node in one dispatch, at the home instance
    leaving_combine_us: Q
    beta_dispatch_us: Q  # cost of one message (data or signal) at the reference's issue lanes
    beta_combine_us: Q
    reference_lanes: float  # issue lanes of the reference runs the costs were fitted at
    instance_factor: Q  # this instance's host / NIC-side costs relative to the home instance
    nvlink_alpha_us: Q  # single-node dispatch + combine fixed latency of the transport's library
    nvlink_efficiency: Q  # fraction of NVLink per-direction peak the library's kernels reach
    signal_ratio: Q  # one signal costs this many data messages


@dataclass(frozen=True, eq=False)
class Messages:
    """What one direction sends per rank (computed from the protocol, never fitted)."""

    data: Any  # remote (token, expert) selections: one put each
    signals: Any  # remote atomics: one per expert hosted on another node
    nvlink_sel: Any  # selections to peers in the same node (NVLink stores)


def messages(ep: Any, gpn: int, shape: KernelShape, prefill: bool = False) -> Messages:
    """Data messages, signals and NVLink selections per rank and direction, uniform routing.

    Low-latency (decode) kernels send one copy per routed expert, so a fraction
    (EP - local) / EP of the T x k selections leaves the node, and one signal per expert that
    lives on another node. High-throughput (prefill) kernels send one copy per destination node
    and fan out over NVLink: a token crosses the network once per distinct remote node its
    experts live on, (nodes - 1) x (1 - (1 - 1/nodes)^k); their notify step is a handful of
    messages, not one per expert, and is left in the fixed term.
    """
    ep = floats(ep)
    local = minimum(float(gpn), ep)
    tokens = floats(shape.tokens)
    sel = tokens * shape.topk
    remote_frac = (ep - local) / ep
    if prefill:
        nodes = ep / local
        data = tokens * (nodes - 1.0) * (1.0 - power(1.0 - 1.0 / nodes, shape.topk))
        signals = remote_frac * 0.0
    else:
        data = sel * remote_frac
        signals = shape.experts * remote_frac
    return Messages(data, signals, sel * (local - 1.0) / ep)


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


def remote_mb(m: Messages, shape: KernelShape) -> dict[str, Any]:
    """MB one rank's dispatch and combine put on the scale-out wire: its remote selections (data
    messages, `m`) times the bytes of one (FP8 token + scales + routing out, BF16 back). The
    bytes of the `wire` pipe, and of the NIC's busy fraction (`physics/bounds.py`)."""
    return {
        "dispatch": m.data * shape.dispatch_bytes_per_token / 1e6,
        "combine": m.data * shape.combine_bytes_per_token / 1e6,
    }


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
    """Parallel issue lanes: comms and queue pairs of the NCCL-GIN proxy, else a fixed count.

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


@dataclass(frozen=True)
class KernelSite:
    """Where one MoE layer's dispatch and combine run: the transport, the instance and its GPUs
    per node, the EP degree, the EP_NUM_COMMS and queue pairs the proxy may use, and whether the
    kernel is a prefill's. `ep`, `comms` and `qps` may be row arrays (a sweep)."""

    transport: Transport
    instance: Instance
    gpn: int
    ep: Any
    comms: Any
    qps: Any
    prefill: bool = False


def _cross_node_parts(site: KernelSite, shape: KernelShape, k: KernelConstants) -> list[dict[str, Q]]:
    """Per direction: the library's local part, then the concurrent pipes (the latency of
    leaving the node, the data and signal messages' share of the issue path, the wire, NVLink),
    in us. The total is `local + max(leaving, wire, nvlink, data + signals)`."""
    t, inst, gpn, prefill = site.transport, site.instance, site.gpn, site.prefill
    m = messages(site.ep, gpn, shape, prefill)
    mb = remote_mb(m, shape)
    bw = scaleout_bw(t, inst, gpn, site.comms, prefill)
    bw_comb = (
        Q.measured(t.prefill_combine_gb_s, "GB/s", t.prefill_source)
        if prefill and t.prefill_combine_gb_s is not None
        else bw
    )
    nvl = nvlink_bw(inst, k.nvlink_efficiency)
    scale = k.reference_lanes / issue_lanes(t, site.comms, site.qps)
    local = (k.nvlink_alpha_us * k.instance_factor * 0.5).as_("us", k.nvlink_alpha_us.source)
    out = []
    for direction, per_sel, wire, beta, leaving in (
        ("dispatch", shape.dispatch_bytes_per_token, bw, k.beta_dispatch_us, k.leaving_dispatch_us),
        ("combine", shape.combine_bytes_per_token, bw_comb, k.beta_combine_us, k.leaving_combine_us),
    ):
        per_msg = (beta * k.instance_factor).as_("us", f"fitted cost per message ({t.name})")
        out.append(
            {
                "local": local,
                "leaving": (leaving * k.instance_factor).as_("us"),
                "data": (per_msg * (m.data * scale)).as_("us"),
                "signals": (per_msg * k.signal_ratio * (m.signals * scale)).as_("us"),
                "wire": Q.derived(mb[direction], "MB", "routed bytes").quotient(wire, 1e3, "us"),
                "nvlink": Q.derived(m.nvlink_sel * per_sel / 1e6, "MB", "routed bytes").quotient(
                    nvl, 1e3, "us"
                ),
            }
        )
    return out


def _total(p: dict[str, Q]) -> Q:
    issue = (p["data"] + p["signals"]).as_("us")
    pipes = qmax(qmax(p["leaving"], issue), qmax(p["wire"], p["nvlink"]))
    return (p["local"] + pipes).as_("us")


def _nvlink_parts(
    inst: Instance, gpn: int, ep: Any, shape: KernelShape, k: KernelConstants
) -> list[dict[str, Q]]:
    """Single-node dispatch and combine: the library's fixed latency (split evenly) and its
    NVLink bytes; nothing leaves the node, so the other parts are zero."""
    m = messages(ep, gpn, shape)
    nvl = nvlink_bw(inst, k.nvlink_efficiency)
    half = (k.nvlink_alpha_us * 0.5).as_("us")
    zero = (half * 0.0).as_("us", "nothing leaves the node")
    out = []
    for per_sel in (shape.dispatch_bytes_per_token, shape.combine_bytes_per_token):
        mb = Q.derived(m.nvlink_sel * per_sel / 1e6, "MB", "routed bytes over NVLink")
        out.append(
            {
                "local": half,
                "leaving": zero,
                "data": zero,
                "signals": zero,
                "wire": zero,
                "nvlink": mb.quotient(nvl, 1e3, "us"),
            }
        )
    return out


def _nvlink_total(p: dict[str, Q]) -> Q:
    return (p["local"] + p["nvlink"]).as_("us")


def kernel_parts(site: KernelSite, shape: KernelShape, k: KernelConstants) -> dict[str, dict[str, Q]]:
    """Per direction, the parts one MoE layer's kernel is made of and its total (the kernel
    view and the step's bound read it; `binding_pipe` names the pipe that gates). A sweep
    mixing one-node and multi-node rows takes each row's own parts, as `kernel_us` does."""
    t, inst, gpn, ep = site.transport, site.instance, site.gpn, site.ep
    single = floats(ep) <= gpn
    every, some = every_some(single)
    if t.fabric == "nvlink" or every:
        parts, total = _nvlink_parts(inst, gpn, ep, shape, k), _nvlink_total
    else:
        parts, total = _cross_node_parts(site, shape, k), _total
    out = {}
    for name, p in zip(DIRECTIONS, parts, strict=True):
        out[name] = {**p, "total": total(p)}
    if some and not every and t.fabric != "nvlink":
        for name, p in zip(DIRECTIONS, _nvlink_parts(inst, gpn, ep, shape, k), strict=True):
            one = {**p, "total": _nvlink_total(p)}
            out[name] = {
                part: Q(np.where(single, one[part].value, q.value), q.unit, *_weakest_join(q, one[part]))
                for part, q in out[name].items()
            }
    return out


def binding_pipe(p: dict[str, Q]) -> str:
    """Which of the concurrent pipes gates one direction: leaving (the latency of leaving the
    node), messages (the issue path), wire or nvlink."""
    issue = p["data"].scalar + p["signals"].scalar
    pipes = {
        "leaving": p["leaving"].scalar,
        "messages": issue,
        "wire": p["wire"].scalar,
        "nvlink": p["nvlink"].scalar,
    }
    return max(pipes, key=lambda name: pipes[name])


def kernel_us(site: KernelSite, shape: KernelShape, k: KernelConstants) -> dict[str, Q]:
    """Dispatch and combine latency of one MoE layer; EP within one node rides NVLink only."""
    t, inst, gpn, ep = site.transport, site.instance, site.gpn, site.ep
    single = floats(ep) <= gpn
    every, some = every_some(single)
    if t.fabric == "nvlink" or every:
        d, c = (_nvlink_total(p) for p in _nvlink_parts(inst, gpn, ep, shape, k))
    else:
        d, c = (_total(p) for p in _cross_node_parts(site, shape, k))
        if some:  # a sweep mixing one-node and multi-node rows
            d1, c1 = (_nvlink_total(p) for p in _nvlink_parts(inst, gpn, ep, shape, k))
            d = Q(np.where(single, d1.value, d.value), "us", *_weakest_join(d, d1))
            c = Q(np.where(single, c1.value, c.value), "us", *_weakest_join(c, c1))
    return {"dispatch": d, "combine": c, "total": (d + c).as_("us")}


def _weakest_join(a: Q, b: Q) -> tuple[Any, str]:
    joined = a + b
    return joined.tag, joined.source
