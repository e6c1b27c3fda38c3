"""Break-even answers: where does the verdict of one scenario change, and by how much?

Each answer is solved on the model, not read off a blind scan:

kernel_tie_us      per-MoE-layer dispatch + combine latency at which DeepEP's aggregate equals
                   the alternative's. The latency enters as a shift of the transport's fixed
                   latency alpha (every dispatch pays it, prefill included); the ratio falls
                   monotonically with it, so a bisection finds the root. In an eager engine the
                   kernels can hide under the CPU path: then no latency moves the ratio, and the
                   answer says so.
concurrency_tie    smallest concurrency at which DeepEP's aggregate reaches the alternative's:
concurrency_win    ... and beats it by more than the noise band (the verdict's threshold). Tokens
                   per rank = concurrency / EP, so this is where the alternative's all-rank
                   traffic outgrows DeepEP's top-k traffic.
capacity_isl       smallest input length (at this concurrency) at which capacity forces EP.
capacity_conc      smallest concurrency (at this context) at which capacity forces EP.
capacity_nodes     smallest node count at which single-node replicas hold the load (below it,
                   capacity forces EP).
ep_nodes           fewest nodes on which the DeepEP arm fits in HBM.
comms_proxy        EP_NUM_COMMS beyond which the host proxy stops being issue-bound: its fitted
                   per-layer cost (eager) is proxy_fixed_us + proxy_lane_us / K (physics/step.py); the
                   proxy is issue-bound while the part that more comms divide, lane / K, exceeds
                   the part they do not, so K* = proxy_lane_us / proxy_fixed_us.
comms_bandwidth    EP_NUM_COMMS beyond which more comms add no scale-out bandwidth: the measured
                   curve k1 * K^e reaches the line rate at K = (line / k1)^(1/e).
qps_kernel         EP_EFA_MAX_QPS beyond which the kernel's issue term (work requests x op cost /
                   lanes) is no longer the largest of the three pipes of physics/deepep.py in either
                   direction; bisection on the kernel model against the same kernel with a free
                   issue path.

Integer answers come from a search that first evaluates a geometric + linear grid over the whole
allowed range in one vectorised pass (so a first crossing is not jumped over), then narrows the
bracket with further vectorised passes. The model's figures are used throughout (measured-cell
substitution does not respond to a what-if). "Never" is an answer, not an error.

How answers read: every note is a sentence a user can act on, with units. Where the knob is whole
(nodes, concurrency, EP_NUM_COMMS, EP_EFA_MAX_QPS) the value is a whole number, rounded in the
direction that keeps the sentence true (a threshold "from K" is rounded up) and the note says so;
the exact solution stays in `check["solution"]`. The concurrency search stops where the card's
max concurrency does (the most sequences both arms hold in KV cache at once), so "never" names
the same limit the card prints.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .catalog.constants import const
from .evaluate import Result, compute, table_for
from .fit.profile import profile_of
from .fit.table import Table
from .physics.deepep import KernelShape, kernel_us, scaleout_bw
from .physics.layout import layout
from .quantity import Q, qmin, weakest
from .scenario import LIMITS, Resolved, Scenario, resolve
from .verdict import ARM_LABELS, classify_codes


@dataclass
class Answer:
    key: str
    question: str
    value: Q | None
    note: str
    check: dict[str, Q] = field(default_factory=dict)  # the model at (and beside) the answer
    short: str = ""  # the answer in a word when there is no value ("never", "not applicable")

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "question": self.question,
            "value": self.value.to_json() if self.value is not None else None,
            "note": self.note,
            "short": self.short,
            "check": {k: v.to_json() for k, v in self.check.items()},
        }


# The model at many points -------------------------------------------------------------------


def model(r: Resolved, **arrays: Any) -> Result:
    """The vectorised model (no measured substitution) at the given numeric fields."""
    s = r.scenario
    fields = {"concurrency": np.atleast_1d(np.asarray(arrays.pop("concurrency", s.concurrency)))}
    fields.update({k: np.atleast_1d(np.asarray(v)) for k, v in arrays.items()})
    return compute(r.vary(**fields))


def _at(q: Q, i: int = 0) -> Q:
    """Row i of a vectorised quantity (a value that did not vary holds for every row)."""
    values = np.asarray(q.value).reshape(-1)
    return Q(float(values[min(i, values.size - 1)]), q.unit, q.tag, q.source)


def first_true(pred: Callable[[np.ndarray], np.ndarray], lo: int, hi: int, points: int = 96) -> int | None:
    """Smallest integer in [lo, hi] where `pred` holds, or None if it holds nowhere on the grid.

    One vectorised pass over a geometric + linear grid finds the first bracket; each further
    pass divides the bracket ~`points` ways (a k-ary bisection). Exact for predicates that turn
    true once; for others it returns the first crossing the grid sees.
    """
    grid = _grid(lo, hi, points, include_ends=True)
    ok = np.asarray(pred(grid), dtype=bool)
    if not ok.any():
        return None
    j = int(np.argmax(ok))
    if j == 0:
        return int(grid[0])
    below, above = int(grid[j - 1]), int(grid[j])
    while above - below > 1:
        cand = _grid(below, above, points, include_ends=False)
        if cand.size == 0:
            break
        ok = np.asarray(pred(cand), dtype=bool)
        if ok.any():
            k = int(np.argmax(ok))
            above = int(cand[k])
            below = int(cand[k - 1]) if k > 0 else below
        else:
            below = int(cand[-1])
    return above


def _grid(lo: int, hi: int, points: int, include_ends: bool) -> np.ndarray:
    half = max(points // 2, 2)
    geo = np.geomspace(max(lo, 1), hi, half)
    lin = np.linspace(lo, hi, half)
    grid = np.unique(np.round(np.concatenate([geo, lin])).astype(np.int64))
    if include_ends:
        return np.unique(np.concatenate([[lo, hi], grid[(grid >= lo) & (grid <= hi)]]))
    return grid[(grid > lo) & (grid < hi)]


# (a) kernel latency at which DeepEP ties the alternative ------------------------------------


class AlphaShift:
    """A calibration-profile stand-in that adds `delta_us` to every DeepEP fixed latency.

    Split evenly between dispatch and combine (only their sum matters to the step). Any real
    profile on the scenario keeps its cells, engine constants and its own kernel fit underneath.
    """

    def __init__(self, inner: Any, delta_us: float) -> None:
        self.inner, self.delta = inner, delta_us

    def apply(self, table: Table, r: Resolved) -> Table:
        if self.inner is not None:
            table = self.inner.apply(table, r)
        half = self.delta / 2.0
        if r.scenario.nodes <= 1 or r.transport.fabric == "nvlink":  # the NVLink-only kernel
            return replace(table, nvlink_alpha_us=(table.nvlink_alpha_us + self.delta).as_("us"))
        t = table.transports[r.transport.name]
        factor = table.instance_factor(r.instance.name).scalar
        shifted = replace(
            t,
            alpha_dispatch_us=(t.alpha_dispatch_us + half / factor).as_("us"),
            alpha_combine_us=(t.alpha_combine_us + half / factor).as_("us"),
        )
        return table.with_transport(r.transport.name, shifted)

    def kernel_fit(self, name: str) -> Any:
        return self.inner.kernel_fit(name) if self.inner is not None else None

    def cells(self) -> list[Any]:
        return list(self.inner.cells()) if self.inner is not None else []

    def __getattr__(self, name: str) -> Any:
        if self.inner is None:
            raise AttributeError(name)
        return getattr(self.inner, name)


def with_kernel_shift(r: Resolved, delta_us: float) -> Resolved:
    """The same scenario with every DeepEP dispatch + combine `delta_us` slower per MoE layer."""
    return replace(r, profile=AlphaShift(profile_of(r), delta_us))


def _per_layer_us(result: Result, layers: int) -> Q:
    comm = result.arms["deepep"].breakdown_ms["moe_comm"]
    return _at((comm * (1000.0 / max(layers, 1))).as_("us", f"DeepEP kernels per step / {layers} MoE layers"))


def kernel_tie(r: Resolved) -> Answer:
    alt_name = r.scenario.alternative
    q = f"Per-MoE-layer dispatch + combine latency at which DeepEP ties {ARM_LABELS[alt_name]}"
    base = model(r)
    layers = r.model.moe_layers
    now = _per_layer_us(base, layers)
    dee, alt = base.arms["deepep"], base.arms[alt_name]
    for name, arm in (("DeepEP", dee), (ARM_LABELS[alt_name], alt)):
        if not bool(np.all(arm.feasible)):
            return Answer(
                "kernel_tie_us",
                q,
                None,
                f"No tie to find: {name} is not feasible here ({_why(r, arm)}).",
                short="not applicable",
            )

    def ratio_at(shift: float) -> float:
        return _at(model(with_kernel_shift(r, shift)).ratio_deepep_vs_alternative).scalar

    lowest = -_alpha_total(r)  # every fixed latency gone: the fastest these kernels can be
    floor = _per_layer_us(model(with_kernel_shift(r, lowest)), layers)
    high = max(4.0 * now.scalar, 1000.0)  # four times slower than today (at least 1 ms)
    r_low, r_high = ratio_at(lowest), ratio_at(high)
    check = {"now_us": now, "floor_us": floor}
    if abs(r_low - r_high) < 1e-6:
        note = (
            f"No kernel latency changes the ratio: the kernels (now {now.scalar:,.1f} µs per layer) "
            "hide under the engine's CPU path, so faster kernels would not help DeepEP here."
        )
        return Answer("kernel_tie_us", q, None, note, check, short="never")
    if r_low < 1.0:
        note = (
            f"No kernel latency ties: even at {floor.scalar:,.1f} µs per layer (no fixed latency; now "
            f"{now.scalar:,.1f} µs) DeepEP stays behind, so the rest of its step (engine, host proxy) "
            "decides, not the kernels."
        )
        return Answer("kernel_tie_us", q, None, note, check, short="never")
    if r_high > 1.0:
        note = (
            f"DeepEP stays ahead even at {now.scalar + high:,.0f} µs per layer (now {now.scalar:,.1f} µs): "
            "slower kernels would not change the verdict."
        )
        return Answer("kernel_tie_us", q, None, note, check, short="never")
    lo, hi = lowest, high  # ratio falls as the shift grows: bisect for ratio = 1
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ratio_at(mid) > 1.0 else (lo, mid)
    shift = 0.5 * (lo + hi)
    delta = Q(shift, "us", now.tag, "bisection on the model ratio")
    tie = (now + delta).as_(
        "us", f"solved: the per-layer latency at which the model ratio is 1 (DeepEP now {now.scalar:,.0f} us)"
    )
    check = {
        **check,
        "solution_us": tie,
        "ratio_at_solution": _at(model(with_kernel_shift(r, shift)).ratio_deepep_vs_alternative),
    }
    note = (
        f"DeepEP ties {ARM_LABELS[alt_name]} at {tie.scalar:,.1f} µs of dispatch + combine per MoE layer "
        f"(now {now.scalar:,.1f} µs, {delta.scalar:+,.1f} µs): faster kernels than that put DeepEP "
        "ahead, slower ones behind."
    )
    if tie.scalar < floor.scalar:
        note += (
            f" That is below the {floor.scalar:,.1f} µs the bandwidth and issue terms alone take at this "
            "shape: no fixed-latency saving reaches it."
        )
    return Answer("kernel_tie_us", q, tie, note, check)


def _why(r: Resolved, arm: Any) -> str:
    if not bool(np.all(arm.fits_memory)):
        return "it does not fit in HBM"
    if not bool(np.all(arm.splits)):
        world = r.scenario.nodes * r.gpus_per_node
        return f"{r.model.experts} experts do not split evenly over EP{world}"
    return "its first token comes after the prompt ceiling (requests queue for a batch slot)"


def _alpha_total(r: Resolved) -> float:
    """Fixed latency of one dispatch + combine as the model charges it here (us)."""
    table = table_for(r)
    if r.scenario.nodes <= 1 or r.transport.fabric == "nvlink":
        return table.nvlink_alpha_us.scalar
    t = table.transports[r.transport.name]
    factor = table.instance_factor(r.instance.name).scalar
    return (t.alpha_dispatch_us.scalar + t.alpha_combine_us.scalar) * factor


# (b) concurrency at which DeepEP overtakes the alternative ----------------------------------


def _ratio_pred(r: Resolved, threshold: float) -> Callable[[np.ndarray], np.ndarray]:
    alt_name = r.scenario.alternative

    def pred(conc: np.ndarray) -> np.ndarray:
        res = model(r, concurrency=conc)
        both = np.asarray(res.arms["deepep"].feasible) & np.asarray(res.arms[alt_name].feasible)
        return both & (np.asarray(res.ratio_deepep_vs_alternative.value) >= threshold)

    return pred


def _plural(n: float, word: str, digits: int = 0) -> str:
    """`1 node`, `2 nodes`, `1,234 requests`: the count and its noun, singular when it is one."""
    text = f"{n:,.{digits}f}"
    return f"{text} {word}" if text == "1" else f"{text} {word}s"


def held_concurrency(r: Resolved) -> Q:
    """The card's max concurrency for the two compared arms: the most sequences both hold in KV
    cache at once. The concurrency search stops here so that its "never" names the card's limit
    (past it the engine only queues what it cannot hold)."""
    res = model(r)
    arms = [res.arms[n].memory.max_concurrency for n in ("deepep", r.scenario.alternative)]
    return _at(qmin(*arms)).as_("requests", "smaller of the two arms' max concurrency (KV cache)")


def concurrency_cross(r: Resolved, win: bool) -> Answer:
    noise = const("noise_band")
    threshold = 1.0 + noise.scalar if win else 1.0
    alt = ARM_LABELS[r.scenario.alternative]
    key = "concurrency_win" if win else "concurrency_tie"
    question = (
        f"Concurrency at which DeepEP beats {alt} by more than the {noise.scalar:.0%} noise band"
        if win
        else f"Concurrency at which DeepEP's aggregate reaches {alt}'s"
    )
    goal = f"beats {alt} by more than {noise.scalar:.0%}" if win else f"reaches {alt}'s aggregate"
    short = f"short of the {threshold:.2f}× a win needs" if win else f"short of a tie ({threshold:.2f}×)"
    held = held_concurrency(r)
    top = int(min(LIMITS["concurrency"], max(held.scalar, 1.0)))
    served = _last_served(r, top)
    if served is not None:
        top = min(top, served)
    found = first_true(_ratio_pred(r, threshold), 1, top)
    if found is None:
        probe = model(r, concurrency=np.array([top]))
        ratio = _at(probe.ratio_deepep_vs_alternative)
        dee, other = probe.arms["deepep"], probe.arms[r.scenario.alternative]
        check = {"ratio_at_limit": ratio, "max_concurrency": held}
        if served is not None and served == top:
            note = (
                f"Never while both arms answer within the prompt ceiling, which they do up to concurrency "
                f"{served:,}: there DeepEP reaches {ratio.scalar:.3f}× {alt}'s aggregate, {short}."
            )
        elif not bool(np.all(dee.feasible)):
            note = f"Never: DeepEP is not feasible here ({_why(r, dee)})."
        elif not bool(np.all(other.feasible)):
            note = f"Never: {alt} is not feasible here ({_why(r, other)})."
        else:
            note = (
                f"Never up to concurrency {top:,}, the most sequences both arms hold in KV cache at once "
                f"(the card's max concurrency): there DeepEP reaches {ratio.scalar:.3f}× {alt}'s aggregate, "
                f"{short}."
            )
        return Answer(key, question, None, note, check, short="never")
    at = model(r, concurrency=np.array([found, max(found - 1, 1)]))
    ratio_at, ratio_below = _at(at.ratio_deepep_vs_alternative, 0), _at(at.ratio_deepep_vs_alternative, 1)
    tokens = float(np.asarray(layout(r.vary(concurrency=[found]), "deepep").seqs_per_rank).reshape(-1)[0])
    value = Q(float(found), "requests", ratio_at.tag, f"search on the model ratio >= {threshold:g}")
    if found == 1:
        note = f"Already at concurrency 1 DeepEP {goal}: the ratio is {ratio_at.scalar:.3f}×."
    else:
        note = (
            f"From concurrency {found:,} ({_plural(tokens, 'token')} per rank) DeepEP {goal}: the ratio is "
            f"{ratio_at.scalar:.3f}× there and {ratio_below.scalar:.3f}× at {found - 1:,} (the smallest "
            "whole concurrency where it holds)."
        )
    tokens_q = Q(tokens, "tokens/rank", ratio_at.tag, "concurrency / EP ranks (engine batch cap applies)")
    return Answer(
        key,
        question,
        value,
        note,
        {
            "ratio_at": ratio_at,
            "ratio_below": ratio_below,
            "tokens_per_rank": tokens_q,
            "max_concurrency": held,
        },
    )


def _last_served(r: Resolved, top: int) -> int | None:
    """Largest concurrency up to `top` at which DeepEP and the alternative are both feasible, when
    what stops them beyond it is the queue (they fit and split at every concurrency); else None."""
    alt = r.scenario.alternative

    def broken(conc: np.ndarray) -> np.ndarray:
        res = model(r, concurrency=conc)
        both = np.asarray(res.arms["deepep"].feasible) & np.asarray(res.arms[alt].feasible)
        return ~np.broadcast_to(both, conc.shape)

    first_bad = first_true(broken, 1, max(top, 1))
    if first_bad is None or first_bad <= 1:
        return None
    res = model(r, concurrency=np.array([first_bad]))
    stuck = [res.arms[n] for n in ("deepep", alt)]
    if not all(bool(np.all(a.fits_memory)) and bool(np.all(a.splits)) for a in stuck):
        return None
    return first_bad - 1


# (c) capacity -------------------------------------------------------------------------------


def _codes(r: Resolved, **arrays: Any) -> tuple[np.ndarray, Result]:
    """Per row: "capacity" where one node cannot hold weights + KV (sharding is forced), else
    the verdict's code. Memory alone decides capacity here: a row where every arm only queues
    past the prompt ceiling is "nothing fits" in the verdict, not a reason to shard experts."""
    res = model(r, **arrays)
    codes, _ = classify_codes(res)
    forced = ~np.asarray(res.arms["replica"].fits_memory, bool)
    codes = np.where(forced, "capacity", np.where(codes == "capacity", "dense", codes))
    return np.asarray(codes).reshape(-1), res


def _memory_check(res: Result, arm: str, i: int) -> dict[str, Q]:
    mem = res.arms[arm].memory
    return {"memory_gb_per_gpu": _at(mem.total_gb, i), "usable_gb": _at(mem.usable_gb, i)}


def capacity_field(r: Resolved, name: str) -> Answer:
    """Smallest ISL or concurrency at which capacity forces EP (memory grows with both)."""
    label = {"isl": "input length", "concurrency": "concurrency"}[name]
    question = f"Smallest {label} at which one node can no longer hold it (capacity forces EP)"
    key = f"capacity_{'isl' if name == 'isl' else 'conc'}"
    limit = LIMITS[name]
    if name == "isl" and r.model.max_context:  # no input beyond the model's context window
        limit = min(limit, max(r.model.max_context - int(r.scenario.osl), 1))

    def pred(values: np.ndarray) -> np.ndarray:
        return _codes(r, **{name: values})[0] == "capacity"

    found = first_true(pred, 1, limit)
    unit = "tokens" if name == "isl" else "requests"
    if found is None:
        _, res = _codes(r, **{name: np.array([limit])})
        check = {f"{k}_at_limit": v for k, v in _memory_check(res, "replica", 0).items()}
        if name == "isl":
            why = "the model's context window less the output length" if r.model.max_context else "the limit"
            note = f"Never: one node holds any input length up to {limit:,} tokens ({why})."
        else:
            note = (
                f"Never: one node holds any concurrency up to {limit:,} requests, because the engine caps "
                "its running batch; past the card's max concurrency the rest wait in the queue."
            )
        return Answer(key, question, None, note, check, short="never")
    _, res = _codes(r, **{name: np.array([found, max(found - 1, 1)])})
    check = {
        **{f"{k}_at": v for k, v in _memory_check(res, "replica", 0).items()},
        **{f"{k}_below": v for k, v in _memory_check(res, "replica", 1).items()},
    }
    tag = weakest(*check.values())
    value = Q(float(found), unit, tag, f"search on single-node memory vs HBM ({label})")
    if found == 1:
        return Answer(
            key,
            question,
            value,
            f"Forced already at {label} 1: the weights alone need more than one node, so shard experts "
            "across nodes (EP).",
            check,
        )
    return Answer(
        key,
        question,
        value,
        f"One node holds it up to {label} {found - 1:,}; from {_plural(found, unit[:-1])} on, experts must "
        "be sharded across nodes (EP).",
        check,
    )


def capacity_nodes(r: Resolved) -> Answer:
    question = "Node count below which capacity forces EP (single-node replicas cannot hold the load)"
    limit = LIMITS["nodes"]

    def pred(nodes: np.ndarray) -> np.ndarray:
        return _codes(r, nodes=nodes)[0] != "capacity"

    found = first_true(pred, 1, limit)
    if found is None:
        _, res = _codes(r, nodes=np.array([1]))
        check = _memory_check(res, "replica", 0)
        return Answer(
            "capacity_nodes",
            question,
            None,
            f"Forced at every node count up to {limit:,}: a single-node replica needs "
            f"{check['memory_gb_per_gpu'].scalar:,.0f} GB per GPU against "
            f"{check['usable_gb'].scalar:,.0f} GB usable, so shard experts across nodes (EP).",
            check,
            short="always",
        )
    _, res = _codes(r, nodes=np.array([found, max(found - 1, 1)]))
    check = {
        **{f"{k}_at": v for k, v in _memory_check(res, "replica", 0).items()},
        **{f"{k}_below": v for k, v in _memory_check(res, "replica", 1).items()},
    }
    value = Q(float(found), "nodes", weakest(*check.values()), "search on single-node replica memory")
    note = (
        "Never forced: one node holds this load, so single-node replicas work at any node count."
        if found == 1
        else f"Below {_plural(found, 'node')} each replica carries too many sequences; "
        f"from {_plural(found, 'node')} on, single-node replicas fit."
    )
    return Answer("capacity_nodes", question, value, note, check)


def ep_nodes(r: Resolved) -> Answer:
    question = "Fewest nodes on which the DeepEP arm fits in HBM"
    limit = LIMITS["nodes"]

    def pred(nodes: np.ndarray) -> np.ndarray:
        return np.broadcast_to(np.asarray(model(r, nodes=nodes).arms["deepep"].fits_memory), nodes.shape)

    found = first_true(pred, 1, limit)
    if found is None:
        return Answer(
            "ep_nodes",
            question,
            None,
            f"Does not fit on any node count up to {limit:,}: pick a smaller model or more HBM per GPU.",
            short="never",
        )
    res = model(r, nodes=np.array([found]))
    check = _memory_check(res, "deepep", 0)
    value = Q(float(found), "nodes", weakest(*check.values()), "search on DeepEP arm memory per GPU")
    world = found * r.gpus_per_node
    note = (
        f"DeepEP fits from {_plural(found, 'node')}: {check['memory_gb_per_gpu'].scalar:,.1f} GB per GPU "
        f"of {check['usable_gb'].scalar:,.1f} GB usable."
    )
    if r.model.experts % world:
        note += (
            f" {r.model.experts} experts do not split evenly over EP{world}: "
            "pick a node count that divides them."
        )
    return Answer("ep_nodes", question, value, note, check)


# (d) where the transport stops being issue-bound --------------------------------------------

_NA = "not applicable"


def comms_proxy(r: Resolved) -> Answer:
    t = r.transport
    question = "EP_NUM_COMMS beyond which the host proxy stops being issue-bound"
    if not (t.host_proxied and t.comms_sensitive):
        why = (
            "is GPU-initiated (no host proxy)"
            if not t.host_proxied
            else "has a proxy that ignores EP_NUM_COMMS"
        )
        return Answer("comms_proxy", question, None, f"Not applicable: {t.name} {why}.", short=_NA)
    if r.scenario.nodes <= 1:
        return Answer(
            "comms_proxy", question, None, "Not applicable: one node, no scale-out proxy.", short=_NA
        )
    if r.scenario.cuda_graphs:
        return Answer(
            "comms_proxy",
            question,
            None,
            "Not applicable under CUDA graphs: no proxied host cost is charged.",
            short=_NA,
        )
    fit = table_for(r).engine(r.engine.name, False)
    lane, fixed = fit.proxy_lane_us, fit.proxy_fixed_us
    check = {"proxy_lane_us": lane, "proxy_fixed_us": fixed}
    if fixed.scalar <= 0:
        return Answer(
            "comms_proxy",
            question,
            None,
            f"Never up to EP_NUM_COMMS={LIMITS['comms']}: the {r.engine.name} fit puts the whole proxy cost "
            "in the part EP_NUM_COMMS divides, so every added comm still shortens the step.",
            check,
            short="never",
        )
    k = (lane / fixed).as_("comms", f"proxy_lane_us / proxy_fixed_us ({r.engine.name} fit)")
    check = {**check, "solution": k}
    whole = math.ceil(k.scalar)  # the first whole setting at which lane / K <= fixed
    if whole > LIMITS["comms"]:
        note = (
            f"Never up to EP_NUM_COMMS={LIMITS['comms']}: the part more comms divide stays the larger, "
            "so every added comm still shortens the proxy's step."
        )
        return Answer("comms_proxy", question, None, note, check, short="never")
    if k.scalar <= 1:
        note = (
            f"Not issue-bound at any setting: even at EP_NUM_COMMS=1 the part more comms divide "
            f"({lane.scalar:,.0f} µs per layer) is below the fixed part ({fixed.scalar:,.0f} µs), so "
            f"EP_NUM_COMMS barely moves the proxy's step (now {r.scenario.comms})."
        )
        return Answer("comms_proxy", question, None, note, check, short="never issue-bound")
    value = Q(float(whole), "comms", k.tag, f"{k.source}, rounded up to a whole setting")
    note = (
        f"From EP_NUM_COMMS={whole} ({k.scalar:,.1f} rounded up) the fixed {fixed.scalar:,.0f} µs per layer "
        f"outweighs the {lane.scalar:,.0f} µs / K that more comms divide, so more comms than that barely "
        f"help (now {r.scenario.comms})."
    )
    return Answer("comms_proxy", question, value, note, check)


def comms_bandwidth(r: Resolved) -> Answer:
    t, inst = r.transport, r.instance
    question = "EP_NUM_COMMS beyond which more comms add no scale-out bandwidth"
    if not t.comms_sensitive:
        return Answer(
            "comms_bandwidth",
            question,
            None,
            f"Not applicable: {t.name}'s bandwidth does not depend on EP_NUM_COMMS.",
            short=_NA,
        )
    if r.scenario.nodes <= 1:
        return Answer(
            "comms_bandwidth", question, None, "Not applicable: one node, no scale-out traffic.", short=_NA
        )
    assert t.bw_k1_gb_s is not None and t.bw_comms_exponent is not None
    line = inst.net_gb_s_per_gpu(r.gpus_per_node)
    k1 = Q.derived(t.bw_k1_gb_s, "GB/s", t.bw_source)
    k = Q(
        float((line.scalar / k1.scalar) ** (1.0 / t.bw_comms_exponent)),
        "comms",
        weakest(line, k1),
        f"(line rate / k1)^(1/{t.bw_comms_exponent:g}): the measured curve reaches {line.scalar:,.1f} GB/s",
    )
    bw = scaleout_bw(t, inst, r.gpus_per_node, k.scalar)
    check = {"line_gb_s": line, "bandwidth_at": _at(bw), "solution": k}
    whole = math.ceil(k.scalar)  # the first whole setting at which the curve has reached line rate
    if whole > LIMITS["comms"]:
        note = (
            f"Never up to EP_NUM_COMMS={LIMITS['comms']}: the measured curve stays below the "
            f"{line.scalar:,.1f} GB/s line rate, so more comms keep adding bandwidth."
        )
        return Answer("comms_bandwidth", question, None, note, check, short="never")
    value = Q(float(whole), "comms", k.tag, f"{k.source}; rounded up to a whole setting")
    note = (
        f"From EP_NUM_COMMS={whole} ({k.scalar:,.1f} rounded up) the measured curve k1 × K^"
        f"{t.bw_comms_exponent:g} reaches the {line.scalar:,.1f} GB/s per-GPU line rate; more comms add "
        f"no bandwidth (now {r.scenario.comms})."
    )
    return Answer("comms_bandwidth", question, value, note, check)


def _kernel_pair(r: Resolved, qps: np.ndarray) -> tuple[dict[str, Q], dict[str, Q]]:
    """The kernel at these QP counts, and the same kernel with a free issue path."""
    s, t, inst = r.scenario, r.transport, r.instance
    world = s.nodes * r.gpus_per_node
    tokens = np.asarray(layout(r, "deepep").seqs_per_rank, dtype=float)
    shape = KernelShape(tokens, r.model.hidden, r.model.topk, r.model.experts, "fp8")
    k = table_for(r).kernel_constants(t.name, inst.name)
    real = kernel_us(t, inst, r.gpus_per_node, world, shape, s.comms, qps, k)
    zero = Q.derived(0.0, "us", "issue path taken as free")
    free = kernel_us(
        t,
        inst,
        r.gpus_per_node,
        world,
        shape,
        s.comms,
        qps,
        replace(k, beta_dispatch_us=zero, beta_combine_us=zero),
    )
    return real, free


def issue_bound(r: Resolved, qps: np.ndarray) -> np.ndarray:
    """True where either direction's issue term is the largest of the kernel's three pipes."""
    real, free = _kernel_pair(r, qps)
    out = np.zeros(np.shape(qps), dtype=bool)
    for d in ("dispatch", "combine"):
        out |= np.asarray(real[d].value) > np.asarray(free[d].value) * (1.0 + 1e-9)
    return out


def qps_kernel(r: Resolved) -> Answer:
    t = r.transport
    question = "EP_EFA_MAX_QPS beyond which the kernel stops being issue-bound"
    if not t.comms_sensitive:
        return Answer(
            "qps_kernel",
            question,
            None,
            f"Not applicable: the QP cap does not enter {t.name}'s issue model.",
            short=_NA,
        )
    if r.scenario.nodes * r.gpus_per_node <= r.gpus_per_node:
        return Answer(
            "qps_kernel", question, None, "Not applicable: one node, no scale-out issue path.", short=_NA
        )
    top = float(t.reference.qps)
    if bool(issue_bound(r, np.array([top]))[0]):
        real, free = _kernel_pair(r, np.array([top]))
        return Answer(
            "qps_kernel",
            question,
            None,
            "Issue-bound at every QP count the model distinguishes: the lanes saturate at "
            f"{t.reference.qps} QPs (the reference's setting), so posting work requests sets the kernel "
            f"time throughout (now EP_EFA_MAX_QPS={r.scenario.max_qps}).",
            {"kernel_us": _at(real["total"]), "issue_free_us": _at(free["total"])},
            short="always issue-bound",
        )
    if not bool(issue_bound(r, np.array([1.0]))[0]):
        return Answer(
            "qps_kernel",
            question,
            None,
            "Not issue-bound even at 1 QP at this shape: the QP cap does not set the kernel time.",
            short="never issue-bound",
        )
    lo, hi = 1.0, top
    for _ in range(5):  # each pass cuts the bracket 64 ways: 64^5 >> the precision we print
        cand = np.linspace(lo, hi, 65)
        bound = issue_bound(r, cand)
        j = int(np.argmin(bound))  # first point no longer issue-bound
        lo, hi = float(cand[j - 1]), float(cand[j])
    real, free = _kernel_pair(r, np.array([hi, 0.8 * hi]))
    tag = weakest(real["total"], free["total"])
    whole = math.ceil(hi)  # the first whole QP count past the crossing
    value = Q(
        float(whole),
        "QPs",
        tag,
        "bisection: kernel issue term vs wire / NVLink time (physics/deepep.py); rounded up",
    )
    check = {
        "kernel_us_at": _at(real["total"], 0),
        "issue_free_us_at": _at(free["total"], 0),
        "kernel_us_below": _at(real["total"], 1),
        "issue_free_us_below": _at(free["total"], 1),
        "solution": Q(hi, "QPs", tag, "bisection, before rounding"),
    }
    note = (
        f"From EP_EFA_MAX_QPS={whole} ({hi:.1f} rounded up) the wire or NVLink, not posting work requests, "
        f"sets the kernel time; below it the issue path is the bottleneck (now {r.scenario.max_qps})."
    )
    return Answer("qps_kernel", question, value, note, check)


# All of them ---------------------------------------------------------------------------------


def breakeven(scenario: Scenario | None = None, /, **fields: Any) -> list[Answer]:
    """Every break-even answer for a scenario (keyword fields on top of the defaults)."""
    if scenario is None:
        scenario = Scenario(**fields)
    elif fields:
        scenario = scenario.model_copy(update=fields)
    r = resolve(scenario)
    return [
        kernel_tie(r),
        concurrency_cross(r, win=False),
        concurrency_cross(r, win=True),
        capacity_field(r, "isl"),
        capacity_field(r, "concurrency"),
        capacity_nodes(r),
        ep_nodes(r),
        comms_proxy(r),
        comms_bandwidth(r),
        qps_kernel(r),
    ]
