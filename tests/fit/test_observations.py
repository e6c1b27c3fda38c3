"""Serving observations (`fit/observations.py`): every leg of a measured cell and every serving
reference as one record, with the groups a cross-validation leaves out and the A/B pairs."""

from __future__ import annotations

from dataclasses import replace

from deepep_calc.catalog.measured import LegMetrics, load_cells
from deepep_calc.catalog.references import load_serving_refs
from deepep_calc.fit.observations import Obs, cell_observations, cell_scenario, describe, observations, pairs

CELLS = load_cells()
K8 = CELLS["trt-ab-k8-c4"]  # TRT-LLM eager A/B at EP_NUM_COMMS 8, 4 clients, batch 16 per rank


def by_id() -> dict[str, Obs]:
    return {o.id: o for o in observations()}


def test_a_cell_gives_one_observation_per_leg() -> None:
    """Its DeepEP and allgather legs, both of the A/B `trt-ab-k8-c4`; the step from the per-user
    rate where no ITL is exported (1000 / 19.62 ms); measured, used in the fit."""
    deepep, allgather = cell_observations([K8])
    assert (deepep.id, deepep.leg, deepep.arm) == ("trt-ab-k8-c4:deepep", "deepep", "deepep")
    assert (allgather.id, allgather.leg, allgather.arm) == (
        "trt-ab-k8-c4:allgather",
        "allgather",
        "allgather",
    )
    assert deepep.pair == allgather.pair == "trt-ab-k8-c4"
    assert deepep.step_ms == 1000 / 19.62 and deepep.aggregate_tok_s == 68.7
    assert (deepep.trust, deepep.use, deepep.max_batch) == ("measured", "fit", 16)
    s = deepep.scenario
    assert (s.engine, s.transport, s.comms, s.concurrency, s.isl, s.osl) == (
        "trtllm",
        "efa-proxy",
        8,
        4,
        120,
        128,
    )
    assert deepep.source.endswith("[cell trt-ab-k8-c4]")


def test_a_second_deepep_transport_is_a_versus_leg() -> None:
    """`sglang-deepep-vs-uccl-c32`: DeepEP over efa-proxy and, as its versus leg, over efa-uccl;
    both run the DeepEP arm and form a pair."""
    legs = cell_observations([CELLS["sglang-deepep-vs-uccl-c32"]])
    assert [(o.leg, o.arm, o.transport) for o in legs] == [
        ("deepep", "deepep", "efa-proxy"),
        ("versus", "deepep", "efa-uccl"),
    ]
    assert {o.pair for o in legs} == {"sglang-deepep-vs-uccl-c32"}


def test_a_cell_with_one_leg_is_no_pair_and_a_zero_length_is_one() -> None:
    """A DeepEP-only cell has no pair key. A cell that states no lengths (ISL = OSL = 0) runs a
    scenario of 1 and 1 (the scenario's least)."""
    (alone,) = cell_observations([CELLS["vllm-k8-c4"]])
    assert alone.pair == "" and alone.groups()["run"] == "vllm-k8-c4"
    prefill = CELLS["vllm-ab-prefill-c64"]
    assert (prefill.isl, prefill.osl) == (0, 0)
    assert {(o.scenario.isl, o.scenario.osl) for o in cell_observations([prefill])} == {(1, 1)}


def test_a_leg_without_metrics_is_left_out() -> None:
    no_allgather = replace(K8, allgather=None)
    assert [o.leg for o in cell_observations([no_allgather])] == ["deepep"]
    with_versus = K8.copy(**{"versus": LegMetrics(itl_ms=40.0)})  # no versus transport named
    assert [o.leg for o in cell_observations([with_versus])] == ["deepep", "allgather"]


def test_the_catalog_observations_are_the_cells_then_the_references() -> None:
    """Every cell but the reference-only ones, leg by leg, then every serving reference; ids are
    unique and the tuple is built once."""
    obs = observations()
    cells = [c for c in CELLS.values() if c.role != "reference-only"]
    n_cells = sum(len(cell_observations([c])) for c in cells)
    assert [o.id for o in obs[:n_cells]] == [o.id for c in cells for o in cell_observations([c])]
    assert [o.id for o in obs[n_cells:]] == list(load_serving_refs())
    assert len({o.id for o in obs}) == len(obs)
    assert observations() is obs


def test_a_references_observation() -> None:
    """[U926]'s DeepSeek-V3 A/B on vLLM graphs: TPOT 24.3 ms over UCCL-EP and 43.8 ms for
    allgather, attention TP 8, one pair."""
    o = by_id()
    ep, ag = o["u926-dsv3-uccl"], o["u926-dsv3-agrs"]
    assert (ep.arm, ep.step_ms, ep.attention_tp, ep.graphs) == ("deepep", 24.3, 8, True)
    assert (ag.leg, ag.step_ms) == ("allgather", 43.8)
    assert ep.pair == ag.pair == "u926-dsv3"


def test_the_groups_a_fold_leaves_out() -> None:
    """A DeepEP leg is grouped by its transport, a dense leg under `(dense)`; the run is the
    pair's key where there is one."""
    deepep, allgather = cell_observations([K8])
    assert deepep.groups() == {
        "engine": "trtllm",
        "model": "qwen3-30b-a3b-fp8",
        "transport": "efa-proxy",
        "instance": "p5en",
        "run": "trt-ab-k8-c4",
    }
    assert allgather.groups()["transport"] == "(dense)"


def test_the_resolved_scenario_carries_the_runs_own_settings() -> None:
    """The cell's batch of 16 per rank (its own setting); a reference without one takes the
    engine's default; attention TP and disaggregation travel with it."""
    deepep, _ = cell_observations([K8])
    r = deepep.resolved()
    assert (r.max_batch, r.max_batch_source, r.attention_tp) == (16, "the run's own setting", 1)
    nixl = by_id()["nixl-1p1d-1rps"].resolved()
    assert nixl.max_batch_source != "the run's own setting"
    assert (nixl.attention_tp, nixl.disaggregated) == (4, True)


def test_pairs_hold_only_complete_ab_pairs() -> None:
    """The TRT-LLM A/B has both legs; without its allgather leg it is no pair; a versus leg
    completes one."""
    deepep, allgather = cell_observations([K8])
    assert pairs([deepep, allgather]) == {"trt-ab-k8-c4": {"deepep": deepep, "allgather": allgather}}
    assert pairs([deepep]) == {} and pairs([allgather]) == {}
    versus = cell_observations([CELLS["sglang-deepep-vs-uccl-c32"]])
    assert set(pairs(versus)["sglang-deepep-vs-uccl-c32"]) == {"deepep", "versus"}


def test_a_cells_scenario_is_its_deepep_legs() -> None:
    s = cell_scenario(CELLS["sglang-deepep-vs-uccl-c32"])
    assert (s.engine, s.transport, s.concurrency) == ("sglang", "efa-proxy", 32)


def test_describe_names_the_workload() -> None:
    _, allgather = cell_observations([K8])
    assert describe(allgather) == {
        "model": "qwen3-30b-a3b-fp8",
        "instance": "p5en",
        "nodes": 2,
        "engine": "trtllm",
        "graphs": False,
        "arm": "allgather",
        "transport": "efa-proxy",
        "concurrency": 4,
    }
