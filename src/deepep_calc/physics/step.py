"""One decode step (and one prefill) per arm: a CPU path, a GPU path, and how they combine.

    GPU path = device time (roofline of bytes read and FLOPs)
             + kernels x per-kernel floor                      (hardware constant)
             + MoE exchange of every MoE layer X_arm(T)         (physics/deepep, collectives)
             + mixed-in prefill: requests joining per step x (prefill step - decode step)
    CPU path = kernels x launch cost + per-step host cost        (engine x graph mode)

    eager:   t = max(CPU path, GPU path + proxied host cost)   (engine waits on the GPU)
             t = max(CPU path, GPU path) + proxied host cost   (engine waits on the host)
    graphs:  t = per-step host cost + GPU path

An eager engine launches asynchronously, so the GPU works while the CPU launches the next
kernels: the step is the longer of the two, not their sum. A host-proxied DeepEP exchange in
an eager engine adds host work the GPU must wait for in every MoE layer (the hand-off to the
proxy threads and the posts they make), `proxy_fixed_us + proxy_lane_us / lanes` per MoE
layer. Where the engine waits for it is a per-engine fact (`proxy_wait` in engines.toml, with
its evidence; docs/model.md has the figures): where only the exchange kernel waits, the cost
lengthens the GPU path and can hide under a longer CPU path; where the engine's own thread
syncs on it, it adds after the longer path. It is charged once, here, and only where the
evidence puts it (eager, host-proxied, cross-node).
Graph replay removes the launches and runs the proxy's posts concurrently with the replay,
so under CUDA graphs only the per-step host cost and the GPU path remain.

Every count (kernels, bytes, tokens, messages) is computed from the scenario; the engine and
hardware constants arrive fitted in `StepConstants` (built by `fit/`), so this module never
resolves a scenario or solves for anything.

Why one module: the paths, their parts and how they combine are one formula; the step's bound
(`physics/bounds.py`) reads the same parts from it rather than restating them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..base.arrays import every_some, floats, np
from ..base.quantity import Q, qmax
from ..base.vocabulary import exchange_of
from ..question.scenario import Resolved
from .collectives import (
    CollectiveConstants,
    CollectiveGroup,
    allgather_rs_us,
    allgatherv_one_us,
    allreduce_us,
)
from .compute import decode_device_us, prefill_device_us
from .deepep import KernelConstants, KernelShape, KernelSite, kernel_parts, kernel_us
from .layout import Layout, layout

PARTS = ("engine", "hbm", "compute", "kernels", "moe_comm", "prefill", "proxy")


@dataclass(frozen=True, eq=False)
class EngineConstants:
    """Fitted host-side constants of one engine in one graph mode."""

    launch_us: Q  # CPU time per kernel launch (eager; 0 under graphs)
    step_us: Q  # per-step host cost: scheduling, sampling, syncs outside the layers
    proxy_fixed_us: Q  # per MoE layer: host cost of a proxied DeepEP exchange (eager)
    proxy_lane_us: Q  # per MoE layer: the part that more proxy lanes divide
    ttft_steps: Q  # decode steps a new request waits before its prefill completes


@dataclass(frozen=True, eq=False)
class ExchangeTerm:
    """What one engine adds around one kind of collective exchange, per exchange layer (MoE
    layers for allgather / reduce-scatter, every layer for TP all-reduces): its own kernels,
    padding and synchronisation beyond NCCL's collectives. Fitted only on that engine's dense
    runs (`fit/engines.py`); an engine x exchange with none adds nothing (tagged assumed)."""

    fixed_us: Q  # per exchange layer, per decode step
    token_us: Q  # per exchange layer, per decode token in the serving group


@dataclass(frozen=True, eq=False)
class StepConstants:
    """Everything fitted or measured that one step of one scenario needs."""

    eager: EngineConstants
    graphs: EngineConstants
    kernel_floor_us: Q  # GPU time per kernel beyond its bytes and FLOPs
    expert_efficiency: Q  # fraction of HBM peak that routed-expert reads reach in decode
    kernel: KernelConstants
    collectives: CollectiveConstants  # NCCL's own figures (catalog, not fitted)
    exchange_terms: Mapping[str, ExchangeTerm]  # this engine's, by exchange kind ("allgather", "tp")


def kernels_per_step(r: Resolved, arm: str) -> Any:
    """Kernels one decode step launches: per-layer blocks by kind, plus the step's head.

    The counts are structural (typical fused kernels of a serving engine, catalog constants);
    the fitted per-launch cost and per-kernel floor absorb their overall scale.
    """
    m = r.model
    const = r.assumptions.const
    att = const("kernels_attention_mla" if m.attention.kind == "mla" else "kernels_attention_gqa").value
    moe = const("kernels_moe_block").value + (
        const("kernels_shared_expert").value if m.shared_experts else 0.0
    )
    dense = const("kernels_dense_mlp").value
    per_step = m.layers * att + m.moe_layers * moe + m.dense_layers * dense + const("kernels_head").value
    if exchange_of(arm) == "tp" or r.attention_tp > 1:
        per_step = per_step + 2.0 * m.layers  # two all-reduce kernels per layer
    return per_step


def _shape(r: Resolved, tokens: Any) -> KernelShape:
    return KernelShape(tokens, r.model.hidden, r.model.topk, r.model.experts, "fp8")


# size: the evaluation's context (scenario, layout, constants, memo), its load and the prefill flag
def exchange_us(
    r: Resolved,
    lay: Layout,
    tokens_per_rank: Any,
    c: StepConstants,
    prefill: bool = False,
    memo: dict[Any, Any] | None = None,
) -> Q:
    """The MoE exchange of all MoE layers (all-reduces of all layers for TP) of one step, as
    the kernels and NCCL's collectives cost it (what an engine adds around them: `exchange_term_us`)."""
    m = r.model
    out = _attention_tp_us(r, lay, tokens_per_rank, c)
    if (
        lay.exchange == "deepep"
        and memo is not None
        and _plain(tokens_per_rank, r.scenario.comms, r.scenario.max_qps)
    ):
        k = deepep_kernel(r, lay, tokens_per_rank, c, prefill, memo)  # its parts, for the bound too
        return ((k["dispatch"]["total"] + k["combine"]["total"]).as_("us") * m.moe_layers + out).as_("us")
    if lay.exchange == "deepep":
        s = r.scenario
        shape = _shape(r, tokens_per_rank)
        total = kernel_us(
            KernelSite(r.transport, r.instance, lay.gpn, lay.ranks, s.comms, s.max_qps, prefill=prefill),
            shape,
            c.kernel,
        )
        return (total["total"] * m.moe_layers + out).as_("us")
    if lay.exchange == "tp":
        ar = allreduce_us(lay.group, tokens_per_rank, m.hidden, c.collectives)
        return (ar * (2.0 * m.layers)).as_("us")
    if prefill:  # one rank's chunk reaches every other rank
        one = allgatherv_one_us(lay.group, tokens_per_rank, m.hidden, c.collectives)
        return (one * float(m.moe_layers) + out).as_("us")
    ag = allgather_rs_us(lay.group, tokens_per_rank, m.hidden, c.collectives)
    return (ag * float(m.moe_layers) + out).as_("us")


