"""Physics invariants of issue 2 on the decode step (`physics/step.py`), checked over generated
scenarios (hypothesis): every input moves a figure, per-user never rises with the load, the tax
over the host proxy is never a saving, an IBGDA step is never slower than an EFA-proxy one.

Measured cells replace the model at their exact scenarios; those are n = 1 observations
and are exempt from the monotonicity checks, which are about the model. The kernel's own
invariants are in `test_deepep_invariants.py`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepep_calc import Scenario, evaluate
from deepep_calc.estimate.compute import compute
from deepep_calc.question.scenario import resolve
from invariant_checks import assert_per_user_never_rises

PRESETS = [
    "deepseek-v3",
    "qwen3-235b-a22b-fp8",
    "qwen3-30b-a3b-fp8",
    "mixtral-8x7b",
    "gpt-oss-120b",
    "glm-4.5",
    "kimi-k2",
    "llama4-maverick",
    "dbrx",
    "deepseek-v2-lite",
    "qwen3-next-80b-a3b",
]
EFA = ["p5", "p5en", "p6-b200"]

scenarios = st.builds(
    dict,
    model=st.sampled_from(PRESETS),
    instance=st.sampled_from(EFA),
    nodes=st.sampled_from([1, 2, 4]),
    engine=st.sampled_from(["trtllm", "vllm", "sglang"]),
    cuda_graphs=st.booleans(),
    comms=st.sampled_from([1, 2, 4, 8]),
    concurrency=st.integers(1, 2048),
    isl=st.integers(1, 16384),
    osl=st.integers(1, 4096),
)


def _numbers(result: Any) -> list[float]:
    """Headline figures and the step's split: in an eager, CPU-bound step the GPU work hides
    under the launches (max of the two paths), so an input may move only the hidden GPU part."""
    out = []
    for arm in result.arms.values():
        out += [
            arm.per_user_tok_s.scalar,
            arm.memory_gb_per_gpu.scalar,
            arm.ttft_ms.scalar,
            arm.aggregate_tok_s.scalar,
            *(q.scalar for q in arm.breakdown_ms.values()),
        ]
    return out


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(
    scenarios,
    st.sampled_from(["experts", "topk", "hidden", "moe_layers", "weight_dtype", "isl", "osl", "concurrency"]),
)
def test_every_input_moves_some_number(fields: dict[str, Any], knob: str) -> None:
    base = evaluate(Scenario(**fields))
    m = base.model
    room = m.max_context - fields["isl"] - fields["osl"]  # ISL + OSL stay inside the context window

    def longer(name: str) -> int:
        return fields[name] * 4 if fields[name] * 3 <= room else max(1, fields[name] // 4)

    change: dict[str, Any] = {
        "experts": {"experts": m.experts * 2},
        "topk": {"topk": max(1, m.topk // 2) if m.topk > 1 else 2},
        "hidden": {"hidden": m.hidden * 2},
        "moe_layers": {"moe_layers": max(1, m.moe_layers // 2)},
        "weight_dtype": {"weight_dtype": "bf16" if m.weight_dtype != "bf16" else "fp8"},
        "isl": {"isl": longer("isl")},
        "osl": {"osl": longer("osl")},
        "concurrency": {"concurrency": fields["concurrency"] * 64},
    }[knob]
    other = evaluate(Scenario(**{**fields, **change}))
    assert not np.allclose(_numbers(base), _numbers(other), rtol=1e-9, equal_nan=True), knob


@settings(max_examples=40, deadline=None)
@given(scenarios)
def test_per_user_never_rises_with_concurrency(fields: dict[str, Any]) -> None:
    r = resolve(Scenario(**fields))
    conc = np.unique(np.geomspace(1, 1_000_000, 30).astype(int))
    res = compute(r.vary(concurrency=conc))
    assert_per_user_never_rises(res)


@pytest.mark.parametrize("comms", [1, 8])
def test_tax_never_negative_on_efa_proxy_at_the_default_scenario(comms: int) -> None:
    """Over the host proxy DeepEP pays per remote selection, so longer prompts (more mixed-in
    prefill tokens) never turn the tax into a saving against allgather at this scale."""
    r = resolve(Scenario(comms=comms))
    conc = np.arange(1, 257)
    for isl in (120, 2048, 8192):
        res = compute(r.vary(concurrency=conc, isl=np.full(conc.shape, isl)))
        assert np.all(res.tax_ms_per_token.value > 0)
    for conc_, isl in ((4, 120), (32, 120), (16, 2048)):
        assert evaluate(Scenario(comms=comms, concurrency=conc_, isl=isl)).tax_ms_per_token.scalar > 0


@settings(max_examples=30, deadline=None)
@given(scenarios)
def test_ibgda_serving_step_never_slower_than_efa_proxy(fields: dict[str, Any]) -> None:
    base = {**fields, "nodes": max(2, fields["nodes"])}
    efa = evaluate(Scenario(**{**base, "instance": "p5en", "transport": "efa-proxy"}))
    ib = evaluate(Scenario(**{**base, "instance": "ib-h200", "transport": "ib-ibgda"}))
    assert ib.arms["deepep"].step_ms.scalar <= efa.arms["deepep"].step_ms.scalar * (1 + 1e-9)
