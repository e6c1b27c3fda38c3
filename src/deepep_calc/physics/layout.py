"""How an arm places the model on the cluster: group size, shards and sequences per rank."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..base.arrays import ceil, floats, minimum
from ..base.vocabulary import exchange_of
from ..question.scenario import Resolved
from .collectives import CollectiveGroup


@dataclass(frozen=True, eq=False)
class Layout:
    """One arm's placement. Numeric fields may be NumPy arrays (sweeps)."""

    arm: str
    ranks: Any  # GPUs in one serving group (EP group, TP group or one replica)
    nodes: Any  # nodes one group spans
    gpn: int
    groups: Any  # independent groups serving the load (replicas), else 1
    expert_shard: Any  # routed experts are split this many ways
    replicated_shard: Any  # attention / shared / dense weights split this many ways (attention TP)
    kv_shard: Any  # a sequence's KV is split this many ways
    seqs_per_rank: Any  # sequences of the busiest attention (DP) group
    group_tokens: Any  # decode tokens across one serving group in one step (routing population)
    data_parallel: bool  # attention runs data-parallel (each DP group its own sequences)
    dp_ranks: Any = 1.0  # data-parallel attention groups in one serving group
    exchange_split: Any = 1.0  # ranks that share one DP group's tokens for the MoE exchange

    @property
    def group(self) -> CollectiveGroup:
        """The GPUs the group's collectives span."""
        return CollectiveGroup(self.ranks, self.nodes, self.gpn)

    @property
    def exchange(self) -> str:
        """deepep, allgather or tp: what this placement's MoE layers exchange over."""
        return exchange_of(self.arm)


def _kv_shard(r: Resolved, tp: Any) -> Any:
    a = r.model.attention
    return 1.0 if a.kind == "mla" else minimum(tp, float(a.kv_heads))


def layout(r: Resolved, arm: str) -> Layout:
    """Place one arm. `r.max_batch` caps the sequences one DP rank runs; the rest queue.

    DeepEP and allgather run attention data-parallel over every GPU (or over groups of
    `attention_tp` GPUs, which then shard the attention weights and split their tokens for the
    exchange) and shard the routed experts over all of them. TP shards everything over the
    group and runs one batch. A replica is one such DP + EP copy per node.
    """
    s = r.scenario
    conc = floats(s.concurrency)
    nodes = floats(s.nodes)
    gpn = r.gpus_per_node
    world = nodes * gpn
    cap = floats(r.max_batch)
    tp = float(r.attention_tp)
    if arm in ("deepep", "allgather"):
        dp = world / tp
        per_rank = minimum(ceil(conc / dp), cap)
        tokens = minimum(conc, cap * dp)
        return Layout(
            arm, world, nodes, gpn, 1.0, world, tp, _kv_shard(r, tp), per_rank, tokens, True, dp, tp
        )
    if arm == "tp":
        running = minimum(conc, cap)
        kv = _kv_shard(r, world)
        return Layout(arm, world, nodes, gpn, 1.0, world, world, kv, running, running, False, 1.0, 1.0)
    if arm == "replica:tp":
        running = minimum(ceil(conc / nodes), cap)
        kv = _kv_shard(r, float(gpn))
        return Layout(
            arm, float(gpn), 1.0, gpn, nodes, float(gpn), float(gpn), kv, running, running, False, 1.0, 1.0
        )
    if arm in ("replica", "replica:deepep"):
        dp = gpn / min(tp, gpn)
        per_replica = ceil(conc / nodes)
        per_rank = minimum(ceil(per_replica / dp), cap)
        tokens = minimum(per_replica, cap * dp)
        tpr = min(tp, gpn)
        return Layout(
            arm,
            float(gpn),
            1.0,
            gpn,
            nodes,
            float(gpn),
            tpr,
            _kv_shard(r, tpr),
            per_rank,
            tokens,
            True,
            dp,
            tpr,
        )
    raise ValueError(f"unknown arm {arm!r}")
