"""DeepEP dispatch / combine (`physics/deepep.py`) with hand-made constants on the toy rows.

Toy shape: hidden 1024, top-2 of 16 experts. Dispatch selection 1024 + 1024/128 × 4 + 16 =
1,072 B (FP8 payload, scales, routing); combine 2 × 1024 = 2,048 B. Toy node: 8 GPUs, 50 GB/s
EFA and 400 GB/s NVLink per GPU per direction (× 0.5 kernel efficiency = 200 GB/s). Constants of
`hand.kernel_constants`: leaving the node 20 / 10 us, β 0.5 / 0.25 us per message at 4
reference lanes, a signal costs 0.5 puts, NVLink α 30 us, so a local part of 15 us per direction.
At EP16 on 8-GPU nodes half of everything is remote: 16 × 8/16 = 8 signals per direction.
The message counts and bytes per selection are also worked at DeepSeek-V3's shape (hidden 7168,
top-8 of 256 experts) at the end.
"""

from __future__ import annotations

import numpy as np
import pytest

from deepep_calc.base.quantity import Tag
from deepep_calc.catalog.transports import get_transport
from deepep_calc.physics.deepep import (
    PARTS,
    KernelShape,
    KernelSite,
    binding_pipe,
    issue_lanes,
    kernel_parts,
    kernel_us,
    messages,
    nvlink_bw,
    scaleout_bw,
)

from .hand import GPU, PROXY, TOY_INSTANCE, exact, kernel_constants, q, val

INST = TOY_INSTANCE


def shape(tokens: float, dtype: str = "fp8") -> KernelShape:
    return KernelShape(tokens, 1024, 2, 16, dtype)


def test_bytes_per_selection() -> None:
    """FP8: 1024 + 8 scales × 4 B + 16 = 1,072 B; BF16: 2 × 1024 + 16 = 2,064 B; combine 2,048 B.
    DeepSeek's 7168: 7168 + 56 × 4 + 16 = 7,408 B (DeepEP's own test counts the same)."""
    assert shape(1).dispatch_bytes_per_token == 1072
    assert shape(1, "bf16").dispatch_bytes_per_token == 2064
    assert shape(1).combine_bytes_per_token == 2048
    assert KernelShape(1, 7168, 8, 256).dispatch_bytes_per_token == 7408


def test_decode_messages_under_uniform_routing() -> None:
    """EP16 on 8-GPU nodes, 4 tokens × top-2 = 8 selections: (16 − 8)/16 remote = 4 data
    messages, (8 − 1)/16 on NVLink = 3.5, and 16 experts × 8/16 = 8 signals, whatever the tokens.
    EP32, 1 token × top-8 of 256: 8 × 24/32 = 6 remote, 8 × 7/32 = 1.75 on NVLink, 256 × 24/32 =
    192 signals. Inside one node (EP8) nothing leaves: 7 on NVLink, no data message, no signal."""
    m = messages(16, 8, shape(4))
    assert (float(m.data), float(m.nvlink_sel), float(m.signals)) == (4.0, 3.5, 8.0)
    assert float(messages(16, 8, shape(400)).signals) == 8.0
    m = messages(32, 8, KernelShape(1, 7168, 8, 256))
    assert (float(m.data), float(m.nvlink_sel), float(m.signals)) == (6.0, 1.75, 192.0)
    m = messages(8, 8, shape(4))
    assert (float(m.data), float(m.nvlink_sel), float(m.signals)) == (0.0, 7.0, 0.0)


def test_prefill_sends_one_copy_per_remote_node() -> None:
    """High-throughput kernels: (nodes − 1) × (1 − (1 − 1/nodes)^k) copies per token, no
    per-expert signal. EP32 = 4 nodes, top-2: 3 × (1 − (3/4)²) = 1.3125 per token, × 4 tokens =
    5.25. EP16 = 2 nodes, top-8: 1 − (1/2)^8 = 0.99609375 per token. NVLink share as in decode."""
    m = messages(32, 8, shape(4), prefill=True)
    assert float(m.data) == exact(5.25)
    assert float(m.nvlink_sel) == exact(8 * 7 / 32)
    assert float(m.signals) == 0.0
    assert float(messages(16, 8, KernelShape(1, 7168, 8, 256), prefill=True).data) == exact(0.99609375)


