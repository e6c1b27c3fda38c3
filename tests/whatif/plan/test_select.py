"""Choosing from the planner's rows (`whatif/plan/select.py`): the frontier is Pareto and
complete against a brute force, and the choices on hand-made columns."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from deepep_calc.whatif.plan import select as sel
from deepep_calc.whatif.plan.select import dominated_by_any

from .small import rel


def columns(n: int, **given: Any) -> sel.Columns:
    """`n` rows that fit, split, sustain, are compared and anchored at 10 tok/s per user, 1 $/Mtok,
    100 ms TTFT and 50 $/h on one node; `given` overrides whole columns."""
    c: dict[str, Any] = dict(
        per_user=np.full(n, 10.0),
        usd_per_mtok=np.full(n, 1.0),
        ttft_ms=np.full(n, 100.0),
        usd_per_hour=np.full(n, 50.0),
        aggregate_per_node=np.full(n, 100.0),
        memory_gb=np.full(n, 10.0),
        usable_gb=np.full(n, 80.0),
        fits=np.ones(n, dtype=bool),
        split=np.ones(n, dtype=bool),
        sustainable=np.ones(n, dtype=bool),
        max_rate=np.full(n, np.inf),
        compared=np.ones(n, dtype=bool),
        nodes=np.ones(n),
        arm=np.zeros(n, dtype=np.int8),
        anchored=np.ones(n, dtype=bool),
    )
    c.update({k: np.asarray(v) for k, v in given.items()})
    return sel.Columns(**c)


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


# On hand-made columns ------------------------------------------------------------------------


def test_shortfalls_are_fractions_of_each_target() -> None:
    """Row 0 runs 10 tok/s per user against a 15 floor: 15 / 10 - 1 = 0.5 short. Row 1 costs
    100 $/h against 80 (0.25 over), serves 2 req/s of 4 (1.0 short) and needs 90 GB of 60 (0.5
    over); its TTFT of 300 ms against 200 would be 0.5 over, but it has no steady state: 0."""
    c = columns(
        2,
        per_user=[10.0, 20.0],
        ttft_ms=[100.0, 300.0],
        usd_per_hour=[50.0, 100.0],
        sustainable=[True, False],
        max_rate=[np.inf, 2.0],
        fits=[True, False],
        memory_gb=[10.0, 90.0],
        usable_gb=[80.0, 60.0],
    )
    miss = sel.shortfalls(c, sel.Goals(slo_tok_s=15.0, ttft_ms=200.0, budget_per_hour=80.0, request_rate=4.0))
    assert set(miss) == set(sel.TARGETS)
    expected = {
        "slo_tok_s": [0.5, 0.0],
        "ttft_ms": [0.0, 0.0],
        "budget_per_hour": [0.0, 0.25],
        "request_rate": [0.0, 1.0],
        "memory": [0.0, 0.5],
    }
    for name, want in expected.items():
        np.testing.assert_allclose(miss[name], want, rtol=1e-12, err_msg=name)


def test_no_target_no_shortfall_and_an_unknown_figure_misses_by_infinity() -> None:
    c = columns(2, per_user=[np.nan, 5.0], ttft_ms=[1e9, 1e9], usd_per_hour=[1e9, 1e9])
    none = sel.shortfalls(c, sel.Goals(None, None, None, None))
    assert all(not v.any() for v in none.values())
    miss = sel.shortfalls(c, sel.Goals(15.0, None, None, None))
    assert miss["slo_tok_s"][0] == np.inf and miss["slo_tok_s"][1] == pytest.approx(2.0)


def test_valid_and_meets() -> None:
    """A row is valid when compared, split and its per-user and cost figures are finite; it meets
    when also no target is missed."""
    c = columns(
        5,
        compared=[True, False, True, True, True],
        split=[True, True, False, True, True],
        usd_per_mtok=[1.0, 1.0, 1.0, np.nan, 1.0],
        per_user=[10.0, 10.0, 10.0, 10.0, 8.0],
    )
    assert sel.valid(c).tolist() == [True, False, False, False, True]
    miss = sel.shortfalls(c, sel.Goals(9.0, None, None, None))
    assert sel.meets(c, miss).tolist() == [True, False, False, False, False]


def test_best_is_the_cheapest_then_fewest_nodes_then_anchored_then_arm_order() -> None:
    c = columns(
        5,
        usd_per_mtok=[2.0, 1.0, 1.0, 1.0, 1.0],
        nodes=[1, 2, 1, 1, 1],
        anchored=[True, True, False, True, True],
        arm=[0, 0, 0, 2, 1],
    )
    assert sel.best(c, np.ones(5, dtype=bool)) == 4
    assert sel.best(c, np.array([True, True, True, False, False])) == 2  # fewer nodes before anchored
    assert sel.best(c, np.zeros(5, dtype=bool)) is None


def test_pareto_keeps_the_rows_nothing_beats_on_both_axes_cheapest_first() -> None:
    """(cost, per user): (1, 10) (2, 12) (2, 11) (3, 12) (0.5, 5). (2, 11) loses to (2, 12) and
    (3, 12) to (2, 12); the other three each win somewhere. A tie on both keeps fewer nodes."""
    x = np.array([1.0, 2.0, 2.0, 3.0, 0.5])
    y = np.array([10.0, 12.0, 11.0, 12.0, 5.0])
    every = np.ones(5, dtype=bool)
    assert sel.pareto(x, y, every, np.ones(5)).tolist() == [4, 0, 1]
    assert sel.pareto(x, y, np.array([False, False, True, True, False]), np.ones(5)).tolist() == [2, 3]
    assert sel.pareto(x, y, np.zeros(5, dtype=bool), np.ones(5)).size == 0
    tie = sel.pareto(np.array([1.0, 1.0]), np.array([5.0, 5.0]), np.ones(2, dtype=bool), np.array([4.0, 2.0]))
    assert tie.tolist() == [1]
    for i in range(5):
        assert dominated_by_any(x, y, i, every) == (i in (2, 3))


def test_the_frontiers_trade_per_user_against_cost_and_against_aggregate_per_node() -> None:
    c = columns(
        3,
        usd_per_mtok=[1.0, 2.0, 3.0],
        per_user=[10.0, 20.0, 15.0],
        aggregate_per_node=[300.0, 100.0, 200.0],
    )
    every = np.ones(3, dtype=bool)
    assert sel.frontier(c, every).tolist() == [0, 1]  # (3, 15) costs more than (2, 20)
    assert sel.frontier_per_node(c, every).tolist() == [0, 2, 1]  # most aggregate per node first


def test_nearest_sums_the_misses_one_row_per_group() -> None:
    """Totals 0.3, 0.1, 0.2, 0.1 (a tie broken by cost) and an uncompared 0.0; rows 1 and 3 share
    a group, so row 3 (the cheaper of the tie) stands for it."""
    c = columns(5, usd_per_mtok=[1.0, 2.0, 1.0, 1.5, 0.1], compared=[True, True, True, True, False])
    miss = {name: np.zeros(5) for name in sel.TARGETS}
    miss["slo_tok_s"] = np.array([0.3, 0.1, 0.1, 0.05, 0.0])
    miss["ttft_ms"] = np.array([0.0, 0.0, 0.1, 0.05, 0.0])
    group = np.array([0, 1, 2, 1, 3])
    assert sel.nearest(c, miss, group) == [3, 2, 0]
    assert sel.nearest(c, miss, group, count=1) == [3]


def test_relaxations_name_the_least_change_of_one_target_that_lets_a_row_meet_everything() -> None:
    """Floor 11 tok/s, ceiling 200 ms. Rows 0 and 1 miss only the floor (10 and 9 tok/s): the
    floor lowered to 10 meets row 0, a change of 1 - 10 / 11 = 0.091. Row 2 misses only the
    ceiling (250 ms): raised to 250, a change of 250 / 200 - 1 = 0.25."""
    c = columns(3, per_user=[10.0, 9.0, 12.0], ttft_ms=[100.0, 100.0, 250.0])
    goals = sel.Goals(11.0, 200.0, None, None)
    out = sel.relaxations(c, sel.shortfalls(c, goals), goals)
    assert [(name, i, value) for _, name, i, value in out] == [("slo_tok_s", 0, 10.0), ("ttft_ms", 2, 250.0)]
    assert [change for change, *_ in out] == pytest.approx([1 - 10 / 11, 0.25])
