"""Sweep tables on disk: CSV or Parquet, streamed chunk by chunk, all or nothing.

Rows go to the temporary file of a checked `files.Output` (in the target's directory); the
command commits it with its other outputs once the last chunk is written, and on any failure,
Ctrl-C and terminating signals included, the temporary file is removed. A stream target
(`-o -`, a FIFO, a device) gets the rows as they are computed. CSV and Parquet are written by
pyarrow's C++ writers (a default dependency); if pyarrow cannot be imported the standard library
writes the same CSV columns and values, more slowly, and Parquet is refused before any work.

CSV floats carry `precision` significant digits (6 by default, `--precision`): rounded here,
in NumPy, so both writers print the same shortest text of the same rounded double. Parquet
keeps every float64 bit. Verdict and arm codes travel as int8 until a writer names them.

Why one module: the Arrow writer, its CSV formatting and the stdlib fallback must write the
same columns with the same rounding; keeping them side by side is how they stay equal.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from ...base.errors import CalcError
from ...base.vocabulary import VERDICT_CODES
from ...decide.verdict import ARM_NAMES
from ...files.safe_write import Output
from ...physics.bounds import BOUNDS, EXCHANGE_BOUNDS
from .grid import (
    ARM_KEYS,
    ARM_METRICS,
    BOOL_FIELDS,
    BOUND_CODES,
    BOUND_METRICS,
    CHUNK_ROWS,
    DISAGG_LABELS,
    DISAGG_METRICS,
    FIELDS,
    FLOAT_FIELDS,
    INT_FIELDS,
    RESULT_METRICS,
    Chunk,
    SweepPlan,
)

FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
# A CSV through Arrow formats on both threads (`ArrowWriter._prepare`), so two chunks of text
# are alive at once: at 50k rows that peaked at 320-330 MiB on a million rows, at 25k 230-240
# MiB, as fast (docs/sweep.md).
CSV_CHUNK_ROWS = 25_000


def value_columns(bounds: bool = False, disagg: bool = False) -> list[str]:
    """The metric columns that carry a provenance tag, in output order."""
    cols = [f"{arm}_{m}" for arm in ARM_KEYS for m in ARM_METRICS]
    extra = [f"{arm}_{m}" for arm in ARM_KEYS for m in BOUND_METRICS] if bounds else []
    split = [f"disagg_{m}" for m in DISAGG_METRICS] if disagg else []
    return [*cols, *RESULT_METRICS, *extra, *split]


def columns(keep_invalid: bool = False, bounds: bool = False, disagg: bool = False) -> list[tuple[str, str]]:
    """(name, kind) of every output column; kind is str, int, float or bool.

    With `bounds` (`--bounds`), each arm's bound, exchange bound and NIC busy shares follow the
    verdict (their tags with the others). With `keep_invalid` a last `skipped_reason` column
    says why a row was not computed (null for the rows that were).
    """
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
    if bounds:
        for arm in ARM_KEYS:
            out += [(f"{arm}_{c}", "str") for c in BOUND_CODES]
            out += [(f"{arm}_{m}", "float") for m in BOUND_METRICS]
    if disagg:  # a disaggregated deployment's figures (aggregated rows leave them empty)
        out += [(f"disagg_{m}", "float") for m in DISAGG_METRICS]
        out += [("disagg_feasible", "bool"), *((f"disagg_{m}", "str") for m in DISAGG_LABELS)]
    out += [(f"{c}_tag", "str") for c in value_columns(bounds, disagg)]
    if keep_invalid:
        out.append(("skipped_reason", "str"))
    return out


def chunk_values(
    chunk: Chunk, keep_invalid: bool = False, bounds: bool = False, disagg: bool = False
) -> dict[str, Any]:
    """Column -> array over the chunk's rows, or one scalar that holds for all of them.

    Codes (verdict, recommended arm) come as (index array, names) pairs for dictionary encoding.
    A skipped combination's rows carry their scenario fields and None for every metric.
    """
    r = chunk.combination.resolved
    out: dict[str, Any] = {}
    for name in FIELDS:
        if name == "nodes" and r is not None and r.disagg is not None:
            out[name] = int(r.scenario.nodes)  # P + D, whatever the nodes axis holds
        elif name in chunk.numeric:
            arr = chunk.column(name)  # a field held at one value is a scalar in the pass
            out[name] = arr.astype(bool) if name in BOOL_FIELDS else arr.astype(np.int64)
        elif r is None:
            out[name] = chunk.combination.fields.get(name)
        elif name == "gpus_per_node":
            out[name] = r.gpus_per_node
        elif name in ("prefill_cuda_graphs", "decode_cuda_graphs") and r.disagg is not None:
            out[name] = r.disagg.side(name.split("_", 1)[0]).cuda_graphs
        elif name == "weight_dtype":
            out[name] = r.model.weight_dtype
        else:
            out[name] = getattr(r.scenario, name)
    for name, _ in columns(keep_invalid, bounds, disagg):
        if name in out:
            continue
        if name == "skipped_reason":
            out[name] = chunk.skipped
        elif r is None or (name.startswith("disagg_") and name not in chunk.metrics):
            out[name] = None
        elif name == "verdict":
            out[name] = (chunk.column(name), VERDICT_CODES)
        elif name == "recommended_arm":
            out[name] = (chunk.column(name), ARM_NAMES)
        elif name.endswith("_exchange_bound"):
            out[name] = (chunk.column(name), EXCHANGE_BOUNDS)
        elif name.endswith("_bound"):
            out[name] = (chunk.column(name), BOUNDS)
        elif name.endswith("_tag"):
            out[name] = chunk.metrics[name]
        elif isinstance(chunk.metrics.get(name), tuple):  # (indices, names): a code column
            idx, names = chunk.metrics[name]
            out[name] = (np.broadcast_to(idx, chunk.block.shape).reshape(-1), names)
        else:
            out[name] = chunk.column(name)
    return out


# 10**k for every k a float64 can hold, so rounding looks powers up instead of computing them.
_POW10_OFFSET = 330
with np.errstate(over="ignore"):
    _POW10 = 10.0 ** np.arange(-_POW10_OFFSET, 310, dtype=float)
# floor(n * log10(2)) as (n * 78913) >> 18, exact for every binary exponent a double has
# (|n| <= 1100; checked in the tests): integer arithmetic, a thirtieth of the float floor's time.
_LOG10_2_NUM, _LOG10_2_SHIFT = 78913, 18


FAST_DIGITS = 14  # up to here the integer significand and its power of ten are exact doubles
MAX_EXACT_POWER = 22  # 10**22 is the largest power of ten a double holds exactly


def _printf_rounded(values: np.ndarray, digits: int) -> np.ndarray:
    """The slow, exact path: what printf's `%.{digits-1}e` reads back as."""
    return np.array([float(f"{v:.{digits - 1}e}") for v in values.tolist()], dtype=float)


