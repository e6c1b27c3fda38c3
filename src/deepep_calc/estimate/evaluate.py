"""`compute(resolved) -> Result`: every arm of a scenario, the one model behind every face.

The public `evaluate()` (`decide/answer.py`) resolves the question, calls `compute` and
attaches the verdict; the flip search, sweeps and the planner call `compute` directly.

Each arm gets memory, decode step, TTFT, aggregate throughput and cost from the physics, with
the constants of the fitted table (`fit/build.py`: fitted once, never here). Where the
scenario is a measured cell (`catalog/data/measured.toml`), the measured numbers replace the model's for
that arm, tagged measured: the calibration point is reproduced exactly, not approximately.
Every modelled figure carries the band its kind of figure missed references by out of sample.

Why one module: an arm's figures, the measured-cell substitution and the comparison are one
pass over the same resolved scenario and memo; the formulas themselves live in physics/.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..base.arrays import every_some, first_float, floats, is_array, np
from ..base.errors import InputError
from ..base.quantity import Q
from ..catalog.measured import Cell, cells_by_shape, load_cells
from ..catalog.model_catalog import load_models, preset_twin, resolve_model
from ..catalog.models import ModelSpec
from ..fit.build import built_in_table
from ..fit.evidence import covered
from ..fit.profile import profile_of
from ..fit.table import Table
from ..physics.layout import REPLICA_LAYOUTS, layout
from ..physics.memory import Memory, memory
from ..physics.serving import per_user, serve, tax_ms, usd_per_mtok
from ..physics.step import decode_step, prefill_step, shared
from ..question.fields import PROMPT_TIMEOUT_MS
from ..question.scenario import Resolved, Scenario
from .bands import banded
from .bounds import ArmBounds

ROLE_PRIORITY = {"calibration": 0, "anchor": 1, "cross-check": 2}


@dataclass(eq=False)
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
    breakdown_ms: Mapping[str, Q]  # the decode step's parts (physics.step.PartsMs)
    memory: Memory
    running: Q
    measured_cell: str | None = None
    model_aggregate_tok_s: Q | None = None  # the model's figure before a measured cell replaces it
    meets_slo: bool | None = None
    meets_ttft: bool | None = None
    model_step_ms: Q | None = None  # the model's step before a measured cell replaces it
    model_per_user_tok_s: Q | None = None
    splits: Any = True  # routed experts divide evenly over this arm's EP ranks
    why_code: str = ""  # short form of why_not: split, reach, memory or queue ("" when feasible)
    evidence: Any = True  # references cover this arm's combination (its band is the narrower one)
    layout: Any = ""  # a replica's one-node layout: replica, replica:deepep or replica:tp (per row)
    # the targets, three-valued (`target_status`): meets, misses, or within the band
    slo_status: str | None = None
    ttft_status: str | None = None
    bounds: ArmBounds | None = field(default=None, repr=False)  # what bounds the step (read lazily)

    def to_json(self) -> dict[str, Any]:
        m = self.memory
        return {
            "feasible": self.feasible,
            "fits_memory": self.fits_memory,
            "why_not": self.why_not,
            "why_code": self.why_code,
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
            "slo_status": self.slo_status,
            "ttft_status": self.ttft_status,
            "model_aggregate_tok_s": _opt_json(self.model_aggregate_tok_s),
            "model_step_ms": _opt_json(self.model_step_ms),
            "evidence_covered": _plain_json(self.evidence),
            **({"layout": _plain_json(self.layout)} if self.layout else {}),
            **(self.bounds.to_json() if self.bounds is not None else {}),
        }


def _opt_json(q: Q | None) -> dict[str, Any] | None:
    return q.to_json() if q is not None else None


def _plain_json(flag: Any) -> Any:
    return flag if type(flag) in (bool, str) else np.asarray(flag).tolist()


@dataclass(eq=False)
class Result:
    scenario: Scenario
    resolved: Resolved
    arms: dict[str, ArmResult]
    alternative: str
    ratio_deepep_vs_alternative: Q
    ratio_per_user: Q
    tax_ms_per_token: Q
    verdict: Any = None  # decide.verdict.Verdict, attached by decide.answer.evaluate()
    notes: list[str] = field(default_factory=list)
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)  # see physics.step.shared
    # this result's what-ifs on DeepEP-only knobs, each computed once (decide/explain.py); its own,
    # never shared with a what-if as `memo` is, so a what-if's what-ifs cannot be mistaken for these
    whatifs: dict[Any, Result] = field(default_factory=dict, repr=False)
    table: Table | None = field(default=None, repr=False)  # the constants the arms were computed with
    _versus: dict[tuple[str, str], tuple[Q, Q, Q, bool]] = field(default_factory=dict, repr=False)
    # a disaggregated scenario's deployment (estimate/disagg.py): its two sides and the KV
    # transfer between them, beside the aggregated arms of the same nodes (None: aggregated)
    disaggregated: Any = None

    @property
    def model(self) -> ModelSpec:
        return self.resolved.model

    def versus(self, a: str, b: str) -> tuple[Q, Q, Q, bool]:
        """Arm `a` against arm `b`: aggregate ratio, per-user ratio and per-token tax, like with
        like, banded as the DeepEP / alternative ratio is where modelled, and whether the
        aggregates are both measured. The verdict reads the pair that decided it from here
        (DeepEP against the replicas, say), computed once per pair."""
        key = (a, b)
        if key == ("deepep", self.alternative):  # the result's own figures, as they stand now
            measured = like_with_like(self.arms[a], self.arms[b], "aggregate_tok_s")[2]
            return self.ratio_deepep_vs_alternative, self.ratio_per_user, self.tax_ms_per_token, measured
        if key not in self._versus:
            ratio, ratio_pu, tax, measured = _comparison(self.arms[a], self.arms[b], a, b)
            table = self.table if self.table is not None else table_for(self.resolved)
            if not measured:  # the wider band unless references cover both arms' combinations
                both = _both(self.arms[a].evidence, self.arms[b].evidence)
                ratio = banded(ratio, table, "ratio", covered=both)
                ratio_pu = banded(ratio_pu, table, "ratio", covered=both)
            self._versus[key] = (ratio, ratio_pu, tax, measured)
        return self._versus[key]

    def to_json(self) -> dict[str, Any]:
        s = self.scenario.as_dict()
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
            "disaggregated": None if self.disaggregated is None else self.disaggregated.to_json(),
        }


# Measured cells ---------------------------------------------------------------------------


def _is_cell_scenario(r: Resolved, cell: Cell) -> bool:
    """Whether the scenario is the one the cell ran, EP_NUM_COMMS and EP_EFA_MAX_QPS aside (only
    the DeepEP arm reads them; `measured_cell_for` checks them for that arm)."""
    s = r.scenario
    assert isinstance(s, Scenario)
    return (  # cheapest, most selective comparisons first: this runs for every cell and arm
        s.concurrency == cell.concurrency
        and s.isl == cell.isl
        and s.osl == cell.osl
        and s.nodes == cell.nodes
        and r.engine.name == cell.engine
        and r.instance.name == cell.instance
        and cell.model in _cell_models(r)
        and r.gpus_per_node == r.instance.gpus_per_node
        and s.cuda_graphs == cell.cuda_graphs
        and all(getattr(s, k) is None for k in ("experts", "topk", "hidden", "moe_layers", "kv_dtype"))
        and _native_dtype(s.weight_dtype, cell.model)
        and _same_batching(r, cell)
    )


def _cell_models(r: Resolved) -> tuple[str, ...]:
    """The model names whose measured cells describe this model: what `--model` says (a preset,
    or the config path a user's profile was calibrated with), and for a config.json the preset it
    is architecturally identical to (same shape, attention and dtypes), so a user's own copy of a
    calibrated checkpoint keeps its measurements. A dtype override on a config is another
    deployment: no twin."""

    s = r.scenario
    name = s.model.strip().lower()
    if name in load_models() or s.weight_dtype is not None:
        return (name,)
    twin = preset_twin(r.model)
    return (name,) if twin is None else (name, twin)


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

    native = resolve_model(model)
    return native.expert_dtype is None and weight_dtype.strip().lower() == native.weight_dtype


def _catalog_candidates(r: Resolved) -> tuple[Cell, ...]:
    """The catalog's cells of this scenario's load and size (the first test `_is_cell_scenario`
    makes), looked up rather than scanned."""
    s = r.scenario
    try:
        return cells_by_shape().get((s.concurrency, s.isl, s.osl, s.nodes), ())
    except TypeError:  # an array-valued field (a grid): no single shape, every cell is a candidate
        return tuple(load_cells().values())


def measured_cell_for(r: Resolved, arm: str) -> Cell | None:
    """The measured cell for this arm of this scenario, best-evidenced first.

    The allgather arm never reads EP_NUM_COMMS or EP_EFA_MAX_QPS, so a run that differs from
    the scenario only in those still measures it (a cell that matches them too comes first).
    """
    if arm == "deepep":
        want = r.transport.name
    elif arm == "allgather":
        want = None
    else:
        return None
    best: Cell | None = None
    best_key: tuple[bool, int, bool] | None = None
    profile = profile_of(r)
    user_cells = list(profile.cells()) if profile is not None else []
    for cell in [*user_cells, *_catalog_candidates(r)]:
        if cell.role not in ROLE_PRIORITY or cell.arm(arm) is None:
            continue
        if want is not None and (cell.transport != want or cell.comms_assumed):
            continue
        if not _is_cell_scenario(r, cell):
            continue
        exact = r.scenario.comms == cell.comms and r.scenario.max_qps == cell.max_qps
        if want is not None and not exact:
            continue
        key = (not exact, ROLE_PRIORITY[cell.role], cell.shape_assumed)
        if best_key is None or key < best_key:
            best, best_key = cell, key
    return best


def deepep_neighbour_cell(r: Resolved) -> Cell | None:
    """A DeepEP measurement of this scenario at other EP_NUM_COMMS / EP_EFA_MAX_QPS settings.

    A what-if on those knobs is modelled, while the run it starts from is measured (and carries
    the benchmark's ramp): the reasons quote the model at that run so the two read alike.
    """
    if measured_cell_for(r, "deepep") is not None:
        return None
    best: Cell | None = None
    profile = profile_of(r)
    user_cells = list(profile.cells()) if profile is not None else []
    for cell in [*user_cells, *_catalog_candidates(r)]:
        if cell.role not in ROLE_PRIORITY or cell.deepep is None or cell.comms_assumed:
            continue
        if cell.transport != r.transport.name or not _is_cell_scenario(r, cell):
            continue
        if best is None or ROLE_PRIORITY[cell.role] < ROLE_PRIORITY[best.role]:
            best = cell
    return best


# Arms ---------------------------------------------------------------------------------------


def arm_result(r: Resolved, arm: str, table: Table, memo: dict[Any, Any] | None = None) -> ArmResult:
    """One arm of one scenario, as `compute` makes it (a disaggregated side asks for each arm),
    except that `replica` is its allgather layout here: the aggregated arm takes the best of the
    three one-node layouts (`_replica`), a disaggregated side does not choose among them yet."""
    return _arm(r, arm, table, memo)


def _split_ok(experts: int, ranks: Any) -> Any:
    ranks = floats(ranks)
    return (experts >= ranks) & (experts % ranks == 0)


def _arm(r: Resolved, arm: str, table: Table, memo: dict[Any, Any] | None = None) -> ArmResult:
    """One arm of one scenario (or of many: numeric fields may be arrays)."""
    s = r.scenario
    lay = shared(memo, ("layout", arm), lambda: layout(r, arm))
    mem = shared(memo, ("memory", arm), lambda: memory(r, lay, s.isl, s.osl))
    c = table.step_constants(r)
    step = decode_step(r, arm, c, memo)
    prefill = prefill_step(r, arm, c, memo)
    served = serve(r, lay, step.ms, prefill.ms, _ttft_steps(r, c))
    ttft_base = served.ttft_unqueued_ms
    # Band the model's figures once; where no measured cell replaces them the shown figures are
    # these very objects (the verdict tells "replaced by a measurement" by identity). A
    # combination no reference covers takes the band of combinations left out (fit/evidence.py).
    cov = evidence_covered(r, arm, table)
    step_ms = banded(step.ms, table, "step", covered=cov)
    pu = banded(per_user(step.ms), table, "step", inverse=True, covered=cov)
    aggregate = banded(served.aggregate_tok_s, table, "aggregate", covered=cov)
    ttft = banded(served.ttft_ms, table, "ttft", covered=cov)
    model_aggregate, model_step, model_per_user = aggregate, step_ms, pu
    cell = measured_cell_for(r, arm) if r.measured else None
    if cell is not None:
        step_ms, pu, aggregate, ttft = _apply_cell(cell, arm, step_ms, pu, aggregate, ttft)
    cost = banded(usd_per_mtok(r, aggregate), table, "aggregate", inverse=True, covered=cov)
    split = _split_ok(r.model.experts, lay.expert_shard) if lay.exchange != "tp" else True
    fits = mem.fits
    reach = _reaches(r, arm)
    ceiling = prompt_ceiling_ms(s.ttft_ms)
    answered = ttft.value <= ceiling
    feasible = split & fits & reach & answered
    why, why_code = "", ""
    if r.measured:
        if not split:
            why_code = "split"
            why = f"{r.model.experts} experts cannot be split evenly over EP{int(lay.expert_shard)}"
        elif not reach:
            why_code = "reach"
            why = f"{r.transport.name} reaches only the GPUs of one node"
        elif not fits:
            why_code = "memory"
            why = "does not fit in HBM at this concurrency and context"
        elif not answered:
            why_code = "queue"
            wait = ttft.scalar - ttft_base.scalar
            queued = f" ({duration(wait)} waiting for a batch slot)" if wait > 0 else ""
            limit = duration(ceiling)
            why = f"first token after {duration(ttft.scalar)}{queued}: past the {limit} a client waits"
    result = ArmResult(
        arm,
        _plain(feasible),
        _plain(fits),
        why,
        pu,
        step_ms,
        aggregate,
        ttft,
        cost,
        mem.total_gb,
        step.parts_ms,
        mem,
        served.running,
        cell.id if cell else None,
        model_aggregate,
        model_step_ms=model_step,
        model_per_user_tok_s=model_per_user,
        splits=_plain(split),
        why_code=why_code,
        evidence=cov,
        bounds=ArmBounds(r, arm, c, step, memo if memo is not None else {}, table, cov, mem.max_concurrency),
    )
    if s.slo_tok_s is not None:
        result.meets_slo = _plain(result.per_user_tok_s.value >= s.slo_tok_s)
        if r.measured:
            result.slo_status = target_status(result.per_user_tok_s, s.slo_tok_s, floor=True)
    if s.ttft_ms is not None:
        result.meets_ttft = _plain(result.ttft_ms.value <= s.ttft_ms)
        if r.measured:
            result.ttft_status = target_status(result.ttft_ms, s.ttft_ms, floor=False)
    return result


def _replica(r: Resolved, table: Table, memo: dict[Any, Any] | None) -> ArmResult:
    """The single-node replicas as a deployment: across nodes each node runs the best one-node
    layout the model rates — attention DP with EP over NCCL's allgather or over DeepEP's NVLink
    kernels, or tensor parallel — chosen among the feasible ones by the targets the user set,
    then by the model's aggregate (per row in a sweep). With none feasible, the replicas report
    the allgather layout (and why it cannot run).

    On one node the replica is kept to the allgather layout: DeepEP over NVLink and TP are then
    the cluster's own arms, and a replica running one of them would be that arm under a second
    name (the verdict's twin rule)."""
    nodes = r.scenario.nodes
    if not is_array(nodes) and nodes <= 1:
        return _as_replica(_arm(r, REPLICA_LAYOUTS[0], table, memo))
    fits = [_fits(r, name, memo) for name in REPLICA_LAYOUTS]
    if not is_array(nodes) and not any(is_array(f) for f in fits):
        # one scenario: plain Python (no NumPy import), and a layout that cannot hold its share
        # of the batch in one node's HBM is infeasible before its step is worth computing
        options = [_arm(r, name, table, memo) for name, f in zip(REPLICA_LAYOUTS, fits, strict=True) if f]
        if not any(is_array(x) for o in options for x in (o.feasible, o.model_aggregate_tok_s.value)):
            feasible = [o for o in options if bool(o.feasible)]
            if not feasible:
                closest = min(REPLICA_LAYOUTS, key=lambda name: _memory_gb(r, name, memo))
                kept = [o for o in options if o.name == closest]
                return _as_replica(kept[0] if kept else _arm(r, closest, table, memo))
            # the first best wins a tie, as the vectorised path's comparison does
            return _as_replica(max(feasible, key=lambda o: (bool(_meets_targets(o)), _aggregate(o))))
    options = [_arm(r, name, table, memo) for name in REPLICA_LAYOUTS]
    index = _best_rows(
        options, np.asarray(nodes) > 1, [_memory_gb(r, name, memo) for name in REPLICA_LAYOUTS]
    )
    if np.all(index == index.flat[0]):  # every row took the same layout: that arm, as it is
        return _as_replica(options[int(index.flat[0])])
    picked = _pick_rows(index, options)
    return replace(picked, name="replica", layout=np.asarray(REPLICA_LAYOUTS)[index])


def _as_replica(option: ArmResult) -> ArmResult:
    return replace(option, name="replica", layout=option.name)


def _memory_of(r: Resolved, name: str, memo: dict[Any, Any] | None) -> Memory:
    """This one-node layout's memory per GPU: the one `_arm` computes, shared through the memo
    (nothing runs twice)."""
    s = r.scenario
    lay = shared(memo, ("layout", name), lambda: layout(r, name))
    return shared(memo, ("memory", name), lambda: memory(r, lay, s.isl, s.osl))


def _fits(r: Resolved, name: str, memo: dict[Any, Any] | None) -> Any:
    """Whether this one-node layout holds its weights and its share of the batch in HBM (a bool,
    or per row)."""
    return _plain(_memory_of(r, name, memo).fits)


def _memory_gb(r: Resolved, name: str, memo: dict[Any, Any] | None) -> Any:
    return _memory_of(r, name, memo).total_gb.value


def _best_rows(options: list[ArmResult], across: Any, memory_gb: list[Any]) -> Any:
    """Row by row, the index of the best feasible option by (meets targets, aggregate), the
    first best winning a tie, as the scalar path's max() does; rows where no option is feasible
    take the one nearest to fitting (least memory per GPU), rows on one node option 0. Compared
    key by key: folding the keys into one float score would round the aggregate away."""
    keys = [
        (
            np.asarray(o.feasible, dtype=bool),
            np.asarray(_meets_targets(o), dtype=bool),
            o.model_aggregate_tok_s.value,
        )
        for o in options
    ]
    best_f, best_m, best_a = keys[0]
    index = np.zeros(
        np.broadcast_shapes(*(np.shape(x) for k in keys for x in k), np.shape(across)), dtype=int
    )
    for k, (f, m, a) in enumerate(keys[1:], start=1):
        better = f & (~best_f | (m > best_m) | ((m == best_m) & (a > best_a)))
        better = better & across
        index = np.where(better, k, index)
        best_f, best_m, best_a = (
            np.where(better, f, best_f),
            np.where(better, m, best_m),
            np.where(better, a, best_a),
        )
    shape = index.shape
    nearest = np.argmin(
        np.stack(np.broadcast_arrays(*(np.asarray(g, dtype=float) for g in memory_gb), index)[:-1]), axis=0
    )
    return np.where(~best_f & across, np.broadcast_to(nearest, shape), index)


class PickedRows:
    """Row by row, any attribute of the option `index` names: a sweep's replica bounds, each
    row read from the layout that row runs (computed when asked, as the bounds are)."""

    def __init__(self, index: Any, options: list[Any]) -> None:
        self._index, self._options = index, options

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return _pick_rows(self._index, [getattr(o, name) for o in self._options])


def _meets_targets(o: ArmResult) -> Any:
    """Whether an option meets the per-user floor and TTFT ceiling the user set (True without)."""
    ok: Any = True
    for flag in (o.meets_slo, o.meets_ttft):
        if flag is not None:
            ok = ok & flag
    return ok


def _aggregate(o: ArmResult) -> float:
    return float(o.model_aggregate_tok_s.value)


def _pick_rows(index: Any, options: list[Any]) -> Any:
    """Row by row, the field of the option `index` names (options of one type: arm results,
    their quantities, memories and step parts)."""
    first = options[0]
    if isinstance(first, Q):
        values = np.broadcast_arrays(*(np.asarray(o.value, dtype=float) for o in options), index)[:-1]
        source = options[int(index.flat[0])].source  # a sweep's figure has one source: its first row's
        out = Q(np.choose(index, values), first.unit, min(o.tag for o in options), source)
        if all(o.banded for o in options):
            lows = np.broadcast_arrays(*(np.asarray(o.low, dtype=float) for o in options), index)[:-1]
            highs = np.broadcast_arrays(*(np.asarray(o.high, dtype=float) for o in options), index)[:-1]
            out = out.with_band(np.choose(index, lows), np.choose(index, highs))
        return out
    if isinstance(first, ArmBounds):
        return PickedRows(index, options)
    if isinstance(first, Mapping):
        return {k: _pick_rows(index, [o[k] for o in options]) for k in first}
    if dataclasses.is_dataclass(first) and not isinstance(first, type):
        fields = {
            f.name: _pick_rows(index, [getattr(o, f.name) for o in options])
            for f in dataclasses.fields(first)
        }
        return replace(first, **fields)
    if first is None or isinstance(first, str):
        return (
            first if all(o == first for o in options) else np.choose(index, [np.asarray(o) for o in options])
        )
    values = np.broadcast_arrays(*(np.asarray(o) for o in options), index)[:-1]
    return np.choose(index, values)


TARGET_STATUSES = ("meets", "misses", "within the band")


def target_status(q: Q, target: float, floor: bool) -> str:
    """A target against a figure, three-valued: "meets", "misses", or "within the band" when the
    figure's error band spans the target (the model cannot tell which side the truth is on).
    `floor`: the figure must reach the target (a per-user rate), else stay under it (TTFT).
    A measured figure carries no band: it meets or misses. The verdict's rule still reads the
    figure itself (`meets_slo`, `meets_ttft`); this says how far to trust that reading."""
    if q.banded:
        low, high = first_float(q.low), first_float(q.high)
        if low <= target <= high:
            return "within the band"
    value = first_float(q.value)
    ok = value >= target if floor else value <= target
    return "meets" if ok else "misses"


def _ttft_steps(r: Resolved, c: Any) -> Q:
    graphs = r.scenario.cuda_graphs
    e, g = c.eager.ttft_steps, c.graphs.ttft_steps
    every, some = every_some(graphs)
    if not some:
        return e
    if every:
        return g
    return Q(np.where(graphs, g.value, e.value), "steps", min(e.tag, g.tag), e.source)


def evidence_covered(r: Resolved, arm: str, table: Table) -> Any:
    """Whether the references cover this arm's combination (True when the table records none:
    a fit without coverage has one band per kind)."""
    if not table.covered or table.band("step", covered=False) is None:
        return True
    return _plain(covered(r, arm, table.covered))


def _reaches(r: Resolved, arm: str) -> Any:
    """DeepEP over a one-node transport (NVLink) cannot serve an EP group that spans nodes.

    A scalar scenario is refused before this (`scenario.check_transport_reach`); sweeps and
    what-if grids mark the arm infeasible row by row instead.
    """
    if arm != "deepep" or r.transport.fabric != "nvlink":
        return True
    return floats(r.scenario.nodes) <= 1


def prompt_ceiling_ms(ttft_target_ms: float | None) -> float:
    """Longest first-token wait an arm may have and still count as serving the load.

    The user's TTFT ceiling when it is longer, else `PROMPT_TIMEOUT_MS` (see scenario.py).
    """
    return max(PROMPT_TIMEOUT_MS, ttft_target_ms or 0.0)


def duration(ms: float) -> str:
    """A wait in the unit a person reads it in (ms, s, min, h, days)."""
    if ms != ms:
        return "n/a"
    for limit, div, unit in ((1e3, 1.0, "ms"), (6e4, 1e3, "s"), (3.6e6, 6e4, "min"), (8.64e7, 3.6e6, "h")):
        if ms < limit:
            return f"{ms / div:,.0f} {unit}" if unit == "ms" else f"{ms / div:,.1f} {unit}"
    return f"{ms / 8.64e7:,.1f} days"


def _plain(flag: Any) -> Any:
    """A 0-d boolean array becomes a bool; arrays (sweeps) stay arrays."""
    if type(flag) is bool:
        return flag
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


def like_with_like(a: ArmResult, b: ArmResult, metric: str) -> tuple[Q, Q, bool]:
    """Two arms' figures of one metric on one footing: (a, b, measured?).

    The measured figures when both arms have one; otherwise both arms' model figures, because a
    benchmark's number carries its ramp, tail and run-to-run noise and the model's does not.
    """
    model = {"aggregate_tok_s": "model_aggregate_tok_s", "step_ms": "model_step_ms"}.get(
        metric, "model_per_user_tok_s"
    )
    qa, qb = getattr(a, metric), getattr(b, metric)
    ma, mb = getattr(a, model) or qa, getattr(b, model) or qb
    if qa is not ma and qb is not mb:  # a measured cell replaced the model's figure on both arms
        return qa, qb, True
    return ma, mb, False


def _comparison(
    dee: ArmResult, alt: ArmResult, a: str = "DeepEP", b: str = "alternative"
) -> tuple[Q, Q, Q, bool]:
    """Aggregate ratio, per-user ratio and per-token tax of DeepEP against the alternative (or
    of arm `a` against arm `b`), each from like-with-like figures (the figures the verdict
    compares and every face shows), and whether the aggregates compared are both measured."""
    out = []
    both_measured = False
    a = "DeepEP" if a == "deepep" else a
    for metric, unit, what in (
        ("aggregate_tok_s", "x", f"aggregate tok/s {a} / {b}"),
        ("per_user_tok_s", "x", f"per-user tok/s {a} / {b}"),
        ("step_ms", "ms/token", f"{a} step - {b} step"),
    ):
        a, b, measured = like_with_like(dee, alt, metric)
        both_measured = both_measured or (metric == "aggregate_tok_s" and measured)
        basis = "measured on both arms" if measured else "model figures of both arms"
        value = tax_ms(a, b) if metric == "step_ms" else a / b
        out.append(value.as_(unit, f"{what} ({basis})"))
    return out[0], out[1], out[2], both_measured


def arms_for(r: Resolved) -> list[str]:
    return ["deepep", r.scenario.alternative, "replica"]


def table_for(r: Resolved) -> Table:
    """The built-in fitted table, with a calibration profile's constants where one is given."""
    table = built_in_table()
    profile = profile_of(r)
    if profile is not None:
        table = profile.apply(table, r)
    return table


def compute(r: Resolved, reuse: Result | None = None, table: Table | None = None) -> Result:
    """All arms and the comparison, without the verdict (used by the flip search too).

    `reuse`: a result for the same scenario but another value of a knob only DeepEP reads (the
    transport, EP_NUM_COMMS, EP_EFA_MAX_QPS); its non-DeepEP arms do not read it and are taken
    as they are. `table`: constants other than
    the built-in fit (the cross-validation evaluates each fold's own).
    """
    if r.profile is None and r.scenario.calibration is not None:
        r = replace(r, profile=profile_of(r))  # read the profile once; every arm asks for it
    table = table if table is not None else table_for(r)
    memo = reuse.memo if reuse is not None else {}
    arms = {
        name: reuse.arms[name]
        if reuse is not None and name != "deepep"
        else (_replica(r, table, memo) if name == "replica" else _arm(r, name, table, memo))
        for name in arms_for(r)
    }
    ratio, ratio_pu, tax, measured = _comparison(arms["deepep"], arms[r.scenario.alternative])
    if not measured:  # a ratio of two observations is not modelled: no band
        both = _both(arms["deepep"].evidence, arms[r.scenario.alternative].evidence)
        ratio = banded(ratio, table, "ratio", covered=both)
        ratio_pu = banded(ratio_pu, table, "ratio", covered=both)
    return Result(r.scenario, r, arms, r.scenario.alternative, ratio, ratio_pu, tax, memo=memo, table=table)


def _both(a: Any, b: Any) -> Any:
    if type(a) is bool and type(b) is bool:
        return a and b
    return np.logical_and(a, b)


def check_splittable(r: Resolved) -> None:
    """Refuse a layout no arm can split: an input error naming the field the user can change and
    the values that split, never a capacity verdict. When some arm can split, the others are
    simply infeasible and their `why_not` says why.

    The EP group of DeepEP / allgather spans nodes x GPUs per node, a multiple of one node's GPU
    count, so when one node's replica group does not divide the experts no EP group does
    either: the check depends on experts, GPUs per node and the alternative, never on the node
    count (sweeps call it once per combination).
    """

    names = arms_for(r)
    shards = {name: layout(r, name).expert_shard for name in names if name != "tp"}
    experts = r.model.experts
    if len(shards) < len(names) or any(every_some(_split_ok(experts, ep))[0] for ep in shards.values()):
        return
    s = r.scenario
    eps = sorted({int(np.max(ep)) if is_array(ep) else int(ep) for ep in shards.values()}, reverse=True)
    over = " nor ".join(f"EP{ep}" for ep in eps)
    gpn_ok = [g for g in range(1, r.instance.gpus_per_node + 1) if experts % g == 0 and experts >= g]
    tail = "; --alternative tp shards every expert instead and always splits"
    if s.experts is not None or (s.gpus_per_node is None and not gpn_ok):

        def near(step: int) -> str:
            return " or ".join(
                str(n) for n in sorted({max(step, experts // step * step), (experts // step + 1) * step})
            )

        one, every = min(eps), math.lcm(*eps)
        splits = f"a multiple of {one} splits over EP{one} (e.g. {near(one)})"
        if every != one:
            splits += f", of {every} over every group (e.g. {near(every)})"
        raise InputError(
            "--experts",
            experts,
            f"an expert count that splits evenly: {experts} do not split over {over}; {splits}{tail}",
        )
    field = "--gpus-per-node" if s.gpus_per_node is not None else "--model"
    value: Any = r.gpus_per_node if s.gpus_per_node is not None else s.model
    choices = ", ".join(str(g) for g in gpn_ok) if gpn_ok else "none up to the node's GPU count"
    raise InputError(
        field,
        value,
        f"a layout that splits the {experts} routed experts evenly: they do not split over {over}; "
        f"GPUs per node that divide them: {choices}{tail}",
    )
