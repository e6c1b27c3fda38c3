"""Moving a request's KV cache from prefill to decode (`physics/kv_transfer.py`), by hand.

The toy model's KV is 1,024 B per token and layer (GQA: 2 × 2 KV heads × 128 × 2 B), 4,096 B
per token over its 4 layers (`hand.py`). The toy node's line rate is 16 × 200 Gb/s = 3,200
Gb/s = 400 GB/s. The toy KV transport's curve (`CURVE`): 2 GB/s at 1 kB blocks, 32 at 100 kB,
64 at 10 MB (the last point assumed), measured at 3,200 Gb/s per node; between two points
log-log, so the geometric mean at the middle (in log) of two: 8 GB/s at 10 kB, 32√2 at 1 MB.

Then the same formulas on catalog rows: the KV bytes of MLA, GQA, sliding-window and
linear-attention presets worked from their configs (and carried unchanged into a deployment's
figures), and the shipped KV transports' curves on p5en: their points, no software path faster
than RDMA at any block, a transfer that shortens as its blocks grow.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from deepep_calc.base.quantity import Q, Tag
from deepep_calc.catalog.hardware import get_instance
from deepep_calc.catalog.kv_transports import CurvePoint, KvTransport, get_kv_transport, load_kv_transports
from deepep_calc.io.hf_config import resolve_model
from deepep_calc.physics import kv_transfer as kv
from estimate.shared import disagg

from .hand import TOY, TOY_INSTANCE, exact, q, val

CURVE = [
    CurvePoint(block_bytes=1_000, gb_s=2.0, tag="measured", source="hand 1 kB"),
    CurvePoint(block_bytes=100_000, gb_s=32.0, tag="measured", source="hand 100 kB"),
    CurvePoint(block_bytes=10_000_000, gb_s=64.0, tag="assumed", source="hand 10 MB"),
]


def transport(**changes: Any) -> KvTransport:
    """An RDMA KV transport over the toy curve, measured at the toy node's 3,200 Gb/s."""
    base = {
        "name": "toy-kv",
        "rdma": True,
        "reference_gbit_per_node": 3200.0,
        "small_blocks": "latency-bound",
        "point": CURVE,
        "curve_source": "hand curve",
    }
    return get_kv_transport("nixl-libfabric").copy(**{**base, **changes})


def block(nbytes: Any, tag: str = "measured") -> Q:
    return Q(nbytes, "B", Tag.parse(tag), "hand block")


def test_kv_bytes_per_request() -> None:
    """4,096 B per token × ISL 1,000 = 4,096,000 B; per row over ISLs [1,000, 250]; an
    unverified model's figure is assumed."""
    r = kv.kv_bytes_per_request(TOY, 1000)
    assert val(r) == 4_096_000.0 and r.unit == "B" and r.tag is Tag.DERIVED
    assert np.asarray(kv.kv_bytes_per_request(TOY, np.array([1000.0, 250.0])).value).tolist() == [
        4_096_000.0,
        1_024_000.0,
    ]
    assert kv.kv_bytes_per_request(TOY.copy(**{"verified": False}), 1000).tag is Tag.ASSUMED


def test_one_transfer_is_one_block_of_one_layer_of_one_shard() -> None:
    """A block of 32 tokens × 1,024 B per token and layer = 32,768 B; KV sharded 2 ways:
    16,384 B. The block size is the engine's (assumed): so is the transfer's."""
    b = kv.block_bytes(TOY, Q.assumed(32.0, "tokens", "engine block"), 1)
    assert val(b) == 32_768.0 and b.unit == "B" and b.tag is Tag.ASSUMED
    assert val(kv.block_bytes(TOY, q(32.0, "tokens"), 2.0)) == 16_384.0


