"""A sweep's grid (`whatif/sweep/grid.py`): parsing the flags, the blocks a grid is evaluated in,
and its vectorised rows, which equal the scalar path's; bad input stops before work (the mixed
grids are `test_grid_mixed.py`'s, the output files' tests are in tests/io/test_sweep_table.py)."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cli_runner import run_cli
from deepep_calc.api import evaluate
from deepep_calc.base.errors import InputError
from deepep_calc.cli import main
from deepep_calc.estimate.compute import compute
from deepep_calc.question.scenario import Scenario, resolve
from deepep_calc.whatif.sweep import grid as sweep_mod
from deepep_calc.whatif.sweep.grid import FIELDS, iter_chunks, parse_values, sweep_grid
from estimate.shared import disagg
from sweep_rows import no_work, sweep_rows

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


# The grid's parts, directly ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "word", "graphs"),
    [
        ("--cuda-graphs", " TRUE ", True),
        ("--cuda-graphs", "no", False),
        ("--eager", "true", False),  # true answers the flag it follows: eager on, graphs off
        ("--eager", "graphs", True),  # a mode word names the mode, whichever flag carries it
        ("--cuda-graphs", "eager", False),
    ],
)
def test_a_graph_mode_word_answers_its_flag_or_names_the_mode(flag: str, word: str, graphs: bool) -> None:
    assert sweep_mod.graphs_word(flag, word) is graphs


def test_a_graph_mode_word_outside_the_vocabulary_is_refused() -> None:
    with pytest.raises(InputError) as err:
        sweep_mod.graphs_word("--eager", "maybe")
    assert err.value.field == "--eager" and "true or false (or the mode: graphs, eager)" in err.value.message


def test_blocks_are_counted_before_they_are_built() -> None:
    """(4, 6) rows by 5: the trailing axis (6) is over 5, so it is taken 5 values at a time, each
    value of the leading axis alone: 4 x 2 = 8 blocks. By 24: the whole grid. By 6: one leading
    value a block, 4 blocks. By 13: two leading values a block, 2 blocks of 12 rows."""
    assert sweep_mod.blocks_per_combination((4, 6), 5) == 8
    assert sweep_mod.blocks_per_combination((4, 6), 24) == 1
    assert sweep_mod.blocks_per_combination((4, 6), 6) == 4
    blocks = list(sweep_mod.grid_blocks((4, 6), 13))
    assert [(b.start, b.stop, b.shape) for b in blocks] == [(0, 12, (2, 6)), (12, 24, (2, 6))]
    # no block is under one row: a limit of 0 still yields the 24 rows one by one
    assert sweep_mod.blocks_per_combination((4, 6), 0) == 24 == len(list(sweep_mod.grid_blocks((4, 6), 0)))


def test_numeric_columns_broadcast_over_their_block_and_a_single_value_is_a_scalar() -> None:
    g = sweep_grid({"nodes": "1,2", "concurrency": "1:4"})
    block = next(sweep_mod.grid_blocks(g.numeric_shape, 3))  # nodes 1, concurrency 1-3
    cols = sweep_mod.numeric_columns(g, block)
    axis = g.numeric.index("concurrency")
    assert cols["concurrency"].shape == tuple(3 if i == axis else 1 for i in range(len(g.numeric)))
    assert cols["concurrency"].reshape(-1).tolist() == [1.0, 2.0, 3.0]
    assert np.ndim(cols["nodes"]) == 0 and cols["nodes"] == 1.0  # one value in this block
    assert np.ndim(cols["isl"]) == 0  # not swept at all


def test_a_grid_counts_its_rows_and_names_what_it_sweeps() -> None:
    g = sweep_grid({"nodes": "1,2", "concurrency": "1:4", "model": "qwen3-30b-a3b-fp8,deepseek-v3"})
    assert g.swept == ("model", "nodes", "concurrency")  # in field order
    assert g.rows_per_combination == 2 * 4 and len(g.combinations) == 2 and g.rows == 16
    assert g.skipped_rows == 0 and g.skipped_reasons() == {} and not g.disaggregated
    assert "model" in g.categorical and "concurrency" in g.numeric


def test_unknown_fields_and_too_many_combinations_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InputError) as err:
        sweep_grid({"speed": "1"})
    assert err.value.field == "sweep field" and "'speed'" in err.value.message
    monkeypatch.setattr(sweep_mod, "MAX_COMBINATIONS", 3)
    with pytest.raises(InputError, match="at most 3 categorical combinations") as err:
        sweep_grid({"model": "qwen3-30b-a3b-fp8,deepseek-v3", "engine": "vllm,sglang"})
    assert err.value.field == "sweep"


def test_a_disaggregated_split_becomes_its_node_counts_and_leaves_no_nodes_axis() -> None:
    g = sweep_grid({"disagg": "1P2D"})
    assert (g.axes["prefill_nodes"], g.axes["decode_nodes"]) == ([1], [2]) and g.disaggregated
    for spec, flag, needle in (
        ({"disagg": "1P2D,2P2D"}, "--disagg", "one xPyD split"),
        ({"disagg": "1P2D", "nodes": "2"}, "--nodes", "no --nodes in a disaggregated sweep"),
        ({"prefill_nodes": "1", "nodes": "2"}, "--nodes", "each row's cluster is P + D nodes"),
        ({"disagg": "1P2D", "prefill_nodes": "2"}, "--prefill-nodes", "1, as --disagg 1P2D says"),
    ):
        with pytest.raises(InputError) as err:
            sweep_grid(spec)
        assert err.value.field == flag and needle in err.value.message, spec


def test_sweep_rows_are_evaluates_figures(tmp_path, capsys):
    out = tmp_path / "s.csv"
    code, _, err = run_cli(
        capsys,
        "sweep",
        "--model",
        "deepseek-v3",
        "--disagg",
        "1P3D",
        "--concurrency",
        "8,64",
        "--isl",
        "1024,4096",
        "-o",
        out,
    )
    assert code == 0, err
    import csv

    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 4
    for row in rows:
        d = disagg(
            model="deepseek-v3",
            prefill_nodes=1,
            decode_nodes=3,
            concurrency=int(row["concurrency"]),
            isl=int(row["isl"]),
        )
        assert int(row["nodes"]) == 4
        assert float(row["disagg_ttft_ms"]) == pytest.approx(d.ttft_ms.value, rel=1e-5)
        assert float(row["disagg_aggregate_tok_s"]) == pytest.approx(d.aggregate_tok_s.value, rel=1e-5)
        assert row["disagg_decode_arm"] == d.decode.arm and row["disagg_prefill_arm"] == d.prefill.arm
    code, _, err = run_cli(capsys, "sweep", "--disagg", "1P1D", "--nodes", "2,4")
    assert code == 2 and "--nodes" in err


def test_a_sweep_refuses_an_unsplittable_combination_as_evaluate_does() -> None:
    from deepep_calc.whatif.sweep.grid import sweep_grid

    with pytest.raises(InputError, match="--gpus-per-node: 3 is not allowed"):
        sweep_grid({"gpus_per_node": "3,8", "nodes": "1,2"})
    with pytest.raises(InputError, match="--experts: 100 is not allowed"):
        sweep_grid({"experts": "100", "nodes": "1:4"})
    assert sweep_grid({"experts": "100", "nodes": "1:4", "alternative": "tp"}).rows == 4