# size: the evaluation's context (scenario, layout, constants, memo), its load and the prefill flag
def deepep_kernel(
    r: Resolved,
    lay: Layout,
    tokens_per_rank: Any,
    c: StepConstants,
    prefill: bool = False,
    memo: dict[Any, Any] | None = None,
) -> dict[str, dict[str, Q]]:
    """One MoE layer's DeepEP dispatch and combine by part (`deepep.kernel_parts`), computed once
    per evaluation and token count: the step and its bound (`physics/bounds.py`) read the same
    parts. A what-if on a DeepEP knob shares the memo, so the knobs are part of the key."""
    s = r.scenario
    key = None
    if memo is not None and _plain(tokens_per_rank, s.comms, s.max_qps):
        key = ("kernel", r.transport.name, s.comms, s.max_qps, tokens_per_rank, prefill, str(lay.ranks))
        hit = memo.get(key)
        if hit is not None:
            return hit
    shape = _shape(r, tokens_per_rank)
    t, inst = r.transport, r.instance
    k = kernel_parts(
        KernelSite(t, inst, lay.gpn, lay.ranks, s.comms, s.max_qps, prefill=prefill), shape, c.kernel
    )
    if key is not None:
        memo[key] = k  # type: ignore[index]
    return k


def _plain(*values: Any) -> bool:
    """Whether every value is a plain number (one scenario's, hashable), not an array."""
    return all(type(v) in (float, int) for v in values)


