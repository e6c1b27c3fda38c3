"""The sweep table's writers (`io/sweep_table/writer.py`): CSV and Parquet round trips to the
model's values at the stated precision, the fallback writer's text equal to Arrow's, a one-value
column built once, the modes a plain open() would give, and no partial file after an interrupt or
a failed flush behind the writer."""

from __future__ import annotations

import csv
import errno
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deepep_calc.base.errors import CalcError
from deepep_calc.cli import main
from deepep_calc.io import sweep_table as sweep_output
from deepep_calc.io.sweep_table import columns
from deepep_calc.io.sweep_table import writer as sweep_writer
from deepep_calc.report.sweep_maps import draw
from deepep_calc.whatif.sweep import grid as sweep_mod
from deepep_calc.whatif.sweep.grid import sweep_grid
from sweep_rows import run_sweep, sweep_rows


def _interrupt_after(n: int) -> Any:
    real = sweep_mod.evaluate_chunk
    calls = {"n": 0}

    def evaluator(resolved: Any, cols: Any) -> Any:
        calls["n"] += 1
        if calls["n"] > n:
            raise KeyboardInterrupt
        return real(resolved, cols)

    return evaluator


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_interrupted_sweep_leaves_no_partial_file(
    suffix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweep_mod, "evaluate_chunk", _interrupt_after(2))
    target = tmp_path / f"rows{suffix}"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(sweep_grid({"concurrency": "1:100"}), output=str(target), chunk_rows=10)
    assert list(tmp_path.iterdir()) == []


