"""Sweeps: the vectorised path equals the scalar one, bad input stops before work, maps and the
summary hold every row (the output files' tests are in tests/io/test_sweep_table.py)."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deepep_calc.api import evaluate
from deepep_calc.base.errors import CalcError, InputError
from deepep_calc.base.vocabulary import SYMBOLS, VERDICT_CODES
from deepep_calc.cli import main
from deepep_calc.estimate.compute import compute
from deepep_calc.io import safe_write
from deepep_calc.question.scenario import Scenario, resolve
from deepep_calc.report.sweep_maps import draw
from deepep_calc.whatif.sweep import grid as sweep_mod
from deepep_calc.whatif.sweep.grid import FIELDS, iter_chunks, parse_values, sweep_grid
from deepep_calc.whatif.sweep.run import run_sweep as run_sweep_given
from sweep_rows import no_work, run_sweep, sweep_rows

SPEC = {
    "model": "qwen3-30b-a3b-fp8,deepseek-v3",
    "transport": "efa-proxy,efa-gda",
    "nodes": "1,2,4",
    "concurrency": "1:256:x4,32",
    "isl": "120,2048",
    "comms": "1,8",
    "cuda_graphs": "false,true",
}


def _scenario(row: dict[str, Any]) -> Scenario:
    fields = {f: row[f] for f in FIELDS if row[f] is not None}
    fields.pop("gpus_per_node")  # resolved value; the instance default
    fields.pop("weight_dtype")  # resolved value; the model's native dtype
    return Scenario(**fields)


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300)


@pytest.fixture(scope="module")
def grid() -> Any:
    return sweep_grid(SPEC)


@pytest.fixture(scope="module")
def rows(grid: Any) -> list[dict[str, Any]]:
    return sweep_rows(grid)


def test_the_grid_counts_every_combination(grid: Any, rows: list[dict[str, Any]]) -> None:
    assert grid.rows == 2 * 2 * 3 * 6 * 2 * 2 * 2 == len(rows)
    assert parse_values("concurrency", SPEC["concurrency"]) == [1, 4, 16, 64, 256, 32]
    assert {r["model"] for r in rows} == {"qwen3-30b-a3b-fp8", "deepseek-v3"}


def test_random_rows_equal_scalar_evaluate(rows: list[dict[str, Any]]) -> None:
    rng = random.Random(5)
    sample = rng.sample(rows, 24)
    # a measured cell (the default scenario) is always in the sample
    cell = next(
        r
        for r in rows
        if r["model"] == "qwen3-30b-a3b-fp8"
        and r["transport"] == "efa-proxy"
        and r["nodes"] == 2
        and r["concurrency"] == 32
        and r["isl"] == 120
        and r["comms"] == 8
        and not r["cuda_graphs"]
    )
    checked_cell = False
    for row in [*sample, cell]:
        scenario = _scenario(row)
        result = compute(resolve(scenario))
        full = evaluate(scenario)
        assert row["verdict"] == full.verdict.code, row
        assert row["recommended_arm"] == full.verdict.recommended_arm, row
        measured = any(a.measured_cell for a in result.arms.values())
        checked_cell |= measured
        for key, name in (("deepep", "deepep"), ("alternative", result.alternative), ("replica", "replica")):
            arm = result.arms[name]
            assert row[f"{key}_feasible"] == bool(arm.feasible)
            assert _close(row[f"{key}_memory_gb_per_gpu"], arm.memory_gb_per_gpu.scalar)
            assert _close(row[f"{key}_aggregate_tok_s"], arm.model_aggregate_tok_s.scalar)
            assert row[f"{key}_aggregate_tok_s_tag"] == str(arm.model_aggregate_tok_s.tag)
            if arm.measured_cell:
                continue  # the scalar path shows the measurement here; the sweep runs the model
            for metric in ("per_user_tok_s", "step_ms", "ttft_ms", "usd_per_mtok"):
                q = getattr(arm, metric)
                assert _close(row[f"{key}_{metric}"], q.scalar), (metric, row)
                assert row[f"{key}_{metric}_tag"] == str(q.tag)
        if not measured:
            assert _close(row["ratio_deepep_vs_alternative"], result.ratio_deepep_vs_alternative.scalar)
            assert _close(row["tax_ms_per_token"], result.tax_ms_per_token.scalar)
    assert checked_cell


def test_chunk_size_does_not_change_results(grid: Any, rows: list[dict[str, Any]]) -> None:
    small = sweep_rows(grid, chunk_rows=7)
    assert len(small) == len(rows)
    for a, b in zip(small[::37], rows[::37], strict=True):
        for k, v in a.items():
            assert v == b[k] or (isinstance(v, float) and math.isnan(v) and math.isnan(b[k])), k


@pytest.mark.parametrize(
    ("shape", "chunk_rows"),
    [
        ((3, 1, 2, 1, 5, 2, 1), 7),
        ((5, 1, 10, 1, 2500, 4, 2), 50_000),
        ((4, 6), 1),
        ((4, 6), 5),
        ((4, 6), 24),
        ((4, 6), 99),
        ((13,), 4),
    ],
)
def test_grid_blocks_cover_the_rows_in_order(shape: tuple[int, ...], chunk_rows: int) -> None:
    """Blocks are contiguous runs of rows, in order, each at most `chunk_rows` long (one row
    at the least); their count is the progress bar's, and a chunk's row positions on each axis
    are the flattened grid's."""
    blocks = list(sweep_mod.grid_blocks(shape, chunk_rows))
    assert len(blocks) == sweep_mod.blocks_per_combination(shape, chunk_rows)
    assert [b.start for b in blocks] == [0] + [b.stop for b in blocks[:-1]]
    assert blocks[-1].stop == math.prod(shape)
    for b in blocks:
        assert b.stop - b.start == math.prod(b.shape) <= max(chunk_rows, 1)
        rows = np.arange(math.prod(shape)).reshape(shape)[b.slices].reshape(-1)
        np.testing.assert_array_equal(rows, np.arange(b.start, b.stop))
    grid = sweep_grid({"nodes": "1,2", "concurrency": "1:4", "comms": "1,8"})
    for chunk in iter_chunks(grid, 3):
        want = np.unravel_index(np.arange(chunk.start, chunk.stop), grid.numeric_shape)
        for got, expected in zip(chunk.numeric_index, want, strict=True):
            np.testing.assert_array_equal(got, expected)