def test_the_curve_between_below_and_above_its_points() -> None:
    """Log-log between points: 8 GB/s at 10 kB, 32√2 at 1 MB; at a point, its figure; above the
    last, flat at 64; below the first, in proportion to the block (latency-bound): 250 B gets
    2 × 250 / 1,000 = 0.5 GB/s, or stays at 2 on a flat curve. Rows of an array alike."""
    points = [(float(p.block_bytes), p.gb_s) for p in CURVE]
    xs = [250.0, 1_000.0, 10_000.0, 100_000.0, 1_000_000.0, 1e8]
    want = [0.5, 2.0, 8.0, 32.0, 32.0 * math.sqrt(2.0), 64.0]
    assert [kv._interpolate(points, x) for x in xs] == exact(want)
    assert np.asarray(kv._interpolate(points, np.array(xs))).tolist() == exact(want)
    assert kv._interpolate(points, 250.0, flat_below=True) == 2.0
    assert np.asarray(
        kv._interpolate(points, np.array([250.0, 10_000.0]), flat_below=True)
    ).tolist() == exact([2.0, 8.0])


def test_a_one_point_curve_is_latency_bound_below_and_flat_above() -> None:
    """One point, 9.5 GB/s at 65,536 B: half the block, half the bandwidth (4.75); a larger block
    no more than 9.5; a flat curve 9.5 at any block."""
    one = [(65_536.0, 9.5)]
    assert kv._interpolate(one, 32_768.0) == 4.75
    assert kv._interpolate(one, 1e6) == 9.5
    assert kv._interpolate(one, 32_768.0, flat_below=True) == 9.5


def test_node_pair_bandwidth_and_its_tag() -> None:
    """At 10 kB: 8 GB/s, derived (read off two measured points); at 1 MB: 32√2, assumed (the
    10 MB point is); never stronger than the block's own tag."""
    t = transport()
    at10k = kv.node_pair_gb_s(t, block(10_000.0), TOY_INSTANCE)
    assert val(at10k) == exact(8.0) and at10k.unit == "GB/s" and at10k.tag is Tag.DERIVED
    at1m = kv.node_pair_gb_s(t, block(1_000_000.0), TOY_INSTANCE)
    assert val(at1m) == exact(32.0 * math.sqrt(2.0)) and at1m.tag is Tag.ASSUMED
    assert kv.node_pair_gb_s(t, block(10_000.0, "assumed"), TOY_INSTANCE).tag is Tag.ASSUMED
    rows = kv.node_pair_gb_s(t, block(np.array([10_000.0, 50_000.0])), TOY_INSTANCE)
    assert rows.tag is Tag.DERIVED  # every row rests on the two measured points
    wider = kv.node_pair_gb_s(t, block(np.array([10_000.0, 1_000_000.0])), TOY_INSTANCE)
    assert wider.tag is Tag.ASSUMED  # one row rests on the assumed point


def test_an_rdma_curve_scales_with_the_line_rate_and_stops_at_it() -> None:
    """Measured at 1,600 Gb/s per node, on the toy's 3,200: × 2 (assumed to scale), 16 GB/s at
    10 kB. A software path does not scale. Nothing exceeds the node's 400 GB/s line rate: a
    curve at 1,000 GB/s gives 400."""
    scaled = kv.node_pair_gb_s(transport(reference_gbit_per_node=1600.0), block(10_000.0), TOY_INSTANCE)
    assert val(scaled) == exact(16.0) and scaled.tag is Tag.ASSUMED
    assert "x 2 for toy-node's 3200 Gb/s per node" in scaled.source
    software = transport(reference_gbit_per_node=1600.0, rdma=False)
    assert val(kv.node_pair_gb_s(software, block(10_000.0), TOY_INSTANCE)) == exact(8.0)
    fast = transport(point=[CurvePoint(block_bytes=1_000, gb_s=1000.0, tag="measured", source="x")])
    assert val(kv.node_pair_gb_s(fast, block(1_000.0), TOY_INSTANCE)) == 400.0
    assert kv.line_rate_gb_s(TOY_INSTANCE) == 400.0


