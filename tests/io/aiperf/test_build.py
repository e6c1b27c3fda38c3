"""Turning a parsed export into a checked run (`io/aiperf/build.py`): the statistics it carries,
the workload its configuration or its name states, the cold start its first wave waited for, and
the doubts a usable but suspect run imports with (one line each)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calibrate.user_runs import EXTRA, REAL
from deepep_calc.base.errors import FileInputError, InputError
from deepep_calc.io.aiperf import derive_pair, load_aiperf
from deepep_calc.io.aiperf.build import KNOWN_SCHEMA_VERSIONS, build_run
from deepep_calc.io.aiperf.run import Export
from one_line import assert_one_line

# The three means the A/B divides by, and a request count: the least a usable export holds.
METRICS = {
    "inter_token_latency": {"unit": "ms", "avg": 50.0},
    "output_token_throughput_per_user": {"avg": 20.0},
    "output_token_throughput": {"avg": 600.0},
    "request_count": {"avg": 10},
}

# --------------------------------------------------------------------------------------------
# warnings


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("cancelled_run.json", "cancelled"),
        ("error_requests.json", "3 of 40 requests failed"),
        ("non_streaming.json", "not a streaming run"),
        ("unknown_schema.json", "unknown schema_version '9.9'"),
        ("short_osl.json", "measured output length 96.0 differs from the requested 128"),
    ],
)
def test_warning_cases(name: str, needle: str) -> None:
    run = load_aiperf(EXTRA / name)
    assert any(needle in w for w in run.warnings), run.warnings
    assert all("\n" not in w for w in run.warnings)


def test_non_streaming_has_no_itl_and_cannot_be_paired() -> None:
    run = load_aiperf(EXTRA / "non_streaming.json")
    assert run.itl_ms is None and run.streaming is False
    assert run.aggregate_tok_s is not None
    with pytest.raises(InputError, match="inter_token_latency"):
        derive_pair(run, load_aiperf(EXTRA / "unknown_schema.json"))


def test_error_count_and_cancel_flags() -> None:
    assert load_aiperf(EXTRA / "error_requests.json").error_count == 3
    assert load_aiperf(EXTRA / "cancelled_run.json").was_cancelled is True


def test_a_damaged_statistic_only_the_cold_start_check_reads_skips_the_check(tmp_path: Path) -> None:
    """TTFT max, the benchmark's duration and the output token total are read for the cold-start
    check alone: a damaged one leaves the run importable, with no steady-state figure."""
    src = REAL / "trtllm-0.21_qwen3-30b-a3b-fp8_ep16_2xp5en_deepep-epnc1_c4_isl120.json"
    export = json.loads(src.read_text())
    export["benchmark_duration"]["unit"] = "fortnights"
    export["total_output_tokens"]["avg"] = "many"
    damaged = tmp_path / src.name
    damaged.write_text(json.dumps(export))
    run = load_aiperf(damaged)
    assert run.steady_aggregate_tok_s is None and not any("cold start" in w for w in run.warnings)
    assert run.aggregate_tok_s is not None and run.itl_ms is not None


def test_the_schema_versions_this_reader_knows() -> None:
    assert KNOWN_SCHEMA_VERSIONS == ("1.0", "1.1", "1.2", "1.3", "1.4", "1.5")
    run = build_run(Export(Path("x.json"), "json", METRICS, schema_version="1.5"))
    assert not any("schema_version" in w for w in run.warnings)


def test_failed_requests_are_counted_from_the_error_summary(tmp_path: Path) -> None:
    """Without an error_request_count, each error_summary entry counts its `count` (1 without
    one): 2 + 1 = 3 failed of 10 + 3 sent."""
    summary = [{"count": 2, "error": "timeout"}, {"code": 500}, "not an entry"]
    run = build_run(Export(tmp_path / "x.json", "json", METRICS, schema_version="1.3", error_summary=summary))
    assert run.error_count == 3
    assert run.warnings == [
        "3 of 13 requests failed; the statistics describe only the requests that succeeded"
    ]


def test_a_concurrency_only_the_name_states_is_taken_with_a_warning(tmp_path: Path) -> None:
    """The CSV states no configuration: its concurrency and cluster come from the file name."""
    run = build_run(Export(tmp_path / "x_2xp5en_c4.csv", "csv", METRICS))
    assert (run.concurrency, run.instances) == (4, "2xp5en")
    assert run.warnings == [
        "concurrency 4 taken from the file name: the export does not state it",
        "CSV export: no benchmark id, model or requested lengths; prefer the JSON export",
    ]


def test_the_export_wins_over_its_folder_name(tmp_path: Path) -> None:
    """AIPerf's generic file name says nothing, so its folder's is read: it says c8, the export
    ran 4, the export wins and the difference is said."""
    config = {"phases": [{"name": "profiling", "concurrency": 4}]}
    path = tmp_path / "vllm_c8" / "profile_export_aiperf.json"
    run = build_run(Export(path, "json", METRICS, config=config, schema_version="1.3"))
    assert (run.concurrency, run.engine) == (4, "vllm")
    assert run.warnings == ["the file name says concurrency 8 but the export ran 4; using 4"]


def test_an_export_without_a_metric_we_know_is_refused() -> None:
    with pytest.raises(FileInputError) as info:
        build_run(Export(Path("y.json"), "json", {"foo": {"avg": 1.0}}))
    assert_one_line(info.value, "y.json: no AIPerf metric blocks (expected e.g. inter_token_latency")


def test_a_run_without_itl_is_told_it_cannot_give_a_step_time() -> None:
    run = build_run(
        Export(Path("z.json"), "json", {"output_token_throughput": {"avg": 600.0}}, schema_version="1.5")
    )
    assert run.itl_ms is None and run.aggregate_tok_s is not None
    assert run.warnings == [
        "no inter_token_latency in the export (was the run streaming?): no per-token step time or tax "
        "can be derived"
    ]
