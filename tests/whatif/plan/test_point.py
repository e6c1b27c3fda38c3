"""The points a plan reports (`whatif/plan/point.py`): `evaluate()`'s own figures for a row,
and the words beside them."""

from __future__ import annotations

from typing import Any

from deepep_calc.api import evaluate
from deepep_calc.base.quantity import Q
from deepep_calc.question.fields import DEFAULTS
from deepep_calc.question.scenario import Scenario
from deepep_calc.whatif.plan.point import Point, arm_text, disagg_label, label_of

from .small import FIGURES, SMALL, rel


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


# Words beside the figures -----------------------------------------------------------------------


def test_an_arm_is_named_with_its_route_and_comms_only_where_they_matter() -> None:
    assert arm_text("allgather", "efa-proxy", 8, 2) == "allgather"
    assert arm_text("replica", "efa-proxy", 8, 2) == "single-node replicas"
    assert arm_text("tp", "efa-gda", 8, 2) == "tensor parallel"
    assert arm_text("deepep", "efa-proxy", 4, 2) == "DeepEP efa-proxy K=4"  # the proxy reads K
    assert arm_text("deepep", "efa-gda", 4, 2) == "DeepEP efa-gda"  # GPU-initiated: K changes nothing
    assert arm_text("deepep", "efa-proxy", 4, 1) == "DeepEP NVLink"  # one node rides NVLink


AGGREGATED = {"nodes": 2, "instance": "p5en", "engine": "vllm", "cuda_graphs": True, "weight_dtype": None}


def test_a_label_names_the_cluster_the_mode_the_dtype_and_the_arm() -> None:
    config = dict(AGGREGATED, transport="efa-gda", comms=8)
    assert label_of(config, "deepep") == "2x p5en vllm CUDA graphs, DeepEP efa-gda"
    config = dict(AGGREGATED, cuda_graphs=False, weight_dtype="fp8", transport="efa-proxy", comms=4)
    assert label_of(config, "deepep") == "2x p5en vllm eager fp8, DeepEP efa-proxy K=4"
    assert label_of(config, "tp") == "2x p5en vllm eager fp8, tensor parallel"


def test_a_split_is_labelled_side_by_side_naming_a_graph_mode_only_where_it_differs() -> None:
    split = {
        "nodes": 3,
        "instance": "p5en",
        "engine": "vllm",
        "weight_dtype": None,
        "transport": "efa-proxy",
        "comms": 8,
        "prefill_nodes": 1,
        "decode_nodes": 2,
        "prefill_arm": "tp",
        "decode_arm": "deepep",
        "prefill_transport": None,
        "decode_transport": "efa-gda",
        "prefill_cuda_graphs": True,
        "decode_cuda_graphs": True,
        "kv_transport": "mooncake-efa",
    }
    want = "3x p5en vllm CUDA graphs, 1P2D: prefill TP / decode DeepEP efa-gda, KV mooncake-efa"
    assert disagg_label(split) == want == label_of(split, "disagg")
    eager_prefill = dict(split, prefill_arm="deepep", prefill_cuda_graphs=False)
    assert disagg_label(eager_prefill) == (
        "3x p5en vllm CUDA graphs, 1P2D: prefill DeepEP NVLink eager / decode DeepEP efa-gda, KV mooncake-efa"
    )  # one prefill node rides NVLink; its transport, unset, is the scenario's


def point(**given: Any) -> Point:
    """A hand-made Point: 10.5 tok/s per user (band 9-12), TTFT 900 ms (band 700-1,200)."""
    figures = {
        "per_user_tok_s": Q.assumed(10.5, "tok/s", "model").with_band(9.0, 12.0),
        "aggregate_tok_s": Q.assumed(336.0, "tok/s", "model"),
        "ttft_ms": Q.assumed(900.0, "ms", "model").with_band(700.0, 1200.0),
        "usd_per_mtok": Q.assumed(2.5, "$/Mtok", "price"),
        "memory_gb_per_gpu": Q.assumed(40.0, "GB", "model"),
    }
    fields: dict[str, Any] = dict(
        config={"model": "qwen3-30b-a3b-fp8", "nodes": 4, "slo_tok_s": 10.0, "ttft_ms": 1000.0},
        arm="allgather",
        figures=figures,
        meets_targets=True,
        usd_per_hour=Q.assumed(200.0, "$/h", "price"),
        aggregate_per_node=Q.assumed(84.0, "tok/s/node", "aggregate / nodes"),
        evidence="anchored",
        notes=[],
        label="4x p5en",
    )
    fields.update(given)
    return Point(**fields)


def test_band_notes_say_which_targets_a_band_spans() -> None:
    """10.5 tok/s meets the floor of 10, but its band reaches 9: it may miss it. 900 ms meets the
    1,000 ms ceiling, but the band reaches 1,200."""
    p = point(target_status={"slo_tok_s": "within the band", "ttft_ms": "within the band"})
    assert p.band_notes() == [
        "its band 9.0-12.0 spans the 10 tok/s per-user floor: it may miss it",
        "its band 700-1,200 spans the 1000 ms TTFT ceiling: it may miss it",
    ]
    assert p.band_notes(short=True) == ["band spans the floor", "band spans the TTFT cap"]
    below = point(config=dict(point().config, slo_tok_s=11.0), target_status={"slo_tok_s": "within the band"})
    assert below.band_notes() == ["its band 9.0-12.0 spans the 11 tok/s per-user floor: it may meet it"]
    assert point(target_status={"slo_tok_s": "meets", "ttft_ms": "misses"}).band_notes() == []


def test_the_card_link_carries_only_the_fields_off_the_defaults() -> None:
    """Defaults (the model, EP_EFA_MAX_QPS 2, eager) and unset fields stay out; booleans are lower
    case, in the configuration's order."""
    config = {
        "model": DEFAULTS["model"],
        "nodes": 4,
        "engine": "vllm",
        "cuda_graphs": True,
        "max_qps": DEFAULTS["max_qps"],
        "weight_dtype": None,
        "slo_tok_s": 12.5,
    }
    assert point(config=config).card_query == "nodes=4&engine=vllm&cuda_graphs=true&slo_tok_s=12.5"
    assert point(config={"model": DEFAULTS["model"], "cuda_graphs": False}).card_query == ""


def test_a_points_json_marks_a_split_and_links_its_card() -> None:
    aggregated = point().to_json()
    assert aggregated["disaggregated"] is False and aggregated["layout"] == "aggregated"
    assert aggregated["card_url"] == "/?nodes=4&slo_tok_s=10.0&ttft_ms=1000.0"
    assert aggregated["max_request_rate"] is None and aggregated["per_user_tok_s"]["low"] == 9.0
    split = point(layout="1P3D").to_json()
    assert split["disaggregated"] is True and split["layout"] == "1P3D"