def test_scaleout_bandwidth_of_each_kind_of_transport() -> None:
    """NCCL-GIN-like proxy: 8 GB/s × K^0.5: K = 4 → 16 GB/s (derived: a measured curve), capped
    at the 50 GB/s line: K = 64 → 64 > 50 → 50. GPU-initiated at 0.5 of line: 25 GB/s (assumed).
    A measured prefill bandwidth (40 GB/s) is used as it is, tagged measured."""
    bw = scaleout_bw(PROXY, INST, 8, 4)
    assert val(bw) == 16.0 and bw.tag is Tag.DERIVED and bw.unit == "GB/s"
    assert val(scaleout_bw(PROXY, INST, 8, 64)) == 50.0
    gda = scaleout_bw(GPU, INST, 8, 4)
    assert val(gda) == 25.0 and gda.tag is Tag.ASSUMED
    pre = PROXY.copy(**{"prefill_dispatch_gb_s": 40.0, "prefill_source": "measured x"})
    measured = scaleout_bw(pre, INST, 8, 4, prefill=True)
    assert val(measured) == 40.0 and measured.tag is Tag.MEASURED
    assert val(scaleout_bw(pre, INST, 8, 4)) == 16.0  # decode ignores the prefill figure
    assert np.asarray(scaleout_bw(PROXY, INST, 8, np.array([1.0, 4.0, 64.0])).value).tolist() == [8, 16, 50]


def test_issue_lanes() -> None:
    """Proxy: K^e × min(QPs, reference QPs 4)^e with e = 0.5: K 4, QPs 2 → 2 × √2; QPs 16 are
    capped at 4 → 2 × 2 = 4. A fixed-lane transport has its count whatever K and QPs are: 2."""
    assert float(issue_lanes(PROXY, 4, 2)) == exact(2 * 2**0.5)
    assert float(issue_lanes(PROXY, 4, 16)) == exact(4.0)
    assert float(issue_lanes(GPU, 64, 64)) == 2.0


def test_nvlink_bandwidth() -> None:
    """400 GB/s per direction (800 bidirectional / 2) × 0.5 = 200 GB/s."""
    assert val(nvlink_bw(INST, q(0.5, ""))) == 200.0


def test_a_few_tokens_wait_for_the_latency_of_leaving_the_node() -> None:
    """EP16, 4 tokens, K 4, QPs 4 (4 lanes = the reference's): issue dispatch 0.5 × (4 data +
    0.5 × 8 signals) = 4 us, combine 0.25 × 8 = 2 us, under the 20 / 10 us of leaving the node
    (the wires are 4 × 1,072 B / 16 GB/s = 0.268 and 0.512 us). So dispatch 15 + 20 = 35 us,
    combine 15 + 10 = 25 us, and the pair is as long at 1 token as at 4: flat."""
    k = kernel_constants()
    out = kernel_us(KernelSite(PROXY, INST, 8, 16, 4, 4), shape(4), k)
    assert (val(out["dispatch"]), val(out["combine"]), val(out["total"])) == exact((35.0, 25.0, 60.0))
    assert val(kernel_us(KernelSite(PROXY, INST, 8, 16, 4, 4), shape(1), k)["total"]) == exact(60.0)
    assert out["total"].unit == "us"


