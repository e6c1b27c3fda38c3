"""HBM and tensor-core time of a step (`physics/compute.py`), worked by hand on the toy rows.

Constants are pinned to round values (the scenario's `assumptions`, see `hand.resolved`): HBM
efficiency 0.5 (2,000 GB/s of the toy's 4,000), compute efficiency 0.5 (500 TFLOP/s of its
1,000 BF16), mean context ISL + OSL/2.
"""

from __future__ import annotations

import numpy as np

from deepep_calc.base.quantity import Tag
from deepep_calc.physics.compute import (
    decode_device_us,
    experts_touched_fraction,
    matmul_flops,
    prefill_device_us,
)

from .hand import TOY, ep_layout, exact, q, resolved, val

ROUND = {"hbm_efficiency": 0.5, "compute_efficiency": 0.5, "mean_context_fraction": 0.5}


def test_experts_touched_top8_of_256() -> None:
    """p = 1 − (1 − k/E)^B. One token: 8/256 = 3.125 %. Two: 1 − (31/32)² = 1 − 0.93847656
    = 6.152 %. No token touches nothing; top-2 of 16 at 4 tokens: 1 − (7/8)⁴ = 1695/4096."""
    assert experts_touched_fraction(8, 256, 1) == exact(0.03125)
    assert experts_touched_fraction(8, 256, 2) == exact(0.0615234375)
    assert experts_touched_fraction(8, 256, 0) == 0.0
    assert experts_touched_fraction(2, 16, 4) == exact(1695 / 4096)
    arr = experts_touched_fraction(8, 256, np.array([1.0, 2.0]))
    assert arr == exact([0.03125, 0.0615234375])


def test_matmul_flops_split_replicated_and_routed() -> None:
    """2 own tokens, 32 group tokens over EP16, attention shard 1:
    replicated 2 × (24,158,208 − 12,582,912) × 2 = 46,301,184;
    routed 2 × 12,582,912 × 32 / 16 = 50,331,648; sum 96,632,832.
    With the replicated weights sharded 2 ways the first term halves: 23,150,592 + 50,331,648."""
    r = resolved()
    assert matmul_flops(r, ep_layout(), 2.0, 32.0) == 96_632_832
    assert matmul_flops(r, ep_layout(replicated_shard=2.0), 2.0, 32.0) == 73_482_240


def test_decode_device_time_by_hand() -> None:
    """Busiest rank of EP4 (expert shard 4), 2 sequences, 4 tokens in the group, ISL 1000, OSL 200.

    experts: 4 layers × 16/4 experts × p(2 of 16, 4 tokens) 1695/4096 × 3,145,728 B
             = 16 × 1,301,760 = 20,828,160 B; at the 4,000 GB/s peak 5.20704 us (expert_raw),
             at read efficiency 0.25 20.82816 us.
    other:   weights 23,150,592 B + KV 2 seqs × 4,096 B × (1000 + 200/2) = 9,011,200 B
             = 32,161,792 B at 2,000 GB/s = 16.080896 us.  hbm = 36.909056 us.
    compute: 2 × 11,575,296 × 2 + 2 × 12,582,912 × 4/4 = 71,467,008 FLOP at 500 TFLOP/s
             = 0.142934016 us.  device = max(hbm, compute) = hbm.
    """
    lay = ep_layout(expert_shard=4.0, group_tokens=4.0)
    d = decode_device_us(resolved(assumptions=ROUND), lay, 1000.0, 200.0, q(0.25, ""))
    assert val(d["expert_raw"]) == exact(5.20704)
    assert val(d["hbm"]) == exact(16.080896 + 20.82816)
    assert val(d["compute"]) == exact(0.142934016)
    assert val(d["device"]) == exact(36.909056)
    assert d["hbm"].unit == d["compute"].unit == "us"
    assert d["hbm"].tag is Tag.ASSUMED  # the HBM bandwidth is a spec sheet figure


