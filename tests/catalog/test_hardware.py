"""`catalog/hardware.py`: instance types (`data/instances.toml`) and their figures as tagged
quantities, each unit conversion written out. The conversions are pinned on a hand-made
instance (round numbers), so a test moves only when a formula does; the catalog's own rows get
their invariants. Prices are `test_hardware_prices.py`'s."""

from __future__ import annotations

import math
from typing import Any

import pytest

from deepep_calc.base.errors import InputError
from deepep_calc.base.quantity import Tag
from deepep_calc.catalog.hardware import PRICE_KIND_WORDS, PRICE_KINDS, Instance, get_instance, load_instances
from one_line import assert_one_line

HAND: dict[str, Any] = {
    "name": "hand",
    "aws_name": "hand.48xlarge",
    "fabric": "efa",
    "gpu": "G1",
    "gpus_per_node": 8,
    "hbm_gb": 100.0,
    "hbm_tb_s": 4.8,
    "nvlink_gb_s_bidir": 900.0,
    "nic_count": 16,
    "nic_gbit_each": 200.0,
    "bf16_tflops": 1000.0,
    "fp8_tflops": 2000.0,
    "fp4_tflops": 4000.0,
    "price_source": "no price",
    "gda_supported": True,
    "source": "spec sheet",
}


def hand(**update: Any) -> Instance:
    return Instance(**{**HAND, **update})


def test_scale_out_per_gpu_is_the_node_s_gbit_over_8_over_its_gpus() -> None:
    """16 NICs x 200 Gb/s = 3200 Gb/s per node; / 8 bit/B = 400 GB/s; / 8 GPUs = 50 GB/s."""
    q = hand().net_gb_s_per_gpu()
    assert (q.scalar, q.unit, q.tag) == (50.0, "GB/s", Tag.ASSUMED)
    assert q.source == "16 x 200 Gb/s = 3200 Gb/s per node / 8 bit/B = 400 GB/s / 8 GPUs (per direction)"
    assert hand().net_gb_s_per_gpu(4).scalar == 100.0  # fewer GPUs share the node's NICs


def test_nvlink_hbm_and_bandwidth() -> None:
    i = hand()
    assert (i.nvlink_gb_s().scalar, i.nvlink_gb_s().unit) == (450.0, "GB/s")  # 900 bidirectional / 2
    assert "900 GB/s bidirectional / 2" in i.nvlink_gb_s().source
    assert (i.hbm_bw().scalar, i.hbm_bw().unit) == (4800.0, "GB/s")  # 4.8 TB/s
    assert (i.hbm().scalar, i.hbm().unit) == (100.0, "GB") and "spec sheet" in i.hbm().source
    assert all(q.tag is Tag.ASSUMED for q in (i.hbm(), i.hbm_bw(), i.nvlink_gb_s()))


@pytest.mark.parametrize(
    ("dtype", "peak"),
    [
        ("bf16", 1000.0),
        ("fp16", 1000.0),
        ("fp32", 1000.0),  # no separate fp32 figure: the 16-bit tensor-core peak
        ("fp8", 2000.0),
        ("int8", 2000.0),
        ("int4", 2000.0),  # int4 weights run on the fp8 path
        ("mxfp4", 4000.0),
        ("nvfp4", 4000.0),
    ],
)
def test_each_dtype_runs_at_its_peak(dtype: str, peak: float) -> None:
    q = hand().tflops(dtype)
    assert (q.scalar, q.unit, q.tag) == (peak, "TFLOP/s", Tag.ASSUMED)
    assert q.source == f"G1 dense {dtype} peak (spec)"


def test_a_price_is_the_catalog_s_unless_the_user_gives_one() -> None:
    priced = hand(price_per_hour=40.0, price_kind="on-demand", price_source="list price 2026-01-01")
    assert (priced.price().scalar, priced.price().source) == (40.0, "list price 2026-01-01")
    given = priced.price(55.0)
    assert (given.scalar, given.unit, given.tag, given.source) == (
        55.0,
        "$/h",
        Tag.ASSUMED,
        "user-given price per node-hour",
    )
    unpriced = hand().price()
    assert math.isnan(unpriced.scalar) and unpriced.source == "no price"


def test_a_price_needs_its_kind() -> None:
    with pytest.raises(
        ValueError, match=r"hand: a price needs its price_kind \(on-demand, capacity-block, quote\)"
    ):
        hand(price_per_hour=40.0)


def test_price_kinds_are_named_for_readers() -> None:
    assert set(PRICE_KIND_WORDS) == {*PRICE_KINDS, "given"}
    for name, i in load_instances().items():
        assert (i.price_per_hour is None) == (i.price_kind is None), name


def test_catalog_rows_are_consistent() -> None:
    """Keyed by name; peaks rise as the dtype narrows; an IB row is named for its fabric."""
    for name, i in load_instances().items():
        assert name == i.name and i.source and i.aws_name, name
        assert i.fp8_tflops >= i.bf16_tflops and i.fp4_tflops >= i.fp8_tflops, name
        if i.fabric == "ib":
            assert name.startswith("ib-"), name


@pytest.mark.parametrize("text", ["p5en", " P5EN ", "P5en"])
def test_get_instance_ignores_case_and_spaces(text: str) -> None:
    assert get_instance(text) is load_instances()["p5en"]


def test_an_unknown_instance_lists_the_instances() -> None:
    with pytest.raises(InputError) as info:
        get_instance("p4d")
    msg = assert_one_line(info.value)
    assert msg == f"--instance: 'p4d' is not allowed; expected one of {', '.join(load_instances())}"
