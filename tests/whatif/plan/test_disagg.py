"""The planner's xPyD splits (`whatif/plan/disagg.py`): re-evaluated with `evaluate` they give the
same figures, and a brute force over a small space (every split, side layout, graph mode and KV
transport, one scalar evaluation each, no planner code) finds nothing cheaper that meets the
targets. The prefill rows' Pareto cut, on hand-made rows."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.base.quantity import Q
from deepep_calc.catalog.kv_transports import kv_transports_for
from deepep_calc.catalog.transports import load_transports
from deepep_calc.estimate.disagg import compute_with_disagg
from deepep_calc.question.scenario import resolve
from deepep_calc.whatif.plan.disagg import SideRows, _pareto_prefill, plan_disagg
from deepep_calc.whatif.plan.scan import config_of
from deepep_calc.whatif.plan.search import plan_request, run_plan

from .small import FIGURES, rel

SMALL = dict(
    model="qwen3-30b-a3b-fp8",
    isl=2048,
    osl=256,
    concurrency=64,
    slo_tok_s=15.0,
    ttft_ms=2000.0,
    instances="p5en",
    engines="vllm",
    max_nodes=3,
    layouts="disaggregated",
)


@pytest.fixture(scope="module")
def small():
    return run_plan(plan_request(**SMALL))


def side_layouts(instance: str, nodes: int) -> list[tuple[str, str | None, bool, int | None]]:
    """(arm, DeepEP transport, CUDA graphs, EP_NUM_COMMS or None) of one side."""
    out = []
    for graphs in (False, True):
        out += [("allgather", None, graphs, None), ("tp", None, graphs, None)]
        if nodes == 1:
            out.append(("deepep", "nvlink", graphs, None))
            continue
        out.append(("replica", None, graphs, None))
        for t in load_transports().values():
            if instance in t.instances and t.fabric != "nvlink":
                for k in (1, 2, 4, 8) if t.comms_sensitive else (None,):
                    out.append(("deepep", t.name, graphs, k))
    return out


def brute_force(kw: dict[str, Any]) -> list[dict[str, Any]]:
    inst, engine = kw["instances"], kw["engines"]
    out = []
    kvs = [t.name for t in kv_transports_for(engine, inst)]  # every one, the TCP paths included
    for p in range(1, kw["max_nodes"]):
        for d in range(1, kw["max_nodes"] - p + 1):
            for pre, dec in itertools.product(side_layouts(inst, p), side_layouts(inst, d)):
                if pre[3] is not None and dec[3] is not None and pre[3] != dec[3]:
                    continue  # one EP_NUM_COMMS per scenario
                comms = dec[3] or pre[3] or 8
                for kvt in kvs:
                    config = dict(
                        model=kw["model"],
                        instance=inst,
                        engine=engine,
                        concurrency=kw["concurrency"],
                        isl=kw["isl"],
                        osl=kw["osl"],
                        slo_tok_s=kw["slo_tok_s"],
                        ttft_ms=kw["ttft_ms"],
                        comms=comms,
                        cuda_graphs=dec[2],
                        prefill_nodes=p,
                        decode_nodes=d,
                        kv_transport=kvt,
                        prefill_arm=pre[0],
                        decode_arm=dec[0],
                        prefill_transport=pre[1],
                        decode_transport=dec[1],
                        prefill_cuda_graphs=pre[2],
                        decode_cuda_graphs=dec[2],
                    )
                    dd = compute_with_disagg(resolve(Scenario(**config))).disaggregated
                    meets = (
                        bool(dd.feasible)
                        and dd.per_user_tok_s.value >= kw["slo_tok_s"]
                        and dd.ttft_ms.value <= kw["ttft_ms"]
                    )
                    out.append({"config": config, "cost": dd.usd_per_mtok.value, "meets": meets})
    return out


def test_the_plan_has_splits_and_marks_them(small):
    data = small.to_json()
    points = data["frontier"] + ([data["best"]] if data["best"] else [])
    assert points and all(p["disaggregated"] for p in points)
    assert all(p["layout"].endswith("D") and "P" in p["layout"] for p in points)
    assert all(p["arm"] in ("deepep", "allgather", "tp", "replica") for p in points)  # the decode side's
    assert data["space"]["layouts"] == "disaggregated"


def test_the_best_split_reevaluated_gives_the_same_figures(small):
    best = small.best
    assert best is not None and best.meets_targets and best.layout
    d = evaluate(Scenario(**best.config)).disaggregated
    for name in FIGURES:
        q = getattr(d, name)
        assert rel(best.figures[name].scalar, q.scalar) < 1e-9, name
        assert best.figures[name].tag == q.tag
    assert best.flags["disaggregated"]["layout"] == best.layout


def test_every_split_row_is_evaluates_own_figures(small):
    """The vectorised rows equal the scalar model, row by row (a sample)."""
    s = small.scan
    first = s.search.size
    rows = np.arange(first, first + s.search.disagg.size)
    rng = np.random.default_rng(28)
    for i in rng.choice(rows, size=min(40, rows.size), replace=False):
        config = config_of(small.request, s.search, s.rows, int(i))
        d = compute_with_disagg(resolve(Scenario(**config))).disaggregated
        for name in FIGURES:
            table = float(s.search.rows.values[name][i])
            model = getattr(d, name).scalar
            assert (np.isnan(table) and np.isnan(model)) or rel(table, model) < 1e-9, (name, config)


@pytest.mark.slow
def test_brute_force_finds_nothing_cheaper_that_meets_the_targets(small):
    brute = brute_force(SMALL)
    meeting = [b for b in brute if b["meets"]]
    assert meeting, "the small space must have an answer for this test to bite"
    cheapest = min(b["cost"] for b in meeting)
    assert small.best is not None
    assert small.best.figures["usd_per_mtok"].scalar <= cheapest * (1 + 1e-9)
    assert rel(small.best.figures["usd_per_mtok"].scalar, cheapest) < 1e-9


def test_aggregated_and_split_layouts_are_searched_together():
    plan = run_plan(plan_request(**{**SMALL, "layouts": "all", "slo_tok_s": None, "ttft_ms": None}))
    layouts = {p.layout or "aggregated" for p in plan.frontier}
    assert plan.searched > run_plan(plan_request(**{**SMALL, "layouts": "aggregated"})).searched
    assert layouts  # the frontier holds whichever win; both kinds were compared
    pinned = run_plan(plan_request(**{**SMALL, "disagg": "1P2D"}))
    assert all(p.layout == "1P2D" for p in pinned.frontier)


def test_a_rate_plan_searches_aggregated_layouts_only():
    plan = run_plan(plan_request(**{**SMALL, "layouts": "all", "concurrency": None, "request_rate": 2.0}))
    assert plan.scan.search.disagg is None
    assert "aggregated layouts only" in plan.to_json()["space"]["disaggregated_note"]


def _side(nodes: list[int], capacity: list[float], prefill_ms: list[float], ok: list[bool]) -> SideRows:
    """Prefill rows of one KV layout (one holder, no shard), figures given; the rest placeholders."""
    n = len(nodes)
    figures = {
        "ok": np.array(ok),
        "capacity": Q.assumed(np.array(capacity), "req/s", "given"),
        "prefill_ms": Q.assumed(np.array(prefill_ms), "ms", "given"),
        "holders": np.ones(n),
        "kv_shard": np.ones(n),
    }
    zeros = np.zeros(n)
    return SideRows(
        np.array(nodes, dtype=float), zeros, zeros, zeros, zeros, np.zeros(n, dtype=bool), figures
    )


def test_a_prefill_row_beaten_on_capacity_and_time_by_one_of_its_node_count_is_dropped() -> None:
    """On one node: (capacity 10, 5 ms) is kept; (8, 6 ms) loses on both; (12, 7 ms) is slower but
    holds more, kept; (12, 8 ms) holds no more than it and is slower; (10, 5 ms) again ties the
    first, which stands for it. On two nodes (4, 9 ms) is kept, worse though it is: it competes
    only with its own node count. A row that cannot run is dropped."""
    side = _side(
        nodes=[1, 1, 1, 1, 1, 2, 1],
        capacity=[10.0, 8.0, 12.0, 12.0, 10.0, 4.0, 50.0],
        prefill_ms=[5.0, 6.0, 7.0, 8.0, 5.0, 9.0, 1.0],
        ok=[True, True, True, True, True, True, False],
    )
    assert _pareto_prefill(side).tolist() == [0, 2, 5]


def test_no_split_rows_for_a_rate_an_aggregated_search_or_fewer_than_two_nodes() -> None:
    concurrency = plan_request(**SMALL)
    assert (
        plan_disagg(
            plan_request(**{**SMALL, "concurrency": None, "request_rate": 2.0, "layouts": "all"}),
            [],
            1,
            3,
            {},
        )
        is None
    )
    assert plan_disagg(plan_request(**{**SMALL, "layouts": "aggregated"}), [], 1, 3, {}) is None
    assert plan_disagg(concurrency, [], 1, 1, {}) is None
    assert plan_disagg(concurrency, [], 1, 3, {}) is None  # no family to split
