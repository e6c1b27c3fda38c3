"""The two sides of a disaggregated deployment, arm by arm, and one pairing of them.

A side is the scenario on its own nodes, transport and graph mode, with no disaggregation of
its own (`side_resolved`); the decode side runs no prefill. For each arm it may run:

- prefill: the prefill of one prompt on one lane (what a request's first token waits for),
  one forward with every lane busy on a full batch of prompts (its capacity), and its memory
  with those prompts' KV in flight (`prefill_arm`);
- decode: the decode step with no prefill mixed in at the scenario's concurrency, its running
  limit and capacity (`decode_arm`).

`pairing` joins one prefill arm with one decode arm through the KV transfer
(`physics/kv_transfer.py`) into the deployment's figures (`physics/disagg.py`); `pairing_rank`
is how the model rates a pairing. Values may be arrays (a sweep's rows, the planner's grid);
`choose` / `best_ranked` / `pick` select the best candidate row by row.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..base.arrays import floats, is_array, maximum, minimum, np
from ..base.quantity import Q
from ..base.vocabulary import ARMS
from ..catalog.kv_transports import KvTransport, engine_kv
from ..fit.table import Table
from ..physics import disagg as phys
from ..physics import kv_transfer as kv
from ..physics.layout import Layout, layout
from ..physics.memory import Memory, memory
from ..physics.step import decode_step, prefill_batch_step, prefill_step, shared
from ..question.disagg import Side
from ..question.fields import DISAGG_FIELDS
from ..question.scenario import Resolved, varied_scenario

CANDIDATE_ARMS = ARMS


# Sides -----------------------------------------------------------------------------------------


def side_resolved(r: Resolved, side: Side, concurrency: Any = None) -> Resolved:
    """The scenario of one side: its nodes, transport and graph mode, no disaggregation of its
    own; the decode side runs no prefill. Numeric fields become the model's own figures (no
    measured cell: every cell is an aggregated run)."""
    fields: dict[str, Any] = dict.fromkeys(DISAGG_FIELDS)
    fields["nodes"] = float(side.nodes)
    fields["transport"] = side.transport.name
    fields["cuda_graphs"] = side.cuda_graphs
    if concurrency is not None:
        fields["concurrency"] = concurrency
    for name in ("concurrency", "isl", "osl", "comms", "max_qps"):
        value = fields.get(name, getattr(r.scenario, name))
        fields[name] = value if is_array(value) else float(value)
    return replace(
        r,
        scenario=varied_scenario(r.scenario, **fields),
        measured=False,
        transport=side.transport,
        disagg=None,
        disaggregated=side.role == "decode",
    )


def candidates(side: Side) -> tuple[str, ...]:
    """The arms a side may run: the one asked for, else every arm that is a distinct layout
    there (a replica on one node is the allgather deployment)."""
    if side.arm is not None:
        return (side.arm,)
    return tuple(a for a in CANDIDATE_ARMS if a != "replica" or side.nodes > 1)


def splits_evenly(r: Resolved, lay: Layout, arm: str) -> Any:
    if arm == "tp":
        return True
    shard = floats(lay.expert_shard)
    e = r.model.experts
    return (e >= shard) & (e % shard == 0)


def plain(q: Q) -> Q:
    """The figure without its band (arithmetic on it; bands are attached at the end)."""
    return Q(q.value, q.unit, q.tag, q.source)


@dataclass(eq=False)
class PrefillArm:
    """One arm of the prefill side: its latency for one prompt and its capacity when full."""

    arm: str
    layout: Layout
    prefill_ms: Q  # one prompt alone on one lane: the TTFT part
    busy_forward_ms: Q  # every lane on a full batch of prompts
    prompts: Q  # prompts per forward per lane
    lanes: Any
    capacity_req_s: Q
    memory: Memory
    splits: Any

    @property
    def fits(self) -> Any:
        return self.memory.fits


def prefill_arm(r_side: Resolved, arm: str, table: Table, memo: dict[Any, Any]) -> PrefillArm:
    """The prefill side's figures for one arm (`r_side` from `side_resolved`)."""
    s = r_side.scenario
    c = table.step_constants(r_side)
    lay = layout(r_side, arm)
    one = prefill_step(r_side, arm, c, memo).ms
    ekv = engine_kv(r_side.engine.name)
    prompts = phys.prompts_per_forward(ekv.batch_q(), s.isl)
    busy = prefill_batch_step(r_side, arm, c, prompts.value, memo).ms
    lanes = floats(lay.dp_ranks) * floats(lay.groups)
    capacity = phys.prefill_capacity_req_s(lanes, prompts, busy)
    in_flight = minimum(floats(s.concurrency), lanes * prompts.value)
    r_mem = replace(r_side, scenario=varied_scenario(s, concurrency=in_flight), measured=False)
    mem = memory(r_mem, layout(r_mem, arm), s.isl, 0.0)  # a prompt's KV only, until it is sent
    return PrefillArm(arm, lay, one, busy, prompts, lanes, capacity, mem, splits_evenly(r_side, lay, arm))