def test_transfer_time_over_the_gpu_pairs() -> None:
    """4,096,000 B × 2 copies over 4 GPU pairs = 0.002048 GB each, at 400 / 8 = 50 GB/s per
    GPU pair: 0.002048 / 50 × 1,000 = 0.04096 ms."""
    request = Q.derived(4_096_000.0, "B", "hand")
    t = kv.transfer_ms(request, 2.0, 4.0, q(400.0, "GB/s"), 8)
    assert val(t) == exact(0.04096) and t.unit == "ms"


def test_copies_and_streaming_units() -> None:
    """8 decode ranks holding a sequence sharded 2 ways: 4 full copies. Streaming per layer: one
    piece per layer; per chunk of 512: ceil(1,000 / 512) = 2 pieces, at least 1 for a short
    prompt; after the prefill: 1."""
    assert kv.copies(8, 2) == 4.0
    assert kv.streaming_units("per-layer", 61, 1000, 512) == 61.0
    assert kv.streaming_units("per-chunk", 61, 1000, 512) == 2.0
    assert kv.streaming_units("per-chunk", 61, 100, 512) == 1.0
    assert kv.streaming_units("after-prefill", 61, 1000, 512) == 1.0


def test_the_exposed_part_of_a_streamed_transfer() -> None:
    """Transfer 10 ms in 4 pieces behind a 40 ms prefill: the last piece, 2.5 ms, is all the
    first token waits for (the rest, 10 − 40 × 3/4 < 0, hides). Behind a 4 ms prefill the
    pieces outrun it: 10 − 4 × 3/4 = 7 ms. In one piece the whole transfer: 10 ms."""
    transfer = q(10.0, "ms")
    assert val(kv.exposed_ms(transfer, q(40.0, "ms"), 4.0)) == 2.5
    assert val(kv.exposed_ms(transfer, q(4.0, "ms"), 4.0)) == exact(7.0)
    whole = kv.exposed_ms(transfer, q(40.0, "ms"), 1.0)
    assert val(whole) == 10.0 and "no overlap" in whole.source
    rows = kv.exposed_ms(transfer, q(40.0, "ms"), np.array([1.0, 4.0]))
    assert np.asarray(rows.value).tolist() == [10.0, 2.5]


def test_link_capacity_and_tokens_in_flight() -> None:
    """2 copies of 4,096,000 B = 0.008192 GB per request over 2 node pairs at 400 GB/s: 800 /
    0.008192 = 97,656.25 req/s. 32 clients with 1,000-token prompts: 32,000 tokens in flight."""
    cap = kv.link_capacity_req_s(Q.derived(4_096_000.0, "B", "hand"), 2.0, q(400.0, "GB/s"), 2)
    assert val(cap) == exact(97_656.25) and cap.unit == "req/s"
    assert kv.tokens_in_flight(1000, 32) == 32_000.0


# The catalog's presets and KV transports --------------------------------------------------------

MIB = 1 << 20


@pytest.mark.parametrize("isl", [1024, 8192])
def test_kv_bytes_deepseek_v3_mla(isl):
    per_token = (512 + 64) * 61 * 2  # (kv_lora + rope) x layers x BF16
    assert per_token == 70_272
    q = kv.kv_bytes_per_request(resolve_model("deepseek-v3"), isl)
    assert q.value == per_token * isl and q.unit == "B"
    d = disagg(model="deepseek-v3", prefill_nodes=1, decode_nodes=1, isl=isl, osl=256, concurrency=8)
    assert d.kv_bytes_per_request.value == per_token * isl


@pytest.mark.parametrize("isl", [1024, 8192])
def test_kv_bytes_qwen3_235b_gqa(isl):
    per_token = 2 * 4 * 128 * 94 * 2  # 2 x kv_heads x head_dim x layers x BF16
    assert per_token == 192_512
    for name in ("qwen3-235b-a22b", "qwen3-235b-a22b-fp8"):
        assert kv.kv_bytes_per_request(resolve_model(name), isl).value == per_token * isl


