"""The planner's space and its vectorised evaluation (`whatif/plan/space.py`): the rows it
holds and their figures, which are the scalar model's."""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

from deepep_calc.catalog.hardware import load_instances
from deepep_calc.catalog.model_catalog import find_model
from deepep_calc.estimate.compute import compute
from deepep_calc.question.fields import DEFAULTS
from deepep_calc.question.scenario import Scenario, resolve
from deepep_calc.whatif.plan.space import (
    ARMS,
    COMMS,
    Family,
    Search,
    base_scenario,
    dtypes_for,
    family_grid,
    family_passes,
    network_transports,
)

from .small import FIGURES, rel


def test_vectorised_rows_equal_scalar_evaluations(small):
    """The search's own figures (not only the printed points) are evaluate()'s."""
    from deepep_calc.whatif.plan.search import config_of

    s = small.scan
    rng = random.Random(7)
    rows = rng.sample(range(s.search.size), 40)
    t = s.search.rows
    from deepep_calc.whatif.plan.space import ARMS

    for i in rows:
        config = config_of(small.request, s.search, s.rows, i)
        arm = compute(resolve(Scenario(**config))).arms[ARMS[int(s.rows["arm"][i])]]
        for name in FIGURES:
            want = float(getattr(arm, name).value)
            got = float(t.values[name][i])
            assert (math.isnan(want) and math.isnan(got)) or rel(want, got) < 1e-9, (config, name)
        assert bool(t.fits[i]) == bool(arm.fits_memory)


# Which rows exist -------------------------------------------------------------------------------


def test_the_family_grid_is_nodes_by_graph_mode_by_comms_flattened() -> None:
    n, g, k = family_grid(3, 2, (1, 8))
    assert n.tolist() == [2, 2, 2, 2, 3, 3, 3, 3]
    assert g.tolist() == [False, False, True, True] * 2
    assert k.tolist() == [1, 8] * 4


def test_fp8_is_searched_only_for_a_checkpoint_in_bf16_or_fp16_throughout() -> None:
    assert dtypes_for(find_model("qwen3-235b-a22b")) == [None, "fp8"]  # BF16 throughout
    assert dtypes_for(find_model("qwen3-30b-a3b-fp8")) == [None]  # FP8 already
    assert dtypes_for(find_model("gpt-oss-120b")) == [None]  # BF16 attention, MXFP4 experts
    assert dtypes_for(SimpleNamespace(weight_dtype="fp16", expert_dtype="fp16")) == [None, "fp8"]


def test_network_transports_leave_nvlink_and_what_the_instance_does_not_run() -> None:
    on_p5 = [t.name for t in network_transports("p5")]
    assert "nvlink" not in on_p5 and "efa-gda" not in on_p5  # efa-gda does not run on p5
    assert on_p5[0] == "efa-proxy"  # the first is the family's home transport
    assert "efa-gda" in [t.name for t in network_transports("p5en")]


def test_the_scenario_a_family_starts_from_carries_only_a_price_the_user_gave() -> None:
    inst = load_instances()["p5en"]
    listed = Family(0, inst, "vllm", "fp8", inst.price_per_hour, False, "on-demand")
    s = base_scenario("deepseek-v3", 1024, 256, listed, transport="efa-gda")
    assert (s.instance, s.engine, s.weight_dtype, s.transport) == ("p5en", "vllm", "fp8", "efa-gda")
    assert (s.nodes, s.concurrency, s.comms, s.price_per_hour) == (1, 1, DEFAULTS["comms"], None)
    typed = Family(0, inst, "vllm", None, 80.0, True, "given")
    assert base_scenario("deepseek-v3", 1024, 256, typed).price_per_hour == 80.0


def test_a_familys_passes_hold_each_arm_where_it_is_a_deployment() -> None:
    """p5en, vLLM, 1-2 nodes: a grid of 2 nodes x 2 graph modes x 4 EP_NUM_COMMS = 16 rows, 4 at
    the default EP_NUM_COMMS 8. allgather and TP: those 4; replicas: the 2 on two nodes; DeepEP
    over the home efa-proxy (it reads EP_NUM_COMMS): 2 x 4 = 8 on two nodes; each of the 5 other
    transports: 2; DeepEP on one node over NVLink: 2. 4 + 2 + 8 + 4 + 10 + 2 = 30 rows."""
    fam = Family(0, load_instances()["p5en"], "vllm", None, 50.0, False, "on-demand")
    passes = family_passes("qwen3-30b-a3b-fp8", 1024, 256, fam, 1, 2, first=7)
    first, tp, *others = passes
    assert [(b.arm, b.transport, b.rows) for b in first.blocks] == [
        ("allgather", "efa-proxy", 4),
        ("replica", "efa-proxy", 2),
        ("deepep", "efa-proxy", 8),
    ]
    assert [(b.arm, b.rows) for b in tp.blocks] == [("tp", 4)]
    assert tp.resolved.scenario.alternative == "tp"
    assert [p.blocks[0].transport for p in others] == [
        "efa-gda", "efa-native-cqpoll", "efa-nvshmem", "efa-uccl", "efa-pplx", "nvlink",
    ]  # fmt: skip
    assert all(p.reuse == 7 for p in others) and first.reuse is None and tp.reuse is None
    blocks = [b for p in passes for b in p.blocks]
    for b in blocks:
        if b.arm == "replica" or (b.arm == "deepep" and b.transport != "nvlink"):
            assert set(b.nodes.tolist()) == {2.0}, (b.arm, b.transport)
        if b.transport == "nvlink":
            assert set(b.nodes.tolist()) == {1.0}
        if not (b.arm == "deepep" and b.transport == "efa-proxy"):
            assert set(b.comms.tolist()) == {8.0}, (b.arm, b.transport)
    assert set(blocks[2].comms.tolist()) == set(COMMS)
    search = Search(passes)
    assert search.size == 30 and [b.start for b in search.blocks] == [0, 4, 6, 14, 18, 20, 22, 24, 26, 28]
    assert [search.block_of(i).arm for i in (0, 3, 4, 6, 13, 14, 29)] == [
        "allgather", "allgather", "replica", "deepep", "deepep", "tp", "deepep",
    ]  # fmt: skip
    arms = search.row_arrays()["arm"]
    assert [ARMS[a] for a in arms[[0, 4, 6, 14, 29]]] == ["allgather", "replica", "deepep", "tp", "deepep"]
