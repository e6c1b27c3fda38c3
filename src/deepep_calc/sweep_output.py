"""Sweep tables on disk: CSV or Parquet, streamed chunk by chunk, all or nothing.

Rows go to the temporary file of a checked `files.Output` (in the target's directory); the
command commits it with its other outputs once the last chunk is written, and on any failure,
Ctrl-C and terminating signals included, the temporary file is removed. A stream target
(`-o -`, a FIFO, a device) gets the rows as they are computed. With pyarrow installed CSV is
written by Arrow's C++ writer (a million rows in seconds); without it the standard library
writes the same columns, more slowly. Parquet needs pyarrow (`pip install 'deepep-calc[parquet]'`).
"""

from __future__ import annotations

import contextlib
import csv
import io
from pathlib import Path
from typing import Any

import numpy as np

from .errors import CalcError
from .files import Output
from .sweep import (
    ARM_KEYS,
    ARM_METRICS,
    ARM_NAMES,
    BOOL_FIELDS,
    FIELDS,
    FLOAT_FIELDS,
    INT_FIELDS,
    RESULT_METRICS,
    VERDICT_CODES,
    Chunk,
    SweepPlan,
    code_index,
)

FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def value_columns() -> list[str]:
    """The metric columns that carry a provenance tag, in output order."""
    cols = [f"{arm}_{m}" for arm in ARM_KEYS for m in ARM_METRICS]
    return [*cols, *RESULT_METRICS]


def columns() -> list[tuple[str, str]]:
    """(name, kind) of every output column; kind is str, int, float or bool."""
    out: list[tuple[str, str]] = []
    for name in FIELDS:
        kind = (
            "int"
            if name in INT_FIELDS
            else "float"
            if name in FLOAT_FIELDS
            else "bool"
            if name in BOOL_FIELDS
            else "str"
        )
        out.append((name, kind))
    for arm in ARM_KEYS:
        out += [(f"{arm}_{m}", "float") for m in ARM_METRICS]
        out.append((f"{arm}_feasible", "bool"))
    out += [(m, "float") for m in RESULT_METRICS]
    out += [("verdict", "str"), ("recommended_arm", "str")]
    out += [(f"{c}_tag", "str") for c in value_columns()]
    return out


def chunk_values(chunk: Chunk) -> dict[str, Any]:
    """Column -> array over the chunk's rows, or one scalar that holds for all of them.

    Codes (verdict, recommended arm) come as (index array, names) pairs for dictionary encoding.
    """
    r = chunk.combination.resolved
    s = r.scenario
    out: dict[str, Any] = {}
    for name in FIELDS:
        if name in chunk.numeric:
            arr = chunk.numeric[name]
            out[name] = arr.astype(bool) if name in BOOL_FIELDS else arr.astype(np.int64)
        elif name == "gpus_per_node":
            out[name] = r.gpus_per_node
        elif name == "weight_dtype":
            out[name] = r.model.weight_dtype
        else:
            out[name] = getattr(s, name)
    for name, _ in columns():
        if name in out:
            continue
        if name == "verdict":
            out[name] = (code_index(chunk.column(name), VERDICT_CODES), VERDICT_CODES)
        elif name == "recommended_arm":
            out[name] = (code_index(chunk.column(name), ARM_NAMES), ARM_NAMES)
        elif name.endswith("_tag"):
            out[name] = chunk.metrics[name]
        else:
            out[name] = chunk.column(name)
    return out


