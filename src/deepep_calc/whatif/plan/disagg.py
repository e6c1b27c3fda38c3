"""The planner's disaggregated rows: xPyD splits of P + D <= the node budget, on the vectorised path.

For each family (instance x engine x weight dtype, priced), each side is evaluated once over
every node count and layout the aggregated search knows (the same passes: arm x transport x
graph mode x EP_NUM_COMMS, `space.family_passes`), through the disaggregated sides of
`estimate/disagg_sides.py` at the plan's concurrency:

- prefill rows: one prompt's prefill, the capacity with every lane full, memory;
- decode rows: the decode step with no prefill mixed in, the running limit, memory.

A prefill row is kept unless another of the same node count and the same KV holders beats it on
both capacity (higher) and prefill time (lower): such a row can never make a cheaper deployment
meet a target the other misses (a higher capacity and a shorter prefill give a throughput at
least as high and a TTFT at least as short, queueing included). Every decode row that fits is
kept (a slower decode step lengthens the cycle but, queueing, can shorten TTFT). Then every kept
prefill row is paired with every decode row of every split, for each RDMA KV transport the
engine can use (a TCP path is never faster), all as NumPy arrays through `disagg_sides.pairing`,
the very function the scalar `evaluate` uses; cost comes from `physics/serving.py`.

Rows whose two sides would need different EP_NUM_COMMS are not formed: a scenario has one.
Request-rate plans search the aggregated layouts only.

Why one module: the side rows, the Pareto cut and the pairing are one search whose arrays
are indexed by each other; apart, every step would have to re-explain those indices.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...base.quantity import Q
from ...catalog.kv_transports import engine_kv, kv_transports_for
from ...catalog.models import ModelSpec
from ...catalog.transports import load_transports
from ...estimate.arms import prompt_ceiling_ms
from ...estimate.disagg_sides import (
    decode_arm,
    decode_figures,
    pairing,
    prefill_arm,
    prefill_figures,
)
from ...estimate.result import table_for
from ...physics.serving import usd_per_mtok
from ...question.fields import DEFAULTS
from ...question.scenario import resolve
from .space import ARMS, Family, base_scenario, family_passes, network_transports

METRICS = ("per_user_tok_s", "aggregate_tok_s", "ttft_ms", "usd_per_mtok", "memory_gb_per_gpu", "step_ms")


@dataclass
class SideRows:
    """One side of one family: every (node count, layout) row, with its figures."""

    nodes: np.ndarray
    arm: np.ndarray  # ARMS index
    transport: np.ndarray  # object: DeepEP transport name of the row's pass
    graphs: np.ndarray
    comms: np.ndarray
    sensitive: np.ndarray  # EP_NUM_COMMS changes this row (DeepEP over the NCCL-GIN proxy, across nodes)
    figures: dict[str, Any]  # prefill_figures / decode_figures, flattened to rows

    @property
    def size(self) -> int:
        return int(self.nodes.size)


def _flat(value: Any, n: int) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    return np.full(n, float(arr)) if arr.ndim == 0 else np.broadcast_to(arr, (n,)).copy()


def _flat_q(q: Q, n: int) -> Q:
    return Q(_flat(q.value, n), q.unit, q.tag, q.source)


def _side_figures(figs: dict[str, Any], n: int) -> dict[str, Any]:
    out = {}
    for k, v in figs.items():
        out[k] = _flat_q(v, n) if type(v) is Q else _flat(v, n)
    return out


def _take(figs: dict[str, Any], idx: np.ndarray) -> dict[str, Any]:
    out = {}
    for k, v in figs.items():
        if type(v) is Q:
            out[k] = Q(v.value[idx], v.unit, v.tag, v.source)
        else:
            out[k] = v[idx]
    return out


def _concat(parts: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in parts[0]:
        vals = [p[k] for p in parts]
        if type(vals[0]) is Q:
            out[k] = Q(
                np.concatenate([v.value for v in vals]),
                vals[0].unit,
                min(v.tag for v in vals),
                vals[0].source,
            )
        else:
            out[k] = np.concatenate(vals)
    return out


# size: the plan's workload (model, ISL, OSL, fixed fields, models), a family, its side, node limit, load
def side_rows(
    model: str,
    isl: int,
    osl: int,
    fam: Family,
    role: str,
    max_nodes: int,
    concurrency: float,
    fixed: Any,
    models: Mapping[str, ModelSpec] | None = None,
) -> SideRows | None:
    """Every layout of one side over node counts 1 .. max_nodes, at the plan's concurrency
    (`models`: the in-memory specs `model` may name, `PlanRequest.specs()`)."""
    passes = family_passes(model, isl, osl, fam, 1, max_nodes, 0, fixed, models)
    parts: list[dict[str, Any]] = []
    meta: dict[str, list[np.ndarray]] = {
        k: [] for k in ("nodes", "arm", "transport", "graphs", "comms", "sensitive")
    }
    known = load_transports()
    for p in passes:
        blocks = [b for b in p.blocks if b.rows]
        if not blocks:
            continue
        table = table_for(p.resolved)
        # the pass's whole grid in one vectorised call per arm (its blocks share layout and
        # device time through the memo, as the aggregated search's passes do)
        rv = p.resolved.vary(
            nodes=p.nodes, cuda_graphs=p.graphs, comms=p.comms, concurrency=np.full(p.nodes.size, concurrency)
        )
        rv = replace(rv, disaggregated=role == "decode")
        memo: dict[Any, Any] = {}
        for b in blocks:
            if role == "prefill":
                figs = prefill_figures(prefill_arm(rv, b.arm, table, memo))
            else:
                figs = decode_figures(decode_arm(rv, b.arm, table, memo))
            parts.append(_take(_side_figures(figs, p.nodes.size), b.index))
            meta["nodes"].append(b.nodes)
            meta["arm"].append(np.full(b.rows, ARMS.index(b.arm), dtype=np.int8))
            meta["transport"].append(np.full(b.rows, b.transport, dtype=object))
            meta["graphs"].append(b.graphs.astype(bool))
            meta["comms"].append(b.comms)
            sensitive = b.arm == "deepep" and known[b.transport].comms_sensitive
            meta["sensitive"].append((b.nodes > 1) & sensitive)
    if not parts:
        return None
    cat = {k: np.concatenate(v) for k, v in meta.items()}
    return SideRows(
        cat["nodes"],
        cat["arm"],
        cat["transport"],
        cat["graphs"],
        cat["comms"],
        cat["sensitive"],
        _concat(parts),
    )


def _pareto_prefill(side: SideRows) -> np.ndarray:
    """Indices of prefill rows not beaten on both capacity and prefill time by a row of the same
    node count and KV holders (rows that cannot run are dropped)."""
    f = side.figures
    ok = np.asarray(f["ok"], dtype=bool)
    cap = f["capacity"].value
    t = f["prefill_ms"].value
    keep = []
    key = np.stack([side.nodes, f["holders"], f["kv_shard"]], axis=1)
    for group in np.unique(key[ok], axis=0):
        rows = np.flatnonzero(ok & np.all(key == group, axis=1))
        order = rows[np.lexsort((-cap[rows], t[rows]))]  # fastest first, ties: most capacity
        best = -np.inf
        for i in order:
            if cap[i] > best:
                keep.append(i)
                best = cap[i]
    return np.asarray(sorted(keep), dtype=np.int64)


@dataclass
class PlanDisagg:
    """What the scan appends: per-row arrays of the disaggregated search, and their configs."""

    family: np.ndarray
    prefill_nodes: np.ndarray
    decode_nodes: np.ndarray
    pre: dict[str, np.ndarray]  # arm, transport, graphs, comms
    dec: dict[str, np.ndarray]
    kv: np.ndarray
    comms: np.ndarray
    values: dict[str, np.ndarray]
    tags: dict[str, np.ndarray]
    fits: np.ndarray
    feasible: np.ndarray
    usable_gb: np.ndarray

    @property
    def size(self) -> int:
        return int(self.family.size)

    def config(self, req: Any, families: list[Family], i: int) -> dict[str, Any]:
        """The scenario of row i, in `evaluate`'s field names."""
        fam = families[int(self.family[i])]
        pa, da = ARMS[int(self.pre["arm"][i])], ARMS[int(self.dec["arm"][i])]
        p, d = int(self.prefill_nodes[i]), int(self.decode_nodes[i])
        home = self.pre["home"][i]
        return {
            "model": req.model,
            "instance": fam.instance.name,
            "nodes": p + d,
            "engine": fam.engine,
            "cuda_graphs": bool(self.dec["graphs"][i]),
            "transport": home,
            "alternative": "allgather",
            "comms": int(self.comms[i]),
            "max_qps": DEFAULTS["max_qps"],
            "concurrency": int(req.concurrency),
            "isl": req.isl,
            "osl": req.osl,
            "weight_dtype": fam.weight_dtype,
            "slo_tok_s": req.slo_tok_s,
            "ttft_ms": req.ttft_ms,
            "price_per_hour": fam.price if fam.price_given else None,
            "max_batch": req.max_batch,
            "prefill_nodes": p,
            "decode_nodes": d,
            "kv_transport": str(self.kv[i]),
            "prefill_arm": pa,
            "decode_arm": da,
            "prefill_transport": str(self.pre["transport"][i]) if pa == "deepep" else None,
            "decode_transport": str(self.dec["transport"][i]) if da == "deepep" else None,
            "prefill_cuda_graphs": bool(self.pre["graphs"][i]),
            "decode_cuda_graphs": bool(self.dec["graphs"][i]),
        }


