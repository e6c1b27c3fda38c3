"""Where another part would take over a decode step's bound (`physics/take_over.py`).

The leads are checked on a hand-made `StepBound` (us): CPU path launches 500 + host 100 = 600;
GPU path HBM 200 (tensor cores 150, hidden under it), kernel floors 40, exchange latency 30,
messages 60, wire 10, mixed-in prefill 20: 200 + 40 + 30 + 60 + 10 + 20 = 360, plus a proxy of
50 where the engine waits on the GPU (410). The search itself is checked on the built-in fit:
where it says the bound changes, the model's own bound does, and just below it does not.
"""

from __future__ import annotations

from typing import Any

from deepep_calc import Scenario
from deepep_calc.estimate.compute import compute
from deepep_calc.estimate.result import table_for
from deepep_calc.physics import bounds as pb
from deepep_calc.physics.bounds import StepBound
from deepep_calc.physics.take_over import (
    TOLERANCE,
    _at,
    _next_load,
    lead_us,
    leads_us,
    on_cpu_path,
    running_sequences,
    take_over,
)
from deepep_calc.question.scenario import resolve

from .hand import ep_layout, q, resolved

GPU_PARTS = {
    "host": 0.0,
    "hbm": 200.0,
    "compute": 150.0,
    "kernels": 40.0,
    "exchange_latency": 30.0,
    "messages": 60.0,
    "wire": 10.0,
    "nvlink": 0.0,
    "collective_latency": 0.0,
    "arm_term": 0.0,
    "prefill": 20.0,
}


def bound(
    *, graphs: bool = False, host_wait: bool = False, cpu_binds: bool = True, **gpu: float
) -> StepBound:
    """The hand-made bound of the module docstring; `gpu` replaces GPU path parts (us). Only the
    fields the leads read are meaningful: the parts and totals are placeholders."""
    zero = q(0.0)
    return StepBound(
        parts={},
        exchange={},
        cpu_parts={"launches": q(500.0), "host": q(100.0)},
        gpu_parts={k: q(v) for k, v in {**GPU_PARTS, **gpu}.items()},
        proxy_us=q(50.0),
        host_wait=host_wait,
        cpu_binds=cpu_binds,
        graphs=graphs,
        hidden_us=zero,
        step_us=zero,
        wire_mb=q(0.0, "MB"),
        exchange_us=zero,
        line_gb_s=q(50.0, "GB/s"),
    )


def test_which_path_a_part_competes_on() -> None:
    """Eager: launches on the CPU path, HBM and any exchange part (wire: bandwidth) on the GPU
    path, the per-step host cost and the proxy on whichever path sets the step. Under CUDA
    graphs there is no CPU path to compete on."""
    eager = bound()
    assert on_cpu_path(eager, "launches") is True
    assert on_cpu_path(eager, "hbm") is False
    assert on_cpu_path(eager, "wire") is False
    assert on_cpu_path(eager, "host") is True and on_cpu_path(eager, "proxy") is True
    gpu_binds = bound(cpu_binds=False)
    assert on_cpu_path(gpu_binds, "host") is False and on_cpu_path(gpu_binds, "proxy") is False
    graphs = bound(graphs=True)
    assert not any(on_cpu_path(graphs, n) for n in ("launches", "host", "proxy", "hbm"))


def test_the_leads_of_the_launches_on_the_cpu_path() -> None:
    """Launches 500 against the host cost 100 (+400) and the proxy, which is not on the CPU
    path when the engine waits on the GPU (+500); against the GPU path 600 − 410 = +190, the
    least: the launches bind by 190 us. When the engine's thread waits for the proxy it is on
    the CPU path (500 − 50 = +450) and off the GPU one: 600 − 360 = +240."""
    assert leads_us(bound(), "launches", cpu=True) == [400.0, 500.0, 190.0]
    assert lead_us(bound(), "launches") == 190.0
    assert leads_us(bound(host_wait=True), "launches", cpu=True) == [400.0, 450.0, 240.0]


def test_the_leads_of_hbm_on_the_gpu_path() -> None:
    """HBM 200 against every other GPU part, sorted by name (bandwidth 10, tensor cores 150,
    engine 0, host 0, kernels 40, latency 30, messages 60, prefill 20, proxy 50), then the GPU
    path against the CPU one: 410 − 600 = −190. The CPU path sets this step, so HBM does not
    bind: its lead is negative."""
    others = [190.0, 50.0, 200.0, 200.0, 160.0, 170.0, 140.0, 180.0, 150.0]
    assert leads_us(bound(), "hbm", cpu=False) == [*others, -190.0]
    assert lead_us(bound(), "hbm") == -190.0


def test_the_device_counts_the_larger_of_hbm_and_the_tensor_cores() -> None:
    """Tensor cores 300 over HBM 200: the GPU path is 360 − 200 + 300 = 460 (+ proxy 50 = 510),
    so the launches lead it by 600 − 510 = 90."""
    assert lead_us(bound(compute=300.0), "launches") == 90.0


