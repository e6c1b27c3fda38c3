"""Issue 10: verdicts that never contradict physics or their own numbers.

One regression test (or a few) per defect of the issue, against the scenario the issue names,
plus the close-call wording driven by uncertainty bands on constructed results.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cli_runner import run_cli
from deepep_calc import Scenario, evaluate
from deepep_calc.base.errors import CalcError, InputError
from deepep_calc.base.quantity import Q, Tag
from deepep_calc.decide.answer import decide
from deepep_calc.decide.headline import step_clause
from deepep_calc.decide.verdict import classify_codes
from deepep_calc.estimate.arms import prompt_ceiling_ms
from deepep_calc.estimate.compute import compute
from deepep_calc.question.fields import PROMPT_TIMEOUT_MS
from deepep_calc.question.scenario import resolve
from deepep_calc.report.markdown import render_markdown
from deepep_calc.whatif.explanation import explain_verdict
from paths import TESTS

HF = TESTS / "fixtures" / "hf"
QWEN_CONFIG = HF / "qwen3-30b-a3b-fp8" / "config.json"


def _json(capsys: pytest.CaptureFixture[str], *args: Any) -> dict[str, Any]:
    code, out, err = run_cli(capsys, "evaluate", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def _refused(capsys: pytest.CaptureFixture[str], *args: Any) -> str:
    code, out, err = run_cli(capsys, "evaluate", *args)
    assert code == 2 and not out, (code, out)
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


# 1. NVLink across nodes ---------------------------------------------------------------------


def test_nvlink_across_nodes_is_refused_like_the_kernel_command(capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(
        capsys, "--transport", "nvlink", "--nodes", "8", "--model", "deepseek-v3", "--concurrency", 512
    )
    assert "--transport: 'nvlink' is not allowed" in err and "one node" in err and "efa-gda" in err
    code, _, kerr = run_cli(capsys, "kernel", "--transport", "nvlink", "--ep", 32)
    assert code == 2 and "nvlink" in kerr  # the same refusal the kernel query gives


def test_nvlink_on_one_node_is_answered(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "--transport", "nvlink", "--nodes", "1")
    assert doc["arms"]["deepep"]["feasible"]


def test_a_grid_marks_nvlink_across_nodes_infeasible_row_by_row() -> None:
    r = resolve(Scenario(transport="nvlink", nodes=1))
    res = compute(r.vary(nodes=np.array([1, 2, 4])))
    assert list(np.broadcast_to(res.arms["deepep"].feasible, (3,))) == [True, False, False]
    _, rec = classify_codes(res)
    assert "deepep" not in list(np.broadcast_to(rec, (3,)))[1:]


# 2. the verdict shows the figures it compared -------------------------------------------------


def _ratio_in(headline: str) -> float:
    m = re.search(r"(\d+\.\d+)× \[", headline)
    assert m, headline
    return float(m.group(1))


def test_measured_allgather_is_set_aside_against_a_modelled_deepep(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _json(capsys, "--transport", "efa-gda")
    v, arms = doc["verdict"], doc["arms"]
    c = v["compared"]
    assert c["basis"] == "model"
    assert arms["allgather"]["aggregate_tok_s"]["tag"] == "measured"  # shown in the table ...
    agg = c["aggregate_tok_s"]
    assert (
        agg["allgather"]["value"] == arms["allgather"]["model_aggregate_tok_s"]["value"]
    )  # ... not compared
    assert agg["deepep"]["value"] == arms["deepep"]["aggregate_tok_s"]["value"]
    ratio = agg["deepep"]["value"] / agg["allgather"]["value"]
    assert doc["ratio_deepep_vs_alternative"]["value"] == pytest.approx(ratio)
    assert _ratio_in(v["headline"]) == round(ratio, 2)
    assert any("794.6 tok/s [measured] is set aside" in line for line in v["reasons"])
    # like with like: never a ratio above 1 beside a positive tax (on TRT-LLM eager a
    # GPU-initiated exchange hides under the CPU path: the two model steps tie)
    assert ratio <= 1 and doc["tax_ms_per_token"]["value"] >= 0
    steps = arms["deepep"]["model_step_ms"]["value"] - arms["allgather"]["model_step_ms"]["value"]
    assert doc["tax_ms_per_token"]["value"] == pytest.approx(steps)


def test_the_default_scenario_compares_the_measurements(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys)
    c = doc["verdict"]["compared"]
    assert c["basis"] == "measured" and not c["set_aside"]
    assert c["ratio"]["value"] == pytest.approx(545.04 / 794.56)
    assert doc["tax_ms_per_token"]["tag"] == "derived"
    assert doc["tax_ms_per_token"]["value"] == pytest.approx(1000 / 19.62 - 1000 / 27.57, abs=0.05)
    assert (
        "0.69× [derived]" in doc["verdict"]["headline"]
        and "tax of 14.7 ms/token" in doc["verdict"]["headline"]
    )


GDA_GRAPHS = Scenario(
    model="deepseek-v3",
    nodes=2,
    engine="vllm",
    cuda_graphs=True,
    transport="efa-gda",
    concurrency=1024,
    isl=128,
    osl=1024,
)  # GPU-initiated EFA under CUDA graphs at DeepSeek scale and a large batch: DeepEP's step is
# the shorter against allgather, and it beats the one-node replicas (TP8), short of KV cache


def test_a_negative_tax_reads_as_a_saving_everywhere() -> None:
    result = evaluate(GDA_GRAPHS)
    assert result.tax_ms_per_token.scalar < 0
    v = result.verdict
    assert not re.search(r"(?<![\w-])-\d", v.headline)
    assert "saves" in v.headline or v.close_call  # a close call words the band, not the step
    assert any("DeepEP saves" in line for line in v.reasons)
    md = render_markdown(result)
    rows = [line for line in md.splitlines() if "per token" in line and line.startswith("|")]
    # the report words the comparison that decided (here against the replicas) as a saving, and
    # no row prints a negative number
    assert rows and all(row.startswith("| DeepEP saving per token") for row in rows)
    assert all("-" not in row.split("|")[2] for row in rows)


@pytest.mark.parametrize(
    ("ratio", "tax", "needle"),
    [
        (0.7, 14.7, "pays a tax of 14.7"),
        (1.3, -3.0, "saves 3.0"),
        (1.2, 2.0, "despite"),
        (0.9, -1.0, "although"),
    ],
)
def test_step_clause_never_sets_a_ratio_against_a_contradicting_tax(
    ratio: float, tax: float, needle: str
) -> None:
    text = step_clause(Q.assumed(ratio, "x", "t"), Q.assumed(tax, "ms/token", "t"))
    assert needle in text and "-" not in text


# 3. unsplittable layouts ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "field", "needle"),
    [
        (["--experts", "100"], "--experts: 100", "of 16 over every group (e.g. 96 or 112)"),
        (["--experts", "129"], "--experts: 129", "of 16 over every group (e.g. 128 or 144)"),
        (["--gpus-per-node", "3"], "--gpus-per-node: 3", "1, 2, 4, 8"),
    ],
)
def test_an_unsplittable_layout_is_an_input_error_not_capacity(
    capsys: pytest.CaptureFixture[str], args: list[str], field: str, needle: str
) -> None:
    err = _refused(capsys, *args)
    assert field in err and needle in err and "CAPACITY" not in err


def test_a_sweep_refuses_an_unsplittable_combination_as_evaluate_does() -> None:
    from deepep_calc.whatif.sweep.grid import sweep_grid

    with pytest.raises(InputError, match="--gpus-per-node: 3 is not allowed"):
        sweep_grid({"gpus_per_node": "3,8", "nodes": "1,2"})
    with pytest.raises(InputError, match="--experts: 100 is not allowed"):
        sweep_grid({"experts": "100", "nodes": "1:4"})
    assert sweep_grid({"experts": "100", "nodes": "1:4", "alternative": "tp"}).rows == 4


def test_one_expert_config_is_refused_naming_the_model(tmp_path: Path) -> None:
    doc = json.loads((HF / "mixtral-8x7b" / "config.json").read_text("utf-8"))
    doc |= {"num_local_experts": 1, "num_experts_per_tok": 1}
    path = tmp_path / "one" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc), "utf-8")
    with pytest.raises(InputError) as info:
        evaluate(Scenario(model=str(path)))
    assert info.value.field == "--model" and "1 routed experts" in info.value.message


def test_when_some_arm_splits_the_verdict_names_the_split_never_capacity() -> None:
    tp = evaluate(Scenario(experts=100, alternative="tp"))
    assert (tp.verdict.code, tp.verdict.recommended_arm) == ("dense", "tp")
    # TP ties replicas of TP8 here (both launch-bound), so the headline may word the close call
    assert "cannot be split" in " ".join([tp.verdict.headline, *tp.verdict.reasons])
    ep24 = evaluate(Scenario(model="deepseek-v3", nodes=3))  # 256 experts do not split over EP24
    assert ep24.verdict.code != "capacity" and ep24.verdict.recommended_arm == "replica"
    assert any("256 experts cannot be split evenly over EP24" in line for line in ep24.verdict.reasons)


# 4. nothing fits and 5. targets no arm meets: tests/whatif/test_fixes.py (the fixes' own module)


# 6. inputs outside what the model can say -----------------------------------------------------


def test_a_thousand_nodes_quotes_no_ratio_between_arms_that_cannot_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _json(capsys, "--nodes", "1000")
    v = doc["verdict"]
    assert v["compared"]["ratio"] is None and "cannot run here" in v["compared"]["note"]
    assert "24.6" not in v["headline"] and "1,213" not in v["headline"]
    assert "968 nodes without a request" in v["headline"]  # flagged in the headline
    md = render_markdown(evaluate(Scenario(nodes=1000)))
    assert "n/a: DeepEP and allgather cannot run here" in md


def test_a_queue_of_days_is_not_feasible(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "--concurrency", "10000000")
    assert not any(a["feasible"] for a in doc["arms"].values())
    assert all("a client waits" in a["why_not"] for a in doc["arms"].values())
    v = doc["verdict"]
    assert v["status"] == "nothing_fits" and v["fixes"]
    assert {f["change"].split()[0] for f in v["fixes"]} <= {"--nodes", "--concurrency", "--instance"}


def test_the_prompt_ceiling_is_ten_minutes_unless_the_user_allows_more() -> None:
    assert prompt_ceiling_ms(None) == PROMPT_TIMEOUT_MS == 600_000
    assert prompt_ceiling_ms(5_000) == PROMPT_TIMEOUT_MS
    assert prompt_ceiling_ms(3_600_000) == 3_600_000
    slow = Scenario(concurrency=40_000, max_batch=16)
    assert not evaluate(slow).arms["allgather"].feasible
    patient = evaluate(slow.copy(**{"ttft_ms": 36_000_000.0}))
    assert patient.arms["allgather"].feasible


def test_isl_beyond_the_context_window_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(capsys, "--isl", "1000000")
    assert "--isl: 1000000" in err and "40,960" in err and "context window" in err


def test_far_extrapolated_ep_is_flagged_in_the_headline() -> None:
    v = evaluate(Scenario(model="deepseek-v3", nodes=16, transport="efa-gda", concurrency=4096)).verdict
    assert "Caveat: DeepEP over efa-gda at EP128" in v.headline and "EP16" in v.headline


@pytest.mark.parametrize(
    "fields",
    [
        {"engine": "vllm", "cuda_graphs": True, "concurrency": 64, "alternative": "tp"},  # close call
        {"concurrency": 32},  # a dense call
        {"instance": "p5"},  # nothing fits one p5 node
    ],
    ids=["close", "dense", "nothing-fits"],
)
def test_one_node_names_nvlink_not_the_configured_transport(
    capsys: pytest.CaptureFixture[str], fields: dict[str, Any]
) -> None:
    """On one node DeepEP's exchange rides NVLink and the model charges no EFA path: a headline,
    card or report that named efa-proxy (the default transport) would describe a path not taken."""
    s = Scenario(model="deepseek-v3", nodes=1, **fields)
    result = evaluate(s)
    assert s.transport == "efa-proxy" and "efa-proxy" not in result.verdict.headline
    if result.verdict.status == "ok":
        assert "DeepEP over NVLink" in result.verdict.headline
    assert "DeepEP over NVLink" in render_markdown(result)
    flags = [f"--{k.replace('_', '-')}" + ("" if v is True else f"={v}") for k, v in fields.items()]
    code, out, _ = run_cli(capsys, "evaluate", "--model", "deepseek-v3", "--nodes", "1", *flags)
    assert code == 0 and "efa-proxy" not in out.split("Why")[0] and "DeepEP over NVLink" in out
    assert "EP_NUM_COMMS" not in out.split("Why")[0]  # no proxy lanes on one node
    two = evaluate(Scenario(model="deepseek-v3", nodes=2, **fields)).verdict.headline
    assert "DeepEP over efa-proxy" in two  # across nodes the transport is named


# 9. a config.json that is a preset ------------------------------------------------------------


def test_a_config_json_of_the_calibrated_preset_gets_its_measured_cells() -> None:
    mine = evaluate(Scenario(model=str(QWEN_CONFIG)))
    preset = evaluate(Scenario())
    for name in ("deepep", "allgather"):
        assert mine.arms[name].measured_cell == preset.arms[name].measured_cell == "trt-ab-k8-c32"
        assert mine.arms[name].aggregate_tok_s.value == preset.arms[name].aggregate_tok_s.value
    assert any("architecturally the preset qwen3-30b-a3b-fp8" in line for line in mine.verdict.reasons)


def test_a_config_json_that_differs_says_why_it_gets_no_cells(tmp_path: Path) -> None:
    doc = json.loads(QWEN_CONFIG.read_text("utf-8"))
    doc["moe_intermediate_size"] = doc["moe_intermediate_size"] * 2
    path = tmp_path / "qwen3-30b-a3b-fp8" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc), "utf-8")
    result = evaluate(Scenario(model=str(path)))
    assert not any(a.measured_cell for a in result.arms.values())
    assert any("differs from that preset in moe_intermediate" in line for line in result.verdict.reasons)
    dtype = evaluate(Scenario(model=str(QWEN_CONFIG), weight_dtype="bf16"))
    assert not any(a.measured_cell for a in dtype.arms.values())


# 11. title, headline and flags name one arm; the run block pastes ---------------------------


def test_title_headline_and_flags_name_the_same_arm() -> None:
    result = evaluate(Scenario(model="deepseek-v3", nodes=2, engine="sglang", cuda_graphs=True))
    v = result.verdict
    assert v.recommended_arm == "replica", v.headline
    assert v.title == "Use DENSE / single-node replicas"
    assert v.headline.startswith(
        ("Run 2 single-node replicas", "Too close to call, likely single-node replicas")
    )
    assert v.flags["arm"] == "replica"
    for scenario in (Scenario(), Scenario(model="kimi-k2")):
        v = evaluate(scenario).verdict
        assert v.flags["arm"] == v.recommended_arm
        label = {"allgather": "allgather", "deepep": "DeepEP"}[v.recommended_arm]
        assert label in v.title and label in v.headline.split(":")[0] + v.headline


# close calls: bands on the ratio ---------------------------------------------------------------


def _explained(result: Any) -> Any:
    """`result` decided again and explained (the verdict a face shows), on a copy."""
    out = copy.copy(result)
    out.verdict = decide(out)
    return explain_verdict(out)


def _with_band(result: Any, low: float, high: float) -> Any:
    """The result with the band [low, high] on its DeepEP / alternative ratio and, where the
    replicas are a separate rival, on the DeepEP / replicas ratio too (either may decide)."""
    out = copy.copy(result)
    out.ratio_deepep_vs_alternative = result.ratio_deepep_vs_alternative.with_band(low, high)
    out._versus = {}
    if result.alternative != "replica" and "replica" in result.arms:
        ratio, ratio_pu, tax, measured = result.versus("deepep", "replica")
        out._versus[("deepep", "replica")] = (ratio.with_band(low, high), ratio_pu, tax, measured)
    return out


def test_a_band_across_the_threshold_makes_the_headline_say_too_close() -> None:
    base = evaluate(Scenario(transport="efa-gda"))  # modelled both arms, ratio 0.94
    ratio = base.ratio_deepep_vs_alternative.scalar
    v = _explained(_with_band(base, ratio - 0.1, ratio + 0.15))
    assert v.close_call and v.code == base.verdict.code == "dense"
    assert v.headline.startswith("Too close to call, likely allgather")
    assert "band" in v.headline and "1.05× threshold" in v.headline


def _unbanded(result: Any) -> Any:
    """The result with no band on its ratio (evaluate() attaches the shipped bands)."""
    out = copy.copy(result)
    q = result.ratio_deepep_vs_alternative
    out.ratio_deepep_vs_alternative = type(q)(q.value, q.unit, q.tag, q.source)
    return out


def _unbanded_pair(result: Any) -> Any:
    """The result with no band on any ratio it compares (its DeepEP / replicas one included)."""
    out = _unbanded(result)
    out._versus = {}
    out.table = replace(result.table, bands={})
    return out


def test_a_band_clear_of_the_threshold_changes_nothing() -> None:
    base = _unbanded(evaluate(Scenario(transport="efa-gda")))
    plain = _explained(base)
    ratio = base.ratio_deepep_vs_alternative.scalar
    v = _explained(_with_band(base, ratio - 0.05, ratio + 0.03))  # the threshold is 1.05
    assert not v.close_call and v.headline == plain.headline and v.code == plain.code


def test_no_band_is_exactly_the_rule_without_bands() -> None:
    base = _unbanded(evaluate(Scenario(transport="efa-gda")))
    once, again = _explained(base), _explained(base)
    assert once.to_json() == again.to_json() and not once.close_call
    assert once.headline.startswith("Run allgather")


def test_evaluate_attaches_the_shipped_band_and_says_too_close() -> None:
    """With the cross-validated ratio band (0.83-1.19x around 1.00) the call is too close."""
    v = evaluate(Scenario(transport="efa-gda")).verdict
    assert v.close_call and v.headline.startswith("Too close to call, likely allgather")


def test_a_deepep_win_inside_its_band_is_likely_deepep() -> None:
    base = evaluate(GDA_GRAPHS)
    assert base.verdict.code == "deepep"
    v = _explained(_with_band(base, 0.9, 2.2))
    assert v.close_call and v.code == "deepep" and v.headline.startswith("Too close to call, likely DeepEP")


def test_a_band_is_ignored_where_both_arms_are_measured() -> None:
    base = evaluate(Scenario())
    v = _explained(_with_band(base, 0.5, 1.5))
    assert not v.close_call and v.headline == base.verdict.headline


def test_a_sweep_row_ignores_bands_in_its_code() -> None:
    r = resolve(Scenario(transport="efa-gda"))
    res = compute(r.vary(concurrency=np.array([8, 32, 128])))
    codes, _ = classify_codes(res)
    res.ratio_deepep_vs_alternative = res.ratio_deepep_vs_alternative.with_band(0.0, 10.0)
    assert list(classify_codes(res)[0]) == list(codes)


def test_refusals_are_calc_errors_with_a_field() -> None:
    for kw in ({"transport": "nvlink"}, {"experts": 100}, {"isl": 10**6}):
        with pytest.raises(CalcError) as info:
            evaluate(Scenario(**kw))
        assert info.value.field


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


def test_a_profile_calibrated_on_a_config_path_still_replays_its_cells(tmp_path: Path) -> None:
    """Cells of a user's profile name the model as calibrated (here a config path): they match."""
    from deepep_calc import cli

    real = TESTS / "fixtures" / "aiperf"
    prefix = "trtllm-0.21_qwen3-30b-a3b-fp8_ep16_2xp5en"
    out = tmp_path / "p.toml"
    cli.main(
        [
            "calibrate",
            "--dense",
            str(real / f"{prefix}_dense-allgather_c4_isl120.json"),
            "--deepep",
            str(real / f"{prefix}_deepep-epnc1_c4_isl120.json"),
            "--model",
            str(QWEN_CONFIG),
            "-o",
            str(out),
            "--json",
        ]
    )
    result = evaluate(
        Scenario(model=str(QWEN_CONFIG), calibration=str(out), comms=1, concurrency=4, isl=120, osl=128)
    )
    assert result.arms["deepep"].measured_cell == "your-c4-k1"  # the profile's own cell, replayed


