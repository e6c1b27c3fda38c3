"""(c) Where capacity forces expert parallelism (`whatif/breakeven/capacity.py`): input length,
concurrency and node count, each bracketed on the model, and memory (not a queue) decides."""

from __future__ import annotations

import numpy as np
import pytest

from deepep_calc.decide.verdict import classify_codes
from deepep_calc.estimate.passes import model
from deepep_calc.question.scenario import Scenario
from deepep_calc.whatif.breakeven.capacity import capacity_field, capacity_nodes, ep_nodes

from .scenarios import KIMI, _r


def test_capacity_isl_search_stops_at_the_context_window() -> None:
    """The default model holds any input its window allows on one node: never, within limits."""
    answer = capacity_field(_r(Scenario()), "isl")
    assert answer.value is None
    # 40,960 - OSL 128
    assert answer.note.startswith("Never: one node holds any input length up to 40,832 tokens")


def test_capacity_isl_is_where_one_node_runs_out() -> None:
    # inside the model's context window (ISL + OSL beyond it is refused, issue 10 item 6)
    r = _r(Scenario(concurrency=2048, engine="vllm"))
    answer = capacity_field(r, "isl")
    assert answer.value is not None
    isl = int(answer.value.scalar)
    res = model(r, isl=[isl, isl - 1])
    codes, _ = classify_codes(res)
    assert list(codes) == ["capacity", "dense"]
    mem = res.arms["replica"].memory
    total, usable = np.asarray(mem.total_gb.value), float(np.asarray(mem.usable_gb.value).reshape(-1)[0])
    assert total[0] > usable >= total[1]
    assert total[0] == pytest.approx(usable, rel=0.01)


def test_capacity_when_weights_alone_do_not_fit() -> None:
    r = _r(KIMI)
    assert capacity_field(r, "isl").value.scalar == 1
    assert capacity_field(r, "concurrency").value.scalar == 1
    forced = capacity_nodes(r)
    assert forced.value is None and "every node count" in forced.note
    ep = ep_nodes(r)
    assert ep.value is not None and ep.value.scalar == 2
    fits = model(r, nodes=[1, 2]).arms["deepep"].fits_memory
    assert list(np.asarray(fits)) == [False, True]


def test_capacity_nodes_brackets() -> None:
    r = _r(Scenario(model="deepseek-v3", engine="vllm", concurrency=4096, isl=8192))
    answer = capacity_nodes(r)
    n = int(answer.value.scalar)
    assert n > 1
    codes, _ = classify_codes(model(r, nodes=[n - 1, n]))
    assert codes[0] == "capacity" and codes[1] != "capacity"


def test_capacity_is_memory_not_a_queue() -> None:
    """One node's memory holds any concurrency once the engine caps its batch: queueing past the
    prompt ceiling makes nothing fit (the verdict says so), but it never forces sharding."""
    answer = capacity_field(_r(Scenario()), "concurrency")
    assert answer.value is None and answer.note.startswith("Never: one node holds any concurrency")
    crowded = capacity_nodes(_r(Scenario(concurrency=1_000_000)))
    assert crowded.note.startswith("Never forced: one node holds this load")
