"""`report/bound_view.py`: what bounds each arm's step, in one line of the card: the longest
wording that fits the width, a shorter one after it, never wider than asked.

The direct tests feed `bound_line` stand-ins for a result (each arm's bound name and DeepEP's NIC
busy figure, 1.07 % derived, printed `1.1 % ◐`), so every wording and every fallback is reached
on purpose; the first test checks the line on real results and on the card.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console
from rich.text import Text

from deepep_calc import Scenario, evaluate
from deepep_calc.base.quantity import Q
from deepep_calc.report.bound_view import bound_line
from deepep_calc.report.terminal import print_result

from .bound_cases import CASES


@pytest.mark.parametrize(
    "fields", CASES, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()) or "calibration"
)
def test_the_card_says_it_in_one_line_of_80_columns(fields: dict) -> None:
    result = evaluate(Scenario(**fields))
    line = bound_line(result, 76)
    assert line is not None and line.cell_len <= 76 and "\n" not in line.plain
    assert line.plain.startswith("Bound")
    console = Console(width=80, record=True, color_system=None, force_terminal=False)
    print_result(result, console)
    text = console.export_text()
    assert line.plain in text


BUSY = Q.derived(1.07, "%", "bytes a step over the exchange's time")
NIC = "NICs 1.1 % ◐ busy in DeepEP's exchange"
NIC_SHORT = "NIC 1.1 % ◐"
ONE = "Bound: host launches on every arm"
LONG = "Bound: DeepEP HBM · allgather wire · replicas host launches"
SHORT = "Bound: DeepEP HBM · all wire · rep host launches"


def stand_in(nodes: int, **bounds: str | None) -> Any:
    """A result as `bound_line` reads it: per arm a bound name (None: the arm has no bounds)."""
    arms = {
        name: SimpleNamespace(
            bounds=None if b is None else SimpleNamespace(name=b, nic_busy_exchange_pct=BUSY)
        )
        for name, b in bounds.items()
    }
    return SimpleNamespace(arms=arms, scenario=SimpleNamespace(nodes=nodes))


def width(text: str) -> int:
    return Text(text).cell_len


MIXED = {"deepep": "hbm", "allgather": "wire", "replica": "launches"}


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        (200, f"{LONG} · {NIC}"),
        (width(f"{LONG} · {NIC}"), f"{LONG} · {NIC}"),  # exactly fits
        (width(f"{LONG} · {NIC}") - 1, f"{LONG} · {NIC_SHORT}"),  # the NIC words go first
        (width(LONG), LONG),  # then the NIC figure
        (width(LONG) - 1, SHORT),  # then the arms' names shrink (no room for the NIC beside them)
        (width(f"{SHORT} · {NIC_SHORT}"), LONG),  # the arms' full names outrank the NIC figure
        (20, SHORT[:20]),  # nothing fits: the short form, cut at the width
        (0, "B"),  # never empty
    ],
)
def test_the_longest_wording_that_fits_is_chosen(columns: int, expected: str) -> None:
    line = bound_line(stand_in(2, **MIXED), columns)
    assert line is not None
    assert line.plain == expected
    assert line.cell_len <= max(columns, 1)


def test_one_bound_on_every_arm_is_said_once() -> None:
    line = bound_line(stand_in(2, deepep="launches", allgather="launches", replica="launches"), 200)
    assert line is not None and line.plain == f"{ONE} · {NIC}"


def test_on_one_node_there_is_no_nic_to_speak_of() -> None:
    """One node: DeepEP rides NVLink, so the line names the bounds only, however wide."""
    line = bound_line(stand_in(1, deepep="hbm", allgather="hbm", replica="hbm"), 200)
    assert line is not None and line.plain == "Bound: HBM on every arm"


def test_arms_without_bounds_are_left_out_and_without_deepep_there_is_no_line() -> None:
    line = bound_line(stand_in(2, deepep="compute", tp="nvlink", replica=None), 200)
    assert line is not None
    assert line.plain == f"Bound: DeepEP tensor cores · tensor parallel NVLink · {NIC}"
    assert bound_line(stand_in(2, deepep=None, allgather="hbm"), 200) is None


def test_the_nic_marker_carries_its_tag() -> None:
    line = bound_line(stand_in(2, deepep="wire", allgather="wire"), 200)
    assert line is not None
    styled = {line.plain[s.start : s.end]: str(s.style) for s in line.spans}
    assert styled["◐"] == "cyan"  # term.TAG_STYLE["derived"]


def test_the_default_scenarios_card_line_names_the_launches() -> None:
    """The default scenario is eager on the host proxy: every arm waits on host launches."""
    result = evaluate(Scenario())
    line = bound_line(result, 76)
    assert line is not None
    assert line.plain.startswith(f"{ONE} · NIC")
