"""decide/explain.py: the words of a verdict, every number from the result or a what-if.

Direct: how a tax reads beside a ratio, the caveats at the edge of the model, the flip's line,
the note on an assumed graph mode, the one reason the lit card quotes, the replicas' words, and
the run flags of no arm. Then, through `evaluate`: the reasons and advisories of issue 10 (the
extrapolated EP, a longer step beside a higher aggregate, the measured knobs, the QP cap, a
proxy the model charges nothing, replicas shown ahead), the replicas' layout in the reasons and
the launch (issue #26), and the DeepEP library each engine loads for a transport.
"""

from __future__ import annotations

import re
from html import unescape
from types import SimpleNamespace
from typing import Any

import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.base.errors import CalcError
from deepep_calc.base.quantity import Q
from deepep_calc.decide.explain import (
    WhatIfs,
    assumed_mode_note,
    caveats,
    engine_flags,
    flip_text,
    launch_bound_reason,
    mechanism,
    reasons,
    referenced_ep,
    replica_layout,
    replica_words,
    tax_words,
    transport_reason,
)
from deepep_calc.report.markdown import render_markdown
from deepep_calc.report.view import VERDICT_BLURB
from estimate.shared import DSV3_VLLM
from web_fixtures import app, client  # noqa: F401  (fixtures)

from .shared import REPLICA_RIVAL
from .shared import command_tokens as _tokens


def test_a_tax_beside_the_ratio_reads_as_what_it_is() -> None:
    """A longer step beside a higher aggregate is no tax on the outcome; a longer step otherwise
    is; a negative one is a saving, never a minus sign."""
    tax, ratio = Q.assumed(2.0, "ms/token", "t"), Q.assumed(1.2, "x", "t")
    assert tax_words(tax, ratio) == (
        "DeepEP's step is 2.0 ms/token [assumed] longer, yet its aggregate is higher: time to first "
        "token and batch size carry it"
    )
    assert tax_words(tax) == "a tax of 2.0 ms/token [assumed] on every step"
    assert tax_words(tax, Q.assumed(0.9, "x", "t")) == "a tax of 2.0 ms/token [assumed] on every step"
    assert (
        tax_words(Q.assumed(-2.0, "ms/token", "t"), ratio)
        == "DeepEP saves 2.0 ms/token [assumed] on every step"
    )


def test_the_referenced_ep_is_the_largest_any_kernel_run_was_measured_at() -> None:
    stub = SimpleNamespace(
        reference=SimpleNamespace(ep=16), cross_check=[SimpleNamespace(ep=32), SimpleNamespace(ep=8)]
    )
    assert referenced_ep(stub) == 32
    assert referenced_ep(SimpleNamespace(reference=SimpleNamespace(ep=16), cross_check=[])) == 16


def test_fewer_clients_than_nodes_is_a_caveat() -> None:
    """4 clients on 8 nodes: at least 8 - 4 = 4 nodes serve nothing."""
    result = evaluate(Scenario(nodes=8, concurrency=4), explain=False)
    assert caveats(result, result.verdict.recommended_arm) == [
        "Caveat: 4 concurrent requests on 8 nodes leave at least 4 nodes without a request to serve."
    ]
    assert caveats(evaluate(Scenario(), explain=False), "allgather") == []


def test_the_flips_line() -> None:
    assert flip_text("--nodes 4", "deepep", Q.assumed(1.1, "x", "t")) == (
        "--nodes 4 would flip the verdict to ▲ deepep (DeepEP / alternative aggregate 1.10 [assumed])."
    )


@pytest.mark.parametrize(
    ("fields", "note"),
    [
        ({}, "; pass --cuda-graphs if you serve with CUDA graphs."),  # TRT-LLM runs eager unless told
        (
            {"engine": "vllm"},
            "; vllm captures CUDA graphs by default: pass --cuda-graphs unless you disable them.",
        ),
        (
            {"engine": "sglang"},
            "; sglang captures CUDA graphs by default: pass --cuda-graphs unless you disable them.",
        ),
    ],
)
def test_an_unset_graph_mode_is_said_to_be_assumed(fields: dict[str, Any], note: str) -> None:
    result = evaluate(Scenario(**fields), explain=False)
    assert assumed_mode_note(result) == (
        "Decode mode not given: eager assumed (the calibration cells ran eager)" + note
    )
    assert assumed_mode_note(evaluate(Scenario(cuda_graphs=True, **fields), explain=False)) == ""


