"""Round-numbered catalog rows for hand-worked physics tests.

Every number a test expects is worked out in its docstring from the values below, so the rows
are built here by hand (`copy()` of a catalog row with every field the physics reads
replaced), never read from the catalog data, which can move without the formulas moving.

The toy model `TOY` (GQA, BF16, all layers MoE), counted once here for every test:

    attention / layer = 1024·8·128 + 2·1024·2·128 + 8·128·1024 = 2,621,440
    attention         = 4 × 2,621,440                          = 10,485,760
    one expert        = 3 × 1024 × 512                         = 1,572,864
    routed            = 4 layers × 16 × 1,572,864              = 100,663,296
    router            = 4 × 1024 × 16                          = 65,536
    embed = LM head   = 1000 × 1024                            = 1,024,000
    routed active     = 4 × 2 × 1,572,864                      = 12,582,912
    active            = 10,485,760 + 65,536 + 1,024,000 + 12,582,912 = 24,158,208
    total             = 10,485,760 + 100,663,296 + 65,536 + 2 × 1,024,000 = 113,262,592
    KV / token / layer = 2 × 2 kv heads × 128 × 2 B             = 1,024 B (4,096 B over 4 layers)

`TOY_INSTANCE`: 8 GPUs, 100 GB HBM at 4 TB/s, NVLink 800 GB/s bidirectional (400 per direction),
16 × 200 Gb/s EFA = 3,200 Gb/s = 400 GB/s per node = 50 GB/s per GPU, 1,000 / 2,000 TFLOP/s
BF16 / FP8, $100 per node-hour.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from deepep_calc.base.quantity import Q
from deepep_calc.catalog.constants import CATALOG
from deepep_calc.catalog.engines import get_engine
from deepep_calc.catalog.hardware import get_instance
from deepep_calc.catalog.models import Attention, ModelSpec
from deepep_calc.catalog.transports import get_transport
from deepep_calc.physics.collectives import CollectiveConstants, Link
from deepep_calc.physics.deepep import KernelConstants
from deepep_calc.physics.layout import Layout
from deepep_calc.physics.step import EngineConstants, StepConstants
from deepep_calc.question.scenario import Resolved, Scenario

TOY = ModelSpec(
    name="toy",
    family="toy",
    source="hand-made test model",
    hidden=1024,
    layers=4,
    moe_layers=4,
    experts=16,
    topk=2,
    moe_intermediate=512,
    vocab=1000,
    attention=Attention(kind="gqa", heads=8, kv_heads=2, head_dim=128),
)

TOY_INSTANCE = get_instance("p5en").copy(
    **{
        "name": "toy-node",
        "fabric": "efa",
        "gpus_per_node": 8,
        "hbm_gb": 100.0,
        "hbm_tb_s": 4.0,
        "nvlink_gb_s_bidir": 800.0,
        "nic_count": 16,
        "nic_gbit_each": 200.0,
        "bf16_tflops": 1000.0,
        "fp8_tflops": 2000.0,
        "fp4_tflops": 4000.0,
        "price_per_hour": 100.0,
    }
)

# Host-proxied NCCL-GIN-like transport: 8 GB/s at one comm, x comms^0.5, reference at 4 QPs.
PROXY = get_transport("efa-proxy").copy(
    **{
        "fabric": "efa",
        "initiation": "host-proxy",
        "bw_k1_gb_s": 8.0,
        "bw_comms_exponent": 0.5,
        "wire_efficiency": None,
        "prefill_dispatch_gb_s": None,
        "prefill_combine_gb_s": None,
        "reference": get_transport("efa-proxy").reference.copy(**{"qps": 4}),
    }
)
# GPU-initiated transport at 0.5 of line rate with 2 fixed issue lanes.
GPU = get_transport("efa-gda").copy(
    **{
        "fabric": "efa",
        "initiation": "gpu",
        "issue_lanes": 2,
        "wire_efficiency": 0.5,
        "bw_k1_gb_s": None,
        "bw_comms_exponent": None,
        "prefill_dispatch_gb_s": None,
        "prefill_combine_gb_s": None,
    }
)


def q(value: Any, unit: str = "us") -> Q:
    """A derived constant with a round value (fitted constants are derived)."""
    return Q.derived(value, unit, f"hand {value}")


def kernel_constants(**changes: Any) -> KernelConstants:
    """Leaving the node D / C 20 / 10 us, beta D / C 0.5 / 0.25 us per message at 4 reference
    lanes, a signal costs 0.5 puts, instance factor 1, NVLink alpha 30 us (D+C: a local part of
    15 us per direction) at efficiency 0.5."""
    base = {
        "leaving_dispatch_us": q(20.0),
        "leaving_combine_us": q(10.0),
        "beta_dispatch_us": q(0.5),
        "beta_combine_us": q(0.25),
        "reference_lanes": 4.0,
        "instance_factor": q(1.0, ""),
        "nvlink_alpha_us": q(30.0),
        "nvlink_efficiency": q(0.5, ""),
        "signal_ratio": q(0.5, ""),
    }
    return KernelConstants(**{**base, **changes})


def collective_constants(element_bytes: float = 2.0) -> CollectiveConstants:
    """NCCL across 2 nodes: 50 us smallest-message latency for every kind (a 2 us NVLink step,
    so 50 - 7 x 2 = 36 us per scale-out step), bus bandwidth 100 GB/s across nodes and
    200 GB/s inside one; BF16 activations (2 B per element) unless `element_bytes` says."""
    link = Link(q(50.0), q(36.0), q(100.0, "GB/s"), q(200.0, "GB/s"))
    kinds = ("allgather", "reducescatter", "allreduce")
    return CollectiveConstants({k: link for k in kinds}, q(2.0), element_bytes)


def engine(
    launch: float, step: float, fixed: float = 0.0, lane: float = 0.0, ttft: float = 2.0
) -> EngineConstants:
    return EngineConstants(q(launch), q(step), q(fixed), q(lane), q(ttft, "steps"))


def step_constants(**changes: Any) -> StepConstants:
    """Eager: 10 us per launch, 1,000 us per step, proxy 100 us fixed + 400 us / lanes per MoE
    layer; graphs: 0 per launch, 500 us per step; floor 2 us per kernel; expert reads at 0.25."""
    base = {
        "eager": engine(10.0, 1000.0, 100.0, 400.0),
        "graphs": engine(0.0, 500.0, 0.0, 0.0),
        "kernel_floor_us": q(2.0),
        "expert_efficiency": q(0.25, ""),
        "kernel": kernel_constants(),
        "collectives": collective_constants(),
        "exchange_terms": {},
    }
    return StepConstants(**{**base, **changes})


def resolved(
    model: ModelSpec = TOY,
    transport: Any = PROXY,
    *,
    max_batch: int = 256,
    attention_tp: int = 1,
    disaggregated: bool = False,
    assumptions: Mapping[str, float] | None = None,
    **fields: Any,
) -> Resolved:
    """A resolved scenario over the toy rows (the Scenario's own model name is not read);
    `assumptions`: catalog constants pinned to round values for this scenario."""
    s = Scenario(**{"nodes": 2, "concurrency": 32, "isl": 1000, "osl": 200, **fields})
    return Resolved(
        scenario=s,
        model=model,
        instance=TOY_INSTANCE,
        engine=get_engine(s.engine),
        transport=transport,
        gpus_per_node=TOY_INSTANCE.gpus_per_node,
        max_batch=max_batch,
        max_batch_source="(test)",
        attention_tp=attention_tp,
        disaggregated=disaggregated,
        assumptions=CATALOG.with_values(assumptions or {}),
    )


def ep_layout(**changes: Any) -> Layout:
    """A DeepEP / allgather placement: 16 GPUs (2 nodes), experts over 16, 2 sequences on the
    busiest rank, 32 tokens in the group, no attention TP."""
    base = {
        "arm": "deepep",
        "ranks": 16.0,
        "nodes": 2.0,
        "gpn": 8,
        "groups": 1.0,
        "expert_shard": 16.0,
        "replicated_shard": 1.0,
        "kv_shard": np.asarray(1.0),
        "seqs_per_rank": 2.0,
        "group_tokens": 32.0,
        "data_parallel": True,
        "dp_ranks": 16.0,
        "exchange_split": 1.0,
    }
    return Layout(**{**base, **changes})


def exact(expected: Any) -> Any:
    """pytest.approx to 1e-13: float rounding passes, a unit constant off by one part in 10¹²
    (1e12 written as 999999999999) fails."""
    return pytest.approx(expected, rel=1e-13, abs=1e-13)


def val(x: Q) -> float:
    """The scalar value of a quantity (arrays of one element included)."""
    return float(np.asarray(x.value).reshape(-1)[0])
