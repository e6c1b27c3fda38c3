"""decide/bounds.py: the words for what bounds each arm's step and what would move DeepEP's.

The figures are the arms' own (`estimate/bounds.py`); here, the wording around them, the single
changes tried and their order, and how a what-if the caller cannot run is skipped. The what-ifs
are stand-ins: one that refuses every change, one that answers only some. Last, the two lines
in the Why of a real evaluation.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.base.errors import CalcError
from deepep_calc.base.quantity import Q
from deepep_calc.decide.bounds import _times, bound_reasons, move_changes


def _refused(update: dict[str, Any]) -> Any:
    raise CalcError(f"not here: {update}")


def _deepep_bound(name: str, label: str, part_ms: float, feasible: bool = True) -> Any:
    """A what-if's result whose DeepEP arm is bound by `name`."""
    bounds = SimpleNamespace(name=name, label=label, part_ms=Q.assumed(part_ms, "ms", "what-if"))
    return SimpleNamespace(arms={"deepep": SimpleNamespace(feasible=feasible, bounds=bounds)})


@pytest.fixture(scope="module")
def calibration() -> Any:
    return evaluate(Scenario(), explain=False)


def test_the_changes_tried_and_their_order(calibration: Any) -> None:
    """Host-proxied across nodes: a GPU-initiated transport first (efa-gda runs on p5en), then
    EP_NUM_COMMS=8 where fewer comms are set, the other graph mode, half the nodes. One node:
    only the graph mode; a GPU-initiated transport: no transport to propose."""
    assert move_changes(calibration) == [
        ("--transport efa-gda", {"transport": "efa-gda"}),
        ("--cuda-graphs", {"cuda_graphs": True}),
        ("--nodes 1", {"nodes": 1}),
    ]
    assert [flag for flag, _ in move_changes(evaluate(Scenario(comms=4), explain=False))] == [
        "--transport efa-gda",
        "--comms 8",
        "--cuda-graphs",
        "--nodes 1",
    ]
    one = evaluate(Scenario(nodes=1, transport="nvlink", cuda_graphs=True), explain=False)
    assert move_changes(one) == [("--eager", {"cuda_graphs": False})]
    gda = evaluate(Scenario(transport="efa-gda", nodes=4), explain=False)
    assert [flag for flag, _ in move_changes(gda)] == ["--cuda-graphs", "--nodes 2"]


def test_what_bounds_each_step_names_deepeps_bound_and_its_nics(calibration: Any) -> None:
    """Eager TRT-LLM: every arm is bound by its host launches (said once, "too"); DeepEP's GPU
    work hides under them; its exchange's NICs are quoted, with the NIC utilisation measured on
    the calibration A/B's dispatch path (efa-proxy only)."""
    bounds, _ = bound_reasons(calibration, _refused)
    dee = calibration.arms["deepep"].bounds
    assert bounds.startswith(
        f"What bounds each step (the model's): DeepEP's host launches, {dee.part_ms.scalar:,.1f} of "
    )
    assert "hidden under the launches; allgather's and the replicas' too. " in bounds
    assert "DeepEP's exchange is " in bounds and "of the exchange's time" in bounds
    assert "was measured on the calibration A/B's dispatch path (method not published)." in bounds


def test_on_one_node_no_nic_carries_the_exchange() -> None:
    result = evaluate(Scenario(nodes=1, transport="nvlink"), explain=False)
    bounds, _ = bound_reasons(result, _refused)
    assert bounds.endswith("DeepEP's exchange stays on NVLink (latency-bound); no NIC carries it.")


def test_the_first_change_that_moves_the_bound_is_named(calibration: Any) -> None:
    """The transport what-if is refused (skipped), the graph-mode one leaves DeepEP bound by its
    launches (no move), halving the nodes makes it wire-bound: that change is the one named."""

    def whatif(update: dict[str, Any]) -> Any:
        if "transport" in update:
            raise CalcError("refused")
        if "cuda_graphs" in update:
            return _deepep_bound("launches", "host launches", 30.0)
        return _deepep_bound("wire", "the wire", 4.2)

    _, moves = bound_reasons(calibration, whatif)
    assert moves.startswith("What would move DeepEP's bound (host launches): ")
    assert moves.endswith("; --nodes 1 would make it the wire (4.2 ms [assumed]).")


def test_a_change_that_leaves_deepep_unable_to_run_moves_nothing(calibration: Any) -> None:
    _, moves = bound_reasons(
        calibration, lambda update: _deepep_bound("wire", "the wire", 4.2, feasible=False)
    )
    assert moves.endswith("no single change of transport, comms, graph mode or nodes moves it.")


def test_without_a_deepep_arm_there_is_nothing_to_say() -> None:
    assert bound_reasons(SimpleNamespace(arms={}), _refused) == []


def test_the_take_over_load_is_never_in_exponent_notation() -> None:
    result = evaluate(Scenario(nodes=1, transport="nvlink"), explain=False)
    _, moves = bound_reasons(result, _refused)
    assert "would take over at" in moves and "e+" not in moves


@pytest.mark.parametrize(
    ("factor", "shown"),
    [(1.04, "1"), (1.5, "1.5"), (45.3, "45"), (99.6, "100"), (404.0, "400"), (4000.7, "4,000")],
)
def test_a_take_over_factor_keeps_two_digits_written_out(factor: float, shown: str) -> None:
    """Two significant digits, as before, but past 100 in plain digits: 404 reads 400, not 4e+02."""
    assert _times(factor) == shown


def test_the_why_names_the_bound_and_what_would_move_it() -> None:
    v = evaluate(Scenario()).verdict
    why = [r for r in v.reasons if r.startswith("What bounds each step")]
    move = [r for r in v.reasons if r.startswith("What would move DeepEP's bound")]
    assert len(why) == 1 and len(move) == 1
    assert "host launches" in why[0] and "2.2 %" in why[0]
    assert "--cuda-graphs" in move[0] and "would take over at" in move[0]
    graphs = evaluate(Scenario(model="deepseek-v3", nodes=2, engine="sglang", cuda_graphs=True)).verdict
    assert any(r.startswith("What would move DeepEP's bound (HBM reads)") for r in graphs.reasons)
