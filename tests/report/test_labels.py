"""`report/labels.py`: the words for the arms, the parts of a decode step, what bounds it and
the parts of GPU memory, shared by every face. A step part has one name: the card, the page's
chart and the provenance table agree; every part the model produces has words, and none twice."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from deepep_calc import Scenario, evaluate
from deepep_calc.base import palette
from deepep_calc.base.vocabulary import REPLICA_LAYOUTS
from deepep_calc.decide.verdict import ARM_LABELS
from deepep_calc.physics.bounds import BOUNDS
from deepep_calc.report import labels
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


def test_every_part_the_model_produces_has_distinct_words() -> None:
    """Step parts are the arms' `breakdown_ms` keys (and the chart's colours), bounds are
    `physics/bounds.BOUNDS`, memory parts the page's memory colours."""
    result = evaluate(Scenario(model="deepseek-v3", nodes=4, transport="efa-gda"))
    assert set(STEP_LABELS) == set(result.arms["deepep"].breakdown_ms) == set(palette.BREAKDOWN)
    assert set(labels.BOUND_SHORT) == set(BOUNDS)
    assert set(labels.MEMORY_LABELS) == set(palette.MEMORY)
    for table in (STEP_LABELS, labels.BOUND_SHORT, labels.MEMORY_LABELS):
        assert len(set(table.values())) == len(table)


def test_a_step_part_without_words_keeps_its_key_spaced() -> None:
    assert labels.step_label("hbm") == "HBM reads"
    assert labels.step_label("new_kind_of_part") == "new kind of part"


@pytest.mark.parametrize(
    ("arm", "transport", "nodes", "layout", "head"),
    [
        ("deepep", "efa-proxy", 2, "", "DeepEP (efa-proxy)"),
        ("deepep", "efa-proxy", 1, "", "DeepEP (NVLink)"),  # one node: every peer is in the node
        ("allgather", "efa-gda", 4, "", "allgather"),
        ("tp", "efa-gda", 4, "", "tensor parallel"),
        ("replica", "efa-proxy", 2, "replica", "single-node replicas"),  # allgather inside: no suffix
        ("replica", "efa-proxy", 2, "replica:deepep", "single-node replicas (DeepEP NVLink)"),
        ("replica", "efa-proxy", 2, "replica:tp", "single-node replicas (TP)"),
        ("replica", "efa-proxy", 2, ["replica", "replica:tp"], "single-node replicas"),  # differs row by row
    ],
)
def test_an_arms_head_names_its_route_or_its_one_node_layout(
    arm: str, transport: str, nodes: int, layout: object, head: str
) -> None:
    assert labels.arm_head(arm, transport, nodes, layout) == head


def test_every_replica_layout_but_allgathers_has_a_suffix() -> None:
    assert set(labels.REPLICA_SUFFIX) == set(REPLICA_LAYOUTS) - {"replica"}
    assert labels.arm_head("allgather", "efa-proxy", 2) == ARM_LABELS["allgather"]
