"""A sweep's maps drawn: the verdict map and the bound map, as an HTML page or a PNG image.

HTML is a self-contained plotly page (plotly.js is inlined: the file works offline). PNG is
drawn by matplotlib: plotly's own image export (kaleido) drives a Chrome process, which this
tool cannot count on, so a static image does not need a browser. The verdict map takes its
colours, symbols, legend and hover words from the verdict map's one look
(`report/verdict_map.py`), which the page's map also draws with; the bound map's colours are the
page's too (base/palette.py), and each of its cells carries its bound's short name, so either
map reads without colour. The grids are `whatif/sweep/maps.py`'s.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.palette import BOUND as BOUND_COLOURS
from ..base.palette import VERDICT as COLOURS
from ..base.vocabulary import VERDICT_CODES
from ..decide.verdict import ARM_LABELS, ARM_NAMES
from ..physics.bounds import BOUNDS, LABELS
from ..whatif.sweep.maps import BoundMapGrid, MapGrid
from . import verdict_map as verdict_look

MISSING = verdict_look.MISSING  # a cell no row reached
TEXT_CELLS = 900  # print the symbol in each cell up to this many cells per panel

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


def draw(grid: MapGrid, fmt: str) -> bytes:
    """The map file's bytes: a bound map for a `BoundMapGrid`, a verdict map otherwise."""
    bound = isinstance(grid, BoundMapGrid)
    if fmt == "html":
        fig = _bound_figure(grid) if bound else _verdict_figure(grid)
        return fig.to_html(include_plotlyjs=True, full_html=True).encode("utf-8")
    buffer = io.BytesIO()
    (_bound_png if bound else _verdict_png)(grid, buffer)
    return buffer.getvalue()


# Words -----------------------------------------------------------------------------------------


def _label(value: Any) -> str:
    if value is None:
        return "default"
    if isinstance(value, bool):
        return "graphs" if value else "eager"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _labels(grid: MapGrid, name: str) -> list[str]:
    return [_label(v) for v in grid.sweep.axes[name]]


def _panel_titles(grid: MapGrid) -> list[str]:
    if not grid.panels:
        return [""]
    axes = grid.sweep.axes
    return [
        ", ".join(f"{f}={_label(axes[f][i])}" for f, i in zip(grid.panels, idx, strict=True))
        for idx in np.ndindex(*grid.panel_shape)
    ]


def _title(grid: MapGrid) -> str:
    fixed = [
        f"{f}={_label(grid.sweep.axes[f][0])}"
        for f in ("model", "instance", "engine", "transport", "alternative")
        if len(grid.sweep.axes[f]) == 1
    ]
    title = f"Verdict map: {grid.y} against {grid.x} ({', '.join(fixed)})"
    if isinstance(grid, BoundMapGrid):
        return title.replace("Verdict map", f"What bounds {ARM_WORDS[grid.arm_key]}'s step")
    return title


def _value(grid: MapGrid, field: str, p: int, j: int, i: int) -> Any:
    """A field's value at cell (p, j, i): from the x or y axis, the panel, or the one value swept."""
    axes = grid.sweep.axes
    if field == grid.x:
        return axes[field][i]
    if field == grid.y:
        return axes[field][j]
    if field in grid.panels:
        idx = np.unravel_index(p, grid.panel_shape)
        return axes[field][int(idx[grid.panels.index(field)])]
    return axes[field][0]


def _verdict_codes(grid: MapGrid, p: int) -> list[list[str | None]]:
    """Panel p's verdict codes, None where no row reached."""
    return [[VERDICT_CODES[c] if c >= 0 else None for c in row] for row in grid.code[p].tolist()]


def _verdict_hover(grid: MapGrid, p: int) -> list[list[str]]:
    """Panel p's hover lines, in the verdict map's words; the ratio is the model's (no measured
    cell stands in for a sweep's row)."""
    out = []
    for j, row in enumerate(_verdict_codes(grid, p)):
        line = []
        for i, code in enumerate(row):
            if code is None:
                line.append(verdict_look.NOT_EVALUATED)
                continue
            arm = ARM_NAMES[int(grid.arm[p, j, i])]
            versus = ARM_LABELS[_value(grid, "alternative", p, j, i)]
            line.append(verdict_look.hover_line(code, arm, float(grid.ratio[p, j, i]), versus, "(model)"))
        out.append(line)
    return out


