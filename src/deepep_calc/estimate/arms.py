"""Every arm of a scenario from the physics and the fitted constants: memory, decode step,
TTFT, aggregate throughput and cost, with a measured cell's figures where the scenario is one
(`cells.py`) and the band its kind of figure missed references by out of sample. The replicas
arm is the best of its one-node layouts. The formulas themselves live in physics/.

Why one module: the replicas arm is a pick among the layouts `model_arm` computes, through the
same memo, checks and target statuses; apart, the pick would have to re-derive what an arm is.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..base.arrays import every_some, first_float, floats, is_array, np
from ..base.errors import InputError
from ..base.quantity import Q
from ..base.vocabulary import REPLICA_LAYOUTS
from ..fit.evidence import covered
from ..fit.table import Table
from ..physics.layout import layout
from ..physics.memory import Memory, memory
from ..physics.serving import per_user, running_sequences, serve, usd_per_mtok
from ..physics.step import decode_step, prefill_step, shared
from ..question.fields import LIMITS, PROMPT_TIMEOUT_MS
from ..question.scenario import Resolved
from .bands import banded
from .bounds import ArmBounds
from .cells import apply_cell, measured_cell_for
from .result import ArmResult

# Arms ---------------------------------------------------------------------------------------


def _split_ok(experts: int, ranks: Any) -> Any:
    ranks = floats(ranks)
    return (experts >= ranks) & (experts % ranks == 0)


def model_arm(r: Resolved, arm: str, table: Table, memo: dict[Any, Any] | None = None) -> ArmResult:
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
        step_ms, pu, aggregate, ttft = apply_cell(cell, arm, step_ms, pu, aggregate, ttft)
    cost = usd_per_mtok(r, aggregate)
    if aggregate is model_aggregate:  # the model's aggregate: its band, inverted; a measured one has none
        cost = banded(cost, table, "aggregate", inverse=True, covered=cov)
    split = _split_ok(r.model.experts, lay.expert_shard) if lay.exchange != "tp" else True
    ceiling = prompt_ceiling_ms(s.ttft_ms)
    checks = _Checks(split, mem.fits, _reaches(r, arm), ttft.value <= ceiling, ceiling)
    feasible = checks.split & checks.fits & checks.reach & checks.answered
    why, why_code = _why_not(r, lay, checks, ttft, ttft_base) if r.measured else ("", "")
    result = ArmResult(
        arm,
        _plain(feasible),
        _plain(checks.fits),
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
    _set_targets(result, r)
    return result


@dataclass(frozen=True)
class _Checks:
    """What decides whether an arm can run here: the experts split over its layout, it fits in
    HBM, its transport reaches every node, and its first token comes before `ceiling` ms."""

    split: Any
    fits: Any
    reach: Any
    answered: Any
    ceiling: float


def _why_not(r: Resolved, lay: Any, checks: _Checks, ttft: Q, ttft_base: Q) -> tuple[str, str]:
    """(why, code) of the first check an arm fails, in the order a reader would fix them."""
    if not checks.split:
        return f"{r.model.experts} experts cannot be split evenly over EP{int(lay.expert_shard)}", "split"
    if not checks.reach:
        return f"{r.transport.name} reaches only the GPUs of one node", "reach"
    if not checks.fits:
        return "does not fit in HBM at this concurrency and context", "memory"
    if not checks.answered:
        wait = ttft.scalar - ttft_base.scalar
        queued = f" ({duration(wait)} waiting for a batch slot)" if wait > 0 else ""
        limit = duration(checks.ceiling)
        return f"first token after {duration(ttft.scalar)}{queued}: past the {limit} a client waits", "queue"
    return "", ""


def _set_targets(result: ArmResult, r: Resolved) -> None:
    """Whether the arm meets the targets the user set (and, for one scenario, how surely)."""
    s = r.scenario
    if s.slo_tok_s is not None:
        result.meets_slo = _plain(result.per_user_tok_s.value >= s.slo_tok_s)
        if r.measured:
            result.slo_status = target_status(result.per_user_tok_s, s.slo_tok_s, floor=True)
    if s.ttft_ms is not None:
        result.meets_ttft = _plain(result.ttft_ms.value <= s.ttft_ms)
        if r.measured:
            result.ttft_status = target_status(result.ttft_ms, s.ttft_ms, floor=False)


def running_capacity(base: Resolved, arm: str, rows: int, **fields: Any) -> tuple[np.ndarray, np.ndarray]:
    """Most sequences each of `rows` varied clusters can run at once on `arm`, and whether one
    sequence fits at all: the engine's running limit at an unbounded load
    (`physics.serving.running_sequences`), bounded by the largest concurrency whose KV cache
    fits (`physics.memory`). The planner sizes its search with it, before any `compute`."""
    big = base.vary(**fields, concurrency=np.full(rows, float(LIMITS["concurrency"])))
    running = np.broadcast_to(
        np.asarray(running_sequences(big, layout(big, arm)).value, dtype=float), (rows,)
    )
    one = base.vary(**fields, concurrency=np.ones(rows))
    mem = memory(one, layout(one, arm), base.scenario.isl, base.scenario.osl)
    kv_fit = np.broadcast_to(np.asarray(mem.max_concurrency.value, dtype=float), (rows,))
    return np.minimum(running, np.floor(kv_fit)), np.broadcast_to(np.asarray(mem.fits), (rows,))


def replica_arm(r: Resolved, table: Table, memo: dict[Any, Any] | None) -> ArmResult:
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
        return _as_replica(model_arm(r, REPLICA_LAYOUTS[0], table, memo))
    fits = [_fits(r, name, memo) for name in REPLICA_LAYOUTS]
    if not is_array(nodes) and not any(is_array(f) for f in fits):
        # one scenario: plain Python (no NumPy import), and a layout that cannot hold its share
        # of the batch in one node's HBM is infeasible before its step is worth computing
        options = [
            model_arm(r, name, table, memo) for name, f in zip(REPLICA_LAYOUTS, fits, strict=True) if f
        ]
        if not any(is_array(x) for o in options for x in (o.feasible, o.model_aggregate_tok_s.value)):
            feasible = [o for o in options if bool(o.feasible)]
            if not feasible:
                closest = min(REPLICA_LAYOUTS, key=lambda name: _memory_gb(r, name, memo))
                kept = [o for o in options if o.name == closest]
                return _as_replica(kept[0] if kept else model_arm(r, closest, table, memo))
            # the first best wins a tie, as the vectorised path's comparison does
            return _as_replica(max(feasible, key=lambda o: (bool(_meets_targets(o)), _aggregate(o))))
    options = [model_arm(r, name, table, memo) for name in REPLICA_LAYOUTS]
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
    """This one-node layout's memory per GPU: the one `model_arm` computes, shared through the memo
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
    # the unit is chosen on the figure as printed, so 999.6 ms reads 1.0 s, not 1,000 ms
    for limit, div, unit, digits in (
        (1e3, 1.0, "ms", 0),
        (6e4, 1e3, "s", 1),
        (3.6e6, 6e4, "min", 1),
        (8.64e7, 3.6e6, "h", 1),
    ):
        if round(ms / div, digits) < limit / div:
            return f"{ms / div:,.{digits}f} {unit}"
    return f"{ms / 8.64e7:,.1f} days"


def _plain(flag: Any) -> Any:
    """A 0-d boolean array becomes a bool; arrays (sweeps) stay arrays."""
    if type(flag) is bool:
        return flag
    arr = np.asarray(flag)
    return bool(arr) if arr.ndim == 0 else arr


def arms_for(r: Resolved) -> list[str]:
    return ["deepep", r.scenario.alternative, "replica"]


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
