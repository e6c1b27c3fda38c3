"""`deepep-calc plan`: what to deploy for a model and its traffic, and whether DeepEP is in it.

The verdict answers for one fixed cluster; the plan searches the clusters. For a model, ISL /
OSL and a load (concurrency, or a request rate solved by Little's law in `plan_rate`), it
evaluates every instance type x node count x engine x graph mode x arm (each DeepEP
transport the instance offers, allgather, tensor parallel, single-node replicas) x
EP_NUM_COMMS x weight dtype through the vectorised model (`plan_space`), and returns:

- the cheapest configuration ($ per million output tokens) that fits memory and meets every
  target, re-evaluated with the scalar model so its figures are `evaluate()`'s own;
- the Pareto frontier of per-user tok/s against $/Mtok, each point with its configuration;
- when nothing meets the targets, the closest misses and the single change that would.

Cost is the arm's own `usd_per_mtok`: nodes x price per node-hour / output tokens per hour.
An instance without a price cannot be costed: its rows are skipped (with the reason) unless
a price is given. `plan_evidence` says which configurations rest on measured references.

This module is the core: no rich, no web. Faces call `run_plan()` and print `Plan.to_json()`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import numpy as np

from . import plan_select as sel
from .catalog.engines import load_engines
from .catalog.hardware import load_instances
from .catalog.measured import load_cells
from .catalog.model_catalog import resolve_model
from .catalog.transports import load_transports
from .errors import CalcError, InputError
from .evaluate import ROLE_PRIORITY, ArmResult, compute, measured_cell_for
from .explain import engine_flags
from .physics.layout import layout
from .plan_evidence import anchored, definition, mode_name, notes_for
from .plan_rate import RateSolution, solve
from .plan_space import ARMS, COMMS, Family, Search, dtypes_for, make_passes
from .quantity import Q, Tag
from .scenario import DEFAULTS, LIMITS, Scenario, resolve
from .verdict import ARM_LABELS

DEFAULT_MAX_NODES = 16
MAX_RATE = 1_000_000.0  # requests / s: beyond this the question is not a serving deployment
EXTEND_NODES_TO = 64  # where the "more nodes" change looks when nothing meets the targets
POINT_FIGURES = ("per_user_tok_s", "aggregate_tok_s", "ttft_ms", "usd_per_mtok", "memory_gb_per_gpu")

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


def default_instances() -> tuple[str, ...]:
    """The AWS EFA instance types (the reference InfiniBand nodes have no AWS price)."""
    return tuple(n for n, i in load_instances().items() if i.fabric == "efa")


def default_engines() -> tuple[str, ...]:
    return tuple(load_engines())


# The request ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanRequest:
    """A checked plan question. Build it with `plan_request()`, which refuses bad input."""

    model: str
    isl: int
    osl: int
    concurrency: int | None = None
    request_rate: float | None = None
    slo_tok_s: float | None = None
    ttft_ms: float | None = None
    budget_per_hour: float | None = None
    instances: tuple[str, ...] = ()
    max_nodes: int = DEFAULT_MAX_NODES
    engines: tuple[str, ...] = ()
    measured_only: bool = False
    prices: tuple[tuple[str, float], ...] = ()  # --price-per-hour, per instance

    def targets_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "isl": self.isl,
            "osl": self.osl,
            "concurrency": self.concurrency,
            "request_rate": self.request_rate,
            "slo_tok_s": self.slo_tok_s,
            "ttft_ms": self.ttft_ms,
            "budget_per_hour": self.budget_per_hour,
        }

    def space_json(self) -> dict[str, Any]:
        return {
            "instances": list(self.instances),
            "engines": list(self.engines),
            "max_nodes": self.max_nodes,
            "comms": list(COMMS),
            "measured_only": self.measured_only,
            "prices": dict(self.prices),
        }


def _whole(flag: str, value: Any, limit: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise InputError(flag, value, "a whole number greater than 0")
    if value <= 0 or value != int(value):
        raise InputError(flag, value, "a whole number greater than 0")
    if value > limit:
        raise InputError(flag, value, f"at most {limit:,} (outside what the model covers)")
    return int(value)


def _positive(flag: str, value: Any, limit: float = 1e12) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(flag, value, "a number greater than 0")
    if not (value > 0 and math.isfinite(value)):
        raise InputError(flag, value, "a finite number greater than 0")
    if value > limit:
        raise InputError(flag, value, f"at most {limit:,g}")
    return float(value)


def _names(
    flag: str, raw: str | Iterable[str] | None, known: Iterable[str], default: tuple[str, ...]
) -> tuple[str, ...]:
    if raw is None:
        return default
    parts = [p.strip().lower() for p in (raw.split(",") if isinstance(raw, str) else raw)]
    if not parts or any(not p for p in parts):
        raise InputError(
            flag, raw if isinstance(raw, str) else ",".join(raw), "a comma list with no empty items"
        )
    names = list(known)
    for p in parts:
        if p not in names:
            raise InputError(flag, p, f"names from {', '.join(names)}")
    return tuple(dict.fromkeys(parts))


def _prices(
    raw: str | float | Mapping[str, float] | None, instances: tuple[str, ...]
) -> tuple[tuple[str, float], ...]:
    """`--price-per-hour`: one price for every instance searched, or `NAME=P[,NAME=P]`."""
    if raw is None:
        return ()
    flag = "--price-per-hour"
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        price = _positive(flag, raw)
        return tuple((name, float(price)) for name in instances)  # type: ignore[arg-type]
    pairs: list[tuple[str, Any]]
    if isinstance(raw, Mapping):
        pairs = list(raw.items())
    elif isinstance(raw, str):
        text = raw.strip()
        try:
            return _prices(float(text), instances)
        except ValueError:
            pass
        pairs = []
        for part in text.split(","):
            name, sep, value = part.partition("=")
            if not sep:
                raise InputError(flag, part.strip(), "a price, or NAME=PRICE pairs separated by commas")
            pairs.append((name, value))
    else:
        raise InputError(flag, raw, "a price, or NAME=PRICE pairs separated by commas")
    known = list(load_instances())
    out: dict[str, float] = {}
    for name, value in pairs:
        key = str(name).strip().lower()
        if key not in known:
            raise InputError(flag, key, f"instance names from {', '.join(known)}")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise InputError(flag, f"{key}={value}", "a number of $ per node-hour after the =") from None
        out[key] = float(_positive(flag, number))  # type: ignore[arg-type]
    return tuple(out.items())


def plan_request(
    *,
    model: str = DEFAULTS["model"],
    isl: Any = DEFAULTS["isl"],
    osl: Any = DEFAULTS["osl"],
    concurrency: Any = None,
    request_rate: Any = None,
    slo_tok_s: Any = None,
    ttft_ms: Any = None,
    budget_per_hour: Any = None,
    instances: str | Iterable[str] | None = None,
    max_nodes: Any = DEFAULT_MAX_NODES,
    engines: str | Iterable[str] | None = None,
    measured_only: bool = False,
    price_per_hour: str | float | Mapping[str, float] | None = None,
) -> PlanRequest:
    """Check every input of a plan (the CLI's flags, the API's body) before any work."""
    if concurrency is None and request_rate is None:
        raise CalcError(
            "give the load: --concurrency C (requests in flight) or --request-rate R (per second)",
            field="--concurrency",
        )
    if concurrency is not None and request_rate is not None:
        raise CalcError("give --concurrency or --request-rate, not both", field="--request-rate")
    conc = None if concurrency is None else _whole("--concurrency", concurrency, LIMITS["concurrency"])
    rate = None if request_rate is None else _positive("--request-rate", request_rate, MAX_RATE)
    insts = _names("--instances", instances, load_instances(), default_instances())
    engs = _names("--engines", engines, load_engines(), default_engines())
    resolve_model(model)  # an unknown preset or a bad config.json fails here, naming --model
    return PlanRequest(
        model=model,
        isl=_whole("--isl", isl, LIMITS["isl"]),
        osl=_whole("--osl", osl, LIMITS["osl"]),
        concurrency=conc,
        request_rate=rate,
        slo_tok_s=_positive("--slo-tok-s", slo_tok_s),
        ttft_ms=_positive("--ttft-ms", ttft_ms),
        budget_per_hour=_positive("--budget-per-hour", budget_per_hour),
        instances=insts,
        max_nodes=_whole("--max-nodes", max_nodes, LIMITS["nodes"]),
        engines=engs,
        measured_only=bool(measured_only),
        prices=_prices(price_per_hour, insts),
    )


# One scan of the space ------------------------------------------------------------------------


def families_for(req: PlanRequest) -> list[Family]:
    model = resolve_model(req.model)
    prices = dict(req.prices)
    out: list[Family] = []
    instances = load_instances()
    for name in req.instances:
        inst = instances[name]
        given = name in prices
        price = prices[name] if given else inst.price_per_hour
        for engine in req.engines:
            for dtype in dtypes_for(model):
                out.append(Family(len(out), inst, engine, dtype, price, given))
    return out


@dataclass
class Scan:
    """The evaluated rows of one node range, with the columns selection works on."""

    search: Search
    families: list[Family]
    rows: dict[str, np.ndarray]
    cols: sel.Columns
    rate: RateSolution | None
    skip_reason: np.ndarray  # object array: "" or why the row is not compared


def _block_flags(search: Search, measured_only: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
            if fam.price is None:
                reason[s] = f"no price for {fam.instance.name} (give --price-per-hour {fam.instance.name}=P)"
            elif measured_only:
                reason[s] = np.where(anch[s], "", "outside the measured evidence (--measured-only)")
    return anch, split, reason


RATE_PASSES = 4  # ladder, two refinements, final (plan_rate): what a rate plan usually takes


def scan(req: PlanRequest, nodes_from: int, nodes_to: int, meter: Meter | None = None) -> Scan:
    """Evaluate every row between two node counts, at the plan's load."""
    meter = meter or Meter(None)
    families = families_for(req)
    search = Search(make_passes(req.model, req.isl, req.osl, families, nodes_from, nodes_to))
    meter.expect(len(search.passes) * (1 if req.request_rate is None else RATE_PASSES))
    tick = meter.tick
    if search.size == 0:
        raise CalcError(
            f"nothing to search on {', '.join(req.instances)}: no DeepEP transport is listed there",
            field="--instances",
        )
    anch, split, reason = _block_flags(search, req.measured_only)
    rate = None
    if req.request_rate is not None:
        rate = solve(search, req.request_rate, req.osl, tick)
    else:
        search.evaluate(float(req.concurrency), tick)
    rows = search.row_arrays()
    _patch_measured_cells(req, search, families, rows, rate)
    v = search.table.values
    n = search.size
    cols = sel.Columns(
        per_user=v["per_user_tok_s"],
        usd_per_mtok=v["usd_per_mtok"],
        ttft_ms=v["ttft_ms"],
        usd_per_hour=rows["nodes"] * rows["price"],
        aggregate_per_node=v["aggregate_tok_s"] / rows["nodes"],
        memory_gb=v["memory_gb_per_gpu"],
        usable_gb=search.table.usable_gb,
        fits=search.table.fits,
        split=split,
        sustainable=np.ones(n, dtype=bool) if rate is None else rate.sustainable,
        max_rate=np.full(n, np.inf) if rate is None else rate.max_rate_per_s,
        compared=reason == "",
        nodes=rows["nodes"],
        arm=rows["arm"],
        anchored=anch,
    )
    return Scan(search, families, rows, cols, rate, reason)


