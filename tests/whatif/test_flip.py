"""The flip search: the first single change that flips the verdict, and what it quotes."""

from __future__ import annotations

from typing import Any

import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.base.errors import CalcError
from deepep_calc.base.vocabulary import SYMBOLS
from deepep_calc.decide.verdict import tagged
from deepep_calc.question.fields import LIMITS
from deepep_calc.whatif import flip

FLIP_CASES = [
    {},  # the default scenario: measured arms
    {"cuda_graphs": True, "concurrency": 4},  # --eager lands on the measured k1-c4 cell
    {"engine": "vllm", "cuda_graphs": True},  # --eager: the measured vLLM c32 cell; flips at --nodes 1
    {"comms": 8, "cuda_graphs": True},  # --eager lands on the measured k8-c32 cell
    {"concurrency": 256, "isl": 2048},
    {"alternative": "tp", "engine": "vllm"},
    {"model": "deepseek-v3", "cuda_graphs": True},
    {"model": "deepseek-v3", "nodes": 2, "engine": "sglang", "cuda_graphs": True},
    {"model": "kimi-k2", "nodes": 4, "engine": "vllm"},  # robust
    {"model": "gpt-oss-120b", "nodes": 2, "transport": "efa-gda", "max_qps": 1},
    {"concurrency": 1},
    # flips at --cuda-graphs
    {"model": "deepseek-v3", "nodes": 4, "concurrency": 512, "transport": "efa-gda"},
    {"model": "gpt-oss-120b", "nodes": 1, "concurrency": 512},  # flips at --concurrency 8192
]


def test_one_node_tries_no_transport_as_a_flip() -> None:
    """On one node every transport rides NVLink and no proxy lane is used: proposing another
    transport or EP_NUM_COMMS=8 there would be no change."""
    one = flip.flip_changes(evaluate(Scenario(model="deepseek-v3", nodes=1, comms=1)))
    two = flip.flip_changes(evaluate(Scenario(model="deepseek-v3", nodes=2, comms=1)))
    assert not any("transport" in update or "comms" in update for _, update in one)  # nor lanes
    assert ("--comms 8", {"comms": 8}) in two
    assert [label for label, update in two if "transport" in update] == [
        "--transport efa-gda",
        "--transport efa-uccl",
    ]


@pytest.mark.parametrize(
    "fields", FLIP_CASES, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()) or "default"
)
def test_a_flip_quotes_what_the_changed_scenario_prints(fields: dict[str, Any]) -> None:
    """The robustness line names the first change that flips the verdict, with the code and
    ratio `evaluate` prints for the changed scenario (a measured cell where one exists); every
    change tried before it keeps the verdict, and "robust" means every change does."""
    result = evaluate(Scenario(**fields))
    code = result.verdict.code
    line = flip.flip_advisory(result, code)
    for label, update in flip.flip_changes(result):
        try:
            changed = evaluate(Scenario(**{**fields, **update}))
        except CalcError:
            continue
        if label == line.split(" would flip")[0]:
            assert changed.verdict.code != code
            ratio = changed.ratio_deepep_vs_alternative
            assert f"to {SYMBOLS[changed.verdict.code]} {changed.verdict.code} " in line
            assert f"aggregate {tagged(ratio, 2)})" in line
            return
        assert changed.verdict.code == code, label
    assert line == "" and result.verdict.robustness.startswith("robust")


def test_flip_search_never_proposes_more_nodes_for_nvlink() -> None:
    v = evaluate(Scenario(transport="nvlink", nodes=1)).verdict
    assert all("--nodes 2" not in a for a in v.advisories)


def test_the_candidates_are_ordered_and_stay_within_the_limits() -> None:
    """Transports first, then EP_NUM_COMMS (only below 8), the graph mode, concurrency x4, x16 and
    / 4 (from 4 up), nodes x2 and / 2. 1,250,000 requests x16 is past the 10,000,000 limit and
    513 nodes x2 past 1,024: those candidates are left out."""
    labels = [label for label, _ in flip.flip_changes(evaluate(Scenario(comms=1, concurrency=64)))]
    assert labels == [
        "--transport efa-gda", "--transport efa-uccl", "--comms 8", "--cuda-graphs",
        "--concurrency 256", "--concurrency 1024", "--concurrency 16", "--nodes 4", "--nodes 1",
    ]  # fmt: skip
    crowded = flip.flip_changes(evaluate(Scenario(concurrency=LIMITS["concurrency"] // 8), explain=False))
    assert ("--concurrency 5000000", {"concurrency": 5_000_000}) in crowded
    assert not any(u.get("concurrency", 0) > LIMITS["concurrency"] for _, u in crowded)
    wide = flip.flip_changes(evaluate(Scenario(model="kimi-k2", nodes=513), explain=False))
    assert [u["nodes"] for _, u in wide if "nodes" in u] == [256]
    few = flip.flip_changes(evaluate(Scenario(concurrency=2), explain=False))
    assert [u["concurrency"] for _, u in few if "concurrency" in u] == [8, 32]  # no / 4 below 4
