"""What bounds a decode step (`physics/bounds.py`), on the built-in fit (issue #27); where
another part takes over is `test_take_over.py`.

The checks re-derive what they can from the step itself, not from the bound's own contest: the
path parts add up to the model's step; the bound named is the largest part of the step on the
path that sets it (the exchange counted by what gates it); under eager mode a CPU path longer
than the GPU path makes it the host launches (or, where the host waits for it, a larger proxy);
a GPU-initiated exchange at 128 tokens per rank across nodes is called message-bound only when
its message term is its largest.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from deepep_calc import Scenario
from deepep_calc.base.errors import CalcError
from deepep_calc.catalog.hardware import load_instances
from deepep_calc.catalog.transports import load_transports
from deepep_calc.estimate.compute import compute
from deepep_calc.estimate.result import table_for
from deepep_calc.physics import bounds as pb
from deepep_calc.physics.deepep import DIRECTIONS
from deepep_calc.physics.step import decode_step, decode_tokens, deepep_kernel
from deepep_calc.question.scenario import resolve

TRANSPORTS = load_transports()
INSTANCES = load_instances()
MODELS = ("qwen3-30b-a3b-fp8", "deepseek-v3", "qwen3-235b-a22b", "kimi-k2", "gpt-oss-120b")
ENGINES = ("trtllm", "vllm", "sglang")


def examples(n: int) -> settings:
    return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    instance = draw(st.sampled_from(sorted(INSTANCES)))
    on = sorted(t for t, spec in TRANSPORTS.items() if instance in spec.instances and t != "nvlink")
    return Scenario(
        model=draw(st.sampled_from(MODELS)),
        instance=instance,
        nodes=draw(st.sampled_from((1, 2, 4, 8))),
        engine=draw(st.sampled_from(ENGINES)),
        cuda_graphs=draw(st.booleans()),
        transport=draw(st.sampled_from(on)) if on else "efa-proxy",
        alternative=draw(st.sampled_from(("allgather", "tp"))),
        comms=draw(st.sampled_from((1, 2, 8))),
        concurrency=draw(st.sampled_from((1, 4, 16, 64, 256, 1024, 4096))),
        isl=draw(st.sampled_from((128, 1024, 8192))),
        osl=draw(st.sampled_from((64, 512))),
    )


def _evaluate(s: Scenario) -> Any:
    try:
        return compute(resolve(s))
    except CalcError:
        assume(False)


def _class_sums(parts: dict[str, float]) -> dict[str, float]:
    """The step's parts with the exchange counted by class (latency, messages, bandwidth, engine)."""
    exchange = {
        "latency": ("exchange_latency", "collective_latency"),
        "messages": ("messages",),
        "bandwidth": ("wire", "nvlink"),
        "engine": ("arm_term",),
    }
    out = {n: v for n, v in parts.items() if not any(n in m for m in exchange.values())}
    for cls, members in exchange.items():
        out[cls] = sum(parts.get(n, 0.0) for n in members)
    return out


def _class_of(name: str) -> str:
    return {
        "exchange_latency": "latency",
        "collective_latency": "latency",
        "wire": "bandwidth",
        "nvlink": "bandwidth",
        "arm_term": "engine",
    }.get(name, name)


@given(scenarios())
@examples(60)
def test_the_bound_is_the_largest_part_of_the_step(s: Scenario) -> None:
    """On every arm: the path parts add up to the model's step; the bound is the largest of them
    (the exchange by class); eager with the CPU path longer, it is a part of the CPU path."""
    result = _evaluate(s)
    r = result.resolved
    for name, arm in result.arms.items():
        b = arm.bounds.physics
        parts = {n: q.scalar for n, q in b.parts.items()}
        model_step_us = arm.model_step_ms.scalar * 1000.0 if arm.model_step_ms else arm.step_ms.scalar * 1000
        assert math.isclose(sum(parts.values()), model_step_us, rel_tol=1e-9), name
        sums = _class_sums(parts)
        bound = pb.bound_name(b)
        assert sums[_class_of(bound)] == max(sums.values()), (name, bound, sums)
        # an independent look at the paths, from the step's own CPU and GPU path lengths
        c = table_for(r).step_constants(r)
        step = decode_step(r, arm.layout or name, c, {})  # the replicas: the layout they run
        proxy = step.parts_ms.us("proxy").scalar
        gpu_side = step.gpu_us.scalar + (0.0 if r.engine.proxy_wait == "host" else proxy)
        if not s.cuda_graphs and step.cpu_us.scalar > gpu_side:
            assert bound in ("launches", "host", "proxy"), (name, bound)
            if r.engine.proxy_wait != "host" or proxy < parts["launches"]:
                assert bound == "launches" or parts["host"] > parts["launches"], (name, bound)
        else:
            assert bound != "launches", (name, bound)


