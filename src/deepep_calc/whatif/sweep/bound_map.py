"""The bound map of a sweep: what bounds one arm's decode step, one cell per combination.

The verdict map's grid (axes, panels, limits, labels: `verdict_map.MapGrid`) coloured by the
part that sets the arm's step (`physics/bounds.py`) instead of the verdict; each cell also
carries the bound's short name, so the map reads without colour. HTML is a self-contained plotly
page, PNG is drawn by matplotlib, as for the verdict map.
"""

from __future__ import annotations

import io
import math
import textwrap
from typing import Any

import numpy as np

from ...base.errors import InputError
from ...base.palette import BOUND as COLOURS
from ...physics.bounds import BOUNDS, LABELS
from .grid import ARM_KEYS, Chunk, SweepPlan
from .verdict_map import MISSING, TEXT_CELLS, MapGrid

# A bound in a few letters, printed in its cell
SHORT = {
    "launches": "L",
    "host": "H",
    "hbm": "HBM",
    "compute": "TC",
    "kernels": "KF",
    "exchange_latency": "XL",
    "messages": "MSG",
    "wire": "W",
    "nvlink": "NV",
    "collective_latency": "NL",
    "arm_term": "ENG",
    "prefill": "PF",
    "proxy": "PX",
}
ARM_WORDS = {"deepep": "DeepEP", "alternative": "the alternative", "replica": "single-node replicas"}


class BoundMapGrid(MapGrid):
    """One arm's bound per (panel, y, x) cell, filled chunk by chunk."""

    def __init__(self, plan: SweepPlan, x: str, y: str, arm: str = "deepep") -> None:
        if arm not in ARM_KEYS:
            raise InputError("--bound-arm", arm, " or ".join(ARM_KEYS))
        super().__init__(plan, x, y)
        self.arm_key = arm
        self.bound = np.full(self.code.shape, -1, dtype=np.int8)

    def add(self, chunk: Chunk) -> None:
        super().add(chunk)
        n = chunk.rows
        xi = np.broadcast_to(self._axis_index(chunk, self.x), (n,))
        yi = np.broadcast_to(self._axis_index(chunk, self.y), (n,))
        if self.panels:
            parts = [np.broadcast_to(self._axis_index(chunk, f), (n,)) for f in self.panels]
            pi = np.ravel_multi_index(parts, self.panel_shape)
        else:
            pi = np.zeros(n, dtype=np.int64)
        self.bound[pi, yi, xi] = chunk.column(f"{self.arm_key}_bound")

    def title(self) -> str:
        return super().title().replace("Verdict map", f"What bounds {ARM_WORDS[self.arm_key]}'s step")

    def hover(self, p: int) -> list[list[str]]:
        xs, ys = self.labels(self.x), self.labels(self.y)
        out = []
        for j, yl in enumerate(ys):
            row = []
            for i, xl in enumerate(xs):
                k = int(self.bound[p, j, i])
                row.append(
                    "not evaluated"
                    if k < 0
                    else f"{self.x} {xl}, {self.y} {yl}<br>bound: {LABELS[BOUNDS[k]]}"
                )
            out.append(row)
        return out

    def shown(self) -> list[int]:
        """The bounds that appear on the map, in BOUNDS order."""
        present = set(np.unique(self.bound).tolist())
        return [k for k in range(len(BOUNDS)) if k in present]


def render_bound_map(grid: BoundMapGrid, fmt: str) -> bytes:
    """The map file's bytes (the page inlines plotly.js, so it works offline)."""
    if fmt == "html":
        return plotly_figure(grid).to_html(include_plotlyjs=True, full_html=True).encode("utf-8")
    buffer = io.BytesIO()
    _write_png(grid, buffer)
    return buffer.getvalue()


