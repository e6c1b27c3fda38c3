"""Terminal views at 80 columns (what a pipe gets) and at 200: nothing cut, nothing too wide.

Every view is rendered through the CLI with COLUMNS set, the way a user's shell would. The
checks: no line is wider than the terminal, rich never had to cut a cell (no ellipsis), every
id and number the JSON holds appears whole on one line, tags are markers with a legend, and a
wide terminal gets the optional columns back.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from rich.console import Console

from cli_runner import run_cli
from deepep_calc import Scenario, evaluate
from deepep_calc.report import term
from deepep_calc.report.reference_views import print_calibration

WIDTHS = (80, 200)
VIEWS = [
    ("models",),
    ("instances",),
    ("transports",),
    ("models", "--sources"),
    ("instances", "--sources"),
    ("transports", "--sources"),
    ("kernel",),
    ("kernel", "--transport", "efa-gda", "--tokens", "64"),
    ("validate",),
    ("validate", "--sources"),
    ("breakeven",),
    ("breakeven", "--model", "deepseek-v3", "--nodes", "4", "--concurrency", "256"),
    pytest.param(("sensitivity",), marks=pytest.mark.slow),  # a refit per end of every spread
]


def render(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int, *args: str
) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    return out


def assert_fits(text: str, width: int) -> None:
    lines = text.splitlines()
    assert lines, "nothing printed"
    too_wide = [line for line in lines if len(line) > width]
    assert too_wide == [], f"{len(too_wide)} line(s) wider than {width}: {too_wide[0]!r}"
    assert "…" not in text, next(line for line in lines if "…" in line)


def one_line(text: str, token: str) -> bool:
    return any(token in line for line in text.splitlines())


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("args", VIEWS, ids=lambda a: " ".join(a))
def test_view_fits_and_cuts_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int, args: tuple[str, ...]
) -> None:
    text = render(capsys, monkeypatch, width, *args)
    assert_fits(text, width)
    assert "[measured]" not in text and "[assumed]" not in text  # markers, not words in brackets
    if any(mark in text for mark in "●◐○"):  # a view that marks tags explains the markers
        assert "● measured  ◐ derived  ○ assumed" in text  # the legend, once


@pytest.mark.parametrize("width", WIDTHS)
def test_catalog_ids_and_numbers_are_whole(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    models = render(capsys, monkeypatch, width, "models")
    for row in json.loads(render(capsys, monkeypatch, width, "models", "--json")):
        assert one_line(models, row["name"]), row["name"]
        assert one_line(models, f"{row['kv_bytes_per_token']:,}")
        assert one_line(models, f"{row['weights_gb']:,.1f}")
    instances = render(capsys, monkeypatch, width, "instances")
    for row in json.loads(render(capsys, monkeypatch, width, "instances", "--json")):
        assert one_line(instances, row["name"])
        if row["price_per_hour"] is not None:
            assert one_line(instances, f"{row['price_per_hour']:,.2f}")
    transports = render(capsys, monkeypatch, width, "transports")
    for row in json.loads(render(capsys, monkeypatch, width, "transports", "--json")):
        assert one_line(transports, row["name"])
        assert one_line(transports, f"{row['reference']['total_us']:,.1f} ●")


def test_headers_carry_units_not_snake_case(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = render(capsys, monkeypatch, 80, "models") + render(capsys, monkeypatch, 80, "instances")
    assert "hbm tb s" not in text and "network gb s" not in text and "_" not in text.split("\n", 3)[1]
    assert "TB/s" in text and "Gb/s/node" in text and "per token" in text


def test_a_wider_terminal_gets_more_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    narrow = render(capsys, monkeypatch, 80, "models")
    wide = render(capsys, monkeypatch, 200, "models")
    assert "Hugging Face id" in wide and "deepseek-ai/DeepSeek-V3" in wide
    assert "Hugging Face id" not in narrow
    assert "AWS name" in render(capsys, monkeypatch, 200, "instances")
    assert "runs on" in render(capsys, monkeypatch, 200, "transports")


def test_kernel_says_its_source_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for args in (("kernel",), ("kernel", "--transport", "efa-gda", "--tokens", "64")):
        text = render(capsys, monkeypatch, 80, *args)
        source = json.loads(render(capsys, monkeypatch, 80, *args, "--json"))["dispatch_us"]["source"]
        first_words = " ".join(source.split()[:3])
        assert text.count(first_words) == 1, text
        assert text.count("[1]") == 4  # three rows point at it, the footnote carries it


def test_catalog_sources_come_with_sources(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = render(capsys, monkeypatch, 80, "models")
    listed = render(capsys, monkeypatch, 80, "models", "--sources")
    assert "--sources" in plain and "Sources" not in plain
    assert "Sources" in listed
    flat = " ".join(listed.split())
    for row in json.loads(render(capsys, monkeypatch, 80, "models", "--json")):
        assert " ".join(row["source"].split()) in flat, row["name"]


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


@pytest.mark.parametrize("width", WIDTHS)
def test_measured_cells_table_after_the_card(width: int) -> None:
    buf = io.StringIO()
    print_calibration(Console(file=buf, width=width, color_system=None, highlight=False))
    text = buf.getvalue()
    assert_fits(text, width)
    for cell in ("trt-ab-k1-c4", "trt-ab-k8-c4", "trt-ab-k8-c32", "trt-ab-k8-c16-isl2048"):
        assert one_line(text, cell)
    assert one_line(text, "19.62 ●") and one_line(text, "27.57 ●") and one_line(text, "14.7 ◐")
    assert ("ISL" in text) is (width >= term.WIDE)


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


def test_marker_legend_explains_every_marker() -> None:
    legend = term.legend().plain
    for tag, mark in term.TAG_MARK.items():
        assert f"{mark} {tag}" in legend
    assert len(legend) <= 80


def test_sentence_turns_bracketed_tags_into_markers() -> None:
    text = term.sentence("DeepEP 19.6 tok/s [measured] vs 27.6 tok/s [measured]: a tax of 14.7 ms [derived].")
    assert text.plain == "DeepEP 19.6 tok/s ● vs 27.6 tok/s ●: a tax of 14.7 ms ◐."
    assert term.sentence("no tags [here]").plain == "no tags [here]"


# error bands on the card (issue 9) -----------------------------------------------------------


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


def test_a_band_keeps_four_significant_digits() -> None:
    from deepep_calc.report.view import band_digits

    assert band_digits(1130.9, 1291.4, 1) == 0  # thousands: whole numbers
    assert band_digits(760.3, 901.7, 1) == 1  # hundreds: the figure's one decimal
    assert band_digits(10.10, 12.93, 2) == 2  # never more than the figure's own decimals
    assert band_digits(0.84, 1.20, 2) == 2
    assert band_digits(79_000.0, 81_000.0, 0) == 0


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


def test_a_wide_transports_table_shows_each_library_and_cost_per_selection(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    wide = render(capsys, monkeypatch, 200, "transports")
    for row in json.loads(render(capsys, monkeypatch, 200, "transports", "--json")):
        line = next(x for x in wide.splitlines() if x.startswith(row["name"] + " "))
        assert f" {row['library']} " in line
        beta = f"{row['beta_dispatch_us']:.3f} / {row['beta_combine_us']:.3f}"
        # NVLink-only EP sends nothing off the node: its row shows no cost per remote selection
        assert (beta in line) != (row["fabric"] == "nvlink"), line
    assert "library" not in render(capsys, monkeypatch, 80, "transports").split("\n", 3)[2]


# issue #26 smaller items: row labels, footnotes and source lines at any width ------------------


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


@pytest.mark.parametrize(
    "args", [["kernel"], ["kernel", "--transport", "efa-gda"], ["models"], ["models", "--sources"]]
)
def test_footnotes_and_source_lines_fit_80_columns(monkeypatch, capsys, args: list[str]) -> None:
    from rich.cells import cell_len

    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(capsys, *args)
    assert code == 0
    lines = out.splitlines()
    assert all(cell_len(line) < 80 for line in lines), [line for line in lines if cell_len(line) >= 80]
    assert not any(line != line.rstrip() for line in lines if line.startswith(("[", " ")) and "[" in line[:5])
    if args == ["models"]:  # the footnote is a whole sentence
        assert "* the routed experts' dtype; the rest of the model is in bf16" in lines
    if args[0] == "kernel":  # the source is whole, wrapped at a space and continued under itself
        joined = " ".join(line.strip() for line in out.split("Sources", 1)[1].splitlines() if line.strip())
        assert "QP cap 2, cached handle" in joined or "[1]" in joined