def _bound_hover(grid: BoundMapGrid, p: int) -> list[list[str]]:
    xs, ys = _labels(grid, grid.x), _labels(grid, grid.y)
    out = []
    for j, yl in enumerate(ys):
        row = []
        for i, xl in enumerate(xs):
            k = int(grid.bound[p, j, i])
            row.append(
                "not evaluated" if k < 0 else f"{grid.x} {xl}, {grid.y} {yl}<br>bound: {LABELS[BOUNDS[k]]}"
            )
        out.append(row)
    return out


# HTML (plotly) ---------------------------------------------------------------------------------


def _panels(grid: MapGrid, trace: Callable[[int, bool], Any]) -> tuple[Any, int]:
    """A figure with one panel per map panel, laid out three across: `trace(p, small)` draws
    panel p, `small` when its cells are few enough to print their codes."""
    from plotly.subplots import make_subplots

    titles = _panel_titles(grid)
    n = len(titles)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles if grid.panels else None)
    small = len(grid.sweep.axes[grid.x]) * len(grid.sweep.axes[grid.y]) <= TEXT_CELLS
    for p in range(n):
        fig.add_trace(trace(p, small), row=p // cols + 1, col=p % cols + 1)
    return fig, rows


def _legend_and_layout(fig: Any, grid: MapGrid, rows: int, legend: list[Any]) -> Any:
    for entry in legend:
        fig.add_trace(entry)
    fig.update_xaxes(type="category", title_text=grid.x)
    fig.update_yaxes(type="category", title_text=grid.y)
    fig.update_layout(
        title=_title(grid),
        height=max(360, 340 * rows),
        plot_bgcolor="white",
        legend={"orientation": "h", "y": -0.15},
    )
    return fig


def _verdict_figure(grid: MapGrid) -> Any:
    xs, ys = _labels(grid, grid.x), _labels(grid, grid.y)

    def panel(p: int, small: bool) -> dict[str, Any]:
        codes = _verdict_codes(grid, p)
        return verdict_look.heatmap(xs, ys, codes, _verdict_hover(grid, p), (grid.y, grid.x), text=small)

    fig, rows = _panels(grid, panel)
    legend = [entry | {"showlegend": True} for entry in verdict_look.legend(_verdicts_shown(grid))]
    return _legend_and_layout(fig, grid, rows, legend)


def _verdicts_shown(grid: MapGrid) -> list[str]:
    """The verdicts the map holds, in the legend's order (the page's map's own rule)."""
    return verdict_look.shown([[VERDICT_CODES[c] for c in np.unique(grid.code).tolist() if c >= 0]])


def _bound_figure(grid: BoundMapGrid) -> Any:
    import plotly.graph_objects as go

    scale = verdict_look.flat_scale([MISSING, *(BOUND_COLOURS[b] for b in BOUNDS)])
    xs, ys = _labels(grid, grid.x), _labels(grid, grid.y)

    def panel(p: int, small: bool) -> Any:
        code = grid.bound[p]
        text = [[SHORT[BOUNDS[c]] if c >= 0 else "" for c in row] for row in code.tolist()]
        return go.Heatmap(
            z=code.astype(float),
            x=xs,
            y=ys,
            zmin=-1.5,
            zmax=len(BOUNDS) - 0.5,
            colorscale=scale,
            showscale=False,
            text=text if small else None,
            texttemplate="%{text}" if small else None,
            hovertext=_bound_hover(grid, p),
            hoverinfo="text",
            xgap=1,
            ygap=1,
        )

    fig, rows = _panels(grid, panel)
    legend = [
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            marker={"color": BOUND_COLOURS[BOUNDS[c]], "size": 12, "symbol": "square"},
            name=f"{SHORT[BOUNDS[c]]}: {LABELS[BOUNDS[c]]}",
            showlegend=True,
        )
        for c in grid.shown()
    ]
    return _legend_and_layout(fig, grid, rows, legend)


# PNG (matplotlib) ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Sheet:
    """An Agg figure laid out for a map: its axes, how many are panels, columns, width per panel."""

    fig: Any
    axes: Any
    panels: int
    cols: int
    width: float


