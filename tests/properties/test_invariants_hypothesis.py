"""Invariants over the whole scenario space that no input may break (hypothesis).

What is here and not in test_core_robustness / test_model_properties:

* every number of `evaluate()`, JSON included, is finite unless its arm is explicitly not feasible
  (or, for cost alone, the instance has no public price), and no NumPy floating-point error
  (division by zero, overflow, invalid) happens on the way;
* per-GPU memory never falls when the model grows (experts, hidden, dtype width), with the one
  growth where it may, and why;
* no output carries a stronger provenance tag than the inputs it is computed from;
* the verdict is deterministic, in one process and across processes;
* the vectorised path (`Resolved.vary` + `compute`) is the scalar path, row by row;
* numerical safety at the edges the issue names (EP = GPUs per node, one token, 10^7
  concurrency, one-expert models, nodes and hidden at their limits, kernel queries at theirs).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from deepep_calc import Scenario, evaluate
from deepep_calc.base.errors import CalcError
from deepep_calc.base.quantity import Q, Tag
from deepep_calc.catalog.engines import load_engines
from deepep_calc.catalog.hardware import load_instances
from deepep_calc.catalog.measured import load_cells
from deepep_calc.catalog.model_catalog import load_models
from deepep_calc.catalog.models import DTYPE_BYTES
from deepep_calc.catalog.transports import load_transports
from deepep_calc.decide.verdict import classify, classify_codes
from deepep_calc.estimate.compute import compute
from deepep_calc.estimate.kernel import LIMITS as KERNEL_LIMITS
from deepep_calc.estimate.kernel import kernel_query
from deepep_calc.estimate.result import Result
from deepep_calc.fit.observations import cell_scenario
from deepep_calc.physics.params import count_params
from deepep_calc.question.fields import LIMITS
from deepep_calc.question.scenario import resolve
from invariant_checks import assert_finite_or_not_feasible, evaluate_or_refuse, fp_strict, q_nodes
from paths import FIXTURES

HF = FIXTURES / "hf"
# The counts below keep this file to seconds in CI; FUZZ_SCALE=20 is a deeper local search.
SCALE = max(1, int(os.environ.get("FUZZ_SCALE", "1")))


def examples(n: int) -> settings:
    return settings(max_examples=n * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])


MODELS = load_models()
INSTANCES = load_instances()
TRANSPORTS = load_transports()
ENGINES = sorted(load_engines())
ON = {name: sorted(t for t, spec in TRANSPORTS.items() if name in spec.instances) for name in INSTANCES}
OVERRIDE_LIMIT = 1_000_000  # scenario._apply_overrides
ARM_NUMBERS = ("per_user_tok_s", "step_ms", "aggregate_tok_s", "ttft_ms", "usd_per_mtok", "memory_gb_per_gpu")


# ---------------------------------------------------------------------------------------------
# the scenario space


def _window(spec: Any) -> int:
    """Longest ISL + OSL the model takes (the scenario limits where it states no window)."""
    return int(spec.max_context or LIMITS["isl"])


@st.composite
def scenarios(draw: st.DrawFn, overrides: bool = True) -> Scenario:
    """Valid-looking scenarios across every catalog row, with extreme values mixed in."""
    model = draw(st.sampled_from(sorted(MODELS)))
    instance = draw(st.sampled_from(sorted(INSTANCES)))
    spec = MODELS[model]

    def count(limit: int, typical: int) -> st.SearchStrategy[int]:
        return st.one_of(st.integers(1, typical), st.integers(1, limit), st.sampled_from([1, limit]))

    kw: dict[str, Any] = {
        "model": model,
        "instance": instance,
        "transport": draw(st.sampled_from(ON[instance])),
        "engine": draw(st.sampled_from(ENGINES)),
        "alternative": draw(st.sampled_from(["allgather", "tp"])),
        "cuda_graphs": draw(st.booleans()),
        "nodes": draw(count(LIMITS["nodes"], 16)),
        "gpus_per_node": draw(st.none() | st.integers(1, INSTANCES[instance].gpus_per_node)),
        "comms": draw(count(LIMITS["comms"], 8)),
        "max_qps": draw(count(LIMITS["max_qps"], 8)),
        "concurrency": draw(count(LIMITS["concurrency"], 4096)),
        # ISL + OSL past the context window is refused (issue 10): draw inside it, edge included
        "isl": (isl := draw(count(_window(spec) - 1, min(16384, _window(spec) - 1)))),
        "osl": draw(count(max(_window(spec) - isl, 1), min(4096, max(_window(spec) - isl, 1)))),
        "slo_tok_s": draw(st.none() | st.floats(1e-3, 1e5)),
        "ttft_ms": draw(st.none() | st.floats(1e-3, 1e7)),
        "price_per_hour": draw(st.none() | st.floats(1e-3, 1e5)),
    }
    if overrides and draw(st.booleans()):
        experts = draw(st.none() | st.integers(1, 4096) | st.just(OVERRIDE_LIMIT))
        top = experts if experts is not None else spec.experts
        kw |= {
            "experts": experts,
            "topk": draw(st.none() | st.integers(1, min(top, 64))),
            "hidden": draw(st.none() | st.integers(1, 32768) | st.just(OVERRIDE_LIMIT)),
            "moe_layers": draw(st.none() | st.integers(1, spec.layers)),
            "weight_dtype": draw(st.none() | st.sampled_from(sorted(DTYPE_BYTES))),
            "kv_dtype": draw(st.none() | st.sampled_from(sorted(DTYPE_BYTES))),
        }
        if kw["topk"] is None and experts is not None and experts < spec.topk:
            kw["topk"] = experts
    return Scenario(**kw)


# ---------------------------------------------------------------------------------------------
# 1. finite or not feasible, and no floating-point error on the way


@pytest.mark.slow
@examples(200)
@given(scenarios())
def test_every_output_is_finite_or_explicitly_not_feasible(scenario: Scenario) -> None:
    result = evaluate_or_refuse(scenario)
    if result is not None:
        assert_finite_or_not_feasible(result)


# ---------------------------------------------------------------------------------------------
# 2. memory per GPU when the model grows


def _wider(dtype: str) -> st.SearchStrategy[str]:
    return st.sampled_from(sorted(d for d, b in DTYPE_BYTES.items() if b >= DTYPE_BYTES[dtype]))


@st.composite
def growths(draw: st.DrawFn) -> tuple[Scenario, dict[str, Any]]:
    """A scenario on a preset and a change that only adds bytes to every weight class."""
    base = draw(scenarios(overrides=False))
    m = MODELS[base.model]
    widest = max((m.weight_dtype, m.routed_dtype), key=DTYPE_BYTES.__getitem__)
    options = {
        "experts": st.integers(m.experts, m.experts * 8),
        "hidden": st.integers(m.hidden, m.hidden * 4),
        "weight_dtype": _wider(widest),  # experts take it too: never narrower than before
        "kv_dtype": _wider(m.kv_dtype),
    }
    chosen = draw(st.lists(st.sampled_from(sorted(options)), min_size=1, max_size=4, unique=True))
    return base, {k: draw(options[k]) for k in chosen}


@pytest.mark.slow
@examples(120)
@given(growths())
def test_memory_per_gpu_never_falls_when_the_model_grows(case: tuple[Scenario, dict[str, Any]]) -> None:
    base, change = case
    small = evaluate_or_refuse(base)
    big = evaluate_or_refuse(base.copy(**change))
    assume(small is not None and big is not None)
    assert small is not None and big is not None
    assert count_params(big.model).total >= count_params(small.model).total
    for name in small.arms:
        before, after = small.arms[name].memory_gb_per_gpu.scalar, big.arms[name].memory_gb_per_gpu.scalar
        assert after >= before * (1 - 1e-12), (name, change, before, after)


@examples(60)
@given(scenarios(overrides=False), st.data())
def test_more_moe_layers_never_shrink_the_fully_sharded_arm(base: Scenario, data: st.DataObject) -> None:
    """Turning dense layers into MoE layers, the one growth that is not monotone per GPU.

    A dense MLP is replicated on every EP rank while a MoE layer's experts are split across
    them, so on a wide EP group per-GPU memory may fall (DeepSeek-V3 on 8 nodes: 40.7 -> 40.2
    GB with all 61 layers MoE): that is the physics, not a bug. Tensor parallelism shards every
    weight the same way, so there per-GPU memory follows the parameter count.
    """
    m = MODELS[base.model]
    assume(m.moe_layers < m.layers)
    more = data.draw(st.integers(m.moe_layers + 1, m.layers))
    base = base.copy(**{"alternative": "tp"})
    small, big = evaluate_or_refuse(base), evaluate_or_refuse(base.copy(**{"moe_layers": more}))
    assume(small is not None and big is not None)
    assert small is not None and big is not None
    grew = count_params(big.model).total - count_params(small.model).total
    tp_small, tp_big = small.arms["tp"].memory_gb_per_gpu.scalar, big.arms["tp"].memory_gb_per_gpu.scalar
    assert (tp_big >= tp_small * (1 - 1e-12)) == (grew >= 0), (grew, tp_small, tp_big)


def test_moe_layers_growth_can_lower_memory_per_gpu_on_wide_ep() -> None:
    """Pins the documented exception above, so a change in it is noticed."""
    base = Scenario(model="deepseek-v3", nodes=8)
    small, big = evaluate(base), evaluate(base.copy(**{"moe_layers": 61}))
    assert big.arms["deepep"].memory_gb_per_gpu.scalar < small.arms["deepep"].memory_gb_per_gpu.scalar
    assert count_params(big.model).total > count_params(small.model).total


# ---------------------------------------------------------------------------------------------
# 3. provenance: no output stronger than its weakest input


def _ceiling(out: Q, *inputs: Q | None, what: str) -> None:
    feeds = [q for q in inputs if q is not None]
    assert out.tag <= min(q.tag for q in feeds), f"{what}: {out.tag} from {[str(q.tag) for q in feeds]}"


def assert_tag_ceilings(result: Result) -> None:
    """Each computed figure is at most as strong as what it is computed from.

    Only arms the model computed are checked edge by edge: on a measured cell the replayed
    figures are observations, not derivations.
    """
    for name, arm in result.arms.items():
        m = arm.memory
        _ceiling(m.total_gb, m.weights_gb, m.kv_gb, m.buffers_gb, m.reserve_gb, what=f"{name} memory")
        _ceiling(m.headroom_gb, m.usable_gb, m.total_gb, what=f"{name} headroom")
        _ceiling(arm.usd_per_mtok, arm.aggregate_tok_s, what=f"{name} cost")
        if arm.measured_cell is None:
            _ceiling(arm.step_ms, *arm.breakdown_ms.values(), what=f"{name} step")
            _ceiling(arm.per_user_tok_s, arm.step_ms, what=f"{name} per-user")
            _ceiling(arm.aggregate_tok_s, arm.step_ms, arm.running, what=f"{name} aggregate")
            _ceiling(arm.ttft_ms, arm.step_ms, what=f"{name} ttft")
        for part in ("memory_gb_per_gpu", "usd_per_mtok"):
            assert getattr(arm, part).tag is not Tag.MEASURED, (name, part)
    dee, alt = result.arms["deepep"], result.arms[result.alternative]
    _ceiling(result.ratio_deepep_vs_alternative, dee.aggregate_tok_s, alt.aggregate_tok_s, what="ratio")
    _ceiling(result.ratio_per_user, dee.per_user_tok_s, alt.per_user_tok_s, what="per-user ratio")
    _ceiling(result.tax_ms_per_token, dee.step_ms, alt.step_ms, what="tax")
    for q in (result.ratio_deepep_vs_alternative, result.ratio_per_user, result.tax_ms_per_token):
        assert q.tag is not Tag.MEASURED


def measured_paths(result: Result) -> set[str]:
    return {path for path, q in q_nodes(result.to_json()) if q["tag"] == "measured"}


REPLAYED = {"per_user_tok_s", "aggregate_tok_s", "step_ms", "ttft_ms"}


def assert_measured_only_where_replayed(result: Result) -> None:
    """Measured only where a measured cell was replayed, and only the figures it replays: on the
    arm itself, or as the figure the verdict compared for that arm (`verdict.compared.X.arm`,
    `verdict.deciding.X.arm`)."""
    for path in measured_paths(result):
        head = path.split(".")
        if head[:2] in (["verdict", "compared"], ["verdict", "deciding"]):
            metric, arm = head[2], head[3]
        else:
            assert head[0] == "arms", path
            arm, metric = head[1], head[2]
        assert result.arms[arm].measured_cell, path
        assert metric in REPLAYED, path


@pytest.mark.slow
@examples(150)
@given(scenarios())
def test_no_output_is_stronger_than_its_weakest_input(scenario: Scenario) -> None:
    result = evaluate_or_refuse(scenario)
    if result is None:
        return
    assert_tag_ceilings(result)
    assert_measured_only_where_replayed(result)
    # a user price is an assumption, and so is every cost computed from it
    if scenario.price_per_hour is not None:
        assert all(arm.usd_per_mtok.tag is Tag.ASSUMED for arm in result.arms.values())
    # a what-if override makes a model nobody measured
    if any(getattr(scenario, k) is not None for k in ("experts", "topk", "hidden", "moe_layers", "kv_dtype")):
        assert not measured_paths(result)


CELLS = [c for c in load_cells().values() if c.role in ("calibration", "anchor", "cross-check")]
DEEPEP_ONLY = {"comms", "max_qps"}  # knobs only the DeepEP arm reads
NEIGHBOURS = [
    {"concurrency": 1},
    {"isl": 1},
    {"osl": 1},
    {"nodes": 1},
    {"comms": 1},
    {"max_qps": 1},
    {"cuda_graphs": True},
    {"gpus_per_node": 4},
    {"weight_dtype": "bf16"},
]


@examples(60)
@given(st.sampled_from(CELLS), st.sampled_from(NEIGHBOURS), st.integers(1, 3))
def test_nothing_one_step_off_a_measured_cell_is_measured(cell: Any, step: dict[str, Any], k: int) -> None:
    base = cell_scenario(cell)
    update = {f: (not getattr(base, f)) if f == "cuda_graphs" else v for f, v in step.items()}
    for f, v in update.items():
        if isinstance(v, int) and not isinstance(v, bool) and f != "gpus_per_node":
            update[f] = getattr(base, f) + v * k  # a neighbour, never the cell itself
    off = evaluate_or_refuse(base.copy(**update))
    assert off is not None
    measured = measured_paths(off)
    if set(update) <= DEEPEP_ONLY:  # the other arms never read these knobs: their runs still hold
        assert not any(p.startswith("arms.deepep.") for p in measured), update
        held = {n: a.measured_cell for n, a in off.arms.items() if n != "deepep" and a.measured_cell}
        s = off.scenario
        for name in held.values():
            ran = load_cells()[name]
            assert (ran.concurrency, ran.isl, ran.osl, ran.nodes) == (s.concurrency, s.isl, s.osl, s.nodes)
        assert all(not p.startswith("arms.") or p.split(".")[1] in held for p in measured), update
    else:
        assert not measured, update
    assert_tag_ceilings(off)


def test_a_weight_dtype_override_is_not_the_measured_deployment() -> None:
    """The cell check compared --weight-dtype with the already-overridden model, so BF16 weights
    replayed the FP8 checkpoint's measurements as `measured`. Only the native dtype may."""
    assert not measured_paths(evaluate(Scenario(weight_dtype="bf16")))
    native = evaluate(Scenario(weight_dtype="fp8"))
    assert native.arms["deepep"].measured_cell and "arms.deepep.per_user_tok_s" in measured_paths(native)


