"""The AIPerf metric reader (`io/aiperf/metrics.py`): which statistic, which unit, which range,
and the ITL whose unit contradicts the export's own per-user throughput (issue 10 item 10: an
import that would lie about provenance is refused).

Most exports are written here, in tmp_path, from numbers stated in each test, so nothing depends
on fixture files: avg and p50 differ in every block, so reading one for the other fails. The
mislabelled-unit tests edit a real export (the TRT-LLM DeepEP c4 run, 51.9 ms per token).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from calibrate.user_runs import DEEPEP_NAME, DENSE_NAME, REAL
from cli_runner import run_cli
from deepep_calc.base.errors import FileInputError
from deepep_calc.base.quantity import Tag
from deepep_calc.io.aiperf import (
    MAX_METRIC,
    MIN_POSITIVE,
    _Blocks,
    _csv_cell,
    _csv_tag,
    _number,
    load_aiperf,
)
from deepep_calc.io.aiperf.metrics import json_type

EXPORT: dict[str, Any] = {
    "schema_version": "1.5",
    "benchmark_id": "b-1",
    "inter_token_latency": {"unit": "ms", "avg": 50.0, "p50": 48.0, "std": 2.0, "count": 1000},
    "time_to_first_token": {"unit": "ms", "avg": 200.0, "p50": 180.0},
    "output_token_throughput_per_user": {"unit": "tokens/sec/user", "avg": 20.0, "p50": 21.0},
    "output_token_throughput": {"unit": "tokens/sec", "avg": 600.0, "p50": 590.0},
    "request_latency": {"unit": "ms", "avg": 6500.0, "p50": 6400.0},
    "input_sequence_length": {"unit": "tokens", "avg": 120.0, "p50": 119.0},
    "output_sequence_length": {"unit": "tokens", "avg": 128.0, "p50": 127.0},
    "request_count": {"unit": "requests", "avg": 100},
}


def _write(tmp_path: Path, doc: dict[str, Any], name: str = "run.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _blocks(metrics: dict[str, Any]) -> _Blocks:
    return _Blocks(Path("x.json"), metrics, "AIPerf x.json")


def test_means_are_read_from_avg_and_medians_from_p50(tmp_path: Path) -> None:
    run = load_aiperf(_write(tmp_path, EXPORT))
    assert run.itl_ms.value == 50.0 and run.itl_p50_ms.value == 48.0
    assert run.itl_std_ms.value == 2.0 and run.itl_count.value == 1000
    assert run.ttft_ms.value == 200.0 and run.ttft_p50_ms.value == 180.0
    assert run.per_user_tok_s.value == 20.0  # avg, not the p50 of 21
    assert run.aggregate_tok_s.value == 600.0
    assert run.request_latency_ms.value == 6500.0
    assert run.isl_measured.value == 120.0 and run.osl_measured.value == 128.0
    assert run.request_count == 100


def test_every_figure_is_measured_with_its_unit_and_source(tmp_path: Path) -> None:
    run = load_aiperf(_write(tmp_path, EXPORT))
    units = {
        "itl_ms": "ms",
        "ttft_p50_ms": "ms",
        "per_user_tok_s": "tok/s/user",
        "aggregate_tok_s": "tok/s",
        "isl_measured": "tokens",
        "itl_count": "requests",
    }
    for name, unit in units.items():
        q = getattr(run, name)
        assert q.tag is Tag.MEASURED and q.unit == unit, name
    assert run.per_user_tok_s.source == "AIPerf run.json benchmark b-1: output_token_throughput_per_user.avg"
    assert run.ttft_p50_ms.source.endswith("time_to_first_token.p50")


@pytest.mark.parametrize(
    "unit,factor",
    [("ms", 1.0), ("s", 1000.0), ("sec", 1000.0), ("us", 1e-3), ("µs", 1e-3), ("ns", 1e-6), (" s ", 1000.0)],
)
def test_time_metrics_are_converted_to_ms(unit: str, factor: float) -> None:
    b = _blocks({"inter_token_latency": {"unit": unit, "avg": 2.0, "p50": 3.0}})
    assert b.stat("inter_token_latency", "avg", "ms", time=True).value == pytest.approx(2.0 * factor)
    assert b.stat("inter_token_latency", "p50", "ms", time=True).value == pytest.approx(3.0 * factor)


def test_a_time_metric_without_unit_is_ms_and_an_unknown_unit_is_refused() -> None:
    assert _blocks({"t": {"avg": 2.0}}).stat("t", "avg", "ms", time=True).value == 2.0
    assert _blocks({"t": {"avg": 2.0, "unit": None}}).stat("t", "avg", "ms", time=True).value == 2.0
    with pytest.raises(FileInputError, match=r"metric 't' is in 'tokens', expected a time unit \(ms\)"):
        _blocks({"t": {"avg": 2.0, "unit": "tokens"}}).stat("t", "avg", "ms", time=True)


def test_rates_are_never_rescaled_by_their_unit() -> None:
    b = _blocks({"r": {"unit": "s", "avg": 2.0}})
    assert b.stat("r", "avg", "tok/s").value == 2.0


def test_missing_blocks_and_statistics_are_none() -> None:
    b = _blocks({"t": {"unit": "ms", "avg": 2.0}})
    assert b.stat("absent", "avg", "ms") is None
    assert b.stat("t", "p50", "ms") is None
    assert b.block("absent") is None


@pytest.mark.parametrize(
    "raw,needle",
    [
        ([1, 2], "metric 't' is an array, expected an object with unit and avg"),
        ("12", "metric 't' is a string, expected an object with unit and avg"),
        ({"unit": "ms"}, "metric 't' has no numeric avg \\(got None\\)"),
        ({"unit": "ms", "avg": "12"}, "metric 't' has no numeric avg \\(got '12'\\)"),
        ({"unit": "ms", "avg": True}, "no numeric avg"),
    ],
)
def test_malformed_blocks_are_refused(raw: Any, needle: str) -> None:
    with pytest.raises(FileInputError, match=needle) as err:
        _blocks({"t": raw}).block("t")
    assert err.value.field == "t"


def test_a_non_numeric_statistic_is_refused() -> None:
    with pytest.raises(FileInputError, match=r"metric 't' has a non-numeric p50 \('n/a'\)"):
        _blocks({"t": {"unit": "ms", "avg": 1.0, "p50": "n/a"}}).stat("t", "p50", "ms")


def test_ranges() -> None:
    """Never negative nor above 1e12; the means the A/B divides by (ITL, per-user, aggregate avg)
    at least 1e-6; other statistics may be 0."""
    ok = _blocks(
        {
            "inter_token_latency": {"avg": MIN_POSITIVE, "p50": 0.0},
            "time_to_first_token": {"avg": 0.0, "p50": MAX_METRIC},
        }
    )
    assert ok.stat("inter_token_latency", "avg", "ms").value == MIN_POSITIVE
    assert ok.stat("inter_token_latency", "p50", "ms").value == 0.0
    assert ok.stat("time_to_first_token", "avg", "ms").value == 0.0
    assert ok.stat("time_to_first_token", "p50", "ms").value == MAX_METRIC
    for tag in ("inter_token_latency", "output_token_throughput_per_user", "output_token_throughput"):
        with pytest.raises(FileInputError, match=f"metric '{tag}' has avg = 0; expected at least 1e-06"):
            _blocks({tag: {"avg": 0.0}}).stat(tag, "avg", "x")
        with pytest.raises(FileInputError, match="expected at least 1e-06"):
            _blocks({tag: {"avg": MIN_POSITIVE / 2}}).stat(tag, "avg", "x")
    with pytest.raises(FileInputError, match=r"has p50 = -1; expected at least 0 and below 1e12"):
        _blocks({"t": {"avg": 1.0, "p50": -1.0}}).stat("t", "p50", "ms")
    with pytest.raises(FileInputError, match="below 1e12"):
        _blocks({"t": {"avg": 1.0, "p50": MAX_METRIC * 1.001}}).stat("t", "p50", "ms")


def test_numbers() -> None:
    assert _number(3) == 3.0 and type(_number(3)) is float
    assert _number(2.5) == 2.5
    for bad in (True, False, "1", None, float("nan"), float("inf"), -float("inf"), [1]):
        assert _number(bad) is None, bad


def test_counts() -> None:
    """A bare number or a block's avg, rounded; absent is None; text or out of range is refused."""
    assert _blocks({"request_count": 100}).count("request_count") == 100
    assert _blocks({"request_count": {"avg": 99.6}}).count("request_count") == 100
    assert _blocks({"request_count": {"avg": 99.4}}).count("request_count") == 99
    assert _blocks({}).count("request_count") is None
    with pytest.raises(FileInputError, match="metric 'request_count' is a string"):
        _blocks({"request_count": "many"}).count("request_count")
    with pytest.raises(FileInputError, match="count = -3"):
        _blocks({"error_request_count": -3}).count("error_request_count")


