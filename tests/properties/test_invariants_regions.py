"""The model invariants, over strategies aimed at each verdict region and at the measured cells.

`test_invariants_hypothesis.scenarios()` spreads over the whole catalog, so 1000 draws gave
724 capacity, 274 dense, 2 deepep verdicts and no measured cell. The strategies here each aim
at one region:

* `deepep_scenarios`: GPU-initiated transports (EFA-GDA, IBGDA) under vLLM's CUDA graphs at
  DeepSeek scale on four nodes, large batches (768 or more requests), short prompts and long
  outputs: vLLM's allgather path adds its own cost per layer and per token around NCCL's
  collectives ([U926], [NIXL]), so DeepEP beats it, and a batch that large leaves each
  single-node replica (tensor parallel, its best one-node layout) short of KV cache;
* `capacity_scenarios`: a model (in its checkpoint dtype or BF16) whose weights alone exceed
  one node's usable HBM, so no replica fits;
* `dense_scenarios`: Qwen3-30B-A3B on TRT-LLM eager over the host proxy, around the
  calibration A/B, where the measured tax makes dense win;
* `cell_scenarios`: exactly the scenario of a measured cell of measured.toml.

`test_each_strategy_lands_in_its_region` checks the aim (not the verdict rules: those have their
own tests); the other tests assert the invariants every result must keep.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from deepep_calc import Scenario
from deepep_calc.catalog.hardware import load_instances
from deepep_calc.catalog.measured import Cell, load_cells
from deepep_calc.catalog.model_catalog import load_models
from deepep_calc.catalog.transports import load_transports
from deepep_calc.decide.verdict import NO_ARM
from deepep_calc.estimate.cells import ROLE_PRIORITY
from deepep_calc.fit.observations import cell_scenario
from deepep_calc.physics.params import weight_bytes
from deepep_calc.question.scenario import resolve
from invariant_checks import assert_finite_or_not_feasible, evaluate_or_refuse

from .test_invariants_hypothesis import (
    assert_measured_only_where_replayed,
    assert_tag_ceilings,
    measured_paths,
)

MODELS = load_models()
INSTANCES = load_instances()
TRANSPORTS = load_transports()
ENGINES = ("vllm", "sglang", "trtllm")


def examples(n: int) -> settings:
    return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def deepep_scenarios(draw: st.DrawFn) -> Scenario:
    """DeepSeek-scale MoE, vLLM with CUDA graphs, a GPU-initiated transport on four H200 nodes,
    a batch too large for one node's KV cache."""
    transport, instance = draw(st.sampled_from([("efa-gda", "p5en"), ("ib-ibgda", "ib-h200")]))
    return Scenario(
        model=draw(st.sampled_from(["deepseek-v3", "deepseek-r1"])),
        instance=instance,
        transport=transport,
        engine="vllm",
        cuda_graphs=True,
        nodes=4,
        concurrency=draw(st.integers(768, 3072)),
        isl=draw(st.integers(64, 256)),
        osl=draw(st.integers(512, 2048)),
    )


def _network_transports(instance: str) -> list[str]:
    return sorted(
        t for t, spec in TRANSPORTS.items() if instance in spec.instances and spec.fabric != "nvlink"
    )


def _too_big_for_one_node() -> list[tuple[str, str, str | None]]:
    """(model, instance, weight dtype override) whose weights exceed 92 % of one node's HBM."""
    out = []
    for model in sorted(MODELS):
        for instance, inst in sorted(INSTANCES.items()):
            for dtype in (None, "bf16"):
                if dtype is not None and MODELS[model].weight_dtype == dtype:
                    continue
                transport = _network_transports(instance)[0]
                spec = resolve(
                    Scenario(model=model, instance=instance, transport=transport, weight_dtype=dtype)
                ).model
                if weight_bytes(spec).total / 1e9 > inst.gpus_per_node * inst.hbm_gb * 0.92:
                    out.append((model, instance, dtype))
    return out


TOO_BIG = _too_big_for_one_node()


@st.composite
def capacity_scenarios(draw: st.DrawFn) -> Scenario:
    """A model that does not fit one node of this instance, spread over enough nodes to fit."""
    model, instance, dtype = draw(st.sampled_from(TOO_BIG))
    on = _network_transports(instance)
    return Scenario(
        model=model,
        instance=instance,
        weight_dtype=dtype,
        transport=draw(st.sampled_from(on)),
        engine=draw(st.sampled_from(ENGINES)),
        cuda_graphs=draw(st.booleans()),
        nodes=draw(st.sampled_from([4, 8, 16])),
        concurrency=draw(st.integers(1, 64)),
        isl=draw(st.integers(64, 1024)),
        osl=draw(st.integers(64, 512)),
    )