@pytest.mark.parametrize("name", ["qwen3-30b-a3b-fp8", "deepseek-v3", "gpt-oss-120b"])
def test_a_config_json_from_disk_gives_derived_params_never_measured(name: str) -> None:
    """A config.json's parameters are counted from its structure (derived), never measured.

    Its serving figures are measured only where it is architecturally a calibrated preset and
    the scenario is that preset's cell (issue 10 item 9): the Qwen3-30B fixture is such a copy.
    """
    result = evaluate_or_refuse(Scenario(model=str(HF / name / "config.json")))
    assert result is not None
    if name == "qwen3-30b-a3b-fp8":
        assert result.arms["deepep"].measured_cell == "trt-ab-k8-c32"
        assert all(".memory" not in p and "params" not in p for p in measured_paths(result))
    else:
        assert not measured_paths(result)
    for arm in result.arms.values():
        assert arm.memory.weights_gb.tag is Tag.DERIVED  # counted from the file's structure
        assert arm.memory_gb_per_gpu.tag <= Tag.DERIVED
    assert_tag_ceilings(result)


# ---------------------------------------------------------------------------------------------
# 4. determinism


@examples(40)
@given(scenarios(), scenarios())
def test_verdict_is_deterministic_whatever_ran_before(a: Scenario, b: Scenario) -> None:
    first = evaluate_or_refuse(a)
    evaluate_or_refuse(b)  # caches warmed by another question must not leak into this one
    again = evaluate_or_refuse(a)
    if first is None:
        assert again is None
        return
    assert again is not None
    assert json.dumps(again.to_json(), sort_keys=True) == json.dumps(first.to_json(), sort_keys=True)


