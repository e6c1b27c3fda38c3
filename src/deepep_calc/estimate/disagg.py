"""A disaggregated deployment's figures: each side's layout, the KV transfer, the whole.

`compute_disagg(r)` evaluates a scenario that asks for P prefill and D decode nodes
(`question/disagg.py`):

- the **prefill side** (P nodes): for each arm, the prefill of one prompt on one lane (what a
  request's first token waits for) and one forward with every lane busy on a full batch of
  prompts (what its capacity is), and its memory with those prompts' KV in flight;
- the **decode side** (D nodes): each arm's decode step with no prefill mixed in (the
  engine's decode server runs none), at the scenario's concurrency, and its memory;
- each side's arm is the one the scenario names, else the model's best for that side (the
  most requests per second: prefill capacity, or decode throughput at this load), among those
  that split the experts and fit;
- the **KV transfer** between them (`physics/kv_transfer.py`) and the **deployment**
  (`physics/disagg.py`): TTFT = queue + prefill + transfer + first decode step, TPOT from the
  decode side, the aggregate the slower side allows, the balance and the idle side.

Every modelled figure carries the band of its kind (step, TTFT, aggregate). Outside the range
of every disaggregated reference (same KV transport, instance, engine and split, ISL and
concurrency within theirs) it carries the wider of that band and the band the disaggregated
references themselves were missed by (`catalog/data/disagg_bands.toml`).

Values may be arrays over the numeric fields (concurrency, ISL, OSL: a sweep); a side's arm is
then chosen row by row. The node counts are the spec's: a what-if that moves `nodes` is one of
the aggregated arms only (`compute_with_disagg` leaves such a result without this part).

Why one module: the deployment, its bands outside the references' range and the best split of
an aggregated scenario's nodes are one evaluation of the same `DisaggResult`; each side's own
figures are already apart (`disagg_sides.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from ..base.arrays import floats, is_array, maximum, minimum, np
from ..base.quantity import Q, Tag
from ..catalog.kv_transports import get_kv_transport, load_limits
from ..fit.table import Table
from ..physics import disagg as phys
from ..physics import kv_transfer as kv
from ..physics.serving import usd_per_mtok
from ..question.disagg import DisaggSpec
from ..question.scenario import Resolved
from .arms import prompt_ceiling_ms
from .bands import banded
from .compute import compute
from .disagg_result import DisaggResult, SideResult
from .disagg_sides import (
    DecodeArm,
    PrefillArm,
    best_ranked,
    candidates,
    decode_arm,
    decode_figures,
    gather_values,
    pairing,
    pairing_rank,
    pick,
    prefill_arm,
    prefill_figures,
    side_resolved,
)
from .result import Result, table_for

# Bands and coverage -------------------------------------------------------------------------------


@cache
def _disagg_bands() -> dict[str, tuple[float, float]]:
    from ..catalog.kv_transports import load_disagg_bands

    return load_disagg_bands()


def covered(r: Resolved, spec: DisaggSpec) -> tuple[bool, str]:
    """Whether a compared disaggregated reference has this KV transport, instance, engine and
    split, with ISL and concurrency inside the range of those references."""
    from ..catalog.references import load_disagg_refs

    s = r.scenario
    refs = [
        x
        for x in load_disagg_refs().values()
        if x.use == "compare"
        and x.kv_transport == spec.kv.name
        and x.instance == r.instance.name
        and x.engine == r.engine.name
        and (x.prefill_nodes, x.decode_nodes) == (spec.prefill.nodes, spec.decode.nodes)
    ]
    if not refs:
        return False, (
            f"no disaggregated reference ran {spec.label} over {spec.kv.name} on {r.instance.name} "
            f"with {r.engine.name}: the wider band"
        )
    isl = (min(x.isl for x in refs), max(x.isl for x in refs))
    conc = (min(x.concurrency for x in refs), max(x.concurrency for x in refs))

    def within(v: Any, lo: float, hi: float) -> bool:
        a = np.asarray(v) if is_array(v) else v
        return bool(np.all((a >= lo) & (a <= hi))) if is_array(v) else lo <= a <= hi

    if within(s.isl, *isl) and within(s.concurrency, *conc):
        names = ", ".join(sorted({x.group for x in refs}))
        return True, f"inside the range of the disaggregated references ({names})"
    return False, (
        f"outside the disaggregated references' range (ISL {isl[0]:,}-{isl[1]:,}, concurrency "
        f"{conc[0]:,}-{conc[1]:,} for {spec.label} over {spec.kv.name}): the wider band"
    )


def _band(q: Q, table: Table, kind: str, inside: bool, inverse: bool = False) -> Q:
    """The figure with the band of its kind; outside the references, the wider of that and the
    disaggregated references' own."""
    out = banded(q, table, kind, inverse)
    if inside or q.tag == Tag.MEASURED:
        return out
    extra = _disagg_bands().get(kind)
    if extra is None:
        return out
    lo, hi = extra
    if inverse:
        lo, hi = 1.0 / hi, 1.0 / lo
    value = floats(q.value)
    wide_low, wide_high = value / hi, value / lo
    if out.banded:
        wide_low, wide_high = minimum(out.low, wide_low), maximum(out.high, wide_high)
    return q.with_band(wide_low, wide_high)