def test_the_lit_cards_reason_is_one_of_the_reasons_word_for_word() -> None:
    """Eager TRT-LLM binds every arm's step on host launches: that is the reason the card quotes,
    and it is among the reasons; nothing fitting has its own fixed line."""
    result = evaluate(Scenario())
    blurb = mechanism(result, result.verdict)
    assert blurb == launch_bound_reason(result, result.verdict) and blurb in result.verdict.reasons
    assert blurb.startswith("Launch-bound: in eager mode the host's kernel launches bind every arm's step")
    graphs = evaluate(Scenario(cuda_graphs=True))
    assert launch_bound_reason(graphs, graphs.verdict) == ""  # replay takes the launches off the step
    assert mechanism(graphs, graphs.verdict) == transport_reason(graphs) in graphs.verdict.reasons
    none = evaluate(Scenario(model="deepseek-v3", instance="p5", nodes=1))
    assert (
        mechanism(none, none.verdict)
        == "Nothing fits as asked: the headline names the smallest change that fits."
    )


def test_one_node_keeps_expert_traffic_on_nvlink() -> None:
    result = evaluate(Scenario(nodes=1, transport="nvlink"), explain=False)
    assert transport_reason(result) == "One node: expert traffic stays on NVLink and no EFA path is involved."


def test_the_replicas_words_name_the_layout_each_node_runs() -> None:
    """A replica's layout `replica:tp` runs tensor parallel in each node; a result without
    replicas (a disaggregated side's stand-in) or with a layout per row names none."""
    rep = SimpleNamespace(
        scenario=SimpleNamespace(nodes=2), arms={"replica": SimpleNamespace(layout="replica:tp")}
    )
    assert replica_layout(rep) == "tp" and replica_words(rep) == "2 single-node replicas of tensor parallel"
    ag = SimpleNamespace(
        scenario=SimpleNamespace(nodes=4), arms={"replica": SimpleNamespace(layout="replica")}
    )
    assert replica_words(ag) == "4 single-node replicas of allgather"
    one = SimpleNamespace(
        scenario=SimpleNamespace(nodes=1), arms={"replica": SimpleNamespace(layout="replica")}
    )
    assert replica_words(one) == "1 single-node replica of allgather"  # one node: one replica
    rows = SimpleNamespace(
        scenario=SimpleNamespace(nodes=2.0),
        arms={"replica": SimpleNamespace(layout=["replica", "replica:tp"])},
    )
    assert replica_layout(rows) == "" and replica_words(rows) == "single-node replicas"
    assert replica_layout(SimpleNamespace(scenario=None, arms={})) == ""


def test_no_arm_has_no_flags_and_no_launch() -> None:
    result = evaluate(Scenario(model="deepseek-v3", instance="p5", nodes=1), explain=False)
    assert engine_flags(result, "none") == {
        "engine": "trtllm",
        "arm": None,
        "args": [],
        "config": {},
        "env": {},
        "cuda_graphs": "",
        "requires": "",
        "launch": None,
    }


def _no_what_if(update: dict[str, Any]) -> Any:
    """A what-if the caller could not run (each is refused): the words must do without it."""
    raise CalcError(f"no what-if here: {update}")