def test_an_exchange_part_competes_as_its_class() -> None:
    """The wire is counted as the bandwidth class, wire 10 + NVLink 5 = 15, against (by name)
    tensor cores 150, engine 0, HBM 200, host 0, kernels 40, latency 30, messages 60, prefill 20,
    proxy 50; then the GPU path, 365 + 50 = 415, against the CPU path's 600: −185."""
    leads = leads_us(bound(nvlink=5.0), "wire", cpu=False)
    assert leads == [-135.0, 15.0, -185.0, 15.0, -25.0, -15.0, -45.0, -5.0, -35.0, -185.0]


def test_the_host_cost_where_it_is_part_of_both_paths() -> None:
    """Eager with the CPU path binding: host 100 against launches 500 (−400) and the proxy off
    the CPU path (+100); no path term, as it is on both. Under graphs the host cost is the
    GPU path's own (here 100) against the other GPU parts."""
    assert leads_us(bound(), "host", cpu=True) == [-400.0, 100.0]
    g = bound(graphs=True, host=100.0)
    assert lead_us(g, "host") == 100.0 - 200.0


def test_running_sequences_are_the_groups_tokens() -> None:
    """Toy, 32 clients on 2 × 8 GPUs: DeepEP runs 32 in one group; replicas 16 in each of 2.
    A batch of 1 per rank: DeepEP 1 × 16 ranks = 16, replicas 1 × 8 × 2 = 16. A layout already
    in the memo is the one read: 5 tokens × 3 groups = 15."""
    r = resolved()
    assert running_sequences(r, "deepep") == 32.0
    assert running_sequences(r, "replica") == 32.0
    assert running_sequences(resolved(max_batch=1), "deepep") == 16.0
    assert running_sequences(resolved(max_batch=1), "replica") == 16.0
    memo: dict[Any, Any] = {("layout", "deepep"): ep_layout(group_tokens=5.0, groups=3.0)}
    assert running_sequences(r, "deepep", memo) == 15.0


def test_the_first_probe_extrapolates_the_leads_to_zero() -> None:
    """No change seen yet, leads [10, 4] at 100 running and [6, 3] at 200: the first falls to 0
    at 200 + 6 × 100 / 4 = 350, the second at 200 + 3 × 100 / 1 = 500; the probe goes just past
    the nearer, ceil(350 × 1.01) = 354, and never past the top. With no history (or no lead
    falling) it looks four times further: ceil(800 × 1.01) = 808."""
    seen = {100: [10.0, 4.0], 200: [6.0, 3.0]}
    assert _next_load(seen, 100, 200, 0, 10_000, "lo", 1) == 354
    assert _next_load(seen, 100, 200, 0, 300, "lo", 1) == 300
    assert _next_load({200: [6.0, 3.0]}, 200, 200, 0, 10_000, "lo", 1) == 808


def test_inside_a_bracket_the_root_is_probed_from_the_side_that_did_not_move() -> None:
    """Bracket 100 (lead 30) to 400 (lead −10): the root is 100 + 30 × 300 / 40 = 325. After the
    upper end moved the probe goes just short, int(325 × 0.995) = 323; after the lower end did,
    just past, ceil(325 × 1.005) = 327. Two moves of one end: the geometric middle, 200."""
    seen = {100: [30.0, 50.0], 400: [-10.0, 20.0]}
    assert _next_load(seen, 100, 100, 400, 10_000, "hi", 1) == 323
    assert _next_load(seen, 100, 100, 400, 10_000, "lo", 1) == 327
    assert _next_load(seen, 100, 100, 400, 10_000, "hi", 2) == 200
    assert TOLERANCE == 0.02


def test_the_take_over_is_where_the_model_changes_bound() -> None:
    """The load found is within the search's tolerance of the first that changes the bound:
    there the bound differs, just below it (by the tolerance) it does not."""
    for s in (Scenario(), Scenario(model="deepseek-v3", nodes=2, engine="sglang", cuda_graphs=True)):
        r = resolve(s)
        result = compute(r)
        c = table_for(r).step_constants(r)
        for name, arm in result.arms.items():
            b = arm.bounds.physics
            found = take_over(r, name, c, b, arm.bounds.memo)
            assert found is not None and found.factor > 1.0
            assert found.evaluations <= 12
            here = pb.bound_name(b)
            assert pb.bound_name(_at(r, name, c, found.running, {})) == found.bound != here
            below = int(found.running * (1 - 0.02)) - 1
            assert pb.bound_name(_at(r, name, c, below, {})) == here, (name, found)


def test_no_take_over_within_reach_is_said() -> None:
    """A search capped at the load itself finds nothing."""
    r = resolve(Scenario())
    result = compute(r)
    arm = result.arms["deepep"]
    c = table_for(r).step_constants(r)
    assert take_over(r, "deepep", c, arm.bounds.physics, arm.bounds.memo, max_factor=1.0) is None
    assert take_over(r, "deepep", c, arm.bounds.physics, arm.bounds.memo, max_factor=2.0) is None
