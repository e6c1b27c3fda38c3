"""`report/terminal.py`: the verdict card, the arms side by side with a tag on every number and a
band on every modelled headline figure, the comparison that decided, a disaggregated split, and
the run block outside it.

The card is rendered through the CLI at 80 and 200 columns (`rendering.py`) and directly on a
console; its wording helpers (`step_words`, `target_rows`, `status_text`, `banded_text`) are
checked on figures worked by hand.
"""

from __future__ import annotations

import io
import json
import re
from functools import cache
from types import SimpleNamespace

import pytest
from rich.console import Console

from cli_runner import run_cli
from deepep_calc import Scenario, evaluate
from deepep_calc.base.quantity import Q
from deepep_calc.base.vocabulary import VERDICT_CODES
from deepep_calc.estimate.result import Result
from deepep_calc.report import term, terminal

from .rendering import WIDTHS, assert_fits, one_line, render


@pytest.mark.parametrize("width", WIDTHS)
def test_card_shows_bands_that_match_the_close_call(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    """A close call quotes the ratio's band; the card's comparison line shows the same band, the
    headline figures show theirs (inline when wide, on a line below at 80), and a legend says
    what a band is. Nothing wider than the terminal."""
    from deepep_calc.report.view import BAND_LEGEND_SHORT, band_range

    text = render(capsys, monkeypatch, width, "evaluate", "--transport", "efa-gda")
    assert_fits(text, width)
    doc = json.loads(render(capsys, monkeypatch, width, "evaluate", "--transport", "efa-gda", "--json"))
    v = doc["verdict"]
    assert v["close_call"]
    band = re.search(r"error band (\d\.\d\d–\d\.\d\d×)", v["headline"]).group(1)
    assert band == band_range(v["compared"]["ratio"], 2)
    flat = " ".join(text.split())
    assert f"aggregate 1.00× ○ (band {band})" in flat
    agg = band_range(doc["arms"]["deepep"]["aggregate_tok_s"], 1)
    assert one_line(text, f"({agg})")
    if width >= term.WIDE:
        replica = doc["arms"]["replica"]["aggregate_tok_s"]
        assert one_line(text, f"{replica['value']:,.1f} tok/s ○ ({band_range(replica, 1)})")
    assert BAND_LEGEND_SHORT in text and len(BAND_LEGEND_SHORT) <= 76


@pytest.mark.parametrize("width", WIDTHS)
def test_a_card_of_four_digit_figures_cuts_no_band(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    """DeepSeek-V3 on four nodes has aggregates above 1,000 tok/s in every arm: each band is
    printed whole, at four significant digits (`(1,131–1,292)`, or `(804–4,159)` for a
    combination no reference covers), not cut by the column."""
    from deepep_calc.report.view import band_range

    args = ("evaluate", "--model", "deepseek-v3", "--nodes", "4", "--concurrency", "100")
    text = render(capsys, monkeypatch, width, *args)
    assert_fits(text, width)
    doc = json.loads(render(capsys, monkeypatch, width, *args, "--json"))
    for arm in doc["arms"].values():
        q = arm["aggregate_tok_s"]
        assert q["value"] > 1000 and "low" in q
        band = band_range(q, 1)
        assert re.fullmatch(r"(\d,\d{3}|\d{3})–\d,\d{3}", band), band
        assert one_line(text, f"({band})")


def test_measured_figures_carry_no_band(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the calibration cell DeepEP and allgather are measured (no band); the replicas are not."""
    text = render(capsys, monkeypatch, 200, "evaluate")
    line = next(ln for ln in text.splitlines() if ln.strip("│ ").startswith("aggregate"))
    assert "545.0 tok/s ●" in line and "545.0 tok/s ● (" not in line
    assert "794.6 tok/s ●" in line and "794.6 tok/s ● (" not in line
    replica = evaluate(Scenario()).arms["replica"].aggregate_tok_s.scalar
    assert re.search(rf"{replica:,.1f} tok/s ○ \(\d".replace(".", r"\."), line), line


def test_bare_command_at_80_columns_has_whole_cell_ids(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = render(
        capsys,
        monkeypatch,
        80,
    )
    assert "trt-a…" not in text and "tok/s/…" not in text and "[measu…" not in text
    assert one_line(text, "trt-ab-k8-c16-isl2048")


@pytest.mark.slow
def test_a_card_row_label_never_wraps() -> None:
    """The step-part labels wrapped to a second line at 120-122 columns only."""
    from rich.cells import cell_len

    from deepep_calc import Scenario, evaluate
    from deepep_calc.report.labels import STEP_LABELS
    from deepep_calc.report.terminal import print_result

    result = evaluate(Scenario(model="glm-4.5", transport="efa-gda", nodes=2, slo_tok_s=12, ttft_ms=300))
    labels = ["per-user decode", "max concurrency", "KV tokens / GPU", "floor 12 tok/s/user"]
    labels += [f"step: {v}" for v in STEP_LABELS.values()]
    for width in range(100, 161):
        buf = io.StringIO()
        print_result(result, Console(file=buf, width=width, no_color=True, highlight=False))
        card = buf.getvalue().split("Run it")[0]
        assert all(cell_len(line) <= width for line in card.splitlines()), width
        missing = [label for label in labels if label not in card]
        assert missing == [], (width, missing)


# the card's words, on figures worked by hand ----------------------------------------------------


@pytest.mark.parametrize(
    ("ratio", "tax", "words"),
    [
        (0.69, 14.7, "tax 14.7 ms/token [derived]"),
        (1.2, 3.0, "step 3.0 ms/token longer [derived], made up by TTFT and batch size"),
        (0.9, -2.5, "saves 2.5 ms/token [derived]"),
        (1.2, -2.5, "saves 2.5 ms/token [derived]"),
        (1.0, 0.0, "same step [derived]"),
    ],
)
def test_the_step_beside_the_ratio_never_seems_to_clash_with_it(ratio: float, tax: float, words: str) -> None:
    """A positive tax beside a ratio above 1 is a longer step that the aggregate makes up for; a
    negative one is a saving."""
    assert terminal.step_words(Q.derived(ratio, "x", "r"), Q.derived(tax, "ms/token", "t")) == words


def test_each_target_the_scenario_sets_gets_a_row() -> None:
    both = SimpleNamespace(slo_tok_s=12.0, ttft_ms=300.0)
    assert terminal.target_rows(both) == [
        ("floor 12 tok/s/user", "slo_status"),
        ("TTFT ceiling 300 ms", "ttft_status"),
    ]
    assert terminal.target_rows(SimpleNamespace(slo_tok_s=None, ttft_ms=None)) == []


@pytest.mark.parametrize(
    ("status", "style"), [("meets", "green"), ("misses", "red"), ("within the band", "yellow"), (None, "dim")]
)
def test_a_target_status_is_coloured_by_what_it_says(status: str | None, style: str) -> None:
    text = terminal.status_text(status)
    assert text.plain == (status or "n/a") and str(text.style) == style


def test_a_modelled_figure_carries_its_band_inline_or_below_and_a_measured_one_none() -> None:
    """869.14 tok/s assumed, band 757.68-910.57: one decimal, the band at four significant digits."""
    q = Q.assumed(869.14, "tok/s", "model").with_band(757.68, 910.57)
    assert terminal.banded_text(q, 1, inline=True).plain == "869.1 tok/s ○ (757.7–910.6)"
    assert terminal.banded_text(q, 1, inline=False).plain == "869.1 tok/s ○\n(757.7–910.6)"
    measured = Q.measured(545.04, "tok/s", "cell")
    assert terminal.banded_text(measured, 1, inline=True).plain == "545.0 tok/s ●"
    assert terminal.qtext(None).plain == "—"


def test_every_verdict_has_its_card_style() -> None:
    assert set(terminal.VERDICT_STYLE) == set(VERDICT_CODES)


@cache
def _result(**fields: object) -> Result:
    return evaluate(Scenario(**fields))


def card(result: Result, width: int) -> str:
    buf = io.StringIO()
    terminal.print_result(result, Console(file=buf, width=width, color_system=None, highlight=False))
    return buf.getvalue()


def test_a_card_under_100_columns_drops_the_step_parts_and_says_where_they_are() -> None:
    narrow, wide = card(_result(), 99), card(_result(), 100)
    assert "(step parts and KV capacity: a terminal of 100+ columns, or --json)" in narrow
    assert "step: HBM reads" not in narrow and "KV tokens / GPU" not in narrow
    assert "step: HBM reads" in wide and "KV tokens / GPU" in wide and "or --json)" not in wide


def test_the_comparison_line_names_the_replicas_when_they_decided() -> None:
    """DeepSeek-V3 on SGLang with CUDA graphs: the replicas won, so the line sets DeepEP against
    them, on the model's figures of both (nothing is measured there)."""
    text = " ".join(
        card(_result(model="deepseek-v3", nodes=2, engine="sglang", cuda_graphs=True), 200).split()
    )
    assert re.search(
        r"DeepEP / single-node replicas: aggregate \d\.\d\d× ○ \(band \d\.\d\d–\d\.\d\d×\)", text
    )
    assert "(model figures of both arms; DeepEP wins above" in text


def test_when_nothing_fits_the_card_has_no_robustness_line_and_no_run_block() -> None:
    text = card(_result(model="kimi-k2", nodes=1), 120)
    assert "Run it: nothing runs as asked; apply a change above first." in text
    assert "Verdict is " not in text and "```" not in text
    assert "no: HBM" in text  # the feasible row says why, in a word


def test_a_disaggregated_card_shows_the_split_and_its_run_blocks() -> None:
    text = card(_result(model="deepseek-v3", prefill_nodes=1, decode_nodes=3), 160)
    assert re.search(r"Disaggregated 1P3D: 1 prefill \+ 3 decode node\(s\), KV over \S+ \(", text)
    assert "A request's time: " in text and "prefill side" in text and "decode side" in text
    assert "Run it disaggregated (1P3D, KV over " in text


def test_the_run_block_is_fenced_and_unboxed() -> None:
    buf = io.StringIO()
    flags = _result().verdict.flags
    terminal.print_run_block(flags, Console(file=buf, width=80, color_system=None))
    text = buf.getvalue()
    assert text.startswith(f"Run it ({flags['engine']}, allgather): paste each block as it is")
    assert text.count("```") % 2 == 0 and text.count("```") >= 2
    assert "│" not in text


def test_card_shows_the_split_and_its_run_blocks(capsys):
    code, out, _ = run_cli(capsys, "evaluate", "--disagg", "1P1D", "--model", "deepseek-v3")
    assert code == 0
    assert "Disaggregated 1P1D" in out and "prefill side" in out and "A request's time" in out
    assert "Run it disaggregated (1P1D" in out
