"""Running a sweep (`whatif/sweep/run.py`): targets checked before work, the caller's file rules
and drawer, progress, the summary and its skipped line, and --precision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deepep_calc.base.errors import CalcError, InputError
from deepep_calc.cli import main
from deepep_calc.io import safe_write
from deepep_calc.report.sweep_maps import draw
from deepep_calc.whatif.sweep import grid as sweep_mod
from deepep_calc.whatif.sweep.grid import sweep_grid
from deepep_calc.whatif.sweep.run import SweepSummary, check_precision, sweep
from deepep_calc.whatif.sweep.run import run_sweep as run_sweep_given
from sweep_rows import no_work, run_sweep

from .mixed import MIXED


def test_bad_targets_fail_before_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweep_mod, "evaluate_chunk", no_work)
    grid = sweep_grid({"nodes": "1,2"})
    with pytest.raises(CalcError, match=r"\.csv or \.parquet"):
        run_sweep(grid, output=str(tmp_path / "rows.txt"))
    with pytest.raises(CalcError, match="directory does not exist"):
        run_sweep(grid, output=str(tmp_path / "missing" / "rows.csv"))
    with pytest.raises(CalcError, match=r"\.html or \.png"):
        run_sweep(grid, map_path=str(tmp_path / "map.svg"), draw=draw)
    with pytest.raises(InputError, match="--x"):
        run_sweep(grid, map_path=str(tmp_path / "map.html"), x="speed", draw=draw)
    many = sweep_grid({"model": "qwen3-30b-a3b-fp8,deepseek-v3", "isl": "1:13", "osl": "1,2"})
    with pytest.raises(InputError, match="panels"):
        run_sweep(many, map_path=str(tmp_path / "map.html"), draw=draw)
    assert list(tmp_path.iterdir()) == []


def test_cli_sweep_json_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    main(["sweep", "--nodes", "1,2", "--concurrency", "4,32", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] == 4 and out["combinations"] == 1
    assert sum(out["verdicts"].values()) == 4
    assert out["varied"] == {"nodes": [1, 2], "concurrency": [4, 32]}


def test_a_map_needs_a_drawer_from_the_caller(tmp_path: Path) -> None:
    """The runner draws nothing itself: a map without `draw` is a programming error, and no file."""
    grid = sweep_grid({"nodes": "1,2"})
    with pytest.raises(TypeError, match="draw="):
        run_sweep(grid, map_path=str(tmp_path / "map.html"))
    assert list(tmp_path.iterdir()) == []


def test_an_output_needs_the_file_rules_from_the_caller(tmp_path: Path) -> None:
    """The runner opens no file itself: a table or a map without `files` is a programming error,
    and so is a table without `tables` (its format and writer are io's)."""
    grid = sweep_grid({"nodes": "1,2"})
    with pytest.raises(TypeError, match="files="):
        run_sweep_given(grid, output=str(tmp_path / "rows.csv"))
    with pytest.raises(TypeError, match="tables="):
        run_sweep_given(grid, output=str(tmp_path / "rows.csv"), files=safe_write)
    with pytest.raises(TypeError, match="files="):
        run_sweep_given(grid, map_path=str(tmp_path / "map.html"), draw=draw)
    assert list(tmp_path.iterdir()) == []
    assert run_sweep_given(grid).rows == run_sweep(grid).rows  # no target: nothing to check


def test_progress_is_reported_from_nothing_to_every_row() -> None:
    seen: list[tuple[int, int]] = []
    grid = sweep_grid({"nodes": "1,2,4", "concurrency": "1:64:x2"})
    summary = run_sweep(grid, chunk_rows=5, progress=lambda done, total: seen.append((done, total)))
    assert seen[0] == (0, summary.rows) and seen[-1] == (summary.rows, summary.rows)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and len(seen) == summary.chunks + 1


def test_cli_reports_the_skipped_on_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [f"--{k.replace('_', '-')}={v}" for k, v in MIXED.items()]
    main(["sweep", *args, "--json"])
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    err = [line for line in captured.err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("deepep-calc: skipped 2 invalid combination(s) (8 rows)")
    assert "2 × --transport efa-gda" in err[0]
    assert out["skipped"]["combinations"] == 2 and out["skipped"]["rows"] == 8
    assert sum(out["skipped"]["reasons"].values()) == 2
    assert out["skipped"]["written"] is False
    assert out["rows"] == sum(out["verdicts"].values()) == 10 * 4


@pytest.mark.parametrize("bad", ["0", "18", "-1", "six"])
def test_precision_is_checked_before_work(
    bad: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sweep_mod, "evaluate_chunk", no_work)
    with pytest.raises(SystemExit) as exc:
        main(["sweep", "--precision", bad, "-o", str(tmp_path / "rows.csv")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--precision" in err[0]
    assert list(tmp_path.iterdir()) == []


# The summary and the options, directly --------------------------------------------------------------


@pytest.mark.parametrize("good", [1, 6, 17])
def test_precision_is_a_whole_number_of_digits_from_1_to_17(good: int) -> None:
    assert check_precision(good) == good


@pytest.mark.parametrize("bad", [0, 18, True, 6.0, "6"])
def test_any_other_precision_is_refused_naming_the_flag(bad: object) -> None:
    with pytest.raises(InputError) as err:
        check_precision(bad)  # type: ignore[arg-type]
    assert err.value.field == "--precision" and "a whole number from 1 to 17" in err.value.message


@pytest.mark.parametrize("bad", [0, -5, True])
def test_chunk_rows_must_be_a_whole_number_above_zero(bad: object) -> None:
    with pytest.raises(InputError) as err:
        run_sweep(sweep_grid({"nodes": "1,2"}), chunk_rows=bad)  # type: ignore[arg-type]
    assert err.value.field == "--chunk-rows"


def summary(**given: Any) -> SweepSummary:
    """A summary of 1,000 rows in 0.5 s over two combinations, 12 chunks, no file written."""
    fields: dict[str, Any] = dict(
        rows=1000,
        combinations=2,
        chunks=12,
        seconds=0.5,
        verdicts={"dense": 600, "deepep": 400},
        recommended={"allgather": 600, "deepep": 400},
        output=None,
        map=None,
        swept={"nodes": [1, 2]},
    )
    fields.update(given)
    return SweepSummary(**fields)


def test_the_summary_json_reports_speed_and_the_skipped() -> None:
    """1,000 rows in 0.5 s: 2,000 rows per second; no time measured, no speed."""
    doc = summary().to_json()
    assert doc["rows_per_s"] == 2000 and doc["seconds"] == 0.5
    assert doc["varied"] == {"nodes": [1, 2]} and doc["recommended_arm"] == {"allgather": 600, "deepep": 400}
    assert doc["skipped"] == {"combinations": 0, "rows": 0, "reasons": {}, "written": False}
    assert "bound_map" not in doc
    assert summary(seconds=0.0).to_json()["rows_per_s"] is None
    assert summary(bound_map="b.html").to_json()["bound_map"] == "b.html"
    kept = summary(skipped_combinations=1, skipped_rows=8, kept_invalid=True, output="rows.csv")
    assert kept.to_json()["skipped"]["written"] is True
    assert (
        summary(skipped_combinations=1, kept_invalid=True).to_json()["skipped"]["written"] is False
    )  # no table


def test_the_skipped_line_counts_each_reason_and_says_whether_they_were_written() -> None:
    assert summary().skipped_line() is None
    reasons = {"--transport efa-gda: needs p5en": 2, "--model x: needs a preset": 1}
    line = summary(skipped_combinations=3, skipped_rows=1200, skipped_reasons=reasons).skipped_line()
    assert line == (
        "skipped 3 invalid combination(s) (1,200 rows): 2 × --transport efa-gda: needs p5en; "
        "1 × --model x: needs a preset"
    )
    kept = summary(
        skipped_combinations=3, skipped_rows=1200, skipped_reasons=reasons, kept_invalid=True, output="r.csv"
    )
    assert "(1,200 rows, written with their reason):" in str(kept.skipped_line())


def test_sweep_plans_and_runs_in_one_call() -> None:
    """The summary counts every row of the grid, each with one verdict and one recommended arm."""
    out = sweep({"nodes": "1,2", "concurrency": "4,32"})
    assert out.rows == 4 and out.combinations == 1 and out.chunks == 1
    assert sum(out.verdicts.values()) == sum(out.recommended.values()) == 4
    assert out.swept == {"nodes": [1, 2], "concurrency": [4, 32]}
    assert out.output is None and out.map is None