def test_many_tokens_are_issue_bound() -> None:
    """64 tokens: dispatch 0.5 × (64 + 4) = 34 us > 20, combine 0.25 × 68 = 17 us > 10 (wires
    64 × 1,072 B / 16 GB/s = 4.288 us and 8.192 us): 15 + 34 = 49 and 15 + 17 = 32 us."""
    out = kernel_us(KernelSite(PROXY, INST, 8, 16, 4, 4), shape(64), kernel_constants())
    assert (val(out["dispatch"]), val(out["combine"])) == exact((49.0, 32.0))


def test_signals_cost_their_ratio_of_a_put() -> None:
    """At a signal ratio of 2 the 8 signals weigh 16 puts: dispatch 0.5 × (64 + 16) = 40 us,
    combine 0.25 × 80 = 20 us; at 0 only the 64 puts: 32 and 16 us (over the local 15 us)."""
    two = kernel_us(
        KernelSite(PROXY, INST, 8, 16, 4, 4), shape(64), kernel_constants(signal_ratio=q(2.0, ""))
    )
    assert (val(two["dispatch"]), val(two["combine"])) == exact((55.0, 35.0))
    none = kernel_us(
        KernelSite(PROXY, INST, 8, 16, 4, 4), shape(64), kernel_constants(signal_ratio=q(0.0, ""))
    )
    assert (val(none["dispatch"]), val(none["combine"])) == exact((47.0, 31.0))


def test_fewer_lanes_scale_the_issue_path() -> None:
    """K 1, QPs 4: lanes 1 × 2 = 2, so each message costs 4/2 = 2 × β: at 64 tokens dispatch
    0.5 × 68 × 2 = 68 us, combine 0.25 × 68 × 2 = 34 us (the wires at 8 GB/s: 8.576 / 16.384 us)."""
    out = kernel_us(KernelSite(PROXY, INST, 8, 16, 1, 4), shape(64), kernel_constants())
    assert (val(out["dispatch"]), val(out["combine"])) == exact((15.0 + 68.0, 15.0 + 34.0))


def test_wire_bound_decode_exchange() -> None:
    """128 tokens, β 0.001, no leaving latency: 128 × 2 × 8/16 = 128 remote selections.
    dispatch wire 128 × 1,072 B / 16 GB/s = 8.576 us (issue 0.132 us, NVLink 112 × 1,072 / 200
    = 0.60032 us); combine 128 × 2,048 / 16 = 16.384 us; each after the local 15 us."""
    k = kernel_constants(
        beta_dispatch_us=q(0.001),
        beta_combine_us=q(0.001),
        leaving_dispatch_us=q(0.0),
        leaving_combine_us=q(0.0),
    )
    out = kernel_us(KernelSite(PROXY, INST, 8, 16, 4, 4), shape(128), k)
    assert (val(out["dispatch"]), val(out["combine"])) == exact((15.0 + 8.576, 15.0 + 16.384))
    # measured prefill bandwidths play no part in decode
    pre = PROXY.copy(**{"prefill_dispatch_gb_s": 40.0, "prefill_combine_gb_s": 20.0})
    out = kernel_us(KernelSite(pre, INST, 8, 16, 4, 4), shape(128), k)
    assert (val(out["dispatch"]), val(out["combine"])) == exact((15.0 + 8.576, 15.0 + 16.384))
    parts = kernel_parts(KernelSite(pre, INST, 8, 16, 4, 4), shape(128), k)
    assert binding_pipe(parts["dispatch"]) == "wire"


def test_nvlink_bound_decode_exchange() -> None:
    """At NVLink efficiency 0.001 (0.4 GB/s) the 112 intra-node selections gate:
    dispatch 112 × 1,072 B / 0.4 GB/s = 300.16 us, combine 112 × 2,048 / 0.4 = 573.44 us."""
    k = kernel_constants(beta_dispatch_us=q(0.001), beta_combine_us=q(0.001), nvlink_efficiency=q(0.001, ""))
    out = kernel_us(KernelSite(PROXY, INST, 8, 16, 4, 4), shape(128), k)
    assert (val(out["dispatch"]), val(out["combine"])) == exact((15.0 + 300.16, 15.0 + 573.44))