def config_of(req: PlanRequest, search: Search, rows: dict[str, np.ndarray], i: int) -> dict[str, Any]:
    """The scenario of row i, in `evaluate`'s field names (feed it to `Scenario(**config)`)."""
    b = search.block_of(i)
    fam = b.family
    conc = search.table.concurrency
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
    t = search.table
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
            r = resolve(Scenario(**config))
            if measured_cell_for(r, arm) is None:
                continue
            a = compute(r).arms[arm]
            for m in t.values:
                q = getattr(a, m)
                t.values[m][i] = float(q.value)
                t.tags[m][i] = int(q.tag)
                t.low[m][i] = np.nan if q.low is None else float(q.low)
                t.high[m][i] = np.nan if q.high is None else float(q.high)


# Points -------------------------------------------------------------------------------------


@dataclass
class Point:
    """One (configuration, arm) the plan reports, with `evaluate`'s own figures."""

    config: dict[str, Any]
    arm: str
    figures: dict[str, Q]
    meets_targets: bool
    usd_per_hour: Q
    aggregate_per_node: Q
    evidence: str  # "anchored" or "assumed" (see plan_evidence)
    notes: list[str]
    label: str
    misses: list[str] = field(default_factory=list)
    change: str = ""
    sustainable: bool | None = None
    max_request_rate: Q | None = None
    measured_cell: str | None = None
    flags: dict[str, Any] = field(default_factory=dict)

    @property
    def card_query(self) -> str:
        """The web page's query string for this configuration (only fields off the defaults)."""
        params = {}
        for k, v in self.config.items():
            if v is None:
                continue
            shown = str(v).lower() if isinstance(v, bool) else str(v)
            default = DEFAULTS.get(k)
            if (
                default is not None
                and (str(default).lower() if isinstance(default, bool) else str(default)) == shown
            ):
                continue
            params[k] = shown
        return urlencode(params)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"config": dict(self.config), "arm": self.arm}
        for name in POINT_FIGURES:
            out[name] = self.figures[name].to_json()
        out["meets_targets"] = self.meets_targets
        out.update(
            label=self.label,
            usd_per_hour=self.usd_per_hour.to_json(),
            aggregate_tok_s_per_node=self.aggregate_per_node.to_json(),
            evidence=self.evidence,
            notes=list(self.notes),
            misses=list(self.misses),
            change=self.change,
            sustainable=self.sustainable,
            max_request_rate=None if self.max_request_rate is None else self.max_request_rate.to_json(),
            measured_cell=self.measured_cell,
            card_url="/?" + self.card_query,
            flags=self.flags,
        )
        return out


