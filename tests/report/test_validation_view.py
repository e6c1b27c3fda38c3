"""`report/validation_view.py`: what `validate` prints: accuracy per kind of figure, the A/B calls,
the largest misses, the leave-a-group-out folds and the disaggregated deployments, in tables that
fit 80 columns.

The real report is rendered through the CLI (`rendering.py`); a small report built by hand
(`accuracy/validate.py`'s dataclasses) pins which rows each table takes and how it words them.
"""

from __future__ import annotations

import json
import math
import re

import pytest

from deepep_calc.accuracy.validate import ABRow, GroupCV, Report, Row
from deepep_calc.report import validation_view

from .rendering import WIDTHS, assert_fits, one_line, render


def test_validate_sources_are_numbered_footnotes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = render(capsys, monkeypatch, 80, "validate", "--sources")
    refs = set(re.findall(r"\[(\d+)\]", text.split("Sources")[0]))
    notes = re.findall(r"^ *\[(\d+)\] ", text.split("Sources")[-1], flags=re.M)
    assert refs and refs == set(notes)


@pytest.mark.parametrize("width", WIDTHS)
def test_validate_keeps_cell_ids_whole(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    text = render(capsys, monkeypatch, width, "validate")
    report = json.loads(render(capsys, monkeypatch, width, "validate", "--json"))
    for row in report["ab"]:
        assert one_line(text, row["pair"]), row["pair"]
    assert one_line(text, "trt-ab-k8-c16-isl2048") and one_line(text, "sglang-deepep-vs-uccl-c256")


@pytest.mark.parametrize(
    ("x", "shown"),
    [(1234.6, "1,235"), (-2000.0, "-2,000"), (12.3456, "12.35"), (0.123456, "0.1235"), (999.94, "999.9")],
)
def test_a_reference_figure_keeps_four_significant_digits(x: float, shown: str) -> None:
    assert validation_view._published(x) == shown


@pytest.mark.parametrize(
    ("x", "shown"), [(0.0123, "+1.2 %"), (-0.5, "-50.0 %"), (None, "—"), (math.nan, "—")]
)
def test_an_error_is_a_signed_percentage_or_a_dash(x: float | None, shown: str) -> None:
    assert validation_view._pct(x) == shown


def kernel_row(i: int, error: float, in_scope: bool = True) -> Row:
    return Row(
        "kernel", f"ref-{i}", "total_us", 100.0, 100.0 * (1 + error), None, f"source {i}", True, in_scope
    )


def hand_report() -> Report:
    """Ten in-scope kernel rows missing by 1 % to 10 %, one out of scope missing by 90 %; an A/B
    pair the model calls right (0.69 measured, 0.70 model: both below 1 - 5 %, allgather) and one
    it calls wrong (1.20 against 0.80); two compared disaggregated steps and one check-only."""
    rows = [kernel_row(i, (i + 1) / 100) for i in range(10)] + [kernel_row(99, 0.9, in_scope=False)]
    ab = [
        ABRow("pair-right", "trtllm", ("deepep", "allgather"), "aggregate", 0.69, 0.70, None),
        ABRow(
            "pair-wrong",
            "sglang",
            ("deepep", "allgather"),
            "aggregate",
            1.20,
            0.80,
            None,
            steady_ratio=1.3,
            note="the first wave waited 10 s",
        ),
    ]
    disagg = [
        Row("step", "d1", "step_ms", 10.0, 11.0, None, "s", False),
        Row("step", "d2", "step_ms", 10.0, 9.0, None, "s", False),
        Row("ttft", "d3", "ttft_ms", 100.0, 150.0, None, "s", False, in_scope=False),
    ]
    return Report(
        rows=rows,
        ab=ab,
        group_cv=[GroupCV("engine", [("vllm", 4, 0.12), ("sglang", 3, 0.2)])],
        not_compared=[("odd-ref", "no such instance")],
        disaggregated=disagg,
    )


def printed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, sources: bool = False
) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    validation_view.print_report(hand_report(), sources)
    return capsys.readouterr().out


def test_the_largest_misses_are_the_eight_worst_in_scope_rows(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = printed(capsys, monkeypatch)
    assert_fits(text, 80)
    misses = text.split("Largest misses", 1)[1]
    shown = re.findall(r"^ref-(\d+)", misses, flags=re.M)
    assert shown == ["9", "8", "7", "6", "5", "4", "3", "2"]  # 10 % down to 3 %; ref-99 is out of scope
    assert one_line(misses, "total_us") and one_line(misses, "+10.0 %")


def test_the_ab_table_the_folds_and_the_notes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = printed(capsys, monkeypatch)
    right = next(line for line in text.splitlines() if line.startswith("pair-right"))
    assert right.split()[1:] == ["0.69", "0.70", "—", "allgather", "allgather"]
    wrong = next(line for line in text.splitlines() if line.startswith("pair-wrong"))
    assert wrong.split()[-2:] == ["deepep", "allgather"]
    flat = " ".join(text.split())
    assert "pair-wrong: the first wave waited 10 s. At steady state the ratio is 1.30 [derived]" in flat
    assert "leave one engine out: vllm 12 %, sglang 20 %" in text
    assert "run with --cv for the out-of-sample errors" in text  # not cross-validated
    assert "not compared: odd-ref: no such instance" in text
    assert "sources of every row: deepep-calc validate --sources" in text


def test_the_disaggregated_table_counts_compared_and_check_only_rows(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Steps missed by +10 % and -10 %: MAPE 10.0 %; the TTFT row is check-only (no MAPE)."""
    text = printed(capsys, monkeypatch)
    assert "Disaggregated deployments (never fitted)" in " ".join(text.split())
    table = text.rsplit("\nfigure ", 1)[1]  # the last table's header
    rows = {
        line.split()[0]: line.split()[1:]
        for line in table.splitlines()
        if line.split()[:1] in (["step"], ["ttft"], ["aggregate"])
    }
    assert rows == {"step": ["2", "10.0", "%", "0"], "ttft": ["0", "—", "1"], "aggregate": ["0", "—", "0"]}


def test_sources_become_numbered_footnotes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = printed(capsys, monkeypatch, sources=True)
    assert "[8] source 2" in text and "source 1" not in text  # only the rows shown
    assert "--sources (or --json)" not in text