def exchange_kind(arm: str) -> str | None:
    """The engine path an arm's exchange takes: allgather / reduce-scatter (allgather, a replica
    running it), all-reduce (tp); DeepEP's kernels carry their own costs."""
    kind = exchange_of(arm)
    return kind if kind in ("allgather", "tp") else None


def exchange_term_us(r: Resolved, lay: Layout, c: StepConstants) -> Q | float:
    """What the engine adds around this arm's collectives in one decode step: per exchange layer
    a fixed part and a part per decode token of the serving group. Charged to decode steps only
    (the dense runs it is fitted on pin it at a few tokens per rank; nothing says how it grows
    with a prefill's thousands)."""
    kind = exchange_kind(lay.arm)
    term = c.exchange_terms.get(kind) if kind is not None else None
    if term is None:
        return 0.0
    layers = float(r.model.layers if kind == "tp" else r.model.moe_layers)
    per_layer = (term.fixed_us + term.token_us * floats(lay.group_tokens)).as_("us")
    return (per_layer * layers).as_("us", per_layer.source)


def _attention_tp_us(r: Resolved, lay: Layout, tokens_per_rank: Any, c: StepConstants) -> Any:
    """Attention TP inside a DP group (references that ran TP x DP): two all-reduces per layer of
    the group's tokens among its TP ranks, inside one node. 0 under pure attention DP."""
    if not lay.data_parallel:
        return 0.0
    split = lay.exchange_split
    tp = float(split) if type(split) is float else float(np.max(np.asarray(split)))
    if tp <= 1:
        return 0.0
    tokens = floats(tokens_per_rank) * tp
    ar = allreduce_us(CollectiveGroup(tp, 1.0, lay.gpn), tokens, r.model.hidden, c.collectives)
    return (ar * (2.0 * r.model.layers)).value


def proxy_lanes(r: Resolved) -> Any:
    """Host-side lanes of a proxied transport: its comms (NCCL-GIN) or its proxy threads."""
    t = r.transport
    if t.comms_sensitive:
        return floats(r.scenario.comms)
    return float(t.issue_lanes)


def proxied_host_us(r: Resolved, lay: Layout, e: EngineConstants) -> Q:
    """Host cost of a proxied DeepEP exchange per step (eager): zero on other paths."""
    applies = lay.exchange == "deepep" and r.transport.host_proxied
    cross = floats(lay.nodes) > 1 if applies else False
    per_layer = (e.proxy_fixed_us + (e.proxy_lane_us / proxy_lanes(r)).as_("us")).as_("us")
    return (per_layer * (r.model.moe_layers * cross)).as_("us", per_layer.source)


def joining_per_step(r: Resolved, lay: Layout) -> Any:
    """Requests that start per decode step in one serving group under continuous batching.

    At steady state every running sequence ends after OSL steps, so about running / OSL new
    requests join per step, each bringing a prefill of ISL tokens. Each adds the work a prefill
    does beyond what the decode step already pays (the weights are read once for both): its
    tensor-core time beyond its weight read, and its exchange. Averaged over steps (which is
    what ITL and TPOT average over) the decode step grows by joining x that marginal work. A
    disaggregated deployment runs prefill elsewhere: none join.
    """
    if r.disaggregated:
        return 0.0
    return floats(lay.group_tokens) / floats(r.scenario.osl)


class PartsMs(Mapping[str, Q]):
    """A step's parts in ms, each converted from the step model's us on its first read.

    Only faces read the split (the card, JSON, charts): a sweep, whose file holds none, and a
    verdict never do, and converting six steps' parts per scenario is a fifteenth of a
    million-row sweep's model time.
    """

    __slots__ = ("_ms", "_us")

    def __init__(self, us: dict[str, Q]) -> None:
        self._us = us
        self._ms: dict[str, Q] = {}

    def __getitem__(self, name: str) -> Q:
        q = self._ms.get(name)
        if q is None:
            q = self._ms[name] = self._us[name].over(1000.0, "ms")
        return q

    def us(self, name: str) -> Q:
        """One part in us, as the step model computed it (the step's bound reads these)."""
        return self._us[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._us)

    def __len__(self) -> int:
        return len(self._us)

    def __repr__(self) -> str:
        return f"PartsMs({dict(self)!r})"


