"""The planner: its answer is evaluate()'s, no cheaper configuration is missed, the frontier is
Pareto, Little's law holds at the solved load, and the single changes it suggests work."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import numpy as np
import pytest

from deepep_calc.api import evaluate
from deepep_calc.base.errors import CalcError
from deepep_calc.catalog.transports import load_transports
from deepep_calc.estimate.compute import compute
from deepep_calc.question.fields import DEFAULTS
from deepep_calc.question.scenario import Scenario, resolve
from deepep_calc.whatif.plan.evidence import anchored, evidence
from deepep_calc.whatif.plan.search import default_size, plan_request, plan_size, run_plan
from deepep_calc.whatif.plan.select import dominated_by_any

FIGURES = ("per_user_tok_s", "aggregate_tok_s", "ttft_ms", "usd_per_mtok", "memory_gb_per_gpu")

# A small space a scalar loop can cover: a BF16 model (so FP8 is searched too), two instances,
# two engines, up to three nodes; aggregated layouts (the xPyD splits have their own brute force,
# tests/whatif/test_plan_disagg.py).
SMALL = dict(
    layouts="aggregated",
    model="qwen3-235b-a22b",
    isl=1024,
    osl=256,
    concurrency=128,
    slo_tok_s=12.0,
    ttft_ms=3000.0,
    instances="p5,p5en",
    engines="vllm,sglang",
    max_nodes=3,
    price_kinds="all",  # p5 has a Capacity Block price, p5en an on-demand one: rank both on purpose
)


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


@pytest.fixture(scope="module")
def small():
    return run_plan(plan_request(**SMALL))


def brute_force(**kw: Any) -> list[dict[str, Any]]:
    """Every configuration of the small space, one scalar `compute` each (no planner code)."""
    out = []
    for inst in kw["instances"].split(","):
        transports = [t for t in load_transports().values() if inst in t.instances and t.fabric != "nvlink"]
        for engine in kw["engines"].split(","):
            for dtype in (None, "fp8"):
                for nodes in range(1, kw["max_nodes"] + 1):
                    for graphs in (False, True):
                        cases = [
                            ("allgather", "allgather", transports[0].name, 8),
                            ("tp", "tp", transports[0].name, 8),
                        ]
                        if nodes > 1:
                            cases.append(("replica", "allgather", transports[0].name, 8))
                            for t in transports:
                                for k in (1, 2, 4, 8) if t.comms_sensitive else (8,):
                                    cases.append(("deepep", "allgather", t.name, k))
                        else:
                            cases.append(("deepep", "allgather", "nvlink", 8))
                        for arm, alternative, transport, comms in cases:
                            config = dict(
                                model=kw["model"],
                                instance=inst,
                                nodes=nodes,
                                engine=engine,
                                cuda_graphs=graphs,
                                transport=transport,
                                alternative=alternative,
                                comms=comms,
                                concurrency=kw["concurrency"],
                                isl=kw["isl"],
                                osl=kw["osl"],
                                weight_dtype=dtype,
                                slo_tok_s=kw.get("slo_tok_s"),
                                ttft_ms=kw.get("ttft_ms"),
                            )
                            a = compute(resolve(Scenario(**config))).arms[arm]
                            meets = (
                                bool(a.feasible)
                                and (a.meets_slo is None or bool(a.meets_slo))
                                and (a.meets_ttft is None or bool(a.meets_ttft))
                            )
                            out.append(
                                dict(
                                    config=config,
                                    arm=arm,
                                    cost=float(a.usd_per_mtok.value),
                                    pu=float(a.per_user_tok_s.value),
                                    feasible=bool(a.feasible),
                                    meets=meets,
                                )
                            )
    return out


@pytest.fixture(scope="module")
def brute():
    return brute_force(**SMALL)


# The answer ---------------------------------------------------------------------------------


def test_best_reevaluated_gives_the_same_figures_and_meets_the_targets(small):
    best = small.best
    assert best is not None and best.meets_targets
    result = evaluate(Scenario(**best.config))
    arm = result.arms[best.arm]
    data = best.to_json()
    for name in FIGURES:
        assert rel(data[name]["value"], float(getattr(arm, name).value)) < 1e-9, name
        assert data[name]["tag"] == str(getattr(arm, name).tag)
    assert arm.feasible and arm.meets_slo and arm.meets_ttft
    assert data["per_user_tok_s"]["value"] >= SMALL["slo_tok_s"]
    assert data["ttft_ms"]["value"] <= SMALL["ttft_ms"]
    assert "low" in data["usd_per_mtok"] and data["usd_per_mtok"]["low"] < data["usd_per_mtok"]["value"]


def test_no_cheaper_configuration_meets_the_targets_by_brute_force(small, brute):
    meeting = [b for b in brute if b["meets"]]
    assert meeting, "the small space must have an answer for this test to bite"
    cheapest = min(b["cost"] for b in meeting)
    assert rel(small.best.figures["usd_per_mtok"].scalar, cheapest) < 1e-9
    # and the brute force agrees on which configuration that is
    winner = min(meeting, key=lambda b: b["cost"])
    assert winner["arm"] == small.best.arm
    assert small.searched == len(brute)


def test_the_frontier_is_monotone_and_complete_against_brute_force(small, brute):
    front = [(p.figures["usd_per_mtok"].scalar, p.figures["per_user_tok_s"].scalar) for p in small.frontier]
    assert len(front) >= 2
    costs = [c for c, _ in front]
    users = [u for _, u in front]
    assert costs == sorted(costs)
    assert all(b > a for a, b in itertools.pairwise(users))  # strictly better per user
    for i, (c, u) in enumerate(front):  # no point in the set dominates another
        for j, (c2, u2) in enumerate(front):
            assert i == j or not (c2 <= c and u2 >= u and (c2 < c or u2 > u))
    feasible = [b for b in brute if b["feasible"]]
    for c, u in front:  # nothing in the whole space dominates a frontier point
        assert not any(b["cost"] <= c * (1 - 1e-12) and b["pu"] >= u * (1 + 1e-12) for b in feasible)
    for b in feasible:  # and every non-dominated configuration is on the frontier (or ties one)
        if not any(
            o["cost"] <= b["cost"] and o["pu"] >= b["pu"] and (o["cost"] < b["cost"] or o["pu"] > b["pu"])
            for o in feasible
        ):
            assert any(rel(b["cost"], c) < 1e-9 and rel(b["pu"], u) < 1e-9 for c, u in front)


def test_every_frontier_point_is_non_dominated_in_the_whole_search(small):
    c = small.scan.cols
    from deepep_calc.whatif.plan import select as sel

    eligible = sel.valid(c) & c.fits & c.sustainable
    rows = sel.frontier(c, eligible)
    for i in rows:
        assert not dominated_by_any(c.usd_per_mtok, c.per_user, int(i), eligible)
    per_node = sel.frontier_per_node(c, eligible)
    for i in per_node:
        assert not dominated_by_any(-c.aggregate_per_node, c.per_user, int(i), eligible)


def test_vectorised_rows_equal_scalar_evaluations(small):
    """The search's own figures (not only the printed points) are evaluate()'s."""
    from deepep_calc.whatif.plan.search import config_of

    s = small.scan
    rng = random.Random(7)
    rows = rng.sample(range(s.search.size), 40)
    t = s.search.rows
    from deepep_calc.whatif.plan.space import ARMS

    for i in rows:
        config = config_of(small.request, s.search, s.rows, i)
        arm = compute(resolve(Scenario(**config))).arms[ARMS[int(s.rows["arm"][i])]]
        for name in FIGURES:
            want = float(getattr(arm, name).value)
            got = float(t.values[name][i])
            assert (math.isnan(want) and math.isnan(got)) or rel(want, got) < 1e-9, (config, name)
        assert bool(t.fits[i]) == bool(arm.fits_memory)


def test_a_measured_cell_in_the_search_carries_the_measurement():
    """At the default scenario the plan's figures are the measured cell's, as evaluate()'s are."""
    p = run_plan(
        plan_request(
            model="qwen3-30b-a3b-fp8",
            isl=120,
            osl=128,
            concurrency=32,
            instances="p5en",
            engines="trtllm",
            max_nodes=2,
        )
    )
    c = p.scan.cols
    idx = [
        i
        for i in range(p.scan.search.size)
        if p.scan.rows["nodes"][i] == 2
        and not p.scan.rows["graphs"][i]
        and p.scan.rows["arm"][i] == 0
        and p.scan.rows["comms"][i] == 8
        and p.scan.search.block_of(i).transport == "efa-proxy"
    ]
    assert len(idx) == 1
    i = idx[0]
    cell = evaluate(Scenario()).arms["deepep"]
    assert cell.measured_cell is not None
    assert rel(float(c.per_user[i]), float(cell.per_user_tok_s.value)) < 1e-12
    assert int(p.scan.search.rows.tags["per_user_tok_s"][i]) == int(cell.per_user_tok_s.tag)


