"""What a disaggregated evaluation returns: each side as chosen, and the deployment's figures.

Plain records with their JSON (`Result.to_json()["disaggregated"]`); the numbers are made by
`estimate/disagg.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..base.arrays import is_array, np
from ..base.quantity import Q
from ..catalog.kv_transports import KvTransport
from ..physics import disagg as phys
from ..question.disagg import DisaggSpec, Side
from .disagg_sides import plain


@dataclass(eq=False)
class SideResult:
    """One side as chosen: its arm (row by row in a sweep), figures and memory."""

    role: str
    side: Side
    arms: tuple[str, ...]  # the candidates, in rating order of `ratings`
    index: Any  # which candidate was chosen (an array in a sweep)
    ratings: list[Q]  # requests / s each candidate serves on this side at this load
    feasible_each: list[Any]
    figures: dict[str, Q]  # the chosen candidate's
    memory_gb_per_gpu: Q
    fits: Any
    splits: Any
    holders: Any
    kv_shard: Any
    why_not: str = ""

    @property
    def arm(self) -> Any:
        if is_array(self.index):
            return np.asarray(self.arms, dtype=object)[self.index]
        return self.arms[int(self.index)]

    @property
    def nodes(self) -> int:
        return self.side.nodes

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": self.side.nodes,
            "arm": self.arm,
            "transport": self.side.transport.name,
            "cuda_graphs": self.side.cuda_graphs,
            "chosen": "given" if self.side.arm_given else "the model's best for this side",
            "ratings_req_s": {a: q.to_json() for a, q in zip(self.arms, self.ratings, strict=True)},
            "feasible_arms": [a for a, ok in zip(self.arms, self.feasible_each, strict=True) if bool(ok)],
            **{k: q.to_json() for k, q in self.figures.items()},
            "memory_gb_per_gpu": self.memory_gb_per_gpu.to_json(),
            "fits_memory": bool(self.fits),
            "splits": bool(self.splits),
            "why_not": self.why_not,
        }


@dataclass(eq=False)
class DisaggResult:
    """A disaggregated deployment: both sides, the KV transfer, the figures of the whole."""

    spec: DisaggSpec
    prefill: SideResult
    decode: SideResult
    kv: KvTransport
    kv_bytes_per_request: Q
    block_bytes: Q
    node_pair_gb_s: Q
    transfer_ms: Q
    exposed_ms: Q
    stream_units: Any
    link_capacity_req_s: Q
    deployment: phys.Deployment
    ttft_ms: Q
    tpot_ms: Q
    per_user_tok_s: Q
    aggregate_tok_s: Q
    usd_per_mtok: Q
    memory_gb_per_gpu: Q  # the larger side's
    balance: Q
    feasible: Any
    why_not: str
    inside_references: bool
    evidence_note: str
    meets_slo: Any = None
    meets_ttft: Any = None
    tcp_fallback: dict[str, Q] = field(default_factory=dict)  # the same deployment over TCP
    in_flight_tokens: Q | None = None
    load_limit: Any = None  # catalog LoadLimit this load reaches, or None
    load: dict[str, Any] = field(default_factory=dict)  # concurrency, ISL, OSL as evaluated

    @property
    def label(self) -> str:
        return self.spec.label

    @property
    def nodes(self) -> int:
        return self.spec.nodes

    @property
    def bottleneck(self) -> Any:
        lim = self.deployment.limit
        if is_array(lim):
            return np.asarray(phys.LIMITS, dtype=object)[lim]
        return phys.LIMITS[int(lim)]

    @property
    def ttft_parts_ms(self) -> dict[str, Q]:
        d = self.deployment
        return {
            "queue": d.queue_ms,
            "prefill": self.prefill.figures["prefill_ms"],
            "transfer": self.exposed_ms,
            "first_decode": self.tpot_ms_plain,
        }

    @property
    def tpot_ms_plain(self) -> Q:
        return plain(self.tpot_ms)

    def idle(self) -> tuple[str, Q]:
        """The side that waits on the other, and the share of its capacity left unused: the
        prefill side unless it sets the throughput (a decode side steps as long as any sequence
        runs; what it leaves unused is room in its batch)."""
        busy = self.deployment.busy
        limit = self.bottleneck
        side = (
            "decode"
            if (limit if isinstance(limit, str) else str(np.asarray(limit).reshape(-1)[0])) == "prefill"
            else "prefill"
        )
        b = busy[side]
        return side, Q(1.0 - b.value, "1", b.tag, f"1 - {b.source}")

    def to_json(self) -> dict[str, Any]:
        d = self.deployment
        idle_side, idle = self.idle()
        return {
            **{k: plain_number(v) for k, v in self.load.items()},
            "layout": self.label,
            "prefill_nodes": self.spec.prefill.nodes,
            "decode_nodes": self.spec.decode.nodes,
            "nodes": self.nodes,
            "kv_transport": self.kv.name,
            "kv_transport_label": self.kv.label,
            "kv_rdma": self.kv.rdma,
            "kv_warning": self.kv.warning,
            "prefill": self.prefill.to_json(),
            "decode": self.decode.to_json(),
            "kv_bytes_per_request": self.kv_bytes_per_request.to_json(),
            "kv_block_bytes": self.block_bytes.to_json(),
            "kv_node_pair_gb_s": self.node_pair_gb_s.to_json(),
            "kv_transfer_ms": self.transfer_ms.to_json(),
            "kv_transfer_exposed_ms": self.exposed_ms.to_json(),
            "kv_stream": self.spec.engine_kv.stream,
            "kv_stream_source": self.spec.engine_kv.stream_source,
            "ttft_ms": self.ttft_ms.to_json(),
            "ttft_parts_ms": {k: v.to_json() for k, v in self.ttft_parts_ms.items()},
            "tpot_ms": self.tpot_ms.to_json(),
            "per_user_tok_s": self.per_user_tok_s.to_json(),
            "aggregate_tok_s": self.aggregate_tok_s.to_json(),
            "usd_per_mtok": self.usd_per_mtok.to_json(),
            "memory_gb_per_gpu": self.memory_gb_per_gpu.to_json(),
            "throughput_req_s": d.throughput_req_s.to_json(),
            "capacity_req_s": {
                "prefill": self.prefill.figures["capacity_req_s"].to_json(),
                "decode": self.decode.figures["capacity_req_s"].to_json(),
                "transfer": self.link_capacity_req_s.to_json(),
            },
            "busy": {k: v.to_json() for k, v in d.busy.items()},
            "bottleneck": self.bottleneck,
            "idle_side": idle_side,
            "idle_fraction": idle.to_json(),
            "balanced_prefill_per_decode": self.balance.to_json(),
            "feasible": bool(self.feasible),
            "why_not": self.why_not,
            "meets_slo": None if self.meets_slo is None else bool(self.meets_slo),
            "meets_ttft": None if self.meets_ttft is None else bool(self.meets_ttft),
            "inside_references": self.inside_references,
            "coverage": self.evidence_note,  # the JSON key is the contract's
            "tcp_fallback": {k: v.to_json() for k, v in self.tcp_fallback.items()},
            "in_flight_tokens": None if self.in_flight_tokens is None else self.in_flight_tokens.to_json(),
            "load_limit": None if self.load_limit is None else self.load_limit.source,
        }


def plain_number(v: Any) -> Any:
    if is_array(v):
        return np.asarray(v).tolist()
    return int(v) if float(v).is_integer() else float(v)
