"""Importing an AIPerf run (`io/aiperf/reader.py`): the export found in an artifact folder, its
generation told apart (CSV, the older records JSON, the flat JSON), and every real export of
tests/fixtures/aiperf read; a file that is not an export is one line naming it.

The real fixtures pin the numbers the calibration rests on (the TRT-LLM conc-4 A/B and the
vLLM multi-comm runs); the hand-made ones under fixtures/aiperf_extra pin the failure modes a
user's own files will show.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from calibrate.user_runs import EXTRA, REAL, TRT_DENSE, sglang, vllm
from deepep_calc.base.errors import FileInputError
from deepep_calc.base.quantity import Tag
from deepep_calc.io.aiperf import flat, load_aiperf, records
from deepep_calc.io.aiperf.reader import JSON_LAYOUTS, decode_json, find_export, read_export
from one_line import assert_one_line

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


def test_sglang_itl() -> None:
    itl = {c: load_aiperf(sglang(c)).itl_ms.scalar for c in (4, 8, 32)}  # type: ignore[union-attr]
    assert itl[4] == pytest.approx(113.5, abs=0.1)
    assert itl[8] == pytest.approx(116.8, abs=0.1)
    assert itl[32] == pytest.approx(121.2, abs=0.1)


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
# finding the export in a folder, telling its generation


def test_a_folder_prefers_the_canonical_json_then_one_json_then_the_csv(tmp_path: Path) -> None:
    (tmp_path / "x_aiperf.csv").write_text("")
    (tmp_path / "notes.json").write_text("{}")  # not named like an export: never a candidate
    assert find_export(tmp_path).name == "x_aiperf.csv"
    (tmp_path / "profile_export_aiperf.csv").write_text("")
    assert find_export(tmp_path).name == "profile_export_aiperf.csv"
    (tmp_path / "run_aiperf.json").write_text("{}")
    assert find_export(tmp_path).name == "run_aiperf.json"
    (tmp_path / "profile_export_aiperf.json").write_text("{}")
    assert find_export(tmp_path).name == "profile_export_aiperf.json"


def test_many_candidates_are_listed_four_at_most(tmp_path: Path) -> None:
    for name in "abcde":
        (tmp_path / f"{name}_aiperf.json").write_text("{}")
    with pytest.raises(FileInputError) as info:
        find_export(tmp_path)
    listed = "a_aiperf.json, b_aiperf.json, c_aiperf.json, d_aiperf.json, ..."
    assert_one_line(info.value, f"5 candidate AIPerf exports ({listed}); pass one file")


def test_two_csvs_and_no_json_are_no_export(tmp_path: Path) -> None:
    (tmp_path / "x_aiperf.csv").write_text("")
    (tmp_path / "y_aiperf.csv").write_text("")
    with pytest.raises(FileInputError) as info:
        find_export(tmp_path)
    assert_one_line(info.value, "no AIPerf export in this folder (looked for profile_export_aiperf.json")


def test_the_generation_is_told_by_suffix_then_by_the_first_character() -> None:
    """.csv is CSV and .json is JSON whatever they hold; any other name is JSON when its text
    starts like JSON. Within JSON the older records layout is tried first: the flat one claims
    every object."""
    block = '{"inter_token_latency": {"avg": 1}}'
    assert read_export(Path("export"), block).fmt == "json"
    assert read_export(Path("export"), "Metric,avg\nInter Token Latency (ms),5\n").fmt == "csv"
    assert read_export(Path("x.json"), '{"records": ' + block + "}").fmt == "json-records"
    with pytest.raises(FileInputError, match="not valid JSON"):
        read_export(Path("x.json"), "Metric,avg\n")
    assert [claims.__module__ for claims, _ in JSON_LAYOUTS] == [records.__name__, flat.__name__]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('{"a": "abc', "truncated JSON: the document ends at line 1 before it is complete"),
        ('{"a": 1,\n "b": }', "not valid JSON (Expecting value at line 2 column 7)"),
        ("[" * 100_000, "not valid JSON (nested too deeply)"),
        ("1" * 5000, "not valid JSON (a number with thousands of digits)"),
        ('"text"', "JSON top level is a string, expected an object (an AIPerf export)"),
    ],
)
def test_a_document_that_is_not_an_object_is_refused_in_one_line(text: str, needle: str) -> None:
    with pytest.raises(FileInputError) as info:
        decode_json(Path("x.json"), text)
    assert_one_line(info.value, "x.json: ", needle)


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


def test_not_json_at_all(tmp_path: Path) -> None:
    bad = tmp_path / "garbage.json"
    bad.write_text("{'single': 'quotes'}")
    with pytest.raises(FileInputError, match="not valid JSON") as info:
        load_aiperf(bad)
    assert "\n" not in info.value.message
