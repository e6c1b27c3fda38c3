"""`report/breakeven_view.py`: each break-even answer as a value with its unit and tag marker (a
whole setting as the flag it sets, a count with its noun), and a sentence saying how it stands;
blocks on 80 columns, a table from `term.WIDE` on.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from deepep_calc.base.quantity import Q
from deepep_calc.report import breakeven_view, term
from deepep_calc.whatif.breakeven import Answer

from .rendering import one_line, render


def test_breakeven_answers_are_never_wrapped(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = render(capsys, monkeypatch, 80, "breakeven")
    answers = json.loads(render(capsys, monkeypatch, 80, "breakeven", "--json"))["answers"]
    from deepep_calc.base.quantity import Q, Tag
    from deepep_calc.report.breakeven_view import answer_cell
    from deepep_calc.whatif.breakeven import Answer

    def q(j: dict[str, Any]) -> Q:
        return Q(j["value"], j["unit"], Tag.parse(j["tag"]), j["source"])

    for a in answers:
        value = q(a["value"]) if a["value"] is not None else None
        check = {k: q(v) for k, v in a["check"].items()}
        shown = answer_cell(Answer(a["key"], a["question"], value, a["note"], check, a["short"])).plain
        assert one_line(text, f"→ {shown}"), shown


def answer(value: Q | None = None, short: str = "", **check: Q) -> Answer:
    return Answer("key", "At what X does DeepEP win?", value, "how it stands", check, short)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Q.derived(15, "comms", "s"), "EP_NUM_COMMS=15"),
        (Q.derived(6, "QPs", "s"), "EP_EFA_MAX_QPS=6"),
        (Q.derived(1, "nodes", "s"), "1 node"),
        (Q.derived(1.4, "nodes", "s"), "1 node"),  # shown as 1: singular, as printed
        (Q.derived(2, "nodes", "s"), "2 nodes"),
        (Q.derived(41, "requests", "s"), "41 requests"),
        (Q.derived(1500, "tokens", "s"), "1,500 tokens"),
        (Q.derived(879.14, "us", "s"), "879.1 µs"),
        (Q.derived(12.34, "ms", "s"), "12.3 ms"),
    ],
)
def test_a_value_reads_as_its_setting_count_or_figure(value: Q, text: str) -> None:
    assert breakeven_view.value_text(answer(value)) == text


def test_an_answer_without_a_value_is_its_word_or_a_dash() -> None:
    assert breakeven_view.value_text(answer(short="never")) == "never"
    assert breakeven_view.value_text(answer()) == "—"


def test_the_marker_is_the_values_tag_or_the_weakest_of_its_check() -> None:
    assert breakeven_view.answer_cell(answer(Q.measured(3, "nodes", "s"))).plain == "3 nodes ●"
    word = answer(short="never", a=Q.measured(1.0, "x", "s"), b=Q.assumed(2.0, "x", "s"))
    assert breakeven_view.answer_cell(word).plain == "never ○"
    assert breakeven_view.answer_cell(answer(short="not applicable")).plain == "not applicable"


def printed(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    breakeven_view.print_breakeven([answer(Q.derived(2, "nodes", "s")), answer(short="never")])
    return capsys.readouterr().out


def test_narrow_terminals_get_blocks_and_wide_ones_a_table(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    narrow = printed(capsys, monkeypatch, 80)
    assert narrow.splitlines()[0] == "Break-even"
    assert "  → 2 nodes ◐" in narrow.splitlines() and "  → never" in narrow.splitlines()
    wide = printed(capsys, monkeypatch, term.WIDE)
    assert "question" in wide and "how it stands" in wide and "→" not in wide
    for text in (narrow, wide):
        assert "Whole settings are rounded in the direction that keeps the sentence true." in text
        assert term.legend().plain in text