@dataclass(eq=False)
class DecodeArm:
    """One arm of the decode side: its step with no prefill mixed in, and its capacity."""

    arm: str
    layout: Layout
    memory: Memory
    step_ms: Q
    running_limit: Q
    capacity_req_s: Q
    throughput_req_s: Q  # at this load, on the decode side alone
    splits: Any

    @property
    def fits(self) -> Any:
        return self.memory.fits


def decode_arm(r_side: Resolved, arm: str, table: Table, memo: dict[Any, Any]) -> DecodeArm:
    """The decode side's figures for one arm (`r_side` from `side_resolved`)."""
    s = r_side.scenario
    lay = shared(memo, ("layout", arm), lambda: layout(r_side, arm))
    mem = memory(r_side, lay, s.isl, s.osl)
    step = decode_step(r_side, arm, table.step_constants(r_side), memo).ms
    batch_cap = floats(r_side.max_batch) * floats(lay.dp_ranks) * floats(lay.groups)
    limit_value = minimum(batch_cap, floats(mem.max_concurrency.value))
    limit = Q(
        maximum(limit_value, 0.0),
        "sequences",
        mem.max_concurrency.tag,
        f"min(max batch per rank {r_side.max_batch_source} x DP ranks, sequences whose KV fits)",
    )
    capacity = phys.decode_capacity_req_s(limit, s.osl, step)
    running = minimum(floats(s.concurrency), limit.value)
    now = phys.decode_capacity_req_s(Q(running, "sequences", limit.tag, limit.source), s.osl, step)
    return DecodeArm(arm, lay, mem, step, limit, capacity, now, splits_evenly(r_side, lay, arm))


# Choosing ------------------------------------------------------------------------------------------


def choose(ratings: list[Any], ok: list[Any]) -> Any:
    """Index of the best-rated candidate that is ok (else of the best-rated one), per row."""
    if not any(is_array(v) for v in (*ratings, *ok)):
        usable = [i for i in range(len(ratings)) if bool(ok[i])] or list(range(len(ratings)))
        return max(usable, key=lambda i: (ratings[i], -i))
    shape = np.broadcast_shapes(*(np.shape(v) for v in (*ratings, *ok)))
    rate = np.stack([np.broadcast_to(np.asarray(v, dtype=float), shape) for v in ratings])
    good = np.stack([np.broadcast_to(np.asarray(v, dtype=bool), shape) for v in ok])
    any_ok = good.any(axis=0)
    masked = np.where(good | ~any_ok, np.nan_to_num(rate, nan=-np.inf), -np.inf)
    return np.argmax(masked, axis=0)


def gather(qs: list[Q], index: Any) -> Q:
    """The chosen candidate's figure, row by row (one scenario: the chosen one itself)."""
    if not is_array(index):
        return qs[int(index)]
    shape = np.shape(index)
    values = np.stack([np.broadcast_to(np.asarray(q.value, dtype=float), shape) for q in qs])
    picked = np.take_along_axis(values, np.asarray(index)[None, ...], axis=0)[0]
    return Q(picked, qs[0].unit, min(q.tag for q in qs), qs[0].source)


def gather_values(values: list[Any], index: Any) -> Any:
    if not is_array(index):
        return values[int(index)]
    shape = np.shape(index)
    stacked = np.stack([np.broadcast_to(np.asarray(v, dtype=float), shape) for v in values])
    return np.take_along_axis(stacked, np.asarray(index)[None, ...], axis=0)[0]


def prefill_figures(p: PrefillArm) -> dict[str, Any]:
    """What the pairing reads of a prefill arm (values or arrays: the planner indexes them)."""
    return {
        "prefill_ms": p.prefill_ms,
        "busy_forward_ms": p.busy_forward_ms,
        "prompts": p.prompts,
        "capacity": p.capacity_req_s,
        "memory_gb": p.memory.total_gb,
        "holders": floats(p.layout.replicated_shard),
        "kv_shard": floats(p.layout.kv_shard),
        "ok": p.fits & p.splits,
        "fits": p.fits,
        "splits": p.splits,
    }


def decode_figures(d: DecodeArm) -> dict[str, Any]:
    """What the pairing reads of a decode arm."""
    return {
        "step_ms": d.step_ms,
        "capacity": d.capacity_req_s,
        "running_limit": d.running_limit,
        "throughput": d.throughput_req_s,
        "memory_gb": d.memory.total_gb,
        "holders": floats(d.layout.replicated_shard),
        "kv_shard": floats(d.layout.kv_shard),
        "ok": d.fits & d.splits,
        "fits": d.fits,
        "splits": d.splits,
    }


