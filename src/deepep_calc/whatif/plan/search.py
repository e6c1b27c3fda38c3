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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...base.errors import CalcError
from . import select as sel
from .card import reconcile
from .evidence import definition
from .point import Builder, Point
from .request import (
    DEFAULT_MAX_NODES,
    PlanRequest,
    default_engines,
    default_instances,
    plan_request,
)
from .scan import RATE_PASSES, Meter, Progress, Scan, config_of, ranked_kinds, scan
from .space import ARMS, dtypes_for

__all__ = [
    "Plan",
    "PlanRequest",
    "Point",
    "config_of",
    "default_engines",
    "default_instances",
    "default_size",
    "plan_request",
    "plan_size",
    "run_plan",
]

EXTEND_NODES_TO = 64  # where the "more nodes" change looks when nothing meets the targets


@dataclass
class Plan:
    """A plan's answer; `to_json()` is the `plan --json` contract (docs/plan.md)."""

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
            "price_kinds": self.price_kinds(),
        }

    def price_kinds(self) -> dict[str, Any]:
        """The kinds of price ranked together, and each searched instance's kind (None: no price)."""
        fams = self.scan.families if self.scan is not None else []
        return {
            "ranked": list(ranked_kinds(self.request)),
            "mixed_on_purpose": bool(self.request.price_kinds),
            "by_instance": {f.instance.name: f.price_kind for f in fams},
        }


def goals(req: PlanRequest) -> sel.Goals:
    """The targets selection compares against (the load's rate is one when it is given)."""
    return sel.Goals(req.slo_tok_s, req.ttft_ms, req.budget_per_hour, req.request_rate)


def _fmt_target(name: str, value: float) -> str:
    """A target change as a flag, rounded so the configuration that achieves it still meets it."""
    if name == "slo_tok_s":
        return f"lower --slo-tok-s to {math.floor(value * 10) / 10:g}"
    if name == "ttft_ms":
        return f"raise --ttft-ms to {math.ceil(value):g}"
    if name == "budget_per_hour":
        return f"raise --budget-per-hour to {math.ceil(value * 100) / 100:g}"
    return f"lower --request-rate to {math.floor(value * 100) / 100:g}"


def plan_size(req: PlanRequest) -> int:
    """Work of a plan in units of one node count of one family at one load (for progress bars)."""
    families = len(req.instances) * len(req.engines) * len(dtypes_for(req.spec()))
    return families * req.max_nodes * (1 if req.request_rate is None else RATE_PASSES)


def default_size(req: PlanRequest) -> int:
    """The size of the default plan (every EFA instance and engine, 1-16 nodes, a concurrency)."""
    families = len(default_instances()) * len(default_engines()) * len(dtypes_for(req.spec()))
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
    reasons = _skip_counts(main)
    if searched == 0:
        raise CalcError("nothing left to search: " + "; ".join(reasons), field="--instances")
    misses: list[Point] = []
    changes: list[str] = []
    best = None
    if best_i is not None:
        best, note = _best_and_note(req, main, build, best_i, ok)
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
        int(main.skip_reason.size - searched),
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


def _skip_counts(main: Scan) -> dict[str, int]:
    """How many rows each reason left out of the search."""
    reasons: dict[str, int] = {}
    for text, count in zip(
        *np.unique(main.skip_reason[main.skip_reason != ""], return_counts=True), strict=True
    ):
        reasons[str(text)] = int(count)
    return reasons


def _best_and_note(
    req: PlanRequest, main: Scan, build: Builder, cheapest: int, ok: np.ndarray
) -> tuple[Point, str]:
    """The chosen configuration (the card's rule may prefer another arm to the cheapest) and the
    plan's one-line note about it."""
    best_i = reconcile(main, build, cheapest, ok, req.measured_only)  # the card's choice there
    best = build.point(best_i)
    if best_i != cheapest:
        other = build.point(cheapest)
        best.chosen_over = other.label
        best.notes.append(
            f"chosen over {other.label} ({other.figures['usd_per_mtok'].scalar:,.3f} $/Mtok): on this "
            "cluster the verdict's rule, comparing like with like with a noise band, picks this arm"
        )
    lead = (
        "Chosen configuration meeting every target"
        if best.chosen_over
        else "Cheapest configuration meeting every target"
    )
    note = (
        f"{lead}: {best.label}, "
        f"{best.figures['usd_per_mtok'].scalar:,.3f} $/Mtok [{best.figures['usd_per_mtok'].tag}] "
        f"({best.figures['per_user_tok_s'].scalar:,.1f} tok/s per user)."
    )
    if best.evidence == "assumed":
        note += " Its evidence is assumed: " + "; ".join(best.notes[:1]) + "."
    return best, note


