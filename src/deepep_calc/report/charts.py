"""Plotly figures for the page, the mechanism page and the HTML report.

Every point comes from the model: the scenario's `Result`, or one vectorised `compute()`
pass over a grid (`Resolved.vary`). Nothing here does physics; the figures only arrange
numbers and carry each number's provenance tag into its hover text. Model lines come from
varied passes, which never substitute measured cells, so the measured points are overlaid
separately and can be seen against the model.

Figures are returned as plain plotly JSON dicts (`{"data": [...], "layout": {...}}`): they go
straight into `Plotly.newPlot`, into the report and into the JSON API, without the cost of
plotly's Python-side validation on every request. `as_figure()` wraps one in a
`plotly.graph_objects.Figure` for notebook users.

Why one module: every figure shares one layout vocabulary (axes, colours, the
"this scenario" marker, the way a vectorised pass becomes traces); split per figure, each file
would repeat it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base import palette
from ..base.quantity import Q
from ..catalog.measured import Cell, load_cells
from ..decide.verdict import ARM_LABELS
from ..estimate.compute import compute
from ..estimate.result import Result
from ..fit.profile import profile_of
from ..physics.bounds import BOUNDS, EXCHANGE_CLASSES
from ..physics.bounds import LABELS as BOUND_LABELS
from ..question.fields import LIMITS
from ..question.scenario import Resolved
from ..whatif.neighbourhood import Neighbourhood, neighbourhood
from . import verdict_map as verdict_look
from .labels import MEMORY_LABELS, arm_head
from .labels import STEP_LABELS as BREAKDOWN_LABELS

Figure = dict[str, Any]

MEASURED_ROLES = ("calibration", "anchor", "cross-check")

MODEBAR_MARGIN = 34
"""Top margin (px) that holds plotly's toolbar above the plot, not over it."""
HEADROOM = 1.3
"""The per-user chart's y axis reaches this multiple of its highest point: the band above the
lines holds the 'this scenario' label, so the label never sits on a line."""
MEMORY_LINE_SHARE = 0.35
"""Usable HBM is drawn as a line only when the tallest bar reaches this share of it; below,
the scale follows the bars (so the parts show) and usable HBM is written, not drawn."""

_FONT = {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 12, "color": "#212529"}


def _layout(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "template": None,
        "font": _FONT,
        # The toolbar sits in the top margin, the legend at the bottom of the chart: they never
        # overlap, whatever the width (a legend above the plot wraps into the toolbar's corner).
        "margin": {"l": 60, "r": 16, "t": MODEBAR_MARGIN, "b": 44},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "#ffffff",
        "legend": {
            "orientation": "h",
            "xref": "container",
            "x": 0,
            "xanchor": "left",
            "yref": "container",
            "y": 0,
            "yanchor": "bottom",
            "font": {"size": 11},
        },
        "hoverlabel": {"align": "left"},
        # No fixed height: the chart fills its box, whose height the stylesheet sets per width.
    }
    base.update(extra)
    return base


def _axis(title: str, **extra: Any) -> dict[str, Any]:
    """An axis whose tick labels and title push the margin out rather than being clipped."""
    return {"title": {"text": title}, "gridcolor": "#e9ecef", "zeroline": False, "automargin": True, **extra}


def _num(value: Any) -> float | None:
    """A JSON-safe float (plotly draws a gap for null)."""
    v = float(value)
    return v if math.isfinite(v) else None


def _series(values: Any, mask: Any = None) -> list[float | None]:
    arr = np.asarray(values, dtype=float).reshape(-1)
    keep = np.ones(arr.shape, bool) if mask is None else np.broadcast_to(np.asarray(mask), arr.shape)
    return [_num(v) if k else None for v, k in zip(arr, keep, strict=True)]


def _tagline(q: Q) -> str:
    return f"[{q.tag}] {q.source}"


def _wrap(text: str, width: int = 70) -> str:
    """Hover labels do not wrap by themselves; long sources get line breaks."""
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + len(w) + 1 > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    if line:
        lines.append(line)
    return "<br>".join(lines)