# size: it takes pairing's inputs as they come (scenario, engine KV, KV transport, node counts, figures)
def transfer_figures(
    r: Resolved,
    ekv: Any,
    t: KvTransport,
    prefill_nodes: Any,
    decode_nodes: Any,
    pf: dict[str, Any],
    df: dict[str, Any],
) -> dict[str, Any]:
    """The KV transfer between a prefill arm and a decode arm over KV transport `t`."""
    m, s = r.model, r.scenario
    request = kv.kv_bytes_per_request(m, s.isl)
    block = kv.block_bytes(m, ekv.block_q(m.attention.kind == "mla"), df["kv_shard"])
    pair = kv.node_pair_gb_s(t, block, r.instance)
    copies = kv.copies(df["holders"], df["kv_shard"])
    streams = minimum(pf["holders"], df["holders"])
    transfer = kv.transfer_ms(request, copies, streams, pair, r.gpus_per_node)
    units = kv.streaming_units(ekv.stream, m.layers, s.isl, ekv.chunk_tokens)
    exposed = kv.exposed_ms(transfer, pf["prefill_ms"], units)
    node_pairs = minimum(floats(prefill_nodes), floats(decode_nodes))
    link = kv.link_capacity_req_s(request, copies, pair, node_pairs)
    return {
        "request": request,
        "block": block,
        "pair": pair,
        "transfer": transfer,
        "units": units,
        "exposed": exposed,
        "link": link,
    }


# size: one pairing's inputs, which the planner also passes one by one: scenario, KV, nodes and figures
def pairing(
    r: Resolved,
    ekv: Any,
    t: KvTransport,
    prefill_nodes: Any,
    decode_nodes: Any,
    pf: dict[str, Any],
    df: dict[str, Any],
) -> tuple[dict[str, Any], phys.Deployment]:
    """One prefill arm with one decode arm: the transfer and the deployment's figures."""
    s = r.scenario
    link = transfer_figures(r, ekv, t, prefill_nodes, decode_nodes, pf, df)
    dep = phys.deploy(
        s.concurrency,
        s.osl,
        pf["prefill_ms"],
        link["exposed"],
        df["step_ms"],
        {"prefill": pf["capacity"], "decode": df["capacity"], "transfer": link["link"]},
    )
    return link, dep


def pairing_rank(
    r: Resolved, pf: dict[str, Any], df: dict[str, Any], dep: phys.Deployment
) -> tuple[Any, ...]:
    """How the model rates a pairing, most telling first: meeting the targets, running at all,
    the requests per second it serves, then the sooner first token (`best_ranked` compares
    them in that order; folded into one float the last would drown in the first ones)."""
    s = r.scenario
    ok = pf["ok"] & df["ok"]
    meets = ok
    if s.slo_tok_s is not None:
        meets = meets & (dep.per_user_tok_s.value >= s.slo_tok_s)
    if s.ttft_ms is not None:
        meets = meets & (dep.ttft_ms.value <= s.ttft_ms)
    return (_number(meets), _number(ok), floats(dep.throughput_req_s.value), -floats(dep.ttft_ms.value))


def best_ranked(ranks: list[tuple[Any, ...]]) -> Any:
    """Index of the best rank, comparing key by key (a tie goes to the first), per row; a NaN
    key ranks below every number."""
    if not any(is_array(v) for rank in ranks for v in rank):
        keys = [tuple(-np.inf if v != v else float(v) for v in rank) for rank in ranks]
        return max(range(len(ranks)), key=lambda i: (keys[i], -i))
    shape = np.broadcast_shapes(*(np.shape(v) for rank in ranks for v in rank))
    best = np.ones((len(ranks), *shape), dtype=bool)
    for level in range(len(ranks[0])):
        values = np.stack([np.broadcast_to(np.asarray(rank[level], dtype=float), shape) for rank in ranks])
        values = np.where(best, np.nan_to_num(values, nan=-np.inf), -np.inf)
        best &= values == values.max(axis=0)
    return np.argmax(best, axis=0)


def _number(flag: Any) -> Any:
    """A flag as 1.0 / 0.0 (arrays stay arrays; one scenario's bool needs no NumPy)."""
    return floats(flag) if is_array(flag) else float(bool(flag))


def pick(values: list[Any], index: Any) -> Any:
    """Entry `index` of a list of Qs or plain values (row by row when `index` is an array)."""
    if type(values[0]) is Q:
        return gather(values, index)
    return gather_values(values, index)
