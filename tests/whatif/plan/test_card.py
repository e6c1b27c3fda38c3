"""`plan` and the card under it agree (issue #26 item 4; `whatif/plan/card.py`).

The card printed under a plan is the plan's choice: an arm the plan left out (`--measured-only`,
no price) is left out of the card too, and when the verdict's rule picks another arm on the
chosen cluster (the noise band, like with like) the plan takes that arm. Exactly one launch
block follows, the plan's, complete (the command, not bare flags); `--measured-only` keeps this.
The card finds each arm's row on the chosen cluster with `row_of`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cli_runner import run_cli
from deepep_calc.question.fields import DEFAULTS
from deepep_calc.whatif.plan.card import card_for, row_of
from deepep_calc.whatif.plan.scan import config_of
from deepep_calc.whatif.plan.search import plan_request, run_plan
from deepep_calc.whatif.plan.space import ARMS

PLANS = [
    {"model": "glm-4.5", "concurrency": 64, "measured_only": True},  # DeepEP NVLink left out on p5
    {"model": "glm-4.5", "concurrency": 256, "measured_only": True},
    {"model": "qwen3-30b-a3b-fp8", "concurrency": 16},
    {"model": "qwen3-30b-a3b-fp8", "concurrency": 16, "measured_only": True},
    {"model": "deepseek-v3", "concurrency": 64, "isl": 1024, "osl": 256, "slo_tok_s": 20},
    {"model": "qwen3-235b-a22b", "concurrency": 64, "instances": "p5en", "max_nodes": 4},
]


def _same_arm(card_arm: str, plan_arm: str, nodes: int) -> bool:
    return card_arm == plan_arm or (nodes == 1 and {card_arm, plan_arm} == {"replica", "allgather"})


@pytest.mark.parametrize("fields", PLANS, ids=lambda f: "-".join(str(v) for v in f.values()))
def test_the_card_under_a_plan_recommends_the_plans_choice(fields: dict[str, Any]) -> None:
    plan = run_plan(plan_request(**fields))
    assert plan.best is not None
    card = card_for(plan)
    assert card is not None
    v = card.verdict
    assert _same_arm(v.recommended_arm, plan.best.arm, plan.best.config["nodes"]), (
        v.headline,
        plan.best.label,
    )
    assert v.flags["launch"]["command"] == plan.best.flags["launch"]["command"]
    assert v.flags["env"] == plan.best.flags["env"]
    if fields.get("measured_only"):  # what the plan left out, the card leaves out and says so
        for arm in card.arms.values():
            if arm.why_code == "left out":
                assert "--measured-only" in arm.why_not
                assert any("is left out by --measured-only" in r for r in v.reasons)


@pytest.mark.slow
@pytest.mark.parametrize("measured_only", [False, True])
def test_the_cli_prints_one_complete_launch_block(capsys, measured_only: bool) -> None:
    args = ["plan", "--model", "glm-4.5", "--concurrency", "64"] + (
        ["--measured-only"] if measured_only else []
    )
    code, out, _ = run_cli(capsys, *args)
    assert code == 0
    assert out.count("Run it (") == 1 and out.count("# start the server") == 1
    assert "Run the plan's choice" not in out and "The card recommends" not in out
    code, doc, _ = run_cli(capsys, *args, "--json")
    best = json.loads(doc)["best"]
    command = best["flags"]["launch"]["command"]
    block = out.split("# start the server\n```sh\n", 1)[1].split("\n```", 1)[0]
    assert block == command  # the plan's own command, complete
    card = out.split("╭", 1)[1]
    star = next(line for line in card.splitlines() if "★" in line)
    label = {"deepep": "DeepEP", "allgather": "allgather", "tp": "tensor parallel", "replica": "replicas"}
    assert f"{label[best['arm']]} ★" in star, star


def _rows(plan: Any) -> list[tuple[int, str, dict[str, Any]]]:
    """(row, arm, configuration) of every aggregated row of a plan."""
    s = plan.scan
    return [
        (i, ARMS[int(s.rows["arm"][i])], config_of(plan.request, s.search, s.rows, i))
        for i in range(s.search.size)
    ]


def test_row_of_finds_each_arm_on_the_same_cluster(small: Any) -> None:
    """The same family, nodes and graph mode; DeepEP keeps the row's transport and EP_NUM_COMMS
    (NVLink on one node), the other arms sit at the default EP_NUM_COMMS, and on one node a
    replica is the allgather deployment."""
    rows = _rows(small)
    cluster = ("instance", "engine", "weight_dtype", "nodes", "cuda_graphs")

    def same(i: int, j: int | None) -> bool:
        assert j is not None
        return all(rows[i][2][k] == rows[j][2][k] for k in cluster)

    one = next(i for i, arm, c in rows if arm == "allgather" and c["nodes"] == 1 and c["instance"] == "p5en")
    nvlink = row_of(small.scan, one, "deepep", "efa-gda")
    assert same(one, nvlink) and rows[nvlink][1] == "deepep" and rows[nvlink][2]["transport"] == "nvlink"
    assert row_of(small.scan, one, "replica") == row_of(small.scan, one, "allgather") == one
    two = next(
        i
        for i, arm, c in rows
        if arm == "deepep"
        and c["nodes"] == 2
        and c["transport"] == "efa-proxy"
        and c["comms"] == 4
        and c["instance"] == "p5en"
    )
    for arm in ("allgather", "tp", "replica"):
        j = row_of(small.scan, two, arm)
        assert same(two, j) and rows[j][1] == arm and rows[j][2]["comms"] == DEFAULTS["comms"]
    assert row_of(small.scan, two, "deepep", "efa-proxy") == two
    assert row_of(small.scan, two, "deepep", "efa-gda") is None  # efa-gda ignores K: one row, at 8
    gda = row_of(small.scan, row_of(small.scan, two, "allgather"), "deepep", "efa-gda")
    assert same(two, gda) and rows[gda][2]["transport"] == "efa-gda"