def test_a_block_pass_equals_the_flattened_pass_bit_for_bit(grid: Any) -> None:
    """The model over a block's broadcast axes gives every figure of the row-by-row pass
    exactly: the same operations on the same numbers, only fewer of them."""
    for chunk in iter_chunks(grid, 40):
        idx = np.unravel_index(np.arange(chunk.start, chunk.stop), grid.numeric_shape)
        flat = {
            name: np.asarray(grid.axes[name], dtype=bool if name == "cuda_graphs" else float)[ix]
            for name, ix in zip(grid.numeric, idx, strict=True)
        }
        rows = sweep_mod.evaluate_chunk(chunk.combination.resolved, flat)
        assert set(rows) == set(chunk.metrics)
        for name, want in rows.items():
            if name.endswith("_tag"):
                assert chunk.metrics[name] == want, name
                continue
            got, want = chunk.column(name), np.broadcast_to(np.asarray(want), (chunk.rows,))
            assert got.dtype == want.dtype, name
            assert np.array_equal(got, want, equal_nan=want.dtype.kind == "f"), name


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:512:x2", [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]),
        ("1:64:+8", [1, 9, 17, 25, 33, 41, 49, 57]),
        ("1:20:5", [1, 6, 11, 16]),
        ("3:5", [3, 4, 5]),
        ("4,2,4", [4, 2]),
        ("1:3,8", [1, 2, 3, 8]),
    ],
)
def test_parse_numeric(text: str, expected: list[int]) -> None:
    assert parse_values("concurrency", text) == expected


