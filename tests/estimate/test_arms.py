"""estimate/arms.py: what each arm is and whether it can run.

Hand-worked here: how a wait is worded (`duration`), the prompt ceiling, the arms a scenario
evaluates, why an arm cannot run (split, reach, memory, queue, in that order), the refusal of a
layout no arm can split (one line naming the field, the value and what splits), the running
capacity the planner sizes its search with, and when an arm's combination counts as covered by
references. The replicas arm's choice of one-node layout is `test_arms_replicas.py`'s, the
three-valued targets `test_arms_target_status.py`'s; the scenarios `resolve` refuses before any
arm is computed (NVLink across nodes, a prompt past the context window)
`tests/question/test_scenario.py`'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.base.errors import InputError
from deepep_calc.base.quantity import Tag
from deepep_calc.decide.verdict import classify_codes
from deepep_calc.estimate.arms import (
    arms_for,
    check_splittable,
    duration,
    evidence_covered,
    prompt_ceiling_ms,
    running_capacity,
)
from deepep_calc.estimate.compute import compute
from deepep_calc.estimate.result import table_for
from deepep_calc.question.fields import PROMPT_TIMEOUT_MS
from deepep_calc.question.scenario import resolve
from one_line import assert_one_line

from .shared import HF
from .shared import evaluate_json as _json
from .shared import evaluate_refused as _refused

# How a wait reads ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0.4, "0 ms"),
        (999.4, "999 ms"),
        (999.6, "1.0 s"),  # the unit follows the figure as printed: never "1,000 ms"
        (1000.0, "1.0 s"),  # from one second on, seconds with one decimal
        (1234.5, "1.2 s"),
        (59_940.0, "59.9 s"),
        (59_999.0, "1.0 min"),  # 60.0 s as printed: a minute
        (60_000.0, "1.0 min"),
        (3.6e6, "1.0 h"),
        (8.64e7, "1.0 days"),
        (2e9, "23.1 days"),  # 2e9 / 8.64e7 = 23.148
        (float("nan"), "n/a"),
    ],
)
def test_duration_picks_the_unit_a_person_reads(ms: float, text: str) -> None:
    assert duration(ms) == text


def test_the_arms_are_deepep_the_alternative_and_the_replicas() -> None:
    assert arms_for(resolve(Scenario())) == ["deepep", "allgather", "replica"]
    assert arms_for(resolve(Scenario(alternative="tp"))) == ["deepep", "tp", "replica"]


# Why an arm cannot run ------------------------------------------------------------------------


def test_each_arm_says_why_it_cannot_run() -> None:
    """`compute` without the splittability check: 3 GPUs per node x 2 nodes is EP6, and 128
    experts / 6 is not whole ("split"); Kimi-K2's weights alone exceed one p5en node, so the
    replicas do not fit ("memory"); ten million clients wait hours for a batch slot, past the
    10-minute ceiling ("queue"). A feasible arm says nothing."""
    split = compute(resolve(Scenario(gpus_per_node=3))).arms["deepep"]
    assert (split.feasible, split.why_code) == (False, "split")
    assert split.why_not == "128 experts cannot be split evenly over EP6"
    kimi = compute(resolve(Scenario(model="kimi-k2"))).arms
    assert (kimi["replica"].feasible, kimi["replica"].why_code) == (False, "memory")
    assert kimi["replica"].why_not == "does not fit in HBM at this concurrency and context"
    assert (kimi["deepep"].feasible, kimi["deepep"].why_code, kimi["deepep"].why_not) == (True, "", "")
    queued = compute(resolve(Scenario(concurrency=10_000_000))).arms["allgather"]
    assert (queued.feasible, queued.why_code) == (False, "queue")
    assert queued.why_not.startswith("first token after ") and "waiting for a batch slot" in queued.why_not
    assert queued.why_not.endswith("past the 10.0 min a client waits")


def test_a_varied_scenario_says_no_why() -> None:
    """Over a sweep's rows there is no one reason to word: `why_not` stays empty, and feasibility
    is per row (the last row's queue is past the ceiling)."""
    r = resolve(Scenario())
    arm = compute(r.vary(concurrency=np.array([32.0, 10_000_000.0]))).arms["allgather"]
    assert (arm.why_not, arm.why_code) == ("", "")
    assert list(np.broadcast_to(arm.feasible, (2,))) == [True, False]


# Refusing a layout no arm can split ------------------------------------------------------------


def test_an_unsplittable_expert_count_is_refused_with_the_counts_that_split() -> None:
    """100 experts over EP16 (DeepEP and allgather on 2 x 8 GPUs) and EP8 (a replica): 100 / 8
    and 100 / 16 are not whole. Multiples of 8 around 100 are 96 and 104, of 16 are 96 and 112."""
    with pytest.raises(InputError) as info:
        check_splittable(resolve(Scenario(experts=100)))
    assert (info.value.field, info.value.value) == ("--experts", 100)
    assert_one_line(
        info.value,
        "100 do not split over EP16 nor EP8",
        "a multiple of 8 splits over EP8 (e.g. 96 or 104), of 16 over every group (e.g. 96 or 112)",
        "--alternative tp shards every expert instead and always splits",
    )


def test_unsplittable_gpus_per_node_are_refused_with_the_counts_that_divide() -> None:
    """3 GPUs per node: EP6 across 2 nodes and EP3 in one; 128 experts divide by 1, 2, 4 and 8
    of the node's 8 GPUs, not by 3 or 6."""
    with pytest.raises(InputError) as info:
        check_splittable(resolve(Scenario(gpus_per_node=3)))
    assert (info.value.field, info.value.value) == ("--gpus-per-node", 3)
    assert_one_line(info.value, "do not split over EP6 nor EP3", "GPUs per node that divide them: 1, 2, 4, 8")


def test_a_layout_some_arm_splits_is_not_refused() -> None:
    """TP shards every expert, so with `--alternative tp` 100 experts are answered; DeepSeek-V3's
    256 experts do not split over EP24 (3 nodes) but do over a replica's EP8."""
    assert check_splittable(resolve(Scenario(experts=100, alternative="tp"))) is None
    assert check_splittable(resolve(Scenario(model="deepseek-v3", nodes=3))) is None


# Running capacity (the planner's sizing) --------------------------------------------------------


def test_running_capacity_is_the_batch_limit_until_the_kv_cache_binds() -> None:
    """Qwen3-30B on p5en under TRT-LLM: a batch limit of 2,048 per rank. Allgather runs one DP
    rank per GPU: 2,048 x 8 = 16,384 sequences on one node, 32,768 on two; TP is one rank
    whatever the nodes: 2,048. DeepSeek-V3 at ISL + OSL 16,384 is bound by its KV cache well
    below 2,048 x 16, and more nodes hold more than proportionally more (the weights spread)."""
    r = resolve(Scenario())
    assert r.max_batch == 2048 and r.gpus_per_node == 8
    running, fits = running_capacity(r, "allgather", 2, nodes=np.array([1.0, 2.0]))
    assert running.tolist() == [16_384.0, 32_768.0] and fits.tolist() == [True, True]
    running, _ = running_capacity(r, "tp", 2, nodes=np.array([1.0, 2.0]))
    assert running.tolist() == [2048.0, 2048.0]
    long = resolve(Scenario(model="deepseek-v3", isl=8192, osl=8192))
    running, fits = running_capacity(long, "allgather", 2, nodes=np.array([2.0, 4.0]))
    assert fits.all() and running[0] < 2048 * 16 and running[1] > 2 * running[0]
    assert running.tolist() == [float(int(x)) for x in running]  # whole sequences


def test_running_capacity_of_a_model_that_does_not_fit_is_nothing() -> None:
    """Kimi-K2's weights exceed one p5en node: no sequence fits there; two nodes hold them."""
    running, fits = running_capacity(
        resolve(Scenario(model="kimi-k2")), "allgather", 2, nodes=np.array([1.0, 2.0])
    )
    assert fits.tolist() == [False, True] and running[0] == 0.0 and running[1] > 0


# Evidence coverage ----------------------------------------------------------------------------


def test_an_arm_is_covered_only_where_references_cover_its_combination() -> None:
    """The built-in table records coverage: the calibration A/B's arms are covered, TP on that
    cluster is not, and DeepSeek-V3 on it has no references at all. A table that records no
    coverage has one band per kind, so every arm counts as covered."""
    table = table_for(resolve(Scenario()))
    qwen, dsv3 = resolve(Scenario()), resolve(Scenario(model="deepseek-v3"))
    assert [evidence_covered(qwen, a, table) for a in ("deepep", "allgather", "replica", "tp")] == [
        True,
        True,
        True,
        False,
    ]
    assert not evidence_covered(dsv3, "deepep", table)
    bare = SimpleNamespace(covered=(), band=table.band)
    assert evidence_covered(qwen, "tp", bare) is True
    one_band = SimpleNamespace(
        covered=table.covered, band=lambda kind, covered=True: None if not covered else (0.9, 1.1)
    )
    assert evidence_covered(dsv3, "deepep", one_band) is True


# Reach, splits and the prompt ceiling through evaluate (issue 10) -------------------------------


def test_nvlink_on_one_node_is_answered(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "--transport", "nvlink", "--nodes", "1")
    assert doc["arms"]["deepep"]["feasible"]


def test_a_grid_marks_nvlink_across_nodes_infeasible_row_by_row() -> None:
    r = resolve(Scenario(transport="nvlink", nodes=1))
    res = compute(r.vary(nodes=np.array([1, 2, 4])))
    assert list(np.broadcast_to(res.arms["deepep"].feasible, (3,))) == [True, False, False]
    _, rec = classify_codes(res)
    assert "deepep" not in list(np.broadcast_to(rec, (3,)))[1:]


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


def test_a_cost_carries_the_band_of_the_aggregate_it_divides_by() -> None:
    """$/Mtok is the nodes' price over the aggregate. At the default scenario the two measured
    arms divide by a measured aggregate, which has no band, so their cost has none; the replicas
    divide by the model's aggregate and take its band inverted (a higher rate, a lower cost)."""
    result = evaluate(Scenario(), explain=False)
    for arm in ("deepep", "allgather"):
        a = result.arms[arm]
        assert a.aggregate_tok_s.tag is Tag.MEASURED and a.usd_per_mtok.low is None
    rep = result.arms["replica"]
    agg, cost = rep.aggregate_tok_s, rep.usd_per_mtok
    assert agg.low is not None and cost.low is not None
    assert cost.low * agg.high == pytest.approx(cost.value * agg.value, rel=1e-12)
    assert cost.high * agg.low == pytest.approx(cost.value * agg.value, rel=1e-12)