class TableWriter:
    """Streams chunks into the output's temporary file (or its stream); `close()` finishes the
    file for the commit, `abort()` drops it. Write failures name the target, in one line."""

    def __init__(self, out: Output, plan: SweepPlan) -> None:
        self.out = out
        self.plan = plan
        self.sink: Any = out.temp_path() if out.is_file else _Unclosed(out.stream())
        try:
            self._open()
        except OSError as exc:
            self.abort()
            raise out.failed(exc) from None
        except BaseException:
            self.abort()
            raise

    def _open(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _write(self, chunk: Chunk) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _close(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def write(self, chunk: Chunk) -> None:
        try:
            self._write(chunk)
        except OSError as exc:
            raise self.out.failed(exc) from None

    def close(self) -> None:
        """The last chunk is written: finish the file (footer, flush, fsync) for the commit."""
        try:
            self._close()
        except OSError as exc:
            raise self.out.failed(exc) from None
        if self.out.is_file:
            self.out.staged()

    def abort(self) -> None:
        with contextlib.suppress(Exception):  # the file is thrown away: a close error changes nothing
            self._close()
        self.out.discard()


class _Unclosed(io.RawIOBase):
    """A stream handed to a table writer, which must not close standard output under us."""

    def __init__(self, handle: Any) -> None:
        super().__init__()
        self.handle = handle

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.handle.write(data)
        return len(data)

    def flush(self) -> None:
        self.handle.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.flush()
        super().close()


class ArrowWriter(TableWriter):
    """CSV or Parquet through pyarrow; string columns are dictionary-encoded (cheap repeats)."""

    def __init__(self, out: Output, plan: SweepPlan, fmt: str) -> None:
        self.fmt = fmt
        super().__init__(out, plan)

    def _open(self) -> None:
        import pyarrow as pa

        self.pa = pa
        self.dict_type = pa.dictionary(pa.int32(), pa.string())
        types = {"str": self.dict_type, "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
        self.schema = pa.schema([(name, types[kind]) for name, kind in columns()])
        if self.fmt == "parquet":
            import pyarrow.parquet as pq

            sink = str(self.sink) if isinstance(self.sink, Path) else self.sink
            self.writer: Any = pq.ParquetWriter(sink, self.schema, compression="zstd")
        else:
            import pyarrow.csv as pacsv

            self.writer = pacsv.CSVWriter(
                str(self.sink) if isinstance(self.sink, Path) else self.sink,
                self.schema,
                write_options=pacsv.WriteOptions(quoting_style="needed"),
            )

    def _array(self, value: Any, typ: Any, n: int) -> Any:
        pa = self.pa
        if isinstance(value, tuple):  # (indices, names): a code column
            idx, names = value
            return pa.DictionaryArray.from_arrays(
                pa.array(idx.astype(np.int32)), pa.array(list(names), pa.string())
            )
        if isinstance(value, np.ndarray) and value.ndim == 1:
            return pa.array(value, type=typ)
        if isinstance(value, np.ndarray):
            value = value.item()
        if value is None:
            return pa.nulls(n, typ)
        if typ == self.dict_type:
            zeros = pa.array(np.zeros(n, dtype=np.int32))
            return pa.DictionaryArray.from_arrays(zeros, pa.array([str(value)], pa.string()))
        return pa.repeat(pa.scalar(value, typ), n)

    def _write(self, chunk: Chunk) -> None:
        values = chunk_values(chunk)
        arrays = [self._array(values[f.name], f.type, chunk.rows) for f in self.schema]
        self.writer.write_table(self.pa.Table.from_arrays(arrays, schema=self.schema))

    def _close(self) -> None:
        if getattr(self, "writer", None) is not None:
            self.writer.close()
            self.writer = None


class StdlibCsvWriter(TableWriter):
    """CSV without pyarrow: the same columns and values, written by the csv module."""

    def _open(self) -> None:
        if isinstance(self.sink, Path):
            self.handle: Any = open(self.sink, "w", newline="", encoding="utf-8")  # noqa: SIM115
        else:
            self.handle = io.TextIOWrapper(self.sink, encoding="utf-8", newline="", write_through=True)
        self.csv = csv.writer(self.handle)
        self.csv.writerow([name for name, _ in columns()])

    def _write(self, chunk: Chunk) -> None:
        n = chunk.rows
        values = chunk_values(chunk)
        cols = []
        for name, kind in columns():
            value = values[name]
            if isinstance(value, tuple):
                idx, names = value
                cols.append(np.asarray(names, dtype=object)[idx].tolist())
            elif isinstance(value, np.ndarray) and value.ndim == 1:
                cols.append(_text_list(value, kind))
            else:
                item = value.item() if isinstance(value, np.ndarray) else value
                cols.append([_text(item, kind)] * n)
        self.csv.writerows(zip(*cols, strict=True))

    def _close(self) -> None:
        if getattr(self, "handle", None) is not None:
            self.handle.close()
            self.handle = None


def _text(value: Any, kind: str) -> str:
    if value is None:
        return ""
    if kind == "bool":
        return "true" if value else "false"
    return str(value)


def _text_list(arr: np.ndarray, kind: str) -> list[Any]:
    if kind == "bool":
        return np.where(arr, "true", "false").tolist()
    return arr.tolist()


def table_format(target: str) -> str:
    """csv or parquet, from the file name; rows sent to stdout (`-o -`) are CSV."""
    if target == "-":
        return "csv"
    fmt = FORMATS.get(Path(target).suffix.lower())
    if fmt is None:
        raise CalcError(f"-o {target}: the output must end in .csv or .parquet", "-o")
    return fmt


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
            f"-o {target}: Parquet needs pyarrow; install it with pip install 'deepep-calc[parquet]' "
            "or write .csv",
            "-o",
        )
    return fmt


def open_table_writer(out: Output, plan: SweepPlan) -> TableWriter:
    """The writer for this checked output (its format was checked before any row was computed)."""
    fmt = check_table_target(out.given)
    if have_pyarrow():
        return ArrowWriter(out, plan, fmt)
    return StdlibCsvWriter(out, plan)