FIXED = [
    Scenario(),
    Scenario(model="deepseek-v3", nodes=4, concurrency=512),
    Scenario(model="kimi-k2", instance="p6-b200", transport="efa-gda", nodes=8, alternative="tp"),
    Scenario(model="gpt-oss-120b", nodes=1, engine="vllm", cuda_graphs=True, isl=4096, osl=1024),
    Scenario(model="mixtral-8x7b", instance="ib-h200", transport="ib-ibgda", nodes=2, price_per_hour=50.0),
    Scenario(model="qwen3-235b-a22b", nodes=16, concurrency=10_000_000, slo_tok_s=20, ttft_ms=2000),
]
_CHILD = """
import json, sys
from deepep_calc import Scenario, evaluate
fields = json.load(sys.stdin)
out = {i: evaluate(Scenario(**fields[i])).to_json() for i in reversed(range(len(fields)))}
print(json.dumps([out[i] for i in range(len(fields))], sort_keys=True))
"""


def test_verdict_is_deterministic_across_processes_and_order() -> None:
    """A fresh interpreter evaluating the same questions in reverse order gives the same JSON."""
    here = [json.loads(json.dumps(evaluate(s).to_json(), sort_keys=True)) for s in FIXED]
    child = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=json.dumps([s.as_dict(exclude_none=True) for s in FIXED]),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert json.loads(child.stdout) == here


