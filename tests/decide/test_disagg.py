"""decide/disagg.py: the words of a disaggregated deployment beside the aggregated arms.

Direct: a figure with its band (`banded_words`), the deployment's layout in words, the rule a
split must pass to beat the aggregated arm (targets first, then the aggregate by more than the
noise band), the line of a split asked for that cannot run, and the advisories on the
references' range and the idle side. Then (issue 28), through `evaluate`: the silent TCP
fallback and the queue-depth limit as advisories, and the card's line for a split that wins,
one asked for, and none.
"""

from __future__ import annotations

from deepep_calc import Scenario, evaluate
from deepep_calc.base.quantity import Q
from deepep_calc.decide.disagg import _beats, advisories, banded_words, layout_words

DSV3 = dict(model="deepseek-v3", engine="vllm", prefill_nodes=1)


def test_a_figure_is_worded_with_its_band_and_its_tag() -> None:
    assert banded_words(Q.assumed(1364.2, "tok/s", "m").with_band(1226.4, 1400.1)) == (
        "1,364 tok/s (1,226–1,400) [assumed]"
    )
    assert banded_words(Q.measured(545.04, "tok/s", "run"), 1) == "545.0 tok/s [measured]"
    assert banded_words(Q.assumed(float("nan"), "x", "m")) == "n/a [assumed]"  # a ratio has no unit


def test_the_layout_names_each_sides_arm_and_the_kv_transport() -> None:
    """DeepEP on a side of one node rides NVLink; on two nodes, the scenario's transport."""
    two = evaluate(Scenario(**DSV3, decode_nodes=2, prefill_arm="tp", decode_arm="deepep"), explain=False)
    assert layout_words(two.disaggregated) == (
        "1P2D (prefill: tensor parallel, decode: DeepEP over efa-proxy), KV over nixl-libfabric"
    )
    one = evaluate(Scenario(**DSV3, decode_nodes=1, decode_arm="deepep"), explain=False)
    assert layout_words(one.disaggregated).startswith(
        "1P1D (prefill: DeepEP over NVLink, decode: DeepEP over NVLink)"
    )


def test_beating_is_targets_first_then_more_than_the_noise_band() -> None:
    """Meeting the targets beats a far higher aggregate that misses them; between equals, 1,060
    beats 1,000 (above 1,000 x 1.05 = 1,050) and 1,050 does not."""
    thousand = Q.assumed(1000.0, "tok/s", "m")
    assert _beats(True, Q.assumed(1.0, "tok/s", "m"), False, thousand)
    assert not _beats(False, Q.assumed(1e6, "tok/s", "m"), True, thousand)
    assert _beats(True, Q.assumed(1060.0, "tok/s", "m"), True, thousand)
    assert not _beats(True, Q.assumed(1050.0, "tok/s", "m"), True, thousand)


def test_a_split_asked_for_that_cannot_run_says_why_and_what_the_aggregated_arm_serves() -> None:
    """DeepSeek-V3's 256 experts do not split over DeepEP's EP24 on the 3 decode nodes: the line
    says so, then quotes the aggregated arm on the same 4 nodes; the aggregated arm wins."""
    res = evaluate(Scenario(**DSV3, decode_nodes=3, prefill_arm="tp", decode_arm="deepep"))
    line = res.verdict.disaggregation
    assert (line["asked"], line["winner"], line["disaggregated"]["feasible"]) == (True, "aggregated", False)
    assert line["ask"] == {"prefill_nodes": 1, "decode_nodes": 3}
    assert line["line"].startswith(
        "This disaggregated 1P3D (prefill: tensor parallel, decode: DeepEP over efa-proxy), KV over "
        "nixl-libfabric cannot run: the decode side (3 nodes, deepep) 256 experts do not split evenly "
        "over its deepep layout; the aggregated allgather on the same 4 nodes serves "
    )