def test_instance_factor_scales_the_host_side_not_the_wire() -> None:
    """f = 2 doubles the local part, the leaving latency and the issue path: at 64 tokens
    dispatch 2 × 15 + 2 × 34 = 98 us, combine 30 + 34 = 64 us; a wire-bound dispatch keeps its
    8.576 us (after its doubled local part)."""
    out = kernel_us(
        KernelSite(PROXY, INST, 8, 16, 4, 4), shape(64), kernel_constants(instance_factor=q(2.0, ""))
    )
    assert (val(out["dispatch"]), val(out["combine"])) == exact((98.0, 64.0))
    wire = kernel_constants(
        beta_dispatch_us=q(0.001),
        beta_combine_us=q(0.001),
        instance_factor=q(2.0, ""),
        leaving_dispatch_us=q(0.0),
    )
    assert val(kernel_us(KernelSite(PROXY, INST, 8, 16, 4, 4), shape(128), wire)["dispatch"]) == exact(
        30.0 + 8.576
    )


def test_prefill_uses_measured_bandwidths_per_direction() -> None:
    """Prefill at EP16, 4 tokens, top-2: 4 × (1 − (1/2)²) = 3 remote copies. Measured 40 GB/s
    dispatch, 20 GB/s combine, β ≈ 0, no leaving latency: dispatch 3 × 1,072 / 40 = 0.0804 us,
    combine 3 × 2,048 / 20 = 0.3072 us, each after the local 15 us."""
    pre = PROXY.copy(**{"prefill_dispatch_gb_s": 40.0, "prefill_combine_gb_s": 20.0})
    k = kernel_constants(
        beta_dispatch_us=q(1e-6),
        beta_combine_us=q(1e-6),
        leaving_dispatch_us=q(0.0),
        leaving_combine_us=q(0.0),
    )
    out = kernel_us(KernelSite(pre, INST, 8, 16, 4, 4, prefill=True), shape(4), k)
    assert (val(out["dispatch"]), val(out["combine"])) == exact((15.0804, 15.3072))


def test_single_node_rides_nvlink_only() -> None:
    """EP8 on one 8-GPU node: α_nvl / 2 = 15 us per direction, plus 4 × 2 × 7/8 = 7 selections:
    dispatch 15 + 7 × 1,072 / 200 GB/s = 15.03752 us, combine 15 + 7 × 2,048 / 200 = 15.07168 us.
    The cross-node constants (leaving 20, β 0.5) play no part."""
    k = kernel_constants()
    out = kernel_us(KernelSite(PROXY, INST, 8, 8, 4, 4), shape(4), k)
    assert (val(out["dispatch"]), val(out["combine"])) == exact((15.03752, 15.07168))
    assert val(out["total"]) == exact(30.1092)
    parts = kernel_parts(KernelSite(PROXY, INST, 8, 8, 4, 4), shape(4), k)
    assert val(parts["dispatch"]["leaving"]) == 0.0 and val(parts["dispatch"]["signals"]) == 0.0
    assert binding_pipe(parts["dispatch"]) == "nvlink"


def test_ep_smaller_than_a_node_rides_nvlink_only() -> None:
    """EP4 on an 8-GPU node: 4 × 2 × 3/4 = 6 selections, 15 + 6 × 1,072 / 200 = 15.03216 us."""
    out = kernel_us(KernelSite(PROXY, INST, 8, 4, 4, 4), shape(4), kernel_constants())
    assert val(out["dispatch"]) == exact(15.03216)


def test_nvlink_transport_never_takes_the_network_path() -> None:
    """The `nvlink` transport at EP16 still prices NVLink only: 15 + 3.5 × 1,072 / 200 us."""
    out = kernel_us(KernelSite(get_transport("nvlink"), INST, 8, 16, 4, 4), shape(4), kernel_constants())
    assert val(out["dispatch"]) == exact(15.01876)


