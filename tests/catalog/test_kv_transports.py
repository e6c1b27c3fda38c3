"""`catalog/kv_transports.py`: the KV-cache transports of a disaggregated deployment, what each
engine does with the KV, the load limits seen to fail, and the disaggregated bands
(`data/kv_transports.toml`, `data/disagg_bands.toml`). `get_kv_transport` is `--kv-transport`,
checked against the engine's connectors and the instance."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from deepep_calc.base.errors import InputError
from deepep_calc.base.quantity import Tag
from deepep_calc.base.records import RecordError
from deepep_calc.catalog import _toml
from deepep_calc.catalog import kv_transports as kv
from deepep_calc.catalog.engines import load_engines
from deepep_calc.catalog.hardware import load_instances
from deepep_calc.catalog.kv_transports import (
    CurvePoint,
    KvTransport,
    engine_kv,
    get_kv_transport,
    kv_transports_for,
    load_disagg_bands,
    load_engine_kv,
    load_kv_transports,
    load_limits,
)
from one_line import assert_one_line

ROWS = load_kv_transports()


def refusal(*args: Any) -> str:
    with pytest.raises(InputError) as info:
        get_kv_transport(*args)
    assert info.value.field == "--kv-transport"
    return assert_one_line(info.value)


# ---------------------------------------------------------------- the rows


def test_every_engine_has_its_kv_facts_and_their_transports_exist() -> None:
    assert set(load_engine_kv()) == set(load_engines())
    for name, e in load_engine_kv().items():
        assert engine_kv(name) is e and e.name == e.engine == name
        assert set(e.connectors) <= set(ROWS), name
        assert e.default_kv_transport in e.connectors, name


def test_a_transport_without_rdma_is_flagged_with_a_warning() -> None:
    """No RDMA path on EFA means every evaluation over it says so (`flagged`)."""
    for name, t in ROWS.items():
        assert t.flagged == (not t.rdma) == bool(t.warning), name
    assert {n for n, t in ROWS.items() if t.flagged} == {"nixl-ucx", "tcp"}


def test_curves_rise_in_block_size_and_run_on_catalog_instances() -> None:
    instances = set(load_instances())
    for name, t in ROWS.items():
        sizes = [p.block_bytes for p in t.point]
        assert sizes == sorted(set(sizes)) and set(t.instances) <= instances, name
        assert all(p.source for p in t.point), name


def test_load_limits_name_kv_transports() -> None:
    for name, limit in load_limits().items():
        assert set(limit.kv_transports) <= set(ROWS) and limit.source, name


def test_a_curve_point_as_a_quantity() -> None:
    q = CurvePoint(block_bytes=4096, gb_s=0.5, tag="measured", source="bench").q()
    assert (q.scalar, q.unit, q.tag, q.source) == (0.5, "GB/s", Tag.MEASURED, "bench")


@pytest.mark.parametrize(
    ("points", "msg"),
    [
        ([], "a KV transport needs at least one curve point"),
        ([65536, 4096], "curve points must have rising, distinct block sizes"),
        ([4096, 4096], "curve points must have rising, distinct block sizes"),
    ],
)
def test_a_curve_must_rise_and_have_a_point(points: list[int], msg: str) -> None:
    raw = ROWS["tcp"].as_dict()
    raw["point"] = [{"block_bytes": b, "gb_s": 1.0, "tag": "assumed", "source": "s"} for b in points]
    with pytest.raises(RecordError, match=msg):
        KvTransport.validate(raw)


def test_block_and_batch_as_quantities() -> None:
    e = engine_kv("vllm")
    assert e.block_q(mla=False).scalar == float(e.block_tokens)
    assert e.block_q(mla=True).scalar == float(e.block_tokens_mla)
    assert e.block_q(mla=True).tag is Tag.ASSUMED and e.block_q(mla=True).source == e.block_source
    assert (e.batch_q().scalar, e.batch_q().unit) == (float(e.prefill_batch_tokens), "tokens")


# ---------------------------------------------------------------- --kv-transport


def test_a_name_in_any_case() -> None:
    assert get_kv_transport(" NIXL-libfabric ") is ROWS["nixl-libfabric"]
    assert get_kv_transport("tcp", "trtllm", "ib-h200") is ROWS["tcp"]


def test_an_unknown_name_lists_every_kv_transport() -> None:
    assert refusal("x") == f"--kv-transport: 'x' is not allowed; expected one of {', '.join(ROWS)}"


def test_a_transport_the_engine_has_no_connector_for_lists_those_it_has() -> None:
    """TensorRT-LLM has no Mooncake connector: NIXL over LIBFABRIC or UCX, or TCP."""
    assert refusal("mooncake-efa", "trtllm") == (
        "--kv-transport: 'mooncake-efa' is not allowed; "
        "expected one trtllm can use: nixl-libfabric, nixl-ucx, tcp"
    )


def test_a_transport_not_on_the_instance_lists_those_that_are() -> None:
    """An InfiniBand instance has no EFA: only TCP reaches it."""
    assert refusal("nixl-libfabric", None, "ib-h200") == (
        "--kv-transport: 'nixl-libfabric' is not allowed; expected one available on ib-h200: tcp"
    )


def test_the_transports_an_engine_can_use_on_an_instance() -> None:
    assert [t.name for t in kv_transports_for("vllm", "p5en")] == [
        "nixl-libfabric",
        "mooncake-efa",
        "nixl-ucx",
        "tcp",
    ]
    assert [t.name for t in kv_transports_for("vllm", "p5en", rdma_only=True)] == [
        "nixl-libfabric",
        "mooncake-efa",
    ]
    assert [t.name for t in kv_transports_for("trtllm", "ib-h200")] == ["tcp"]


# ---------------------------------------------------------------- the disaggregated bands


def test_the_bands_are_ratio_ranges_per_kind_of_figure() -> None:
    bands = load_disagg_bands()
    assert set(bands) == {"aggregate", "step", "ttft"}
    for kind, (low, high) in bands.items():
        assert 0 < low <= high and math.isfinite(high), kind


def test_no_bands_before_they_are_first_generated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_toml, "DATA", tmp_path)  # a data folder without disagg_bands.toml
    load_disagg_bands.cache_clear()
    try:
        assert kv.load_disagg_bands() == {}
    finally:
        load_disagg_bands.cache_clear()


def test_catalog_rows_have_sources_and_every_engine_has_kv_facts():
    for t in load_kv_transports().values():
        assert t.curve_source
        for p in t.point:
            assert p.source and p.tag in ("measured", "derived", "assumed")
    assert set(load_engine_kv()) == set(load_engines())
    for e in load_engines():
        ekv = engine_kv(e)
        assert ekv.default_kv_transport in ekv.connectors
        assert ekv.block_source and ekv.stream_source and ekv.prefill_batch_source
        assert not math.isnan(ekv.block_tokens)
