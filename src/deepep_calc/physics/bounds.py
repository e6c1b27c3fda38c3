"""What bounds one decode step: the part that sets it, the exchange's own bound, how busy the
NICs are.

The step (`physics/step.py`) is a max of two paths, then sums:

    eager, the engine waits on the GPU:   t = max(CPU, GPU + proxy)
    eager, the engine waits on the host:  t = max(CPU, GPU) + proxy
    CUDA graphs:                          t = host + GPU
    CPU = host launches (kernels x launch cost) + per-step host cost
    GPU = max(HBM, tensor cores) + kernel floors + exchange + mixed-in prefill

Followed along the path that sets it, the step is a sum of *path parts*, and they add up to it:
on the CPU path the launches and the per-step host cost (and the proxy, where the host waits for
it); on the GPU path the per-step host cost (graphs), HBM or the tensor cores (whichever the
device's max takes), the kernel floors, the exchange, the mixed-in prefill and the proxy. The
other path hides under the one that sets the step (`hidden_us`): shortening it moves nothing.

The exchange enters split by what gates it, from the same terms the step uses:

- DeepEP across nodes, per direction `local + max(leaving, issue, wire, NVLink)`: the library's
  local part and the latency of leaving the node are its *fixed latency*, the issue path
  (data messages + signals) its *messages*, the wire and NVLink its *bytes*, each counted where
  it is the pipe that gates the direction (`deepep.binding_pipe`'s order breaks ties). One node:
  the local part and the NVLink bytes.
- NCCL's collectives (allgather / reduce-scatter, TP all-reduces): their smallest-message
  *latency* and their bus bytes over the bus bandwidth (*wire* across nodes, NVLink inside one);
  what the engine adds around them (`ExchangeTerm`) is the *engine* part.

The contest: the exchange competes as its classes (latency, messages, bandwidth, engine), each
summed, and a class that wins is named by its largest member ("exchange fixed latency", "wire
bytes", ...). The bound is the largest of these on the binding path; the exchange's own bound is
its largest class, path or not.

NIC busy: the bytes the step's exchanges put on the scale-out wire per GPU and direction (DeepEP:
remote selections x bytes; NCCL's rings: each rank's chunk x the node boundaries it crosses; one
node: none), the joining requests' tokens included, over the step x the instance's line rate per
GPU, and over the exchange's own duration (its kernels or collectives with those tokens) x the
line rate.

The load at which another part would take over is solved in `physics/take_over.py`.

Why one module: the path parts, the exchange's split, the contest that names the bound and the
NIC's bytes are one reading of one `StepBound`; apart, a bound could be named from parts that do
not add up to the step it claims to set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..base.arrays import SCALARS, floats, invert, is_array, maximum, np, where
from ..base.quantity import Q
from ..question.scenario import Resolved
from .collectives import allgather_nic_mb, allgather_rs_us, allreduce_nic_mb, allreduce_us, latency_us
from .deepep import DIRECTIONS, KernelShape, messages, remote_mb
from .layout import Layout, layout
from .step import (
    PartsMs,
    Step,
    StepConstants,
    decode_tokens,
    deepep_kernel,
    exchange_term_us,
    exchange_us,
    joining_per_step,
    kernels_per_step,
    mixed_tokens,
    placement,
    shared,
)

# Path parts, in the order faces stack them; they add up to the step.
BOUNDS = (
    "launches",
    "host",
    "hbm",
    "compute",
    "kernels",
    "exchange_latency",
    "messages",
    "wire",
    "nvlink",
    "collective_latency",
    "arm_term",
    "prefill",
    "proxy",
)
EXCHANGE_PARTS = ("exchange_latency", "messages", "wire", "nvlink", "collective_latency", "arm_term")
EXCHANGE_BOUNDS = ("latency", "messages", "bandwidth", "engine")
EXCHANGE_CLASSES: dict[str, tuple[str, ...]] = {
    "latency": ("exchange_latency", "collective_latency"),
    "messages": ("messages",),
    "bandwidth": ("wire", "nvlink"),
    "engine": ("arm_term",),
}
LABELS = {
    "launches": "host launches",
    "host": "per-step host cost",
    "hbm": "HBM reads",
    "compute": "tensor cores",
    "kernels": "kernel floors",
    "exchange_latency": "exchange fixed latency",
    "messages": "issue path (messages)",
    "wire": "wire bytes",
    "nvlink": "NVLink bytes",
    "collective_latency": "collectives' latency",
    "arm_term": "engine around collectives",
    "prefill": "mixed-in prefill",
    "proxy": "host proxy",
}
EXCHANGE_LABELS = {
    "latency": "latency-bound",
    "messages": "message-bound",
    "bandwidth": "bandwidth-bound",
    "engine": "engine-bound",
}
# The contest: these parts, then the exchange's classes.
PLAIN_PARTS = ("launches", "host", "hbm", "compute", "kernels", "prefill", "proxy")


@dataclass(frozen=True, eq=False)
class StepBound:
    """One arm's step along the path that sets it, and what its exchanges put on the wire.

    Values are floats for one scenario, arrays over a sweep's rows."""

    parts: dict[str, Q]  # path parts (BOUNDS), us: they add up to the step
    exchange: dict[str, Q]  # the exchange's own split (EXCHANGE_PARTS), us, on the path or not
    cpu_parts: dict[str, Q]  # the CPU path (eager): launches, per-step host cost, us
    gpu_parts: dict[
        str, Q
    ]  # the GPU path: host (graphs), HBM, tensor cores (raw), floors, exchange split, prefill
    proxy_us: Q
    host_wait: bool  # the engine's thread waits for the proxy (it adds after the longer path)
    cpu_binds: Any  # the CPU path sets the step (eager only)
    graphs: Any
    hidden_us: Q  # the other path, hidden under the one that sets the step (0 under graphs)
    step_us: Q
    wire_mb: Q  # MB per GPU per direction the step's exchanges put on the scale-out wire
    exchange_us: Q  # the exchange's own duration, with the joining requests' tokens
    line_gb_s: Q  # the instance's scale-out line rate per GPU per direction


