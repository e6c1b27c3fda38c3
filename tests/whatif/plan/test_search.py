"""The planner's search (`whatif/plan/search.py`, `run_plan`): no cheaper configuration is
missed, the single changes it suggests when nothing meets the targets work, and its size."""

from __future__ import annotations

import pytest

from deepep_calc.whatif.plan import MEASURED_ONLY
from deepep_calc.whatif.plan import select as sel
from deepep_calc.whatif.plan.request import default_engines, default_instances
from deepep_calc.whatif.plan.scan import RATE_PASSES
from deepep_calc.whatif.plan.search import _fmt_target, default_size, goals, plan_request, plan_size, run_plan

from .small import SMALL, rel

# The answer ---------------------------------------------------------------------------------


def test_no_cheaper_configuration_meets_the_targets_by_brute_force(small, brute):
    meeting = [b for b in brute if b["meets"]]
    assert meeting, "the small space must have an answer for this test to bite"
    cheapest = min(b["cost"] for b in meeting)
    assert rel(small.best.figures["usd_per_mtok"].scalar, cheapest) < 1e-9
    # and the brute force agrees on which configuration that is
    winner = min(meeting, key=lambda b: b["cost"])
    assert winner["arm"] == small.best.arm
    assert small.searched == len(brute)


# Nothing meets, and the single change -------------------------------------------------------


def test_an_unreachable_floor_says_so_and_the_suggested_floor_is_met():
    p = run_plan(plan_request(**dict(SMALL, slo_tok_s=100_000.0)))
    assert p.best is None
    assert p.changes[0].startswith("lower --slo-tok-s to ")
    assert "Nothing in the search meets every target" in p.note
    assert all(not m.meets_targets for m in p.nearest_misses) and p.nearest_misses
    floor = float(p.changes[0].rsplit(" ", 1)[1])
    assert run_plan(plan_request(**dict(SMALL, slo_tok_s=floor))).best is not None


def test_a_budget_below_the_cheapest_node_suggests_the_budget_that_works():
    p = run_plan(plan_request(**dict(SMALL, budget_per_hour=1.0)))
    assert p.best is None
    assert p.changes[0].startswith("raise --budget-per-hour to ")
    budget = float(p.changes[0].rsplit(" ", 1)[1])
    ok = run_plan(plan_request(**dict(SMALL, budget_per_hour=budget)))
    assert ok.best is not None and ok.best.usd_per_hour.scalar <= budget


def test_a_model_too_big_for_the_node_limit_suggests_more_nodes():
    p = run_plan(
        plan_request(model="kimi-k2", isl=1024, osl=256, concurrency=256, instances="p5", max_nodes=1)
    )
    assert p.best is None
    assert "raise --max-nodes to" in " ".join(p.changes)
    assert all("GB per GPU" in " ".join(m.misses) for m in p.nearest_misses)


def test_progress_is_reported_and_larger_plans_are_larger():
    seen: list[tuple[int, int]] = []
    req = plan_request(**dict(SMALL, max_nodes=2))
    run_plan(req, lambda done, total: seen.append((done, total)))
    assert seen and all(d <= t for d, t in seen)
    assert [d for d, _ in seen] == list(range(1, len(seen) + 1))
    default = plan_request(model="deepseek-v3", concurrency=64)
    assert plan_size(default) == default_size(default)
    assert plan_size(plan_request(model="deepseek-v3", request_rate=2.0)) > default_size(default)
    assert plan_size(plan_request(model="deepseek-v3", concurrency=64, max_nodes=32)) > default_size(default)


# The answer's parts -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [
        ("slo_tok_s", 12.37, "lower --slo-tok-s to 12.3"),  # a floor goes down to a tenth
        ("slo_tok_s", 12.0, "lower --slo-tok-s to 12"),
        ("ttft_ms", 2000.2, "raise --ttft-ms to 2001"),  # a ceiling up to a whole ms
        ("ttft_ms", 2000.0, "raise --ttft-ms to 2000"),
        ("budget_per_hour", 98.761, "raise --budget-per-hour to 98.77"),  # up to a cent
        ("request_rate", 3.456, "lower --request-rate to 3.45"),  # down to a hundredth
    ],
)
def test_a_target_change_is_rounded_so_the_configuration_still_meets_it(
    name: str, value: float, text: str
) -> None:
    assert _fmt_target(name, value) == text


def test_a_plans_size_counts_families_node_counts_and_rate_passes() -> None:
    """A BF16 model (two dtypes) on two instances with one engine up to 3 nodes: 2 x 1 x 2 x 3 =
    12; a rate plan takes `RATE_PASSES` (4) passes of each: 48. The default plan: every EFA
    instance and engine, 16 nodes."""
    fields = dict(model="qwen3-235b-a22b", instances="p5,p5en", engines="vllm", max_nodes=3)
    assert plan_size(plan_request(**fields, concurrency=8)) == 12
    assert plan_size(plan_request(**fields, request_rate=2.0)) == 12 * RATE_PASSES == 48
    default = plan_request(model="qwen3-235b-a22b", concurrency=8)
    assert default_size(default) == len(default_instances()) * len(default_engines()) * 2 * 16


def test_the_targets_selection_compares_against_are_the_requests() -> None:
    req = plan_request(model="deepseek-v3", request_rate=2.5, slo_tok_s=20, ttft_ms=900, budget_per_hour=300)
    assert goals(req) == sel.Goals(slo_tok_s=20.0, ttft_ms=900.0, budget_per_hour=300.0, request_rate=2.5)


def test_the_json_answer_and_its_price_kinds(small) -> None:
    doc = small.to_json()
    assert doc["searched"] == small.searched and doc["skipped"] == small.skipped
    assert doc["best"] == small.best.to_json() and len(doc["frontier"]) == len(small.frontier)
    assert doc["measured_only_rule"] == MEASURED_ONLY  # the rule the command's help states
    assert doc["price_kinds"] == {
        "ranked": ["on-demand", "capacity-block", "quote"],  # --price-kinds all
        "mixed_on_purpose": True,
        "by_instance": {"p5": "capacity-block", "p5en": "on-demand"},
    }


def test_the_cloud_samples_other_compared_configurations_never_a_frontier_point(small) -> None:
    cloud = small.cloud(20)
    assert 0 < len(cloud) <= 20
    frontier = {p.label for p in small.frontier}
    assert not any(p.label in frontier for p in cloud)
    scalar = {id(p) for p in small.builder.cache.values()}  # rows already re-evaluated keep that
    light = [p for p in cloud if id(p) not in scalar]
    assert light and all(p.figures["per_user_tok_s"].source == "vectorised model" for p in light)