# ---------------------------------------------------------------------------------------------
# 5. the vectorised path is the scalar path


@st.composite
def rows(draw: st.DrawFn) -> tuple[Scenario, dict[str, np.ndarray]]:
    base = draw(scenarios())
    n = draw(st.integers(1, 6))

    def column(limit: int, typical: int) -> np.ndarray:
        values = st.one_of(st.integers(1, typical), st.integers(1, limit))
        return np.array(draw(st.lists(values, min_size=n, max_size=n)))

    cols = {
        "nodes": column(LIMITS["nodes"], 16),
        "comms": column(LIMITS["comms"], 8),
        "max_qps": column(LIMITS["max_qps"], 8),
        "concurrency": column(LIMITS["concurrency"], 4096),
        "isl": column(LIMITS["isl"], 8192),
        "osl": column(LIMITS["osl"], 2048),
        "cuda_graphs": np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))),
    }
    return base, cols


def _at(value: Any, i: int, n: int) -> Any:
    """Row i of a vectorised value (a part that is the same on every row stays a scalar)."""
    return np.broadcast_to(np.asarray(value), (n,))[i]


def _close(vec: Any, scalar: Any, what: str) -> None:
    a, b = np.asarray(vec, dtype=float), float(np.asarray(scalar, dtype=float))
    assert np.allclose(a, b, rtol=1e-9, atol=0.0, equal_nan=True), (what, a, b)