# Request rate ---------------------------------------------------------------------------------

RATE = dict(SMALL, concurrency=None, request_rate=4.0, ttft_ms=None)


@pytest.fixture(scope="module")
def rate_plan():
    return run_plan(plan_request(**RATE))


def _service_ms(p: Any, osl: int) -> float:
    f = p.to_json()
    return f["ttft_ms"]["value"] + (osl - 1) * 1000.0 / f["per_user_tok_s"]["value"]


def test_littles_law_holds_at_the_solution(rate_plan):
    points = [rate_plan.best, *rate_plan.frontier]
    assert rate_plan.best is not None
    r = RATE["request_rate"] / 1000.0
    for p in points:
        n = p.config["concurrency"]
        load = r * _service_ms(p, RATE["osl"])
        assert p.sustainable
        assert load <= n < load + 1.0 + 1e-9, (p.label, n, load)  # N = R x service, to one sequence
        # the least such N: one sequence fewer cannot hold the load
        if n > 1:
            fewer = dict(p.config, concurrency=n - 1)
            a = compute(resolve(Scenario(**fewer))).arms[p.arm]
            service = float(a.ttft_ms.value) + (RATE["osl"] - 1) * float(a.step_ms.value)
            assert n - 1 < r * service


def test_every_row_of_the_rate_search_satisfies_littles_law(rate_plan):
    s = rate_plan.scan
    v = s.search.rows.values
    n = s.search.rows.concurrency
    load = RATE["request_rate"] / 1000.0 * (v["ttft_ms"] + (RATE["osl"] - 1) * v["step_ms"])
    ok = s.rate.sustainable
    assert ok.sum() > 100
    assert np.all(n[ok] >= load[ok] - 1e-9) and np.all(n[ok] < load[ok] + 1.0 + 1e-9)
    assert np.all(s.rate.max_rate_per_s[ok] >= RATE["request_rate"] * (1 - 1e-9))
    assert np.all(s.rate.max_rate_per_s[~ok] < RATE["request_rate"])