def test_interrupt_keeps_an_existing_file_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "rows.csv"
    target.write_text("previous results\n")
    monkeypatch.setattr(sweep_mod, "evaluate_chunk", _interrupt_after(1))
    with pytest.raises(SystemExit) as exc:
        main(["sweep", "--concurrency", "1:50", "--chunk-rows", "10", "-o", str(target)])
    assert exc.value.code == 130
    assert "interrupted" in capsys.readouterr().err
    assert target.read_text() == "previous results\n"
    assert [p.name for p in tmp_path.iterdir()] == ["rows.csv"]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_failed_flush_behind_fails_the_sweep_and_keeps_the_old_file(
    suffix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The written chunks go to the disk on a background thread while the sweep runs; a disk
    error there fails the sweep in one line naming the file, like a failed write, and the
    file it would have replaced stays as it was."""
    target = tmp_path / f"rows{suffix}"
    target.write_bytes(b"previous results\n")
    flushed: list[int] = []

    def failing(fd: int) -> None:
        flushed.append(fd)
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(sweep_writer, "_datasync", failing)
    with pytest.raises(CalcError, match=r"rows.*Input/output error"):
        run_sweep(sweep_grid({"concurrency": "1:100"}), output=str(target), chunk_rows=10)
    assert flushed  # the flush ran, behind the writer
    assert target.read_bytes() == b"previous results\n"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def _parse_csv_value(text: str, kind: str) -> Any:
    if text == "":
        return None
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    if kind == "bool":
        return text == "true"
    return text


def _same(a: Any, b: Any, digits: int = 17) -> bool:
    """Equal, floats to `digits` significant digits (half a unit in the last digit kept)."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b) or digits >= 17:
            return a == b or (math.isnan(a) and math.isnan(b))
        return abs(a - b) <= 0.5 * 10.0 ** (1 - digits) * abs(b) * (1 + 1e-9)
    return a == b


def _digits(text: str) -> int:
    """Significant digits of a float as written: 0.00123 -> 3, 1234570 -> 6, 1.5e+20 -> 2."""
    return len(text.lstrip("-").split("e")[0].replace(".", "").strip("0"))


@pytest.mark.parametrize(("arrow", "precision"), [(True, 6), (False, 6), (True, 3), (False, 17), (True, 17)])
def test_csv_round_trip(arrow: bool, precision: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every CSV cell equals the model's value to the stated precision, with either writer."""
    if not arrow:
        monkeypatch.setattr(sweep_output, "have_pyarrow", lambda: False)
    spec = {
        "model": "qwen3-30b-a3b-fp8,deepseek-v3",
        "nodes": "1,2",
        "concurrency": "1:64:x4",
        "slo_tok_s": "5",
    }
    grid = sweep_grid(spec)
    target = tmp_path / "rows.csv"
    summary = run_sweep(grid, output=str(target), chunk_rows=5, precision=precision)
    assert summary.rows == grid.rows == 2 * 2 * 4
    expected = sweep_rows(grid)
    kinds = dict(columns())
    with open(target, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        assert header == [name for name, _ in columns()]
        lines = list(reader)
        got = [
            {h: _parse_csv_value(v, kinds[h]) for h, v in zip(header, line, strict=True)} for line in lines
        ]
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        for k in header:
            assert _same(g[k], e[k], precision), (k, g[k], e[k])
    if precision < 17:  # no float is written with more digits than asked
        floats = [i for i, h in enumerate(header) if kinds[h] == "float"]
        texts = [line[i] for line in lines for i in floats if line[i] not in ("", "nan", "inf", "-inf")]
        assert texts
        assert all(_digits(t) <= precision for t in texts), [t for t in texts if _digits(t) > precision]
    assert sum(summary.verdicts.values()) == grid.rows


def test_parquet_round_trip(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    grid = sweep_grid(
        {"transport": "efa-proxy,efa-gda", "concurrency": "1:64:x2", "cuda_graphs": "false,true"}
    )
    target = tmp_path / "rows.parquet"
    run_sweep(grid, output=str(target), chunk_rows=6)
    table = pq.read_table(target)
    assert table.column_names == [name for name, _ in columns()]
    got = table.to_pylist()
    expected = sweep_rows(grid)
    assert len(got) == len(expected) == grid.rows
    for g, e in zip(got, expected, strict=True):
        for k, v in e.items():
            assert _same(g[k], v), k


def test_a_one_value_csv_column_is_built_once_and_sliced() -> None:
    """A column holding one value in a chunk is a shared text array: as long as the longest
    chunk so far, sliced for shorter ones, rebuilt for a longer one, the text Arrow prints."""
    pa = pytest.importorskip("pyarrow")
    w = sweep_writer.ArrowWriter.__new__(sweep_writer.ArrowWriter)  # no file: this part writes none
    w.pa, w.repeats = pa, {}
    assert w._repeated("efa-gda", "str", 3).to_pylist() == ["efa-gda"] * 3
    longer = w._repeated("efa-gda", "str", 5)
    assert longer.to_pylist() == ["efa-gda"] * 5
    assert w._repeated("efa-gda", "str", 2).to_pylist() == ["efa-gda"] * 2
    assert w._repeated("efa-gda", "str", 5) is longer  # shared, not rebuilt
    assert w._repeated(None, "float", 4).to_pylist() == [None] * 4
    assert w._repeated(np.float64(2.0), "float", 2).to_pylist() == ["2", "2"]
    assert w._repeated(np.float64(1e-05), "float", 1).to_pylist() == ["0.00001"]
    assert w._repeated(True, "bool", 1).to_pylist() == ["true"]


@pytest.mark.parametrize(
    ("spec", "keep"),
    [
        ({"model": "deepseek-v3", "nodes": "1,2,4", "concurrency": "1:512:x8", "slo_tok_s": "9"}, False),
        # a skipped combination's reason has commas: Arrow then quotes its text columns, and the
        # floats, which it otherwise gets as text, stay numbers
        ({"instance": "p5,p5en", "transport": "efa-proxy,efa-gda", "concurrency": "4,64"}, True),
    ],
)
def test_fallback_writer_writes_the_same_text(
    spec: dict[str, str], keep: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grid = sweep_grid(spec)
    run_sweep(grid, output=str(tmp_path / "arrow.csv"), keep_invalid=keep, chunk_rows=3)
    monkeypatch.setattr(sweep_output, "have_pyarrow", lambda: False)
    run_sweep(grid, output=str(tmp_path / "stdlib.csv"), keep_invalid=keep, chunk_rows=3)
    with open(tmp_path / "arrow.csv", newline="") as a, open(tmp_path / "stdlib.csv", newline="") as b:
        ra, rb = list(csv.reader(a)), list(csv.reader(b))
    assert ra[0] == [n for n, _ in columns(keep)]
    assert ra == rb
    rows = (tmp_path / "arrow.csv").read_text().split("\n", 1)[1]  # Arrow always quotes the header
    assert ('"' in rows) == keep  # quoting only where a value needs it
    assert re.search(r'"-?[0-9]', rows) is None  # no number is ever quoted


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_outputs_follow_the_umask(umask: int, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow.parquet")
    old = os.umask(umask)
    try:
        grid = sweep_grid({"nodes": "1,2", "concurrency": "4,8"})
        for name in ("rows.csv", "rows.parquet"):
            run_sweep(grid, output=str(tmp_path / name), map_path=str(tmp_path / f"{name}.html"), draw=draw)
    finally:
        os.umask(old)
    files = sorted(tmp_path.iterdir())
    assert [p.name for p in files] == ["rows.csv", "rows.csv.html", "rows.parquet", "rows.parquet.html"]
    for path in files:
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask, path.name