def test_a_capacity_call_inside_its_band_says_either_ep_flavour() -> None:
    """Under capacity the faster EP flavour wins (threshold 1): a band across 1 is a close call."""
    base = evaluate(Scenario(model="kimi-k2"))
    assert base.verdict.code == "capacity" and base.verdict.compared.basis == "model"
    ratio = base.ratio_deepep_vs_alternative.scalar
    v = _explained(_with_band(base, min(ratio, 1.0) - 0.1, max(ratio, 1.0) + 0.1))
    assert v.close_call and v.code == "capacity" and v.recommended_arm == base.verdict.recommended_arm
    assert "Either EP flavour, too close to call" in v.headline and "spans 1.00×" in v.headline
    clear = _explained(_with_band(base, ratio * 0.99, ratio * 1.01)) if abs(ratio - 1) > 0.02 else None
    assert clear is None or (not clear.close_call and "too close" not in clear.headline)


def test_replicas_over_a_higher_deepep_figure_say_it_is_a_tie() -> None:
    """Replicas recommended while DeepEP's aggregate is (slightly) higher: the headline says why."""
    scenario = Scenario(
        model="deepseek-v3", nodes=4, transport="efa-gda", engine="vllm", cuda_graphs=True, concurrency=136
    )
    result = evaluate(scenario)
    v = result.verdict
    agg = v.compared.aggregate
    assert v.recommended_arm == "replica"  # the scenario's premise; re-pick one if the model moves
    assert agg["replica"].scalar < agg["deepep"].scalar < agg["replica"].scalar * v.compared.threshold
    # the comparison that decided is DeepEP against the replicas: its band spans the threshold
    assert v.deciding is not None and v.deciding.arms == ("deepep", "replica")
    assert v.close_call and v.headline.startswith("Too close to call, likely single-node replicas")
    plain = _explained(_unbanded_pair(result))  # without the band the tie is said in words
    assert not plain.close_call and "within the 5% noise band, a tie" in plain.headline
    calib = evaluate(Scenario(nodes=1000)).verdict
    assert calib.recommended_arm == "replica" and "a tie" not in calib.headline


