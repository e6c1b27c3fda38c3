"""AIPerf import: the real exports in tests/fixtures/aiperf, every layout generation, and the guard rails.

The real fixtures pin the numbers the calibration rests on (the TRT-LLM conc-4 A/B and the
vLLM multi-comm runs); the hand-made ones under fixtures/aiperf_extra pin the layouts and the
failure modes a user's own files will show.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from deepep_calc.base.errors import FileInputError, InputError
from deepep_calc.base.quantity import Tag
from deepep_calc.io.aiperf import (
    AIPerfRun,
    check_pair,
    derive_pair,
    group_by_concurrency,
    load_aiperf,
    normalise_model,
    parse_export_name,
)
from deepep_calc.io.aiperf.cold_start import cold_start
from paths import TESTS

REAL = TESTS / "fixtures" / "aiperf"
EXTRA = TESTS / "fixtures" / "aiperf_extra"

PREFIX = "qwen3-30b-a3b-fp8_ep16_2xp5en"
TRT_DENSE = REAL / f"trtllm-0.21_{PREFIX}_dense-allgather_c4_isl120.json"
TRT_DEEPEP = REAL / f"trtllm-0.21_{PREFIX}_deepep-epnc1_c4_isl120.json"


def vllm(comms: int, conc: int, suffix: str = "json") -> Path:
    return REAL / f"vllm-0.24_{PREFIX}_deepep-epnc{comms}_c{conc}_isl120.{suffix}"


def sglang(conc: int) -> Path:
    return REAL / f"sglang-0.5.11_{PREFIX}_deepep-epnc8_c{conc}_isl120.json"


REAL_FILES = sorted(REAL.glob("*.json")) + sorted(REAL.glob("*.csv"))


# --------------------------------------------------------------------------------------------
# real exports


def test_real_fixture_set_is_not_empty() -> None:
    assert len(REAL_FILES) >= 15


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_every_real_export_imports(path: Path) -> None:
    run = load_aiperf(path)
    expected_conc = int(re.search(r"_c(\d+)_", path.name).group(1))  # type: ignore[union-attr]
    assert run.concurrency == expected_conc
    assert run.itl_ms is not None and run.itl_ms.tag is Tag.MEASURED
    assert run.per_user_tok_s is not None and run.per_user_tok_s.scalar > 0
    assert run.aggregate_tok_s is not None and run.aggregate_tok_s.scalar > 0
    assert run.osl_measured is not None and abs(run.osl_measured.scalar - 128) < 1
    assert not run.was_cancelled and run.error_count == 0
    assert path.name in run.itl_ms.source
    if path.suffix == ".json":
        assert run.schema_version == "1.3"
        assert run.benchmark_id and run.benchmark_id in run.itl_ms.source
        assert run.model == "Qwen/Qwen3-30B-A3B-FP8"  # hub id, HF-cache path and snapshot hash
        assert run.isl_requested == 120 and run.osl_requested == 128
        assert run.streaming is True
        # every TRT-LLM export's first wave waited for a cold start (io/aiperf/cold_start.py)
        cold = [w for w in run.warnings if "cold start" in w]
        assert [w for w in run.warnings if w not in cold] == []
        assert len(cold) == (1 if path.name.startswith("trtllm") else 0)
        assert (run.steady_aggregate_tok_s is not None) == bool(cold)


def test_file_name_hints() -> None:
    run = load_aiperf(vllm(8, 4))
    assert (run.engine, run.engine_version, run.leg, run.leg_label, run.comms) == (
        "vllm",
        "0.24",
        "deepep",
        "deepep-epnc8",
        8,
    )
    dense = load_aiperf(TRT_DENSE)
    assert (dense.engine, dense.leg, dense.comms) == ("trtllm", "dense", None)


def test_trt_conc4_pair_numbers_and_provenance() -> None:
    dense, deepep = load_aiperf(TRT_DENSE), load_aiperf(TRT_DEEPEP)
    pair = derive_pair(dense, deepep)

    assert round(pair.per_user_dense.scalar, 2) == 28.06  # type: ignore[union-attr]
    assert round(pair.per_user_deepep.scalar, 2) == 19.27  # type: ignore[union-attr]
    assert round(pair.step_ms_dense.scalar, 2) == 35.63  # 35.6347...: the facts' "35.64"
    assert abs(pair.step_ms_dense.scalar - 35.64) < 0.01
    assert round(pair.step_ms_deepep.scalar, 2) == 51.90
    assert abs(pair.tax_ms.scalar - 16.3) <= 0.05
    assert pair.tax_ms.unit == "ms"

    # imported values are measured, as exported; computed ones are derived
    for q in (
        pair.per_user_dense,
        pair.per_user_deepep,
        pair.step_ms_dense,
        pair.step_ms_deepep,
        dense.ttft_ms,
        dense.aggregate_tok_s,
        dense.isl_measured,
    ):
        assert q is not None and q.tag is Tag.MEASURED
    for q in (
        pair.tax_ms,
        pair.tax_spread_ms,
        pair.tax_from_per_user_ms,
        pair.per_user_ratio,
        pair.aggregate_ratio,
        pair.ttft_ratio,
    ):
        assert q is not None and q.tag is Tag.DERIVED

    # sources name the file and the benchmark id; the tax rests on both arms
    assert TRT_DENSE.name in pair.step_ms_dense.source
    assert "fae6e9f1f9fc" in pair.step_ms_dense.source
    assert TRT_DEEPEP.name in pair.step_ms_deepep.source
    assert "e27e731ea174" in pair.step_ms_deepep.source
    for part in (TRT_DENSE.name, TRT_DEEPEP.name, "fae6e9f1f9fc", "e27e731ea174"):
        assert part in pair.tax_ms.source

    assert 0.02 < pair.tax_spread_ms.scalar < 0.2  # type: ignore[union-attr]
    assert abs(pair.tax_from_per_user_ms.scalar - 16.27) < 0.05  # type: ignore[union-attr]
    assert abs(pair.per_user_ratio.scalar - 19.268 / 28.064) < 1e-3  # type: ignore[union-attr]
    assert abs(pair.aggregate_ratio.scalar - 64.236 / 106.358) < 1e-3  # type: ignore[union-attr]
    assert pair.ttft_basis == "p50"
    assert abs(pair.ttft_ratio.scalar - 210.9 / 116.9) < 0.01  # type: ignore[union-attr]
    assert pair.concurrency == 4
    # both runs' first waves waited for a cold start; at steady state the ratio is 74.38 / 110.24
    assert [w.split(" (")[0] for w in pair.warnings] == ["dense run", "DeepEP run"]
    assert all("cold start" in w for w in pair.warnings)
    assert pair.steady_aggregate_ratio is not None and pair.steady_aggregate_ratio.tag is Tag.DERIVED
    assert abs(pair.steady_aggregate_ratio.scalar - 74.376 / 110.236) < 1e-3


@pytest.mark.parametrize("conc", [4, 8, 32])
def test_vllm_multicomm_ratio(conc: int) -> None:
    one, eight = load_aiperf(vllm(1, conc)), load_aiperf(vllm(8, conc))
    assert one.concurrency == eight.concurrency == conc
    assert (one.comms, eight.comms) == (1, 8)
    # same workload, so a valid comparison; the only remark is that the "dense" slot holds a
    # DeepEP run, which is what this comparison deliberately does
    assert check_pair(one, eight) == ["the dense run is named 'deepep-epnc1'"]
    ratio = eight.per_user_tok_s / one.per_user_tok_s  # type: ignore[operator]
    assert ratio.tag is Tag.DERIVED
    assert 1.8 <= ratio.scalar <= 2.2


def test_group_by_concurrency() -> None:
    runs = [load_aiperf(vllm(k, c)) for k in (1, 8) for c in (32, 4, 8)]
    groups = group_by_concurrency(runs)
    assert list(groups) == [4, 8, 32]
    assert all(len(v) == 2 for v in groups.values())
    assert [r.comms for r in groups[8]] == [1, 8]


def test_sglang_itl() -> None:
    itl = {c: load_aiperf(sglang(c)).itl_ms.scalar for c in (4, 8, 32)}  # type: ignore[union-attr]
    assert itl[4] == pytest.approx(113.5, abs=0.1)
    assert itl[8] == pytest.approx(116.8, abs=0.1)
    assert itl[32] == pytest.approx(121.2, abs=0.1)


def test_vllm_csv_twin_matches_json() -> None:
    from_json, from_csv = load_aiperf(vllm(8, 4)), load_aiperf(vllm(8, 4, "csv"))
    assert from_csv.export_format == "csv"
    for attr in ("itl_ms", "per_user_tok_s", "aggregate_tok_s", "ttft_ms", "itl_p50_ms"):
        a, b = getattr(from_json, attr), getattr(from_csv, attr)
        assert round(a.scalar, 2) == pytest.approx(b.scalar, abs=1e-9), attr
        assert b.tag is Tag.MEASURED
    assert from_csv.itl_count.scalar == 40  # type: ignore[union-attr]  # recovered as sum / avg
    assert from_csv.request_count == 40
    assert from_csv.concurrency == 4
    assert any("file name" in w for w in from_csv.warnings)
    assert from_csv.benchmark_id is None and from_csv.path.name in from_csv.itl_ms.source  # type: ignore[union-attr]


def test_hand_made_csv_matches_trt_dense_json() -> None:
    from_csv = load_aiperf(EXTRA / TRT_DENSE.with_suffix(".csv").name)
    from_json = load_aiperf(TRT_DENSE)
    assert from_csv.concurrency == 4 and from_csv.leg == "dense"
    assert from_csv.itl_ms.scalar == round(from_json.itl_ms.scalar, 2)  # type: ignore[union-attr]
    assert from_csv.per_user_tok_s.scalar == 28.06  # type: ignore[union-attr]
    assert from_csv.aggregate_tok_s.scalar == 106.36  # type: ignore[union-attr]


def test_folder_import_and_ambiguity(tmp_path: Path) -> None:
    run_dir = tmp_path / "trtllm_dense-allgather_c4"
    run_dir.mkdir()
    (run_dir / "profile_export_aiperf.json").write_bytes(TRT_DENSE.read_bytes())
    (run_dir / "profile_export_aiperf.csv").write_text("not read: the JSON wins\n")
    run = load_aiperf(run_dir)
    assert run.path.name == "profile_export_aiperf.json"
    assert run.leg == "dense"  # hints fall back to the folder name
    assert "trtllm_dense-allgather_c4/profile_export_aiperf.json" in run.itl_ms.source  # type: ignore[union-attr]

    only_csv = tmp_path / "csv_only"
    only_csv.mkdir()
    (only_csv / "profile_export_aiperf.csv").write_bytes(vllm(8, 4, "csv").read_bytes())
    assert load_aiperf(only_csv).export_format == "csv"

    two = tmp_path / "two_runs"
    two.mkdir()
    for name in ("a_aiperf.json", "b_aiperf.json"):
        (two / name).write_bytes(TRT_DENSE.read_bytes())
    with pytest.raises(FileInputError, match="2 candidate AIPerf exports") as info:
        load_aiperf(two)  # we ask rather than guess which run was meant
    assert "two_runs" in info.value.message


# --------------------------------------------------------------------------------------------
# layouts


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


# --------------------------------------------------------------------------------------------
# errors


MALFORMED = [
    ("empty.json", "empty"),
    ("truncated.json", "truncated JSON"),
    ("non_utf8.json", "not UTF-8"),
    ("json_array.json", "top level is an array"),
    ("no_metrics.json", "no AIPerf metric blocks"),
    ("bad_metric_block.json", "'inter_token_latency' is an array"),
    ("empty_dir", "no AIPerf export in this folder"),
    ("does_not_exist.json", "no such file"),
]


@pytest.mark.parametrize(("name", "needle"), MALFORMED)
def test_malformed_inputs_raise_one_line(name: str, needle: str) -> None:
    with pytest.raises(FileInputError) as info:
        load_aiperf(EXTRA / name)
    message = info.value.message
    assert name in message
    assert needle in message
    assert "\n" not in message
    assert info.value.exit_code == 2


def test_oversized_file_is_refused_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "huge_profile.json"
    with big.open("wb") as fh:  # sparse: no 50 MB actually written
        fh.truncate(50 * 1024 * 1024 + 1)
    with pytest.raises(FileInputError, match="over the 50 MB limit") as info:
        load_aiperf(big)
    assert "huge_profile.json" in info.value.message


def test_not_json_at_all(tmp_path: Path) -> None:
    bad = tmp_path / "garbage.json"
    bad.write_text("{'single': 'quotes'}")
    with pytest.raises(FileInputError, match="not valid JSON") as info:
        load_aiperf(bad)
    assert "\n" not in info.value.message


def test_metric_block_with_text_avg(tmp_path: Path) -> None:
    bad = tmp_path / "text_avg.json"
    bad.write_text(json.dumps({"inter_token_latency": {"unit": "ms", "avg": "fast"}}))
    with pytest.raises(FileInputError, match="no numeric avg"):
        load_aiperf(bad)


def test_csv_without_metric_table(tmp_path: Path) -> None:
    bad = tmp_path / "other.csv"
    bad.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(FileInputError, match="not an AIPerf CSV export"):
        load_aiperf(bad)


def test_seconds_are_converted_to_ms(tmp_path: Path) -> None:
    f = tmp_path / "seconds.json"
    f.write_text(json.dumps({"inter_token_latency": {"unit": "s", "avg": 0.05, "p50": 0.049}}))
    run = load_aiperf(f)
    assert run.itl_ms.scalar == pytest.approx(50.0)  # type: ignore[union-attr]
    assert run.itl_p50_ms.unit == "ms"  # type: ignore[union-attr]
    assert any("no schema_version" in w for w in run.warnings)


# --------------------------------------------------------------------------------------------
# pairs


def test_mismatched_concurrency_is_an_input_error() -> None:
    with pytest.raises(InputError) as info:
        derive_pair(load_aiperf(vllm(1, 4)), load_aiperf(vllm(8, 8)))
    assert info.value.field == "concurrency"
    assert "concurrency" in info.value.message
    assert "4" in info.value.message and "8" in info.value.message
    assert "\n" not in info.value.message


def test_mismatched_model_and_lengths(tmp_path: Path) -> None:
    base = json.loads(TRT_DENSE.read_text())

    def variant(name: str, **edits: object) -> AIPerfRun:
        doc = json.loads(json.dumps(base))
        for key, value in edits.items():
            if key == "model":
                doc["input_config"]["models"]["items"][0]["name"] = value
                doc["input_config"]["tokenizer"]["name"] = value
            else:
                doc["input_config"]["datasets"][0]["prompts"][key]["mean"] = value
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        return load_aiperf(path)

    dense = load_aiperf(TRT_DENSE)
    with pytest.raises(InputError) as info:
        check_pair(dense, variant("other_model.json", model="deepseek-ai/DeepSeek-V3"))
    assert info.value.field == "model" and "DeepSeek-V3" in info.value.message
    with pytest.raises(InputError) as info:
        check_pair(dense, variant("long_isl.json", isl=2048.0))
    assert info.value.field == "isl" and "2048" in info.value.message
    with pytest.raises(InputError) as info:
        check_pair(dense, variant("long_osl.json", osl=256.0))
    assert info.value.field == "osl"


def test_pair_warnings_for_small_issues() -> None:
    dense = load_aiperf(TRT_DENSE)
    swapped = check_pair(load_aiperf(TRT_DEEPEP), dense)
    assert any("the dense run is named 'deepep-epnc1'" in w for w in swapped)
    cancelled = check_pair(dense, load_aiperf(EXTRA / "cancelled_run.json"))
    assert any(w.startswith("DeepEP run (cancelled_run.json)") for w in cancelled)


def test_group_by_concurrency_refuses_unknown(tmp_path: Path) -> None:
    f = tmp_path / "no_conc.json"
    f.write_text(json.dumps({"inter_token_latency": {"unit": "ms", "avg": 50.0}}))
    with pytest.raises(InputError, match="concurrency"):
        group_by_concurrency([load_aiperf(f)])


# --------------------------------------------------------------------------------------------
# helpers


def test_normalise_model_spellings() -> None:
    h = "d206ba732169f29bb77fbf80fc2c4b81d4d30782"
    cache = f"/data/hf/hub/models--Qwen--Qwen3-30B-A3B-FP8/snapshots/{h}/"
    assert normalise_model(cache) == "Qwen/Qwen3-30B-A3B-FP8"
    assert normalise_model(h, cache) == "Qwen/Qwen3-30B-A3B-FP8"
    assert normalise_model(h, None) == h
    assert normalise_model("Qwen/Qwen3-30B-A3B-FP8") == "Qwen/Qwen3-30B-A3B-FP8"
    assert normalise_model(None) is None


def test_parse_export_name() -> None:
    hints = parse_export_name(f"sglang-0.5.11_{PREFIX}_deepep-epnc8_c32_isl120.json")
    assert (
        hints.engine,
        hints.engine_version,
        hints.leg,
        hints.comms,
        hints.concurrency,
        hints.isl,
    ) == ("sglang", "0.5.11", "deepep", 8, 32, 120)
    assert parse_export_name("profile_export_aiperf.json").engine is None


# The DeepEP c4 run of the calibration pair, as its export states it (ms, s, tokens).
_K1_C4 = {
    "ttft_p50_ms": 210.9484235,
    "ttft_mean_ms": 1375.3852287,
    "ttft_max_ms": 11074.693192,
    "concurrency": 4,
    "requests": 40,
    "duration_s": 79.689913033,
    "output_tokens": 5119.0,
}


def test_a_first_wave_cold_start_is_found_and_left_out_of_the_steady_aggregate() -> None:
    found = cold_start(**_K1_C4)
    assert found is not None
    assert math.isclose(found.wait_s, (11074.693192 - 210.9484235) / 1000.0)
    assert math.isclose(found.steady_aggregate_tok_s, 5119.0 / (79.689913033 - found.wait_s))
    assert "first 4 requests waited 10.9 s" in found.words(4)
    run = load_aiperf(REAL / "trtllm-0.21_qwen3-30b-a3b-fp8_ep16_2xp5en_deepep-epnc1_c4_isl120.json")
    assert run.steady_aggregate_tok_s is not None and run.steady_aggregate_tok_s.tag is Tag.DERIVED
    assert math.isclose(run.steady_aggregate_tok_s.scalar, found.steady_aggregate_tok_s)


@pytest.mark.parametrize(
    "change",
    [
        {"ttft_mean_ms": 1900.0},  # the mean says more requests waited than the first wave: no
        {"ttft_mean_ms": 300.0},  # ... or fewer (one slow request, not a wave)
        {"ttft_max_ms": 900.0},  # a wait under 1 % of the run: within the run-to-run spread
        {"concurrency": 40},  # one wave is the whole run
        {"requests": None},  # a statistic the export lacks
        {"duration_s": 5.0},  # a "wait" longer than the run
    ],
)
def test_no_cold_start_without_its_signature(change: dict[str, Any]) -> None:
    assert cold_start(**{**_K1_C4, **change}) is None


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
