"""The CSV export (`io/aiperf/csv_export.py`): metric tables keyed by display names, rebuilt into
the flat layout's blocks (a Value column is the avg; a count is recovered as sum / avg), anything
after them ignored; the CSV states no configuration, so its workload comes from the file name."""

from __future__ import annotations

from pathlib import Path

import pytest

from calibrate.user_runs import EXTRA, TRT_DENSE, vllm
from deepep_calc.base.errors import FileInputError
from deepep_calc.base.quantity import Tag
from deepep_calc.io.aiperf import load_aiperf
from deepep_calc.io.aiperf.csv_export import read
from one_line import assert_one_line


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


def test_csv_without_metric_table(tmp_path: Path) -> None:
    bad = tmp_path / "other.csv"
    bad.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(FileInputError, match="not an AIPerf CSV export"):
        load_aiperf(bad)


def test_the_tables_become_blocks_and_a_telemetry_table_is_ignored() -> None:
    """ITL: avg 50, sum 2,000, so 40 values; an empty cell is left out; the Value table's figure
    is its avg; the GPU table after a blank line has no Metric header and is not read."""
    text = "\n".join(
        [
            "Metric,avg,sum,p50",
            "Inter Token Latency (ms),50,2000,48",
            "Request Count,,",
            "",
            "Metric,Value",
            "Output Token Throughput (tokens/sec),600",
            "",
            "GPU,Power",
            "0,300",
        ]
    )
    export = read(Path("c.csv"), text)
    assert export.fmt == "csv" and export.config == {} and export.benchmark_id is None
    assert export.metrics == {
        "inter_token_latency": {"unit": "ms", "avg": 50.0, "sum": 2000.0, "p50": 48.0, "count": 40},
        "request_count": {"unit": ""},
        "output_token_throughput": {"unit": "tokens/sec", "avg": 600.0},
    }


def test_a_stated_count_is_kept() -> None:
    export = read(Path("c.csv"), "Metric,avg,count,sum\nX (ms),2,7,100\n")
    assert export.metrics["x"]["count"] == 7.0  # not 100 / 2


def test_a_csv_the_csv_module_cannot_read_is_refused() -> None:
    """A field over the csv module's limit (128 kB) is no AIPerf table."""
    with pytest.raises(FileInputError) as info:
        read(Path("c.csv"), "Metric,avg\n" + "x" * 200_000 + "\n")
    assert_one_line(info.value, "c.csv: not a readable CSV (field larger than field limit")
