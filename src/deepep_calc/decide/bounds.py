"""Words for what bounds each arm's decode step, and for the smallest change that would move it.

The figures come from each arm's `bounds` (`estimate/bounds.py`, formulas in
`physics/bounds.py`): the part that sets the step, the exchange's own bound, the NIC's busy
share, and the load at which another part takes over, solved on the model. "What would move it"
tries the single changes the flip search tries, in its order (a GPU-initiated transport, more
comms, the other graph mode, fewer nodes), each a what-if the explanation already keeps
(`explain.py` hands its what-if function in), and names the first that changes DeepEP's bound.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base.errors import CalcError
from ..base.quantity import Q
from ..catalog.measured import load_facts
from ..catalog.transports import load_transports
from .verdict import ARM_LABELS, tagged

GPU_INITIATED = ("efa-gda", "ib-ibgda")  # the GPU-initiated transports worth proposing, in order


def _whose(name: str) -> str:
    """An arm's possessive: `allgather's`, `the replicas'`."""
    return "the replicas'" if name == "replica" else f"{ARM_LABELS[name]}'s"


def _bound_clause(arm: Any) -> str:
    """`host launches, 35.8 of 51.4 ms [assumed]`: the bound and its share of the model's step."""
    b = arm.bounds
    return f"{b.label}, {b.part_ms.scalar:,.1f} of {tagged(b.step_ms)}"


def bound_reasons(result: Any, whatif: Callable[[dict[str, Any]], Any]) -> list[str]:
    """Two lines for the Why: what bounds each arm's step (with DeepEP's exchange and NICs), and
    what would move DeepEP's bound."""
    arms = {n: a for n, a in result.arms.items() if a.bounds is not None}
    if "deepep" not in arms:
        return []
    return [_what_bounds(result, arms), _what_moves(result, whatif)]


def _what_bounds(result: Any, arms: dict[str, Any]) -> str:
    dee = arms["deepep"].bounds
    head = f"What bounds each step (the model's): DeepEP's {_bound_clause(arms['deepep'])}"
    if dee.path == "cpu":
        head += f", its GPU work ({tagged(dee.hidden_ms)}) hidden under the launches"
    others = [n for n in arms if n != "deepep"]
    same = [n for n in others if arms[n].bounds.name == dee.name]
    words = [head]
    if same and len(same) == len(others):
        words.append(f"{' and '.join(_whose(n) for n in same)} too")
    else:
        for n in others:
            words.append(f"{_whose(n)} {_bound_clause(arms[n])}")
    return "; ".join(words) + ". " + _exchange_words(result, dee)


def _exchange_words(result: Any, dee: Any) -> str:
    """DeepEP's exchange: what gates it, how busy its NICs are, and the measured figure where the
    scenario is the measured path's."""
    r = result.resolved
    if r.scenario.nodes <= 1:
        return f"DeepEP's exchange stays on NVLink ({dee.exchange_label}); no NIC carries it."
    busy = tagged(dee.nic_busy_exchange_pct, 2)
    text = (
        f"DeepEP's exchange is {dee.exchange_label}: its NICs are busy {busy} of the exchange's time "
        f"({tagged(dee.nic_busy_pct, 2)} of the step)"
    )
    if r.transport.name == "efa-proxy":
        measured = load_facts()["nic_utilisation"].q()
        pct = Q(measured.value * 100.0, "%", measured.tag, measured.source)
        text += f"; {tagged(pct)} was measured on the calibration A/B's dispatch path (method not published)"
    return text + "."


def _what_moves(result: Any, whatif: Callable[[dict[str, Any]], Any]) -> str:
    """The load at which DeepEP's bound gives way, and the first single change that moves it."""
    dee = result.arms["deepep"].bounds
    parts = []
    over = dee.take_over
    if over is not None:
        fits = "" if over["fits"] else ", past what fits in HBM"
        parts.append(
            f"{over['label']} would take over at {_times(over['factor'].scalar)}× the load (concurrency "
            f"{over['running']:,}, {over['tokens_per_rank'].scalar:,.1f} tokens per rank{fits})"
        )
    else:
        parts.append("no other part takes over within 1,024× the load")
    moved = _first_move(result, whatif)
    if moved is not None:
        flag, arm = moved
        parts.append(f"{flag} would make it {arm.bounds.label} ({tagged(arm.bounds.part_ms)})")
    else:
        parts.append("no single change of transport, comms, graph mode or nodes moves it")
    return f"What would move DeepEP's bound ({dee.label}): " + "; ".join(parts) + "."


def move_changes(result: Any) -> list[tuple[str, dict[str, Any]]]:
    """The single changes tried, in order: a GPU-initiated transport (host-proxied across
    nodes), EP_NUM_COMMS=8, the other graph mode, half the nodes."""
    r = result.resolved
    s = r.scenario
    out: list[tuple[str, dict[str, Any]]] = []
    if r.transport.host_proxied and s.nodes > 1:
        for name in GPU_INITIATED:
            if r.instance.name in load_transports()[name].instances:
                out.append((f"--transport {name}", {"transport": name}))
                break
    if r.transport.comms_sensitive and s.comms < 8 and s.nodes > 1:
        out.append(("--comms 8", {"comms": 8}))
    out.append(("--eager" if s.cuda_graphs else "--cuda-graphs", {"cuda_graphs": not s.cuda_graphs}))
    if s.nodes > 1:
        out.append((f"--nodes {s.nodes // 2}", {"nodes": s.nodes // 2}))
    return out


def _first_move(result: Any, whatif: Callable[[dict[str, Any]], Any]) -> tuple[str, Any] | None:
    here = result.arms["deepep"].bounds.name
    for flag, update in move_changes(result):
        try:
            other = whatif(update)
        except CalcError:
            continue
        arm = other.arms.get("deepep")
        if arm is None or arm.bounds is None or not arm.feasible:
            continue
        if arm.bounds.name != here:
            return flag, arm
    return None


def _times(factor: float) -> str:
    """A load factor in two significant digits, written out (1.5, 45, 400; never 4e+02)."""
    rounded = float(f"{factor:.2g}")
    return f"{factor:.2g}" if rounded < 100 else f"{rounded:,.0f}"
