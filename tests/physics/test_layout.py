"""How each arm places the model (`physics/layout.py`), by hand on the toy rows.

The toy scenario (`hand.resolved`): 2 nodes × 8 GPUs = 16, 32 clients, a batch of 256 per DP
rank; the toy model's attention is GQA with 2 KV heads, so KV shards at most 2 ways.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from deepep_calc.io.hf_config import resolve_model
from deepep_calc.physics.collectives import CollectiveGroup
from deepep_calc.physics.layout import Layout, exchange_of, layout

from .hand import TOY, resolved


def fields(lay: Layout) -> dict[str, Any]:
    """The placement's numbers (arrays as lists), for one comparison per arm."""
    out = {}
    for name in (
        "ranks",
        "nodes",
        "gpn",
        "groups",
        "expert_shard",
        "replicated_shard",
        "kv_shard",
        "seqs_per_rank",
        "group_tokens",
        "data_parallel",
        "dp_ranks",
        "exchange_split",
    ):
        value = getattr(lay, name)
        out[name] = np.asarray(value).tolist() if isinstance(value, np.ndarray) else value
    return out


def test_deepep_and_allgather_run_data_parallel_over_every_gpu() -> None:
    """16 DP ranks, experts over all 16, attention weights whole (1), ceil(32 / 16) = 2
    sequences on the busiest rank, all 32 clients' tokens in the one group."""
    want = {
        "ranks": 16.0,
        "nodes": 2.0,
        "gpn": 8,
        "groups": 1.0,
        "expert_shard": 16.0,
        "replicated_shard": 1.0,
        "kv_shard": 1.0,
        "seqs_per_rank": 2.0,
        "group_tokens": 32.0,
        "data_parallel": True,
        "dp_ranks": 16.0,
        "exchange_split": 1.0,
    }
    for arm in ("deepep", "allgather"):
        lay = layout(resolved(), arm)
        assert lay.arm == arm and fields(lay) == want


def test_the_busiest_rank_rounds_up_and_the_batch_caps_it() -> None:
    """33 clients over 16 ranks: ceil(33 / 16) = 3 on the busiest. A batch of 1 per rank: 1 each,
    and only 1 × 16 = 16 of the 32 clients' tokens run (the rest queue)."""
    assert layout(resolved(concurrency=33), "deepep").seqs_per_rank == 3.0
    capped = layout(resolved(max_batch=1), "deepep")
    assert (capped.seqs_per_rank, capped.group_tokens) == (1.0, 16.0)


def test_attention_tp_groups_the_dp_ranks() -> None:
    """Attention TP 2: 16 / 2 = 8 DP groups, ceil(32 / 8) = 4 sequences each; attention weights
    over 2, KV over min(2, 2 KV heads) = 2, the group's 2 ranks split its tokens for the exchange.
    TP 4 shards the weights 4 ways but the KV still only 2 (there are 2 KV heads)."""
    tp2 = layout(resolved(attention_tp=2), "deepep")
    assert (tp2.dp_ranks, tp2.seqs_per_rank, tp2.group_tokens) == (8.0, 4.0, 32.0)
    assert (tp2.replicated_shard, tp2.kv_shard, tp2.exchange_split) == (2.0, 2.0, 2.0)
    tp4 = layout(resolved(attention_tp=4), "allgather")
    assert (tp4.replicated_shard, tp4.kv_shard, tp4.dp_ranks) == (4.0, 2.0, 4.0)


def test_mla_kv_is_never_sharded() -> None:
    """MLA keeps one latent per token, which every TP rank holds: KV shard 1 at attention TP 2,
    and under full TP over 16 GPUs."""
    mla = TOY.copy(**{"attention": resolve_model("deepseek-v3").attention})
    assert layout(resolved(mla, attention_tp=2), "deepep").kv_shard == 1.0
    assert layout(resolved(mla), "tp").kv_shard == 1.0