GPU_INITIATED = sorted(
    t for t, spec in TRANSPORTS.items() if not spec.host_proxied and spec.fabric != "nvlink"
)


@st.composite
def gpu_initiated_at_128(draw: st.DrawFn) -> Scenario:
    transport = draw(st.sampled_from(GPU_INITIATED))
    instance = draw(st.sampled_from(sorted(TRANSPORTS[transport].instances)))
    nodes = draw(st.sampled_from((2, 4, 8)))
    gpn = INSTANCES[instance].gpus_per_node
    return Scenario(
        model=draw(st.sampled_from(MODELS)),
        instance=instance,
        nodes=nodes,
        transport=transport,
        engine=draw(st.sampled_from(ENGINES)),
        cuda_graphs=draw(st.booleans()),
        concurrency=128 * nodes * gpn,
        max_batch=128,
        isl=draw(st.sampled_from((128, 1024))),
        osl=draw(st.sampled_from((128, 512))),
    )


@given(gpu_initiated_at_128())
@examples(40)
def test_a_gpu_initiated_exchange_is_issue_bound_only_when_its_messages_lead(s: Scenario) -> None:
    """At 128 tokens per rank across nodes over a GPU-initiated transport, the exchange is called
    message-bound only when the issue path (data messages + signals), where it gates, is its
    largest term; the term is re-added here from the kernel's own parts."""
    result = _evaluate(s)
    r = result.resolved
    arm = result.arms["deepep"]
    b = arm.bounds.physics
    assert decode_tokens(arm.bounds.memo[("layout", "deepep")]) == 128.0
    k = deepep_kernel(r, arm.bounds.memo[("layout", "deepep")], 128.0, table_for(r).step_constants(r))
    terms = {"latency": 0.0, "messages": 0.0, "bandwidth": 0.0}
    for d in DIRECTIONS:
        p = {n: q.scalar for n, q in k[d].items()}
        pipes = {
            "latency": p["leaving"],
            "messages": p["data"] + p["signals"],
            "bandwidth": max(p["wire"], p["nvlink"]),
        }
        gate = max(pipes, key=lambda n: pipes[n])
        terms["latency"] += p["local"]
        terms[gate] += pipes[gate]
    if pb.exchange_bound(b) == "messages":
        assert terms["messages"] >= max(terms["latency"], terms["bandwidth"]), terms
    else:
        assert terms[pb.exchange_bound(b)] >= terms["messages"], (pb.exchange_bound(b), terms)


def test_eager_launches_bind_the_calibration_scenario() -> None:
    """TRT-LLM eager, Qwen3-30B on 2x p5en: a ~36 ms CPU path against ~11-15 ms of GPU work,
    so every arm is bound by its launches and the GPU work is hidden under them."""
    result = compute(resolve(Scenario()))
    for arm in result.arms.values():
        b = arm.bounds.physics
        assert pb.bound_name(b) == "launches"
        assert bool(b.cpu_binds)
        assert b.hidden_us.scalar < b.parts["launches"].scalar


def test_deepseek_on_sglang_graphs_is_bound_by_hbm() -> None:
    """DeepSeek-V3 on 2x p5en, SGLang with CUDA graphs: no launches; the expert reads bind
    every arm, and DeepEP's exchange waits out its fixed latency (2 tokens per rank)."""
    result = compute(resolve(Scenario(model="deepseek-v3", nodes=2, engine="sglang", cuda_graphs=True)))
    for arm in result.arms.values():
        assert pb.bound_name(arm.bounds.physics) == "hbm"
    assert pb.exchange_bound(result.arms["deepep"].bounds.physics) == "latency"


def _nic(concurrency: int, **fields: Any) -> tuple[float, float]:
    b = compute(resolve(Scenario(concurrency=concurrency, **fields))).arms["deepep"].bounds
    return b.nic_busy_pct.scalar, b.nic_busy_exchange_pct.scalar