def test_kv_bytes_follow_windows_and_linear_state():
    """Sliding windows cap a layer's KV; linear-attention layers hold a state, not a history."""
    oss = resolve_model("gpt-oss-120b")
    short, long = (kv.kv_bytes_per_request(oss, n).value for n in (64, 8192))
    a = oss.attention
    per = 2 * a.kv_heads * a.head_dim * 2
    full = oss.layers - a.sliding_layers - a.linear_layers
    assert long == per * (full * 8192 + a.sliding_layers * a.sliding_window)
    assert short == per * oss.layers * 64
    nxt = resolve_model("qwen3-next-80b-a3b")
    one, two = (kv.kv_bytes_per_request(nxt, n).value for n in (1024, 2048))
    state = nxt.attention.linear_layers * nxt.attention.linear_state_bytes
    assert two - state == pytest.approx(2 * (one - state))


def _block(n: float) -> Q:
    return Q.measured(float(n), "B", "test block")


@pytest.mark.parametrize("name", ["nixl-libfabric", "mooncake-efa"])
def test_bandwidth_is_the_curve_at_its_points_and_rises_between(name):
    t = get_kv_transport(name)
    p5en = get_instance("p5en")
    for point in t.point:
        assert kv.node_pair_gb_s(t, _block(point.block_bytes), p5en).value == pytest.approx(point.gb_s)
    sizes = [2**k for k in range(12, 27)]
    bws = [kv.node_pair_gb_s(t, _block(b), p5en).value for b in sizes]
    assert all(b2 >= b1 for b1, b2 in itertools.pairwise(bws))
    assert bws[-1] <= kv.line_rate_gb_s(p5en) + 1e-9


def test_no_software_path_outruns_efa_rdma_at_any_block():
    """TCP's one figure is a bulk stream's: below its block each transfer pays a fixed latency,
    as the RDMA paths' do, so no block size makes the fallback the faster way (it did, at the
    4 KiB blocks of a small GQA model, and the planner picked TCP); UCX's software path is slow
    whatever the block."""
    p5en = get_instance("p5en")
    rdma = [t for t in load_kv_transports().values() if t.rdma and "p5en" in t.instances]
    software = [t for t in load_kv_transports().values() if not t.rdma and "p5en" in t.instances]
    assert rdma and {t.name for t in software} >= {"tcp", "nixl-ucx"}
    for block in [2**k for k in range(10, 27)]:
        fastest_rdma = max(kv.node_pair_gb_s(t, _block(block), p5en).value for t in rdma)
        for t in software:
            assert kv.node_pair_gb_s(t, _block(block), p5en).value <= fastest_rdma, (t.name, block)
    tcp, ucx = get_kv_transport("tcp"), get_kv_transport("nixl-ucx")
    assert kv.node_pair_gb_s(tcp, _block(4096), p5en).value == pytest.approx(9.5 * 4096 / 65536)
    assert kv.node_pair_gb_s(tcp, _block(64 * MIB), p5en).value == pytest.approx(9.5)
    assert kv.node_pair_gb_s(ucx, _block(4096), p5en).value == pytest.approx(0.3)


def test_transfer_time_falls_as_the_block_grows():
    t = get_kv_transport("nixl-libfabric")
    p5en = get_instance("p5en")
    request = Q.derived(72e6, "B", "a request's KV")
    times = []
    for block in (4096, 65536, 1 * MIB, 16 * MIB, 64 * MIB):
        pair = kv.node_pair_gb_s(t, _block(block), p5en)
        times.append(kv.transfer_ms(request, 1.0, 1.0, pair, 8).value)
    assert all(b < a for a, b in itertools.pairwise(times))
    # following the curve: at 4 KiB and 64 KiB the ratio of times is the ratio of bandwidths
    assert times[0] / times[1] == pytest.approx(8.733 / 0.670)