def test_the_allgather_measurement_holds_across_deepep_only_knobs() -> None:
    """EP_NUM_COMMS and EP_EFA_MAX_QPS are DeepEP's knobs: the allgather run still measures its arm."""
    base = evaluate(Scenario())
    for knob in ({"max_qps": 1}, {"max_qps": 6}, {"comms": 4}):
        r = evaluate(Scenario(**knob))
        assert r.arms["allgather"].measured_cell == base.arms["allgather"].measured_cell == "trt-ab-k8-c32"
        assert r.arms["allgather"].aggregate_tok_s.tag == Tag.MEASURED
        assert r.arms["deepep"].measured_cell is None  # DeepEP's own figure is modelled off the run
        assert r.verdict.compared.basis == "model"  # so the rule compares model with model
    k1 = evaluate(Scenario(comms=1, concurrency=4))
    assert k1.arms["allgather"].measured_cell == "trt-ab-k1-c4"  # the exact pair comes first


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


# Rule boundaries on results altered by hand (each would let a mutant of the rule survive) -----


def test_a_band_that_touches_the_threshold_crosses_it() -> None:
    """The band spans the threshold when either end equals it: a ratio that may be exactly the
    noise band is a close call, not a certain one."""
    from deepep_calc.decide.verdict import band_crosses

    def ratio(low: float, high: float) -> Q:
        return Q.assumed(1.0, "x", "t").with_band(low, high)

    assert band_crosses(ratio(1.05, 1.20), 1.05) and band_crosses(ratio(0.90, 1.05), 1.05)
    assert not band_crosses(ratio(1.0501, 1.20), 1.05) and not band_crosses(ratio(0.90, 1.0499), 1.05)
    assert not band_crosses(Q.measured(1.0, "x", "t"), 1.0)  # a measured ratio has no band


