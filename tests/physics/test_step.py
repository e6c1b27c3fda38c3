"""One decode / prefill step (`physics/step.py`) with hand-made constants on the toy rows.

`hand.step_constants`: eager 10 us per launch + 1,000 us per step, proxy 100 us + 400 us / lanes
per MoE layer; graphs 0 per launch + 500 us per step; floor 2 us per kernel; the kernel
constants of `test_deepep.py` with no latency of leaving the node and free signals, so a
DeepEP pair is its local 2 × 15 us plus the issue path, β 0.5 + 0.25 us per remote selection
at 4 lanes: 30 + 0.75 × T (the kernel's own cases are in test_deepep.py); the collectives of
`test_collectives.py`. Kernel counts pinned: GQA attention 5, MLA 10, MoE block 7, shared
expert 2, dense MLP 3, head 1.
The toy scenario: 2 nodes × 8 GPUs, concurrency 32, ISL 1000, OSL 200, K = 8, QPs 2.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deepep_calc.base.quantity import Tag
from deepep_calc.io.hf_config import resolve_model
from deepep_calc.physics.step import (
    PARTS,
    _combine,
    decode_step,
    exchange_us,
    joining_per_step,
    kernels_per_step,
    prefill_step,
    proxied_host_us,
    proxy_lanes,
)
from deepep_calc.question.scenario import Resolved

from . import hand
from .hand import GPU, TOY, engine, ep_layout, exact, kernel_constants, q, step_constants, val

PINNED = {
    "kernels_attention_gqa": 5.0,
    "kernels_attention_mla": 10.0,
    "kernels_moe_block": 7.0,
    "kernels_shared_expert": 2.0,
    "kernels_dense_mlp": 3.0,
    "kernels_head": 1.0,
    "collective_bytes_per_element": 2.0,
    "hbm_efficiency": 0.5,
    "compute_efficiency": 0.5,
}
C = step_constants(
    kernel=kernel_constants(leaving_dispatch_us=q(0.0), leaving_combine_us=q(0.0), signal_ratio=q(0.0, ""))
)


def resolved(*args: Any, **fields: Any) -> Resolved:
    """The toy scenario under the pinned constants."""
    return hand.resolved(*args, assumptions=PINNED, **fields)


def test_kernels_per_step() -> None:
    """Toy (4 GQA layers, all MoE, no shared expert): 4 × 5 + 4 × 7 + 1 = 49; TP adds two
    all-reduces per layer: 49 + 8 = 57, and so does attention TP. An MLA model with 3 MoE layers
    (one shared expert each) and 1 dense layer: 4 × 10 + 3 × (7 + 2) + 1 × 3 + 1 = 71."""
    assert kernels_per_step(resolved(), "deepep") == 49
    assert kernels_per_step(resolved(), "tp") == 57
    assert kernels_per_step(resolved(attention_tp=2), "allgather") == 57
    ds = resolve_model("deepseek-v3")
    mla = TOY.copy(
        **{
            "attention": ds.attention,
            "moe_layers": 3,
            "shared_experts": 1,
            "shared_intermediate": 256,
            "dense_intermediate": 2048,
        }
    )
    assert kernels_per_step(resolved(mla), "deepep") == 71


def test_proxy_lanes_and_the_proxied_host_cost() -> None:
    """NCCL-GIN-like proxy: lanes = K = 8, so 100 + 400 / 8 = 150 us per MoE layer × 4 = 600 us.
    Nothing on one node, nothing on a GPU-initiated transport, nothing for allgather."""
    e = C.eager
    assert float(proxy_lanes(resolved())) == 8.0
    assert float(proxy_lanes(resolved(transport=GPU))) == 2.0
    assert val(proxied_host_us(resolved(), ep_layout(), e)) == exact(600.0)
    assert val(proxied_host_us(resolved(), ep_layout(nodes=1.0), e)) == 0.0
    assert val(proxied_host_us(resolved(transport=GPU), ep_layout(), e)) == 0.0
    assert val(proxied_host_us(resolved(), ep_layout(arm="allgather"), e)) == 0.0
    two_lanes = resolved(comms=2)
    assert val(proxied_host_us(two_lanes, ep_layout(), e)) == exact(4 * (100 + 400 / 2))
    rows = proxied_host_us(resolved(), ep_layout(nodes=np.array([1.0, 2.0])), e)
    assert np.asarray(rows.value).tolist() == [0.0, 600.0]


def test_requests_joining_per_step() -> None:
    """32 running sequences each end after OSL 200 steps: 32 / 200 = 0.16 join per step;
    a disaggregated deployment has none."""
    assert float(joining_per_step(resolved(), ep_layout())) == exact(0.16)
    assert float(joining_per_step(resolved(disaggregated=True), ep_layout())) == 0.0


def test_exchange_of_each_arm() -> None:
    """4 tokens per rank, 2 nodes.
    deepep: K 8, QPs 2: lanes √8 × √2 = 4 (the reference's), so per layer dispatch 15 + 0.5 × 4 =
      17 and combine 15 + 0.25 × 4 = 16 us; × 4 MoE layers = 132 us.
    allgather: an allgather and a reduce-scatter, 102.4576 us (test_collectives) × 4 layers =
      409.8304 us.
    tp: all-reduce 50.1536 us × 2 per layer × 4 layers = 401.2288 us.
    prefill allgather of 100 tokens: one rank's chunk, 104.096 us × 4 = 416.384 us."""
    r = resolved()
    assert val(exchange_us(r, ep_layout(), 4.0, C)) == exact(132.0)
    assert val(exchange_us(r, ep_layout(arm="allgather"), 4.0, C)) == exact(409.8304)
    assert val(exchange_us(r, ep_layout(arm="tp", data_parallel=False), 4.0, C)) == exact(401.2288)
    assert val(exchange_us(r, ep_layout(arm="allgather"), 100.0, C, prefill=True)) == exact(416.384)


def test_attention_tp_adds_two_intra_node_allreduces_per_layer() -> None:
    """Attention TP 2: each layer all-reduces the group's 2 × 4 = 8 tokens among 2 ranks in one
    node, twice: one NVLink step of 2 us + 2 × 1/2 × 8 × 1024 × 2 B = 16,384 B at 200 GB/s =
    0.08192 us; 2.08192 × 2 × 4 layers = 16.65536 us on top of the 132 us exchange."""
    r = resolved(attention_tp=2)
    assert val(exchange_us(r, ep_layout(exchange_split=2.0), 4.0, C)) == exact(132.0 + 16.65536)
    assert val(exchange_us(r, ep_layout(arm="allgather", exchange_split=2.0), 4.0, C)) == exact(
        409.8304 + 16.65536
    )


def _device(device: float, hbm: float, compute: float) -> dict:
    return {"device": q(device), "hbm": q(hbm), "compute": q(compute)}


def test_eager_step_is_the_longer_path_plus_the_proxy() -> None:
    """GPU path = device 1,000 + 49 kernels × 2 us + exchange 500 + prefill 100 = 1,698 us;
    CPU path = 49 × 10 + 1,000 = 1,490 us; t = max(1,490, 1,698) + proxy 600 = 2,298 us.
    The GPU hides the host entirely: engine part 0. Parts: hbm 1 ms, compute beyond HBM 0,
    kernels 0.098, moe_comm 0.5, prefill 0.1, proxy 0.6 — summing to the step."""
    st = _combine(resolved(), ep_layout(), _device(1000, 1000, 400), q(500.0), 49, C, q(100.0))
    assert val(st.ms) == exact(2.298)
    assert val(st.cpu_us) == exact(1490.0) and val(st.gpu_us) == exact(1698.0)
    p = {k: val(v) for k, v in st.parts_ms.items()}
    assert p == exact(
        {
            "engine": 0.0,
            "hbm": 1.0,
            "compute": 0.0,
            "kernels": 0.098,
            "moe_comm": 0.5,
            "prefill": 0.1,
            "proxy": 0.6,
        }
    )
    assert tuple(st.parts_ms) == PARTS
    assert sum(p.values()) == exact(val(st.ms))


def test_eager_step_bound_by_the_cpu() -> None:
    """50 us per launch: CPU path 49 × 50 + 1,000 = 3,450 us > GPU 1,698 us: t = 3,450 + 600 =
    4,050 us; the engine part is the host time not hidden, 3,450 − 1,698 = 1,752 us. A device
    that is compute-bound (1,000 us of compute over 400 of HBM) shows 0.6 ms beyond the HBM."""
    c = step_constants(eager=engine(50.0, 1000.0, 100.0, 400.0))
    st = _combine(resolved(), ep_layout(), _device(1000, 400, 1000), q(500.0), 49, c, q(100.0))
    assert val(st.ms) == exact(4.05)
    assert val(st.parts_ms["engine"]) == exact(1.752)
    assert val(st.parts_ms["compute"]) == exact(0.6)
    assert val(st.parts_ms["hbm"]) == exact(0.4)


def test_where_the_engine_waits_for_the_proxy() -> None:
    """TensorRT-LLM (`proxy_wait = "host"`): its thread syncs on the proxy, t = max(CPU, GPU) +
    proxy. vLLM (`"gpu"`): only the exchange kernel waits, so the proxy's 600 us join the GPU
    path and hide under a longer CPU path. 50 us per launch: CPU 49 × 50 + 1,000 = 3,450 us;
    GPU 1,698 us; host wait: 3,450 + 600 = 4,050 us; GPU wait: max(3,450, 1,698 + 600) =
    3,450 us, engine part 3,450 − 1,698 − 600 = 1,152 us. With 10 us per launch (CPU 1,490 us)
    the GPU path plus the proxy is the longer: 2,298 us either way."""
    assert resolved().engine.proxy_wait == "host" and resolved(engine="vllm").engine.proxy_wait == "gpu"
    slow = step_constants(eager=engine(50.0, 1000.0, 100.0, 400.0))
    args = (ep_layout(), _device(1000, 400, 1000), q(500.0), 49)
    host = _combine(resolved(), *args, slow, q(100.0))
    gpu = _combine(resolved(engine="vllm"), *args, slow, q(100.0))
    assert val(host.ms) == exact(4.05) and val(gpu.ms) == exact(3.45)
    assert val(gpu.parts_ms["engine"]) == exact(1.152) and val(gpu.parts_ms["proxy"]) == exact(0.6)
    assert sum(val(v) for v in gpu.parts_ms.values()) == exact(3.45)
    fast = [_combine(resolved(engine=e), *args, C, q(100.0)) for e in ("trtllm", "vllm")]
    assert [val(st.ms) for st in fast] == exact([2.298, 2.298])


def test_graph_step_is_host_plus_gpu_without_proxy() -> None:
    """CUDA graphs: t = 500 + 1,698 = 2,198 us; no launches, no proxied host cost; the engine
    part is the whole host cost, 0.5 ms. Without a mixed-in prefill the GPU path is 1,598 us."""
    r = resolved(cuda_graphs=True)
    st = _combine(r, ep_layout(), _device(1000, 1000, 400), q(500.0), 49, C, q(100.0))
    assert val(st.ms) == exact(2.198)
    assert val(st.parts_ms["proxy"]) == 0.0 and val(st.parts_ms["engine"]) == exact(0.5)
    fixed = step_constants(graphs=engine(0.0, 500.0, 100.0, 400.0))  # whatever the graph constants say
    assert (
        val(_combine(r, ep_layout(), _device(1000, 1000, 400), q(500.0), 49, fixed).parts_ms["proxy"]) == 0.0
    )
    bare = _combine(r, ep_layout(), _device(1000, 1000, 400), q(500.0), 49, C)
    assert val(bare.gpu_us) == exact(1598.0) and val(bare.parts_ms["prefill"]) == 0.0


def test_mixed_graph_modes_in_one_sweep() -> None:
    """Rows eager and graphs side by side: [2.298, 2.198] ms."""
    r = resolved().vary(cuda_graphs=[False, True])
    st = _combine(r, ep_layout(), _device(1000, 1000, 400), q(500.0), 49, C, q(100.0))
    assert np.asarray(st.ms.value) == exact([2.298, 2.198])
    assert np.asarray(st.parts_ms["proxy"].value) == exact([0.6, 0.0])


def test_decode_step_parts_by_hand() -> None:
    """The real toy layout: 32 sequences over 16 DP ranks, 2 each, 32 tokens in the group.
    moe_comm: per layer 30 + 0.75 × T us at T = 2 tokens (local 15 + 15, β 0.5 + 0.25 at 4 lanes):
      4 × 31.5 = 126 us. proxy: 4 × (100 + 400 / 8) = 600 us. kernels: 49 × 2 = 98 us.
    prefill: 0.16 requests join per step (32 / 200), each with 1,000 tokens:
      compute beyond the weight read = 65.830912 − 17.866752 = 47.96416 us
      (2 × 11,575,296 × 1000 + 2 × 12,582,912 × 1000 / 16 + 2 × 4 × 8 × 128 × 1000² FLOP at
      500 TFLOP/s; 35,733,504 B at 2,000 GB/s), × 0.16 = 7.6742656 us; and its tokens,
      0.16 × 1000 / 16 = 10 more per rank, through the exchange: 4 × 0.75 × 10 = 30 us.
      Total 37.6742656 us. CPU path 49 × 10 + 1,000 = 1,490 us, longer than this GPU path, so
      the eager step is 1,490 + 600 = 2,090 us with or without the mixed-in prefill."""
    st = decode_step(resolved(), "deepep", C)
    assert val(st.parts_ms["moe_comm"]) == exact(0.126)
    assert val(st.parts_ms["proxy"]) == exact(0.6)
    assert val(st.parts_ms["kernels"]) == exact(0.098)
    assert val(st.parts_ms["prefill"]) == exact(0.0376742656)
    assert val(st.cpu_us) == exact(1490.0)
    assert sum(val(v) for v in st.parts_ms.values()) == exact(val(st.ms))
    dis = decode_step(resolved(disaggregated=True), "deepep", C)
    assert val(dis.parts_ms["prefill"]) == 0.0
    assert val(st.ms) == exact(2.09) and val(dis.ms) == exact(2.09)
    assert val(st.gpu_us) - val(dis.gpu_us) == exact(37.6742656)


def test_short_prompts_add_no_compute_beyond_the_weight_read() -> None:
    """ISL 100: a joining prefill's 5.1085 us of tensor time is below its 17.87 us weight read,
    so it adds no compute; its 0.16 × 100 / 16 = 1 token per rank adds 4 × 0.75 × 1 = 3 us of
    exchange: 0.003 ms."""
    st = decode_step(resolved(isl=100), "deepep", C)
    assert val(st.parts_ms["prefill"]) == exact(0.003)


def test_joining_tokens_are_not_rounded() -> None:
    """OSL 300: 32 / 300 requests join per step. Compute 47.96416 × 32/300 = 5.11617706 us;
    tokens per rank 32/300 × 1000 / 16 = 6.667, exchange 4 × 0.75 × 6.667 = 20 us."""
    st = decode_step(resolved(osl=300), "deepep", C)
    assert val(st.parts_ms["prefill"]) == exact((47.96416 * 32 / 300 + 20.0) / 1000)


def test_decode_with_attention_tp() -> None:
    """Attention TP 2: 8 DP groups of 2 GPUs, 4 sequences each, 2 tokens per rank. A joining
    prefill's tokens spread over 8 groups × 2 ranks: 2 + 0.16 × 1000 / 16 = 12 per rank.
    Extra exchange: kernels 4 × 0.75 × 10 = 30 us; each attention all-reduce carries 2 × 12 = 24
    instead of 2 × 2 = 4 tokens, 2 B × 2·1/2 × (24 − 4) × 1024 = 40,960 B more at 200 GB/s =
    0.2048 us, × 2 per layer × 4 layers = 1.6384 us.
    Compute beyond the read: FLOPs (23,150,592,000 + 8,192,000,000) / 2 + 1,572,864,000 =
    17,244,160,000 = 34.48832 us, read (23,150,592 / 2 + 12,582,912) B = 12.079104 us: 22.409216
    × 0.16 = 3.58547456 us. Prefill part 35.22387456 us."""
    st = decode_step(resolved(attention_tp=2), "deepep", C)
    assert val(st.parts_ms["prefill"]) == exact(0.03522387456)


def test_prefill_step_with_attention_tp_splits_the_chunk() -> None:
    """ISL 1001 over attention TP 2: 500.5 tokens per rank, 500.5 × 0.75 = 375.375 remote
    copies: dispatch 15 + 187.6875, combine 15 + 93.84375 = 311.53125 us per layer, × 4 =
    1,246.125 us; each attention all-reduce of the 1001 tokens moves 2 B × 2·1/2 × 1001 × 1024 =
    2,050,048 B at 200 GB/s = 10.25024 us after one 2 us NVLink step, × 2 × 4 = 98.00192 us.
    moe_comm 1,344.12692 us."""
    st = prefill_step(resolved(attention_tp=2, isl=1001), "deepep", C)
    assert val(st.parts_ms["moe_comm"]) == exact(1.34412692)


def test_prefill_step_uses_the_high_throughput_traffic() -> None:
    """One request's 1,000 tokens on 2 nodes, top-2: 1,000 × (1 − (1/2)²) = 750 remote copies.
    Issue-bound at 4 lanes: dispatch 15 + 0.5 × 750 = 390 us, combine 15 + 0.25 × 750 = 202.5 us
    (wires: 750 × 1,072 B and 750 × 2,048 B at 8√8 = 22.6 GB/s are 35.5 and 67.9 us).
    × 4 MoE layers = 2,370 us. No mixed-in prefill in a prefill step."""
    st = prefill_step(resolved(), "deepep", C)
    assert val(st.parts_ms["moe_comm"]) == exact(2.37)
    assert val(st.parts_ms["prefill"]) == 0.0
    assert st.ms.unit == "ms" and st.ms.tag is Tag.ASSUMED


def test_memo_shares_the_device_time_between_deepep_and_allgather() -> None:
    """DeepEP and allgather place the model alike, so one evaluation computes their HBM time
    once: the memo holds one decode entry for both."""
    memo: dict = {}
    a = decode_step(resolved(), "deepep", C, memo)
    b = decode_step(resolved(), "allgather", C, memo)
    assert [k for k in memo if k[0] == "decode"] == [("decode", "ep-dp")]
    assert val(a.parts_ms["hbm"]) == val(b.parts_ms["hbm"])
