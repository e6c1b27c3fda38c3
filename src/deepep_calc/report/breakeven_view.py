"""The terminal view of `deepep-calc breakeven`: each answer as a value with its unit and tag
marker, and a sentence saying what to do with it.

Why here and not in the command: the wording of a value (singular or plural, the knob's own
name for a whole setting) is formatting, and the house rules for it live with `term`.
"""

from __future__ import annotations

from typing import Any

from rich.padding import Padding
from rich.text import Text

from ..base.quantity import weakest
from . import term

_KNOBS = {"comms": "EP_NUM_COMMS", "QPs": "EP_EFA_MAX_QPS"}
"""Whole settings shown as the flag they set, e.g. `EP_NUM_COMMS=15`."""
_COUNTS = {"nodes": "node", "requests": "request", "tokens": "token"}
"""Whole counts shown with their noun, singular when the count is one."""


def value_text(a: Any) -> str:
    """`879.1 µs`, `1 node`, `41 requests`, `EP_NUM_COMMS=15`, or the answer in a word."""
    q = a.value
    if q is None:
        return a.short or "—"
    v = q.scalar
    if q.unit in _KNOBS:
        return f"{_KNOBS[q.unit]}={v:,.0f}"
    if q.unit in _COUNTS:
        text = f"{v:,.0f}"
        return f"{text} {_COUNTS[q.unit]}" if text == "1" else f"{text} {q.unit}"
    unit = "µs" if q.unit == "us" else q.unit
    return f"{v:,.1f} {unit}"


def answer_cell(a: Any) -> Text:
    """The value and the marker of its tag; a word answer takes the weakest tag of its check."""
    out = Text(value_text(a))
    quantities = [a.value] if a.value is not None else list(a.check.values())
    if quantities:
        out.append(" ").append_text(term.marker(weakest(*quantities)))
    return out


def print_breakeven(answers: list[Any]) -> None:
    """Each question, its answer (never wrapped) and the sentence that says how it stands.

    On 80 columns a three-column table would squeeze the prose into slivers, so each answer is
    a short block; a wide terminal gets the table.
    """
    c = term.console()
    if term.wide(c):
        table = term.table(
            term.text_col("question"),
            term.num_col("answer"),
            term.text_col("how it stands"),
            title="Break-even",
        )
        for a in answers:
            table.add_row(a.question, answer_cell(a), a.note)
            table.add_section()
        c.print(table)
    else:
        c.print(Text("Break-even", style="bold"))
        for a in answers:
            c.print(Padding(Text(a.question, style="bold"), (1, 0, 0, 0), expand=False))
            c.print(Text("  → ").append_text(answer_cell(a)), no_wrap=True, crop=False)
            c.print(Padding(Text(a.note, style="dim"), (0, 0, 0, 4), expand=False))
    c.print(Text(""))
    c.print(Text("Whole settings are rounded in the direction that keeps the sentence true.", style="dim"))
    c.print(term.legend())