# The deployment ------------------------------------------------------------------------------------


def _side_arms(r: Resolved, spec: DisaggSpec, table: Table) -> tuple[list[PrefillArm], list[DecodeArm]]:
    rp = side_resolved(r, spec.prefill)
    rd = side_resolved(r, spec.decode)
    mp: dict[Any, Any] = {}
    md: dict[Any, Any] = {}
    pre = [prefill_arm(rp, a, table, mp) for a in candidates(spec.prefill)]
    dec = [decode_arm(rd, a, table, md) for a in candidates(spec.decode)]
    return pre, dec


@dataclass(frozen=True)
class _Pick:
    """One side's candidate arms, their figures, which one was chosen and its figures (row by
    row in a sweep): what that side's `SideResult` is made of."""

    arms: list[Any]  # PrefillArm or DecodeArm
    figures: list[dict[str, Any]]
    index: Any
    chosen: dict[str, Any]


def _chosen_index(values: list[float], k: Any) -> Any:
    """Which candidate of one side the chosen pairing `k` holds, as an int (per row in a sweep)."""
    index = gather_values(values, k)
    return index.astype(int) if is_array(index) else int(index)


def _pick(arms: list[Any], figures: list[dict[str, Any]], index: Any) -> _Pick:
    """A side's chosen candidate and its figures, its flags as bools."""
    chosen = {key: pick([f[key] for f in figures], index) for key in figures[0]}
    for key in ("ok", "fits", "splits"):
        chosen[key] = _flag(chosen[key])
    return _Pick(arms, figures, index, chosen)


def _deployment(deps: list[phys.Deployment], k: Any) -> phys.Deployment:
    """The chosen pairing's deployment figures (row by row in a sweep), its limit a count."""
    dep = phys.Deployment(
        **{
            name: pick([getattr(d, name) for d in deps], k)
            for name in (
                "cycle_ms",
                "throughput_req_s",
                "aggregate_tok_s",
                "queue_ms",
                "ttft_ms",
                "ttft_unqueued_ms",
                "per_user_tok_s",
            )
        },
        busy={name: pick([d.busy[name] for d in deps], k) for name in deps[0].busy},
        limit=pick([float(d.limit) if not is_array(d.limit) else d.limit for d in deps], k),
    )
    if not is_array(dep.limit):
        return replace(dep, limit=int(dep.limit))
    return replace(dep, limit=np.asarray(dep.limit).astype(int))


def _prefill_side(spec: DisaggSpec, p: _Pick, band: Callable[..., Q]) -> SideResult:
    """The prefill side as chosen: its prompt's latency (banded as TTFT) and its capacity."""
    pf = p.chosen
    return SideResult(
        "prefill",
        spec.prefill,
        tuple(a.arm for a in p.arms),
        p.index,
        [a.capacity_req_s for a in p.arms],
        [f["ok"] for f in p.figures],
        {
            "prefill_ms": band(pf["prefill_ms"], "ttft"),
            "busy_forward_ms": pf["busy_forward_ms"],
            "prompts_per_forward": pf["prompts"],
            "capacity_req_s": pf["capacity"],
        },
        pf["memory_gb"],
        pf["fits"],
        pf["splits"],
        pf["holders"],
        pf["kv_shard"],
    )


def _decode_side(spec: DisaggSpec, d: _Pick, band: Callable[..., Q]) -> SideResult:
    """The decode side as chosen: its step (banded as a step), running limit and capacity."""
    df = d.chosen
    return SideResult(
        "decode",
        spec.decode,
        tuple(a.arm for a in d.arms),
        d.index,
        [a.throughput_req_s for a in d.arms],
        [f["ok"] for f in d.figures],
        {
            "step_ms": band(df["step_ms"], "step"),
            "running_limit": df["running_limit"],
            "capacity_req_s": df["capacity"],
        },
        df["memory_gb"],
        df["fits"],
        df["splits"],
        df["holders"],
        df["kv_shard"],
    )