def test_any_other_statistic_through_metric(tmp_path: Path) -> None:
    run = load_aiperf(_write(tmp_path, EXPORT))
    p50 = run.metric("inter_token_latency", "p50")
    assert (p50.value, p50.unit, p50.tag) == (48.0, "ms", Tag.MEASURED)
    assert p50.source.endswith("inter_token_latency.p50")
    assert run.metric("output_token_throughput").value == 600.0  # avg by default
    assert run.metric("output_token_throughput").unit == "tokens/sec"
    assert run.metric("absent") is None
    assert run.metric("inter_token_latency", "p99") is None
    assert run.metric("schema_version") is None  # not a block
    doc = {**EXPORT, "odd": {"avg": 1.0, "p90": "x"}}
    odd = load_aiperf(_write(tmp_path, doc, "odd.json"))
    assert odd.metric("odd", "p90") is None and odd.metric("odd").unit == ""


@pytest.mark.parametrize(
    "label,tag,unit",
    [
        ("Inter Token Latency (ms)", "inter_token_latency", "ms"),
        (
            "Output Token Throughput Per User (tokens/sec/user)",
            "output_token_throughput_per_user",
            "tokens/sec/user",
        ),
        ("  Time To First Token (ms) ", "time_to_first_token", "ms"),
        ("Request Count", "request_count", ""),
        ("Odd (x) (y)", "odd_x", "y"),
    ],
)
def test_csv_display_names_to_tags(label: str, tag: str, unit: str) -> None:
    assert _csv_tag(label) == (tag, unit)