def test_the_reasons_quote_the_compared_figures_and_do_without_a_refused_what_if() -> None:
    """The default scenario's first reason is the rule's own comparison, on measured aggregates:
    545.04 vs 794.56 tok/s, 0.69x, against the 1.05x threshold. No what-if runs (each refused):
    the line on DeepEP's bound then says no single change moves it."""
    result = evaluate(Scenario(), explain=False)
    out = reasons(result, result.verdict, WhatIfs(_no_what_if, _no_what_if, _no_what_if))
    assert out[0] == (
        "Compared on measured aggregates of both arms: DeepEP 545.0 vs 794.6 tok/s [measured] for "
        "allgather, ratio 0.69× [derived]; DeepEP wins only above 1.05× (the noise band)."
    )
    assert "Measured cell(s) trt-ab-k8-c32 supply the tagged-measured numbers above." in out
    moves = next(line for line in out if line.startswith("What would move DeepEP's bound"))
    assert "no single change of transport, comms, graph mode or nodes moves it" in moves


# Reasons and advisories through evaluate (issue 10) ---------------------------------------------


def test_far_extrapolated_ep_is_flagged_in_the_headline() -> None:
    v = evaluate(Scenario(model="deepseek-v3", nodes=16, transport="efa-gda", concurrency=4096)).verdict
    assert "Caveat: DeepEP over efa-gda at EP128" in v.headline and "EP16" in v.headline


def test_a_longer_step_beside_a_higher_aggregate_is_not_called_a_tax() -> None:
    """tp as the alternative caps its batch: DeepEP can lose on the step and win on the aggregate."""
    result = evaluate(
        Scenario(
            model="glm-4.5-air", nodes=1, engine="vllm", cuda_graphs=True, alternative="tp", concurrency=441
        )
    )
    c = result.verdict.compared
    assert c is not None and c.ratio is not None and c.tax_ms_per_token is not None
    assert c.ratio.scalar > 1 and c.tax_ms_per_token.scalar > 0
    assert not any("a tax of" in line for line in result.verdict.reasons)
    assert any("yet its aggregate is higher" in line for line in result.verdict.reasons)
    md = render_markdown(result)
    d = result.verdict.deciding
    if d is not None and d.is_alternative:
        assert "| DeepEP step longer by (first token and batch size carry the aggregate)" in md
    else:  # the table shows the pair that decided (here DeepEP against the one-node replicas)
        assert d is not None and "| DeepEP / single-node replicas, aggregate |" in md
    assert "| DeepEP tax per token |" not in md


@pytest.mark.parametrize("knob", [{"max_qps": 1}, {"max_qps": 6}, {"comms": 4}])
def test_a_deepep_knob_what_if_is_read_against_the_model_at_the_run(knob: dict[str, int]) -> None:
    """Issue 10 item 8: the what-if figure is set beside the model at the measured run, not the run."""
    r = evaluate(Scenario(**knob))
    there = evaluate(Scenario()).arms["deepep"].model_aggregate_tok_s.scalar
    here = r.arms["deepep"].aggregate_tok_s.scalar
    line = next(x for x in r.verdict.reasons if "(cell trt-ab-k8-c32)" in x)
    assert "545.0 tok/s [measured]" in line and f"{there:,.1f} tok/s" in line and f"{here:,.1f} tok/s" in line
    change = re.search(r"by ([+-]\d+\.\d)%", line)
    assert change is not None
    assert float(change.group(1)) == pytest.approx((here / there - 1) * 100, abs=0.06)
    assert evaluate(Scenario(max_qps=1)).arms["deepep"].aggregate_tok_s.scalar <= here + 1e-9 or knob != {
        "max_qps": 6
    }


@pytest.mark.parametrize(
    ("fields", "gains"),
    [({}, False), ({"engine": "vllm", "cuda_graphs": True, "concurrency": 256}, True)],
)
def test_the_qp_advisory_quotes_the_models_own_effect(fields: dict[str, Any], gains: bool) -> None:
    """The advisory's figure for uncapping the QPs is what the model computes at the uncapped cap."""
    r = evaluate(Scenario(**fields))
    now = r.arms["deepep"].model_aggregate_tok_s or r.arms["deepep"].aggregate_tok_s
    up = evaluate(Scenario(**fields, max_qps=129)).arms["deepep"].aggregate_tok_s
    line = next(x for x in r.verdict.advisories if "EP_EFA_MAX_QPS" in x)
    assert "+29.1 % throughput [measured]" in line  # the measured finding, still cited
    if gains:
        assert up.scalar > now.scalar * 1.01
        assert f"{up.scalar:,.1f} tok/s" in line and f"{(up.scalar / now.scalar - 1):+.1%}" in line
    else:
        assert up.scalar <= now.scalar * 1.01 and "under 1 %" in line


