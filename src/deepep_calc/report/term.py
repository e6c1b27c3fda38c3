"""Building blocks of every terminal view: tag markers, number cells, footnotes, tables.

Why one module: the tables of `models`, `instances`, `transports`, `kernel`, `validate`,
`breakeven`, `sensitivity` and the card read alike only if they share these pieces. The house
rules they encode, for a terminal of 80 columns (what a pipe gets) and up:

- a tag is a one-character marker after its number (● measured, ◐ derived, ○ assumed),
  explained once by `legend()`; colour helps, the shape alone carries it when piped;
- units sit in the header, so a cell holds a number and its marker, nothing a wrap could split;
- numbers and ids never wrap and are never cut: their columns are `no_wrap` and a view drops
  whole columns (or moves them below the table) rather than squeeze them; only prose wraps;
- sources, long and repetitive, become numbered footnotes printed once under the table;
- a wider terminal (`wide()`) gets the extra columns back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from .labels import TAG_IN_TEXT

TAG_MARK = {"measured": "●", "derived": "◐", "assumed": "○"}
TAG_STYLE = {"measured": "bold green", "derived": "cyan", "assumed": "yellow"}
TAG_WORDS = {
    "measured": "measured",
    "derived": "derived",
    "assumed": "assumed (verify locally)",
}
WIDE = 120
"""From this many columns on, views show their optional columns."""


def console() -> Console:
    """A console for views: no syntax highlighting of numbers, no soft wrapping of long lines.

    Width is the terminal's, or COLUMNS, or 80 when piped (rich's rule), so a view rendered
    into a file reads like one on a narrow terminal.
    """
    return Console(highlight=False, soft_wrap=False)


def wide(c: Console) -> bool:
    return c.width >= WIDE


def _tag_of(q: Any) -> str:
    tag = q["tag"] if isinstance(q, Mapping) else q.tag
    return str(tag)


def marker(tag: Any) -> Text:
    """The one-character marker of a tag, in its colour."""
    name = str(tag)
    return Text(TAG_MARK.get(name, "?"), style=TAG_STYLE.get(name, ""))


def legend() -> Text:
    """`● measured  ◐ derived  ○ assumed (verify locally)`: printed once per view (49 columns)."""
    out = Text()
    for i, (tag, mark) in enumerate(TAG_MARK.items()):
        if i:
            out.append("  ")
        out.append(mark, style=TAG_STYLE[tag])
        out.append(f" {TAG_WORDS[tag]}", style="dim")
    return out


def sentence(text: str, style: str = "") -> Text:
    """A sentence written with `[derived]`-style tags, with each tag drawn as its marker.

    The verdict's reasons and advisories are worded with bracketed tags; on a terminal they
    read like the tables beside them when the brackets become markers.
    """
    out = Text(style=style)
    pos = 0
    for m in TAG_IN_TEXT.finditer(text):
        out.append(text[pos : m.start()])
        out.append_text(marker(m.group(1)))
        pos = m.end()
    out.append(text[pos:])
    return out


def number(value: Any, digits: int = 1) -> str:
    """Grouped thousands, fixed decimals; a missing or non-finite value reads `n/a`."""
    if value is None:
        return "n/a"
    v = float(value)
    if v != v or v in (float("inf"), float("-inf")):
        return "n/a"
    return f"{v:,.{digits}f}"


def value_of(q: Any) -> Any:
    if isinstance(q, Mapping):
        return q["value"]
    return q.scalar


def unit_of(q: Any) -> str:
    unit = q["unit"] if isinstance(q, Mapping) else q.unit
    return "" if unit in ("1", "x", "ratio") else unit


def qcell(q: Any, digits: int = 1, *, unit: bool = False) -> Text:
    """A number and its tag marker (`19.62 ●`), with its unit when the header has none.

    `q` is a `Q` or its JSON; None prints as an em dash.
    """
    if q is None:
        return Text("—")
    text = number(value_of(q), digits)
    shown_unit = unit_of(q) if unit else ""
    out = Text(f"{text} {shown_unit} " if shown_unit and text != "n/a" else f"{text} ")
    out.append_text(marker(_tag_of(q)))
    return out


def table(*columns: Column | str, title: str | None = None, caption: str | None = None) -> Table:
    """A light table: a rule under the header, two spaces between columns, no outer frame.

    (SIMPLE_HEAD draws its column divider as a space, so one space of right padding makes two.)
    """
    return Table(
        *columns,
        title=title,
        caption=caption,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
        title_justify="left",
        caption_justify="left",
        title_style="bold",
        header_style="bold",
    )


def num_col(header: str, **kw: Any) -> Column:
    """A right-aligned column that never wraps: numbers live here."""
    return Column(header, justify="right", no_wrap=True, **kw)


def id_col(header: str, **kw: Any) -> Column:
    """A left-aligned column that never wraps: names and cell ids live here."""
    return Column(header, no_wrap=True, **kw)


def text_col(header: str, **kw: Any) -> Column:
    """A column of prose that may wrap at spaces."""
    return Column(header, overflow="fold", **kw)


class Footnotes:
    """Numbered sources: each distinct text gets one number, printed once under the view."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def ref(self, text: str | None) -> str:
        """`[n]` for a source text (the same text keeps its number); empty for no text."""
        if not text:
            return ""
        if text not in self.texts:
            self.texts.append(text)
        return f"[{self.texts.index(text) + 1}]"

    def render(self) -> Table:
        grid = Table.grid(padding=(0, 1, 0, 0))
        grid.add_column(justify="right", no_wrap=True, style="dim")
        grid.add_column(overflow="fold", style="dim")
        for i, text in enumerate(self.texts, 1):
            grid.add_row(f"[{i}]", text)
        return grid

    def lines(self, width: int) -> list[str]:
        """Each source wrapped at spaces to fit `width` - 1 columns (a line that fills the last
        column makes some terminals wrap it once more), continued under its text, no padding."""
        import textwrap

        out: list[str] = []
        mark = len(f"[{len(self.texts)}]")
        for i, text in enumerate(self.texts, 1):
            lead = f"[{i}]".rjust(mark) + " "
            out += textwrap.wrap(
                text,
                max(width - 1, len(lead) + 20),
                initial_indent=lead,
                subsequent_indent=" " * len(lead),
                break_on_hyphens=False,
                break_long_words=True,
            )
        return out

    def print(self, c: Console, heading: str = "Sources") -> None:
        if self.texts:
            c.print(Text(heading, style="bold"))
            for line in self.lines(c.width):
                c.print(Text(line, style="dim"), soft_wrap=True)


def print_sources_by_row(c: Console, rows: list[tuple[str, str]], heading: str = "Sources") -> None:
    """Sources listed under the row they belong to (for catalogs, where each row has its own)."""
    if not rows:
        return
    import textwrap

    lead = max(len(key) for key, _ in rows) + 2
    width = max(c.width - 1, lead + 20)  # never the last column: some terminals wrap it again
    c.print(Text(heading, style="bold"))
    for key, text in rows:
        lines = textwrap.wrap(text, width - lead, break_on_hyphens=False) or [""]
        for i, line in enumerate(lines):
            out = Text((key if i == 0 else "").ljust(lead), style="bold dim")
            out.append(line, style="dim")
            c.print(out, soft_wrap=True)


def sources_hint(command: str) -> Text:
    """The line that says where the hidden sources are."""
    return Text(f"sources of every row: {command} --sources (or --json)", style="dim")


def print_prose(c: Console, text: str, style: str = "dim") -> None:
    """A sentence wrapped at spaces short of the last column (as the sources are), so a pipe
    or a terminal that wraps the last column again gets it whole."""
    import textwrap

    for line in textwrap.wrap(text, max(c.width - 1, 40), break_on_hyphens=False):
        c.print(Text(line, style=style), soft_wrap=True)