def test_the_comparison_carries_the_ratios_only_when_both_arms_run() -> None:
    from deepep_calc.decide.verdict import compare

    result = evaluate(Scenario(model="deepseek-v3", nodes=2, engine="sglang", cuda_graphs=True))
    c = compare(result)
    assert c.ratio is result.ratio_deepep_vs_alternative and c.per_user_ratio is result.ratio_per_user
    assert c.tax_ms_per_token is result.tax_ms_per_token and c.note == ""
    stopped = copy.copy(result)
    stopped.arms = {**result.arms, "allgather": copy.copy(result.arms["allgather"])}
    stopped.arms["allgather"].feasible = False
    c = compare(stopped)
    assert (c.ratio, c.per_user_ratio, c.tax_ms_per_token) == (None, None, None)
    assert c.note == "allgather cannot run here"


def test_a_measured_deepep_set_aside_names_the_alternative_as_the_unmeasured_partner() -> None:
    """SGLang at concurrency 4 has a DeepEP cell and no allgather run: the measured DeepEP figure
    is set aside, and the sentence names allgather (not DeepEP) as the arm with no measurement."""
    result = evaluate(Scenario(engine="sglang", concurrency=4))
    assert result.arms["deepep"].measured_cell and not result.arms["allgather"].measured_cell
    (text,) = result.verdict.compared.set_aside
    assert text.startswith("DeepEP's measured aggregate") and "and allgather has no measurement here" in text


