"""The sweep table's writer pipeline: chunks streamed to a checked output on background threads.

Rows go to the temporary file of a checked `io.safe_write.Output` the caller hands in (in the
target's directory): this module opens no target and commits none. The command commits it with
its other outputs once the last chunk is written, and on any failure, Ctrl-C and terminating
signals included, the temporary file is removed. A stream target (`-o -`, a FIFO, a device)
gets the rows as they are computed.

Why one module: the pipeline (`TableWriter`: one writer thread a chunk behind the model, a
flushing thread behind that, one failure rule) and the two writers it drives must write the
same columns the same way; the columns, their rounding and their text are `formats.py`'s.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...base.vocabulary import VERDICT_CODES
from ...decide.verdict import ARM_NAMES
from ...physics.bounds import BOUNDS, EXCHANGE_BOUNDS
from ...whatif.sweep.grid import FIELDS, Chunk, SweepGrid
from .formats import _is_column, _rounded, _text, _text_list, chunk_values, columns

if TYPE_CHECKING:  # an output checked and opened by the caller (`run.py`) is handed in
    from ..safe_write import Output

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
    last chunk and not for the whole file (docs/sweep.md has what that saved). Durability is
    unchanged: the commit still syncs the file and its directory before and after the rename;
    a flush that failed fails the sweep like a write.
    """

    def __init__(
        self,
        out: Output,
        grid: SweepGrid,
        precision: int | None = None,
        keep_invalid: bool = False,
        bounds: bool = False,
    ) -> None:
        self.out = out
        self.grid = grid
        self.precision = precision  # significant digits of floats (None: every bit)
        self.keep_invalid = keep_invalid
        self.bounds = bounds  # each arm's bound columns (--bounds)
        self.disagg = grid.disaggregated
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

    def __init__(self, out: Output, grid: SweepGrid, fmt: str, **kwargs: Any) -> None:
        self.fmt = fmt
        super().__init__(out, grid, **kwargs)

    def _open(self) -> None:
        """The Arrow schema of the table's columns, and the file's Parquet or CSV writer."""
        import pyarrow as pa

        self.pa = pa
        self.dict_type = pa.dictionary(pa.int32(), pa.string())
        types = {"str": self.dict_type, "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
        self.schema = pa.schema([(name, types[kind]) for name, kind in self.columns])
        self.kinds = [kind for _, kind in self.columns]
        self.names: dict[tuple[str, ...], Any] = {}
        self.repeats: dict[str | None, Any] = {}  # CSV: a one-value column's text (`_repeated`)
        sink = str(self.sink) if isinstance(self.sink, Path) else self.sink
        self.writer: Any = self._parquet_writer(sink) if self.fmt == "parquet" else self._csv_writer(sink)

    def _parquet_writer(self, sink: Any) -> Any:
        """Parquet with per-column encodings chosen on a million-row benchmark (docs/performance.md,
        "Sweep writer settings"): dictionary pages for the labels and the whole-number inputs (a
        sweep's axes hold few distinct values), not for floats; floats byte-stream-split and LZ4
        (Parquet's LZ4_RAW), the rest zstd level 1; statistics only where a reader can use them
        to skip pages."""
        import pyarrow.parquet as pq

        dictionary = [name for name, kind in self.columns if kind in ("str", "int", "bool")]
        floats = [name for name, kind in self.columns if kind == "float"]
        stats = [name for name, kind in self.columns if kind in ("int", "float")]
        return pq.ParquetWriter(
            sink,
            self.schema,
            compression={name: "lz4" if kind == "float" else "zstd" for name, kind in self.columns},
            compression_level={name: 1 for name, kind in self.columns if kind != "float"},
            use_dictionary=dictionary,
            use_byte_stream_split=floats,
            write_statistics=stats,
        )

    def _csv_writer(self, sink: Any) -> Any:
        """A CSV writer that is handed text: number-to-text is most of a CSV's time, and Arrow's
        writer prints a number column with the very cast used here, so every number reaches it
        as text already. A column that holds one value in the chunk is formatted once (`_text`,
        Arrow's layout) and repeated; an array column is rounded and cast on one of the two
        threads (`text_early`: the caller's, in `_prepare`; `text_late`: the writer's, in
        `_write`), every other float column but one on the writer's, which balances the two
        threads. Not under "needed" quoting, which would quote a number that arrives as text.
        Text and the writer's buffers come from the system allocator, not Arrow's default pool,
        which returned each chunk's freed text to the OS. Figures: docs/performance.md."""
        import pyarrow.compute as pc
        import pyarrow.csv as pacsv

        pa = self.pa
        self.pc = pc
        self.text_pool = pa.system_memory_pool()
        quoting = self._quoting()
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
        return pacsv.CSVWriter(
            sink,
            self.csv_schema,
            write_options=pacsv.WriteOptions(quoting_style=quoting),
            memory_pool=self.text_pool,
        )

    def _quoting(self) -> str:
        """ "none" (no quotes: smaller, faster) unless some string value needs quoting."""
        texts = [name for name, _ in self.columns]
        texts += [str(v) for name in FIELDS if name not in self.grid.numeric for v in self.grid.axes[name]]
        texts += [*VERDICT_CODES, *ARM_NAMES, *BOUNDS, *EXCHANGE_BOUNDS]
        texts += [str(c.skipped) for c in self.grid.skipped]
        texts += [r.model.weight_dtype for c in self.grid.combinations if (r := c.resolved) is not None]
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