def arm_text(arm: str, transport: str, comms: int, nodes: int) -> str:
    if arm != "deepep":
        return ARM_LABELS[arm]
    t = load_transports()[transport]
    extra = f" K={comms}" if t.comms_sensitive and nodes > 1 else ""
    return f"DeepEP {transport}{extra}"


def label_of(config: dict[str, Any], arm: str) -> str:
    c = config
    dtype = f" {c['weight_dtype']}" if c.get("weight_dtype") else ""
    head = f"{c['nodes']}x {c['instance']} {c['engine']} {mode_name(c['cuda_graphs'])}{dtype}"
    return f"{head}, {arm_text(arm, c['transport'], c['comms'], c['nodes'])}"


def run_flags(result: Any, arm: str) -> dict[str, Any]:
    """The engine arguments and environment that run this arm of this configuration.

    `explain.engine_flags` writes EP_NUM_COMMS as at least 8 (its advice); a plan states the
    value it searched and chose.
    """
    flags = engine_flags(result, arm)
    if "EP_NUM_COMMS" in flags["env"]:
        flags["env"]["EP_NUM_COMMS"] = str(result.scenario.comms)
    return flags


def _no_steady_state(rate: float) -> Q:
    return Q.assumed(
        float("nan"), "ms", f"no steady state: {rate:g} req/s is more than this configuration serves"
    )


