"""One scan of the plan's space: families resolved, rows evaluated, flags per row, cells patched.

`scan()` is what `run_plan` runs for the node range asked (and again beyond it, when nothing
meets the targets, to see whether more nodes would). It leaves the figures in `plan_space`'s
rows (`PlanRows`) and the columns `plan_select` chooses from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...base.errors import CalcError
from ...catalog.hardware import PRICE_KIND_WORDS, PRICE_KINDS, load_instances
from ...catalog.measured import load_cells
from ...estimate.cells import ROLE_PRIORITY, measured_cell_for
from ...estimate.compute import compute
from ...physics.layout import layout
from ...question.fields import DEFAULTS
from ...question.scenario import Scenario, resolve
from . import select as sel
from .disagg import PlanDisagg, plan_disagg
from .evidence import anchored
from .rate import RateSolution, solve
from .request import PlanRequest
from .space import ARMS, Family, Search, dtypes_for, make_passes

Progress = Callable[[int, int], None]


class Meter:
    """Counts vectorised passes for a progress bar; the total grows as the plan learns its size."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress, self.done, self.total = progress, 0, 0

    def expect(self, passes: int) -> None:
        self.total += passes

    def tick(self) -> None:
        self.done += 1
        self.total = max(self.total, self.done)
        if self.progress is not None:
            self.progress(self.done, self.total)


def families_for(req: PlanRequest) -> list[Family]:
    """Instance x engine x weight dtype, each with the price it is costed at (None: none known)."""
    model = req.spec()
    prices = dict(req.prices)
    out: list[Family] = []
    instances = load_instances()
    for name in req.instances:
        inst = instances[name]
        given = name in prices
        price = prices[name] if given else inst.price_per_hour
        kind = "given" if given else (inst.price_kind if price is not None else None)
        for engine in req.engines:
            for dtype in dtypes_for(model):
                out.append(Family(len(out), inst, engine, dtype, price, given, kind))
    return out


def ranked_kinds(req: PlanRequest) -> tuple[str, ...]:
    """The price kinds the plan ranks together: those the user asked (`--price-kinds`), else
    like with like: on-demand when any instance searched has an on-demand price, else the one
    kind there is (Capacity Block, then quote). A price the user typed is always ranked."""
    if req.price_kinds:
        return req.price_kinds
    instances = load_instances()
    given = dict(req.prices)
    present = {instances[n].price_kind for n in req.instances if n not in given} - {None}
    for kind in PRICE_KINDS:
        if kind in present:
            return (kind,)
    return ()


def kind_reason(kind: str, ranked: tuple[str, ...]) -> str:
    """Why a row priced as `kind` is searched but not ranked."""
    words = " or ".join(PRICE_KIND_WORDS[k] for k in ranked) or "the ranked kind"
    word = PRICE_KIND_WORDS[kind]
    priced = word if kind == "given" else f"{'an' if word[0] in 'aeiou' else 'a'} {word} price"
    return f"{priced}, not ranked with {words} (--price-kinds all)"


@dataclass
class Scan:
    """The evaluated rows of one node range, with the columns selection works on."""

    search: Search
    families: list[Family]
    rows: dict[str, np.ndarray]
    cols: sel.Columns
    rate: RateSolution | None
    skip_reason: np.ndarray  # object array: "" or why the row is not compared