def test_expert_reads_default_to_the_hbm_efficiency_and_kv_shards() -> None:
    """Without a fitted expert efficiency the experts read at the HBM efficiency (0.5):
    20,828,160 B / 2,000 GB/s = 10.41408 us, + 16.080896 = 26.494976 us.
    KV sharded 2 ways halves the KV read: (23,150,592 + 4,505,600) / 2,000 GB/s = 13.828096 us."""
    lay = ep_layout(expert_shard=4.0, group_tokens=4.0)
    d = decode_device_us(resolved(assumptions=ROUND), lay, 1000.0, 200.0)
    sharded = decode_device_us(
        resolved(assumptions=ROUND),
        ep_layout(expert_shard=4.0, group_tokens=4.0, kv_shard=2.0),
        1000.0,
        200.0,
    )
    assert val(d["hbm"]) == exact(26.494976)
    assert val(sharded["hbm"]) == exact(13.828096 + 10.41408)


def test_attention_tp_shards_the_replicated_read_and_matmuls() -> None:
    """Attention shard 2: weights 23,150,592 / 2 = 11,575,296 B + KV 9,011,200 B = 20,586,496 B
    at 2,000 GB/s = 10.293248 us, + the experts' 20.82816 us = 31.121408 us. FLOPs: 2 ×
    11,575,296 × 2 / 2 + 25,165,824 = 48,316,416 at 500 TFLOP/s = 0.096632832 us."""
    lay = ep_layout(expert_shard=4.0, group_tokens=4.0, replicated_shard=2.0)
    d = decode_device_us(resolved(assumptions=ROUND), lay, 1000.0, 200.0, q(0.25, ""))
    assert val(d["hbm"]) == exact(31.121408)
    assert val(d["compute"]) == exact(0.096632832)


def test_matmul_flops_with_shards_that_do_not_divide() -> None:
    """Shards of 5: 2 × 11,575,296 × 2 / 5 = 9,260,236.8 and 2 × 12,582,912 × 32 / 5 =
    161,061,273.6; sum 170,321,510.4 (no rounding to whole FLOPs)."""
    flops = matmul_flops(resolved(), ep_layout(replicated_shard=5.0, expert_shard=5.0), 2.0, 32.0)
    assert flops == exact(170_321_510.4)


def test_tp_layout_multiplies_the_whole_batch() -> None:
    """TP (not data parallel) runs the group's 32 tokens through every weight, sharded 16 ways:
    2 × 11,575,296 × 32 / 16 + 2 × 12,582,912 × 32 / 16 = 46,301,184 + 50,331,648 FLOP
    = 96,632,832 FLOP / 500 TFLOP/s = 0.193265664 us."""
    lay = ep_layout(arm="tp", data_parallel=False, replicated_shard=16.0, seqs_per_rank=32.0)
    d = decode_device_us(resolved(assumptions=ROUND), lay, 1000.0, 200.0, q(0.25, ""))
    assert val(d["compute"]) == exact(0.193265664)


def test_compute_bound_decode_takes_the_compute_time() -> None:
    """At 0.0001 compute efficiency (0.1 TFLOP/s) the 71,467,008 FLOP take 714.67008 us, more
    than the 36.9 us of HBM time: the device time is the compute time."""
    lay = ep_layout(expert_shard=4.0, group_tokens=4.0)
    d = decode_device_us(
        resolved(assumptions={**ROUND, "compute_efficiency": 0.0001}), lay, 1000.0, 200.0, q(0.25, "")
    )
    assert val(d["device"]) == exact(714.67008)


def test_bf16_experts_of_an_fp8_model_use_the_fp8_peak() -> None:
    """The peak follows the routed dtype unless that is BF16, then the weights': FP8 weights with
    BF16 experts multiply at the FP8 peak, 71,467,008 / (2,000 × 0.5) = 0.071467008 us."""
    lay = ep_layout(expert_shard=4.0, group_tokens=4.0)
    m = TOY.copy(**{"weight_dtype": "fp8", "expert_dtype": "bf16"})
    d = decode_device_us(resolved(m, assumptions=ROUND), lay, 1000.0, 200.0, q(0.25, ""))
    assert val(d["compute"]) == exact(0.071467008)


