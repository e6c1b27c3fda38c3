"""The fast paths give the plain paths' answers: to 1e-9 relative in every number, equal in
every string (issue 12: the speed work changes no printed number).

Fast paths held here: a verdict decided without its words and advice (`evaluate(...,
explain=False)`) and explained later (`explain_verdict`); what-ifs on DeepEP-only knobs
(EP_NUM_COMMS, EP_EFA_MAX_QPS) that reuse the other arms (`memo.REUSE_OTHER_ARMS`); a
second `evaluate()` of a scenario in one process (catalogs and fit cached) against the first;
and one scenario's physics and rule on Python floats and bools (`base.arrays`) against the same
row of a sweep, which runs them on arrays.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.base.errors import CalcError, InputError
from deepep_calc.base.quantity import Q
from deepep_calc.decide.answer import decide
from deepep_calc.decide.verdict import assess, classify, status_of
from deepep_calc.estimate.arms import check_splittable
from deepep_calc.estimate.compute import compute
from deepep_calc.question.scenario import VARIABLE, resolve
from deepep_calc.whatif import explanation, flip, memo
from deepep_calc.whatif.explanation import explain_verdict

SCENARIOS: list[dict[str, Any]] = [
    {},
    {"model": "deepseek-v3", "nodes": 2, "engine": "sglang", "cuda_graphs": True},
    {"model": "kimi-k2", "nodes": 4, "engine": "vllm"},
    {"model": "deepseek-v3", "instance": "p5", "nodes": 1},  # nothing fits
    {"model": "deepseek-v3", "nodes": 4, "comms": 2, "max_qps": 2},  # comms and QP advisories
    {"engine": "vllm", "comms": 1, "concurrency": 4},
    {"comms": 2},  # the calibration cell's what-if: its measured arms stay, DeepEP is modelled
    {"max_qps": 1, "nodes": 4},
    {"model": "qwen3-235b-a22b", "instance": "p5", "nodes": 2, "alternative": "tp", "slo_tok_s": 40},
    {"model": "gpt-oss-120b", "nodes": 2, "transport": "efa-gda", "max_qps": 1},
    {"model": "deepseek-v3", "instance": "ib-h800", "transport": "ib-ibgda", "nodes": 4},
    {"model": "llama4-maverick", "instance": "p6-b200", "nodes": 2, "ttft_ms": 200},
]


def assert_close(a: Any, b: Any, path: str = "$") -> None:
    """Equal structure and strings; numbers within 1e-9 relative (NaN equals NaN)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), path
        for k in a:
            assert_close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and not isinstance(a, bool):
        assert isinstance(b, float | int), path
        assert (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0), path
    else:
        assert a == b, path


def plain(fields: dict[str, Any]) -> dict[str, Any]:
    """The answer with every fast path off: every what-if arm recomputed."""
    r = resolve(Scenario(**fields))
    check_splittable(r)
    result = compute(r)
    result.verdict = decide(result)
    explain_verdict(result)
    return result.to_json()


