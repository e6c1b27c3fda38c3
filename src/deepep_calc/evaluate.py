"""`evaluate(scenario) -> Result`: the one model behind every face of the tool.

Each arm gets memory, decode step, TTFT, aggregate throughput and cost from the physics, with
the constants of the fitted table (`fit/build.py`: fitted once, never here). Where the
scenario is a measured cell (facts/measured.md), the measured numbers replace the model's for
that arm, tagged measured: the calibration point is reproduced exactly, not approximately.
Every modelled figure carries the band its kind of figure missed references by out of sample.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .catalog.measured import Cell, load_cells
from .catalog.models import ModelSpec
from .fit.build import built_in_table
from .fit.table import Table
from .physics.layout import layout
from .physics.memory import Memory, memory
from .physics.serving import per_user, serve, tax_ms, usd_per_mtok
from .physics.step import decode_step, prefill_step, shared
from .quantity import Q, Tag
from .scenario import Resolved, Scenario, resolve

ROLE_PRIORITY = {"calibration": 0, "anchor": 1, "cross-check": 2}


@dataclass
class ArmResult:
    name: str
    feasible: bool
    fits_memory: bool
    why_not: str
    per_user_tok_s: Q
    step_ms: Q
    aggregate_tok_s: Q
    ttft_ms: Q
    usd_per_mtok: Q
    memory_gb_per_gpu: Q
    breakdown_ms: dict[str, Q]
    memory: Memory
    running: Q
    measured_cell: str | None = None
    model_aggregate_tok_s: Q | None = None  # the model's figure before a measured cell replaces it
    meets_slo: bool | None = None
    meets_ttft: bool | None = None

    def to_json(self) -> dict[str, Any]:
        m = self.memory
        return {
            "feasible": self.feasible,
            "fits_memory": self.fits_memory,
            "why_not": self.why_not,
            "per_user_tok_s": self.per_user_tok_s.to_json(),
            "step_ms": self.step_ms.to_json(),
            "aggregate_tok_s": self.aggregate_tok_s.to_json(),
            "ttft_ms": self.ttft_ms.to_json(),
            "usd_per_mtok": self.usd_per_mtok.to_json(),
            "memory_gb_per_gpu": self.memory_gb_per_gpu.to_json(),
            "breakdown_ms": {k: v.to_json() for k, v in self.breakdown_ms.items()},
            "memory_detail_gb": {
                "weights": m.weights_gb.to_json(),
                "kv_cache": m.kv_gb.to_json(),
                "buffers": m.buffers_gb.to_json(),
                "reserve": m.reserve_gb.to_json(),
                "usable": m.usable_gb.to_json(),
                "headroom": m.headroom_gb.to_json(),
            },
            "max_concurrency": m.max_concurrency.to_json(),
            "kv_token_capacity_per_gpu": m.kv_tokens.to_json(),
            "running_sequences": self.running.to_json(),
            "measured_cell": self.measured_cell,
            "meets_slo": self.meets_slo,
            "meets_ttft": self.meets_ttft,
        }


@dataclass
class Result:
    scenario: Scenario
    resolved: Resolved
    arms: dict[str, ArmResult]
    alternative: str
    ratio_deepep_vs_alternative: Q
    ratio_per_user: Q
    tax_ms_per_token: Q
    verdict: Any = None  # verdict.Verdict, attached by evaluate()
    notes: list[str] = field(default_factory=list)
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)  # see physics.step.shared

    @property
    def model(self) -> ModelSpec:
        return self.resolved.model

    def to_json(self) -> dict[str, Any]:
        s = self.scenario.model_dump()
        s["gpus_per_node"] = self.resolved.gpus_per_node
        s["model_resolved"] = self.model.name
        s["weight_dtype"] = self.model.weight_dtype
        return {
            "scenario": s,
            "verdict": self.verdict.to_json() if self.verdict is not None else None,
            "arms": {k: v.to_json() for k, v in self.arms.items()},
            "ratio_deepep_vs_alternative": self.ratio_deepep_vs_alternative.to_json(),
            "ratio_per_user": self.ratio_per_user.to_json(),
            "tax_ms_per_token": self.tax_ms_per_token.to_json(),
            "notes": list(self.notes),
        }


# Measured cells ---------------------------------------------------------------------------


def _is_cell_scenario(r: Resolved, cell: Cell) -> bool:
    s = r.scenario
    assert isinstance(s, Scenario)
    return (  # cheapest, most selective comparisons first: this runs for every cell and arm
        s.concurrency == cell.concurrency
        and s.isl == cell.isl
        and s.osl == cell.osl
        and s.nodes == cell.nodes
        and s.comms == cell.comms
        and r.engine.name == cell.engine
        and r.instance.name == cell.instance
        and s.model.strip().lower() == cell.model
        and r.gpus_per_node == r.instance.gpus_per_node
        and s.cuda_graphs == cell.cuda_graphs
        and all(getattr(s, k) is None for k in ("experts", "topk", "hidden", "moe_layers", "kv_dtype"))
        and s.max_qps == cell.max_qps
        and _native_dtype(s.weight_dtype, cell.model)
        and _same_batching(r, cell)
    )


def _same_batching(r: Resolved, cell: Cell) -> bool:
    """The run's batch limit and the scenario's behave alike: equal, or neither binds here."""
    if cell.max_batch is None or cell.max_batch == r.max_batch:
        return True
    per_rank = -(-cell.concurrency // (cell.nodes * r.gpus_per_node))
    return per_rank <= min(cell.max_batch, r.max_batch)


def _native_dtype(weight_dtype: str | None, model: str) -> bool:
    """Whether a --weight-dtype override still describes the checkpoint the cell ran.

    `r.model` already carries the override, so compare with the unmodified model; an override
    also moves the routed experts to that dtype, so a model with its own expert dtype
    (MXFP4 gpt-oss) is never its native deployment under one.
    """
    if weight_dtype is None:
        return True
    from .catalog.model_catalog import resolve_model

    native = resolve_model(model)
    return native.expert_dtype is None and weight_dtype.strip().lower() == native.weight_dtype


def measured_cell_for(r: Resolved, arm: str) -> Cell | None:
    """The measured cell for this arm of this scenario, best-evidenced first."""
    if arm == "deepep":
        want = r.transport.name
    elif arm == "allgather":
        want = None
    else:
        return None
    best: Cell | None = None
    user_cells = list(r.profile.cells()) if r.profile is not None else []
    for cell in [*user_cells, *load_cells().values()]:
        if cell.role not in ROLE_PRIORITY or cell.comms_assumed or not _is_cell_scenario(r, cell):
            continue
        if want is not None and cell.transport != want:
            continue
        metrics = cell.arm(arm)
        if metrics is None:
            continue
        if best is None or (ROLE_PRIORITY[cell.role], cell.shape_assumed) < (
            ROLE_PRIORITY[best.role],
            best.shape_assumed,
        ):
            best = cell
    return best


# Arms ---------------------------------------------------------------------------------------


def _split_ok(experts: int, ranks: Any) -> Any:
    ranks = np.asarray(ranks, dtype=float)
    return (experts >= ranks) & (np.mod(experts, ranks) == 0)


def _arm(r: Resolved, arm: str, table: Table, memo: dict[Any, Any] | None = None) -> ArmResult:
    """One arm of one scenario (or of many: numeric fields may be arrays)."""
    s = r.scenario
    c = table.step_constants(r)
    lay = shared(memo, ("layout", arm), lambda: layout(r, arm))
    mem = shared(memo, ("memory", arm), lambda: memory(r, lay, s.isl, s.osl))
    step = decode_step(r, arm, c, memo)
    prefill = prefill_step(r, arm, c, memo)
    ttft_steps = _ttft_steps(r, c)
    served = serve(r, lay, step.ms, prefill.ms, ttft_steps)
    step_ms, aggregate, ttft = step.ms, served.aggregate_tok_s, served.ttft_ms
    pu = per_user(step_ms)
    model_aggregate = aggregate
    cell = None if r.varied else measured_cell_for(r, arm)
    if cell is not None:
        step_ms, pu, aggregate, ttft = _apply_cell(cell, arm, step_ms, pu, aggregate, ttft)
    cost = usd_per_mtok(r, aggregate)
    split = _split_ok(r.model.experts, lay.expert_shard) if arm != "tp" else np.asarray(True)
    fits = np.asarray(mem.fits)
    feasible = split & fits
    why = ""
    if not r.varied:
        if not split:
            why = f"{r.model.experts} experts cannot be split evenly over EP{int(lay.expert_shard)}"
        elif not fits:
            why = "does not fit in HBM at this concurrency and context"
    result = ArmResult(
        arm,
        _plain(feasible),
        _plain(fits),
        why,
        banded(pu, table, "step", inverse=True),
        banded(step_ms, table, "step"),
        banded(aggregate, table, "aggregate"),
        banded(ttft, table, "ttft"),
        banded(cost, table, "aggregate", inverse=True),
        mem.total_gb,
        step.parts_ms,
        mem,
        served.running,
        cell.id if cell else None,
        model_aggregate,
    )
    if s.slo_tok_s is not None:
        result.meets_slo = _plain(result.per_user_tok_s.value >= s.slo_tok_s)
    if s.ttft_ms is not None:
        result.meets_ttft = _plain(result.ttft_ms.value <= s.ttft_ms)
    return result


def _ttft_steps(r: Resolved, c: Any) -> Q:
    graphs = np.asarray(r.scenario.cuda_graphs, dtype=bool)
    e, g = c.eager.ttft_steps, c.graphs.ttft_steps
    if not np.any(graphs):
        return e
    if np.all(graphs):
        return g
    return Q(np.where(graphs, g.value, e.value), "steps", min(e.tag, g.tag), e.source)


def banded(q: Q, table: Table, kind: str, inverse: bool = False) -> Q:
    """The figure with the band of its kind (modelled figures only; measured ones have none).

    A band (low, high) is the 10th-90th percentile of model / reference over the
    cross-validated residuals of that kind; for a figure that is the inverse of the banded kind
    (per-user rate from the step, cost from the aggregate) the factors swap and invert.
    """
    band = table.band(kind)
    if band is None or q.tag == Tag.MEASURED:
        return q
    lo, hi = band  # model / reference: the truth lies in value / hi .. value / lo
    if inverse:
        lo, hi = 1.0 / hi, 1.0 / lo
    value = np.asarray(q.value, dtype=float)
    low, high = value / hi, value / lo
    if np.ndim(value) == 0:
        low, high = float(low), float(high)
    return q.with_band(low, high)


def _plain(flag: Any) -> Any:
    """A 0-d boolean array becomes a bool; arrays (sweeps) stay arrays."""
    arr = np.asarray(flag)
    return bool(arr) if arr.ndim == 0 else arr


def _apply_cell(cell: Cell, arm: str, step: Q, per_user: Q, aggregate: Q, ttft: Q) -> tuple[Q, Q, Q, Q]:
    pu = cell.q(arm, "per_user_tok_s", "tok/s")
    itl = cell.q(arm, "itl_ms", "ms")
    if itl is not None:
        step = itl
        per_user = pu if pu is not None else (1000.0 / itl).as_("tok/s")
    elif pu is not None:
        per_user = pu
        step = (1000.0 / pu).as_("ms")
    aggregate = cell.q(arm, "aggregate_tok_s", "tok/s") or aggregate
    ttft = cell.q(arm, "ttft_p50_ms", "ms") or ttft
    return step, per_user, aggregate, ttft


def arms_for(r: Resolved) -> list[str]:
    return ["deepep", r.scenario.alternative, "replica"]


def table_for(r: Resolved) -> Table:
    """The built-in fitted table, with a calibration profile's constants where one is given."""
    table = built_in_table()
    if r.profile is not None:
        table = r.profile.apply(table, r)
    return table