class Builder:
    """Turns rows into Points, re-evaluating each with the scalar model once."""

    def __init__(self, req: PlanRequest, scan_: Scan, ok: np.ndarray, miss: dict[str, np.ndarray]) -> None:
        self.req, self.scan, self.ok, self.miss = req, scan_, ok, miss
        self.cache: dict[int, Point] = {}

    def point(self, i: int) -> Point:
        if i in self.cache:
            return self.cache[i]
        req, s = self.req, self.scan
        config = config_of(req, s.search, s.rows, i)
        arm = ARMS[int(s.rows["arm"][i])]
        r = resolve(Scenario(**config))
        result = compute(r)
        a: ArmResult = result.arms[arm]
        figures = {name: getattr(a, name) for name in POINT_FIGURES}
        sustainable = None
        max_rate = None
        notes = notes_for(
            config["instance"],
            config["engine"],
            config["cuda_graphs"],
            arm,
            config["transport"],
            config["nodes"],
        )
        evidence = "assumed" if notes else "anchored"
        if s.rate is not None:
            sustainable = bool(s.rate.sustainable[i])
            max_rate = Q(
                float(s.rate.max_rate_per_s[i]),
                "req/s",
                figures["aggregate_tok_s"].tag,
                "requests served per second at the batch limit: running / service time",
            )
            if not sustainable:
                figures["ttft_ms"] = _no_steady_state(req.request_rate)  # type: ignore[arg-type]
                notes.append(
                    f"cannot sustain {req.request_rate:g} req/s: at its batch limit it serves "
                    f"{s.rate.max_rate_per_s[i]:,.2f} req/s, so the queue grows"
                )
        t = load_transports().get(config["transport"])
        if arm == "deepep" and config["nodes"] > 1 and t is not None and t.requires:
            notes.append(f"{t.name} requires {t.requires}")
        price = r.instance.price(config["price_per_hour"])
        notes.append(
            f"price: {price.source}" if config["price_per_hour"] is None else "price: the one you gave"
        )
        if a.measured_cell:
            notes.append(f"figures are the measured cell {a.measured_cell}")
        per_hour = (price * float(config["nodes"])).as_("$/h", f"nodes x price per node-hour; {price.source}")
        per_node = (a.aggregate_tok_s / float(config["nodes"])).as_("tok/s/node", "aggregate / nodes")
        p = Point(
            config=config,
            arm=arm,
            figures=figures,
            meets_targets=bool(self.ok[i]),
            usd_per_hour=per_hour,
            aggregate_per_node=per_node,
            evidence=evidence,
            notes=notes,
            label=label_of(config, arm),
            misses=self.miss_text(i),
            sustainable=sustainable,
            max_request_rate=max_rate,
            measured_cell=a.measured_cell,
            flags=run_flags(result, arm),
        )
        self.cache[i] = p
        return p

    def light(self, i: int) -> Point:
        """A Point from the vectorised row alone (for chart clouds: no scalar re-evaluation)."""
        if i in self.cache:
            return self.cache[i]
        req, s = self.req, self.scan
        t = s.search.table
        config = config_of(req, s.search, s.rows, i)
        arm = ARMS[int(s.rows["arm"][i])]
        units = {
            "per_user_tok_s": "tok/s",
            "aggregate_tok_s": "tok/s",
            "ttft_ms": "ms",
            "usd_per_mtok": "$/Mtok",
            "memory_gb_per_gpu": "GB",
        }
        figures = {
            m: Q(float(t.values[m][i]), u, Tag(int(t.tags[m][i])), "vectorised model")
            for m, u in units.items()
        }
        nodes = float(config["nodes"])
        return Point(
            config=config,
            arm=arm,
            figures=figures,
            meets_targets=bool(self.ok[i]),
            usd_per_hour=Q.assumed(float(s.cols.usd_per_hour[i]), "$/h", "nodes x price per node-hour"),
            aggregate_per_node=Q(
                float(t.values["aggregate_tok_s"][i]) / nodes,
                "tok/s/node",
                figures["aggregate_tok_s"].tag,
                "aggregate / nodes",
            ),
            evidence="anchored" if bool(s.cols.anchored[i]) else "assumed",
            notes=[],
            label=label_of(config, arm),
        )

    def miss_text(self, i: int) -> list[str]:
        req, c, m = self.req, self.scan.cols, self.miss
        out = []
        if m["memory"][i] > 0:
            out.append(f"needs {c.memory_gb[i]:,.1f} GB per GPU, {c.usable_gb[i]:,.1f} GB usable")
        if m["request_rate"][i] > 0:
            out.append(f"serves at most {c.max_rate[i]:,.2f} req/s of the {req.request_rate:g} asked")
        if m["slo_tok_s"][i] > 0:
            out.append(f"per-user {c.per_user[i]:,.1f} tok/s, below the {req.slo_tok_s:g} floor")
        if m["ttft_ms"][i] > 0:
            out.append(f"TTFT {c.ttft_ms[i]:,.0f} ms, above the {req.ttft_ms:g} ms ceiling")
        if np.isnan(c.usd_per_hour[i]):
            out.append(f"no price for {self.scan.search.block_of(i).family.instance.name}: cannot be costed")
        elif m["budget_per_hour"][i] > 0:
            out.append(f"costs {c.usd_per_hour[i]:,.2f} $/h, above the {req.budget_per_hour:g} $/h budget")
        return out


