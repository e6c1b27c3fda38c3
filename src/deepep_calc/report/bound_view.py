"""What bounds each arm's step, on the terminal card: one line of at most the card's width.

The figures are each arm's `bounds` (`estimate/bounds.py`); this only picks the longest wording
that fits and prints each number with its tag's marker.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ..decide.verdict import ARM_LABELS
from . import term
from .labels import BOUND_SHORT


def bound_line(result: Any, width: int) -> Text | None:
    """What bounds each arm's step, and how busy DeepEP's NICs are in its exchange, in one line
    of at most `width` columns: the longest form that fits, shorter ones after it."""
    arms = {n: a for n, a in result.arms.items() if a.bounds is not None}
    if "deepep" not in arms:
        return None
    names = {n: BOUND_SHORT[a.bounds.name] for n, a in arms.items()}
    busy = arms["deepep"].bounds.nic_busy_exchange_pct
    nic = Text(f"NICs {busy.scalar:,.1f} % ")
    nic.append_text(term.marker(busy.tag))
    nic.append(" busy in DeepEP's exchange" if result.scenario.nodes > 1 else "")
    if len(set(names.values())) == 1:
        heads = [f"Bound: {names['deepep']} on every arm"]
    else:
        heads = [
            "Bound: "
            + " · ".join(f"{'replicas' if n == 'replica' else ARM_LABELS[n]} {w}" for n, w in names.items()),
            "Bound: " + " · ".join(f"{n[:3] if n != 'deepep' else 'DeepEP'} {w}" for n, w in names.items()),
        ]
    tails = [nic, Text(f"NIC {busy.scalar:,.1f} % ").append_text(term.marker(busy.tag)), None]
    if result.scenario.nodes <= 1:
        tails = [None]
    for head in heads:
        for tail in tails:
            line = Text(head)
            if tail is not None:
                line.append(" · ")
                line.append_text(tail)
            if line.cell_len <= width:
                return line
    return Text(heads[-1][: max(width, 1)])
