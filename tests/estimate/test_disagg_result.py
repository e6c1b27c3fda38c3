"""estimate/disagg_result.py: the records a disaggregated evaluation returns, and their JSON.

Read off one real deployment (DeepSeek-V3, 1P3D on vLLM, 64 clients, ISL 1,024 / OSL 256),
then altered by hand where a field decides: which candidate a side chose (one index, or one
per row), what sets the throughput, and which side waits on the other and for how much.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from deepep_calc import Scenario
from deepep_calc.base.quantity import Q
from deepep_calc.estimate.disagg import compute_disagg
from deepep_calc.estimate.disagg_result import DisaggResult, plain_number
from deepep_calc.question.scenario import resolve


@pytest.fixture(scope="module")
def d() -> DisaggResult:
    return compute_disagg(
        resolve(
            Scenario(
                model="deepseek-v3",
                prefill_nodes=1,
                decode_nodes=3,
                engine="vllm",
                concurrency=64,
                isl=1024,
                osl=256,
            )
        )
    )


def _busy(prefill: float, decode: float) -> dict[str, Q]:
    return {
        "prefill": Q.assumed(prefill, "1", "prefill busy"),
        "decode": Q.assumed(decode, "1", "decode busy"),
        "transfer": Q.assumed(0.1, "1", "link busy"),
    }


def _with(d: DisaggResult, limit: Any, busy: dict[str, Q]) -> DisaggResult:
    return replace(d, deployment=replace(d.deployment, limit=limit, busy=busy))


def test_a_side_names_the_candidate_it_chose(d: DisaggResult) -> None:
    """The prefill side may run DeepEP, allgather or TP (a replica on its one node is allgather);
    the decode side, on 3 nodes, the replicas too. The chosen arm is the candidate `index` names,
    row by row in a sweep."""
    assert d.prefill.arms == ("deepep", "allgather", "tp")
    assert d.decode.arms == ("deepep", "allgather", "tp", "replica")
    assert d.prefill.arm == d.prefill.arms[int(d.prefill.index)]
    rows = replace(d.decode, index=np.array([3, 0, 2]))
    assert rows.arm.tolist() == ["replica", "deepep", "tp"]
    assert (d.prefill.nodes, d.decode.nodes) == (1, 3) and (d.label, d.nodes) == ("1P3D", 4)


def test_a_sides_json_says_how_it_was_chosen_and_which_arms_could_run(d: DisaggResult) -> None:
    doc = replace(d.prefill, feasible_each=[True, False, True]).to_json()
    assert doc["chosen"] == "the model's best for this side"
    assert doc["feasible_arms"] == ["deepep", "tp"]
    assert list(doc["ratings_req_s"]) == ["deepep", "allgather", "tp"]
    assert doc["nodes"] == 1 and doc["arm"] == d.prefill.arm
    given = compute_disagg(
        resolve(Scenario(model="deepseek-v3", prefill_nodes=1, decode_nodes=1, prefill_arm="tp"))
    )
    assert given.prefill.to_json()["chosen"] == "given" and given.prefill.arms == ("tp",)


def test_the_bottleneck_is_the_limit_named() -> None:
    """`limit` indexes (clients, prefill, decode, transfer), one index or one per row."""
    d = compute_disagg(resolve(Scenario(model="deepseek-v3", prefill_nodes=1, decode_nodes=1)))
    for i, name in enumerate(("clients", "prefill", "decode", "transfer")):
        assert _with(d, i, d.deployment.busy).bottleneck == name
    assert _with(d, np.array([2, 0]), d.deployment.busy).bottleneck.tolist() == ["decode", "clients"]


def test_the_idle_side_is_the_decode_side_only_when_prefill_sets_the_pace(d: DisaggResult) -> None:
    """Prefill the bottleneck, busy 100 %: the decode side waits, 1 - 0.25 = 75 % of it unused.
    Anything else sets the pace (decode, the link, the load itself): the prefill side waits,
    1 - 0.4 = 60 % idle. In a sweep the first row's limit names the side."""
    side, idle = _with(d, 1, _busy(1.0, 0.25)).idle()
    assert side == "decode" and idle.scalar == pytest.approx(0.75)
    for limit in (0, 2, 3):
        side, idle = _with(d, limit, _busy(0.4, 1.0)).idle()
        assert side == "prefill" and idle.scalar == pytest.approx(0.6)
    side, _ = _with(d, np.array([1, 2]), _busy(1.0, 0.25)).idle()
    assert side == "decode"


def test_the_first_token_waits_for_queue_prefill_transfer_and_one_decode_step(d: DisaggResult) -> None:
    parts = d.ttft_parts_ms
    assert list(parts) == ["queue", "prefill", "transfer", "first_decode"]
    assert parts["transfer"] is d.exposed_ms
    first = parts["first_decode"]
    assert first.value == d.tpot_ms.value and not first.banded and d.tpot_ms.banded  # the plain step


def test_the_json_reports_the_load_as_plain_numbers_and_the_idle_share(d: DisaggResult) -> None:
    doc = d.to_json()
    assert (doc["concurrency"], doc["isl"], doc["osl"]) == (64, 1024, 256)
    assert (doc["prefill_nodes"], doc["decode_nodes"], doc["nodes"], doc["layout"]) == (1, 3, 4, "1P3D")
    # 64 clients keep every side busy a few per cent of the time: the load itself sets the pace,
    # and the prefill side is the one that waits, idle 1 - its busy share
    assert doc["bottleneck"] == "clients" and doc["idle_side"] == "prefill"
    busy = d.deployment.busy["prefill"].scalar
    assert busy < 0.1 and doc["idle_fraction"]["value"] == pytest.approx(1.0 - busy)
    assert set(doc["capacity_req_s"]) == {"prefill", "decode", "transfer"}


def test_plain_number() -> None:
    """Whole floats print as ints (64.0 -> 64), others as floats; arrays as lists."""
    assert plain_number(64.0) == 64 and type(plain_number(64.0)) is int
    assert plain_number(2.5) == 2.5
    assert plain_number(np.array([8.0, 64.0])) == [8.0, 64.0]
