"""The scenarios the break-even tests share, and the model read at them (ratio, per-layer kernel
time), one row at a time."""

from __future__ import annotations

import numpy as np

from deepep_calc.estimate.passes import model
from deepep_calc.fit.table import Table
from deepep_calc.question.scenario import Resolved, Scenario, resolve

GDA = Scenario(model="deepseek-v3", nodes=4, transport="efa-gda", engine="sglang", cuda_graphs=True)
IB = Scenario(
    model="deepseek-v3", instance="ib-h800", transport="ib-ibgda", nodes=4, engine="vllm", cuda_graphs=True
)
# vLLM eager over UCCL-EP: at light load both arms wait for the same host launches (a tie, just
# under 1); once the batch grows, vLLM's AGRS path, which costs more per decode token, passes the
# CPU path and DeepEP pulls ahead.
CROSS = Scenario(model="deepseek-v3", nodes=2, transport="efa-uccl", engine="vllm", isl=1024, osl=256)
KIMI = Scenario(model="kimi-k2", nodes=2, concurrency=256, isl=4096)


def _r(s: Scenario) -> Resolved:
    return resolve(s)


def _ratio(r: Resolved, table: Table | None = None, **arrays: object) -> float:
    return float(np.asarray(model(r, table, **arrays).ratio_deepep_vs_alternative.value).reshape(-1)[0])


def _per_layer_us(r: Resolved, table: Table | None = None) -> float:
    comm = model(r, table).arms["deepep"].breakdown_ms["moe_comm"]
    return float(np.asarray(comm.value).reshape(-1)[0]) * 1000.0 / r.model.moe_layers