def _block_flags(
    search: Search, measured_only: bool, ranked: tuple[str, ...] = PRICE_KINDS
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: anchored by measured references, routed experts split evenly, reason skipped."""
    n = search.size
    anch = np.zeros(n, dtype=bool)
    split = np.ones(n, dtype=bool)
    reason = np.full(n, "", dtype=object)
    for p in search.passes:
        for b in p.blocks:
            s = slice(b.start, b.start + b.rows)
            fam = b.family
            multi = bool(b.nodes[0] > 1) if b.arm == "deepep" else True
            flags = [
                anchored(fam.instance.name, fam.engine, g, b.arm, b.transport, 2 if multi else 1)
                for g in (False, True)
            ]
            anch[s] = np.where(b.graphs, flags[1], flags[0])
            if b.arm != "tp":  # evaluate.py: experts must divide evenly over the EP ranks
                rv = p.resolved.vary(nodes=b.nodes, comms=b.comms, cuda_graphs=b.graphs)
                shard = np.broadcast_to(np.asarray(layout(rv, b.arm).expert_shard, dtype=float), (b.rows,))
                experts = p.resolved.model.experts
                split[s] = (experts >= shard) & (np.mod(experts, shard) == 0)
            priced = _price_reason(fam, ranked)
            if priced:
                reason[s] = priced
            elif measured_only:
                reason[s] = np.where(anch[s], "", "outside the measured evidence (--measured-only)")
    return anch, split, reason


def _price_reason(fam: Family, ranked: tuple[str, ...]) -> str:
    """Why a family's rows are not ranked on price ("" when they are): no price, or a kind
    of price the plan does not mix with the ones it ranks."""
    if fam.price is None:
        return f"no price for {fam.instance.name} (give --price-per-hour {fam.instance.name}=P)"
    if fam.price_kind not in (*ranked, "given"):
        return kind_reason(str(fam.price_kind), ranked)
    return ""


RATE_PASSES = 4  # ladder, two refinements, final (plan_rate): what a rate plan usually takes


def scan(
    req: PlanRequest, nodes_from: int, nodes_to: int, meter: Meter | None = None, splits: bool = True
) -> Scan:
    """Evaluate every row between two node counts, at the plan's load (`splits`: the xPyD
    splits too, where the request allows them)."""
    meter = meter or Meter(None)
    families = families_for(req)
    fixed = {} if req.max_batch is None else {"max_batch": req.max_batch}
    search = Search(
        make_passes(req.model, req.isl, req.osl, families, nodes_from, nodes_to, fixed, req.specs())
    )
    meter.expect(len(search.passes) * (1 if req.request_rate is None else RATE_PASSES))
    tick = meter.tick
    if search.size == 0:
        raise CalcError(
            f"nothing to search on {', '.join(req.instances)}: no DeepEP transport is listed there",
            field="--instances",
        )
    anch, split, reason = _block_flags(search, req.measured_only, ranked_kinds(req))
    rate = None
    if req.request_rate is not None:
        rate = solve(search, req.request_rate, req.osl, tick)
    else:
        search.evaluate(float(req.concurrency), tick)
    rows = search.row_arrays()
    _patch_measured_cells(req, search, families, rows, rate)
    if req.layouts == "disaggregated":
        reason = np.where(reason == "", "aggregated layouts left out (--layouts disaggregated)", reason)
    search.families = families
    extra = plan_disagg(req, families, nodes_from, nodes_to, fixed) if splits else None
    if extra is not None:
        meter.tick()
        anch, split, reason = _append_disagg(req, search, rows, extra, anch, split, reason)
    v = search.rows.values
    n = search.size + (0 if search.disagg is None else search.disagg.size)
    cols = sel.Columns(
        per_user=v["per_user_tok_s"],
        usd_per_mtok=v["usd_per_mtok"],
        ttft_ms=v["ttft_ms"],
        usd_per_hour=rows["nodes"] * rows["price"],
        aggregate_per_node=v["aggregate_tok_s"] / rows["nodes"],
        memory_gb=v["memory_gb_per_gpu"],
        usable_gb=search.rows.usable_gb,
        fits=search.rows.fits,
        split=split,
        sustainable=np.ones(n, dtype=bool) if rate is None else rate.sustainable,
        max_rate=np.full(n, np.inf) if rate is None else rate.max_rate_per_s,
        compared=reason == "",
        nodes=rows["nodes"],
        arm=rows["arm"],
        anchored=anch,
    )
    return Scan(search, families, rows, cols, rate, reason)


# size: the scan's columns, extended in step with the disaggregated rows (each must grow together)
def _append_disagg(
    req: PlanRequest,
    search: Search,
    rows: dict[str, np.ndarray],
    d: PlanDisagg,
    anch: np.ndarray,
    split: np.ndarray,
    reason: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Put the disaggregated rows after the aggregated ones: the `PlanRows` columns, the rows'
    categorical columns and the flags (never anchored: no measured reference pins a split's
    kernels and serving at once; `--measured-only` leaves them out)."""
    t = search.rows
    n = d.size
    for m in t.values:
        t.values[m] = np.concatenate([t.values[m], d.values[m]])
        t.tags[m] = np.concatenate([t.tags[m], d.tags[m]])
        t.low[m] = np.concatenate([t.low[m], np.full(n, np.nan)])
        t.high[m] = np.concatenate([t.high[m], np.full(n, np.nan)])
    t.feasible = np.concatenate([t.feasible, d.feasible])  # type: ignore[list-item]
    t.fits = np.concatenate([t.fits, d.fits])  # type: ignore[list-item]
    t.usable_gb = np.concatenate([t.usable_gb, d.usable_gb])  # type: ignore[list-item]
    t.concurrency = np.concatenate([t.concurrency, np.full(n, float(req.concurrency))])  # type: ignore[list-item]
    fams = search.families
    price = np.array([np.nan if f.price is None else f.price for f in fams])[d.family]
    rows["arm"] = np.concatenate([rows["arm"], np.full(n, ARMS.index("disagg"), dtype=np.int8)])
    rows["family"] = np.concatenate([rows["family"], d.family.astype(np.int32)])
    rows["price"] = np.concatenate([rows["price"], price])
    rows["nodes"] = np.concatenate([rows["nodes"], d.prefill_nodes + d.decode_nodes])
    rows["graphs"] = np.concatenate([rows["graphs"], d.dec["graphs"].astype(float)])
    rows["comms"] = np.concatenate([rows["comms"], d.comms])
    search.disagg = d
    ranked = ranked_kinds(req)
    priced = np.array([_price_reason(f, ranked) for f in fams], dtype=object)[d.family]
    more = np.where(
        priced != "", priced, "outside the measured evidence (--measured-only)" if req.measured_only else ""
    ).astype(object)
    return (
        np.concatenate([anch, np.zeros(n, dtype=bool)]),
        np.concatenate([split, np.ones(n, dtype=bool)]),
        np.concatenate([reason, more]),
    )