@dataclass(frozen=True, eq=False)
class Step:
    """A decode (or prefill) step: its time and the split the card and charts show."""

    ms: Q
    parts_ms: Mapping[str, Q]
    cpu_us: Q
    gpu_us: Q


# size: the step's context (scenario, layout, constants) and the GPU terms it combines into one step
def _combine(
    r: Resolved,
    lay: Layout,
    device: dict[str, Q],
    exchange: Q,
    kernels: Any,
    c: StepConstants,
    prefill: Q | None = None,
) -> Step:
    """Eager and graph-mode step from the shared GPU work; per row where graph mode varies."""
    floors = (c.kernel_floor_us * kernels).as_("us", "kernels x fitted per-kernel floor")
    gpu = (device["device"] + floors + exchange).as_("us")
    if prefill is None:
        prefill = (gpu * 0.0).as_("us")
    gpu = (gpu + prefill).as_("us")
    graphs = r.scenario.cuda_graphs
    every, some = every_some(graphs)
    totals = []
    for mode, e in (("eager", c.eager), ("graphs", c.graphs)):
        if (mode == "eager" and every) or (mode == "graphs" and not some):
            totals.append(None)
            continue
        proxy = proxied_host_us(r, lay, e) if mode == "eager" else (e.proxy_fixed_us * 0.0).as_("us")
        if mode == "eager" and r.engine.proxy_wait == "gpu":  # the launching thread runs ahead
            cpu = ((e.launch_us * kernels).as_("us") + e.step_us).as_("us")
            total = qmax(cpu, (gpu + proxy).as_("us"))
        elif mode == "eager":  # the engine's thread waits for the proxy in every MoE layer
            cpu = ((e.launch_us * kernels).as_("us") + e.step_us).as_("us")
            total = (qmax(cpu, gpu) + proxy).as_("us")
        else:
            cpu = e.step_us
            total = (cpu + gpu).as_("us")
        engine = (total - gpu - proxy).as_("us")  # host time not hidden under GPU work
        totals.append((total, cpu, engine, proxy))
    picked = _pick(graphs, totals)
    total, cpu, engine, proxy = picked
    hbm = device["hbm"]
    beyond = qmax(device["compute"] - hbm, hbm * 0.0)
    parts = {
        "engine": engine,
        "hbm": hbm,
        "compute": beyond,
        "kernels": floors,
        "moe_comm": exchange,
        "prefill": prefill,
        "proxy": proxy,
    }
    return Step(total.over(1000.0, "ms"), PartsMs(parts), cpu, gpu)


def _pick(graphs: Any, totals: list[Any]) -> tuple[Q, Q, Q, Q]:
    eager, graph = totals
    if graph is None:
        return eager
    if eager is None:
        return graph
    return tuple(  # type: ignore[return-value]
        Q(np.where(graphs, g.value, e.value), e.unit, *_join(e, g)) for e, g in zip(eager, graph, strict=True)
    )


def _join(a: Q, b: Q) -> tuple[Any, str]:
    j = a + b if a.unit == b.unit else a * b
    return j.tag, a.source


def shared(memo: dict[Any, Any] | None, key: Any, make: Any) -> Any:
    """`make()` once per evaluation for pieces several arms have in common.

    DeepEP and allgather place the model identically, so their HBM / compute times are the same
    numbers; a flip-search candidate that only changes the DeepEP transport reuses them too.
    `memo` lives for one `compute()` (and its transport candidates), never longer.
    """
    if memo is None:
        return make()
    if key not in memo:
        memo[key] = make()
    return memo[key]


def placement(arm: str) -> str:
    """The memo's key for an arm's placement: DeepEP and allgather place the model alike, and
    so do a replica over allgather and one over DeepEP's NVLink kernels."""
    if arm in ("deepep", "allgather"):
        return "ep-dp"
    return "replica" if arm == "replica:deepep" else arm


def decode_tokens(lay: Layout) -> Any:
    """Tokens per rank a decode step's exchange carries: a DP rank's sequences (TP: the group's),
    split over the ranks that share one DP group's tokens."""
    return (lay.seqs_per_rank if lay.data_parallel else lay.group_tokens) / lay.exchange_split


