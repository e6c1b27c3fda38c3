"""How an arm places the model on the cluster: group size, shards and sequences per rank."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..scenario import Resolved

ARMS = ("deepep", "allgather", "tp", "replica")


@dataclass(frozen=True)
class Layout:
    """One arm's placement. Numeric fields may be NumPy arrays (sweeps)."""

    arm: str
    ranks: Any  # GPUs in one serving group (EP group, TP group or one replica)
    nodes: Any  # nodes one group spans
    gpn: int
    groups: Any  # independent groups serving the load (replicas), else 1
    expert_shard: Any  # routed experts are split this many ways
    replicated_shard: Any  # attention / shared / dense weights split this many ways
    kv_shard: Any  # a sequence's KV is split this many ways
    seqs_per_rank: Any  # sequences on the busiest rank
    group_tokens: Any  # decode tokens across the group in one step (routing population)
    data_parallel: bool  # attention runs data-parallel (each rank its own sequences)


def layout(r: Resolved, arm: str, concurrency: Any | None = None) -> Layout:
    s, m = r.scenario, r.model
    conc = np.asarray(s.concurrency if concurrency is None else concurrency, dtype=float)
    nodes = np.asarray(s.nodes, dtype=float)
    gpn = r.gpus_per_node
    world = nodes * gpn
    cap = float(r.engine.max_batch_per_rank)  # the engine runs at most this many per DP rank
    if arm in ("deepep", "allgather"):
        per_rank = np.minimum(np.ceil(conc / world), cap)
        return Layout(
            arm, world, nodes, gpn, 1.0, world, 1.0, 1.0, per_rank, np.minimum(conc, cap * world), True
        )
    if arm == "tp":
        a = m.attention
        kv_shard = 1.0 if a.kind == "mla" else np.minimum(world, a.kv_heads)
        running = np.minimum(conc, cap)
        return Layout(arm, world, nodes, gpn, 1.0, world, world, kv_shard, running, running, False)
    if arm == "replica":
        per_replica = np.ceil(conc / nodes)
        per_rank = np.minimum(np.ceil(per_replica / gpn), cap)
        return Layout(
            arm,
            float(gpn),
            1.0,
            gpn,
            nodes,
            float(gpn),
            1.0,
            1.0,
            per_rank,
            np.minimum(per_replica, cap * gpn),
            True,
        )
    raise ValueError(f"unknown arm {arm!r}")
