"""estimate/arms.py, the replicas arm: single-node replicas run the one-node layout the model
rates best (issue #26, item 2).

A replica is one copy of the model per node; inside its node it may exchange experts over
NCCL's allgather, over DeepEP's NVLink kernels, or run tensor parallel. The arm takes the best
feasible one, says which, and launches that; on one node it is the same deployment as the arm
whose layout it runs, so the verdict never pits the two against each other. The launch and the
reasons that name the layout are `tests/decide/test_explain.py`'s.
"""

from __future__ import annotations

import numpy as np
import pytest

from deepep_calc.api import evaluate
from deepep_calc.base.vocabulary import exchange_of
from deepep_calc.estimate.compute import compute
from deepep_calc.question.scenario import Scenario, resolve

from .shared import DSV3_VLLM


def _one_node(arm: str, concurrency: int) -> float:
    """The aggregate of one node running `arm` alone (DeepEP: over NVLink)."""
    alternative = "tp" if arm == "deepep" else arm
    r = evaluate(**DSV3_VLLM, nodes=1, concurrency=concurrency, alternative=alternative)
    return float(r.arms[arm].aggregate_tok_s.value)


def test_replicas_take_the_best_one_node_layout() -> None:
    """2 nodes x DeepSeek-V3, vLLM graphs, c256: each replica is a node serving c128; the arm's
    aggregate is twice the best of the three one-node layouts at c128, and it names that one."""
    r = evaluate(Scenario(**DSV3_VLLM, nodes=2, concurrency=256))
    rep = r.arms["replica"]
    per_node = {name: _one_node(name, 128) for name in ("allgather", "deepep", "tp")}
    best = max(per_node, key=per_node.__getitem__)
    assert exchange_of(rep.layout) == best
    assert float(rep.aggregate_tok_s.value) == pytest.approx(2 * per_node[best], rel=1e-9)
    assert rep.to_json()["layout"] == rep.layout


@pytest.mark.parametrize("nodes", [2, 4])
def test_a_sweep_chooses_row_by_row_as_single_runs_do(nodes: int) -> None:
    """Arrays of concurrency: each row's layout and figures are the scalar run's, large batches
    included (where two layouts' aggregates, tens of thousands of tok/s, differ by a few)."""
    levels = [8, 64, 256, 1024, 4096]
    resolved = resolve(Scenario(**DSV3_VLLM, nodes=nodes))
    swept = compute(resolved.vary(concurrency=np.asarray(levels, dtype=float)))
    rep = swept.arms["replica"]
    for i, c in enumerate(levels):
        one = evaluate(Scenario(**DSV3_VLLM, nodes=nodes, concurrency=c)).arms["replica"]
        assert str(np.broadcast_to(np.asarray(rep.layout), (len(levels),))[i]) == one.layout
        assert float(np.asarray(rep.aggregate_tok_s.value)[i]) == pytest.approx(
            float(one.aggregate_tok_s.value), rel=1e-12
        )
        assert float(np.asarray(rep.step_ms.value)[i]) == pytest.approx(float(one.step_ms.value), rel=1e-12)


def test_on_one_node_the_replica_keeps_the_allgather_layout() -> None:
    """One node: DeepEP over NVLink and TP are the cluster's own arms, so the replica stays the
    allgather layout (its twin) even where another layout would rate higher; in a sweep too."""
    r = evaluate(**DSV3_VLLM, nodes=1, concurrency=128, alternative="tp")
    assert r.arms["tp"].aggregate_tok_s.value > r.arms["replica"].aggregate_tok_s.value
    assert r.arms["replica"].layout == "replica"
    assert r.verdict.recommended_arm == "tp"
    resolved = resolve(Scenario(**DSV3_VLLM, concurrency=128))
    mixed = compute(resolved.vary(nodes=np.asarray([1.0, 2.0])))
    assert [str(x) for x in np.asarray(mixed.arms["replica"].layout)] == ["replica", "replica:tp"]
