"""estimate/disagg.py, disaggregated prefill / decode (issue 28): KV bytes and transfer physics,
the deployment's figures against the aggregated arms, its bands inside and outside the
references, the refusals of a bad split and the faces that show the deployment. The card's line
and the failure-mode advisories are `tests/decide/test_disagg.py`'s, the launch blocks
`tests/decide/test_disagg_launch.py`'s.

Structure and physics only: the decode model's absolute figures move with its constants, so
nothing here pins a step or a throughput, only how the disaggregated figures relate to them."""

from __future__ import annotations

import itertools
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_runner import run_cli
from deepep_calc import Scenario, evaluate
from deepep_calc.base.errors import InputError
from deepep_calc.base.quantity import Q
from deepep_calc.catalog.engines import load_engines
from deepep_calc.catalog.hardware import get_instance
from deepep_calc.catalog.kv_transports import (
    engine_kv,
    get_kv_transport,
    load_engine_kv,
    load_kv_transports,
)
from deepep_calc.estimate.compute import compute
from deepep_calc.estimate.disagg import compute_with_disagg, covered
from deepep_calc.io.hf_config import resolve_model
from deepep_calc.physics import kv_transfer as kv
from deepep_calc.question.disagg import parse_disagg
from deepep_calc.question.scenario import resolve
from web_fixtures import app, client  # noqa: F401  (fixtures)

MIB = 1 << 20


def disagg(**kw):
    return compute_with_disagg(resolve(Scenario(**kw))).disaggregated


# KV bytes per request: the model's own formula, hand-worked ---------------------------------


@pytest.mark.parametrize("isl", [1024, 8192])
def test_kv_bytes_deepseek_v3_mla(isl):
    per_token = (512 + 64) * 61 * 2  # (kv_lora + rope) x layers x BF16
    assert per_token == 70_272
    q = kv.kv_bytes_per_request(resolve_model("deepseek-v3"), isl)
    assert q.value == per_token * isl and q.unit == "B"
    d = disagg(model="deepseek-v3", prefill_nodes=1, decode_nodes=1, isl=isl, osl=256, concurrency=8)
    assert d.kv_bytes_per_request.value == per_token * isl


@pytest.mark.parametrize("isl", [1024, 8192])
def test_kv_bytes_qwen3_235b_gqa(isl):
    per_token = 2 * 4 * 128 * 94 * 2  # 2 x kv_heads x head_dim x layers x BF16
    assert per_token == 192_512
    for name in ("qwen3-235b-a22b", "qwen3-235b-a22b-fp8"):
        assert kv.kv_bytes_per_request(resolve_model(name), isl).value == per_token * isl


def test_kv_bytes_follow_windows_and_linear_state():
    """Sliding windows cap a layer's KV; linear-attention layers hold a state, not a history."""
    oss = resolve_model("gpt-oss-120b")
    short, long = (kv.kv_bytes_per_request(oss, n).value for n in (64, 8192))
    a = oss.attention
    per = 2 * a.kv_heads * a.head_dim * 2
    full = oss.layers - a.sliding_layers - a.linear_layers
    assert long == per * (full * 8192 + a.sliding_layers * a.sliding_window)
    assert short == per * oss.layers * 64
    nxt = resolve_model("qwen3-next-80b-a3b")
    one, two = (kv.kv_bytes_per_request(nxt, n).value for n in (1024, 2048))
    state = nxt.attention.linear_layers * nxt.attention.linear_state_bytes
    assert two - state == pytest.approx(2 * (one - state))


# Transfer by block size, from the facts' curve ------------------------------------------------


def _block(n: float) -> Q:
    return Q.measured(float(n), "B", "test block")


@pytest.mark.parametrize("name", ["nixl-libfabric", "mooncake-efa"])
def test_bandwidth_is_the_curve_at_its_points_and_rises_between(name):
    t = get_kv_transport(name)
    p5en = get_instance("p5en")
    for point in t.point:
        assert kv.node_pair_gb_s(t, _block(point.block_bytes), p5en).value == pytest.approx(point.gb_s)
    sizes = [2**k for k in range(12, 27)]
    bws = [kv.node_pair_gb_s(t, _block(b), p5en).value for b in sizes]
    assert all(b2 >= b1 for b1, b2 in itertools.pairwise(bws))
    assert bws[-1] <= kv.line_rate_gb_s(p5en) + 1e-9


