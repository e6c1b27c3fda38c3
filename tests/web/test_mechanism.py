"""The mechanism page's content (`web/mechanism.py`): the diagram's geometry worked out from the
layer lists, the measured A/B regimes, the per-operation rows, the kernels' standing against
InfiniBand, the NIC busy figure beside the measured one and the disaggregated request's
timeline, each checked against arithmetic written down here or the figures the model gives."""

from __future__ import annotations

import itertools

import pytest

from deepep_calc.api import evaluate
from deepep_calc.base import palette
from deepep_calc.base.errors import InputError
from deepep_calc.estimate.result import Result
from deepep_calc.question.scenario import Scenario
from deepep_calc.web import mechanism
from estimate.shared import disagg
from web_fixtures import app, client  # noqa: F401  (fixtures)

from .responses import clean


def test_mechanism_page(client):  # noqa: F811
    resp = clean(client.get("/mechanism"))
    assert resp.status_code == 200
    html = resp.text
    assert html.count('<tr><th scope="row">') >= 8  # the RC vs SRD rows (and others)
    lanes = html.split('<g class="lane"')[1:]
    assert [lane.count('<g class="layer">') for lane in lanes] == [5, 2]
    assert "efa-native-cqpoll" in html and "391.6" in html and "338.5" in html
    assert ">2.2<" in html  # NIC utilisation, from the measured facts


def test_the_content_file_reads_as_its_models() -> None:
    content = mechanism.content()
    assert len(content.property) == 8
    assert [(p.key, p.colour, len(p.layers)) for p in content.path] == [
        ("host_proxy", "host_proxied", 5),
        ("ibgda", "gpu_initiated", 2),
    ]
    assert content.status.works and content.status.missing and content.status.shipping


def test_the_diagram_is_laid_out_from_the_layer_lists() -> None:
    """Five columns (the longest path): width 2 * 16 + 5 * 150 + 4 * 38 = 934; two lanes of 128
    under a pad of 16: height 272. Column c sits at x = 16 + c * (150 + 38). The two-layer
    GPU-initiated path keeps its first box at the left and packs the other to the right, so its
    one arrow spans (768 - 16) / 188 - 1 = 3 skipped layers."""
    d = mechanism.diagram()
    assert (d["width"], d["height"]) == (934, 272)
    proxy, gda = d["lanes"]
    assert [b["x"] for b in proxy["boxes"]] == [16, 204, 392, 580, 768]
    assert [(a["x1"], a["x2"], a["label"]) for a in proxy["arrows"]] == [
        (166, 200, ""),
        (354, 388, ""),
        (542, 576, ""),
        (730, 764, ""),
    ]
    assert [b["x"] for b in gda["boxes"]] == [16, 768]
    assert [(a["x1"], a["x2"], a["label"]) for a in gda["arrows"]] == [
        (166, 764, "host segment skipped (3 layers)")
    ]
    assert (proxy["colour"], gda["colour"]) == (palette.HOST_PROXIED, palette.GPU_INITIATED)
    assert proxy["title"].endswith(": 5 layers") and gda["title"].endswith(": 2 layers")
    assert all(b["y"] == 16 + 26 for b in proxy["boxes"]) and all(
        b["y"] == 16 + 128 + 26 for b in gda["boxes"]
    )


def test_the_signature_is_the_three_measured_regimes() -> None:
    """The A/B's per-user lines are flat: 19.62 (DeepEP) and 27.57 (allgather) tok/s in each regime,
    so the tax is 1000 / 19.62 - 1000 / 27.57 = 50.968 - 36.271 = 14.697 ms per token each time; the
    aggregates differ with the load."""
    rows = mechanism.signature()
    assert [(r["cell"], r["concurrency"], r["isl"]) for r in rows] == [
        ("trt-ab-k8-c4", 4, 120),
        ("trt-ab-k8-c32", 32, 120),
        ("trt-ab-k8-c16-isl2048", 16, 2048),
    ]
    for r in rows:
        assert (r["deepep"]["value"], r["dense"]["value"]) == (19.62, 27.57)
        assert r["deepep"]["tag"] == r["dense"]["tag"] == "measured"
        assert r["tax"]["value"] == pytest.approx(1000 / 19.62 - 1000 / 27.57, rel=1e-12)
    # the ratio is of the measured aggregates: 68.70 / 105.66, 545.04 / 794.56, 284.22 / 424.67
    ratios = [r["ratio"]["value"] for r in rows]
    assert ratios == pytest.approx([68.70 / 105.66, 545.04 / 794.56, 284.22 / 424.67], rel=1e-12)


@pytest.fixture(scope="module")
def base() -> Result:
    return mechanism.default_result()


def test_per_operation_counts_one_step_at_the_default_scenario(base: Result) -> None:
    """Concurrency 32 over 16 DP ranks: 2 tokens per rank per step, 2 x top-8 = 16 token-expert
    pairs, of which the 8 whose experts sit on the other of the two nodes leave it. Qwen3-30B-A3B
    has 48 MoE layers; the tax row is the result's own."""
    rows = {r["label"]: r for r in mechanism.per_operation(base)}
    assert rows["Tokens per rank per step"]["q"]["value"] == 2
    assert rows["Token-expert pairs per rank per MoE layer"]["q"]["value"] == 16
    assert rows["of which leave the node"]["q"]["value"] == 8
    assert "Host-proxy cost per step (48 MoE layers)" in rows
    assert rows["DeepEP tax per output token"]["q"] == base.tax_ms_per_token.to_json()
    assert rows["NIC utilisation on the dispatch path"]["q"]["value"] == pytest.approx(2.2)
    assert list(rows)[-1] == "Time the fabric sits idle"
    assert all(set(r) == {"label", "q", "digits", "note"} for r in rows.values())