def plotly_figure(grid: BoundMapGrid) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    titles = grid.panel_titles()
    n = len(titles)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles if grid.panels else None)
    k = len(BOUNDS)
    scale = []
    for i, colour in enumerate([MISSING, *(COLOURS[b] for b in BOUNDS)]):
        scale += [[i / (k + 1), colour], [(i + 1) / (k + 1), colour]]
    xs, ys = grid.labels(grid.x), grid.labels(grid.y)
    small = len(xs) * len(ys) <= TEXT_CELLS
    for p in range(n):
        code = grid.bound[p]
        text = [[SHORT[BOUNDS[c]] if c >= 0 else "" for c in row] for row in code.tolist()]
        fig.add_trace(
            go.Heatmap(
                z=code.astype(float),
                x=xs,
                y=ys,
                zmin=-1.5,
                zmax=k - 0.5,
                colorscale=scale,
                showscale=False,
                text=text if small else None,
                texttemplate="%{text}" if small else None,
                hovertext=grid.hover(p),
                hoverinfo="text",
                xgap=1,
                ygap=1,
            ),
            row=p // cols + 1,
            col=p % cols + 1,
        )
    for c in grid.shown():
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                marker={"color": COLOURS[BOUNDS[c]], "size": 12, "symbol": "square"},
                name=f"{SHORT[BOUNDS[c]]}: {LABELS[BOUNDS[c]]}",
                showlegend=True,
            )
        )
    fig.update_xaxes(type="category", title_text=grid.x)
    fig.update_yaxes(type="category", title_text=grid.y)
    fig.update_layout(
        title=grid.title(),
        height=max(360, 340 * rows),
        plot_bgcolor="white",
        legend={"orientation": "h", "y": -0.15},
    )
    return fig


def _write_png(grid: BoundMapGrid, path: Any) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    titles = grid.panel_titles()
    n = len(titles)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    xs, ys = grid.labels(grid.x), grid.labels(grid.y)
    width = max(4.0, min(0.35 * len(xs) + 2.0, 9.0))
    height = max(3.0, min(0.3 * len(ys) + 1.8, 8.0))
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows + 0.8), squeeze=False)
    cmap = ListedColormap([MISSING] + [COLOURS[b] for b in BOUNDS])
    small = len(xs) * len(ys) <= TEXT_CELLS
    for p in range(rows * cols):
        ax = axes[p // cols][p % cols]
        if p >= n:
            ax.axis("off")
            continue
        code = grid.bound[p].astype(int)
        ax.imshow(
            code + 1,
            cmap=cmap,
            vmin=0,
            vmax=len(BOUNDS),
            origin="lower",
            aspect="auto",
            interpolation="nearest",
        )
        step_x = max(1, len(xs) // 16)
        step_y = max(1, len(ys) // 16)
        ax.set_xticks(range(0, len(xs), step_x), xs[::step_x], rotation=45, ha="right", fontsize=8)
        ax.set_yticks(range(0, len(ys), step_y), ys[::step_y], fontsize=8)
        ax.set_xlabel(grid.x)
        ax.set_ylabel(grid.y)
        if grid.panels:
            ax.set_title(titles[p], fontsize=9)
        if small:
            for j in range(len(ys)):
                for i in range(len(xs)):
                    if code[j, i] >= 0:
                        ax.text(i, j, SHORT[BOUNDS[code[j, i]]], ha="center", va="center", fontsize=7)
    handles = [
        Patch(color=COLOURS[BOUNDS[c]], label=f"{SHORT[BOUNDS[c]]}: {LABELS[BOUNDS[c]]}")
        for c in grid.shown()
    ]
    fig.legend(
        handles=handles, loc="lower center", ncol=min(4, max(len(handles), 1)), frameon=False, fontsize=8
    )
    wrap = max(40, int(width * cols * 11))
    fig.suptitle("\n".join(textwrap.wrap(grid.title(), wrap)), fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 0.95))
    fig.savefig(path, format="png", dpi=110)
    plt.close(fig)
