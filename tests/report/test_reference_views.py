"""`report/reference_views.py`: the tool's evidence on a terminal: the measured calibration cells
beside the model (after the bare command's card) and one MoE layer's dispatch and combine (the
`kernel` command) with the parts that gate them.
"""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from deepep_calc.base.quantity import Q
from deepep_calc.estimate.kernel import kernel_query
from deepep_calc.physics.deepep import PARTS
from deepep_calc.report import reference_views, term
from deepep_calc.report.reference_views import print_calibration, print_kernel

from .rendering import WIDTHS, assert_fits, one_line, render


def test_kernel_says_its_source_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for args in (("kernel",), ("kernel", "--transport", "efa-gda", "--tokens", "64")):
        text = render(capsys, monkeypatch, 80, *args)
        source = json.loads(render(capsys, monkeypatch, 80, *args, "--json"))["dispatch_us"]["source"]
        first_words = " ".join(source.split()[:3])
        assert text.count(first_words) == 1, text
        assert text.count("[1]") == 4  # three rows point at it, the footnote carries it


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


def test_a_span_of_ratios_reads_low_high_or_one_value() -> None:
    """As printed in the table, two decimals: 0.651 and 0.649 both read 0.65, so one value."""
    qs = [Q.derived(v, "x", "r") for v in (0.69, 0.6512, 0.66)]
    assert reference_views._span(qs) == "0.65-0.69"
    assert reference_views._span([Q.derived(0.651, "x", "r"), Q.derived(0.649, "x", "r")]) == "0.65"


def test_every_kernel_part_and_gating_pipe_has_its_words() -> None:
    assert tuple(reference_views.PART_LABELS) == PARTS
    assert set(reference_views._PIPE_WORDS) == {"leaving", "messages", "wire", "nvlink"}


QUERY = {
    "transport": "efa-proxy",
    "instance": "p5en",
    "hidden": 7168,
    "topk": 8,
    "experts": 256,
    "dispatch_dtype": "fp8",
}


def kernel_view(**query: object) -> str:
    q = {**QUERY, **query}
    buf = io.StringIO()
    print_kernel(kernel_query(**q), q, Console(file=buf, width=100, color_system=None, highlight=False))
    return buf.getvalue()


def test_one_node_rides_nvlink_and_one_token_is_singular() -> None:
    """EP8 on an 8-GPU p5en stays in the node: the title names NVLink whatever the transport, no
    published run is at that shape, and NVLink gates both directions."""
    text = kernel_view(ep=8, tokens=1)
    assert text.splitlines()[0] == "NVLink on p5en, EP8: 1 token/rank, hidden 7168, top-8 of 256, fp8"
    assert "Published runs" not in text
    assert "Gates: dispatch NVLink, combine NVLink." in " ".join(text.split())


def test_a_published_cell_lists_its_runs_and_marks_the_one_shown() -> None:
    """EFA proxy, EP16, 128 tokens a rank: the reference cell, published more than once."""
    text = " ".join(kernel_view(ep=16, tokens=128).split())
    assert text.startswith("efa-proxy on p5en, EP16: 128 tokens/rank")
    runs = text.split("Published runs of this cell: ", 1)[1].split(" (▸ is the one above).", 1)[0]
    assert runs.count("▸") == 1 and runs.count(" µs (") >= 2


def test_the_calibration_table_is_the_trtllm_ab_cells_with_the_models_figures() -> None:
    buf = io.StringIO()
    print_calibration(Console(file=buf, width=200, color_system=None, highlight=False))
    text = buf.getvalue()
    assert text.startswith("Measured cells: TRT-LLM, Qwen3-30B-A3B-FP8, 2x p5en, EP16, eager")
    # TRT-LLM cells with an allgather leg, in the calibration or anchor role: the four A/B cells
    # (the shim cells have no allgather leg; vllm-ab-decode-c32 is vLLM's)
    ids = [line.split()[0] for line in text.splitlines() if line.startswith(("trt-", "vllm-", "sglang-"))]
    assert ids == ["trt-ab-k1-c4", "trt-ab-k8-c4", "trt-ab-k8-c32", "trt-ab-k8-c16-isl2048"]
    assert "Per-user ratio " in text and "One run per cell (n = 1)." in " ".join(text.split())
    assert "Sources" in text and term.legend().plain in text