# The plan -------------------------------------------------------------------------------------


@dataclass
class Plan:
    request: PlanRequest
    searched: int
    skipped: int
    skipped_reasons: dict[str, int]
    best: Point | None
    frontier: list[Point]
    frontier_per_node: list[Point]
    nearest_misses: list[Point]
    changes: list[str]
    note: str
    seconds: float = 0.0  # wall time (not in the JSON: the CLI and the API print the same object)
    scan: Scan | None = field(default=None, repr=False)
    builder: Builder | None = field(default=None, repr=False)

    def cloud(self, count: int) -> list[Point]:
        """A sample of the other compared configurations, for a chart behind the frontier.

        Figures are the vectorised model's (no scalar re-evaluation, no measured-cell
        substitution: the printed points carry those), tagged with their pass's tag.
        """
        if self.scan is None or self.builder is None:
            return []
        c = self.scan.cols
        rows = np.flatnonzero(sel.valid(c) & c.fits & c.sustainable)
        shown = {id(p) for p in self.frontier}
        if rows.size > count:
            rows = rows[np.linspace(0, rows.size - 1, count).astype(np.int64)]
        out = []
        for i in rows:
            p = self.builder.light(int(i))
            if id(p) not in shown:
                out.append(p)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "targets": self.request.targets_json(),
            "searched": self.searched,
            "skipped": self.skipped,
            "best": None if self.best is None else self.best.to_json(),
            "frontier": [p.to_json() for p in self.frontier],
            "nearest_misses": [p.to_json() for p in self.nearest_misses],
            "note": self.note,
            "space": self.request.space_json(),
            "skipped_reasons": dict(self.skipped_reasons),
            "frontier_per_node": [p.to_json() for p in self.frontier_per_node],
            "changes": list(self.changes),
            "measured_only_rule": definition(),
        }