def test_a_sweep_mixing_one_node_and_two_node_rows() -> None:
    """EP [8, 16] in one array: the one-node row takes the NVLink value (15.03752 us), the
    two-node row the network one (35 us)."""
    out = kernel_us(KernelSite(PROXY, INST, 8, np.array([8.0, 16.0]), 4, 4), shape(4), kernel_constants())
    assert np.asarray(out["dispatch"].value) == exact([15.03752, 35.0])
    assert np.asarray(out["combine"].value) == exact([15.07168, 25.0])


def test_the_parts_make_the_total() -> None:
    """Each direction is its local part plus the slowest pipe; the parts the kernel view shows
    are the ones the total is made of (64 tokens: dispatch issue 32 + 2 = 34 us binds)."""
    parts = kernel_parts(KernelSite(PROXY, INST, 8, 16, 4, 4), shape(64), kernel_constants())
    d = parts["dispatch"]
    assert set(PARTS) < set(d)
    assert (val(d["local"]), val(d["leaving"]), val(d["data"]), val(d["signals"])) == exact(
        (15.0, 20.0, 32.0, 2.0)
    )
    assert binding_pipe(d) == "messages"
    pipes = max(val(d["leaving"]), val(d["data"]) + val(d["signals"]), val(d["wire"]), val(d["nvlink"]))
    assert val(d["total"]) == exact(val(d["local"]) + pipes)
    small = kernel_parts(KernelSite(PROXY, INST, 8, 16, 4, 4), shape(4), kernel_constants())
    assert binding_pipe(small["dispatch"]) == "leaving"


def test_comms_power_is_np_power_bit_for_bit() -> None:
    """The sweep's lookup of EP_NUM_COMMS powers gives exactly what np.power gives an array, and
    every input it does not cover (small arrays, fractions, values past the table) takes np.power;
    a scalar is libm's pow, to one ulp."""
    from deepep_calc.physics.deepep import comms_power

    rng = np.random.default_rng(7)
    whole = rng.integers(1, 65, 5000).astype(float)
    for e in (0.0, 0.37, 0.5, 1.0, 1.7):
        assert np.array_equal(comms_power(whole, e), np.power(whole, e))
        # one scenario takes libm's pow, which may round the last bit apart from NumPy's loop
        want = float(np.power(8.0, e))
        assert comms_power(8, e) in (want, np.nextafter(want, np.inf), np.nextafter(want, -np.inf))
    for other in (whole + 0.5, whole * 2.0, np.full(5000, 65.0), whole[:10]):
        assert np.array_equal(comms_power(other, 0.37), np.power(other, 0.37))


def test_remote_selections_by_hand() -> None:
    """DeepSeek decode at concurrency 32 over EP16 (2x p5en): 2 tokens per rank x top-8 = 16
    selections, (16 - 8) / 16 of them remote = 8, (8 - 1) / 16 on NVLink = 7."""
    tr = messages(16, 8, KernelShape(2, 7168, 8, 256))
    assert float(tr.data) == 8.0 and float(tr.nvlink_sel) == 7.0
    # prefill kernels: one copy per remote node: (2 - 1) x (1 - (1/2)^8) = 0.99609 per token
    pre = messages(16, 8, KernelShape(1, 7168, 8, 256), prefill=True)
    assert float(pre.data) == pytest.approx(1 - 0.5**8)


def test_dispatch_bytes_per_selection_by_hand() -> None:
    """FP8 payload 7168 + one fp32 scale per 128 values (56 x 4 = 224) + 16 routing = 7,408 B."""
    assert KernelShape(1, 7168, 8, 256).dispatch_bytes_per_token == 7408
    assert KernelShape(1, 7168, 8, 256, "bf16").dispatch_bytes_per_token == 2 * 7168 + 16
    assert KernelShape(1, 7168, 8, 256).combine_bytes_per_token == 14336
