"""estimate/disagg.py, disaggregated prefill / decode (issue 28): the transfer a deployment
makes (the engine's block, a flagged KV transport), the deployment's figures against the
aggregated arms, and its bands inside and outside the references. The card's line and the
failure-mode advisories are `tests/decide/test_disagg.py`'s, the launch blocks
`tests/decide/test_disagg_launch.py`'s; the KV bytes and the transfer curve
`tests/physics/test_kv_transfer.py`'s, the refusals of a bad split `tests/question/test_disagg.py`'s,
and each face's showing of the deployment its own module's file.

Structure and physics only: the decode model's absolute figures move with its constants, so
nothing here pins a step or a throughput, only how the disaggregated figures relate to them."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deepep_calc import Scenario, evaluate
from deepep_calc.catalog.hardware import get_instance
from deepep_calc.estimate.compute import compute
from deepep_calc.estimate.disagg import covered
from deepep_calc.question.scenario import resolve

from .shared import disagg

# The deployment's transfer: the engine's block, a flagged transport ------------------------------


def test_an_engine_with_bigger_blocks_moves_the_same_kv_faster():
    """The engine's block sets the transfer size: the same request, its KV in bigger blocks,
    crosses sooner (the model's own block sizes, not a typed number)."""
    base = dict(model="deepseek-v3", prefill_nodes=1, decode_nodes=1, isl=1024, osl=256, concurrency=8)
    vllm = disagg(**base, engine="vllm", prefill_arm="tp", decode_arm="tp")
    trt = disagg(**base, engine="trtllm", prefill_arm="tp", decode_arm="tp")
    assert vllm.block_bytes.value > trt.block_bytes.value  # 64- vs 32-token MLA blocks
    assert vllm.kv_bytes_per_request.value == trt.kv_bytes_per_request.value
    assert vllm.transfer_ms.value < trt.transfer_ms.value


def test_nixl_ucx_on_efa_is_flagged_and_slow():
    base = dict(
        model="deepseek-v3", prefill_nodes=1, decode_nodes=1, engine="vllm", isl=1024, osl=256, concurrency=8
    )
    ucx, lf = disagg(**base, kv_transport="nixl-ucx"), disagg(**base, kv_transport="nixl-libfabric")
    assert ucx.kv.flagged and not ucx.kv.rdma and "UCX" in ucx.kv.warning
    assert not lf.kv.flagged and lf.kv.rdma
    assert ucx.node_pair_gb_s.value == pytest.approx(0.3)
    assert ucx.transfer_ms.value > 10 * lf.transfer_ms.value
    assert ucx.ttft_ms.value > lf.ttft_ms.value
    res = evaluate(Scenario(**base, kv_transport="nixl-ucx"))
    assert any("UCX" in a and "TCP" in a for a in res.verdict.advisories)
    assert res.to_json()["disaggregated"]["kv_warning"]


# The deployment: TPOT, TTFT, aggregate -----------------------------------------------------------


MODELS = ["qwen3-30b-a3b-fp8", "deepseek-v3", "qwen3-235b-a22b-fp8"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.sampled_from(MODELS),
    engine=st.sampled_from(["vllm", "sglang", "trtllm"]),
    graphs=st.booleans(),
    arm=st.sampled_from(["deepep", "allgather", "tp"]),
    conc=st.sampled_from([1, 4, 32, 128, 512]),
    isl=st.sampled_from([128, 1024, 8192]),
    osl=st.sampled_from([16, 256, 2048]),
)
def test_1p1d_tpot_never_exceeds_the_aggregated_step_with_mixed_prefill(
    model, engine, graphs, arm, conc, isl, osl
):
    """The decode side runs the aggregated arm's step without the prefills that join it: at the
    same layout and the same running sequences its TPOT is never longer."""
    alternative = "tp" if arm == "tp" else "allgather"
    s = dict(model=model, engine=engine, cuda_graphs=graphs, concurrency=conc, isl=isl, osl=osl)
    d = disagg(**s, prefill_nodes=1, decode_nodes=1, decode_arm=arm, alternative=alternative)
    one_node = compute(resolve(Scenario(**s, nodes=1, transport="nvlink", alternative=alternative)))
    agg_step = one_node.arms[arm].model_step_ms or one_node.arms[arm].step_ms
    assert d.tpot_ms.value <= agg_step.value * (1 + 1e-12)
    assert d.decode.arm == arm


def test_1p1d_ttft_includes_the_transfer():
    base = dict(
        model="deepseek-v3", prefill_nodes=1, decode_nodes=1, engine="vllm", isl=8192, osl=256, concurrency=4
    )
    d = disagg(**base)
    parts = d.ttft_parts_ms
    assert d.ttft_ms.value == pytest.approx(sum(p.value for p in parts.values()))
    assert parts["transfer"].value == pytest.approx(d.exposed_ms.value) and parts["transfer"].value > 0
    assert parts["first_decode"].value == pytest.approx(d.tpot_ms.value)
    slow = disagg(**base, kv_transport="nixl-ucx")  # same sides, a slower link: TTFT grows by it
    assert slow.ttft_ms.value - d.ttft_ms.value == pytest.approx(
        slow.exposed_ms.value - d.exposed_ms.value, rel=1e-6
    )


def test_aggregate_is_the_slower_of_the_sides_and_the_balance_is_shown():
    d = disagg(
        model="qwen3-235b-a22b-fp8",
        prefill_nodes=1,
        decode_nodes=3,
        isl=8192,
        osl=64,
        concurrency=1024,
        engine="sglang",
    )
    caps = {
        "prefill": d.prefill.figures["capacity_req_s"].value,
        "decode": d.decode.figures["capacity_req_s"].value,
        "transfer": d.link_capacity_req_s.value,
    }
    rate = d.deployment.throughput_req_s.value
    assert rate <= min(caps.values()) * (1 + 1e-12)
    assert d.aggregate_tok_s.value == pytest.approx(rate * 64)
    j = d.to_json()
    assert j["bottleneck"] in ("clients", "prefill", "decode", "transfer")
    assert j["idle_side"] in ("prefill", "decode") and 0 <= j["idle_fraction"]["value"] <= 1
    assert j["balanced_prefill_per_decode"]["value"] > 0
    if d.bottleneck == "prefill":
        assert d.deployment.queue_ms.value > 0 and j["idle_side"] == "decode"


def test_memory_per_side_and_a_side_that_does_not_fit():
    d = disagg(model="kimi-k2", prefill_nodes=1, decode_nodes=1, concurrency=64, isl=1024, osl=1024)
    assert not d.feasible and "does not fit" in d.why_not  # FP8 Kimi-K2 needs more than one p5en
    j = d.to_json()
    assert j["prefill"]["memory_gb_per_gpu"]["unit"] == "GB" and not j["prefill"]["fits_memory"]
    ok = disagg(model="deepseek-v3", prefill_nodes=1, decode_nodes=1, concurrency=8)
    assert ok.feasible and ok.memory_gb_per_gpu.value <= get_instance("p5en").hbm_gb


def test_each_side_takes_the_arm_asked_for_else_the_best_rated():
    base = dict(
        model="deepseek-v3", prefill_nodes=1, decode_nodes=3, engine="vllm", concurrency=64, isl=1024, osl=256
    )
    chosen = disagg(**base)
    assert chosen.prefill.side.arm is None and chosen.decode.side.arm is None
    for p_arm in ("deepep", "allgather", "tp"):
        forced = disagg(**base, prefill_arm=p_arm)
        assert forced.prefill.arm == p_arm
        assert forced.deployment.throughput_req_s.value <= chosen.deployment.throughput_req_s.value * (
            1 + 1e-9
        )
    assert disagg(**base, decode_arm="replica").decode.arm == "replica"


def test_every_figure_is_a_tagged_q_and_modelled_ones_carry_a_band():
    j = evaluate(Scenario(model="deepseek-v3", prefill_nodes=1, decode_nodes=1)).to_json()["disaggregated"]
    for name in ("ttft_ms", "tpot_ms", "per_user_tok_s", "aggregate_tok_s", "usd_per_mtok"):
        q = j[name]
        assert {"value", "unit", "tag", "source", "low", "high"} <= set(q), name
        assert q["low"] <= q["value"] <= q["high"], name
    for name in ("kv_bytes_per_request", "kv_transfer_ms", "kv_node_pair_gb_s"):
        assert j[name]["tag"] in ("measured", "derived", "assumed") and j[name]["source"]


def test_outside_the_references_the_band_is_wider():
    inside = dict(
        model="deepseek-v3",
        prefill_nodes=1,
        decode_nodes=1,
        engine="vllm",
        cuda_graphs=True,
        isl=1024,
        osl=256,
        concurrency=6,
    )
    r_in = resolve(Scenario(**inside))
    assert covered(r_in, r_in.disagg)[0]
    d_in = disagg(**inside)
    d_out = disagg(**{**inside, "concurrency": 600})
    assert d_in.inside_references and not d_out.inside_references
    width = lambda q: (q.high - q.low) / q.value  # noqa: E731
    assert width(d_out.ttft_ms) > width(d_in.ttft_ms)
    assert width(d_out.aggregate_tok_s) > width(d_in.aggregate_tok_s)