@pytest.mark.parametrize("engine", ["sglang", "vllm", "trtllm"])
def test_a_proxy_the_model_charges_nothing_is_not_called_the_bottleneck(engine: str) -> None:
    """Under CUDA graphs the model charges a host-proxied transport no per-layer host round trip
    beyond its kernel time (docs/model.md §3); the reason must say so and name that kernel time,
    not blame "an issue-bound path" for a 0.0 ms proxy part. Eager, the same scenario pays a
    positive proxy term and the reason names it."""
    base = dict(model="deepseek-v3", nodes=2, engine=engine, transport="efa-proxy")
    graphs = evaluate(Scenario(**base, cuda_graphs=True))
    assert graphs.arms["deepep"].breakdown_ms["proxy"].scalar == 0.0
    text = " ".join(graphs.verdict.reasons)
    comm = graphs.arms["deepep"].breakdown_ms["moe_comm"].scalar
    assert "issue-bound" not in text and "not the proxy's posts" in text and f"{comm:.1f} ms" in text
    eager = evaluate(Scenario(**base, cuda_graphs=False))
    proxy = eager.arms["deepep"].breakdown_ms["proxy"].scalar
    reasons = " ".join(eager.verdict.reasons)
    assert proxy > 5.0
    assert "issue-bound" in reasons and f"{proxy:.1f} ms" in reasons


_REPLICAS_AHEAD = "Single-node replicas show"


def test_replicas_shown_ahead_of_a_measured_alternative_say_why_they_are_not_picked() -> None:
    """The calibration card: allgather's measured aggregate (ramp and tail included) sits beside
    the replicas' model figure, which looks 9 % higher and cheaper; the rule compares the model
    for both and finds a tie, and a reason says so with the very figures it compared."""
    result = evaluate(Scenario())
    v = result.verdict
    rep, alt = result.arms["replica"], result.arms["allgather"]
    assert v.code == "dense" and v.recommended_arm == "allgather"  # the premise
    assert rep.aggregate_tok_s.scalar > alt.aggregate_tok_s.scalar * 1.05
    line = next(x for x in v.reasons if x.startswith(_REPLICAS_AHEAD))
    assert "794.6 tok/s [measured]" in line and f"{rep.aggregate_tok_s.scalar:,.1f} tok/s [assumed]" in line
    shown = re.search(r"they are ([\d,.]+) vs ([\d,.]+) tok/s", line)
    assert shown is not None
    like_rep, like_alt = (float(x.replace(",", "")) for x in shown.groups())
    assert like_rep == round(rep.model_aggregate_tok_s.scalar, 1)
    assert like_alt == round(alt.model_aggregate_tok_s.scalar, 1)
    assert like_rep <= like_alt * v.compared.threshold  # what the rule saw: no replica win


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"engine": "vllm"},
        {"engine": "vllm", "comms": 1, "concurrency": 4},
        {"cuda_graphs": True},
        {"model": "deepseek-v3", "nodes": 2, "engine": "sglang", "cuda_graphs": True},
        {"model": "deepseek-v3", "nodes": 2, "transport": "efa-gda", "concurrency": 1800},
        {"model": "gpt-oss-120b", "nodes": 2, "alternative": "tp"},
        {"nodes": 1, "transport": "nvlink"},
        {"slo_tok_s": 25.0},
    ],
)
def test_the_replica_line_appears_exactly_when_the_table_shows_replicas_ahead(fields: dict[str, Any]) -> None:
    """Said when replicas are in contention, not recommended, and shown ahead by more than the
    noise band; never otherwise (recommended replicas have their own reason). The calibration
    scenario and an SLO on it say it; vLLM's pair (304.0 measured vs 304.0 model) does not."""
    result = evaluate(Scenario(**fields))
    v = result.verdict
    rep = result.arms["replica"]
    chosen = result.arms.get(v.recommended_arm)
    ahead = (
        chosen is not None
        and chosen is not rep
        and bool(rep.feasible)
        and rep.meets_slo is not False
        and rep.meets_ttft is not False
        and rep.aggregate_tok_s.scalar > chosen.aggregate_tok_s.scalar * v.compared.threshold
    )
    assert any(x.startswith(_REPLICAS_AHEAD) for x in v.reasons) == ahead


