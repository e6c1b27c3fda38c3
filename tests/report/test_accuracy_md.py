"""`report/accuracy_md.py`: the accuracy report as Markdown (`validate --md`, and the blocks
docs/model.md embeds): deterministic tables from a `Report` and the disaggregated rows.

A small report is built by hand from `accuracy/validate.py`'s dataclasses, so every figure in
the tables is worked out in the docstrings below; the real report's text is checked against
docs/model.md by `test_model_doc.py`. One slow test renders the real cross-validated report
(`tests/accuracy/reports.py`): the same text twice, with every section.
"""

from __future__ import annotations

import math

import pytest

from accuracy.reports import cv  # noqa: F401  (fixture)
from deepep_calc.accuracy.validate import ABRow, GroupCV, Report, Row
from deepep_calc.report import accuracy_md
from deepep_calc.report.accuracy_md import validation_markdown


@pytest.mark.parametrize(
    ("x", "shown"),
    [
        (0.0123, "+1.2 %"),
        (-0.05, "-5.0 %"),
        (0.0004, "+0.0 %"),
        (-0.0004, "+0.0 %"),
        (None, "—"),
        (math.nan, "—"),
    ],
)
def test_a_signed_error_never_reads_minus_zero(x: float | None, shown: str) -> None:
    assert accuracy_md._pct(x) == shown


def test_small_helpers() -> None:
    assert [accuracy_md._abs_pct(x) for x in (0.0123, -0.0123, None)] == ["1.2 %", "-1.2 %", "—"]
    assert [accuracy_md._num(x) for x in (9.87654, 12345.67, 0.000123, -5.0)] == [
        "9.88",
        "12,345.7",
        "0.000123",
        "-5",
    ]
    assert accuracy_md._line("a", 1, None) == "| a | 1 | None |"
    assert (accuracy_md._yes(True), accuracy_md._yes(False)) == ("yes", "no")


def kernel_row(i: int) -> Row:
    """Kernel reference i: 100 µs measured, in sample 1 + (i + 1) % high, held out (i - 4) % off."""
    return Row("kernel", f"k{i}", "total_us", 100.0, 100.0 + (i + 1), 100.0 + (i - 4), f"src {i}", True)


def hand_report() -> Report:
    rows = [kernel_row(i) for i in range(10)]
    rows.append(
        Row("kernel", "k-far", "total_us", 100.0, 190.0, None, "far", False, False, "another library")
    )
    rows.append(Row("aggregate", "cell-x", "aggregate_tok_s", 545.04, 600.0, None, "run", False, False))
    ab = [
        ABRow("right", "trtllm", ("deepep", "allgather"), "aggregate", 0.69, 0.70, None),
        ABRow(
            "wrong",
            "sglang",
            ("deepep", "allgather"),
            "aggregate",
            1.20,
            0.80,
            None,
            steady_ratio=1.3,
            note="it waited",
        ),
    ]
    return Report(
        rows=rows,
        ab=ab,
        group_cv=[GroupCV("engine", [("vllm", 4, 0.12)], note="one engine at a time")],
        not_compared=[("odd", "no such instance")],
    )


def section(md: str, title: str) -> str:
    return md.split(f"### {title}", 1)[1].split("\n### ", 1)[0]


def test_the_summary_counts_rows_and_misses_in_and_out_of_sample() -> None:
    """Ten in-scope kernel rows: in sample 1 % to 10 % off, MAPE 5.5 %; held out -4 % to +5 %,
    MAPE (4+3+2+1+0+1+2+3+4+5) / 10 = 2.5 %. The out-of-scope row counts nowhere. One A/B call of
    two agrees; none was held out, so there is no ratio error."""
    md = accuracy_md.validation_markdown(hand_report())
    summary = section(md, "Accuracy by kind of figure (in-scope rows)")
    assert "| kernel | 10 | 5.5 % | 10 | 2.5 % |" in summary
    assert "| aggregate |" not in summary
    assert "the held-out verdict agrees on 1 of 2; the largest held-out ratio error is —." in summary