@st.composite
def dense_scenarios(draw: st.DrawFn) -> Scenario:
    """Around the calibration A/B: Qwen3-30B-A3B, TRT-LLM eager, the host proxy, 2x p5en."""
    return Scenario(
        model=draw(st.sampled_from(["qwen3-30b-a3b-fp8", "qwen3-30b-a3b"])),
        engine="trtllm",
        transport="efa-proxy",
        comms=draw(st.sampled_from([1, 2, 4, 8])),
        concurrency=draw(st.integers(1, 64)),
        isl=draw(st.integers(64, 2048)),
        osl=draw(st.integers(64, 512)),
    )


USABLE_CELLS = [c for c in load_cells().values() if c.role in ROLE_PRIORITY and not c.comms_assumed]


def cell_scenarios() -> st.SearchStrategy[tuple[Cell, Scenario]]:
    """A measured cell and exactly the scenario it ran."""
    return st.sampled_from(USABLE_CELLS).map(lambda c: (c, cell_scenario(c)))


REGIONS = {"deepep": deepep_scenarios(), "capacity": capacity_scenarios(), "dense": dense_scenarios()}


def _verdicts(strategy: st.SearchStrategy[Scenario], n: int) -> Counter[str]:
    seen: Counter[str] = Counter()

    @settings(
        max_examples=n,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(s: Scenario) -> None:
        result = evaluate_or_refuse(s)
        seen[result.verdict.code if result is not None else "refused"] += 1

    collect()
    return seen


def test_each_strategy_lands_in_its_region() -> None:
    """30 fixed draws of each: at least 90 % reach the verdict the strategy aims at."""
    for code, strategy in REGIONS.items():
        seen = _verdicts(strategy, 30)
        assert seen[code] >= 0.9 * sum(seen.values()), (code, dict(seen))


def test_cell_scenarios_are_measured_cells() -> None:
    """Every usable cell's own scenario is recognised as a measured cell (DeepEP arm)."""
    for cell in USABLE_CELLS:
        result = evaluate_or_refuse(cell_scenario(cell))
        assert result is not None and result.arms["deepep"].measured_cell is not None, cell.id


def _assert_sound(result: Any) -> None:
    assert_finite_or_not_feasible(result)
    assert_tag_ceilings(result)
    assert_measured_only_where_replayed(result)


@examples(40)
@given(st.one_of(*REGIONS.values()))
def test_invariants_in_every_region(scenario: Scenario) -> None:
    result = evaluate_or_refuse(scenario)
    assert result is not None, scenario
    _assert_sound(result)
    v = result.verdict
    if v.status == "nothing_fits":
        assert v.recommended_arm == NO_ARM and not any(a.feasible for a in result.arms.values())
    else:
        assert v.recommended_arm in result.arms and result.arms[v.recommended_arm].feasible
    if result.verdict.code == "capacity" and v.status != "nothing_fits":
        assert not result.arms["replica"].fits_memory


@examples(40)
@given(deepep_scenarios())
def test_graph_mode_gpu_transports_pay_no_proxied_host_cost(scenario: Scenario) -> None:
    """GPU-initiated transports under CUDA graphs: no proxy part, no launches on the host."""
    result = evaluate_or_refuse(scenario)
    assert result is not None
    for arm in result.arms.values():
        assert arm.breakdown_ms["proxy"].scalar == 0.0


@examples(len(USABLE_CELLS) * 2)
@given(cell_scenarios())
def test_measured_cells_print_their_observations(case: tuple[Cell, Scenario]) -> None:
    """At a cell's own scenario the arm shows a cell of the same scenario, at least as well
    evidenced, and prints that cell's observed figures exactly, tagged measured; the model's
    other figures and everything computed from them are not measured."""
    cell, scenario = case
    result = evaluate_or_refuse(scenario)
    assert result is not None
    _assert_sound(result)
    arm = result.arms["deepep"]
    shown = load_cells().get(arm.measured_cell) if arm.measured_cell else None
    if shown is None:  # a user-less run shows catalog cells only
        raise AssertionError(f"{cell.id}: no measured cell at its own scenario")
    assert cell_scenario(shown) == scenario
    assert ROLE_PRIORITY[shown.role] <= ROLE_PRIORITY[cell.role]
    m = shown.deepep
    if m.per_user_tok_s is not None:
        assert arm.per_user_tok_s.value == m.per_user_tok_s
    if m.aggregate_tok_s is not None:
        assert arm.aggregate_tok_s.value == m.aggregate_tok_s
    if m.itl_ms is not None:
        assert arm.step_ms.value == m.itl_ms
    if m.ttft_p50_ms is not None:
        assert arm.ttft_ms.value == m.ttft_p50_ms
    measured = {p.split(".")[2] for p in measured_paths(result) if p.startswith("arms.deepep.")}
    expected = {
        name
        for name, value in (
            ("per_user_tok_s", m.per_user_tok_s),
            ("aggregate_tok_s", m.aggregate_tok_s),
            ("step_ms", m.itl_ms),
            ("ttft_ms", m.ttft_p50_ms),
        )
        if value is not None
    }
    assert measured == expected, (shown.id, measured, expected)
    assert_measured_only_where_replayed(result)