@pytest.mark.slow
def test_an_unsustainable_rate_is_marked_not_given_a_latency():
    p = run_plan(plan_request(**dict(RATE, request_rate=50_000.0, slo_tok_s=None)))
    assert p.best is None
    assert p.nearest_misses and not p.frontier
    for m in p.nearest_misses:
        data = m.to_json()
        assert data["sustainable"] is False and data["meets_targets"] is False
        assert data["ttft_ms"]["value"] is None  # no steady state, so no TTFT
        assert any("req/s" in text for text in data["misses"])
        assert data["max_request_rate"]["value"] < 50_000.0
    assert p.changes and p.changes[0].startswith("lower --request-rate to ")
    lowered = float(p.changes[0].rsplit(" ", 1)[1])
    again = run_plan(plan_request(**dict(RATE, request_rate=lowered, slo_tok_s=None)))
    assert again.best is not None and again.best.sustainable  # the suggested change works


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


# Honesty: evidence, prices, --measured-only ------------------------------------------------


def test_measured_only_keeps_anchored_configurations_only(small):
    p = run_plan(plan_request(**dict(SMALL, measured_only=True)))
    assert 0 < p.searched < small.searched
    assert p.skipped_reasons.get("outside the measured evidence (--measured-only)", 0) > 0
    for point in [p.best, *p.frontier]:
        if point is None:
            continue
        assert point.evidence == "anchored" and point.arm != "tp"
        c = point.config
        assert anchored(c["instance"], c["engine"], c["cuda_graphs"], point.arm, c["transport"], c["nodes"])
    ev = evidence()
    assert ("p5en", "efa-proxy") in ev.kernel and ("p6-b300", "efa-gda") not in ev.kernel
    assert ("trtllm", False) in ev.serving and ("trtllm", True) not in ev.serving


def test_points_outside_the_evidence_say_so(small):
    assumed = [p for p in [small.best, *small.frontier] if p.evidence == "assumed"]
    for p in assumed:
        assert any("(assumed)" in n or "borrowed" in n for n in p.notes)
    tp = [p for p in small.frontier if p.arm == "tp"]
    for p in tp:
        assert p.evidence == "assumed"


def test_an_instance_without_a_price_is_skipped_with_the_reason_and_a_price_brings_it_in():
    base = dict(model="deepseek-v3", isl=1024, osl=256, concurrency=64, engines="vllm", max_nodes=2)
    p = run_plan(plan_request(**dict(base, instances="p5en,p6-b300")))
    reason = [r for r in p.skipped_reasons if "p6-b300" in r]
    assert reason and "--price-per-hour p6-b300=" in reason[0]
    assert all(pt.config["instance"] != "p6-b300" for pt in p.frontier)
    with pytest.raises(CalcError, match="nothing left to search"):
        run_plan(plan_request(**dict(base, instances="p6-b300")))
    priced = run_plan(plan_request(**dict(base, instances="p6-b300", price_per_hour="p6-b300=100")))
    assert priced.best is not None and priced.best.config["price_per_hour"] == 100.0
    again = evaluate(Scenario(**priced.best.config)).arms[priced.best.arm]
    assert rel(priced.best.figures["usd_per_mtok"].scalar, float(again.usd_per_mtok.value)) < 1e-9