@pytest.mark.parametrize(
    "fields", SCENARIOS, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()) or "default"
)
def test_fast_equals_plain(fields: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    fast = evaluate(Scenario(**fields)).to_json()
    monkeypatch.setattr(memo, "REUSE_OTHER_ARMS", False)
    monkeypatch.setattr(flip, "BATCH_WHATIFS", False)
    assert_close(fast, plain(fields))


@pytest.mark.parametrize(("fast", "runs"), [(True, 1), (False, 2)])
def test_the_comms_what_if_runs_once_for_the_flip_search_and_the_advisory(
    monkeypatch: pytest.MonkeyPatch, fast: bool, runs: int
) -> None:
    """EP_NUM_COMMS=1 on vLLM: the flip search tries --comms 8 and the advisory quotes the DeepEP
    step at 8; the fast path computes that what-if once, the plain path once for each."""
    seen: list[int] = []
    real = memo.compute

    def spy(r: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(r.scenario.comms)
        return real(r, *args, **kwargs)

    monkeypatch.setattr(memo, "compute", spy)
    monkeypatch.setattr(flip, "compute", spy)
    monkeypatch.setattr(memo, "REUSE_OTHER_ARMS", fast)
    data = evaluate(Scenario(engine="vllm", comms=1, concurrency=4)).to_json()
    assert any(a.startswith("Set EP_NUM_COMMS=8") for a in data["verdict"]["advisories"])
    assert seen.count(8) == runs, seen


# A spread for the flip search: robust calls (every candidate runs), flips found late, graph
# modes, node counts with and without halving, targets, a measured cell's neighbourhood.
FLIP_SPREAD: list[dict[str, Any]] = [
    {"model": m, "nodes": n, "engine": e, "cuda_graphs": g, "concurrency": c}
    for m in ("deepseek-v3", "qwen3-30b-a3b-fp8", "kimi-k2")
    for n in (1, 2, 4)
    for e in ("trtllm", "vllm", "sglang")
    for g in (False, True)
    for c in (4, 256)
] + [
    {"concurrency": 64},
    {"transport": "efa-gda", "slo_tok_s": 30, "nodes": 4},
    {"model": "qwen3-30b-a3b-fp8", "nodes": 2, "engine": "vllm", "comms": 8, "concurrency": 32},
    # graphs do not flip these, a quarter of the load does: found by the vectorised pass
    {"model": "qwen3-30b-a3b-fp8", "nodes": 2, "engine": "vllm", "cuda_graphs": True, "concurrency": 512},
    {
        "model": "qwen3-30b-a3b-fp8",
        "nodes": 2,
        "engine": "trtllm",
        "cuda_graphs": True,
        "concurrency": 512,
        "transport": "efa-gda",
    },
]


@pytest.mark.slow
def test_the_batched_flip_search_finds_the_one_by_one_flip(monkeypatch: pytest.MonkeyPatch) -> None:
    """The flip search's vectorised pass over its remaining candidates quotes exactly what the
    one-by-one search quotes (label, code, ratio and tag), on a spread that exercises it."""
    ran: list[str] = []
    batched = flip._first_flip_batched

    def counting(*args: Any) -> Any:
        out = batched(*args)
        ran.append("none" if out is None else "flip" if out else "robust")
        return out

    monkeypatch.setattr(flip, "_first_flip_batched", counting)
    for fields in FLIP_SPREAD:
        try:
            result = compute(resolve(Scenario(**fields)))
        except CalcError:
            continue
        code, _ = classify(result)
        fast = flip.flip_advisory(result, code)
        monkeypatch.setattr(flip, "BATCH_WHATIFS", False)
        assert flip.flip_advisory(result, code) == fast, fields
        monkeypatch.setattr(flip, "BATCH_WHATIFS", True)
    assert {"flip", "robust", "none"} <= set(ran), ran  # the pass ran both ways, and stood down


def test_a_verdict_explained_later_reads_like_one_explained_at_once() -> None:
    """`explain=False` leaves the words and advice out; `explain_verdict` later gives the very
    verdict `evaluate()` gives, for an ok scenario and for two with fixes to offer."""
    for scenario in (
        Scenario(model="deepseek-v3", nodes=4, comms=2),
        Scenario(model="kimi-k2", nodes=1),
        Scenario(ttft_ms=50),
    ):
        later = evaluate(scenario, explain=False)
        assert not later.verdict.explained and later.verdict.headline == ""
        now = evaluate(scenario)
        assert explain_verdict(later) is later.verdict and later.verdict == now.verdict
        assert_close(later.to_json(), now.to_json())
    assert now.verdict.fixes and now.verdict.status != "ok"


def test_an_unexplained_verdict_refuses_to_print_itself() -> None:
    result = evaluate(Scenario(), explain=False)
    with pytest.raises(RuntimeError, match="explain_verdict"):
        result.to_json()


def test_explaining_twice_runs_the_what_ifs_once(monkeypatch: pytest.MonkeyPatch) -> None:
    result = evaluate(Scenario(model="deepseek-v3", nodes=2), explain=False)
    calls: list[int] = []
    real = explanation._advise
    monkeypatch.setattr(explanation, "_advise", lambda *a: calls.append(1) or real(*a))
    first = explain_verdict(result).advisories
    assert explain_verdict(result).advisories is first and calls == [1]


def test_setting_robustness_after_explaining_keeps_the_advisories() -> None:
    """sensitivity.annotate appends to the robustness line of an explained verdict."""
    result = evaluate(Scenario())
    before = (result.verdict.robustness, list(result.verdict.advisories))
    result.verdict.robustness = result.verdict.robustness + "; more"
    assert (result.verdict.robustness, result.verdict.advisories) == (before[0] + "; more", before[1])


def test_an_uploaded_model_reaches_every_what_if_it_is_carried_to() -> None:
    """An uploaded config.json is known only to the evaluation it was passed to; the flip search
    that runs when a face explains the verdict resolves it again from `Resolved.models`."""
    from deepep_calc.io.hf_config import resolve_model

    spec = resolve_model("deepseek-v3")
    later = evaluate(Scenario(model="upload:test", nodes=2), models={"upload:test": spec}, explain=False)
    preset = evaluate(Scenario(model="deepseek-v3", nodes=2))
    assert explain_verdict(later).robustness == preset.verdict.robustness
    assert later.resolved.change(nodes=4).model is spec


def test_second_evaluation_equals_the_first() -> None:
    first = evaluate(Scenario(model="kimi-k2", nodes=2)).to_json()
    assert_close(evaluate(Scenario(model="kimi-k2", nodes=2)).to_json(), first)


def test_a_verdict_pickles_and_copies_whole() -> None:
    import copy
    import pickle

    v = evaluate(Scenario(model="deepseek-v3", nodes=2)).verdict
    for twin in (pickle.loads(pickle.dumps(v)), copy.deepcopy(v)):
        assert twin == v and twin.explained and twin.advisories == v.advisories


def _row(obj: Any) -> Any:
    """A one-row sweep's JSON read as one scenario's: every one-element list is its element,
    and a NaN null (as `Q.to_json` writes a scalar's)."""
    if isinstance(obj, dict):
        return {k: _row(v) for k, v in obj.items()}
    if isinstance(obj, list) and len(obj) == 1:
        return _row(obj[0])
    return None if isinstance(obj, float) and math.isnan(obj) else obj


# What a one-row sweep computes like one scenario (a sweep never substitutes a measured cell,
# so the shown figures are compared only on arms no cell replaced).
MODEL_KEYS = (
    "feasible",
    "fits_memory",
    "breakdown_ms",
    "memory_gb_per_gpu",
    "memory_detail_gb",
    "max_concurrency",
    "kv_token_capacity_per_gpu",
    "running_sequences",
    "model_aggregate_tok_s",
    "model_step_ms",
)
SHOWN_KEYS = ("step_ms", "per_user_tok_s", "aggregate_tok_s", "ttft_ms", "usd_per_mtok")


@pytest.mark.parametrize(
    "fields", SCENARIOS, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()) or "default"
)
def test_one_scenario_equals_the_same_row_of_a_sweep(fields: dict[str, Any]) -> None:
    """A scalar scenario's physics runs on Python floats (`base.arrays`), a sweep's on NumPy
    arrays: every figure, unit, tag, source and band agrees, arm by arm."""
    r = resolve(Scenario(**fields))
    one = compute(r)
    row = compute(r.vary(**{name: [getattr(r.scenario, name)] for name in VARIABLE}))
    for name, arm in one.arms.items():
        got, want = arm.to_json(), _row(row.arms[name].to_json())
        keys = MODEL_KEYS + (SHOWN_KEYS if arm.measured_cell is None else ())
        assert_close({k: got[k] for k in keys}, {k: want[k] for k in keys}, f"$.{name}")


def _as_one_row(result: Any) -> Any:
    """The same result with every flag and figure the rule reads as a one-element array (what a
    sweep's row holds); a figure shared by two fields stays one object (`like_with_like` tells
    a measured replacement by identity)."""
    rows: dict[int, Q] = {}

    def row(q: Q | None) -> Q | None:
        if q is None:
            return None
        if id(q) not in rows:
            rows[id(q)] = replace(q, value=np.array([q.value], dtype=float))
        return rows[id(q)]

    def flag(v: Any) -> Any:
        return None if v is None else np.array([v], dtype=bool)

    arms = {
        name: replace(
            arm,
            feasible=flag(arm.feasible),
            fits_memory=flag(arm.fits_memory),
            meets_slo=flag(arm.meets_slo),
            meets_ttft=flag(arm.meets_ttft),
            aggregate_tok_s=row(arm.aggregate_tok_s),
            model_aggregate_tok_s=row(arm.model_aggregate_tok_s),
        )
        for name, arm in result.arms.items()
    }
    return replace(result, arms=arms)


RULE_SCENARIOS = [*SCENARIOS, {"slo_tok_s": 60}, {"ttft_ms": 50}, {"model": "kimi-k2", "nodes": 1}]


@pytest.mark.parametrize(
    "fields", RULE_SCENARIOS, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()) or "default"
)
def test_the_rule_on_one_scenario_equals_it_on_a_one_row_sweep(fields: dict[str, Any]) -> None:
    """`verdict.assess` runs on plain bools for one scenario and on arrays for a sweep."""
    result = compute(resolve(Scenario(**fields)))
    one, row = assess(result), assess(_as_one_row(result))
    assert type(one.code_index) is int and row.code_index.dtype == np.int8
    assert (one.code_index, one.arm_index) == (row.code_index[0], row.arm_index[0])
    assert status_of(one) == status_of(row)
    for name in result.arms:
        assert one.contending[name] == row.contending[name][0], name
        assert one.feasible[name] == row.feasible[name][0], name


def test_a_scalar_what_if_equals_the_one_row_array_one() -> None:
    """`Resolved.vary` with plain numbers is a one-row what-if on the model's figures (no
    measured cell), as with one-element lists; it refuses the values the array check refuses."""
    r = resolve(Scenario())  # the default scenario: its arms are measured cells
    values = {"concurrency": 64, "comms": 8, "cuda_graphs": True, "nodes": 4}
    one = compute(r.vary(**values))
    row = compute(r.vary(**{k: [v] for k, v in values.items()}))
    assert all(arm.measured_cell is None for arm in one.arms.values())
    for name, arm in one.arms.items():
        got, want = arm.to_json(), _row(row.arms[name].to_json())
        assert_close({k: got[k] for k in SHOWN_KEYS}, {k: want[k] for k in SHOWN_KEYS}, f"$.{name}")
    for bad in ({"concurrency": 0}, {"concurrency": 2.5}, {"nodes": math.nan}, {"comms": 10**6}):
        with pytest.raises(InputError) as scalar:
            r.vary(**bad)
        with pytest.raises(InputError) as array:
            r.vary(**{k: [v] for k, v in bad.items()})
        assert str(scalar.value) == str(array.value)
