"""NCCL collectives of the dense arms (`physics/collectives.py`), by hand on the toy node, and
the catalog's measured figures behind them.

Hand constants (`hand.collective_constants`): every kind 50 us smallest-message latency across
2 nodes, a 2 us NVLink step (so 50 − 7 × 2 = 36 us per further scale-out step), bus bandwidth
100 GB/s across nodes and 200 GB/s inside one. 2 B per element (BF16). Hidden 1024.
"""

from __future__ import annotations

import numpy as np
import pytest

from deepep_calc.base.quantity import Tag
from deepep_calc.catalog.collectives import load_collectives
from deepep_calc.catalog.constants import CATALOG
from deepep_calc.catalog.hardware import get_instance
from deepep_calc.physics.collectives import (
    CollectiveGroup,
    allgather_rs_us,
    allgatherv_one_us,
    allreduce_us,
    collective_constants,
    collective_us,
    latency_us,
)

from .hand import collective_constants as hand_constants
from .hand import exact, val

C = hand_constants()


def test_latency_by_node_count_and_kind() -> None:
    """2 nodes of 8: the measured 50 us. One node, 4 ranks: 3 NVLink steps = 6 us. 4 nodes: a
    ring takes 2 more scale-out steps (50 + 72 = 122 us); 8 nodes: 6 more for allgather (266 us),
    while an all-reduce takes the tree, 2 × (log2 8 − 1) = 4 steps, not the ring's 12 (194 us).
    Nodes of 4 GPUs: the 2-node figure less the NVLink steps it no longer has, 50 − 14 + 6 = 42."""
    assert val(latency_us("allgather", CollectiveGroup(16, 2, 8), C)) == 50.0
    assert val(latency_us("allgather", CollectiveGroup(4, 1, 8), C)) == 6.0
    assert val(latency_us("allgather", CollectiveGroup(32, 4, 8), C)) == 122.0
    assert val(latency_us("allgather", CollectiveGroup(64, 8, 8), C)) == 266.0
    assert val(latency_us("allreduce", CollectiveGroup(64, 8, 8), C)) == 194.0
    assert val(latency_us("allgather", CollectiveGroup(8, 2, 4), C)) == 42.0
    rows = latency_us(
        "allreduce", CollectiveGroup(np.array([8.0, 32.0, 64.0]), np.array([1.0, 4.0, 8.0]), 8), C
    )
    assert np.asarray(rows.value).tolist() == [14.0, 122.0, 194.0]


def test_allgather_and_reduce_scatter_across_two_nodes() -> None:
    """16 ranks × 4 tokens × 1024 × 2 B = 8,192 B per rank: each of the two moves 15 × 8,192 =
    122,880 bus bytes at 100 GB/s = 1.2288 us after its 50 us: 2 × 51.2288 = 102.4576 us."""
    assert val(allgather_rs_us(CollectiveGroup(16, 2, 8), 4.0, 1024, C)) == exact(102.4576)


def test_allgather_inside_one_node_rides_nvlink() -> None:
    """8 ranks, one node: 7 × 8,192 B at 200 GB/s = 0.28672 us + 7 × 2 us, twice: 28.57344 us."""
    assert val(allgather_rs_us(CollectiveGroup(8, 1, 8), 4.0, 1024, C)) == exact(28.57344)


def test_bytes_scale_with_the_element_size() -> None:
    """At 1 B per element the bus bytes halve: 2 × (50 + 0.6144) us."""
    one_byte = hand_constants(element_bytes=1.0)
    assert val(allgather_rs_us(CollectiveGroup(16, 2, 8), 4.0, 1024, one_byte)) == exact(101.2288)


def test_allgatherv_of_one_prefill_chunk() -> None:
    """One rank's 100 tokens reach the others: 100 × 1024 × 2 = 204,800 bus bytes. Across nodes
    at 100 GB/s = 2.048 us + 50, twice: 104.096 us; inside one node at 200 GB/s: 2 × 15.024."""
    assert val(allgatherv_one_us(CollectiveGroup(16, 2, 8), 100.0, 1024, C)) == exact(104.096)
    assert val(allgatherv_one_us(CollectiveGroup(8, 1, 8), 100.0, 1024, C)) == exact(30.048)


def test_allreduce_bytes() -> None:
    """An all-reduce moves 2 (W − 1)/W of the bytes: 16 ranks, 4 tokens × 1024 × 2 B:
    2 × 15/16 × 8,192 B = 15,360 B at 100 GB/s = 0.1536 us + 50 = 50.1536 us.
    One node of 8: 2 × 7/8 × 8,192 = 14,336 B at 200 GB/s = 0.07168 us + 14 = 14.07168 us."""
    assert val(allreduce_us(CollectiveGroup(16, 2, 8), 4.0, 1024, C)) == exact(50.1536)
    assert val(allreduce_us(CollectiveGroup(8, 1, 8), 4.0, 1024, C)) == exact(14.07168)


