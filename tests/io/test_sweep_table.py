"""The sweep's table as a file (`io/sweep_table/__init__.py`): the format a `-o` names, whether
this install can write it (refused before any work when it cannot), and the writer chosen for it.

The writers themselves are tests/io/sweep_table/test_writer.py's, the columns and their text
test_formats.py's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from deepep_calc.base.errors import CalcError
from deepep_calc.io import safe_write
from deepep_calc.io import sweep_table as sweep_output
from deepep_calc.io.sweep_table import (
    CSV_CHUNK_ROWS,
    ArrowWriter,
    StdlibCsvWriter,
    check_table_target,
    default_chunk_rows,
    open_table_writer,
    table_format,
)
from deepep_calc.whatif.sweep import grid as sweep_mod
from deepep_calc.whatif.sweep.grid import CHUNK_ROWS, sweep_grid
from one_line import assert_one_line
from sweep_rows import no_work, run_sweep


@pytest.mark.parametrize(
    ("target", "fmt"),
    [("-", "csv"), ("rows.csv", "csv"), ("ROWS.CSV", "csv"), ("a/b.parquet", "parquet"), ("c.pq", "parquet")],
)
def test_the_format_is_the_suffix_and_standard_output_is_csv(target: str, fmt: str) -> None:
    assert table_format(target) == fmt == check_table_target(target)


def test_another_suffix_is_refused() -> None:
    with pytest.raises(CalcError) as info:
        table_format("rows.txt")
    assert_one_line(info.value, "-o rows.txt: the output must end in .csv or .parquet")
    assert info.value.field == "-o"


def test_a_csv_through_arrow_is_written_in_half_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two chunks of CSV text are alive at once through Arrow: half the sweep's chunk (25,000 of
    50,000 rows) keeps the peak memory; Parquet, and the standard library's CSV, take the whole."""
    assert (CSV_CHUNK_ROWS, CHUNK_ROWS) == (25_000, 50_000)
    assert default_chunk_rows("csv") == CSV_CHUNK_ROWS
    assert default_chunk_rows("parquet") == default_chunk_rows(None) == CHUNK_ROWS
    monkeypatch.setattr(sweep_output, "have_pyarrow", lambda: False)
    assert default_chunk_rows("csv") == CHUNK_ROWS


def test_parquet_without_pyarrow_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweep_output, "have_pyarrow", lambda: False)
    monkeypatch.setattr(sweep_mod, "evaluate_chunk", no_work)
    with pytest.raises(CalcError, match=r"Parquet needs pyarrow.*pip install pyarrow"):
        run_sweep(sweep_grid({}), output=str(tmp_path / "rows.parquet"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("arrow", "writer"), [(True, ArrowWriter), (False, StdlibCsvWriter)])
def test_the_writer_is_arrows_when_pyarrow_imports(
    arrow: bool, writer: type, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Either writer opens the output's temporary file; aborting drops it, the target untouched."""
    monkeypatch.setattr(sweep_output, "have_pyarrow", lambda: arrow)
    out = safe_write.check_output(str(tmp_path / "rows.csv"), "-o")
    w = open_table_writer(out, sweep_grid({"concurrency": "4,8"}))
    try:
        assert type(w) is writer and w.precision == 6 and not w.keep_invalid and not w.bounds
        assert safe_write.leftover_temporaries(tmp_path) != []
    finally:
        w.abort()
    assert list(tmp_path.iterdir()) == []