def config_of(req: PlanRequest, search: Search, rows: dict[str, np.ndarray], i: int) -> dict[str, Any]:
    """The scenario of row i, in `evaluate`'s field names (feed it to `Scenario(**config)`)."""
    if search.disagg is not None and i >= search.size:
        return search.disagg.config(req, search.families, i - search.size)
    b = search.block_of(i)
    fam = b.family
    conc = search.rows.concurrency
    return {
        "model": req.model,
        "instance": fam.instance.name,
        "nodes": int(rows["nodes"][i]),
        "engine": fam.engine,
        "cuda_graphs": bool(rows["graphs"][i]),
        "transport": b.transport,
        "alternative": b.alternative,
        "comms": int(rows["comms"][i]),
        "max_qps": DEFAULTS["max_qps"],
        "concurrency": int(conc[i]),  # type: ignore[index]
        "isl": req.isl,
        "osl": req.osl,
        "weight_dtype": fam.weight_dtype,
        "slo_tok_s": req.slo_tok_s,
        "ttft_ms": req.ttft_ms,
        "price_per_hour": fam.price if fam.price_given else None,
        "max_batch": req.max_batch,
    }


def _patch_measured_cells(
    req: PlanRequest, search: Search, families: list[Family], rows: dict[str, np.ndarray], rate: Any
) -> None:
    """Where a row is exactly a measured cell, put evaluate()'s figures (the measurement) in it.

    The vectorised model never substitutes cells; `evaluate()` does. Only a handful of rows
    can match (same model, ISL, OSL, concurrency, cluster and engine as a published run), so
    they are found by their numbers first and confirmed by `measured_cell_for`.
    """
    key = req.model.strip().lower()
    cells = [
        c
        for c in load_cells().values()
        if c.role in ROLE_PRIORITY and c.model == key and c.isl == req.isl and c.osl == req.osl
    ]
    if not cells:
        return
    t = search.rows
    fam_inst = np.array([f.instance.name for f in families], dtype=object)[rows["family"]]
    fam_eng = np.array([f.engine for f in families], dtype=object)[rows["family"]]
    for cell in cells:
        hit = (
            (rows["nodes"] == cell.nodes)
            & (rows["graphs"] == cell.cuda_graphs)
            & (t.concurrency == cell.concurrency)
            & (fam_inst == cell.instance)
            & (fam_eng == cell.engine)
            & np.isin(rows["arm"], [ARMS.index("deepep"), ARMS.index("allgather")])
        )
        for i in np.flatnonzero(hit):
            config = config_of(req, search, rows, int(i))
            arm = ARMS[int(rows["arm"][i])]
            r = resolve(Scenario(**config), req.specs())
            if measured_cell_for(r, arm) is None:
                continue
            a = compute(r).arms[arm]
            for m in t.values:
                q = getattr(a, m)
                t.values[m][i] = float(q.value)
                t.tags[m][i] = int(q.tag)
                t.low[m][i] = np.nan if q.low is None else float(q.low)
                t.high[m][i] = np.nan if q.high is None else float(q.high)