# Input ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "field", "text"),
    [
        ({"concurrency": 4, "request_rate": 1.0}, "--request-rate", "not both"),
        ({}, "--concurrency", "give the load"),
        ({"request_rate": -2.0}, "--request-rate", "greater than 0"),
        ({"request_rate": float("nan")}, "--request-rate", "greater than 0"),
        ({"concurrency": 0}, "--concurrency", "greater than 0"),
        ({"concurrency": 4, "instances": "p5,p7"}, "--instances", "'p7'"),
        ({"concurrency": 4, "instances": "p5,,p5en"}, "--instances", "no empty items"),
        ({"concurrency": 4, "engines": "tgi"}, "--engines", "'tgi'"),
        ({"concurrency": 4, "max_nodes": 0}, "--max-nodes", "greater than 0"),
        ({"concurrency": 4, "max_nodes": 5000}, "--max-nodes", "at most"),
        ({"concurrency": 4, "slo_tok_s": 0.0}, "--slo-tok-s", "greater than 0"),
        ({"concurrency": 4, "budget_per_hour": -1.0}, "--budget-per-hour", "greater than 0"),
        ({"concurrency": 4, "price_per_hour": "p5=abc"}, "--price-per-hour", "a number"),
        ({"concurrency": 4, "price_per_hour": "p9=3"}, "--price-per-hour", "'p9'"),
        ({"concurrency": 4, "price_per_hour": "cheap"}, "--price-per-hour", "NAME=PRICE"),
        ({"concurrency": 4, "model": "no-such-model"}, "--model", "no-such-model"),
    ],
)
def test_bad_input_is_one_line_naming_the_flag(fields, field, text):
    with pytest.raises(CalcError) as info:
        plan_request(**fields)
    assert info.value.field == field
    assert text in info.value.message and "\n" not in info.value.message


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


def test_config_names_are_exactly_scenario_fields(small):
    for p in [small.best, *small.frontier]:
        assert set(p.config) <= set(Scenario.field_names())
        assert Scenario(**p.config).max_qps == DEFAULTS["max_qps"]


def test_docs_state_the_anchored_pairs_the_catalog_has():
    """docs/plan.md lists the kernel-anchored instance x transport pairs: they must not drift."""
    documented = {
        ("p5", "efa-proxy"), ("p5en", "efa-proxy"),
        ("p5en", "efa-gda"), ("p6-b200", "efa-gda"),
        ("p5en", "efa-nvshmem"), ("p6-b200", "efa-nvshmem"),
        ("p5en", "efa-uccl"), ("p6-b200", "efa-uccl"),
        ("p5en", "efa-pplx"), ("p5en", "efa-native-cqpoll"),
        ("ib-h800", "ib-ibgda"),
    }  # fmt: skip
    assert set(evidence().kernel) == documented
    assert set(evidence().one_node) == {
        ("p5en", "deepep-v1"), ("p6-b300", "deepep-v1"), ("ib-h800", "deepep-v1"),
        ("p5en", "deepep-v2"), ("p5en", "uccl-ep"), ("p5en", "pplx-garden"),
    }  # fmt: skip
    assert set(evidence().serving) == {
        ("trtllm", False),
        ("vllm", False),
        ("vllm", True),
        ("sglang", False),
        ("sglang", True),
    }


def test_a_batch_limit_is_part_of_every_configuration_and_caps_the_rate():
    base = dict(model="deepseek-v3", isl=1024, osl=256, instances="p5en", engines="vllm", max_nodes=2)
    p = run_plan(plan_request(**base, concurrency=256, max_batch=4))
    assert p.best.config["max_batch"] == 4
    arm = evaluate(Scenario(**p.best.config)).arms[p.best.arm]
    assert rel(p.best.figures["usd_per_mtok"].scalar, float(arm.usd_per_mtok.value)) < 1e-9
    assert arm.running.scalar < 256  # the limit binds: the rest queue
    free = run_plan(plan_request(**base, request_rate=2.0))
    capped = run_plan(plan_request(**base, request_rate=2.0, max_batch=1))
    assert capped.scan.rate.max_rate_per_s.max() < free.scan.rate.max_rate_per_s.max()