def test_forced_capacity_never_recommends_an_alternative_that_cannot_run() -> None:
    """Kimi-K2 on 2x p5en is forced to capacity and allgather runs faster; when allgather cannot
    run, DeepEP is the answer even though the (unusable) allgather figure is higher, and when
    both run and DeepEP is faster, DeepEP too."""
    from deepep_calc.decide.verdict import assess

    result = evaluate(Scenario(model="kimi-k2"))
    assert (result.verdict.code, result.verdict.recommended_arm) == ("capacity", "allgather")

    def altered(**arms: dict[str, Any]) -> Any:
        out = copy.copy(result)
        out.arms = dict(result.arms)
        for name, fields in arms.items():
            out.arms[name] = copy.copy(result.arms[name])
            for key, value in fields.items():
                setattr(out.arms[name], key, value)
        return assess(out)

    a = altered(allgather={"feasible": False})
    assert str(np.asarray(a.codes).reshape(-1)[0]) == "capacity"
    assert str(np.asarray(a.recommended).reshape(-1)[0]) == "deepep"
    faster = result.arms["allgather"].aggregate_tok_s * 2.0  # both figures the rule may compare
    quick = {"aggregate_tok_s": faster, "model_aggregate_tok_s": faster}
    a = altered(deepep=quick, allgather={"feasible": False})
    assert str(np.asarray(a.recommended).reshape(-1)[0]) == "deepep"
    a = altered(deepep=quick)
    assert str(np.asarray(a.recommended).reshape(-1)[0]) == "deepep"


