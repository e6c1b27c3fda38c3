"""The flat JSON export (`io/aiperf/flat.py`): metric blocks at the top level, and the header
every JSON generation shares (configuration, benchmark id, versions, cancellation, errors, the
recorded command)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepep_calc.base.errors import FileInputError
from deepep_calc.io.aiperf import flat
from one_line import assert_one_line

P = Path("x.json")


def test_the_flat_layout_claims_every_object_and_its_blocks_are_the_document() -> None:
    doc = {"inter_token_latency": {"avg": 1.0}, "schema_version": "1.5"}
    assert flat.claims(P, {}) and flat.claims(P, doc)
    export = flat.read(P, doc)
    assert export.fmt == flat.GENERATION == "json" and export.metrics is doc
    assert export.schema_version == "1.5"


def test_the_header_falls_back_to_run_info_and_keeps_only_what_is_well_typed() -> None:
    """The benchmark id from run_info when the top level has none (or an empty one); versions as
    text; cancelled only when `was_cancelled` is the JSON true (not the string)."""
    doc = {
        "benchmark_id": "",
        "run_info": {"benchmark_id": "r1", "cli_command": "aiperf profile --concurrency 4"},
        "schema_version": 1.4,
        "aiperf_version": "0.3",
        "was_cancelled": "true",
        "error_summary": [{"count": 1}],
    }
    export = flat.header(P, doc, metrics={}, fmt="json")
    assert (export.benchmark_id, export.schema_version, export.aiperf_version) == ("r1", "1.4", "0.3")
    assert export.was_cancelled is False and export.config == {}
    assert export.cli_command == "aiperf profile --concurrency 4"
    assert export.error_summary == [{"count": 1}]
    bare = flat.header(P, {"run_info": "x", "was_cancelled": True}, metrics={}, fmt="json")
    assert (bare.benchmark_id, bare.cli_command, bare.schema_version, bare.was_cancelled) == (
        None,
        None,
        None,
        True,
    )


def test_an_input_config_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(FileInputError) as info:
        flat.header(P, {"input_config": [1]}, metrics={}, fmt="json")
    assert_one_line(info.value, "x.json: 'input_config' is an array, expected an object")
    assert info.value.field == "input_config"