def _and(a: Any, b: Any) -> Any:
    if type(a) is bool and type(b) is bool:
        return a and b
    return np.logical_and(a, b)


def _argmax(values: list[Any]) -> Any:
    """Index of the largest value (the first of a tie); per row over arrays."""
    if all(type(v) in SCALARS for v in values):
        best, k = values[0], 0
        for i, v in enumerate(values):
            if v > best:
                best, k = v, i
        return k
    arr = np.stack(np.broadcast_arrays(*[np.asarray(v, dtype=float) for v in values]))
    return np.argmax(arr, axis=0)


def _pick(index: Any, i: int, q: Q, zero: Q) -> Q:
    """`q` where `index` is `i`, else 0 (per row)."""
    if type(index) is int:
        return q if index == i else zero
    return Q(np.where(index == i, q.value, 0.0), q.unit, q.tag, q.source)


def _mask(on: Any, q: Q) -> Q:
    """`q` where `on`, else 0 (per row)."""
    if type(on) is bool:
        return q if on else (q * 0.0).as_(q.unit)
    return Q(np.where(on, q.value, 0.0), q.unit, q.tag, q.source)


# size: the evaluation's context (scenario, layout, constants, memo), its load and the total it splits
def _exchange_split(
    r: Resolved, lay: Layout, c: StepConstants, tokens: Any, total: Q, memo: dict[Any, Any] | None
) -> dict[str, Q]:
    """The exchange of one step (its MoE layers' kernels or collectives, and the engine's term
    around them), split by what gates it; the parts add up to `total`."""
    m = r.model
    zero = (total * 0.0).as_("us", "not part of this exchange")
    out = dict.fromkeys(EXCHANGE_PARTS, zero)
    if lay.exchange == "deepep":
        kp = deepep_kernel(r, lay, tokens, c, memo=memo)
        layers = float(m.moe_layers)
        for d in DIRECTIONS:
            p = kp[d]
            issue = (p["data"] + p["signals"]).as_("us")
            gate = _argmax([p["leaving"].value, issue.value, p["wire"].value, p["nvlink"].value])
            latency = (p["local"] + _pick(gate, 0, p["leaving"], zero)).as_(
                "us", "local + latency of leaving the node where it gates"
            )
            for name, q in (
                ("exchange_latency", latency),
                ("messages", _pick(gate, 1, issue, zero)),
                ("wire", _pick(gate, 2, p["wire"], zero)),
                ("nvlink", _pick(gate, 3, p["nvlink"], zero)),
            ):
                out[name] = (out[name] + q * layers).as_("us", q.source)
    else:
        count = 2.0 * m.layers if lay.exchange == "tp" else float(m.moe_layers)
        latency = shared(memo, ("collective latency", lay.arm), lambda: _collective_latency(lay, c, count))
        term = exchange_term_us(r, lay, c)
        if type(term) is Q:
            out["arm_term"] = term
        if r.attention_tp > 1:  # the references' TP x DP: their intra-node all-reduces apart
            cc = c.collectives
            if lay.exchange == "tp":
                whole = allreduce_us(lay.group, tokens, m.hidden, cc)
            else:
                whole = allgather_rs_us(lay.group, tokens, m.hidden, cc)
            moved = (whole * count - latency).as_("us", "bus bytes / bus bandwidth")
        else:  # the exchange is the collectives and the engine's term: the rest is the bytes
            moved = (total - latency - out["arm_term"]).as_("us", "bus bytes / bus bandwidth")
        cross = floats(lay.nodes) > 1.0
        out["collective_latency"] = latency
        out["wire"] = _mask(cross, moved)
        out["nvlink"] = _mask(invert(cross), moved)
    rest = total - sum((out[n] for n in EXCHANGE_PARTS[1:]), out[EXCHANGE_PARTS[0]])
    if is_array(rest.value) or abs(rest.value) > 1e-9 * max(abs(total.scalar), 1.0):
        # attention TP's all-reduces inside a DP group (references only): latency-bound
        out["collective_latency"] = (out["collective_latency"] + rest).as_("us")
    return out


