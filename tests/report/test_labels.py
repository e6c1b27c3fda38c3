"""A step part has one name: the card, the page's chart and the provenance table agree."""

from __future__ import annotations

import io

from rich.console import Console

from deepep_calc import Scenario, evaluate
from deepep_calc.report.charts import step_breakdown
from deepep_calc.report.labels import STEP_LABELS
from deepep_calc.report.terminal import print_result
from deepep_calc.report.view import provenance_rows


def test_compute_is_named_as_time_beyond_hbm_everywhere() -> None:
    result = evaluate(Scenario())
    assert set(result.arms["deepep"].breakdown_ms) <= set(STEP_LABELS)
    label = STEP_LABELS["compute"]
    assert "beyond HBM" in label

    buf = io.StringIO()
    print_result(result, Console(file=buf, width=160, color_system=None))
    card = buf.getvalue()
    assert label in card
    assert not any(
        line.split("│")[2].strip() == "step: compute" for line in card.splitlines() if line.count("│") > 3
    )

    legend = [t["name"] for t in step_breakdown(result)["data"] if t["type"] == "bar"]
    assert label in legend
    assert any(label in r["where"] for r in provenance_rows(result.to_json()))