_Change = tuple[
    float, str, int | None
]  # (how large a change, what to do, the row it makes meet every target)


def _misses(
    req: PlanRequest, main: Scan, build: Builder, miss: dict[str, np.ndarray], meter: Meter
) -> tuple[list[Point], list[str]]:
    """The closest misses and the single changes that would meet every target, best first."""
    c = main.cols
    found: list[_Change] = []
    for change, name, i, value in sel.relaxations(c, miss, goals(req)):
        found.append((change, _fmt_target(name, value), i))
    # Structural changes: more nodes, an instance that had no price, leaving --measured-only.
    for structural in (
        _more_nodes(req, meter),
        _give_price(req, main, miss),
        _other_price_kinds(main, miss),
        _leave_measured_only(req, main, miss),
    ):
        if structural is not None:
            found.append(structural)
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


def _more_nodes(req: PlanRequest, meter: Meter) -> _Change | None:
    """The node limit that a further scan finds a configuration meeting every target within."""
    if req.max_nodes >= EXTEND_NODES_TO:
        return None
    upper = min(max(req.max_nodes * 4, req.max_nodes + 1), EXTEND_NODES_TO)
    # aggregated layouts only: splits of up to 64 nodes would multiply this scan's time
    more = scan(req, req.max_nodes + 1, upper, meter, splits=req.layouts == "disaggregated")
    m2 = sel.shortfalls(more.cols, goals(req))
    j = sel.best(more.cols, sel.meets(more.cols, m2))
    if j is None:
        return None
    n = int(more.rows["nodes"][j])
    return (n / req.max_nodes - 1.0, f"raise --max-nodes to {n}", None)


def _meets_all(rows: np.ndarray, miss: dict[str, np.ndarray], but: str | None = None) -> np.ndarray:
    """`rows` narrowed to those that miss no target (but `but`)."""
    rest = rows.copy()
    for k, v in miss.items():
        if k != but:
            rest &= v == 0
    return rest


def _give_price(req: PlanRequest, main: Scan, miss: dict[str, np.ndarray]) -> _Change | None:
    """An instance given no price whose fastest configuration meets every other target."""
    c = main.cols
    unpriced = ~c.compared & c.split & np.isfinite(c.per_user) & (main.rows["price"] != main.rows["price"])
    rest = _meets_all(unpriced, miss, but="budget_per_hour")
    if not rest.any():
        return None
    j = int(np.flatnonzero(rest)[np.argmax(c.per_user[rest])])
    inst = config_of(req, main.search, main.rows, j)["instance"]
    return (math.inf, f"give a price for {inst} (--price-per-hour {inst}=P): it meets the other targets", j)


def _other_price_kinds(main: Scan, miss: dict[str, np.ndarray]) -> _Change | None:
    """The cheapest configuration, priced another way than the ranked kinds, that meets every target."""
    c = main.cols
    other_kind = np.array([r.startswith("a ") and " price, not ranked with " in r for r in main.skip_reason])
    kinds = _meets_all(other_kind & c.split & np.isfinite(c.usd_per_mtok), miss)
    if not kinds.any():
        return None
    j = int(np.flatnonzero(kinds)[np.argmin(c.usd_per_mtok[kinds])])
    return (
        math.inf,
        "rank every price kind together (--price-kinds all): a configuration priced another way meets them",
        j,
    )


def _leave_measured_only(req: PlanRequest, main: Scan, miss: dict[str, np.ndarray]) -> _Change | None:
    """Under --measured-only: the cheapest configuration outside the evidence that meets every target."""
    if not req.measured_only:
        return None
    c = main.cols
    outside = (
        np.array([r.startswith("outside") for r in main.skip_reason]) & c.split & np.isfinite(c.usd_per_mtok)
    )
    outside = _meets_all(outside, miss)
    if not outside.any():
        return None
    j = int(np.flatnonzero(outside)[np.argmin(c.usd_per_mtok[outside])])
    return (
        math.inf,
        "drop --measured-only (the configuration that then meets them rests on assumed evidence)",
        j,
    )


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
