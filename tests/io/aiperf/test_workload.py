"""What a run was asked to do (`io/aiperf/workload.py`): concurrency, model and requested lengths
found wherever an AIPerf release put them (`phases` or the legacy `loadgen`, `models.items` or
`endpoint.model_names`, `datasets` or `input.prompt`, else the recorded command), and refused when
they cannot be a workload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deepep_calc.base.errors import FileInputError
from deepep_calc.io.aiperf.workload import (
    check_lengths,
    config_concurrency,
    config_lengths,
    config_model,
    dig,
)
from one_line import assert_one_line

P = Path("x.json")


def test_dig_follows_keys_and_indices_and_stops_at_the_first_missing_step() -> None:
    doc = {"a": [{"b": 1}], "c": 2}
    assert dig(doc, "a", 0, "b") == 1
    assert dig(doc, "a", 1, "b") is None  # index past the end
    assert dig(doc, "c", "d") is None  # a number has no keys
    assert dig(doc, "a", "b") is None  # a list has no keys
    assert dig([5], 0) == 5 and dig(doc) is doc


@pytest.mark.parametrize(
    ("config", "cli", "expected"),
    [
        (
            {"phases": [{"name": "warmup", "concurrency": 1}, {"name": "profiling", "concurrency": 16}]},
            None,
            16,
        ),
        ({"phases": [{"name": "only", "concurrency": 3}]}, None, 3),  # one phase, whatever its name
        ({"phases": [{"name": "a", "concurrency": 3}, {"name": "b", "concurrency": 4}]}, None, None),
        ({"loadgen": {"concurrency": 8}}, None, 8),
        ({"loadgen": {"concurrency": 8.0}}, None, 8),
        ({}, "aiperf profile --concurrency 32 --streaming", 32),
        ({}, "aiperf profile --concurrency='7'", 7),
        ({"loadgen": {"concurrency": 8}}, "aiperf profile --concurrency 32", 8),  # the config first
        ({}, None, None),
    ],
)
def test_the_concurrency_is_the_profiling_phases_then_loadgens_then_the_commands(
    config: dict[str, Any], cli: str | None, expected: int | None
) -> None:
    assert config_concurrency(P, config, cli) == expected


@pytest.mark.parametrize("raw", [0, -4, 2.5, "8", True])
def test_a_concurrency_that_is_no_positive_whole_number_is_refused(raw: Any) -> None:
    with pytest.raises(FileInputError) as info:
        config_concurrency(P, {"loadgen": {"concurrency": raw}}, None)
    assert_one_line(
        info.value, f"x.json: concurrency in input_config is {raw!r}, expected a positive whole number"
    )
    assert info.value.field == "concurrency"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"models": {"items": [{"name": "A/B"}]}, "tokenizer": {"name": "tok"}}, ("A/B", "tok")),
        ({"models": {"items": ["A/C"]}}, ("A/C", None)),
        ({"models": ["A/D"]}, ("A/D", None)),
        ({"endpoint": {"model_names": ["A/E"]}}, ("A/E", None)),
        ({"models": {"items": [{"name": 5}]}, "tokenizer": {"name": 7}}, (None, None)),  # not text
        ({}, (None, None)),
    ],
)
def test_the_model_and_tokenizer_wherever_a_release_wrote_them(
    config: dict[str, Any], expected: tuple[str | None, str | None]
) -> None:
    assert config_model(config) == expected


def test_the_requested_lengths_from_the_first_dataset_that_states_them() -> None:
    datasets = {"datasets": [{"prompts": {}}, {"prompts": {"isl": {"mean": 100}, "osl": {"mean": 50}}}]}
    assert config_lengths(datasets) == (100.0, 50.0)
    legacy = {"input": {"prompt": {"input_tokens": {"mean": 120}, "output_tokens": {"mean": 128}}}}
    assert config_lengths(legacy) == (120.0, 128.0)
    assert config_lengths({}) == (None, None)


@pytest.mark.parametrize(
    ("isl", "osl", "needle"), [(0.0, 5.0, "an ISL mean of 0 tokens"), (5.0, 2e12, "an OSL mean of 2e+12")]
)
def test_a_requested_length_must_be_a_token_count(isl: float, osl: float, needle: str) -> None:
    """Positive and at most 1e12 (MAX_METRIC): 0 and 2e12 are damage, not a workload."""
    check_lengths(P, None, None)
    check_lengths(P, 1.0, 1e12)
    with pytest.raises(FileInputError) as info:
        check_lengths(P, isl, osl)
    assert_one_line(info.value, f"x.json: input_config requests {needle}", "expected a positive count")