@dataclass(frozen=True)
class _Paired:
    """The (prefill row, decode row) pairs one family keeps, resolved as P + D-node scenarios."""

    r: Any
    home: str  # the aggregated twin's transport
    p_nodes: np.ndarray
    d_nodes: np.ndarray
    pf: dict[str, Any]  # the prefill rows' figures, one per pair
    df: dict[str, Any]  # the decode rows' figures, one per pair


def _family_rows(req: Any, fam: Family, nodes_from: int, nodes_to: int, fixed: Any) -> dict[str, Any] | None:
    """The disaggregated rows of one family (None: no split runs there)."""
    kvs = kv_transports_for(fam.engine, fam.instance.name, rdma_only=True)
    if not kvs or nodes_to < 2:
        return None
    conc = float(req.concurrency)
    specs = req.specs()
    pre = side_rows(req.model, req.isl, req.osl, fam, "prefill", nodes_to - 1, conc, fixed, specs)
    dec = side_rows(req.model, req.isl, req.osl, fam, "decode", nodes_to - 1, conc, fixed, specs)
    if pre is None or dec is None:
        return None
    kept = _kept_pairs(req, pre, dec, nodes_from, nodes_to)
    if kept is None:
        return None
    ip, idd, comms = kept
    pair = _paired(req, fam, (pre, ip), (dec, idd), fixed)
    n = ip.size
    shared = {
        "family": np.full(n, fam.index),
        "prefill_nodes": pair.p_nodes,
        "decode_nodes": pair.d_nodes,
        "pre_arm": pre.arm[ip],
        "pre_transport": pre.transport[ip],
        "pre_graphs": pre.graphs[ip],
        "dec_arm": dec.arm[idd],
        "dec_transport": dec.transport[idd],
        "dec_graphs": dec.graphs[idd],
        "home": np.full(n, pair.home, dtype=object),
    }
    ekv = engine_kv(fam.engine)
    out: dict[str, list[Any]] = {}
    for t in kvs:
        figures, ok, feasible = _kv_figures(pair, ekv, t, req.ttft_ms)
        part = {
            **shared,
            "kv": np.full(n, t.name, dtype=object),
            "comms": comms,
            "fits": ok,
            "feasible": feasible,
            "usable_gb": np.full(n, _usable(pair.r)),
        }
        for m, q in figures.items():
            part[f"value:{m}"] = _flat(q.value, n)
            part[f"tag:{m}"] = np.full(n, int(q.tag), dtype=np.int8)
        for k, v in part.items():
            out.setdefault(k, []).append(v)
    return {k: np.concatenate(v) for k, v in out.items()}