def round_significant(values: np.ndarray, digits: int) -> np.ndarray:
    """Each float rounded to `digits` significant digits (a new array; nan, inf and 0 kept).

    The result is the double nearest the rounded decimal (an integer times or over an exact
    power of ten), so a shortest-repr printer (Arrow's, Python's) prints at most `digits`
    digits. The decimal exponent comes from frexp and one comparison, not log10: this runs on
    every float column of a million-row CSV. Values whose power of ten is not an exact double
    (beyond 1e22 either way) and more than `FAST_DIGITS` digits take printf's exact path.
    """
    x = np.asarray(values, dtype=float)
    if digits >= 17:
        return x
    if digits > FAST_DIGITS:
        out = x.copy()
        finite = np.isfinite(x) & (x != 0)
        out[finite] = _printf_rounded(x[finite], digits)
        return out
    a = np.abs(x)
    _, b = np.frexp(a)  # a = f * 2**b with f in [0.5, 1)
    e = ((b - 1) * _LOG10_2_NUM) >> _LOG10_2_SHIFT  # decimal exponent, at most one too low
    np.clip(e, -_POW10_OFFSET + 1, 308, out=e)
    e += a >= _POW10[e + (1 + _POW10_OFFSET)]
    k = (digits - 1) - e  # decimals to keep
    k_low, k_high = int(k.min(initial=0)), int(k.max(initial=0))
    with np.errstate(invalid="ignore", over="ignore"):
        scale = _POW10[np.clip(k, -308, 308) + _POW10_OFFSET]
        out = np.round(x * scale)
        out /= scale
        if k_low < 0:  # large values: divide by an exact power of ten instead
            big = k < 0
            step = _POW10[np.clip(-k[big], -308, 308) + _POW10_OFFSET]
            out[big] = np.round(x[big] / step) * step
    if k_low < -MAX_EXACT_POWER or k_high > MAX_EXACT_POWER:  # a power of ten no double holds
        inexact = (np.abs(k) > MAX_EXACT_POWER) & (a > 0) & (a < np.inf)
        if inexact.any():
            out[inexact] = _printf_rounded(x[inexact], digits)
    # zeros of either sign come through the arithmetic as they went in; a non-finite result
    # (NaN, an infinity) takes its input back, so a NaN keeps its bits
    bad = ~np.isfinite(out)
    if bad.any():
        out[bad] = x[bad]
    return out


