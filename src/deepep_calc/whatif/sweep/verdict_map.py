"""The verdict map of a sweep: one cell per combination over two axes, coloured by verdict.

Fields other than the two axes that the sweep varies become panels (at most `MAX_PANELS`).
HTML is a self-contained plotly page (its JavaScript is inlined: the file works offline).
PNG is drawn by matplotlib: plotly's own image export (kaleido) drives a Chrome process, which
this tool cannot count on having, so a static image does not depend on a browser.
Colours are the verdict colours of the web page and the HTML report (base/palette.py), and
every cell also carries its verdict symbol, so the map reads without colour too.
"""

from __future__ import annotations

import io
import math
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from ...base.errors import CalcError, InputError
from ...base.palette import VERDICT as COLOURS
from ...base.palette import VERDICT_TEXT as TEXT_COLOURS
from ...decide.verdict import ARM_NAMES, VERDICT_CODES
from ...files.safe_write import check_output, writing
from .grid import FIELDS, Chunk, SweepPlan

MISSING = "#d4d4d8"
SYMBOLS = {"dense": "■", "capacity": "◆", "deepep": "▲"}
MAX_PANELS = 24
MAX_CELLS = 250_000
TEXT_CELLS = 900  # print the symbol in each cell up to this many cells per panel
MAP_FORMATS = {".html": "html", ".htm": "html", ".png": "png"}


def check_map_target(path: str) -> str:
    """Format of the map file (html or png), refused before any work if it cannot be drawn.

    Whether the file itself can be written is `files.check_output`'s to say; `-` is an HTML
    page on standard output.
    """
    if path == "-":
        return "html"
    fmt = MAP_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise CalcError(f"--map {path}: the map must end in .html or .png", "--map")
    if fmt == "png":
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise CalcError(
                f"--map {path}: PNG maps need matplotlib (pip install 'deepep-calc[png]'); "
                "an .html map needs nothing more",
                "--map",
            ) from None
    return fmt


def _label(value: Any) -> str:
    if value is None:
        return "default"
    if isinstance(value, bool):
        return "graphs" if value else "eager"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class MapGrid:
    """Verdict, ratio and recommended arm per (panel, y, x) cell, filled chunk by chunk."""

    def __init__(self, plan: SweepPlan, x: str, y: str) -> None:
        for axis, name in (("--x", x), ("--y", y)):
            if name not in FIELDS:
                raise InputError(axis, name, f"a scenario field ({', '.join(FIELDS)})")
        if x == y:
            raise InputError("--y", y, "a field other than --x")
        self.plan, self.x, self.y = plan, x, y
        self.panels = tuple(f for f in plan.varied if f not in (x, y))
        self.panel_shape = tuple(len(plan.axes[f]) for f in self.panels)
        n_panels = math.prod(self.panel_shape)
        if n_panels > MAX_PANELS:
            raise InputError(
                "--map",
                f"{n_panels} panels",
                f"at most {MAX_PANELS} panels: the fields {', '.join(self.panels)} vary besides "
                f"--x {x} and --y {y}; pin some of them or choose them as axes",
            )
        nx, ny = len(plan.axes[x]), len(plan.axes[y])
        if n_panels * nx * ny > MAX_CELLS:
            raise InputError("--map", f"{n_panels * nx * ny:,} cells", f"at most {MAX_CELLS:,} map cells")
        shape = (n_panels, ny, nx)
        self.code = np.full(shape, -1, dtype=np.int8)
        self.arm = np.full(shape, -1, dtype=np.int8)
        self.ratio = np.full(shape, np.nan)

    def _axis_index(self, chunk: Chunk, name: str) -> Any:
        plan = self.plan
        if name in plan.numeric:
            return chunk.numeric_index[plan.numeric.index(name)]
        return chunk.combination.index[plan.categorical.index(name)]

    def add(self, chunk: Chunk) -> None:
        n = chunk.rows
        xi = np.broadcast_to(self._axis_index(chunk, self.x), (n,))
        yi = np.broadcast_to(self._axis_index(chunk, self.y), (n,))
        if self.panels:
            parts = [np.broadcast_to(self._axis_index(chunk, f), (n,)) for f in self.panels]
            pi = np.ravel_multi_index(parts, self.panel_shape)
        else:
            pi = np.zeros(n, dtype=np.int64)
        self.code[pi, yi, xi] = chunk.column("verdict")  # int8 codes from the sweep
        self.arm[pi, yi, xi] = chunk.column("recommended_arm")
        self.ratio[pi, yi, xi] = chunk.column("ratio_deepep_vs_alternative")

    # presentation ----------------------------------------------------------------------------
    def panel_titles(self) -> list[str]:
        if not self.panels:
            return [""]
        titles = []
        for idx in np.ndindex(*self.panel_shape):
            titles.append(
                ", ".join(
                    f"{f}={_label(self.plan.axes[f][i])}" for f, i in zip(self.panels, idx, strict=True)
                )
            )
        return titles

    def labels(self, name: str) -> list[str]:
        return [_label(v) for v in self.plan.axes[name]]

    def title(self) -> str:
        fixed = [
            f"{f}={_label(self.plan.axes[f][0])}"
            for f in ("model", "instance", "engine", "transport", "alternative")
            if len(self.plan.axes[f]) == 1
        ]
        return f"Verdict map: {self.y} against {self.x} ({', '.join(fixed)})"

    def hover(self, p: int) -> list[list[str]]:
        xs, ys = self.labels(self.x), self.labels(self.y)
        out = []
        for j, yl in enumerate(ys):
            row = []
            for i, xl in enumerate(xs):
                c = int(self.code[p, j, i])
                if c < 0:
                    row.append("not evaluated")
                    continue
                code = VERDICT_CODES[c]
                row.append(
                    f"{self.x} {xl}, {self.y} {yl}<br>{SYMBOLS[code]} {code}, run "
                    f"{ARM_NAMES[int(self.arm[p, j, i])]}<br>DeepEP / alternative aggregate "
                    f"{self.ratio[p, j, i]:.3f} (model)"
                )
            out.append(row)
        return out