def goals(req: PlanRequest) -> sel.Goals:
    return sel.Goals(req.slo_tok_s, req.ttft_ms, req.budget_per_hour, req.request_rate)


def _fmt_target(name: str, value: float) -> str:
    if name == "slo_tok_s":
        return f"lower --slo-tok-s to {math.floor(value * 10) / 10:g}"
    if name == "ttft_ms":
        return f"raise --ttft-ms to {math.ceil(value):g}"
    if name == "budget_per_hour":
        return f"raise --budget-per-hour to {math.ceil(value * 100) / 100:g}"
    return f"lower --request-rate to {math.floor(value * 100) / 100:g}"


def plan_size(req: PlanRequest) -> int:
    """Work of a plan in units of one node count of one family at one load (for progress bars)."""
    families = len(req.instances) * len(req.engines) * len(dtypes_for(resolve_model(req.model)))
    return families * req.max_nodes * (1 if req.request_rate is None else RATE_PASSES)


def default_size(req: PlanRequest) -> int:
    """The size of the default plan (every EFA instance and engine, 1-16 nodes, a concurrency)."""
    families = len(default_instances()) * len(default_engines()) * len(dtypes_for(resolve_model(req.model)))
    return families * DEFAULT_MAX_NODES


def run_plan(req: PlanRequest, progress: Progress | None = None) -> Plan:
    """Search, choose and explain: the whole `deepep-calc plan`."""
    started = time.perf_counter()
    meter = Meter(progress)
    main = scan(req, 1, req.max_nodes, meter)
    c = main.cols
    miss = sel.shortfalls(c, goals(req))
    ok = sel.meets(c, miss)
    eligible = sel.valid(c) & c.fits & c.sustainable
    build = Builder(req, main, ok, miss)
    best_i = sel.best(c, ok)
    frontier = [build.point(int(i)) for i in sel.frontier(c, eligible)]
    per_node = [build.point(int(i)) for i in sel.frontier_per_node(c, eligible)]
    searched = int(np.count_nonzero(main.skip_reason == ""))
    reasons: dict[str, int] = {}
    for text, count in zip(
        *np.unique(main.skip_reason[main.skip_reason != ""], return_counts=True), strict=True
    ):
        reasons[str(text)] = int(count)
    if searched == 0:
        raise CalcError("nothing left to search: " + "; ".join(reasons), field="--instances")
    misses: list[Point] = []
    changes: list[str] = []
    best = None
    if best_i is not None:
        best = build.point(best_i)
        note = (
            f"Cheapest configuration meeting every target: {best.label}, "
            f"{best.figures['usd_per_mtok'].scalar:,.3f} $/Mtok [{best.figures['usd_per_mtok'].tag}] "
            f"({best.figures['per_user_tok_s'].scalar:,.1f} tok/s per user)."
        )
        if best.evidence == "assumed":
            note += " Its evidence is assumed: " + "; ".join(best.notes[:1]) + "."
    else:
        misses, changes = _misses(req, main, build, miss, meter)
        note = "Nothing in the search meets every target."
        if changes:
            note += " The smallest single change: " + changes[0] + "."
        elif misses:
            note += " No single change of a target, the node limit or the instance list meets them all."
    return Plan(
        req,
        searched,
        int(main.search.size - searched),
        reasons,
        best,
        frontier,
        per_node,
        misses,
        changes,
        note,
        time.perf_counter() - started,
        main,
        build,
    )