def _link_fields(link: dict[str, Any]) -> dict[str, Any]:
    """The chosen pairing's KV transfer figures under `DisaggResult`'s names."""
    return {
        "kv_bytes_per_request": link["request"],
        "block_bytes": link["block"],
        "node_pair_gb_s": link["pair"],
        "transfer_ms": link["transfer"],
        "exposed_ms": link["exposed"],
        "stream_units": link["units"],
        "link_capacity_req_s": link["link"],
    }


def _paired(
    r: Resolved, spec: DisaggSpec, pfs: list[dict[str, Any]], dfs: list[dict[str, Any]]
) -> tuple[list[tuple[int, int]], list[tuple[dict[str, Any], phys.Deployment]], Any]:
    """Every prefill arm with every decode arm, and the pairing the model rates best (per row)."""
    combos = [(i, j) for i in range(len(pfs)) for j in range(len(dfs))]
    pairs = [
        pairing(r, spec.engine_kv, spec.kv, spec.prefill.nodes, spec.decode.nodes, pfs[i], dfs[j])
        for i, j in combos
    ]
    ranks = [pairing_rank(r, pfs[i], dfs[j], dep) for (i, j), (_, dep) in zip(combos, pairs, strict=True)]
    return combos, pairs, best_ranked(ranks)


def _larger_memory(mem_p: Q, mem_d: Q) -> Q:
    """Memory per GPU of the deployment: the larger side's, at the weaker side's tag."""
    return Q(maximum(mem_p.value, mem_d.value), "GB", min(mem_p.tag, mem_d.tag), "the larger side's")


def compute_disagg(r: Resolved, table: Table | None = None) -> DisaggResult:
    """The disaggregated deployment the scenario asks for (`r.disagg` must be set)."""
    spec = r.disagg
    assert spec is not None, "compute_disagg needs a disaggregated scenario"
    table = table if table is not None else table_for(r)
    s = r.scenario
    pre, dec = _side_arms(r, spec, table)
    pfs = [prefill_figures(p) for p in pre]
    dfs = [decode_figures(d) for d in dec]
    combos, pairs, k = _paired(r, spec, pfs, dfs)
    p_pick = _pick(pre, pfs, _chosen_index([float(i) for i, _ in combos], k))
    d_pick = _pick(dec, dfs, _chosen_index([float(j) for _, j in combos], k))
    pf, df = p_pick.chosen, d_pick.chosen
    link = {key: pick([lk[key] for lk, _ in pairs], k) for key in pairs[0][0]}
    dep = _deployment([dep for _, dep in pairs], k)
    inside, note = covered(r, spec)

    def band(q: Q, kind: str, inverse: bool = False) -> Q:
        return _band(q, table, kind, inside, inverse)

    ttft = band(dep.ttft_ms, "ttft")
    answered = ttft.value <= prompt_ceiling_ms(s.ttft_ms)
    feasible = pf["ok"] & df["ok"] & answered
    prefill, decode = _prefill_side(spec, p_pick, band), _decode_side(spec, d_pick, band)
    scalar = not is_array(feasible)
    if scalar:
        prefill.why_not = _side_why(r, prefill)
        decode.why_not = _side_why(r, decode)
    result = DisaggResult(
        spec=spec,
        prefill=prefill,
        decode=decode,
        kv=spec.kv,
        **_link_fields(link),
        deployment=dep,
        ttft_ms=ttft,
        tpot_ms=band(df["step_ms"], "step"),
        per_user_tok_s=band(dep.per_user_tok_s, "step", inverse=True),
        aggregate_tok_s=band(dep.aggregate_tok_s, "aggregate"),
        usd_per_mtok=band(_cost(r, dep.aggregate_tok_s), "aggregate", inverse=True),
        memory_gb_per_gpu=_larger_memory(pf["memory_gb"], df["memory_gb"]),
        balance=phys.balanced_prefill_share(
            pf["capacity"], spec.prefill.nodes, df["capacity"], spec.decode.nodes
        ),
        feasible=bool(feasible) if scalar else feasible,
        why_not=_why_not(r, prefill, decode, ttft, bool(answered)) if scalar else "",
        inside_references=inside,
        evidence_note=note,
        load={"concurrency": s.concurrency, "isl": s.isl, "osl": s.osl},
    )
    if s.slo_tok_s is not None:
        result.meets_slo = result.per_user_tok_s.value >= s.slo_tok_s
    if s.ttft_ms is not None:
        result.meets_ttft = result.ttft_ms.value <= s.ttft_ms
    if scalar:
        _failure_modes(r, spec, result, pf, df)
    return result


def _flag(x: Any) -> Any:
    """A gathered flag as a bool (arrays of them as boolean arrays)."""
    return np.asarray(x, dtype=float) > 0.5 if is_array(x) else bool(x)


