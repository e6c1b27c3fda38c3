"""Running a planned sweep: every chunk through the model, to the table and the maps, or nothing.

`grid.py` turns the flags into a grid and the grid into chunks of rows; this module drives
them, counts the verdicts, reports progress through a callback, and commits the outputs together
at the end (`output.py` writes the table, `maps.py` fills the maps' grids). Drawing a map and
showing progress are the caller's: it passes `draw` and `progress`, so no face library loads here.
The file rules are the caller's too: it passes `files` (`io.safe_write`), which checks each
target before the first row, stages into temporary files and commits them together, so no file
is opened here but through what the caller handed in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ...base.errors import InputError
from ...base.vocabulary import VERDICT_CODES
from ...decide.verdict import ARM_NAMES
from ...question.scenario import resolve
from .grid import (
    CHUNK_ROWS,
    Chunk,
    Resolver,
    SweepGrid,
    blocks_per_combination,
    evaluate_chunk,
    iter_chunks,
    sweep_grid,
)
from .maps import BoundMapGrid, MapGrid, check_map_target

if TYPE_CHECKING:
    from ...io.safe_write import Output
    from ...io.sweep_table.writer import TableWriter

Draw = Callable[[MapGrid, str], bytes]  # a grid and "html" / "png" -> the file's bytes
Progress = Callable[[int, int], None]  # rows done, rows in all


@dataclass
class SweepSummary:
    rows: int
    combinations: int
    chunks: int
    seconds: float
    verdicts: dict[str, int]
    recommended: dict[str, int]
    output: str | None
    map: str | None
    swept: dict[str, list[Any]]  # the JSON key is `varied`
    skipped_combinations: int = 0
    skipped_rows: int = 0
    skipped_reasons: dict[str, int] = field(default_factory=dict)  # reason -> combinations
    kept_invalid: bool = False
    bound_map: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "combinations": self.combinations,
            "chunks": self.chunks,
            "seconds": round(self.seconds, 3),
            "rows_per_s": round(self.rows / self.seconds) if self.seconds > 0 else None,
            "verdicts": self.verdicts,
            "recommended_arm": self.recommended,
            "output": self.output,
            "map": self.map,
            **({"bound_map": self.bound_map} if self.bound_map is not None else {}),
            "varied": self.swept,
            "skipped": {
                "combinations": self.skipped_combinations,
                "rows": self.skipped_rows,
                "reasons": self.skipped_reasons,
                "written": self.kept_invalid and self.output is not None,
            },
        }

    def skipped_line(self) -> str | None:
        """One line for stderr: how many combinations were skipped, counted per reason."""
        if not self.skipped_combinations:
            return None
        reasons = "; ".join(f"{n} × {why}" for why, n in self.skipped_reasons.items())
        kept = ", written with their reason" if self.kept_invalid and self.output else ""
        return (
            f"skipped {self.skipped_combinations:,} invalid combination(s) "
            f"({self.skipped_rows:,} rows{kept}): {reasons}"
        )


MAX_PRECISION = 17  # significant digits that round-trip every float64


def check_precision(precision: int) -> int:
    """--precision: significant digits of CSV floats, 1 to 17 (17 round-trips exactly)."""
    if isinstance(precision, bool) or not isinstance(precision, int) or not 1 <= precision <= MAX_PRECISION:
        raise InputError("--precision", precision, f"a whole number from 1 to {MAX_PRECISION}")
    return precision


# size: the public sweep entry point: each keyword is one of the sweep command's flags, passed by name
def run_sweep(
    grid: SweepGrid,
    output: str | None = None,
    map_path: str | None = None,
    x: str | None = None,
    y: str | None = None,
    chunk_rows: int | None = None,
    progress: Progress | None = None,
    precision: int = 6,
    keep_invalid: bool = False,
    bounds: bool = False,
    bound_map_path: str | None = None,
    bound_arm: str = "deepep",
    draw: Draw | None = None,
    files: Any = None,
    tables: Any = None,
) -> SweepSummary:
    """Evaluate every row; stream them to `output` and fill the verdict map; all-or-nothing files.

    Both targets are checked before the first row is computed (format, directory, permissions,
    not an input of the sweep, not one file twice); both files are committed together at the
    end, or neither (`io.safe_write`). `bounds` adds each arm's bound columns to
    the table; `bound_map_path` draws what bounds `bound_arm`'s step over the same axes (and
    computes the bounds, whether the table shows them or not). CSV floats carry `precision` significant digits
    (Parquet keeps full doubles). `keep_invalid` writes the skipped combinations' rows too,
    with a `skipped_reason` and null metrics. `chunk_rows`: rows per vectorised pass (memory,
    not results), by default `tables.default_chunk_rows` of the output's format. `draw` renders
    a map's grid to the file's bytes (`report.sweep_maps.draw`); a map needs one. `progress` is
    called with (rows done, rows in all) before the first chunk and after each. `files` checks,
    stages and commits the targets (`io.safe_write`, which the CLI passes); a table
    or a map needs it. `tables` checks a table's format and opens its writer (`io.sweep_table`,
    which the CLI passes); a table needs it.
    """
    maps = map_path is not None or bound_map_path is not None
    _check_options(draw, chunk_rows, precision, maps)
    if files is None and (maps or output is not None):
        raise TypeError("run_sweep: an output needs files= (io.safe_write)")
    if tables is None and output is not None:
        raise TypeError("run_sweep: a table needs tables= (io.sweep_table)")
    inputs = files.scenario_inputs(grid.axes["model"], grid.axes["calibration"]) if files is not None else []
    table_out, fmt = _table_target(output, inputs, files, tables)
    default = tables.default_chunk_rows(fmt) if tables is not None else CHUNK_ROWS
    chunk_rows = chunk_rows or default  # a given one was checked to be > 0
    x, y = x or "nodes", y or "concurrency"
    verdict_map = _map_target(map_path, "--map", inputs, lambda: MapGrid(grid, x, y), files)
    bound_map = _map_target(
        bound_map_path, "--bound-map", inputs, lambda: BoundMapGrid(grid, x, y, bound_arm), files
    )
    outputs = files.check_distinct([table_out, verdict_map.out, bound_map.out]) if files is not None else []
    evaluator = partial(evaluate_chunk, bounds=True) if bounds or bound_map.grid is not None else None
    keep = keep_invalid and table_out is not None
    total = grid.rows + (grid.skipped_rows if keep else 0)
    tally = _Tally(output, map_path, bound_map_path)
    writer = None
    try:
        if table_out is not None:
            writer = tables.open_table_writer(
                table_out, grid, precision=precision, keep_invalid=keep, bounds=bounds
            )
        chunks = iter_chunks(grid, chunk_rows, evaluator=evaluator, keep_invalid=keep)
        tally.stream(chunks, writer, (verdict_map, bound_map), progress, total)
        if writer is not None:
            writer.close()
        verdict_map.stage(draw)
        bound_map.stage(draw)
        if files is not None:
            files.commit(outputs)
    except BaseException:
        if writer is not None:
            writer.abort()
        for out in outputs:
            out.discard()
        raise
    return tally.summary(grid, blocks_per_combination(grid.numeric_shape, chunk_rows), keep)


def _check_options(draw: Draw | None, chunk_rows: int | None, precision: int, maps: bool) -> None:
    """Refuse a map without a renderer and a bad --chunk-rows or --precision, before any work."""
    if draw is None and maps:
        raise TypeError("run_sweep: a map needs draw= (report.sweep_maps.draw)")
    if chunk_rows is not None and (
        isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or chunk_rows <= 0
    ):
        raise InputError("--chunk-rows", chunk_rows, "a whole number greater than 0")
    check_precision(precision)


def _table_target(
    output: str | None, inputs: Any, files: Any, tables: Any
) -> tuple[Output | None, str | None]:
    """The table's checked output and format (None, None: no table)."""
    if output is None:
        return None, None
    fmt = tables.check_table_target(output)
    return files.check_output(output, "-o", inputs=inputs), fmt