def test_no_software_path_outruns_efa_rdma_at_any_block():
    """TCP's one figure is a bulk stream's: below its block each transfer pays a fixed latency,
    as the RDMA paths' do, so no block size makes the fallback the faster way (it did, at the
    4 KiB blocks of a small GQA model, and the planner picked TCP); UCX's software path is slow
    whatever the block."""
    p5en = get_instance("p5en")
    rdma = [t for t in load_kv_transports().values() if t.rdma and "p5en" in t.instances]
    software = [t for t in load_kv_transports().values() if not t.rdma and "p5en" in t.instances]
    assert rdma and {t.name for t in software} >= {"tcp", "nixl-ucx"}
    for block in [2**k for k in range(10, 27)]:
        fastest_rdma = max(kv.node_pair_gb_s(t, _block(block), p5en).value for t in rdma)
        for t in software:
            assert kv.node_pair_gb_s(t, _block(block), p5en).value <= fastest_rdma, (t.name, block)
    tcp, ucx = get_kv_transport("tcp"), get_kv_transport("nixl-ucx")
    assert kv.node_pair_gb_s(tcp, _block(4096), p5en).value == pytest.approx(9.5 * 4096 / 65536)
    assert kv.node_pair_gb_s(tcp, _block(64 * MIB), p5en).value == pytest.approx(9.5)
    assert kv.node_pair_gb_s(ucx, _block(4096), p5en).value == pytest.approx(0.3)


def test_transfer_time_falls_as_the_block_grows():
    t = get_kv_transport("nixl-libfabric")
    p5en = get_instance("p5en")
    request = Q.derived(72e6, "B", "a request's KV")
    times = []
    for block in (4096, 65536, 1 * MIB, 16 * MIB, 64 * MIB):
        pair = kv.node_pair_gb_s(t, _block(block), p5en)
        times.append(kv.transfer_ms(request, 1.0, 1.0, pair, 8).value)
    assert all(b < a for a, b in itertools.pairwise(times))
    # following the curve: at 4 KiB and 64 KiB the ratio of times is the ratio of bandwidths
    assert times[0] / times[1] == pytest.approx(8.733 / 0.670)


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


# Bad input ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--disagg", "0P3D"], "--disagg"),
        (["--disagg", "3D1P"], "--disagg"),
        (["--disagg", "1P3D", "--nodes", "8"], "--nodes"),
        (["--disagg", "1P3D", "--kv-transport", "rdma-magic"], "--kv-transport"),
        (["--disagg", "1P3D", "--engine", "trtllm", "--kv-transport", "mooncake-efa"], "--kv-transport"),
        (["--disagg", "1000P100D"], "--disagg"),
        (["--prefill-nodes", "2"], "--decode-nodes"),
        (["--kv-transport", "tcp"], "--kv-transport"),
        (["--disagg", "1P1D", "--decode-arm", "ring"], "--decode-arm"),
        (["--disagg", "1P2D", "--decode-transport", "nvlink"], "--decode-transport"),
    ],
)
def test_bad_disaggregated_input_is_one_line_and_exit_2(capsys, args, field):
    code, out, err = run_cli(capsys, "evaluate", *args)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith(f"deepep-calc: error: {field}:")


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--disagg", "0P3D"], "--disagg"),
        (["--disagg", "2P3D", "--max-nodes", "4"], "--disagg"),
        (["--layouts", "disaggregated", "--max-nodes", "1"], "--max-nodes"),
    ],
)
def test_bad_plan_split_is_one_line_and_exit_2(capsys, args, field):
    code, _, err = run_cli(capsys, "plan", "--concurrency", "8", *args)
    assert (
        code == 2 and len(err.strip().splitlines()) == 1 and err.startswith(f"deepep-calc: error: {field}:")
    )


def test_parse_disagg():
    assert parse_disagg("1P3D") == (1, 3) and parse_disagg(" 2p6d ") == (2, 6)
    for bad in ("0P3D", "1P0D", "P3D", "1:3", "", "1P3D4"):
        with pytest.raises(InputError):
            parse_disagg(bad)


# Faces ------------------------------------------------------------------------------------------