def _collective_latency(lay: Layout, c: StepConstants, count: float) -> Q:
    """NCCL's smallest-message latency of one step's collectives (it does not move with the
    load: the take-over search reuses it)."""
    cc = c.collectives
    if lay.exchange == "tp":
        lat = latency_us("allreduce", lay.group, cc)
    else:
        lat = (latency_us("allgather", lay.group, cc) + latency_us("reducescatter", lay.group, cc)).as_("us")
    return (lat * count).as_("us", "NCCL's smallest-message latency per collective")


def _wire_mb(r: Resolved, lay: Layout, tokens: Any) -> Q:
    """MB per GPU per direction the step's exchanges put on the scale-out wire, at `tokens` per
    rank: DeepEP's remote selections; NCCL's bus bytes across nodes; nothing inside one node."""
    m = r.model
    tag = Q.derived if m.verified else Q.assumed
    cross = floats(lay.nodes) > 1.0
    element_bytes = r.assumptions.const("collective_bytes_per_element").scalar
    if lay.exchange == "deepep":
        if r.transport.fabric == "nvlink":
            return tag(floats(tokens) * 0.0, "MB", "NVLink only: nothing on the scale-out wire")
        shape = KernelShape(tokens, m.hidden, m.topk, m.experts, "fp8")
        mb = remote_mb(messages(lay.ranks, lay.gpn, shape), shape)
        per_step = (mb["dispatch"] + mb["combine"]) * m.moe_layers
        src = "remote selections x bytes (FP8 out, BF16 back) x MoE layers"
    elif lay.exchange == "tp":
        nic = allreduce_nic_mb(lay.group, tokens, m.hidden, element_bytes)
        per_step = nic * (2.0 * m.layers)
        src = "two ring all-reduces per layer: the bytes each GPU's NICs carry across nodes"
    else:
        per_step = 2.0 * allgather_nic_mb(lay.nodes, lay.gpn, tokens, m.hidden, element_bytes) * m.moe_layers
        src = "a ring allgather and reduce-scatter per MoE layer: the bytes each GPU's NICs carry"
    return tag(where(cross, per_step, per_step * 0.0), "MB", src)