def _rounded(value: Any, kind: str, digits: int | None) -> Any:
    """A float column (or scalar) at `digits` significant digits; anything else as it is."""
    if digits is None or kind != "float" or value is None or isinstance(value, tuple):
        return value
    if isinstance(value, np.ndarray) and value.ndim == 1:
        return round_significant(value, digits)
    item = value.item() if isinstance(value, np.ndarray) else value
    return float(round_significant(np.asarray([item], dtype=float), digits)[0])


_MAX_REPEATS = 256  # one-value text columns a CSV writer keeps, each a chunk long (~0.3 MB)
_datasync = getattr(os, "fdatasync", os.fsync)  # data without the inode's times, where there is one


class TableWriter:
    """Streams chunks into the output's temporary file (or its stream); `close()` finishes the
    file for the commit, `abort()` drops it. Write failures name the target, in one line.

    Writing runs on one background thread, one chunk behind the model: Arrow's writers and
    NumPy's rounding release the GIL, so on two cores the next chunk is computed while the last
    one is formatted. Before a chunk is handed over, `_prepare` runs on the caller's thread,
    beside the chunk in flight: a writer gives it the share of the formatting that balances the
    two threads. At most one chunk waits; a failure surfaces at the next `write` or at `close`,
    before anything is committed, and `abort` waits for the thread before discarding.

    A file is flushed behind the writer: after each chunk a third thread hands what is written
    so far to the disk (`fdatasync`; one at a time, a chunk that finds one running leaves it to
    the next), while the writer encodes the next chunk, so the commit's fsync waits for the
    last chunk and not for the whole file (on a million rows it was a quarter of a Parquet
    sweep's time). Durability is unchanged: the commit still syncs the file and its directory
    before and after the rename; a flush that failed fails the sweep like a write.
    """

    def __init__(
        self,
        out: Output,
        plan: SweepPlan,
        precision: int | None = None,
        keep_invalid: bool = False,
        bounds: bool = False,
    ) -> None:
        self.out = out
        self.plan = plan
        self.precision = precision  # significant digits of floats (None: every bit)
        self.keep_invalid = keep_invalid
        self.bounds = bounds  # each arm's bound columns (--bounds)
        self.disagg = plan.disaggregated
        self.columns = columns(keep_invalid, bounds, self.disagg)
        self.pool: Any = None
        self.pending: Any = None
        self.sink: Any = out.temp_path() if out.is_file else _Unclosed(out.stream())
        self.flush_fd: int | None = None
        self.flusher: Any = None
        self.flushing: Any = None
        try:
            if out.is_file:
                self.flush_fd = os.open(self.sink, os.O_RDONLY)
            self._open()
        except OSError as exc:
            self.abort()
            raise out.failed(exc) from None
        except BaseException:
            self.abort()
            raise

    def _open(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _prepare(self, chunk: Chunk) -> Any:
        """What the writer thread gets for this chunk; runs on the caller's thread."""
        return chunk

    def _write(self, prepared: Any) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _close(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def write(self, chunk: Chunk) -> None:
        """Prepare the chunk here (beside the one in flight), then hand it to the writer thread
        once the previous one is written."""
        prepared = self._prepare(chunk)
        self._wait()
        if self.pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sweep-writer")
        self.pending = self.pool.submit(self._write_behind, prepared)

    def _write_behind(self, prepared: Any) -> None:
        """`_write` on the writer thread, then the file's written bytes handed to the disk by the
        flushing thread, unless it is still busy with the last ones."""
        self._write(prepared)
        if self.flush_fd is None:
            return
        if self.flushing is not None:
            if not self.flushing.done():
                return
            self.flushing.result()  # a failed flush is a failed write
        if self.flusher is None:
            from concurrent.futures import ThreadPoolExecutor

            self.flusher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sweep-flush")
        self.flushing = self.flusher.submit(_datasync, self.flush_fd)

    def _wait(self) -> None:
        """Block until the chunk in flight is written; its failure is raised here, in one line."""
        pending, self.pending = self.pending, None
        if pending is None:
            return
        try:
            pending.result()
        except OSError as exc:
            raise self.out.failed(exc) from None

    def _stop(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True)
            self.pool = None
        if self.flusher is not None:
            self.flusher.shutdown(wait=True)
            self.flusher = None
        flushing, self.flushing = self.flushing, None
        if self.flush_fd is not None:
            fd, self.flush_fd = self.flush_fd, None
            os.close(fd)
        if flushing is not None:
            flushing.result()  # OSError: the caller names the file

    def close(self) -> None:
        """The last chunk is written: finish the file (footer, flush, fsync) for the commit."""
        try:
            self._wait()
            self._stop()
            self._close()
        except OSError as exc:
            raise self.out.failed(exc) from None
        if self.out.is_file:
            self.out.staged()

    def abort(self) -> None:
        with contextlib.suppress(BaseException):  # the chunk in flight is thrown away with the file
            self._wait()
        with contextlib.suppress(Exception):
            self._stop()
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

    def __init__(self, out: Output, plan: SweepPlan, fmt: str, **kwargs: Any) -> None:
        self.fmt = fmt
        super().__init__(out, plan, **kwargs)

    def _open(self) -> None:
        import pyarrow as pa

        self.pa = pa
        self.dict_type = pa.dictionary(pa.int32(), pa.string())
        types = {"str": self.dict_type, "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
        self.schema = pa.schema([(name, types[kind]) for name, kind in self.columns])
        self.kinds = [kind for _, kind in self.columns]
        self.names: dict[tuple[str, ...], Any] = {}
        self.repeats: dict[str | None, Any] = {}  # CSV: a one-value column's text (`_repeated`)
        sink = str(self.sink) if isinstance(self.sink, Path) else self.sink
        if self.fmt == "parquet":
            import pyarrow.parquet as pq

            # Measured on a million rows (benchmarks/sweep_speed.py): dictionary pages for the
            # labels and the whole-number inputs (a sweep's axes hold few distinct values: a
            # dictionary writes the 12 int columns in a third of the time zstd takes on them
            # plain), not for floats (on distinct floats the attempt costs several times the
            # write and saves nothing); floats byte-stream-split and LZ4 (Parquet's LZ4_RAW:
            # a fifth less whole-sweep time than zstd level 1, a 3 % larger file), the rest
            # zstd level 1; statistics only where a reader can use them to skip pages.
            dictionary = [name for name, kind in self.columns if kind in ("str", "int", "bool")]
            floats = [name for name, kind in self.columns if kind == "float"]
            stats = [name for name, kind in self.columns if kind in ("int", "float")]
            self.writer: Any = pq.ParquetWriter(
                sink,
                self.schema,
                compression={name: "lz4" if kind == "float" else "zstd" for name, kind in self.columns},
                compression_level={name: 1 for name, kind in self.columns if kind != "float"},
                use_dictionary=dictionary,
                use_byte_stream_split=floats,
                write_statistics=stats,
            )
        else:
            import pyarrow.compute as pc
            import pyarrow.csv as pacsv

            self.pc = pc
            # Text columns and the writer's buffers come from the system allocator: with Arrow's
            # default pool (mimalloc) each chunk's freed text went back to the OS, ~100,000 page
            # faults per million rows (the file's size in pages) and ~0.3 s of system time.
            self.text_pool = pa.system_memory_pool()
            quoting = self._quoting()
            # Number-to-text is most of a CSV's time, and Arrow's writer prints a number column
            # with the very cast used here, so every number reaches the writer as text already:
            # a column that holds one value in the chunk is formatted once (`_text`, Arrow's
            # layout) and repeated; an array column is rounded and cast on one of the two threads
            # (`text_early`: the caller's, in `_prepare`; `text_late`: the writer's, in `_write`).
            # The writer then only lays text out: on a 20,000-row chunk of the benchmark it takes
            # 19 ms over text where it took 32 ms over the typed int and bool columns. Not under
            # "needed" quoting, which would quote a number that arrives as text.
            # Every other float column but one is left to the writer (10 of 23), which also lays
            # out every cell: on the million-row benchmark the two threads' CPU times then agree
            # within ~5 % (11 of 23 left the writer ~10 % behind, 9 the caller).
            numbers = [i for i, kind in enumerate(self.kinds) if kind != "str"] if quoting == "none" else []
            late = frozenset([i for i in numbers if self.kinds[i] == "float"][1::2][:-1])
            self.text_early, self.text_late = frozenset(numbers) - late, late
            self.csv_schema = pa.schema(
                [
                    (
                        f.name,
                        pa.string()
                        if f.type == self.dict_type or i in self.text_early | self.text_late
                        else f.type,
                    )
                    for i, f in enumerate(self.schema)
                ]
            )
            self.writer = pacsv.CSVWriter(
                sink,
                self.csv_schema,
                write_options=pacsv.WriteOptions(quoting_style=quoting),
                memory_pool=self.text_pool,
            )

    def _quoting(self) -> str:
        """ "none" (no quotes: smaller, faster) unless some string value needs quoting."""
        texts = [name for name, _ in self.columns]
        texts += [str(v) for name in FIELDS if name not in self.plan.numeric for v in self.plan.axes[name]]
        texts += [*VERDICT_CODES, *ARM_NAMES, *BOUNDS, *EXCHANGE_BOUNDS]
        texts += [str(c.skipped) for c in self.plan.skipped]
        texts += [r.model.weight_dtype for c in self.plan.combinations if (r := c.resolved) is not None]
        special = (",", '"', "\n", "\r")
        return "needed" if any(ch in t for t in texts for ch in special) else "none"

    def _dictionary(self, names: tuple[str, ...]) -> Any:
        if names not in self.names:
            self.names[names] = self.pa.array(list(names), self.pa.string())
        return self.names[names]

    def _array(self, value: Any, typ: Any, n: int) -> Any:
        pa = self.pa
        if isinstance(value, tuple):  # (indices, names): a code column
            idx, names = value
            return pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32)), self._dictionary(names))
        if isinstance(value, np.ndarray) and value.ndim == 1:
            return pa.array(value, type=typ)
        if isinstance(value, np.ndarray):
            value = value.item()
        if value is None:
            return pa.nulls(n, typ)
        if typ == self.dict_type:
            zeros = pa.array(np.zeros(n, dtype=np.int32))
            return pa.DictionaryArray.from_arrays(zeros, self._dictionary((str(value),)))
        return pa.repeat(pa.scalar(value, typ), n)

    def _csv_array(self, value: Any, typ: Any, n: int) -> Any:
        """A CSV column: labels as plain strings (Arrow's CSV writer decodes a dictionary column
        value by value, three times slower than writing plain strings)."""
        if typ == self.dict_type and not isinstance(value, tuple) and not _is_column(value):
            return self._repeated(value, "str", n)
        arr = self._array(value, typ, n)
        return arr.dictionary.take(arr.indices) if typ == self.dict_type else arr

    def _repeated(self, value: Any, kind: str, n: int) -> Any:
        """One value's text over n rows. Most columns hold one value per chunk, so each text's
        array is built once, as long as the longest chunk, and sliced (Arrow arrays are
        immutable and a slice copies nothing): not rebuilt for every chunk and column. Called on
        the caller's thread only (`_prepare`), so the shared arrays need no lock."""
        item = value.item() if isinstance(value, np.ndarray) else value
        text = None if item is None else _text(item, kind)
        arr = self.repeats.get(text)
        if arr is None or len(arr) < n:
            pa = self.pa
            arr = pa.nulls(n, pa.string()) if text is None else pa.repeat(pa.scalar(text, pa.string()), n)
            if len(self.repeats) >= _MAX_REPEATS:
                self.repeats.clear()
            self.repeats[text] = arr
        return arr if len(arr) == n else arr.slice(0, n)

    def _prepare(self, chunk: Chunk) -> Any:
        """The chunk as Arrow columns, on the caller's thread: for Parquet all of it (the writer
        thread then only encodes and compresses, the larger share); for a CSV every column text,
        but the share of the float columns left to the writer's thread (`text_late`)."""
        values = chunk_values(chunk, self.keep_invalid, self.bounds, self.disagg)
        if self.fmt != "csv":
            arrays = [self._array(values[f.name], f.type, chunk.rows) for f in self.schema]
            return self.pa.Table.from_arrays(arrays, schema=self.schema)
        arrays = []
        for i, (f, kind) in enumerate(zip(self.schema, self.kinds, strict=True)):
            value = values[f.name]
            if i in self.text_late and _is_column(value):
                arrays.append(value)  # rounded and cast on the writer's thread
            elif i in self.text_early or i in self.text_late:
                arrays.append(self._text_array(value, kind, f.type, chunk.rows))
            else:  # labels; under "needed" quoting, numbers too
                arrays.append(self._csv_array(_rounded(value, kind, self.precision), f.type, chunk.rows))
        return arrays

    def _text_array(self, value: Any, kind: str, typ: Any, n: int) -> Any:
        """A number column as the text Arrow's writer would print for it (rounded floats)."""
        pa = self.pa
        value = _rounded(value, kind, self.precision)
        if _is_column(value):
            return self.pc.cast(pa.array(value, type=typ), pa.string(), memory_pool=self.text_pool)
        return self._repeated(value, kind, n)

    def _write(self, prepared: Any) -> None:
        if self.fmt == "csv":
            arrays = [
                self._text_array(a, self.kinds[i], self.schema[i].type, len(a)) if _is_column(a) else a
                for i, a in enumerate(prepared)
            ]
            self.writer.write_table(self.pa.Table.from_arrays(arrays, schema=self.csv_schema))
            return
        self.writer.write_table(prepared)

    def _close(self) -> None:
        if getattr(self, "writer", None) is not None:
            self.writer.close()
            self.writer = None