def render_map(grid: MapGrid, fmt: str) -> bytes:
    """The map file's bytes (the page inlines plotly.js, so it works offline)."""
    if fmt == "html":
        return plotly_figure(grid).to_html(include_plotlyjs=True, full_html=True).encode("utf-8")
    buffer = io.BytesIO()
    _write_png(grid, buffer)
    return buffer.getvalue()


def write_map(grid: MapGrid, path: str) -> None:
    """Draw and write one map by the safe-write rules (`deepep_calc.files.safe_write`)."""

    fmt = check_map_target(path)
    out = check_output(path, "--map")
    data = render_map(grid, fmt)
    with writing(out):
        out.stage(data)


def plotly_figure(grid: MapGrid) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    titles = grid.panel_titles()
    n = len(titles)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles if grid.panels else None)
    colours = [COLOURS[c] for c in VERDICT_CODES]
    scale = []
    for k, colour in enumerate([MISSING, *colours]):
        scale += [[k / 4, colour], [(k + 1) / 4, colour]]
    xs, ys = grid.labels(grid.x), grid.labels(grid.y)
    small = len(xs) * len(ys) <= TEXT_CELLS
    for p in range(n):
        code = grid.code[p]
        text = [[SYMBOLS[VERDICT_CODES[c]] if c >= 0 else "" for c in row] for row in code.tolist()]
        fig.add_trace(
            go.Heatmap(
                z=code.astype(float),
                x=xs,
                y=ys,
                zmin=-1.5,
                zmax=2.5,
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
    for code in ("deepep", "dense", "capacity"):
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                marker={"color": COLOURS[code], "size": 12, "symbol": "square"},
                name=f"{SYMBOLS[code]} {code}",
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


def _write_png(grid: MapGrid, path: Any) -> None:
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
    cmap = ListedColormap([MISSING] + [COLOURS[c] for c in VERDICT_CODES])
    small = len(xs) * len(ys) <= TEXT_CELLS
    for p in range(rows * cols):
        ax = axes[p // cols][p % cols]
        if p >= n:
            ax.axis("off")
            continue
        code = grid.code[p].astype(int)
        ax.imshow(code + 1, cmap=cmap, vmin=0, vmax=3, origin="lower", aspect="auto", interpolation="nearest")
        step_x = max(1, len(xs) // 16)
        step_y = max(1, len(ys) // 16)
        ax.set_xticks(range(0, len(xs), step_x), xs[::step_x], rotation=45, ha="right", fontsize=8)
        ax.set_yticks(range(0, len(ys), step_y), ys[::step_y], fontsize=8)
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
                        colour = TEXT_COLOURS[name]
                        ax.text(i, j, SYMBOLS[name], ha="center", va="center", color=colour)
    handles = [Patch(color=COLOURS[c], label=f"{SYMBOLS[c]} {c}") for c in ("deepep", "dense", "capacity")]
    fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False)
    wrap = max(40, int(width * cols * 11))
    fig.suptitle("\n".join(textwrap.wrap(grid.title(), wrap)), fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    fig.savefig(path, format="png", dpi=110)
    plt.close(fig)