# size: one decode step's context (scenario, arm, constants, step, memo) and a flag the take-over sets
def step_bound(
    r: Resolved,
    arm: str,
    c: StepConstants,
    step: Step,
    memo: dict[Any, Any] | None = None,
    nic: bool = True,
) -> StepBound:
    """The decode step of one arm along the path that sets it (`step` is its `decode_step`,
    `memo` the one it ran with: its device times give the tensor cores' own time). `nic` False
    leaves the wire bytes and the exchange's own duration at 0 (the take-over search's probes
    read neither)."""
    lay = shared(memo, ("layout", arm), lambda: layout(r, arm))
    p = step.parts_ms
    hbm, proxy = p.us("hbm"), p.us("proxy")
    graphs = r.scenario.cuda_graphs
    e = c.eager
    launches = (e.launch_us * kernels_per_step(r, arm)).as_("us", "kernels x fitted launch cost")
    host_wait = r.engine.proxy_wait != "gpu"
    gpu_side = step.gpu_us if host_wait else (step.gpu_us + proxy).as_("us")
    cpu_binds = _and(invert(graphs), step.cpu_us.value >= gpu_side.value)
    dev = (memo or {}).get(("decode", placement(arm)))
    cpu_parts = {"launches": launches, "host": e.step_us}
    tokens = decode_tokens(lay)
    split = _exchange_split(r, lay, c, tokens, p.us("moe_comm"), memo)
    path, device = _gpu_path(graphs, c, p, split)
    zero = (hbm * 0.0).as_("us", "not on the path that sets the step")
    parts = _path_parts(path, cpu_parts, cpu_binds, zero)
    if host_wait:  # the proxy adds after the longer path, whichever it is
        parts["proxy"] = proxy
    hidden = where(cpu_binds, gpu_side.value, where(graphs, 0.0, step.cpu_us.value))
    if nic:
        own, wire = _own_exchange(r, lay, c, tokens, memo)
    else:
        own, wire = zero, Q.derived(0.0, "MB", "not counted")
    total = sum((parts[n] for n in BOUNDS[1:]), parts[BOUNDS[0]]).as_("us", "path parts of the step")
    gpu_parts = {**path, "hbm": hbm, "compute": dev["compute"] if dev is not None else device}
    del gpu_parts["proxy"]
    return StepBound(
        parts,
        split,
        cpu_parts,
        gpu_parts,
        proxy,
        host_wait,
        cpu_binds,
        graphs,
        Q(hidden, "us", step.gpu_us.tag, "the other path, hidden under the one that sets the step"),
        total,
        wire,
        own,
        r.instance.net_gb_s_per_gpu(lay.gpn),
    )


def _gpu_path(graphs: Any, c: StepConstants, p: PartsMs, split: dict[str, Q]) -> tuple[dict[str, Q], Q]:
    """The GPU path's parts as the bound counts them (HBM or the tensor cores, whichever binds;
    the exchange by what gates it), and the tensor cores' time."""
    hbm, beyond = p.us("hbm"), p.us("compute")
    compute_binds = beyond.value > 0.0
    device = (hbm + beyond).as_("us", "tensor-core time (it exceeds the HBM reads)")
    path = {
        "host": _mask(graphs, c.graphs.step_us),
        "hbm": _mask(invert(compute_binds), hbm),
        "compute": _mask(compute_binds, device),
        "kernels": p.us("kernels"),
        **split,
        "prefill": p.us("prefill"),
        "proxy": p.us("proxy"),
    }
    return path, device


def _path_parts(path: dict[str, Q], cpu_parts: dict[str, Q], cpu_binds: Any, zero: Q) -> dict[str, Q]:
    """Each bound's share of the step: the CPU path's parts where it binds, else the GPU's."""
    on_gpu = invert(cpu_binds)
    parts: dict[str, Q] = {}
    for name in BOUNDS:
        gpu_part = _mask(on_gpu, path.get(name, zero))
        if name in cpu_parts:
            parts[name] = (_mask(cpu_binds, cpu_parts[name]) + gpu_part).as_("us", cpu_parts[name].source)
        else:
            parts[name] = gpu_part
    return parts


def _own_exchange(
    r: Resolved, lay: Layout, c: StepConstants, tokens: Any, memo: dict[Any, Any] | None
) -> tuple[Q, Q]:
    """The exchange's own duration and its wire MB, with the joining requests' tokens mixed in."""
    mixed = mixed_tokens(r, lay, tokens, joining_per_step(r, lay))
    own = exchange_us(r, lay, mixed, c, memo=memo).as_(
        "us", "the exchange's kernels or collectives, joining tokens in"
    )
    return own, _wire_mb(r, lay, mixed)


def _contest(parts: dict[str, Q]) -> list[Any]:
    """The values that compete for the bound: plain parts, then the exchange's classes."""
    out = [parts[n].value for n in PLAIN_PARTS]
    for members in EXCHANGE_CLASSES.values():
        v = parts[members[0]].value
        for n in members[1:]:
            v = v + parts[n].value
        out.append(v)
    return out