def mixed_tokens(r: Resolved, lay: Layout, tokens: Any, joining: Any) -> Any:
    """Tokens per rank through the exchange with the joining requests' prompts mixed in."""
    return tokens + joining * floats(r.scenario.isl) / (lay.dp_ranks * lay.exchange_split)


def decode_step(r: Resolved, arm: str, c: StepConstants, memo: dict[Any, Any] | None = None) -> Step:
    """One decode step of this arm: every running sequence's token, plus mixed-in prefill."""
    s = r.scenario
    lay = shared(memo, ("layout", arm), lambda: layout(r, arm))
    dev = shared(
        memo, ("decode", placement(arm)), lambda: decode_device_us(r, lay, s.isl, s.osl, c.expert_efficiency)
    )
    tokens = decode_tokens(lay)
    exchange = exchange_us(r, lay, tokens, c, memo=memo)
    kernels = kernels_per_step(r, arm)
    joining = joining_per_step(r, lay)
    extra = _mixed_prefill_us(r, arm, lay, c, tokens, exchange, joining, memo)
    term = exchange_term_us(r, lay, c)
    if type(term) is Q:
        exchange = (exchange + term).as_("us")
    return _combine(r, lay, dev, exchange, kernels, c, extra)


# size: decode_step's own intermediates, passed so its exchange and load are not recomputed
def _mixed_prefill_us(
    r: Resolved,
    arm: str,
    lay: Layout,
    c: StepConstants,
    tokens: Any,
    exchange: Q,
    joining: Any,
    memo: dict[Any, Any] | None,
) -> Q:
    """What the joining prefills add to a decode step: their tensor-core time beyond the weight
    read the step pays anyway, and the extra bytes their tokens put through the step's own
    exchange (the exchange's fixed latency is paid once by the step)."""
    s = r.scenario
    isl = floats(s.isl)
    dev = shared(memo, ("prefill", placement(arm)), lambda: prefill_device_us(r, lay, isl))
    beyond = qmax(dev["compute"] - dev["hbm"], dev["hbm"] * 0.0)
    mixed = mixed_tokens(r, lay, tokens, joining)
    more = qmax(exchange_us(r, lay, mixed, c, memo=memo) - exchange, exchange * 0.0)
    return ((beyond * joining).as_("us") + more).as_(
        "us", "requests joining per step x their compute, plus their tokens' share of the exchange"
    )


def prefill_step(r: Resolved, arm: str, c: StepConstants, memo: dict[Any, Any] | None = None) -> Step:
    """The step that prefills one request's ISL tokens (chunked prefill on one DP rank)."""
    s = r.scenario
    lay = shared(memo, ("layout", arm), lambda: layout(r, arm))
    tokens = floats(s.isl)
    dev = shared(memo, ("prefill", placement(arm)), lambda: prefill_device_us(r, lay, tokens))
    exchange = exchange_us(r, lay, tokens / lay.exchange_split, c, prefill=True, memo=memo)
    return _combine(r, lay, dev, exchange, kernels_per_step(r, arm), c)


def prefill_batch_step(
    r: Resolved, arm: str, c: StepConstants, prompts: Any, memo: dict[Any, Any] | None = None
) -> Step:
    """One forward of a prefill-only server with every DP rank busy (a disaggregated prefill
    side at capacity): each rank prefills `prompts` prompts of ISL tokens together. Matmuls and
    attention grow with the prompts, the weights are read once; a rank's experts also run the
    selections of every other busy rank of its group; the exchange carries every rank's tokens
    (DeepEP's high-throughput kernels; a full allgather for the non-DeepEP arms)."""
    s = r.scenario
    lay = shared(memo, ("layout", arm), lambda: layout(r, arm))
    isl = floats(s.isl)
    n = floats(prompts)
    rank_tokens = n * isl
    dev = prefill_device_us(r, lay, isl, prompts=n, group_tokens=rank_tokens * lay.dp_ranks)
    per_rank = rank_tokens / lay.exchange_split
    exchange = exchange_us(r, lay, per_rank, c, prefill=lay.arm == "deepep", memo=memo)
    return _combine(r, lay, dev, exchange, kernels_per_step(r, arm), c)