def test_tp_runs_one_batch_over_the_whole_group() -> None:
    """TP16: every weight over 16, KV over min(16, 2) = 2, one batch of min(32, 256) = 32, not
    data parallel; a batch limit of 20 runs 20."""
    want = {
        "ranks": 16.0,
        "nodes": 2.0,
        "gpn": 8,
        "groups": 1.0,
        "expert_shard": 16.0,
        "replicated_shard": 16.0,
        "kv_shard": 2.0,
        "seqs_per_rank": 32.0,
        "group_tokens": 32.0,
        "data_parallel": False,
        "dp_ranks": 1.0,
        "exchange_split": 1.0,
    }
    assert fields(layout(resolved(), "tp")) == want
    assert layout(resolved(max_batch=20), "tp").group_tokens == 20.0


def test_a_tp_replica_is_one_node_per_copy() -> None:
    """Two copies of 8 GPUs, each serving ceil(32 / 2) = 16 as one TP8 batch; KV over
    min(8, 2) = 2."""
    want = {
        "ranks": 8.0,
        "nodes": 1.0,
        "gpn": 8,
        "groups": 2.0,
        "expert_shard": 8.0,
        "replicated_shard": 8.0,
        "kv_shard": 2.0,
        "seqs_per_rank": 16.0,
        "group_tokens": 16.0,
        "data_parallel": False,
        "dp_ranks": 1.0,
        "exchange_split": 1.0,
    }
    assert fields(layout(resolved(), "replica:tp")) == want


def test_a_dp_replica_is_dp_and_ep_inside_each_node() -> None:
    """Two copies of 8 DP ranks, 16 clients each: ceil(16 / 8) = 2 on the busiest rank, 16
    tokens per copy, experts over 8. `replica:deepep` places the model the same way."""
    want = {
        "ranks": 8.0,
        "nodes": 1.0,
        "gpn": 8,
        "groups": 2.0,
        "expert_shard": 8.0,
        "replicated_shard": 1.0,
        "kv_shard": 1.0,
        "seqs_per_rank": 2.0,
        "group_tokens": 16.0,
        "data_parallel": True,
        "dp_ranks": 8.0,
        "exchange_split": 1.0,
    }
    assert fields(layout(resolved(), "replica")) == want
    assert fields(layout(resolved(), "replica:deepep")) == want


def test_a_replicas_attention_tp_never_exceeds_its_node() -> None:
    """Attention TP 16 on 8-GPU nodes: a replica takes min(16, 8) = 8, one DP group of the
    whole node running its 16 clients (the batch of 256 does not bind)."""
    lay = layout(resolved(attention_tp=16), "replica")
    assert (lay.replicated_shard, lay.dp_ranks, lay.exchange_split) == (8.0, 1.0, 8.0)
    assert (lay.seqs_per_rank, lay.kv_shard) == (16.0, 2.0)


def test_rows_of_a_sweep_are_placed_one_by_one() -> None:
    """Concurrency [16, 48, 4096] with a batch of 64: per rank ceil(c / 16) capped at 64 =
    [1, 3, 64]; tokens min(c, 64 × 16 = 1,024) = [16, 48, 1024]."""
    r = resolved(max_batch=64).vary(concurrency=np.array([16, 48, 4096]))
    lay = layout(r, "deepep")
    assert np.asarray(lay.seqs_per_rank).tolist() == [1.0, 3.0, 64.0]
    assert np.asarray(lay.group_tokens).tolist() == [16.0, 48.0, 1024.0]


def test_the_group_and_the_exchange_of_each_arm() -> None:
    """The collectives span the group's ranks and nodes; the exchange is the arm's, a replica's
    its layout's (DP replica: allgather)."""
    assert layout(resolved(), "deepep").group == CollectiveGroup(16.0, 2.0, 8)
    assert layout(resolved(), "replica:tp").group == CollectiveGroup(8.0, 1.0, 8)
    exchanges = {arm: layout(resolved(), arm).exchange for arm in ("deepep", "allgather", "tp", "replica")}
    assert exchanges == {"deepep": "deepep", "allgather": "allgather", "tp": "tp", "replica": "allgather"}
    assert layout(resolved(), "replica:deepep").exchange == "deepep"


def test_the_exchange_of_each_arm_and_replica_layout() -> None:
    arms = ("deepep", "allgather", "tp", "replica", "replica:deepep", "replica:tp")
    assert [exchange_of(a) for a in arms] == ["deepep", "allgather", "tp", "allgather", "deepep", "tp"]


def test_an_unknown_arm_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown arm 'moe'"):
        layout(resolved(), "moe")
