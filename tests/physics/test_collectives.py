"""NCCL-style collectives of the dense arms (`physics/collectives.py`), by hand on the toy node.

Hand constants: NVLink step 2 us, EFA step 100 us, NVLink efficiency 0.5 (200 GB/s); pinned
catalog constants: wire efficiency 0.5 (25 GB/s of the 50 GB/s line), 2 B per element, the
all-reduce's NVLink step 1.5 us, InfiniBand's step 5 us. Hidden 1024.
"""

from __future__ import annotations

import numpy as np
import pytest

from deepep_calc.base.quantity import Tag
from deepep_calc.catalog.constants import overrides
from deepep_calc.physics.collectives import (
    allgather_us,
    allgatherv_one_us,
    allreduce_latency_us,
    allreduce_us,
    latency_us,
)

from .hand import TOY_INSTANCE, collective_constants, exact, val

PINNED = {
    "collective_wire_efficiency": 0.5,
    "collective_bytes_per_element": 2.0,
    "nccl_hop_intra_us": 1.5,
    "nccl_hop_ib_us": 5.0,
}
C = collective_constants()
IB = TOY_INSTANCE.copy(**{"fabric": "ib"})


@pytest.fixture(autouse=True)
def _pinned() -> object:
    with overrides(PINNED):
        yield


def test_ring_latency() -> None:
    """(local − 1) NVLink steps + (nodes − 1) scale-out steps. 16 ranks on 2 nodes: 2 × 7 + 100 × 1
    = 114 us; 4 ranks in one node: 2 × 3 = 6 us; on InfiniBand the scale-out step is 5 us:
    14 + 5 = 19 us."""
    assert val(latency_us(TOY_INSTANCE, 16, 2, 8, C)) == 114.0
    assert val(latency_us(TOY_INSTANCE, 4, 1, 8, C)) == 6.0
    assert val(latency_us(IB, 16, 2, 8, C)) == 19.0
    assert np.asarray(
        latency_us(TOY_INSTANCE, np.array([8.0, 32.0]), np.array([1.0, 4.0]), 8, C).value
    ).tolist() == [
        14.0,
        314.0,
    ]


def test_allreduce_latency_uses_the_assumed_nvlink_step() -> None:
    """1.5 × 7 + 100 × 1 = 110.5 us (16 ranks, 2 nodes); 1.5 × 7 = 10.5 us in one node."""
    assert val(allreduce_latency_us(TOY_INSTANCE, 16, 2, 8, C)) == 110.5
    assert val(allreduce_latency_us(TOY_INSTANCE, 8, 1, 8, C)) == 10.5
    assert allreduce_latency_us(TOY_INSTANCE, 16, 2, 8, C).tag is Tag.ASSUMED


def test_allgather_across_two_nodes() -> None:
    """16 ranks × 4 tokens × 1024: each rank receives (16 − 8) × 4 × 1024 × 2 B = 65,536 B over
    EFA (at 25 GB/s: 2.62144 us) and (8 − 1) × 4 × 1024 × 2 = 57,344 B over NVLink (at 200 GB/s:
    0.28672 us); the slower link gates: 114 + 2.62144 = 116.62144 us."""
    assert val(allgather_us(TOY_INSTANCE, 16, 2, 8, 4.0, 1024, C)) == exact(116.62144)


def test_allgather_inside_one_node_rides_nvlink() -> None:
    """8 ranks, one node: nothing remote; 57,344 B over NVLink = 0.28672 us + 2 × 7 = 14.28672 us."""
    assert val(allgather_us(TOY_INSTANCE, 8, 1, 8, 4.0, 1024, C)) == exact(14.28672)


def test_allgather_bytes_scale_with_the_element_size() -> None:
    """At 1 B per element the remote bytes halve: 114 + 1.31072 us."""
    with overrides({"collective_bytes_per_element": 1.0}):
        assert val(allgather_us(TOY_INSTANCE, 16, 2, 8, 4.0, 1024, C)) == exact(115.31072)


def test_allgatherv_of_one_prefill_chunk() -> None:
    """One rank's 100 tokens reach the others: 100 × 1024 × 2 = 204,800 B. Across nodes over EFA
    at 25 GB/s = 8.192 us + 114 = 122.192 us; inside one node over NVLink at 200 GB/s =
    1.024 us + 14 = 15.024 us."""
    assert val(allgatherv_one_us(TOY_INSTANCE, 16, 2, 8, 100.0, 1024, C)) == exact(122.192)
    assert val(allgatherv_one_us(TOY_INSTANCE, 8, 1, 8, 100.0, 1024, C)) == exact(15.024)


def test_allreduce_bytes_and_twice_the_latency() -> None:
    """Ring all-reduce moves 2 (W − 1)/W of the bytes: 16 ranks, 4 tokens × 1024 × 2 B:
    2 × 15/16 × 8,192 B = 15,360 B at 25 GB/s = 0.6144 us, + 2 × 110.5 = 221.6144 us.
    One node of 8: 2 × 7/8 × 8,192 = 14,336 B at 200 GB/s = 0.07168 us + 2 × 10.5 = 21.07168 us."""
    assert val(allreduce_us(TOY_INSTANCE, 16, 2, 8, 4.0, 1024, C)) == exact(221.6144)
    assert val(allreduce_us(TOY_INSTANCE, 8, 1, 8, 4.0, 1024, C)) == exact(21.07168)


def test_array_rows_pick_their_own_link() -> None:
    """nodes [1, 2] in one sweep: each row takes NVLink or EFA as its own node count says."""
    out = allgatherv_one_us(TOY_INSTANCE, np.array([8.0, 16.0]), np.array([1.0, 2.0]), 8, 100.0, 1024, C)
    assert np.asarray(out.value) == exact([15.024, 122.192])
    ar = allreduce_us(TOY_INSTANCE, np.array([8.0, 16.0]), np.array([1.0, 2.0]), 8, 4.0, 1024, C)
    assert np.asarray(ar.value) == exact([21.07168, 221.6144])