def _kept_pairs(
    req: Any, pre: SideRows, dec: SideRows, nodes_from: int, nodes_to: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Every (Pareto prefill row, runnable decode row) whose node counts add up within the range
    and whose sides agree on EP_NUM_COMMS, with that one value per pair (None: no such pair)."""
    keep_p = _pareto_prefill(pre)
    keep_d = np.flatnonzero(np.asarray(dec.figures["ok"], dtype=bool))
    if keep_p.size == 0 or keep_d.size == 0:
        return None
    ip, idd = np.meshgrid(keep_p, keep_d, indexing="ij")
    ip, idd = ip.reshape(-1), idd.reshape(-1)
    total = pre.nodes[ip] + dec.nodes[idd]
    sens_p, sens_d = pre.sensitive[ip], dec.sensitive[idd]
    comms_p, comms_d = pre.comms[ip], dec.comms[idd]
    default_k = float(DEFAULTS["comms"])
    # one EP_NUM_COMMS per scenario: a side it does not change runs the default only
    same = (
        np.where(sens_p, True, comms_p == default_k)
        & np.where(sens_d, True, comms_d == default_k)
        & (~(sens_p & sens_d) | (comms_p == comms_d))
    )
    keep = (total >= nodes_from) & (total <= nodes_to) & same
    if req.disagg is not None:
        keep &= (pre.nodes[ip] == req.disagg[0]) & (dec.nodes[idd] == req.disagg[1])
    if not keep.any():
        return None
    comms = np.where(sens_d, comms_d, np.where(sens_p, comms_p, default_k))[keep]
    return ip[keep], idd[keep], comms


def _paired(
    req: Any,
    fam: Family,
    pre: tuple[SideRows, np.ndarray],
    dec: tuple[SideRows, np.ndarray],
    fixed: Any,
) -> _Paired:
    """The kept pairs' figures and their scenario, resolved once over all of them."""
    (p_side, ip), (d_side, idd) = pre, dec
    pf, df = _take(p_side.figures, ip), _take(d_side.figures, idd)
    p_nodes, d_nodes = p_side.nodes[ip], d_side.nodes[idd]
    home = network_transports(fam.instance.name)[0].name
    base = base_scenario(
        req.model, req.isl, req.osl, fam, transport=home, alternative="allgather", **(fixed or {})
    )
    r = resolve(base.copy(nodes=2), req.specs())
    r = r.vary(nodes=p_nodes + d_nodes, concurrency=np.full(ip.size, float(req.concurrency)))
    return _Paired(r, home, p_nodes, d_nodes, pf, df)


def _kv_figures(pair: _Paired, ekv: Any, t: Any, ttft_ms: Any) -> tuple[dict[str, Q], np.ndarray, np.ndarray]:
    """The pairs' serving figures over one KV transport, whether both sides fit, and whether
    each also meets the TTFT ceiling."""
    pf, df = pair.pf, pair.df
    _, dep = pairing(pair.r, ekv, t, pair.p_nodes, pair.d_nodes, pf, df)
    cost = usd_per_mtok(pair.r, dep.aggregate_tok_s)
    mem = np.maximum(pf["memory_gb"].value, df["memory_gb"].value)
    ok = np.asarray(pf["ok"], bool) & np.asarray(df["ok"], bool)
    feasible = ok & (np.asarray(dep.ttft_ms.value) <= prompt_ceiling_ms(ttft_ms))
    figures = {
        "per_user_tok_s": dep.per_user_tok_s,
        "aggregate_tok_s": dep.aggregate_tok_s,
        "ttft_ms": dep.ttft_ms,
        "usd_per_mtok": cost,
        "memory_gb_per_gpu": Q(mem, "GB", min(pf["memory_gb"].tag, df["memory_gb"].tag), ""),
        "step_ms": df["step_ms"],
    }
    return figures, ok, feasible


def _usable(r: Any) -> float:
    return float(r.instance.hbm().value) * float(r.assumptions.const("hbm_usable_fraction").value)


def plan_disagg(
    req: Any, families: list[Family], nodes_from: int, nodes_to: int, fixed: Any
) -> PlanDisagg | None:
    """Every disaggregated row of the plan between two node counts (P + D), or None."""
    if req.request_rate is not None or req.layouts == "aggregated" or nodes_to < 2:
        return None
    parts = [
        rows
        for fam in families
        if fam.price is not None
        and (rows := _family_rows(req, fam, max(nodes_from, 2), nodes_to, fixed)) is not None
    ]
    if not parts:
        return None
    cat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return PlanDisagg(
        family=cat["family"].astype(np.int64),
        prefill_nodes=cat["prefill_nodes"],
        decode_nodes=cat["decode_nodes"],
        pre={
            "arm": cat["pre_arm"],
            "transport": cat["pre_transport"],
            "graphs": cat["pre_graphs"],
            "home": cat["home"],
        },
        dec={"arm": cat["dec_arm"], "transport": cat["dec_transport"], "graphs": cat["dec_graphs"]},
        kv=cat["kv"],
        comms=cat["comms"],
        values={m: cat[f"value:{m}"] for m in METRICS},
        tags={m: cat[f"tag:{m}"] for m in METRICS},
        fits=cat["fits"],
        feasible=cat["feasible"],
        usable_gb=cat["usable_gb"],
    )