def _png_axes(grid: MapGrid) -> _Sheet:
    """An Agg figure with a panel per map panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(_panel_titles(grid))
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    xs, ys = _labels(grid, grid.x), _labels(grid, grid.y)
    width = max(4.0, min(0.35 * len(xs) + 2.0, 9.0))
    height = max(3.0, min(0.3 * len(ys) + 1.8, 8.0))
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows + 0.8), squeeze=False)
    return _Sheet(fig, axes, n, cols, width)


def _png_panel(ax: Any, grid: MapGrid, code: Any, cmap: Any, vmax: int) -> None:
    """One panel's cells and tick labels (at most 16 ticks an axis)."""
    xs, ys = _labels(grid, grid.x), _labels(grid, grid.y)
    ax.imshow(code + 1, cmap=cmap, vmin=0, vmax=vmax, origin="lower", aspect="auto", interpolation="nearest")
    step_x = max(1, len(xs) // 16)
    step_y = max(1, len(ys) // 16)
    ax.set_xticks(range(0, len(xs), step_x), xs[::step_x], rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(0, len(ys), step_y), ys[::step_y], fontsize=8)


def _png_finish(sheet: _Sheet, grid: MapGrid, bottom: float, path: Any) -> None:
    """Title the figure (wrapped to its width), leave `bottom` for the legend, write and close it."""
    import matplotlib.pyplot as plt

    fig = sheet.fig
    wrap = max(40, int(sheet.width * sheet.cols * 11))
    fig.suptitle("\n".join(textwrap.wrap(_title(grid), wrap)), fontsize=10)
    fig.tight_layout(rect=(0, bottom, 1, 0.95))
    fig.savefig(path, format="png", dpi=110)
    plt.close(fig)


def _verdict_png(grid: MapGrid, path: Any) -> None:
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    sheet = _png_axes(grid)
    fig, axes, n, cols = sheet.fig, sheet.axes, sheet.panels, sheet.cols
    titles = _panel_titles(grid)
    xs, ys = _labels(grid, grid.x), _labels(grid, grid.y)
    cmap = ListedColormap([verdict_look.MISSING, *verdict_look.colours()])
    to_step = np.array([verdict_look.step(code) for code in VERDICT_CODES])
    small = len(xs) * len(ys) <= TEXT_CELLS
    for p in range(axes.size):
        ax = axes[p // cols][p % cols]
        if p >= n:
            ax.axis("off")
            continue
        code = grid.code[p].astype(int)
        steps = np.where(code >= 0, to_step[np.maximum(code, 0)], -1)
        _png_panel(ax, grid, steps, cmap, len(verdict_look.CODES))
        ax.set_xticks(np.arange(-0.5, len(xs)), minor=True)
        ax.set_yticks(np.arange(-0.5, len(ys)), minor=True)
        ax.grid(which="minor", color="white", linewidth=1)
        ax.tick_params(which="minor", length=0)
        ax.set_xlabel(grid.x)
        ax.set_ylabel(grid.y)
        if grid.panels:
            ax.set_title(titles[p], fontsize=9)
        if small:
            for j in range(len(ys)):
                for i in range(len(xs)):
                    if code[j, i] >= 0:
                        name = VERDICT_CODES[code[j, i]]
                        colour = verdict_look.TEXT_COLOURS[name]
                        ax.text(i, j, verdict_look.symbol(name), ha="center", va="center", color=colour)
    shown = _verdicts_shown(grid)
    handles = [Patch(color=COLOURS[c], label=verdict_look.title(c)) for c in shown]
    fig.legend(handles=handles, loc="lower center", ncol=max(1, len(shown)), frameon=False, fontsize=8)
    _png_finish(sheet, grid, 0.06, path)


def _bound_png(grid: BoundMapGrid, path: Any) -> None:
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    sheet = _png_axes(grid)
    fig, axes, n, cols = sheet.fig, sheet.axes, sheet.panels, sheet.cols
    titles = _panel_titles(grid)
    xs, ys = _labels(grid, grid.x), _labels(grid, grid.y)
    cmap = ListedColormap([MISSING] + [BOUND_COLOURS[b] for b in BOUNDS])
    small = len(xs) * len(ys) <= TEXT_CELLS
    for p in range(axes.size):
        ax = axes[p // cols][p % cols]
        if p >= n:
            ax.axis("off")
            continue
        code = grid.bound[p].astype(int)
        _png_panel(ax, grid, code, cmap, len(BOUNDS))
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
        Patch(color=BOUND_COLOURS[BOUNDS[c]], label=f"{SHORT[BOUNDS[c]]}: {LABELS[BOUNDS[c]]}")
        for c in grid.shown()
    ]
    fig.legend(
        handles=handles, loc="lower center", ncol=min(4, max(len(handles), 1)), frameon=False, fontsize=8
    )
    _png_finish(sheet, grid, 0.1, path)
