"""Which combinations of engine, exchange, route, model family and graph mode the references
cover (`fit/evidence.py`), so a figure far from all of them takes the wider band.

The default scenario: Qwen3-30B-A3B (family `qwen3_moe`) on TRT-LLM eager over `efa-proxy`,
2 nodes.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from deepep_calc import Scenario
from deepep_calc.fit.evidence import covered, covered_keys, evidence_key, obs_key
from deepep_calc.fit.observations import observations
from deepep_calc.question.scenario import resolve

DEFAULT = resolve(Scenario())


def test_the_key_names_the_route_a_deepep_exchange_rides() -> None:
    """Across nodes DeepEP rides its transport; inside one node (one node, or a replica's
    DeepEP layout) NVLink; the other arms NCCL's collectives wherever they run."""
    assert evidence_key(DEFAULT, "deepep") == "trtllm/deepep/efa-proxy/qwen3_moe/eager"
    assert evidence_key(DEFAULT, "deepep", nodes=1) == "trtllm/deepep/nvlink/qwen3_moe/eager"
    assert evidence_key(DEFAULT, "replica:deepep") == "trtllm/deepep/nvlink/qwen3_moe/eager"
    assert evidence_key(DEFAULT, "allgather") == "trtllm/allgather/nccl/qwen3_moe/eager"
    assert evidence_key(DEFAULT, "replica:tp", nodes=1) == "trtllm/tp/nccl/qwen3_moe/eager"


def test_the_graph_mode_is_the_scenarios_unless_given() -> None:
    graphs = resolve(Scenario(cuda_graphs=True))
    assert evidence_key(graphs, "deepep").endswith("/graphs")
    assert evidence_key(DEFAULT, "deepep", graphs=True) == "trtllm/deepep/efa-proxy/qwen3_moe/graphs"


def test_only_observations_used_in_the_fit_cover_a_combination() -> None:
    """The built-in cell `trt-ab-k8-c4` covers TRT-LLM eager DeepEP over efa-proxy; the same
    observation marked `check` (only predicted) covers nothing."""
    o = next(o for o in observations() if o.id == "trt-ab-k8-c4:deepep")
    assert obs_key(o) == "trtllm/deepep/efa-proxy/qwen3_moe/eager"
    assert covered_keys([o]) == frozenset({"trtllm/deepep/efa-proxy/qwen3_moe/eager"})
    assert covered_keys([replace(o, use="check")]) == frozenset()


def test_a_scenario_is_covered_when_its_key_is() -> None:
    keys = frozenset({"trtllm/deepep/efa-proxy/qwen3_moe/eager"})
    assert covered(DEFAULT, "deepep", keys) is True
    assert covered(DEFAULT, "allgather", keys) is False
    assert covered(resolve(Scenario(cuda_graphs=True)), "deepep", keys) is False


def test_rows_of_a_sweep_are_covered_one_by_one() -> None:
    """Nodes [1, 2, 4] × graphs [eager, graphs] against the eager efa-proxy key and the one-node
    graph-mode NVLink key: (2, eager) and (4, eager) are covered (the key reads the node count
    only as one node or several), and (1, graphs)."""
    keys = frozenset({"trtllm/deepep/efa-proxy/qwen3_moe/eager", "trtllm/deepep/nvlink/qwen3_moe/graphs"})
    r = DEFAULT.vary(
        nodes=np.array([1, 2, 4]).reshape(3, 1), cuda_graphs=np.array([False, True]).reshape(1, 2)
    )
    got = np.asarray(covered(r, "deepep", keys))
    assert got.tolist() == [[False, True], [True, False], [True, False]]
