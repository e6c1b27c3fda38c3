"""Memory per GPU (`physics/memory.py`) by hand on the toy model and node.

Pinned constants: usable HBM fraction 0.9 (90 of the toy's 100 GB), framework reserve 4 GB,
allgather workspace 1 GB, DeepEP decode buffers 1,000 MiB at the DeepSeek shape. The toy's
bytes (`hand.py`): replicated 25,198,592 B, routed 201,326,592 B, KV 4,096 B per token.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deepep_calc.base.quantity import Tag
from deepep_calc.physics.memory import memory
from deepep_calc.question.scenario import Resolved

from . import hand
from .hand import TOY, TOY_INSTANCE, ep_layout, exact, val

PINNED = {
    "hbm_usable_fraction": 0.9,
    "framework_reserve_gb": 4.0,
    "allgather_buffer_gb": 1.0,
    "deepep_decode_buffer_mib": 1000.0,
}


def resolved(*args: Any, **fields: Any) -> Resolved:
    """The toy scenario under the pinned constants."""
    return hand.resolved(*args, assumptions=PINNED, **fields)


def test_allgather_arm_memory_by_hand() -> None:
    """EP16, 2 sequences on the busiest rank, ISL + OSL = 1,200.
    weights = 25,198,592 + 201,326,592 / 16 = 37,781,504 B = 0.037781504 GB
    KV per sequence = 4,096 × 1,200 = 4,915,200 B; × 2 = 0.0098304 GB
    fixed = weights + 1 GB workspace + 4 GB reserve = 5.037781504 GB; usable 100 × 0.9 = 90 GB
    headroom = 90 − 5.037781504 − 0.0098304 = 84.952388096 GB
    max concurrency = floor(84.962218496 / 0.0049152) = 17,285 per rank × 16 ranks = 276,560
    KV tokens per GPU = floor(84.962218496 / 0.0049152 × 1,200) = 20,742,729."""
    m = memory(resolved(), ep_layout(arm="allgather"), 1000.0, 200.0)
    assert val(m.weights_gb) == exact(0.037781504)
    assert val(m.kv_gb) == exact(0.0098304)
    assert val(m.buffers_gb) == 1.0 and val(m.reserve_gb) == 4.0
    assert val(m.usable_gb) == exact(90.0)
    assert val(m.total_gb) == exact(5.037781504 + 0.0098304)
    assert val(m.headroom_gb) == exact(84.952388096)
    assert bool(m.fits)
    assert val(m.max_concurrency) == 276_560
    assert val(m.kv_tokens) == 20_742_729
    assert m.max_concurrency.unit == "sequences" and m.kv_tokens.unit == "tokens"


def test_deepep_buffers_scale_with_hidden_times_experts() -> None:
    """1,000 MiB = 1.048576 GB at 7168 × 256; the toy's 1024 × 16 is 1/112 of that:
    0.0093622857 GB. Max concurrency floor((90 − 0.037781504 − 0.0093622857 − 4) / 0.0049152)
    = 17,487 per rank × 16 = 279,792."""
    m = memory(resolved(), ep_layout(), 1000.0, 200.0)
    assert val(m.buffers_gb) == exact(1.048576 / 112)
    assert val(m.max_concurrency) == 17_487 * 16


def test_tp_shards_weights_and_kv_heads_and_serves_one_batch() -> None:
    """TP16: every weight over 16 ranks, (25,198,592 + 201,326,592) / 16 = 14,157,824 B;
    KV over min(16, 2 KV heads) = 2: 2,457,600 B per sequence. One batch (not data parallel):
    max concurrency = floor((90 − 0.014157824 − 5) / 0.0024576) = 34,580 × 1 group."""
    lay = ep_layout(arm="tp", replicated_shard=16.0, kv_shard=2.0, data_parallel=False, seqs_per_rank=32.0)
    m = memory(resolved(), lay, 1000.0, 200.0)
    assert val(m.weights_gb) == exact(0.014157824)
    assert val(m.kv_gb) == exact(32 * 0.0024576)
    assert val(m.max_concurrency) == 34_580


def test_uneven_shards_are_not_rounded() -> None:
    """Replicated weights over 5 and KV over 7: 25,198,592 / 5 + 12,582,912 = 17,622,630.4 B;
    4,915,200 / 7 = 702,171.428... B of KV per sequence."""
    m = memory(resolved(), ep_layout(arm="allgather", replicated_shard=5.0, kv_shard=7.0), 1000.0, 200.0)
    assert val(m.weights_gb) == exact(0.0176226304)
    assert val(m.kv_gb) == exact(2 * 4_915_200 / 7 / 1e9)


def test_a_model_without_kv_cache_still_has_a_finite_capacity() -> None:
    """All layers linear attention with no state: 0 B of KV per sequence. The capacity is huge
    but finite (free HBM over a 1e-30 floor), never a division by zero."""
    att = TOY.attention.copy(**{"linear_layers": 4, "linear_state_bytes": 0, "linear_params": 1000})
    with np.errstate(divide="raise", invalid="raise"):
        m = memory(resolved(TOY.copy(**{"attention": att})), ep_layout(arm="allgather"), 1000.0, 200.0)
    assert val(m.kv_gb) == 0.0
    assert np.isfinite(val(m.max_concurrency)) and val(m.max_concurrency) > 1e30


def test_replicas_multiply_the_concurrency_by_their_count() -> None:
    """Two replicas of 8 data-parallel ranks: 17,285-ish sequences per rank × 8 ranks × 2 groups."""
    lay = ep_layout(arm="replica", ranks=8.0, nodes=1.0, groups=2.0, expert_shard=8.0, dp_ranks=8.0)
    m = memory(resolved(), lay, 1000.0, 200.0)
    free = 90 - (25_198_592 + 201_326_592 / 8) / 1e9 - 5
    assert val(m.max_concurrency) == np.floor(free / 0.0049152) * 16


def test_a_node_too_small_does_not_fit_and_holds_no_sequence() -> None:
    """4 GB of HBM: usable 3.6 GB is below the 4 GB reserve alone, so nothing fits and the free
    memory is negative: no sequence, no token."""
    small = TOY_INSTANCE.copy(**{"hbm_gb": 4.0})
    r = resolved()
    r = type(r)(**{**r.__dict__, "instance": small})
    m = memory(r, ep_layout(arm="allgather"), 1000.0, 200.0)
    assert not bool(m.fits)
    assert val(m.headroom_gb) < 0
    assert val(m.max_concurrency) == 0 and val(m.kv_tokens) == 0


def test_fits_exactly_at_usable_and_per_row_in_sweeps() -> None:
    """Sequences per rank [2, 20,000]: the first fits, the second needs 20,000 × 0.0049152 =
    98.3 GB of KV and does not."""
    m = memory(resolved(), ep_layout(arm="allgather", seqs_per_rank=np.array([2.0, 20_000.0])), 1000.0, 200.0)
    assert np.asarray(m.fits).tolist() == [True, False]


def test_unverified_models_give_assumed_weights() -> None:
    m = memory(resolved(TOY.copy(**{"verified": False})), ep_layout(), 1000.0, 200.0)
    assert m.weights_gb.tag is Tag.ASSUMED and m.max_concurrency.tag is Tag.ASSUMED
    v = memory(resolved(), ep_layout(), 1000.0, 200.0)
    assert v.weights_gb.tag is Tag.DERIVED
