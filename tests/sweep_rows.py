"""What the sweep tests share: the CLI's file rules, every row of a grid as Python values, and an
evaluator that fails if a sweep starts work it should have refused first."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from deepep_calc.io import safe_write, sweep_table
from deepep_calc.io.sweep_table import chunk_values, columns
from deepep_calc.whatif.sweep.grid import iter_chunks
from deepep_calc.whatif.sweep.run import run_sweep as run_sweep_given

# The CLI hands the sweep its file rules (check, stage, commit); so do the tests.
run_sweep = partial(run_sweep_given, files=safe_write, tables=sweep_table)


def sweep_rows(grid: Any, chunk_rows: int = 10_000) -> list[dict[str, Any]]:
    """Every row of a sweep as plain Python values (codes decoded), in sweep order."""
    out: list[dict[str, Any]] = []
    for chunk in iter_chunks(grid, chunk_rows):
        values = chunk_values(chunk)
        cols = {}
        for name, _kind in columns():
            v = values[name]
            if isinstance(v, tuple):
                idx, names = v
                cols[name] = [names[i] for i in idx]
            elif isinstance(v, np.ndarray) and v.ndim == 1:
                cols[name] = v.tolist()
            else:
                item = v.item() if isinstance(v, np.ndarray) else v
                cols[name] = [item] * chunk.rows
        out += [dict(zip(cols, vals, strict=True)) for vals in zip(*cols.values(), strict=True)]
    return out


def no_work(*_: Any) -> Any:
    raise AssertionError("the sweep started evaluating before validating")