class StdlibCsvWriter(TableWriter):
    """CSV without pyarrow: the same columns and values, written by the csv module.

    Floats are printed as Arrow prints them (shortest text of the rounded double, whole values
    without ".0"), so a file reads the same whichever writer made it.
    """

    def _open(self) -> None:
        if isinstance(self.sink, Path):
            self.handle: Any = open(self.sink, "w", newline="", encoding="utf-8")  # noqa: SIM115
        else:
            self.handle = io.TextIOWrapper(self.sink, encoding="utf-8", newline="", write_through=True)
        self.csv = csv.writer(self.handle)
        self.csv.writerow([name for name, _ in self.columns])

    def _write(self, chunk: Chunk) -> None:
        n = chunk.rows
        values = chunk_values(chunk, self.keep_invalid, self.bounds, self.disagg)
        cols = []
        for name, kind in self.columns:
            value = _rounded(values[name], kind, self.precision)
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


# Arrow prints a float in plain decimals when its decimal exponent E is in [-6, 9] and as
# d.ddde+E otherwise (double-conversion's shortest mode with Arrow's limits); Python's repr
# switches at other limits (-4 and 16), so the digits come from repr and the layout is Arrow's.
_PLAIN_EXPONENTS = range(-6, 10)


def _float_text(value: float) -> str:
    """A float as Arrow's CSV writer prints it: the shortest digits that read back as the same
    double (Python's repr has the same digits), laid out as Arrow lays them out: 2 not 2.0,
    0.00001 not 1e-05, 1e+10 not 10000000000.0, 1.2e-7 not 1.2e-07."""
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    mantissa, _, exp = repr(abs(value)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    if not digits.rstrip("0"):
        return sign + "0"
    exponent = int(exp or 0) + len(whole) - 1 - (len(whole + frac) - len(digits))
    digits = digits.rstrip("0")
    if exponent in _PLAIN_EXPONENTS:
        if exponent >= len(digits) - 1:
            return sign + digits + "0" * (exponent - len(digits) + 1)
        if exponent >= 0:
            return f"{sign}{digits[: exponent + 1]}.{digits[exponent + 1 :]}"
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    point = f".{digits[1:]}" if len(digits) > 1 else ""
    return f"{sign}{digits[0]}{point}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"


def _is_column(value: Any) -> bool:
    """A value that varies over the chunk's rows (one per row), not one that holds for all."""
    return isinstance(value, np.ndarray) and value.ndim == 1


def _text(value: Any, kind: str) -> str:
    if value is None:
        return ""
    if kind == "bool":
        return "true" if value else "false"
    if kind == "float":
        return _float_text(float(value))
    return str(value)


def _text_list(arr: np.ndarray, kind: str) -> list[Any]:
    if kind == "bool":
        return np.where(arr, "true", "false").tolist()
    if kind == "float":
        return [_float_text(v) for v in arr.tolist()]
    return arr.tolist()


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
    out: Output, plan: SweepPlan, precision: int = 6, keep_invalid: bool = False, bounds: bool = False
) -> TableWriter:
    """The writer for this checked output (its format was checked before any row was computed)."""
    fmt = check_table_target(out.given)
    kwargs = {"precision": precision, "keep_invalid": keep_invalid, "bounds": bounds}
    if have_pyarrow():
        return ArrowWriter(out, plan, fmt, **kwargs)
    return StdlibCsvWriter(out, plan, **kwargs)