def _member(parts: dict[str, Q], cls: str) -> Any:
    """Index (into the class's members) of its largest member."""
    return _argmax([parts[n].value for n in EXCHANGE_CLASSES[cls]])


def bound_index(b: StepBound) -> Any:
    """The bound as a position in BOUNDS (an int, or an int array over a sweep's rows)."""
    winner = _argmax(_contest(b.parts))
    if type(winner) is int:
        return BOUNDS.index(bound_of(b.parts, winner))
    names = np.array([BOUNDS.index(n) for n in PLAIN_PARTS] + [0] * len(EXCHANGE_BOUNDS))
    out = names[winner]
    for k, cls in enumerate(EXCHANGE_BOUNDS):
        members = np.array([BOUNDS.index(n) for n in EXCHANGE_CLASSES[cls]])
        hit = winner == len(PLAIN_PARTS) + k
        if np.any(hit):
            out = np.where(hit, members[np.broadcast_to(_member(b.parts, cls), np.shape(hit))], out)
    return out


def bound_of(parts: dict[str, Q], winner: int) -> str:
    """The bound's name from the contest's winner (one scenario)."""
    if winner < len(PLAIN_PARTS):
        return PLAIN_PARTS[winner]
    cls = EXCHANGE_BOUNDS[winner - len(PLAIN_PARTS)]
    return EXCHANGE_CLASSES[cls][_member(parts, cls)]


def bound_name(b: StepBound) -> str:
    """The part that sets one scenario's step."""
    return bound_of(b.parts, _argmax(_contest(b.parts)))


def ranking(b: StepBound) -> list[str]:
    """The contest's entrants on the binding path, largest first, each by its bound's name (one
    scenario; entrants that add nothing are left out)."""
    values = _contest(b.parts)
    order = sorted(range(len(values)), key=lambda i: -values[i])
    return [bound_of(b.parts, i) for i in order if values[i] > 0.0]


def bound_part(b: StepBound, name: str) -> Q:
    """What the bound contributes to the step: its class's sum for an exchange part."""
    for members in EXCHANGE_CLASSES.values():
        if name in members:
            q = b.parts[members[0]]
            for n in members[1:]:
                q = q + b.parts[n]
            return q.as_("us", b.parts[name].source)
    return b.parts[name]


def exchange_class_index(b: StepBound) -> Any:
    """The exchange's own bound as a position in EXCHANGE_BOUNDS (per row over a sweep)."""
    classes = exchange_classes(b)
    return _argmax([classes[c].value for c in EXCHANGE_BOUNDS])


def exchange_classes(b: StepBound) -> dict[str, Q]:
    """The exchange's own split by class (latency, messages, bandwidth, engine), us."""
    out = {}
    for cls, members in EXCHANGE_CLASSES.items():
        q = b.exchange[members[0]]
        for n in members[1:]:
            q = q + b.exchange[n]
        out[cls] = q.as_("us", b.exchange[members[0]].source)
    return out


def exchange_bound(b: StepBound) -> str:
    """What gates one scenario's exchange: latency, messages, bandwidth or the engine's term."""
    classes = exchange_classes(b)
    return EXCHANGE_BOUNDS[_argmax([classes[c].value for c in EXCHANGE_BOUNDS])]


def nic_busy_pct(b: StepBound) -> Q:
    """Wire bytes of the step's exchanges / (step x line rate per GPU), in per cent."""
    return _busy(b, b.step_us, "the step")


def nic_busy_exchange_pct(b: StepBound) -> Q:
    """The same over the exchange's own duration: how busy the NIC is while the exchange runs."""
    return _busy(b, b.exchange_us, "the exchange's own duration")


def _busy(b: StepBound, over: Q, what: str) -> Q:
    """Bytes over (a time x the line rate); no bytes (no exchange, one GPU) is an idle NIC."""
    rate = (over * b.line_gb_s).as_("us·GB/s")
    rate = Q(maximum(rate.value, 1e-300), rate.unit, rate.tag, rate.source)
    # MB / (us x GB/s) = 1e-3; x 100 for per cent
    return (b.wire_mb / rate * 1e5).as_(
        "%", f"wire bytes of the step's exchanges / ({what} x line rate per GPU); {b.line_gb_s.source}"
    )