def test_nic_busy_rises_with_tokens_per_rank() -> None:
    """More tokens per rank put more bytes through the same fixed latency: both shares rise."""
    figures = [_nic(16 * t, max_batch=512) for t in (1, 2, 4, 8, 16, 32, 64, 128)]
    for (step_a, ex_a), (step_b, ex_b) in itertools.pairwise(figures):
        assert step_b > step_a and ex_b > ex_a


def test_nic_busy_falls_as_the_step_grows() -> None:
    """The same exchange in a longer step (eager launches instead of CUDA graphs): the same bytes
    and the same exchange, a smaller share of the step; share x step is the bytes at line rate."""
    eager = compute(resolve(Scenario(concurrency=256))).arms["deepep"]
    graphs = compute(resolve(Scenario(concurrency=256, cuda_graphs=True))).arms["deepep"]
    e, g = eager.bounds, graphs.bounds
    assert e.physics.step_us.scalar > g.physics.step_us.scalar
    assert e.nic_busy_pct.scalar < g.nic_busy_pct.scalar
    assert math.isclose(e.wire_mb.scalar, g.wire_mb.scalar)
    assert math.isclose(
        e.nic_busy_pct.scalar * e.physics.step_us.scalar, g.nic_busy_pct.scalar * g.physics.step_us.scalar
    )
    assert math.isclose(e.nic_busy_exchange_pct.scalar, g.nic_busy_exchange_pct.scalar)


def test_nothing_on_the_wire_inside_one_node() -> None:
    result = compute(resolve(Scenario(nodes=1)))
    for arm in result.arms.values():
        assert arm.bounds.wire_mb.scalar == 0.0 and arm.bounds.nic_busy_pct.scalar == 0.0


def test_the_wire_bytes_are_the_protocol_counts() -> None:
    """Calibration, DeepEP: 2 tokens per rank + the joining prompts' 0.25 x 120 / 16, top-8 with
    half the experts remote, (2048 + 64 + 16) B out and 2 x 2048 B back, 48 MoE layers."""
    b = compute(resolve(Scenario())).arms["deepep"].bounds
    tokens = 2.0 + 32 / 128 * 120 / 16
    want = tokens * 8 * 0.5 * (2048 + 64 + 16 + 4096) * 48 / 1e6
    assert math.isclose(b.wire_mb.scalar, want, rel_tol=1e-12)


def test_a_sweep_names_the_bound_of_each_row_as_one_scenario_does() -> None:
    """The vectorised bound (a sweep's column) is the scalar one, row by row, mixed one-node and
    multi-node rows and graph modes included."""
    import numpy as np

    r = resolve(Scenario(model="deepseek-v3", transport="efa-gda"))
    nodes = np.array([1.0, 2.0, 4.0]).reshape(3, 1, 1)
    conc = np.array([4.0, 64.0, 1024.0]).reshape(1, 3, 1)
    graphs = np.array([False, True]).reshape(1, 1, 2)
    batch = compute(r.vary(nodes=nodes, concurrency=conc, cuda_graphs=graphs))
    for name in batch.arms:
        idx = np.broadcast_to(batch.arms[name].bounds.index, (3, 3, 2))
        ex = np.broadcast_to(batch.arms[name].bounds.exchange_index, (3, 3, 2))
        nic = np.broadcast_to(batch.arms[name].bounds.nic_busy_pct.value, (3, 3, 2))
        for i, n in enumerate((1, 2, 4)):
            for j, cc in enumerate((4, 64, 1024)):
                for k, g in enumerate((False, True)):
                    one = (
                        compute(
                            resolve(
                                Scenario(
                                    model="deepseek-v3",
                                    transport="efa-gda",
                                    nodes=n,
                                    concurrency=cc,
                                    cuda_graphs=g,
                                )
                            )
                        )
                        .arms[name]
                        .bounds
                    )
                    assert pb.BOUNDS[int(idx[i, j, k])] == one.name, (name, n, cc, g)
                    assert pb.EXCHANGE_BOUNDS[int(ex[i, j, k])] == one.exchange_name
                    assert math.isclose(
                        float(nic[i, j, k]), one.nic_busy_pct.scalar, rel_tol=1e-9, abs_tol=1e-12
                    )
