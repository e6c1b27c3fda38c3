"""The grids behind a sweep's maps: one cell per combination over two axes, filled chunk by chunk.

`MapGrid` keeps each cell's verdict, ratio and recommended arm; `BoundMapGrid` adds what bounds
one arm's decode step (`physics/bounds.py`). Fields the sweep varies besides the two axes become
panels (at most `MAX_PANELS`). Drawing them is the report layer's (`report/sweep_maps.py`): this
module holds numbers and indices only, so the sweep runs without plotly or matplotlib.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any

import numpy as np

from ...base.errors import CalcError, InputError
from .grid import ARM_KEYS, FIELDS, Chunk, SweepGrid

MAX_PANELS = 24
MAX_CELLS = 250_000
MAP_FORMATS = {".html": "html", ".htm": "html", ".png": "png"}


def check_map_target(path: str, flag: str = "--map") -> str:
    """Format of a map file (html or png), refused before any work if it cannot be drawn.

    Whether the file itself can be written is `files.check_output`'s to say; `-` is an HTML
    page on standard output. A PNG needs matplotlib, looked up without importing it.
    """
    if path == "-":
        return "html"
    fmt = MAP_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise CalcError(f"{flag} {path}: the map must end in .html or .png", flag)
    if fmt == "png" and importlib.util.find_spec("matplotlib") is None:
        raise CalcError(
            f"{flag} {path}: PNG maps need matplotlib (pip install 'deepep-calc[png]'); "
            "an .html map needs nothing more",
            flag,
        )
    return fmt


class MapGrid:
    """Verdict, ratio and recommended arm per (panel, y, x) cell, filled chunk by chunk."""

    def __init__(self, grid: SweepGrid, x: str, y: str) -> None:
        for axis, name in (("--x", x), ("--y", y)):
            if name not in FIELDS:
                raise InputError(axis, name, f"a scenario field ({', '.join(FIELDS)})")
        if x == y:
            raise InputError("--y", y, "a field other than --x")
        self.sweep, self.x, self.y = grid, x, y
        self.panels = tuple(f for f in grid.swept if f not in (x, y))
        self.panel_shape = tuple(len(grid.axes[f]) for f in self.panels)
        n_panels = math.prod(self.panel_shape)
        if n_panels > MAX_PANELS:
            raise InputError(
                "--map",
                f"{n_panels} panels",
                f"at most {MAX_PANELS} panels: the fields {', '.join(self.panels)} vary besides "
                f"--x {x} and --y {y}; pin some of them or choose them as axes",
            )
        nx, ny = len(grid.axes[x]), len(grid.axes[y])
        if n_panels * nx * ny > MAX_CELLS:
            raise InputError("--map", f"{n_panels * nx * ny:,} cells", f"at most {MAX_CELLS:,} map cells")
        shape = (n_panels, ny, nx)
        self.code = np.full(shape, -1, dtype=np.int8)
        self.arm = np.full(shape, -1, dtype=np.int8)
        self.ratio = np.full(shape, np.nan)

    def _axis_index(self, chunk: Chunk, name: str) -> Any:
        grid = self.sweep
        if name in grid.numeric:
            return chunk.numeric_index[grid.numeric.index(name)]
        return chunk.combination.index[grid.categorical.index(name)]

    def _cells(self, chunk: Chunk) -> tuple[Any, Any, Any]:
        """(panel, y, x) indices of each row of the chunk."""
        n = chunk.rows
        xi = np.broadcast_to(self._axis_index(chunk, self.x), (n,))
        yi = np.broadcast_to(self._axis_index(chunk, self.y), (n,))
        if self.panels:
            parts = [np.broadcast_to(self._axis_index(chunk, f), (n,)) for f in self.panels]
            pi = np.ravel_multi_index(parts, self.panel_shape)
        else:
            pi = np.zeros(n, dtype=np.int64)
        return pi, yi, xi

    def add(self, chunk: Chunk) -> None:
        cells = self._cells(chunk)
        self.code[cells] = chunk.column("verdict")  # int8 codes from the sweep
        self.arm[cells] = chunk.column("recommended_arm")
        self.ratio[cells] = chunk.column("ratio_deepep_vs_alternative")


class BoundMapGrid(MapGrid):
    """One arm's bound per (panel, y, x) cell besides the verdict grid's."""

    def __init__(self, grid: SweepGrid, x: str, y: str, arm: str = "deepep") -> None:
        if arm not in ARM_KEYS:
            raise InputError("--bound-arm", arm, " or ".join(ARM_KEYS))
        super().__init__(grid, x, y)
        self.arm_key = arm
        self.bound = np.full(self.code.shape, -1, dtype=np.int8)

    def add(self, chunk: Chunk) -> None:
        super().add(chunk)
        self.bound[self._cells(chunk)] = chunk.column(f"{self.arm_key}_bound")

    def shown(self) -> list[int]:
        """The bounds that appear on the map, as indices into `physics.bounds.BOUNDS`, in order."""
        present = set(np.unique(self.bound).tolist())
        return [k for k in sorted(present) if k >= 0]