@examples(60)
@given(rows())
def test_vectorised_path_equals_scalar_path(case: tuple[Scenario, dict[str, np.ndarray]]) -> None:
    base, cols = case
    try:
        r = resolve(base)
    except CalcError:
        return
    try:
        with fp_strict():
            vec = compute(r.vary(**cols))
    except CalcError as exc:  # refused as a whole (e.g. ISL + OSL past the context): some row is
        refused = 0
        for i in range(len(cols["nodes"])):
            row = {k: (bool(v[i]) if k == "cuda_graphs" else int(v[i])) for k, v in cols.items()}
            try:
                resolve(base.copy(**row))
            except CalcError:
                refused += 1
        assert refused, exc.message
        return
    codes, recommended = classify_codes(vec)
    n = len(cols["nodes"])
    for i in range(n):
        row = {k: (bool(v[i]) if k == "cuda_graphs" else int(v[i])) for k, v in cols.items()}
        try:
            with fp_strict():
                one = compute(resolve(base.copy(**row)))
        except CalcError:  # NVLink across nodes: refused alone, an infeasible DeepEP arm in a grid
            assert r.transport.fabric == "nvlink" and row["nodes"] > 1, row
            assert not bool(_at(vec.arms["deepep"].feasible, i, n)), row
            continue
        on_cell = any(arm.measured_cell for arm in one.arms.values())
        for name, arm in one.arms.items():
            if arm.measured_cell:  # replaced by measurements: compare the model's own figure
                _close(
                    _at(vec.arms[name].model_aggregate_tok_s.value, i, n),
                    arm.model_aggregate_tok_s.value,
                    name,
                )
                continue
            v = vec.arms[name]
            for field in ARM_NUMBERS:
                _close(_at(getattr(v, field).value, i, n), getattr(arm, field).value, f"{name}.{field}[{i}]")
            for part, q in arm.breakdown_ms.items():
                _close(_at(v.breakdown_ms[part].value, i, n), q.value, f"{name}.{part}[{i}]")
            assert bool(_at(v.feasible, i, n)) == arm.feasible, (name, i)
            assert bool(_at(v.fits_memory, i, n)) == arm.fits_memory, (name, i)
        if not on_cell:
            for field in ("ratio_deepep_vs_alternative", "ratio_per_user", "tax_ms_per_token"):
                _close(_at(getattr(vec, field).value, i, n), getattr(one, field).value, f"{field}[{i}]")
            assert (str(_at(codes, i, n)), str(_at(recommended, i, n))) == classify(one), i