def arm_name(result: Result, arm: str) -> str:
    layout = getattr(result.arms.get(arm), "layout", "")
    return arm_head(arm, result.resolved.transport.name, result.scenario.nodes, layout)


# 1. per-user tok/s vs concurrency -------------------------------------------------------------


def concurrency_grid(concurrency: int, extra: tuple[int, ...] = ()) -> np.ndarray:
    """Powers of two around the scenario (and any measured concurrencies), within LIMITS."""
    top = min(max(512, concurrency * 4), LIMITS["concurrency"])
    points = {2**i for i in range(int(math.log2(top)) + 1)} | {concurrency, *extra}
    return np.array(sorted(p for p in points if 1 <= p <= LIMITS["concurrency"]), dtype=float)


def measured_cells_for(r: Resolved) -> list[Cell]:
    """Measured cells of this engine, model, instance, node count and EP_NUM_COMMS."""
    s = r.scenario
    profile = profile_of(r)
    user = list(profile.cells()) if profile is not None else []
    out = []
    for cell in [*user, *load_cells().values()]:
        if (
            cell.role in MEASURED_ROLES
            and cell.isl > 0
            and cell.engine == r.engine.name
            and cell.model == str(s.model).strip().lower()
            and cell.instance == r.instance.name
            and cell.nodes == s.nodes
            and cell.comms == s.comms
            and r.gpus_per_node == r.instance.gpus_per_node
        ):
            out.append(cell)
    return out


def _cell_per_user(cell: Cell, arm: str) -> Q | None:
    pu = cell.q(arm, "per_user_tok_s", "tok/s")
    if pu is not None:
        return pu
    itl = cell.q(arm, "itl_ms", "ms")
    return None if itl is None else (1000.0 / itl).as_("tok/s")


def per_user_vs_concurrency(result: Result, grid: np.ndarray | None = None) -> Figure:
    """Model lines for every arm (one vectorised pass) with the measured points on top."""
    r = result.resolved
    s = r.scenario
    cells = measured_cells_for(r)
    if grid is None:
        grid = concurrency_grid(int(s.concurrency), tuple(c.concurrency for c in cells))
    batch = compute(r.vary(concurrency=np.asarray(grid)))
    x = [int(c) for c in grid]
    traces = _per_user_lines(result, batch, x) + _per_user_points(result, cells)
    top = max((v for t in traces for v in t["y"] if v is not None), default=1.0)
    layout = _layout(
        xaxis=_axis("concurrency (log scale)", type="log", **_log_ticks(x)),
        yaxis=_axis("per-user decode tok/s", range=[0, top * HEADROOM]),
        shapes=[_vline(int(s.concurrency))],
        annotations=[_vlabel(int(s.concurrency), "this scenario")],
    )
    return {"data": traces, "layout": layout}


def _per_user_lines(result: Result, batch: Result, x: list[int]) -> list[dict[str, Any]]:
    """One model line per arm over the concurrency grid, broken where the arm does not fit."""
    proxied = result.resolved.transport.host_proxied
    traces: list[dict[str, Any]] = []
    for arm, a in batch.arms.items():
        colour = palette.arm_colour(arm, proxied)
        q = a.per_user_tok_s
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"{arm_name(result, arm)}: model [{q.tag}]",
                "x": x,
                "y": _series(q.value, a.feasible),
                "line": {"color": colour, "width": 2.5, "dash": "dot" if arm == "replica" else "solid"},
                "hovertemplate": f"{arm_name(result, arm)}<br>concurrency %{{x}}: %{{y:.1f}} tok/s"
                f"<br>[{q.tag}] model<extra></extra>",
            }
        )
    return traces


