"""The verdict map's one look: how a cell's verdict becomes a colour, a symbol, a hover line and
a legend entry.

Two faces draw verdict maps: the page's and the report's map around one scenario
(`report/charts.py`, over `whatif/neighbourhood.py`'s grid) and a sweep's map files
(`report/sweep_maps.py`, over `whatif/sweep/maps.py`'s). Both take every encoding from here, so
a verdict reads the same wherever it is drawn: one flat colour per code (base/palette.py), the
code's symbol in the cell so the map reads without colour, the verdict's title in the legend
(only the verdicts the map shows, in the order the cards list them), and a hover line with the
arm to run and DeepEP's aggregate ratio. A cell no row reached has no code (`None`): plotly
leaves it empty, matplotlib paints it `MISSING`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..base import palette
from ..base.vocabulary import SYMBOLS, VERDICTS_SHOWN
from ..decide.verdict import ARM_LABELS, TITLES

CODES = VERDICTS_SHOWN
"""The order of the colour steps and of the legend."""
MISSING = "#d4d4d8"
"""A cell no row reached, where the drawing needs a colour for it (a PNG)."""
NOT_EVALUATED = "not evaluated"
TEXT_FONT = {"color": "#ffffff", "size": 13}
"""The symbol's font in a plotly cell (one colour for every cell: plotly takes no per-cell colour)."""
TEXT_COLOURS = palette.VERDICT_TEXT
"""The symbol's colour per code where a drawing can set it per cell (a PNG)."""


def step(code: str) -> int:
    """A code's colour step, the value its cell holds in a heatmap."""
    return CODES.index(code)


def steps(codes: Any) -> list[list[int | None]]:
    """A 2-D grid of codes (None where no row reached) as heatmap values."""
    return [[None if c is None else step(str(c)) for c in row] for row in codes]


def colours() -> list[str]:
    """One colour per step, in step order."""
    return [palette.VERDICT[code] for code in CODES]


def flat_scale(colours: list[str]) -> list[list[Any]]:
    """A plotly colour scale of flat steps, one per colour (a map's cells hold step indices)."""
    scale: list[list[Any]] = []
    k = len(colours)
    for i, colour in enumerate(colours):
        scale += [[i / k, colour], [(i + 1) / k, colour]]
    return scale


def colour_scale() -> list[list[Any]]:
    """The verdicts' scale: one flat step per code, for values from -0.5 to len(CODES) - 0.5."""
    return flat_scale(colours())


def symbol(code: str) -> str:
    return SYMBOLS[code]  # type: ignore[index]


def title(code: str) -> str:
    """The verdict as the legend and the hover say it: its symbol and the card's title."""
    return f"{symbol(code)} {TITLES[code]}"


def hover_line(code: str, arm: str, ratio: float, versus: str, source: str) -> str:
    """A cell's hover text: the verdict, the arm to run there and DeepEP's aggregate ratio
    against `versus`, with where the ratio comes from (`source`, e.g. its tag)."""
    return f"{title(code)}<br>run {ARM_LABELS[arm]}; DeepEP / {versus} aggregate {ratio:.2f} {source}"


# size: a panel is its two label lists, codes, hover and axis names, and whether symbols fit
def heatmap(
    x: list[str], y: list[str], codes: Any, hover: list[list[str]], titles: tuple[str, str], text: bool = True
) -> dict[str, Any]:
    """The heatmap trace of one panel: `codes` a 2-D grid (rows along `y`), `hover` one line per
    cell, `titles` the (y, x) axis names the hover leads with. Symbols are printed in the cells
    when `text` (a map small enough to read them), with wider gaps between cells."""
    y_title, x_title = titles
    trace: dict[str, Any] = {
        "type": "heatmap",
        "x": x,
        "y": y,
        "z": steps(codes),
        "zmin": -0.5,
        "zmax": len(CODES) - 0.5,
        "colorscale": colour_scale(),
        "showscale": False,
        "xgap": 2 if text else 1,
        "ygap": 2 if text else 1,
    }
    if text:
        trace |= {
            "text": [["" if c is None else symbol(str(c)) for c in row] for row in codes],
            "texttemplate": "%{text}",
            "textfont": TEXT_FONT,
        }
    return trace | {
        "customdata": hover,
        "hovertemplate": f"{y_title} %{{y}}, {x_title} %{{x}}<br>%{{customdata}}<extra></extra>",
    }


def shown(codes: Any) -> list[str]:
    """The codes a grid holds, in legend order."""
    held = {str(c) for row in codes for c in row if c is not None}
    return [code for code in CODES if code in held]


def legend(codes: Iterable[str]) -> list[dict[str, Any]]:
    """Empty marker traces that give each code a legend entry (a heatmap has none)."""
    return [
        {
            "type": "scatter",
            "mode": "markers",
            "name": title(code),
            "x": [None],
            "y": [None],
            "marker": {"symbol": "square", "size": 12, "color": palette.VERDICT[code]},
        }
        for code in codes
    ]