def test_fp8_models_use_the_fp8_peak() -> None:
    """An FP8 model multiplies at the 2,000 TFLOP/s FP8 peak: 71,467,008 / (2,000 × 0.5) =
    0.071467008 us; an MXFP4-expert model at the 4,000 FP4 peak: 0.035733504 us."""
    lay = ep_layout(expert_shard=4.0, group_tokens=4.0)
    fp8 = TOY.copy(**{"weight_dtype": "fp8"})
    fp4 = TOY.copy(**{"weight_dtype": "fp8", "expert_dtype": "mxfp4"})
    d8 = decode_device_us(resolved(fp8, assumptions=ROUND), lay, 1000.0, 200.0, q(0.25, ""))
    d4 = decode_device_us(resolved(fp4, assumptions=ROUND), lay, 1000.0, 200.0, q(0.25, ""))
    assert val(d8["compute"]) == exact(0.071467008)
    assert val(d4["compute"]) == exact(0.035733504)


def test_prefill_device_time_by_hand() -> None:
    """A 100-token prefill on the EP16 layout.
    FLOPs: matmuls 2 × 11,575,296 × 100 + 2 × 12,582,912 × 100 / 16 = 2,315,059,200 + 157,286,400;
    causal attention 2 × 4 layers × 8 heads × 128 × 100² = 81,920,000. Sum 2,554,265,600 FLOP
    at 500 TFLOP/s = 5.1085312 us.
    HBM: replicated read 23,150,592 + routed 201,326,592 / 16 = 12,582,912 → 35,733,504 B at
    2,000 GB/s = 17.866752 us. device = the larger = 17.866752 us."""
    d = prefill_device_us(resolved(assumptions=ROUND), ep_layout(), 100.0)
    assert val(d["compute"]) == exact(5.1085312)
    assert val(d["hbm"]) == exact(17.866752)
    assert val(d["device"]) == exact(17.866752)


def test_prefill_attention_is_split_by_attention_tp_and_skips_linear_layers() -> None:
    """Attention shard 2 halves the replicated matmuls and the attention: (2,315,059,200 +
    81,920,000) / 2 + 157,286,400 = 1,355,776,000 FLOP = 2.711552 us. One linear layer of 4
    drops a quarter of the causal term: 2,554,265,600 − 20,480,000 = 2,533,785,600 = 5.0675712 us
    (its own weights are counted in `count_params`, here 0)."""
    linear = TOY.copy(**{"attention": TOY.attention.copy(**{"linear_layers": 1})})
    tp2 = prefill_device_us(resolved(assumptions=ROUND), ep_layout(replicated_shard=2.0), 100.0)
    lin = prefill_device_us(resolved(linear, assumptions=ROUND), ep_layout(), 100.0)
    assert val(tp2["compute"]) == exact(2.711552)
    tp5 = prefill_device_us(resolved(assumptions=ROUND), ep_layout(replicated_shard=5.0), 100.0)
    # weights read once: 23,150,592 / 5 + 201,326,592 / 16 = 17,213,030.4 B at 2,000 GB/s
    assert val(tp5["hbm"]) == exact(8.6065152)
    # the linear layer also has no attention weights of its own here (linear_params 0)
    own = 2 * (24_158_208 - 2_621_440 - 12_582_912) * 100 + 157_286_400 + 61_440_000
    assert val(lin["compute"]) == exact(own / 500e12 * 1e6)


def test_mla_prefill_uses_nope_plus_rope_head_dim() -> None:
    """MLA has head_dim 0; the causal term uses qk_nope + qk_rope = 128 + 64 = 192: for
    DeepSeek-V3's 61 layers × 128 heads at 10 tokens, 2 × 61 × 128 × 192 × 100 = 299,827,200."""
    from deepep_calc.io.hf_config import resolve_model

    ds = resolve_model("deepseek-v3")
    lay = ep_layout()
    d10 = prefill_device_us(resolved(ds, assumptions=ROUND), lay, 10.0)
    flops = matmul_flops(resolved(ds, assumptions=ROUND), lay, 10.0, 10.0)
    fp8_rate = 2000e12 * 0.5
    assert val(d10["compute"]) == exact((flops + 299_827_200) / fp8_rate * 1e6)