def _misses(
    req: PlanRequest, main: Scan, build: Builder, miss: dict[str, np.ndarray], meter: Meter
) -> tuple[list[Point], list[str]]:
    """The closest misses and the single changes that would meet every target, best first."""
    c = main.cols
    found: list[tuple[float, str, int | None]] = []
    for change, name, i, value in sel.relaxations(c, miss, goals(req)):
        found.append((change, _fmt_target(name, value), i))
    # Structural changes: more nodes, an instance that had no price, leaving --measured-only.
    if req.max_nodes < EXTEND_NODES_TO:
        upper = min(max(req.max_nodes * 4, req.max_nodes + 1), EXTEND_NODES_TO)
        more = scan(req, req.max_nodes + 1, upper, meter)
        m2 = sel.shortfalls(more.cols, goals(req))
        j = sel.best(more.cols, sel.meets(more.cols, m2))
        if j is not None:
            n = int(more.rows["nodes"][j])
            found.append((n / req.max_nodes - 1.0, f"raise --max-nodes to {n}", None))
    unpriced = ~c.compared & c.split & np.isfinite(c.per_user) & (main.rows["price"] != main.rows["price"])
    rest = unpriced.copy()
    for k, v in miss.items():
        if k != "budget_per_hour":
            rest &= v == 0
    if rest.any():
        j = int(np.flatnonzero(rest)[np.argmax(c.per_user[rest])])
        inst = config_of(req, main.search, main.rows, j)["instance"]
        found.append(
            (math.inf, f"give a price for {inst} (--price-per-hour {inst}=P): it meets the other targets", j)
        )
    if req.measured_only:
        outside = (
            np.array([r.startswith("outside") for r in main.skip_reason])
            & c.split
            & np.isfinite(c.usd_per_mtok)
        )
        for v in miss.values():
            outside &= v == 0
        if outside.any():
            j = int(np.flatnonzero(outside)[np.argmin(c.usd_per_mtok[outside])])
            found.append(
                (
                    math.inf,
                    "drop --measured-only (the configuration that then meets them rests on assumed evidence)",
                    j,
                )
            )
    found.sort(key=lambda f: f[0])
    chosen: list[int] = []
    for _, text, i in found:
        if i is None or i in chosen:
            continue
        build.point(i).change = text
        chosen.append(i)
    group = main.rows["family"].astype(np.int64) * len(ARMS) + main.rows["arm"]
    for i in sel.nearest(c, miss, group):
        if len(chosen) >= 5:
            break
        if i in chosen:
            continue
        p = build.point(i)
        if len(p.misses) == 1:
            p.change = _single_change_text(miss, c, i)
        chosen.append(i)
    return [build.point(i) for i in chosen], [text for _, text, _ in found]


def _single_change_text(miss: dict[str, np.ndarray], c: sel.Columns, i: int) -> str:
    """The one target change that this row, missing only that target, would need."""
    for name, value in (
        ("slo_tok_s", c.per_user[i]),
        ("ttft_ms", c.ttft_ms[i]),
        ("budget_per_hour", c.usd_per_hour[i]),
        ("request_rate", c.max_rate[i]),
    ):
        if miss[name][i] > 0:
            return _fmt_target(name, float(value))
    if miss["memory"][i] > 0:
        return "more nodes, or a larger-memory instance: it does not fit"
    return ""