def _per_user_points(result: Result, cells: list[Cell]) -> list[dict[str, Any]]:
    """The measured cells' per-user rates, one marker trace per arm that has any (DeepEP: this
    transport's cells only)."""
    r = result.resolved
    proxied = r.transport.host_proxied
    traces: list[dict[str, Any]] = []
    for arm in ("deepep", "allgather"):
        if arm not in result.arms:
            continue
        pts = []
        for cell in cells:
            if arm == "deepep" and cell.transport != r.transport.name:
                continue
            q = _cell_per_user(cell, arm)
            if q is not None:
                pts.append((cell, q))
        if not pts:
            continue
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"{arm_name(result, arm)}: measured",
                "x": [c.concurrency for c, _ in pts],
                "y": [q.scalar for _, q in pts],
                "marker": {
                    "color": palette.arm_colour(arm, proxied),
                    "size": 10,
                    "symbol": "circle",
                    "line": {"color": palette.MEASURED_MARK, "width": 1.5},
                },
                "text": [_wrap(f"cell {c.id} (ISL {c.isl}, eager): [{q.tag}] {c.source}") for c, q in pts],
                "hovertemplate": "%{y:.2f} tok/s at concurrency %{x}<br>%{text}<extra></extra>",
            }
        )
    return traces


def _log_ticks(values: list[int]) -> dict[str, Any]:
    """Ticks at the grid's powers of two, thinned to about eight labels."""
    powers = [v for v in values if v & (v - 1) == 0]
    step = max(1, -(-len(powers) // 8))
    ticks = powers[::step]
    return {"tickvals": ticks, "ticktext": [f"{v:,}" for v in ticks]}


def _vline(x: float) -> dict[str, Any]:
    return {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": x,
        "x1": x,
        "y0": 0,
        "y1": 1,
        "line": {"color": "#868e96", "width": 1, "dash": "dash"},
    }


def _vlabel(x: float, text: str) -> dict[str, Any]:
    return {
        "x": math.log10(x),
        "xref": "x",
        "y": 1,
        "yref": "paper",
        "text": text,
        "showarrow": False,
        "xanchor": "left",
        "yanchor": "top",
        "font": {"size": 10, "color": "#495057"},
        "bgcolor": "rgba(255,255,255,0.9)",
    }


# 2. stacked step-time breakdown ------------------------------------------------------------


def step_breakdown(result: Result) -> Figure:
    """Where one decode step's milliseconds go, per arm (the model's split)."""
    arms = list(result.arms)
    proxied = result.resolved.transport.host_proxied
    x = [_coloured(arm_name(result, a), palette.arm_colour(a, proxied)) for a in arms]
    traces: list[dict[str, Any]] = []
    for part, label in BREAKDOWN_LABELS.items():
        qs = [result.arms[a].breakdown_ms.get(part) for a in arms]
        if all(q is None for q in qs):
            continue
        traces.append(
            {
                "type": "bar",
                "name": label,
                "x": x,
                "y": [None if q is None else _num(q.scalar) for q in qs],
                "marker": {"color": palette.BREAKDOWN[part]},
                "textposition": "none",
                "text": [_wrap(_tagline(q)) if q is not None else "" for q in qs],
                "hovertemplate": f"{label}: %{{y:.2f}} ms<br>%{{text}}<extra></extra>",
            }
        )
    steps = [result.arms[a].step_ms for a in arms]
    traces.append(
        {
            "type": "scatter",
            "mode": "markers",
            "name": "decode step shown in the table",
            "x": x,
            "y": [_num(q.scalar) for q in steps],
            "marker": {
                "symbol": "line-ew-open",
                "size": 34,
                "color": palette.MEASURED_MARK,
                "line": {"width": 2},
            },
            "text": [_wrap(_tagline(q)) for q in steps],
            "hovertemplate": "step %{y:.2f} ms<br>%{text}<extra></extra>",
        }
    )
    layout = _layout(barmode="stack", xaxis=_axis("", tickangle=0), yaxis=_axis("ms per decode step"))
    return {"data": traces, "layout": layout}


def step_bound(result: Result) -> Figure:
    """Each arm's step along the path that sets it, part by part, its bound outlined and named
    above the bar; where an eager step's launches outlast the GPU work, the GPU path hidden
    under them is marked beside it (the model's figures: `physics/bounds.py`)."""
    arms = [a for a in result.arms if result.arms[a].bounds is not None]
    proxied = result.resolved.transport.host_proxied
    x = [_coloured(arm_name(result, a), palette.arm_colour(a, proxied)) for a in arms]
    bounds = {a: result.arms[a].bounds for a in arms}
    traces = _bound_bars(arms, x, bounds)
    hidden = [(xi, bounds[a].hidden_ms) for xi, a in zip(x, arms, strict=True) if bounds[a].path == "cpu"]
    if hidden:
        traces.append(_hidden_gpu_marks(hidden))
    annotations = [
        {
            "x": xi,
            "y": _num(bounds[a].step_ms.scalar),
            "text": f"bound: {bounds[a].label}",
            "showarrow": False,
            "yanchor": "bottom",
            "font": {"size": 11, "color": "#212529"},
        }
        for xi, a in zip(x, arms, strict=True)
    ]
    top = max((bounds[a].step_ms.scalar for a in arms), default=1.0)
    layout = _layout(
        barmode="stack",
        xaxis=_axis("", tickangle=0),
        yaxis=_axis("ms per decode step (the model's)", range=[0, top * 1.18]),
        annotations=annotations,
        meta={"bounds": {a: bounds[a].name for a in arms}},
    )
    return {"data": traces, "layout": layout}


def _bound_bars(arms: list[str], x: list[str], bounds: dict[str, Any]) -> list[dict[str, Any]]:
    """One stacked bar trace per part on some arm's path, outlined where the part binds."""
    traces: list[dict[str, Any]] = []
    for part in BOUNDS:
        qs = [bounds[a].parts_ms.get(part) for a in arms]
        if all(q is None for q in qs):
            continue
        label = BOUND_LABELS[part]
        binds = [q is not None and _binds(bounds[a].name, part) for a, q in zip(arms, qs, strict=True)]
        traces.append(
            {
                "type": "bar",
                "name": label,
                "x": x,
                "y": [None if q is None else _num(q.scalar) for q in qs],
                "marker": {
                    "color": palette.BOUND[part],
                    "line": {
                        "color": [palette.MEASURED_MARK if b else "rgba(0,0,0,0)" for b in binds],
                        "width": [3 if b else 0 for b in binds],
                    },
                },
                "textposition": "none",
                "text": [_wrap(_tagline(q)) if q is not None else "" for q in qs],
                "hovertemplate": f"{label}: %{{y:.2f}} ms<br>%{{text}}<extra></extra>",
            }
        )
    return traces


def _hidden_gpu_marks(hidden: list[tuple[str, Q]]) -> dict[str, Any]:
    """A marker at the GPU path of each launch-bound arm: the work its launches hide."""
    return {
        "type": "scatter",
        "mode": "markers",
        "name": "GPU path, hidden under the launches",
        "x": [xi for xi, _ in hidden],
        "y": [_num(q.scalar) for _, q in hidden],
        "marker": {"symbol": "line-ew-open", "size": 34, "color": "#c92a2a", "line": {"width": 2}},
        "text": [_wrap(_tagline(q)) for _, q in hidden],
        "hovertemplate": "GPU path %{y:.2f} ms (hidden)<br>%{text}<extra></extra>",
    }


def _binds(bound: str, part: str) -> bool:
    """Whether `part` is the bound or one of the exchange class it competes in."""
    for members in EXCHANGE_CLASSES.values():
        if bound in members:
            return part in members
    return part == bound


def _coloured(text: str, colour: str) -> str:
    """A bar's category label in its arm's colour, broken before its parenthesis so a narrow
    chart keeps it horizontal and whole."""
    text = text.replace(" (", "<br>(").replace("single-node ", "single-node<br>")
    return f"<span style='color:{colour}'><b>{text}</b></span>"


# 3. memory per GPU ----------------------------------------------------------------------------


def memory_chart(result: Result) -> Figure:
    """Memory per GPU by part, against the usable HBM line; the gap is the KV headroom."""
    arms = list(result.arms)
    proxied = result.resolved.transport.host_proxied
    x = [_coloured(arm_name(result, a), palette.arm_colour(a, proxied)) for a in arms]
    traces = _memory_bars(result, arms, x)
    usable = result.arms[arms[0]].memory.usable_gb
    tallest = max(max(result.arms[a].memory.total_gb.scalar for a in arms), 0.0)
    annotations = _headroom_labels(result, arms, x)
    top, shapes, usable_note = _usable_hbm(usable, tallest)
    annotations.append(usable_note)
    layout = _layout(
        barmode="stack",
        xaxis=_axis("", tickangle=0),
        yaxis=_axis("GB per GPU", range=[0, top]),
        shapes=shapes,
        annotations=annotations,
    )
    return {"data": traces, "layout": layout}


def _memory_bars(result: Result, arms: list[str], x: list[str]) -> list[dict[str, Any]]:
    """One stacked bar trace per memory part (weights, KV cache, buffers, reserve)."""
    traces: list[dict[str, Any]] = []
    for part, label in MEMORY_LABELS.items():
        qs = [_memory_part(result.arms[a].memory, part) for a in arms]
        traces.append(
            {
                "type": "bar",
                "name": label,
                "x": x,
                "y": [_num(q.scalar) for q in qs],
                "marker": {"color": palette.MEMORY[part]},
                "textposition": "none",
                "text": [_wrap(_tagline(q)) for q in qs],
                "hovertemplate": f"{label}: %{{y:.1f}} GB<br>%{{text}}<extra></extra>",
            }
        )
    return traces


def _headroom_labels(result: Result, arms: list[str], x: list[str]) -> list[dict[str, Any]]:
    """Above each bar, the headroom left under usable HBM (green) or how far over it is (red)."""
    annotations = []
    for xi, a in zip(x, arms, strict=True):
        m = result.arms[a].memory
        head = m.headroom_gb.scalar
        total = m.total_gb.scalar
        text = f"headroom<br>{head:,.0f} GB" if head >= 0 else f"over by<br>{-head:,.0f} GB"
        annotations.append(
            {
                "x": xi,
                "y": max(total, 0.0),
                "text": text,
                "showarrow": False,
                "yanchor": "bottom",
                "font": {"size": 11, "color": "#2b8a3e" if head >= 0 else "#c92a2a"},
            }
        )
    return annotations


def _usable_hbm(usable: Q, tallest: float) -> tuple[float, list[dict[str, Any]], dict[str, Any]]:
    """The y range, the usable-HBM line (if the bars come near it) and its label.

    Far above the bars, a line would squash the parts flat: it is written, not drawn.
    """
    usable_text = f"usable HBM {usable.scalar:,.0f} GB per GPU [{usable.tag}]"
    if tallest >= MEMORY_LINE_SHARE * usable.scalar:
        top = max(usable.scalar, tallest) * 1.12
        shapes = [
            {
                "type": "line",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "y0": usable.scalar,
                "y1": usable.scalar,
                "line": {"color": "#c92a2a", "width": 1.5, "dash": "dash"},
            }
        ]
        note = {
            "xref": "paper",
            "x": 1,
            "y": usable.scalar,
            "text": usable_text,
            "showarrow": False,
            "xanchor": "right",
            "yanchor": "bottom",
            "font": {"size": 10, "color": "#c92a2a"},
        }
        return top, shapes, note
    top = max(tallest, 1e-9) * 1.35
    note = {
        "xref": "paper",
        "yref": "paper",
        "x": 1,
        "y": 1,
        "text": f"{usable_text}<br>is above this scale ↑",
        "showarrow": False,
        "xanchor": "right",
        "yanchor": "top",
        "font": {"size": 10, "color": "#c92a2a"},
        "bgcolor": "rgba(255,255,255,0.9)",
    }
    return top, [], note


def _memory_part(m: Any, part: str) -> Q:
    return {"weights": m.weights_gb, "kv_cache": m.kv_gb, "buffers": m.buffers_gb, "reserve": m.reserve_gb}[
        part
    ]


# 4. verdict map ---------------------------------------------------------------------------------

MAP_AXIS_TITLES = {
    "nodes": "nodes",
    "concurrency": "concurrency",
    "isl": "input length (ISL, tokens)",
    "osl": "output length (OSL, tokens)",
    "comms": "EP_NUM_COMMS",
}


def verdict_map(result: Result) -> Figure:
    """The verdict on a grid around the scenario, over two inputs chosen where it changes
    (`whatif/neighbourhood.py`), in the verdict map's one look (`report/verdict_map.py`).

    When no pair of axes changes the verdict, the chart says so instead of showing a single
    colour without comment.
    """
    s = result.resolved.scenario
    around = neighbourhood(result)
    y_field, x_field = around.y_field, around.x_field
    y_title, x_title = MAP_AXIS_TITLES[y_field], MAP_AXIS_TITLES[x_field]
    x_labels = [f"{int(v):,}" for v in around.xs]
    y_labels = [f"{int(v):,}" for v in around.ys]
    codes = around.codes.tolist()
    traces: list[dict[str, Any]] = [
        verdict_look.heatmap(x_labels, y_labels, codes, _verdict_hover(result, around), (y_title, x_title)),
        {
            "type": "scatter",
            "mode": "markers",
            "name": "this scenario",
            "x": [f"{int(getattr(s, x_field)):,}"],
            "y": [f"{int(getattr(s, y_field)):,}"],
            "marker": {"symbol": "square-open", "size": 30, "color": "#000000", "line": {"width": 3}},
            "hoverinfo": "skip",
        },
    ]
    traces += verdict_look.legend(verdict_look.shown(codes))
    annotations = [_uniform_note(codes)] if around.uniform else []
    layout = _layout(
        xaxis=_axis(x_title, type="category"),
        yaxis=_axis(y_title, type="category"),
        annotations=annotations,
        meta={"axes": [y_field, x_field], "uniform": around.uniform},
    )
    return {"data": traces, "layout": layout}


def _verdict_hover(result: Result, around: Neighbourhood) -> list[list[str]]:
    """Each cell's hover line: the verdict, the arm to run and DeepEP's aggregate ratio there."""
    codes, rec, batch = around.codes, around.rec, around.batch
    ratio = np.broadcast_to(np.asarray(batch.ratio_deepep_vs_alternative.value, dtype=float), codes.shape)
    versus = ARM_LABELS[result.alternative]
    source = f"[{batch.ratio_deepep_vs_alternative.tag}]"
    rows, cols = codes.shape
    return [
        [
            verdict_look.hover_line(str(codes[i, j]), str(rec[i, j]), ratio[i, j], versus, source)
            for j in range(cols)
        ]
        for i in range(rows)
    ]


def _uniform_note(codes: list[list[str]]) -> dict[str, Any]:
    """The note over a one-colour map: the same verdict holds everywhere in range."""
    return {
        "xref": "paper",
        "yref": "paper",
        "x": 0.5,
        "y": 0.5,
        "text": f"Same verdict everywhere in this range:<br>{verdict_look.title(str(codes[0][0]))}",
        "showarrow": False,
        "font": {"size": 13, "color": "#212529"},
        "bgcolor": "rgba(255,255,255,0.92)",
        "bordercolor": "#adb5bd",
        "borderpad": 6,
    }


# all of them -------------------------------------------------------------------------------------


CHARTS = {
    "per_user": per_user_vs_concurrency,
    "breakdown": step_breakdown,
    "bound": step_bound,
    "memory": memory_chart,
    "verdict_map": verdict_map,
}


def all_charts(result: Result) -> dict[str, Figure]:
    return {name: build(result) for name, build in CHARTS.items()}


def as_figure(fig: Figure) -> Any:
    """A `plotly.graph_objects.Figure` (validated) for interactive use."""
    import plotly.graph_objects as go

    return go.Figure(fig)
