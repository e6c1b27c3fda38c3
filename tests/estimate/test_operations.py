"""estimate/operations.py: the mechanism page's counts follow from the layout and the catalogs."""

from __future__ import annotations

import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.catalog.transports import load_transports
from deepep_calc.estimate.operations import kernel_standing, native_vs_proxy, step_operations


@pytest.mark.parametrize("nodes", [2, 4])
def test_the_counts_chain_from_tokens_to_wire_time(nodes: int) -> None:
    result = evaluate(Scenario(nodes=nodes))
    op = step_operations(result)
    r = result.resolved
    world = nodes * r.gpus_per_node
    assert op.tokens.scalar == pytest.approx(r.scenario.concurrency / world)
    assert op.selections.scalar == pytest.approx(op.tokens.scalar * r.model.topk)
    assert op.remote.scalar == pytest.approx(op.selections.scalar * (world - r.gpus_per_node) / world)
    assert op.posts.scalar == pytest.approx(op.remote.scalar * r.transport.ops_per_token)
    assert op.wire_us.scalar > 0 and op.wire_us.unit == "us"
    assert op.nic_pct.scalar + op.idle_pct.scalar == pytest.approx(100.0)
    assert op.moe_layers == r.model.moe_layers
    assert {str(q.tag) for q in (op.tokens, op.selections, op.remote, op.posts)} == {"derived"}


def test_infiniband_stands_at_one_against_itself() -> None:
    tr = load_transports()
    ib, proxy = kernel_standing(
        [("ib-ibgda", tr["ib-ibgda"].reference), ("efa-proxy", tr["efa-proxy"].reference)]
    )
    assert ib.vs_ib_dispatch.scalar == pytest.approx(1.0) and ib.vs_ib_combine.scalar == pytest.approx(1.0)
    assert proxy.vs_ib_dispatch.scalar > 1.0  # EFA's host proxy is slower than IBGDA
    dispatch, combine = native_vs_proxy()
    assert dispatch.unit == combine.unit == "x" and dispatch.scalar > 0