def test_csv_cells() -> None:
    assert _csv_cell("") is None and _csv_cell("   ") is None
    assert _csv_cell(" 7 ") == 7.0
    assert _csv_cell("1,234.5") == 1234.5
    assert _csv_cell("abc") == "abc"
    assert _csv_cell("inf") == "inf" and _csv_cell("nan") == "nan"


def test_csv_export_reads_avg_and_the_value_table(tmp_path: Path) -> None:
    """Record metrics come with avg and p50 columns, derived metrics with one Value column
    (read as their avg); seconds are converted like in JSON."""
    text = "\n".join(
        [
            "Metric,avg,min,max,p50,std",
            "Inter Token Latency (s),0.05,0.04,0.06,0.048,0.002",
            "Time To First Token (ms),200,150,260,180,20",
            "Output Token Throughput Per User (tokens/sec/user),20,18,22,21,1",
            "",
            "Metric,Value",
            "Output Token Throughput (tokens/sec),600",
            "Request Count (requests),100",
        ]
    )
    path = tmp_path / "profile_export_aiperf.csv"
    path.write_text(text, encoding="utf-8")
    run = load_aiperf(path)
    assert run.itl_ms.value == pytest.approx(50.0) and run.itl_p50_ms.value == pytest.approx(48.0)
    assert run.per_user_tok_s.value == 20.0
    assert run.aggregate_tok_s.value == 600.0
    assert run.ttft_p50_ms.value == 180.0
    assert run.request_count == 100