# ---------------------------------------------------------------------------------------------
# 6. numerical safety at the edges


EDGES = {
    "ep-equals-gpus-per-node": {"nodes": 1},
    "one-gpu": {"nodes": 1, "gpus_per_node": 1},
    "gpus-per-node-1-many-nodes": {"nodes": 64, "gpus_per_node": 1},
    "one-token": {"concurrency": 1, "isl": 1, "osl": 1},
    "concurrency-1e7": {"concurrency": 10_000_000},
    "everything-at-limit": {
        "nodes": LIMITS["nodes"],
        "concurrency": LIMITS["concurrency"],
        "isl": LIMITS["isl"],
        "osl": LIMITS["osl"],
        "comms": LIMITS["comms"],
        "max_qps": LIMITS["max_qps"],
    },
    "nodes-at-limit": {"nodes": LIMITS["nodes"]},
    "hidden-at-override-limit": {"hidden": OVERRIDE_LIMIT},
    "experts-at-override-limit": {"experts": OVERRIDE_LIMIT},
    "one-expert-top-1": {"experts": 1, "topk": 1},
    "one-moe-layer": {"moe_layers": 1},
    "tiny-targets": {"slo_tok_s": 1e-3, "ttft_ms": 1e-3, "price_per_hour": 1e-3},
}
EDGE_MODELS = ["deepseek-v3", "qwen3-30b-a3b-fp8", "gpt-oss-120b", "qwen3-next-80b-a3b", "llama4-maverick"]


def _edge(edge: str, model: str) -> dict[str, Any]:
    """The edge's fields; at the limit, ISL + OSL fill the model's context window exactly."""
    fields = dict(EDGES[edge])
    window = MODELS[model].max_context
    if edge == "everything-at-limit" and window:
        fields |= {"isl": window - window // 2, "osl": window // 2}
    return fields


@pytest.mark.parametrize("model", EDGE_MODELS)
@pytest.mark.parametrize("edge", sorted(EDGES))
def test_edges_are_finite_without_floating_point_errors(edge: str, model: str) -> None:
    for instance, transport, alternative in (
        ("p5en", "efa-proxy", "allgather"),
        ("ib-h200", "ib-ibgda", "tp"),
    ):
        scenario = Scenario(
            model=model, instance=instance, transport=transport, alternative=alternative, **_edge(edge, model)
        )
        if edge == "one-expert-top-1" and alternative != "tp":
            # one expert splits over no EP group: an input error naming the field, not a verdict
            with pytest.raises(CalcError, match=r"--experts: 1 is not allowed.*split"):
                evaluate(scenario)
            continue
        result = evaluate_or_refuse(scenario)
        assert result is not None, (edge, model)  # all of these are inside the limits: answered
        assert_finite_or_not_feasible(result)


@pytest.mark.parametrize("model", EDGE_MODELS)
def test_input_beyond_the_context_window_is_refused(model: str) -> None:
    """ISL + OSL past max_position_embeddings: the engine would refuse the request (issue 10, 6)."""
    window = MODELS[model].max_context
    assert window > 0
    with pytest.raises(CalcError, match=r"--isl: .* context window"):
        evaluate(Scenario(model=model, isl=window, osl=1))
    assert evaluate_or_refuse(Scenario(model=model, isl=window - 1, osl=1)) is not None


def test_zero_remote_traffic_means_no_cross_node_time() -> None:
    """One node: EP equals GPUs per node, nothing leaves the node, and nothing divides by 0."""
    result = evaluate_or_refuse(Scenario(model="deepseek-v3", nodes=1, transport="nvlink"))
    assert result is not None
    assert result.arms["deepep"].breakdown_ms["proxy"].scalar == 0.0
    assert_finite_or_not_feasible(result)


def _one_expert_config(tmp_path: Path) -> Path:
    doc = json.loads((HF / "mixtral-8x7b" / "config.json").read_text("utf-8"))
    doc |= {"num_local_experts": 1, "num_experts_per_tok": 1}
    path = tmp_path / "one-expert" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc), "utf-8")
    return path