@dataclass
class _MapTarget:
    """One map file's checked output, its format and the grid the chunks fill (all None: no map)."""

    path: str | None
    out: Output | None = None
    fmt: str = "html"
    grid: MapGrid | None = None

    def stage(self, draw: Draw | None) -> None:
        """The drawn map handed to its output, to be committed with the others."""
        if self.grid is not None and self.out is not None and draw is not None:
            self.out.stage(draw(self.grid, self.fmt))


def _map_target(
    path: str | None, flag: str, inputs: Any, make_grid: Callable[[], MapGrid], files: Any
) -> _MapTarget:
    """Check a map's target (format, then the file) and make its grid; nothing without a path."""
    if path is None:
        return _MapTarget(None)
    fmt = check_map_target(path, flag)
    out = files.check_output(path, flag, inputs=inputs)
    return _MapTarget(path, out, fmt, make_grid())


@dataclass
class _Tally:
    """Verdicts and recommended arms counted over the computed rows, and the paths written."""

    output: str | None = None
    map: str | None = None
    bound_map: str | None = None
    verdicts: np.ndarray = field(default_factory=lambda: np.zeros(len(VERDICT_CODES), dtype=np.int64))
    recommended: np.ndarray = field(default_factory=lambda: np.zeros(len(ARM_NAMES), dtype=np.int64))
    started: float = field(default_factory=time.perf_counter)

    def add(self, chunk: Chunk) -> None:
        self.verdicts += np.bincount(chunk.column("verdict"), minlength=len(VERDICT_CODES))
        self.recommended += np.bincount(chunk.column("recommended_arm"), minlength=len(ARM_NAMES))

    def stream(
        self,
        chunks: Iterable[Chunk],
        writer: TableWriter | None,
        maps: tuple[_MapTarget, ...],
        progress: Progress | None,
        total: int,
    ) -> None:
        """Every chunk counted, added to the maps' grids and handed to the writer, with progress."""
        grids = [m.grid for m in maps if m.grid is not None]
        done = 0
        if progress is not None:
            progress(0, total)
        for chunk in chunks:
            if chunk.skipped is None:
                self.add(chunk)
                for grid in grids:
                    grid.add(chunk)
            if writer is not None:
                writer.write(chunk)
            done += chunk.rows
            if progress is not None:
                progress(done, total)

    def summary(self, grid: SweepGrid, blocks: int, keep: bool) -> SweepSummary:
        """What the sweep did, for stderr and `--json`; its time runs from the tally's making."""
        return SweepSummary(
            grid.rows,
            len(grid.combinations),
            len(grid.combinations) * blocks,
            time.perf_counter() - self.started,
            {k: int(v) for k, v in zip(VERDICT_CODES, self.verdicts, strict=True) if v},
            {k: int(v) for k, v in zip(ARM_NAMES, self.recommended, strict=True) if v},
            self.output,
            self.map,
            {f: grid.axes[f] for f in grid.swept},
            len(grid.skipped),
            grid.skipped_rows,
            grid.skipped_reasons(),
            keep,
            self.bound_map,
        )


def sweep(
    raw: Mapping[str, str | None],
    resolve: Resolver = resolve,
    read_profile: Callable[[str], Any] | None = None,
    **kwargs: Any,
) -> SweepSummary:
    """Plan and run in one call (the Python twin of `deepep-calc sweep`): `resolve` and
    `read_profile` are `sweep_grid`'s (the defaults read no file), the keywords `run_sweep`'s."""
    return run_sweep(sweep_grid(raw, resolve, read_profile), **kwargs)
