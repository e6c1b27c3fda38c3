"""Any input either evaluates to finite numbers or fails with the tool's own one-line error."""

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deepep_calc import Scenario, evaluate
from deepep_calc.base.errors import CalcError
from deepep_calc.base.quantity import Tag

ints = st.one_of(
    st.integers(-5, 5), st.integers(1, 64), st.integers(1, 20_000_000), st.sampled_from([0, 1, 2])
)
fields = st.fixed_dictionaries(
    {},
    optional={
        "model": st.sampled_from(
            [
                "deepseek-v3",
                "qwen3-30b-a3b-fp8",
                "mixtral-8x7b",
                "gpt-oss-120b",
                "qwen3-next-80b-a3b",
                "llama4-maverick",
                "nope",
                "dbrx",
            ]
        ),
        "instance": st.sampled_from(
            ["p5", "p5en", "p6-b200", "p6-b300", "ib-h800", "ib-h100", "ib-h200", "x"]
        ),
        "nodes": ints,
        "gpus_per_node": ints,
        "engine": st.sampled_from(["trtllm", "vllm", "sglang", "tgi"]),
        "cuda_graphs": st.booleans(),
        "transport": st.sampled_from(
            ["efa-proxy", "efa-gda", "efa-uccl", "ib-ibgda", "nvlink", "efa-nvshmem"]
        ),
        "alternative": st.sampled_from(["allgather", "tp"]),
        "comms": ints,
        "max_qps": ints,
        "concurrency": ints,
        "isl": ints,
        "osl": ints,
        "experts": ints,
        "topk": ints,
        "hidden": ints,
        "moe_layers": ints,
        "weight_dtype": st.sampled_from(["fp8", "bf16", "mxfp4", "nvfp4", "fp3"]),
        "slo_tok_s": st.floats(allow_nan=True, allow_infinity=True),
        "ttft_ms": st.floats(-1, 1e6),
        "price_per_hour": st.floats(-10, 1e4),
    },
)


def _finite_or_none(q: Any) -> None:
    v = q.scalar
    assert math.isfinite(v) or (q.unit == "$/Mtok" and math.isnan(v)), q


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields)
def test_evaluate_never_crashes(kw: dict[str, Any]) -> None:
    try:
        r = evaluate(Scenario(**kw))
    except CalcError as exc:
        assert "\n" not in exc.message and exc.message
        return
    for arm in r.arms.values():
        for q in (
            arm.per_user_tok_s,
            arm.step_ms,
            arm.aggregate_tok_s,
            arm.ttft_ms,
            arm.usd_per_mtok,
            arm.memory_gb_per_gpu,
            *arm.breakdown_ms.values(),
        ):
            _finite_or_none(q)
        assert arm.feasible or arm.why_not
    assert r.verdict.code in ("dense", "capacity", "deepep")
    # determinism: the same question gets the same answer
    again = evaluate(Scenario(**kw))
    assert again.to_json() == r.to_json()


def test_edge_layouts_are_finite() -> None:
    cases = [
        dict(nodes=1, gpus_per_node=1),  # one GPU: no traffic at all
        dict(nodes=1),  # EP equal to GPUs per node: zero remote traffic
        dict(concurrency=1, isl=1, osl=1),  # one token
        dict(concurrency=10_000_000),
        dict(model="mixtral-8x7b", experts=1, topk=1, alternative="tp"),  # one-expert model
        dict(nodes=1024, model="deepseek-v3"),
    ]
    for kw in cases:
        r = evaluate(Scenario(**kw))
        for arm in r.arms.values():
            for q in (arm.per_user_tok_s, arm.ttft_ms, arm.memory_gb_per_gpu, arm.aggregate_tok_s):
                _finite_or_none(q)


def test_memory_never_decreases_when_the_model_grows() -> None:
    base = evaluate(Scenario(model="deepseek-v3", nodes=4))
    for grow in ({"experts": 512}, {"hidden": 8192}, {"moe_layers": 61}, {"weight_dtype": "bf16"}):
        bigger = evaluate(Scenario(model="deepseek-v3", nodes=4, **grow))
        for name in base.arms:
            assert bigger.arms[name].memory_gb_per_gpu.scalar >= base.arms[name].memory_gb_per_gpu.scalar


def test_no_output_is_stronger_than_its_inputs() -> None:
    """Away from a measured cell nothing can be measured; the tax is never measured anywhere."""
    r = evaluate(Scenario(model="deepseek-v3", nodes=4))
    for arm in r.arms.values():
        assert arm.per_user_tok_s.tag is not Tag.MEASURED
        assert arm.memory_gb_per_gpu.tag is Tag.ASSUMED  # rests on the HBM spec
    cal = evaluate(Scenario())
    assert cal.tax_ms_per_token.tag is Tag.DERIVED
    assert cal.arms["deepep"].usd_per_mtok.tag is Tag.ASSUMED  # price is an input