def test_the_advisories_say_where_the_references_end_and_which_side_idles() -> None:
    """1P2D at 64 clients: no disaggregated reference ran a 1P2D split, so the figures carry the
    wider band and an advisory says why; the load itself sets the pace,
    so the prefill side idles most of the time and the balance of the two sides is quoted."""
    res = evaluate(Scenario(**DSV3, decode_nodes=2, concurrency=64, prefill_arm="tp", decode_arm="deepep"))
    d = res.disaggregated
    out = advisories(res)
    assert d.inside_references is False and d.evidence_note.startswith("no disaggregated reference ran 1P2D")
    assert f"Disaggregated figures: {d.evidence_note}." in out
    side, idle = d.idle()
    assert side == "prefill" and idle.scalar > 0.5 and d.bottleneck == "clients"
    idle_line = next(a for a in out if a.startswith("The prefill side is idle"))
    assert (
        f"{idle.scalar:.0%} of the time [assumed]: the load itself (every request is in flight, none waits)"
        in idle_line
    )
    assert f"balance at about {d.balance.scalar:.2f} prefill nodes per decode node" in idle_line
    assert advisories(evaluate(Scenario(), explain=False)) == []  # aggregated: nothing to advise


# Through evaluate (issue 28) ----------------------------------------------------------------------


def test_rdma_transports_warn_of_the_silent_tcp_fallback_with_figures():
    res = evaluate(Scenario(model="deepseek-v3", prefill_nodes=1, decode_nodes=1))
    d = res.disaggregated
    assert d.tcp_fallback and set(d.tcp_fallback) == {"transfer_ms", "ttft_ms", "aggregate_tok_s"}
    assert any("OFI plugin" in a and "TCP" in a for a in res.verdict.advisories)


def test_queue_depth_limit_is_flagged_at_high_load():
    hot = evaluate(
        Scenario(model="deepseek-v3", prefill_nodes=1, decode_nodes=3, isl=8192, osl=256, concurrency=64)
    )
    calm = evaluate(
        Scenario(model="deepseek-v3", prefill_nodes=1, decode_nodes=3, isl=1024, osl=256, concurrency=8)
    )
    assert hot.disaggregated.load_limit is not None
    assert any("CQ drain" in a for a in hot.verdict.advisories)
    assert calm.disaggregated.load_limit is None
    assert not any("CQ drain" in a for a in calm.verdict.advisories)


def test_the_card_names_a_split_that_beats_the_aggregated_arm():
    res = evaluate(
        Scenario(
            model="qwen3-235b-a22b-fp8",
            isl=8192,
            osl=128,
            concurrency=64,
            nodes=2,
            engine="sglang",
            cuda_graphs=True,
        )
    )
    line = res.verdict.disaggregation
    assert res.verdict.code in ("dense", "capacity", "deepep")  # the three verdicts stay
    assert line is not None and line["winner"] == "disaggregated" and not line["asked"]
    dis, agg = line["disaggregated"], line["aggregated"]
    assert dis["aggregate_tok_s"]["value"] > agg["aggregate_tok_s"]["value"]
    for q in (dis["aggregate_tok_s"], agg["aggregate_tok_s"], dis["ttft_ms"]):
        assert "low" in q and "high" in q
    assert "--disagg" in line["line"] and f"{dis['aggregate_tok_s']['value']:,.0f}" in line["line"]


def test_the_card_says_when_the_aggregated_arm_beats_the_split_asked_for():
    res = evaluate(
        Scenario(
            model="deepseek-v3",
            prefill_nodes=1,
            decode_nodes=1,
            engine="vllm",
            cuda_graphs=True,
            concurrency=64,
            isl=1024,
            osl=1024,
        )
    )
    line = res.verdict.disaggregation
    assert line["asked"] and line["winner"] in ("aggregated", "tie", "disaggregated")
    assert line["aggregated"] is not None and line["disaggregated"] is not None
    assert res.to_json()["verdict"]["disaggregation"] == line


def test_no_line_on_one_node_or_when_the_split_loses():
    assert evaluate(Scenario(nodes=1, transport="nvlink")).verdict.disaggregation is None
    assert evaluate(Scenario()).verdict.disaggregation is None  # the calibration A/B: a split loses