def test_metric_block_with_text_avg(tmp_path: Path) -> None:
    bad = tmp_path / "text_avg.json"
    bad.write_text(json.dumps({"inter_token_latency": {"unit": "ms", "avg": "fast"}}))
    with pytest.raises(FileInputError, match="no numeric avg"):
        load_aiperf(bad)


def test_seconds_are_converted_to_ms(tmp_path: Path) -> None:
    f = tmp_path / "seconds.json"
    f.write_text(json.dumps({"inter_token_latency": {"unit": "s", "avg": 0.05, "p50": 0.049}}))
    run = load_aiperf(f)
    assert run.itl_ms.scalar == pytest.approx(50.0)  # type: ignore[union-attr]
    assert run.itl_p50_ms.unit == "ms"  # type: ignore[union-attr]
    assert any("no schema_version" in w for w in run.warnings)


def test_json_type_names_a_value_with_its_article() -> None:
    assert [json_type(v) for v in ({}, [], "", True, None, 1, 1.5)] == [
        "an object",
        "an array",
        "a string",
        "a boolean",
        "a null",
        "a number",
        "a number",
    ]


# AIPerf: ITL against per-user throughput ---------------------------------------------------------


def _export(tmp_path: Path, name: str, **itl: Any) -> Path:
    doc = json.loads((REAL / name).read_text("utf-8"))
    doc["inter_token_latency"].update(itl)
    path = tmp_path / name
    path.write_text(json.dumps(doc), "utf-8")
    return path


def test_itl_in_seconds_that_is_really_milliseconds_is_refused(tmp_path: Path) -> None:
    path = _export(tmp_path, DEEPEP_NAME, unit="s")
    with pytest.raises(FileInputError) as info:
        load_aiperf(path)
    msg = info.value.message
    assert info.value.field == "inter_token_latency"
    assert "51.9 ms per token" in msg and "51,899.9 ms" in msg and "reads right in 'ms'" in msg


def test_itl_in_seconds_that_is_really_seconds_is_converted(tmp_path: Path) -> None:
    doc = json.loads((REAL / DEEPEP_NAME).read_text("utf-8"))
    block = doc["inter_token_latency"]
    for stat in ("avg", "p50", "std", "min", "max", "p1", "p5", "p10", "p25", "p75", "p90", "p95", "p99"):
        if isinstance(block.get(stat), int | float):
            block[stat] = block[stat] / 1000.0
    block["unit"] = "s"
    path = tmp_path / DEEPEP_NAME
    path.write_text(json.dumps(doc), "utf-8")
    run = load_aiperf(path)
    assert run.itl_ms is not None and run.itl_ms.scalar == pytest.approx(51.8999, rel=1e-4)


def test_the_cli_refuses_the_mislabelled_export_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = _export(tmp_path, DEEPEP_NAME, unit="s")
    code, out, err = run_cli(
        capsys, "calibrate", "--dense", REAL / DENSE_NAME, "--deepep", bad, "-o", tmp_path / "p.toml"
    )
    assert code == 2 and not out and err.count("\n") == 1 and "inter_token_latency" in err
    assert not (tmp_path / "p.toml").exists()


def test_an_itl_within_twice_the_per_user_step_is_accepted_and_no_unit_fits_no_hint(tmp_path: Path) -> None:
    """20 tok/s per user is 50 ms per token: an ITL of 99 ms is within the factor of 2 (a run's
    ITL and per-user figures differ by a few per cent); 250 ms in "s" is 250,000 ms, and no time
    unit brings it within 2x of 50 ms, so the refusal offers none."""
    doc = {**EXPORT, "inter_token_latency": {"unit": "ms", "avg": 99.0}}
    assert load_aiperf(_write(tmp_path, doc, "ok.json")).itl_ms.value == 99.0
    doc = {**EXPORT, "inter_token_latency": {"unit": "s", "avg": 250.0}}
    with pytest.raises(FileInputError) as info:
        load_aiperf(_write(tmp_path, doc, "bad.json"))
    assert "the two disagree by more than 2x" in info.value.message
    assert "reads right in" not in info.value.message