def _cost(r: Resolved, aggregate: Q) -> Q:
    """$/Mtok of the P + D nodes; infinite where nothing is served (a side that cannot run)."""
    if not is_array(aggregate.value) and not aggregate.value > 0:
        return Q(float("inf"), "$/Mtok", aggregate.tag, "nothing served: a side cannot run")
    with np.errstate(divide="ignore") if is_array(aggregate.value) else _nothing():
        return usd_per_mtok(r, aggregate)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _side_why(r: Resolved, side: SideResult) -> str:
    if not bool(side.splits):
        return f"{r.model.experts} experts do not split evenly over its {side.arm} layout"
    if not bool(side.fits):
        return f"does not fit in HBM ({side.memory_gb_per_gpu.scalar:,.1f} GB per GPU)"
    return ""


def _why_not(r: Resolved, pre: SideResult, dec: SideResult, ttft: Q, answered: bool) -> str:
    for side in (pre, dec):
        why = _side_why(r, side)
        if why:
            return (
                f"the {side.role} side ({side.nodes} node{'s' if side.nodes > 1 else ''}, {side.arm}) {why}"
            )
    if not answered:
        return f"first token after {ttft.scalar / 1000:,.1f} s: past the time a client waits"
    return ""


def _failure_modes(
    r: Resolved, spec: DisaggSpec, out: DisaggResult, pf: dict[str, Any], df: dict[str, Any]
) -> None:
    """The figures the failure-mode advisories quote: this deployment over TCP (what an RDMA
    KV transport silently falls back to) and the prompt tokens in flight against a known limit."""
    s = r.scenario
    if spec.kv.rdma:
        tcp = get_kv_transport("tcp")
        link, dep = pairing(r, spec.engine_kv, tcp, spec.prefill.nodes, spec.decode.nodes, pf, df)
        out.tcp_fallback = {
            "transfer_ms": link["exposed"],
            "ttft_ms": dep.ttft_ms,
            "aggregate_tok_s": dep.aggregate_tok_s,
        }
    tokens = kv.tokens_in_flight(s.isl, s.concurrency)
    out.in_flight_tokens = Q(tokens, "tokens", Tag.ASSUMED, "ISL x concurrency (every prompt's KV in flight)")
    for lim in load_limits().values():
        if spec.kv.name in lim.kv_transports and tokens >= lim.tokens_in_flight:
            out.load_limit = lim


# The entry point the faces use ------------------------------------------------------------------


def applies(r: Resolved) -> bool:
    """A disaggregated scenario whose node count is the spec's (a what-if on `nodes` is not)."""
    spec = r.disagg
    if spec is None:
        return False
    nodes = r.scenario.nodes
    return not is_array(nodes) and float(nodes) == float(spec.nodes)


def compute_with_disagg(r: Resolved, reuse: Result | None = None, table: Table | None = None) -> Result:
    """`compute` (the aggregated arms of the same nodes) plus the disaggregated deployment."""
    result = compute(r, reuse=reuse, table=table)
    if applies(r):
        result.disaggregated = compute_disagg(r, table)
    return result


# The same nodes, split ------------------------------------------------------------------------------


def split_counts(nodes: int) -> list[int]:
    """Prefill node counts a split of `nodes` tries: 1, a quarter, a third, half and all but one
    (the model's best sides on each); a few splits keep the verdict's line cheap."""
    if nodes < 2:
        return []
    picks = {1, nodes // 4, nodes // 3, nodes // 2, nodes - 1}
    return sorted(p for p in picks if 1 <= p <= nodes - 1)


def best_split(r: Resolved, table: Table | None = None) -> DisaggResult | None:
    """The best disaggregated split of an aggregated scenario's nodes (None: no split runs, or
    the engine has no KV transport there), each side's layout the model's best."""
    from ..base.errors import CalcError
    from ..question.disagg import resolve_disagg

    s = r.scenario
    if r.disagg is not None or not r.measured or s.nodes < 2:
        return None
    table = table if table is not None else table_for(r)
    best: tuple[Any, DisaggResult] | None = None
    for p in split_counts(int(s.nodes)):
        split = s.copy(prefill_nodes=p, decode_nodes=int(s.nodes) - p)
        try:
            spec = resolve_disagg(split, r.instance, r.engine, r.transport, r.assumptions)
        except CalcError:
            return None
        d = compute_disagg(replace(r, scenario=split, disagg=spec), table)
        meets = bool(d.feasible) and d.meets_slo is not False and d.meets_ttft is not False
        key = (meets, bool(d.feasible), d.aggregate_tok_s.scalar, -d.ttft_ms.scalar)
        if best is None or key > best[0]:
            best = (key, d)
    return None if best is None else best[1]
