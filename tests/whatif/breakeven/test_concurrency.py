"""(b) The concurrency at which DeepEP reaches, then beats, the alternative
(`whatif/breakeven/concurrency.py`): the crossing brackets the threshold, and "never" names the
card's max concurrency."""

from __future__ import annotations

import re

import pytest

from deepep_calc.catalog.constants import const
from deepep_calc.question.scenario import Scenario
from deepep_calc.whatif.breakeven.concurrency import concurrency_cross

from .scenarios import CROSS, _r, _ratio


@pytest.mark.parametrize("win", [False, True])
def test_concurrency_crossing_brackets_the_threshold(win: bool) -> None:
    r = _r(CROSS)
    answer = concurrency_cross(r, win=win)
    threshold = 1.0 + const("noise_band").scalar if win else 1.0
    assert answer.value is not None
    c = int(answer.value.scalar)
    assert c > 1
    at, below = _ratio(r, concurrency=[c]), _ratio(r, concurrency=[c - 1])
    assert below < threshold <= at
    assert at == pytest.approx(threshold, rel=0.01)  # substituted back: a tie within 1 %
    assert answer.check["ratio_at"].scalar == pytest.approx(at)


def test_concurrency_never_names_the_cards_max_concurrency() -> None:
    """Issue 13 item 7: "never within limits (concurrency 1 to 10,000,000)" sat beside a card whose
    max concurrency was far lower. The search stops at the card's figure (the smaller of the two
    compared arms') and the sentence names it, with the ratio there."""
    from deepep_calc import evaluate

    answer = concurrency_cross(_r(Scenario()), win=False)
    assert answer.value is None and answer.short == "never"
    m = re.search(
        r"^Never up to concurrency ([\d,]+), .*card's max concurrency.*reaches ([\d.]+)×", answer.note
    )
    assert m and float(m.group(2)) < 1
    card = evaluate(Scenario()).arms
    shown = min(card["deepep"].memory.max_concurrency.scalar, card["allgather"].memory.max_concurrency.scalar)
    assert int(m.group(1).replace(",", "")) == int(shown)
    assert answer.check["max_concurrency"].scalar == shown