def compute(r: Resolved, reuse: Result | None = None, table: Table | None = None) -> Result:
    """All arms and the comparison, without the verdict (used by the flip search too).

    `reuse`: a result for the same scenario but another DeepEP transport; its non-DeepEP arms
    do not depend on the transport and are taken as they are. `table`: constants other than
    the built-in fit (the cross-validation evaluates each fold's own).
    """
    table = table if table is not None else table_for(r)
    memo = reuse.memo if reuse is not None else {}
    arms = {
        name: reuse.arms[name] if reuse is not None and name != "deepep" else _arm(r, name, table, memo)
        for name in arms_for(r)
    }
    dee, alt = arms["deepep"], arms[r.scenario.alternative]
    ratio = (dee.aggregate_tok_s / alt.aggregate_tok_s).as_("x", "aggregate tok/s DeepEP / alternative")
    ratio_pu = (dee.per_user_tok_s / alt.per_user_tok_s).as_("x", "per-user tok/s DeepEP / alternative")
    tax = tax_ms(dee.step_ms, alt.step_ms)
    if not (dee.measured_cell and alt.measured_cell):  # a ratio of two observations is not modelled
        ratio = banded(ratio, table, "ratio")
        ratio_pu = banded(ratio_pu, table, "ratio")
    return Result(r.scenario, r, arms, r.scenario.alternative, ratio, ratio_pu, tax, memo=memo)


def evaluate(scenario: Scenario | None = None, /, **fields: Any) -> Result:
    """Evaluate a scenario (or keyword fields on top of the calibration defaults)."""
    from .verdict import decide

    if scenario is None:
        scenario = Scenario(**fields)
    elif fields:
        scenario = scenario.model_copy(update=fields)
    r = resolve(scenario)
    result = compute(r)
    result.verdict = decide(result)
    return result
