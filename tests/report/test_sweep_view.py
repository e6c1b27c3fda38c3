"""`report/sweep_view.py`: what `sweep` and `sensitivity` print on a terminal: a sweep's summary
(rows, rate, the verdict and recommended-arm counts, where the files went) and the tornado table
with its one-line judgement.

The summary and the tornado's rows are built by hand (`whatif/sweep/run.py: SweepSummary`,
`whatif/sensitivity.py: Case, Row`), so each printed figure is worked out here. The real
`sensitivity` view's fit at 80 and 200 columns is `test_term.py`'s (slow: a refit per end).
"""

from __future__ import annotations

import pytest

from deepep_calc.base.quantity import Q
from deepep_calc.report import sweep_view, term
from deepep_calc.whatif.sensitivity import Case, Row
from deepep_calc.whatif.sweep.run import SweepSummary


def summary(**changes: object) -> SweepSummary:
    fields = {
        "rows": 1000,
        "combinations": 4,
        "chunks": 2,
        "seconds": 0.5,
        "verdicts": {"dense": 750, "deepep": 250},
        "recommended": {"allgather": 600, "deepep": 250, "replica": 150},
        "output": None,
        "map": None,
        "swept": {},
    }
    return SweepSummary(**(fields | changes))


def test_the_summary_counts_rows_rate_and_shares(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 rows in 0.5 s is 2,000 rows/s; 750 of 1,000 dense is 75.0 %."""
    monkeypatch.setenv("COLUMNS", "100")
    sweep_view.print_sweep_summary(summary())
    text = capsys.readouterr().out
    assert text.splitlines()[0] == "1,000 scenarios in 4 combination(s), 2 pass(es), 0.50 s (2,000 rows/s)"
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in text.splitlines() if line.startswith("│")]
    assert rows == [
        ["dense", "750", "75.0%"],
        ["deepep", "250", "25.0%"],
        ["allgather", "600"],
        ["deepep", "250"],
        ["replica", "150"],
    ]
    assert "write every row with -o out.csv (or .parquet), a map with --map map.html" in text


def test_where_the_files_went_and_the_summary_beside_rows_on_stdout(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    sweep_view.print_sweep_summary(summary(output="-", map="m.html", bound_map="b\x1b.png"), to_stderr=True)
    out, err = capsys.readouterr()
    assert out == ""  # the rows own stdout
    lines = err.splitlines()
    assert "rows: stdout" in lines and "verdict map: m.html" in lines
    assert "bound map: b\\x1b.png" in lines  # a path is printed with its control characters escaped
    assert "write every row" not in err


def row(label: str, low: str, high: str, versus: tuple[str, str] = ("deepep", "allgather")) -> Row:
    """An assumption of 5 ± 2 us, the ratio 0.800 at its low end and 1.100 at its high end."""
    case = Case(key=label, label=label, base=Q.assumed(5.0, "us", "s"), spread=2.0, low=3.0, high=7.0)
    return Row(
        case,
        "dense",
        Q.assumed(0.9, "x", "r"),
        Q.assumed(0.8, "x", "r"),
        Q.assumed(1.1, "x", "r"),
        low,
        high,
        versus,
    )


def tornado(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int, rows: list[Row]
) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    sweep_view.print_sensitivity(rows)
    return capsys.readouterr().out


def test_the_tornado_shows_each_end_and_whether_it_flips(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [row("proxy cost", "dense", "deepep"), row("launch cost", "dense", "dense")]
    narrow = tornado(capsys, monkeypatch, 80, rows)
    flips = next(line for line in narrow.splitlines() if line.startswith("proxy cost"))
    assert (
        "5 ± 2 us" in flips and "0.800 ■" in flips and "1.100 ▲" in flips and flips.rstrip().endswith("YES")
    )
    steady = next(line for line in narrow.splitlines() if line.startswith("launch cost"))
    assert steady.rstrip().endswith("no")
    assert "Verdict is fragile: flips to ▲ deepep if proxy cost is 7 (assumed 5 ± 2)" in narrow
    wide = tornado(capsys, monkeypatch, term.WIDE, rows)
    assert "3 → 0.800 ■" in wide and "7 → 1.100 ▲" in wide  # a wide table names the ends' values
    assert "3 → " not in narrow


def test_the_ratio_note_names_the_comparison_that_decided(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = " ".join(
        tornado(capsys, monkeypatch, 100, [row("x", "dense", "dense", ("deepep", "replica"))]).split()
    )
    assert (
        "ratio = the model's aggregate, DeepEP / single-node replicas (the comparison that decided) ○" in text
    )
    assert "Verdict is robust: no assumed constant at either end of its stated spread flips it" in text
    replicas_led = " ".join(
        tornado(capsys, monkeypatch, 100, [row("x", "dense", "dense", ("replica", "allgather"))]).split()
    )
    assert "single-node replicas / allgather (the comparison that decided)" in replicas_led


def test_no_rows_still_prints_the_table_and_the_judgement(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = " ".join(tornado(capsys, monkeypatch, 100, []).split())
    assert (
        "Sensitivity of the verdict" in text and "DeepEP / allgather" in text and "Verdict is robust" in text
    )
