"""What the planner's tests share: a small aggregated space a scalar loop can cover, and that
loop (`brute_force`: one scalar `compute` per configuration, no planner code) to hold the plan
to. The plan of it and the loop's rows are `conftest.py`'s fixtures `small` and `brute`."""

from __future__ import annotations

from typing import Any

from deepep_calc.catalog.transports import load_transports
from deepep_calc.estimate.compute import compute
from deepep_calc.question.scenario import Scenario, resolve

FIGURES = ("per_user_tok_s", "aggregate_tok_s", "ttft_ms", "usd_per_mtok", "memory_gb_per_gpu")


# A small space a scalar loop can cover: a BF16 model (so FP8 is searched too), two instances,
# two engines, up to three nodes; aggregated layouts (the xPyD splits have their own brute force,
# tests/whatif/plan/test_disagg.py).
SMALL = dict(
    layouts="aggregated",
    model="qwen3-235b-a22b",
    isl=1024,
    osl=256,
    concurrency=128,
    slo_tok_s=12.0,
    ttft_ms=3000.0,
    instances="p5,p5en",
    engines="vllm,sglang",
    max_nodes=3,
    price_kinds="all",  # p5 has a Capacity Block price, p5en an on-demand one: rank both on purpose
)


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def brute_force(**kw: Any) -> list[dict[str, Any]]:
    """Every configuration of the small space, one scalar `compute` each (no planner code)."""
    out = []
    for inst in kw["instances"].split(","):
        transports = [t for t in load_transports().values() if inst in t.instances and t.fabric != "nvlink"]
        for engine in kw["engines"].split(","):
            for dtype in (None, "fp8"):
                for nodes in range(1, kw["max_nodes"] + 1):
                    for graphs in (False, True):
                        cases = [
                            ("allgather", "allgather", transports[0].name, 8),
                            ("tp", "tp", transports[0].name, 8),
                        ]
                        if nodes > 1:
                            cases.append(("replica", "allgather", transports[0].name, 8))
                            for t in transports:
                                for k in (1, 2, 4, 8) if t.comms_sensitive else (8,):
                                    cases.append(("deepep", "allgather", t.name, k))
                        else:
                            cases.append(("deepep", "allgather", "nvlink", 8))
                        for arm, alternative, transport, comms in cases:
                            config = dict(
                                model=kw["model"],
                                instance=inst,
                                nodes=nodes,
                                engine=engine,
                                cuda_graphs=graphs,
                                transport=transport,
                                alternative=alternative,
                                comms=comms,
                                concurrency=kw["concurrency"],
                                isl=kw["isl"],
                                osl=kw["osl"],
                                weight_dtype=dtype,
                                slo_tok_s=kw.get("slo_tok_s"),
                                ttft_ms=kw.get("ttft_ms"),
                            )
                            a = compute(resolve(Scenario(**config))).arms[arm]
                            meets = (
                                bool(a.feasible)
                                and (a.meets_slo is None or bool(a.meets_slo))
                                and (a.meets_ttft is None or bool(a.meets_ttft))
                            )
                            out.append(
                                dict(
                                    config=config,
                                    arm=arm,
                                    cost=float(a.usd_per_mtok.value),
                                    pu=float(a.per_user_tok_s.value),
                                    feasible=bool(a.feasible),
                                    meets=meets,
                                )
                            )
    return out