# The replicas' layout in the reasons and the launch (issue #26) ---------------------------------


def test_the_launch_runs_the_chosen_layout_on_one_node() -> None:
    """The replica's command is the layout's own, sized to one node (not the cluster)."""
    r = evaluate(Scenario(**DSV3_VLLM, nodes=2, concurrency=256))
    assert r.arms["replica"].layout == "replica:tp"
    command = engine_flags(r, "replica")["launch"]["command"]
    assert "--tensor-parallel-size 8" in command
    assert "--tensor-parallel-size 16" not in command


def test_the_card_names_the_layout() -> None:
    r = evaluate(Scenario(**DSV3_VLLM, nodes=2, concurrency=256))
    reasons = " ".join(r.verdict.reasons)
    assert "2 single-node replicas of tensor parallel" in reasons


def test_the_lit_card_says_why_with_one_of_the_reasons(client) -> None:  # noqa: F811
    """Under CUDA graphs the model charges a host proxy nothing: a fixed blurb saying the proxy
    round trip costs more would contradict the Why beside it."""
    query = "engine=vllm&cuda_graphs=true&nodes=2&model=deepseek-v3&concurrency=256"
    html = client.get(f"/?{query}").text
    lit = re.search(r'<article class="card card-\w+ lit".*?<p class="blurb">(.*?)</p>', html, re.S)
    assert lit is not None
    blurb = unescape(re.sub(r"<[^>]+>", "", lit.group(1))).strip()
    result = evaluate(REPLICA_RIVAL)
    reasons = [re.sub(r" \[(measured|derived|assumed)\]", " \\1", r) for r in result.verdict.reasons]
    shown = re.sub(r" (measured|derived|assumed)(?=[ .,;:)])", " \\1", blurb)
    assert shown in reasons, (shown, reasons)
    assert "round trip costs more" not in blurb
    for text in VERDICT_BLURB.values():  # the cards that are not lit say what they mean, not why
        assert text.startswith("When ")


# The DeepEP library each engine loads --------------------------------------------------------


@pytest.mark.parametrize(
    ("transport", "backend"),
    [
        ("efa-proxy", "deepep_v2"),  # DeepEP 2.x over NCCL-GIN
        ("efa-gda", "deepep_v2"),
        ("efa-nvshmem", "deepep_low_latency"),  # DeepEP 1.x
        ("efa-uccl", "deepep_low_latency"),  # UCCL-EP keeps DeepEP's API ([U926], [NIXL])
        ("efa-pplx", None),  # no vLLM backend loads pplx-garden
        ("efa-native-cqpoll", None),
    ],
)
def test_the_engine_loads_the_library_of_the_transport(transport: str, backend: str | None) -> None:
    for engine, flag, value in (
        ("vllm", "--all2all-backend", backend),
        ("sglang", "--moe-a2a-backend", "deepep"),
    ):
        result = evaluate(Scenario(model="deepseek-v3", engine=engine, nodes=2, transport=transport))
        flags = engine_flags(result, "deepep")
        tokens = _tokens(flags["launch"]["command"])
        chosen = [tokens[i + 1] for i, tok in enumerate(tokens) if tok == flag]
        if backend is None:  # no flag that would load another library: a comment says why
            assert chosen == []
            assert f"loads {transport}" in flags["launch"]["command"].replace("\n#   ", " ")
        else:
            assert chosen == [value]
        assert not any("{" in a for a in flags["args"])  # no placeholder left