def test_array_rows_pick_their_own_link() -> None:
    """nodes [1, 2] in one sweep: each row takes NVLink or EFA as its own node count says."""
    out = allgatherv_one_us(CollectiveGroup(np.array([8.0, 16.0]), np.array([1.0, 2.0]), 8), 100.0, 1024, C)
    assert np.asarray(out.value) == exact([30.048, 104.096])
    ar = allreduce_us(CollectiveGroup(np.array([8.0, 16.0]), np.array([1.0, 2.0]), 8), 4.0, 1024, C)
    assert np.asarray(ar.value) == exact([14.07168, 50.1536])


def test_the_measured_instance_keeps_its_measurements() -> None:
    """On 2× p6-b300 the all-reduce is NCCL's measured 42.9 us smallest-message latency and
    870.30 GB/s bus bandwidth, tagged measured; p5en takes the same latency (assumed) and the
    bandwidth times its slower link's ratio: NVLink 450 / 900 and EFA 50 / 100 GB/s per GPU → 0.5."""
    b300 = collective_constants(get_instance("p6-b300"), CATALOG).link("allreduce")
    assert (b300.latency_2n_us.scalar, b300.latency_2n_us.tag) == (42.9, Tag.MEASURED)
    assert (b300.busbw_gb_s.scalar, b300.busbw_gb_s.tag) == (870.30, Tag.MEASURED)
    p5en = collective_constants(get_instance("p5en"), CATALOG).link("allreduce")
    assert (p5en.latency_2n_us.scalar, p5en.latency_2n_us.tag) == (42.9, Tag.ASSUMED)
    assert p5en.busbw_gb_s.scalar == exact(870.30 * 0.5)


def test_infiniband_has_no_measurement_and_says_so() -> None:
    """ib-h800 (8 GPUs): the 2-node latency is the NVLink steps (7 × 1.5 us) plus the assumed
    InfiniBand step (5 us), twice for an all-reduce: 15.5 and 20.5 us, tagged assumed."""
    ib = collective_constants(get_instance("ib-h800"), CATALOG)
    assert val(ib.link("allgather").latency_2n_us) == exact(15.5)
    assert val(ib.link("allreduce").latency_2n_us) == exact(20.5)
    assert ib.link("allreduce").latency_2n_us.tag is Tag.ASSUMED


@pytest.mark.parametrize("instance", ["p6-b300", "p5en", "p5"])
def test_a_few_tokens_cost_about_ncclls_smallest_message(instance: str) -> None:
    """One cross-node all-reduce of 1-32 tokens of DeepSeek's 7168 hidden (TP16 on 2 nodes) is
    within 1.5x of NCCL's smallest-message all-reduce (42.9 us): the latency, not the bytes,
    sets it (issue #25; facts small-token-kernels.md section 2)."""
    c = collective_constants(get_instance(instance), CATALOG)
    smallest = load_collectives()["allreduce@p6-b300"].latency_us
    for tokens in (1, 2, 4, 8, 16, 32):
        t = val(allreduce_us(CollectiveGroup(16, 2, 8), float(tokens), 7168, c))
        assert smallest <= t <= 1.5 * smallest, (instance, tokens, t)


def test_the_form_against_the_measured_alltoall_sizes() -> None:
    """Latency + bytes / large-message bandwidth, for the alltoall sizes [B300KIT] measured: at
    64 KiB the measured 43.9 us (65,536 × 15/16 / 1.4 GB/s) against 42.1 us modelled (-4 %); at
    1 MiB 75.0 us against 47.3 us (-37 %): mid-size messages run below the large-message rate
    (docs/model.md §3 records the miss; no arm moves mid-size alltoalls)."""
    row = load_collectives()["alltoall@p6-b300"]
    assert len(row.sizes) == 2
    for point, miss in zip(row.sizes, (-0.04, -0.37), strict=True):
        bus = point.bytes * 15 / 16
        measured = bus / (point.busbw_gb_s * 1e3)
        modelled = row.latency_us + bus / (row.busbw_gb_s * 1e3)
        assert (modelled - measured) / measured == pytest.approx(miss, abs=0.01)


def test_collective_us_is_latency_plus_bus_bytes() -> None:
    """1 MB of bus bytes across nodes: 50 + 1 / 100 GB/s = 60 us."""
    assert val(collective_us("allgather", CollectiveGroup(16, 2, 8), 1.0, C)) == exact(60.0)