@pytest.mark.parametrize("nodes", [1, 2, 16])
def test_a_one_expert_top_1_config_json(tmp_path: Path, nodes: int) -> None:
    """One expert cannot be split over EP ranks: DeepEP says so instead of dividing by zero.

    With every arm expert-parallel the layout is an input error naming the file (issue 10, 3);
    with tensor parallel as the alternative there is an arm that runs, and a verdict.
    """
    path = str(_one_expert_config(tmp_path))
    with pytest.raises(CalcError, match=r"--model: .* 1 routed experts evenly"):
        evaluate(Scenario(model=path, nodes=nodes))
    result = evaluate_or_refuse(Scenario(model=path, nodes=nodes, alternative="tp"))
    assert result is not None
    assert result.model.experts == 1 and result.model.topk == 1
    assert_finite_or_not_feasible(result)
    assert not result.arms["deepep"].feasible
    assert "cannot be split" in result.arms["deepep"].why_not


KERNEL_EDGES = [
    {"ep": 1},
    {"tokens": 1},
    {"ep": 1, "tokens": 1, "hidden": 1, "topk": 1, "experts": 1},
    {"experts": 1, "topk": 1},
    dict(KERNEL_LIMITS),
    {"ep": KERNEL_LIMITS["ep"], "tokens": 1},
    {"ep": 2, "tokens": KERNEL_LIMITS["tokens"], "hidden": KERNEL_LIMITS["hidden"]},
]


@pytest.mark.parametrize("shape", KERNEL_EDGES, ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()))
def test_kernel_query_at_its_limits(shape: dict[str, int]) -> None:
    answered = 0
    for transport, spec in sorted(TRANSPORTS.items()):
        for instance in spec.instances:
            try:
                with fp_strict():
                    out = kernel_query(transport=transport, instance=instance, **shape)
            except CalcError as exc:
                assert "\n" not in exc.message
                continue
            answered += 1
            parts = [q for p in out["parts_us"].values() for q in p.values()]
            for q in [out["dispatch_us"], out["combine_us"], out["total_us"], *parts]:
                assert math.isfinite(q.scalar) and q.scalar >= 0, (transport, instance, q)
            total = out["dispatch_us"].scalar + out["combine_us"].scalar
            assert math.isclose(out["total_us"].scalar, total, rel_tol=1e-12)
    assert answered, "every transport refused this shape"


@pytest.mark.parametrize(
    ("field", "value"),
    [("ep", KERNEL_LIMITS["ep"] + 1), ("tokens", KERNEL_LIMITS["tokens"] + 1), ("hidden", 10**9), ("ep", 0)],
)
def test_kernel_query_beyond_its_limits_is_refused(field: str, value: int) -> None:
    with pytest.raises(CalcError, match=f"--{field}"):
        kernel_query(**{field: value})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("nodes", LIMITS["nodes"] + 1),
        ("concurrency", LIMITS["concurrency"] + 1),
        ("isl", 10**12),
        ("hidden", OVERRIDE_LIMIT + 1),
        ("experts", 10**30),
    ],
)
def test_scenarios_beyond_the_limits_are_refused_by_name(field: str, value: int) -> None:
    with pytest.raises(CalcError) as info:
        evaluate(Scenario(**{field: value}))
    assert f"--{field.replace('_', '-')}" in info.value.message and "\n" not in info.value.message