def test_parse_other_kinds() -> None:
    assert parse_values("cuda_graphs", "false,true") == [False, True]
    assert parse_values("cuda_graphs", "eager,graphs") == [False, True]
    assert parse_values("cuda_graphs", "yes,no") == [True, False]
    assert parse_values("alternative", "tp,allgather") == ["tp", "allgather"]
    assert parse_values("slo_tok_s", "10:20:+5") == [10.0, 15.0, 20.0]
    assert parse_values("model", None) == ["qwen3-30b-a3b-fp8"]


@pytest.mark.parametrize(
    ("name", "text", "flag"),
    [
        ("concurrency", "5:1", "--concurrency"),
        ("concurrency", "1:10:x1", "--concurrency"),
        ("concurrency", "1:10:+0", "--concurrency"),
        ("concurrency", "a:b", "--concurrency"),
        ("nodes", "1,,2", "--nodes"),
        ("nodes", "1.5", "--nodes"),
        ("cuda_graphs", "maybe", "--cuda-graphs"),
        ("alternative", "allgather,ep", "--alternative"),
        ("concurrency", "1:100000000000", "--concurrency"),
    ],
)
def test_parse_errors_name_the_flag(name: str, text: str, flag: str) -> None:
    with pytest.raises(InputError) as err:
        sweep_grid({name: text})
    assert err.value.field == flag


@pytest.mark.parametrize(
    "args",
    [
        ["--concurrency", "1,2,-3"],
        ["--nodes", "1,2,5000"],
        ["--transport", "efa-proxy,efa-gda,warp-drive"],
        ["--model", "deepseek-v3,no-such-model"],
        ["--instance", "p5", "--transport", "efa-proxy,efa-gda"],  # efa-gda: on no instance of the grid
        ["--gpus-per-node", "8,16"],
        ["--alternative", "allgather,dense"],
    ],
)
def test_invalid_list_fails_before_any_work(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sweep_mod, "evaluate_chunk", no_work)
    out = tmp_path / "rows.csv"
    with pytest.raises(SystemExit) as exc:
        main(["sweep", *args, "-o", str(out), "--map", str(tmp_path / "map.html")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("deepep-calc: error: --")
    assert len(err.splitlines()) == 1
    bad = args[1].split(",")[-1]
    assert bad in err or "gpus-per-node" in err or "--transport" in err
    assert list(tmp_path.iterdir()) == []


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


def test_verdict_maps(tmp_path: Path) -> None:
    spec = {
        "model": "deepseek-v3",
        "transport": "efa-proxy,efa-gda",
        "nodes": "1,2,4,8",
        "concurrency": "1:4096:x4",
    }
    grid = sweep_grid(spec)
    html = tmp_path / "map.html"
    summary = run_sweep(grid, map_path=str(html), draw=draw)
    text = html.read_text(encoding="utf-8")
    assert "plotly" in text.lower() and "transport=efa-gda" in text
    for code in summary.verdicts:  # each verdict in its legend entry and its cells
        assert f'"name":"{SYMBOLS[code]} ' in text
    pytest.importorskip("matplotlib")
    png = tmp_path / "map.png"
    run_sweep(grid, map_path=str(png), draw=draw)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["map.html", "map.png"]


def test_map_grid_holds_every_verdict() -> None:
    from deepep_calc.whatif.sweep.maps import MapGrid

    grid = sweep_grid({"transport": "efa-proxy,efa-gda", "nodes": "1,2,4", "concurrency": "1:64:x2"})
    cells = MapGrid(grid, "nodes", "concurrency")
    for chunk in iter_chunks(grid, 5):
        cells.add(chunk)
    assert cells.code.shape == (2, 7, 3)
    assert (cells.code >= 0).all()
    rows = sweep_rows(grid)
    first = rows[0]
    assert VERDICT_CODES[cells.code[0, 0, 0]] == first["verdict"]


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