def test_the_band_holds_the_held_out_misses_and_says_how_many_fall_inside() -> None:
    """With ten misses the 80 % band runs from the smallest to the largest (the 1st and the
    ceil(11 x 0.9) = 10th of ten): 0.96 to 1.05. Each left out in turn, the lowest and the highest
    fall outside the others' band: 8 of 10 inside."""
    bands = section(accuracy_md.validation_markdown(hand_report()), "Bands")
    assert "| kernel | 0.960 | 1.050 | 8 of 10 (80 %) |" in bands


def test_every_row_is_listed_with_its_scope() -> None:
    md = accuracy_md.validation_markdown(hand_report())
    kernels = section(md, "Kernels (per MoE layer)")
    assert "| k0 | total_us | 100.0 | 101.0 | +1.0 % | -4.0 % | yes | src 0 |" in kernels
    assert (
        "| k-far | total_us | 100.0 | 190.0 | +90.0 % | — | no | far (out of scope: another library) |"
        in kernels
    )
    serving = section(md, "Serving references (model, not the measured substitution)")
    assert "| cell-x (check only) | aggregate_tok_s | 545.0 | 600.0 | +10.1 % | — | no |" in serving


def test_the_ab_pairs_the_folds_and_what_was_not_compared() -> None:
    md = accuracy_md.validation_markdown(hand_report())
    ab = section(md, "A/B pairs: ratio and verdict")
    assert "| right | trtllm | aggregate | 0.690 | 0.700 | — | allgather | allgather | yes |" in ab
    assert "| wrong | sglang | aggregate | 1.200 | 0.800 | — | deepep | allgather | no |" in ab
    assert "wrong: it waited. At steady state the ratio is 1.30 [derived]" in ab
    folds = section(md, "Leave a group out")
    assert "| engine | vllm | 4 | 12.0 % |" in folds and "- by engine: one engine at a time" in folds
    assert md.endswith("### Not compared\n\n- odd: no such instance\n")


def test_an_empty_report_leaves_out_the_sections_it_has_nothing_for() -> None:
    md = accuracy_md.validation_markdown(Report())
    assert "### Bands" not in md and "### Leave a group out" not in md and "### Not compared" not in md
    assert "agrees on 0 of 0" in md


def disagg_row(kind: str, measured: float, predicted: float, in_scope: bool = True) -> Row:
    return Row(
        kind, f"{kind}-{predicted:g}", f"{kind}_ms", measured, predicted, predicted, "s", False, in_scope
    )


def test_the_disaggregated_table_its_mape_band_and_folds() -> None:
    """Three steps missed by +10 %, -10 % and 0: MAPE 6.7 %. Their logs, sorted, are ln 0.9,
    0 and ln 1.1; the 10th percentile (linear, 0.2 of the way from the first to the second) is
    0.8 ln 0.9, e^ = 0.919; the 90th, 0.8 ln 1.1, e^ = 1.079. The check-only TTFT row counts in no
    MAPE and sets no band."""
    rows = [disagg_row("step", 10.0, 11.0), disagg_row("step", 10.0, 9.0), disagg_row("step", 10.0, 10.0)]
    rows.append(disagg_row("ttft", 100.0, 150.0, in_scope=False))
    folds = [GroupCV("disaggregated, engine", [("vllm", 2, 0.123), ("sglang", 1, 0.05)])]
    md = accuracy_md.disagg_markdown(rows, folds)
    lines = md.splitlines()
    assert lines[0] == "- step: 3 compared rows, MAPE 6.7 %"
    assert (
        lines[1] == "- band outside the references' range (10th-90th percentile of model / reference): "
        "step 0.919-1.079"
    )
    assert lines[2] == "- leave one engine out: vllm 12 %, sglang 5 %"
    assert "| ttft-150 (check only) | ttft_ms | 100.0 | 150.0 | +50.0 % |" in lines
    assert sum(1 for line in lines if line.startswith("| step-")) == 3


@pytest.mark.slow
def test_markdown_is_deterministic_and_complete(cv: Report) -> None:  # noqa: F811
    a, b = validation_markdown(cv), validation_markdown(cv)
    assert a == b
    for heading in ("Accuracy by kind", "Bands", "Leave a group out", "A/B pairs", "Kernels", "Not compared"):
        assert heading in a