def test_nothing_is_set_aside_when_neither_arm_is_measured() -> None:
    result = evaluate(Scenario(model="deepseek-v3", nodes=2, engine="sglang", cuda_graphs=True))
    assert not any(a.measured_cell for a in result.arms.values())
    assert result.verdict.compared.set_aside == [] and result.verdict.compared.basis == "model"


def test_deepep_wins_only_by_beating_every_arm_in_contention() -> None:
    """Replicas out of contention but fitting (so capacity is not forced): DeepEP wins when it
    beats the alternative, whatever the replicas' figure; it does not when the alternative beats
    it, even with the replicas out of the way."""
    from deepep_calc.decide.verdict import assess

    scenario = Scenario(
        model="deepseek-v3",
        nodes=4,
        engine="sglang",
        cuda_graphs=True,
        transport="efa-uccl",
        concurrency=256,
        isl=128,
        osl=1024,
    )
    result = evaluate(scenario)
    assert result.verdict.code == "deepep" and bool(result.arms["replica"].fits_memory)

    def code_with(deepep_scale: float) -> str:
        out = copy.copy(result)
        out.arms = dict(result.arms)
        out.arms["replica"] = copy.copy(result.arms["replica"])
        out.arms["replica"].feasible = False
        out.arms["deepep"] = copy.copy(result.arms["deepep"])
        base = result.arms["allgather"].model_aggregate_tok_s * deepep_scale
        out.arms["deepep"].aggregate_tok_s = out.arms["deepep"].model_aggregate_tok_s = base
        return str(np.asarray(assess(out).codes).reshape(-1)[0])

    # DeepEP at 1.5x allgather also beats the replicas' figure: an arm out of contention must
    # not veto a win it would have lost anyway
    replica, allgather = (result.arms[n].model_aggregate_tok_s.scalar for n in ("replica", "allgather"))
    assert replica * 1.05 < allgather * 1.5
    assert code_with(1.5) == "deepep"
    assert code_with(0.8) == "dense"  # allgather beats it: no win with the replicas gone either


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


