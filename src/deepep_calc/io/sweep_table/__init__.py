"""The sweep's table as a file: the format a `-o` names, whether this install can write it, and
the writer that will (`run_sweep(..., tables=io.sweep_table)`, which the CLI passes).

CSV and Parquet are written by pyarrow's C++ writers (a default dependency); if pyarrow cannot
be imported the standard library writes the same CSV columns and values, more slowly, and
Parquet is refused before any work. The columns and their text are `formats.py`'s, the
writers and the threads that feed them `writer.py`'s; their public names are importable from
here too. The rows are the sweep's (`whatif/sweep/grid.py`); the file is io's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...base.errors import CalcError
from ...whatif.sweep.grid import CHUNK_ROWS, SweepGrid
from .formats import chunk_values, columns, round_significant, value_columns
from .writer import ArrowWriter, StdlibCsvWriter, TableWriter

if TYPE_CHECKING:  # the table's output is checked and opened through `safe_write`
    from ..safe_write import Output

__all__ = [
    "CSV_CHUNK_ROWS",
    "FORMATS",
    "ArrowWriter",
    "StdlibCsvWriter",
    "TableWriter",
    "check_table_target",
    "chunk_values",
    "columns",
    "default_chunk_rows",
    "have_pyarrow",
    "open_table_writer",
    "round_significant",
    "table_format",
    "value_columns",
]

FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
# A CSV through Arrow formats on both threads (`writer.ArrowWriter._prepare`), so two chunks
# of text are alive at once: half the default chunk keeps the peak memory under its cap, as
# fast (figures: docs/sweep.md).
CSV_CHUNK_ROWS = 25_000


def table_format(target: str) -> str:
    """csv or parquet, from the file name; rows sent to stdout (`-o -`) are CSV."""
    if target == "-":
        return "csv"
    fmt = FORMATS.get(Path(target).suffix.lower())
    if fmt is None:
        raise CalcError(f"-o {target}: the output must end in .csv or .parquet", "-o")
    return fmt


def default_chunk_rows(fmt: str | None) -> int:
    """Rows per vectorised pass when the user names none: smaller for a CSV through Arrow."""
    return CSV_CHUNK_ROWS if fmt == "csv" and have_pyarrow() else CHUNK_ROWS


def have_pyarrow() -> bool:
    try:
        import pyarrow.csv
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def check_table_target(target: str) -> str:
    """The format of `-o`, refused before any work if this install cannot write it."""
    fmt = table_format(target)
    if fmt == "parquet" and not have_pyarrow():
        raise CalcError(
            f"-o {target}: Parquet needs pyarrow, which could not be imported; reinstall it with "
            "pip install pyarrow or write .csv",
            "-o",
        )
    return fmt


def open_table_writer(
    out: Output, grid: SweepGrid, precision: int = 6, keep_invalid: bool = False, bounds: bool = False
) -> TableWriter:
    """The writer for this checked output (its format was checked before any row was computed)."""
    fmt = check_table_target(out.given)
    kwargs = {"precision": precision, "keep_invalid": keep_invalid, "bounds": bounds}
    if have_pyarrow():
        return ArrowWriter(out, grid, fmt, **kwargs)
    return StdlibCsvWriter(out, grid, **kwargs)
