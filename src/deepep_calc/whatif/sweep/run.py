"""Running a planned sweep: every chunk through the model, to the table and the maps, or nothing.

`grid.py` turns the flags into a plan and the plan into chunks of rows; this module drives
them, counts the verdicts, reports progress through a callback, and commits the outputs together
at the end (`output.py` writes the table, `maps.py` fills the maps' grids). Drawing a map and
showing progress are the caller's: it passes `draw` and `progress`, so no face library loads here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from ...base.errors import InputError
from ...base.vocabulary import VERDICT_CODES
from ...decide.verdict import ARM_NAMES
from ...files.safe_write import check_distinct, check_output, commit, scenario_inputs
from .grid import SweepPlan, blocks_per_combination, evaluate_chunk, iter_chunks, plan_sweep
from .maps import BoundMapGrid, MapGrid, check_map_target
from .output import check_table_target, default_chunk_rows, open_table_writer

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
    varied: dict[str, list[Any]]
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
            "varied": self.varied,
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


def run_sweep(
    plan: SweepPlan,
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
) -> SweepSummary:
    """Evaluate every row; stream them to `output` and fill the verdict map; all-or-nothing files.

    Both targets are checked before the first row is computed (format, directory, permissions,
    not an input of the sweep, not one file twice); both files are committed together at the
    end, or neither (`deepep_calc.files.safe_write`). `bounds` adds each arm's bound columns to
    the table; `bound_map_path` draws what bounds `bound_arm`'s step over the same axes (and
    computes the bounds, whether the table shows them or not). CSV floats carry `precision` significant digits
    (Parquet keeps full doubles). `keep_invalid` writes the skipped combinations' rows too,
    with a `skipped_reason` and null metrics. `chunk_rows`: rows per vectorised pass (memory,
    not results), by default `output.default_chunk_rows` of the output's format. `draw` renders
    a map's grid to the file's bytes (`report.sweep_maps.draw`); a map needs one. `progress` is
    called with (rows done, rows in all) before the first chunk and after each.
    """
    if draw is None and (map_path is not None or bound_map_path is not None):
        raise TypeError("run_sweep: a map needs draw= (report.sweep_maps.draw)")
    if chunk_rows is not None and (
        isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or chunk_rows <= 0
    ):
        raise InputError("--chunk-rows", chunk_rows, "a whole number greater than 0")
    check_precision(precision)
    inputs = scenario_inputs(plan.axes["model"], plan.axes["calibration"])
    table_out = map_out = None
    map_fmt = "html"
    fmt = None
    if output is not None:
        fmt = check_table_target(output)
        table_out = check_output(output, "-o", inputs=inputs)
    if chunk_rows is None:
        chunk_rows = default_chunk_rows(fmt)
    grid = None
    if map_path is not None:
        map_fmt = check_map_target(map_path)
        map_out = check_output(map_path, "--map", inputs=inputs)
        grid = MapGrid(plan, x or "nodes", y or "concurrency")
    bound_out = bound_grid = None
    bound_fmt = "html"
    if bound_map_path is not None:
        bound_fmt = check_map_target(bound_map_path, "--bound-map")
        bound_out = check_output(bound_map_path, "--bound-map", inputs=inputs)
        bound_grid = BoundMapGrid(plan, x or "nodes", y or "concurrency", bound_arm)
    outputs = check_distinct([table_out, map_out, bound_out])
    with_bounds = bounds or bound_grid is not None
    evaluator = partial(evaluate_chunk, bounds=True) if with_bounds else None
    keep = keep_invalid and table_out is not None
    verdicts = np.zeros(len(VERDICT_CODES), dtype=np.int64)
    recommended = np.zeros(len(ARM_NAMES), dtype=np.int64)
    n_chunks = len(plan.combinations) * blocks_per_combination(plan.numeric_shape, chunk_rows)
    total = plan.rows + (plan.skipped_rows if keep else 0)
    started = time.perf_counter()
    writer = None
    done = 0
    try:
        if table_out is not None:
            writer = open_table_writer(table_out, plan, precision=precision, keep_invalid=keep, bounds=bounds)
        if progress is not None:
            progress(0, total)
        for chunk in iter_chunks(plan, chunk_rows, evaluator=evaluator, keep_invalid=keep):
            if chunk.skipped is None:
                verdicts += np.bincount(chunk.column("verdict"), minlength=len(VERDICT_CODES))
                recommended += np.bincount(chunk.column("recommended_arm"), minlength=len(ARM_NAMES))
                if grid is not None:
                    grid.add(chunk)
                if bound_grid is not None:
                    bound_grid.add(chunk)
            if writer is not None:
                writer.write(chunk)
            done += chunk.rows
            if progress is not None:
                progress(done, total)
        if writer is not None:
            writer.close()
        if grid is not None and map_out is not None and draw is not None:
            map_out.stage(draw(grid, map_fmt))
        if bound_grid is not None and bound_out is not None and draw is not None:
            bound_out.stage(draw(bound_grid, bound_fmt))
        commit(outputs)
    except BaseException:
        if writer is not None:
            writer.abort()
        for out in outputs:
            out.discard()
        raise
    elapsed = time.perf_counter() - started
    return SweepSummary(
        plan.rows,
        len(plan.combinations),
        n_chunks,
        elapsed,
        {k: int(v) for k, v in zip(VERDICT_CODES, verdicts, strict=True) if v},
        {k: int(v) for k, v in zip(ARM_NAMES, recommended, strict=True) if v},
        output,
        map_path,
        {f: plan.axes[f] for f in plan.varied},
        len(plan.skipped),
        plan.skipped_rows,
        plan.skipped_reasons(),
        keep,
        bound_map_path,
    )


def sweep(raw: Mapping[str, str | None], **kwargs: Any) -> SweepSummary:
    """Plan and run in one call (the Python twin of `deepep-calc sweep`)."""
    return run_sweep(plan_sweep(raw), **kwargs)