def test_the_kernel_view_names_nvlink_for_an_ep_group_inside_one_node(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """EP8 on p5en rides NVLink whatever transport is named: the title says so, and its figures
    are the NVLink kernel's, the same for every transport."""
    code, inside, _ = run_cli(capsys, "kernel", "--ep", "8")
    assert code == 0 and inside.startswith("NVLink on p5en, EP8:")
    code, across, _ = run_cli(capsys, "kernel", "--ep", "16")
    assert code == 0 and across.startswith("efa-proxy on p5en, EP16:")
    totals = set()
    for transport in ("efa-proxy", "efa-gda"):
        code, out, _ = run_cli(capsys, "kernel", "--ep", "8", "--transport", transport, "--json")
        totals.add(json.loads(out)["total_us"]["value"])
    assert code == 0 and len(totals) == 1


@pytest.mark.parametrize(
    "fields",
    [
        # robust to every single change, yet inside the model's error: both must be said
        {"model": "kimi-k2", "instance": "p6-b300", "nodes": 4, "engine": "sglang", "transport": "efa-gda",
         "concurrency": 256, "isl": 4096, "osl": 512},
        # robust and clear
        {"model": "qwen3-30b-a3b-fp8", "nodes": 2, "engine": "trtllm", "transport": "efa-proxy",
         "concurrency": 256},
    ],
)  # fmt: skip
def test_a_robust_line_never_sounds_surer_than_the_headline(fields: dict[str, Any]) -> None:
    v = evaluate(Scenario(**fields)).verdict
    assert v.robustness.startswith("robust"), v.robustness  # the scenarios are chosen robust
    assert ("error band" in v.robustness) == v.close_call
    assert ("too close to call" in v.headline.lower()) == v.close_call