def test_cli_json_has_the_deployment_and_the_nodes_are_p_plus_d(capsys):
    code, out, _ = run_cli(capsys, "evaluate", "--disagg", "1P3D", "--model", "deepseek-v3", "--json")
    assert code == 0
    j = json.loads(out)
    assert j["scenario"]["nodes"] == 4 and j["scenario"]["prefill_nodes"] == 1
    assert j["disaggregated"]["layout"] == "1P3D"
    code, out, _ = run_cli(capsys, "evaluate", "--json")
    assert json.loads(out)["disaggregated"] is None


def test_card_shows_the_split_and_its_run_blocks(capsys):
    code, out, _ = run_cli(capsys, "evaluate", "--disagg", "1P1D", "--model", "deepseek-v3")
    assert code == 0
    assert "Disaggregated 1P1D" in out and "prefill side" in out and "A request's time" in out
    assert "Run it disaggregated (1P1D" in out


def test_sweep_rows_are_evaluates_figures(tmp_path, capsys):
    out = tmp_path / "s.csv"
    code, _, err = run_cli(
        capsys,
        "sweep",
        "--model",
        "deepseek-v3",
        "--disagg",
        "1P3D",
        "--concurrency",
        "8,64",
        "--isl",
        "1024,4096",
        "-o",
        out,
    )
    assert code == 0, err
    import csv

    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 4
    for row in rows:
        d = disagg(
            model="deepseek-v3",
            prefill_nodes=1,
            decode_nodes=3,
            concurrency=int(row["concurrency"]),
            isl=int(row["isl"]),
        )
        assert int(row["nodes"]) == 4
        assert float(row["disagg_ttft_ms"]) == pytest.approx(d.ttft_ms.value, rel=1e-5)
        assert float(row["disagg_aggregate_tok_s"]) == pytest.approx(d.aggregate_tok_s.value, rel=1e-5)
        assert row["disagg_decode_arm"] == d.decode.arm and row["disagg_prefill_arm"] == d.prefill.arm
    code, _, err = run_cli(capsys, "sweep", "--disagg", "1P1D", "--nodes", "2,4")
    assert code == 2 and "--nodes" in err


def test_api_takes_the_split_as_the_cli_does(client):  # noqa: F811
    body = {"model": "deepseek-v3", "disagg": "1P3D", "concurrency": 32}
    resp = client.post("/api/evaluate", json=body)
    assert resp.status_code == 200, resp.text
    assert resp.json()["disaggregated"]["layout"] == "1P3D"
    same = client.post(
        "/api/evaluate",
        json={"model": "deepseek-v3", "prefill_nodes": 1, "decode_nodes": 3, "concurrency": 32},
    )
    assert same.json()["disaggregated"] == resp.json()["disaggregated"]
    bad = client.post("/api/evaluate", json={"model": "deepseek-v3", "disagg": "0P3D"})
    assert bad.status_code == 422 and bad.json()["field"] == "disagg"
    page = client.get("/?model=deepseek-v3&disagg=1P3D")
    assert page.status_code == 200 and 'id="disagg-section">' in page.text


def test_mechanism_section_is_drawn_from_the_scenario(client):  # noqa: F811
    short = client.get("/mechanism?model=deepseek-v3&disagg=1P1D&isl=1024")
    long = client.get("/mechanism?model=deepseek-v3&disagg=1P1D&isl=8192")
    assert short.status_code == long.status_code == 200
    d_short = disagg(model="deepseek-v3", prefill_nodes=1, decode_nodes=1, isl=1024)
    d_long = disagg(model="deepseek-v3", prefill_nodes=1, decode_nodes=1, isl=8192)
    for page, d in ((short, d_short), (long, d_long)):
        assert f"{d.kv_bytes_per_request.value / 1e6:,.1f}" in page.text
        assert f"{d.exposed_ms.value:,.1f} ms" in page.text
    assert 'data-part="transfer"' in short.text
    assert client.get("/mechanism?disagg=0P1D").status_code == 422


def test_catalog_rows_have_sources_and_every_engine_has_kv_facts():
    for t in load_kv_transports().values():
        assert t.curve_source
        for p in t.point:
            assert p.source and p.tag in ("measured", "derived", "assumed")
    assert set(load_engine_kv()) == set(load_engines())
    for e in load_engines():
        ekv = engine_kv(e)
        assert ekv.default_kv_transport in ekv.connectors
        assert ekv.block_source and ekv.stream_source and ekv.prefill_batch_source
        assert not math.isnan(ekv.block_tokens)