def test_the_models_nic_rows_need_the_arms_bounds(base: Result) -> None:
    class NoBounds:
        bounds = None

    assert mechanism.model_nic_rows(NoBounds()) == []
    arm = base.arms["deepep"]
    exchange, step = mechanism.model_nic_rows(arm)
    assert exchange["q"] == arm.bounds.nic_busy_exchange_pct.to_json()
    assert step["q"] == arm.bounds.nic_busy_pct.to_json()
    assert f"wire bytes {arm.bounds.wire_mb.scalar:,.1f} MB per step" in exchange["note"]


def test_kernel_status_sets_each_transport_against_infiniband() -> None:
    """Each row's ratios are its own time over IBGDA's (118.0 us dispatch, 195.0 us combine); the
    CQ-poll campaign against the same-day proxy is 338.5 / 391.6 and 480.7 / 543.4."""
    status = mechanism.kernel_status()
    rows = {r["transport"]: r for r in status["rows"]}
    assert list(rows) == ["efa-proxy", "efa-native-cqpoll", "efa-gda", "ib-ibgda"]
    ib = rows["ib-ibgda"]
    assert (ib["dispatch"]["value"], ib["combine"]["value"]) == (118.0, 195.0)
    for r in rows.values():
        assert r["vs_ib_dispatch"]["value"] == pytest.approx(r["dispatch"]["value"] / 118.0, rel=1e-12)
        assert r["vs_ib_combine"]["value"] == pytest.approx(r["combine"]["value"] / 195.0, rel=1e-12)
    assert (rows["efa-proxy"]["dispatch"]["value"], rows["efa-native-cqpoll"]["dispatch"]["value"]) == (
        391.6,
        338.5,
    )
    assert status["native_vs_proxy_dispatch"]["value"] == pytest.approx(338.5 / 391.6, rel=1e-12)
    assert status["native_vs_proxy_combine"]["value"] == pytest.approx(480.7 / 543.4, rel=1e-12)
    assert rows["efa-proxy"]["colour"] == palette.HOST_PROXIED
    assert {r["colour"] for t, r in rows.items() if t != "efa-proxy"} == {palette.GPU_INITIATED}


def test_the_disaggregated_section_splits_the_querys_nodes_unless_it_names_a_split() -> None:
    assert mechanism.disagg_scenario(None) == (Scenario(prefill_nodes=1, decode_nodes=1), {})
    scenario, models = mechanism.disagg_scenario({"model": "deepseek-v3", "isl": "8192"})
    assert (scenario.model, scenario.isl, scenario.prefill_nodes, scenario.decode_nodes) == (
        "deepseek-v3",
        8192,
        1,
        1,
    )
    assert models == {}
    scenario, _ = mechanism.disagg_scenario({"nodes": "4", "disagg": "1P3D"})
    assert (scenario.nodes, scenario.prefill_nodes, scenario.decode_nodes) == (4, 1, 3)
    # nodes and no split: the nodes split evenly, prefill the smaller half (the page's address
    # carries the calculator's fields, and 4 nodes used to be refused as "not 1P1D")
    for nodes, split in (("4", (4, 2, 2)), ("5", (5, 2, 3)), ("1", (2, 1, 1))):
        scenario, _ = mechanism.disagg_scenario({"nodes": nodes})
        assert (scenario.nodes, scenario.prefill_nodes, scenario.decode_nodes) == split
    with pytest.raises(InputError, match=r"^--nodes: 'x' is not allowed"):
        mechanism.disagg_scenario({"nodes": "x"})


def test_the_timeline_draws_the_request_to_scale() -> None:
    """Two bars, each tiling 760 - 2 * 8 = 744 px from x = 8: the first token (queue, prefill,
    KV transfer, first decode step: the TTFT) and the whole request (plus the decode)."""
    scenario, models = mechanism.disagg_scenario({"nodes": "4", "disagg": "1P3D"})
    timeline = mechanism.disagg_timeline(evaluate(scenario, models=models))
    first, whole = timeline["bars"]
    assert [s["key"] for s in first["segments"]] == ["queue", "prefill", "transfer", "first_decode"]
    assert [s["key"] for s in whole["segments"]] == ["queue", "prefill", "transfer", "first_decode", "decode"]
    assert first["total_ms"] == pytest.approx(timeline["ttft"]["value"], rel=1e-12)
    for bar in (first, whole):
        segments = bar["segments"]
        assert segments[0]["x"] == 8.0
        for a, b in itertools.pairwise(segments):
            assert b["x"] == pytest.approx(a["x"] + a["w"], abs=1e-9)
        assert segments[-1]["x"] + segments[-1]["w"] == pytest.approx(752.0, abs=1e-9)
        assert sum(s["share_here"] for s in segments) == pytest.approx(1.0, abs=1e-12)
        assert bar["total_ms"] == pytest.approx(sum(s["ms"] for s in segments), rel=1e-12)
        assert all(s["colour"] == palette.REQUEST_TIME[s["key"]] for s in segments)
    assert timeline["summary"].startswith(
        "qwen3-30b-a3b-fp8 on 4x p5en, 1 prefill + 3 decode node(s), KV over "
    )
    assert timeline["query"] == ""  # the page fills in the query it was drawn from


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


def test_the_mechanism_page_sets_the_model_beside_the_measured(client) -> None:  # noqa: F811
    html = client.get("/mechanism").text
    assert "NIC busy while the exchange runs, this scenario (model)" in html
    assert ">1.07<" in html and ">2.2<" in html and 'id="nic-model"' in html
