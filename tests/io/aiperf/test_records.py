"""The older JSON export (`io/aiperf/records.py`): metric blocks under `"records"`, told apart
from the flat layout only by where the blocks sit."""

from __future__ import annotations

from pathlib import Path

import pytest

from calibrate.user_runs import EXTRA
from deepep_calc.base.errors import FileInputError
from deepep_calc.io.aiperf import load_aiperf, records
from one_line import assert_one_line

P = Path("x.json")


def test_legacy_records_layout() -> None:
    run = load_aiperf(EXTRA / "legacy_records_layout.json")
    assert run.export_format == "json-records"
    assert run.schema_version == "1.0"
    assert run.concurrency == 8  # input_config.loadgen.concurrency
    assert run.model == "Qwen/Qwen3-30B-A3B-FP8"  # input_config.endpoint.model_names[0]
    assert (run.isl_requested, run.osl_requested) == (120, 128)  # input.prompt.*_tokens.mean
    assert run.itl_ms is not None and run.itl_ms.scalar == pytest.approx(116.77, abs=0.01)
    assert "0ld1ay0ut001" in run.itl_ms.source
    assert run.warnings == []


def test_records_are_claimed_only_when_they_hold_a_metric_we_know() -> None:
    assert records.claims(P, {"records": {"request_latency": {"avg": 1.0}}})
    assert not records.claims(P, {"records": {"foo": {}}})  # read as flat, which refuses it
    assert not records.claims(P, {"inter_token_latency": {"avg": 1.0}})


def test_records_that_are_not_an_object_are_refused_not_read_as_flat() -> None:
    with pytest.raises(FileInputError) as info:
        records.claims(P, {"records": [1], "inter_token_latency": {"avg": 1.0}})
    assert_one_line(info.value, "x.json: 'records' is an array, expected an object of metric blocks")
    assert info.value.field == "records"


def test_the_blocks_are_read_from_records_under_the_shared_header() -> None:
    blocks = {"request_latency": {"avg": 1.0}}
    export = records.read(P, {"records": blocks, "benchmark_id": "b-1", "schema_version": "1.0"})
    assert export.metrics is blocks and export.fmt == records.GENERATION == "json-records"
    assert (export.benchmark_id, export.schema_version) == ("b-1", "1.0")
