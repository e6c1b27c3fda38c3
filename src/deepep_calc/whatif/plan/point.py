"""The points a plan reports: a configuration, its arm and `evaluate()`'s own figures for it.

`Builder.point()` re-evaluates one row with the scalar model (so tags, sources, bands and
measured cells are exactly `evaluate()`'s) and adds what a reader needs beside the figures:
the evidence notes, the misses, the command line and the calculator link.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import numpy as np

from ...base.quantity import Q, Tag
from ...catalog.hardware import PRICE_KIND_WORDS
from ...catalog.transports import deepep_route, load_transports
from ...decide.disagg_launch import launch_blocks
from ...decide.explain import engine_flags
from ...decide.verdict import ARM_LABELS
from ...estimate.arms import target_status
from ...estimate.compute import compute
from ...estimate.disagg import compute_with_disagg, covered
from ...estimate.result import ArmResult
from ...question.fields import DEFAULTS
from ...question.scenario import Scenario, resolve
from .evidence import mode_name, notes_for
from .request import PlanRequest
from .scan import Scan, config_of
from .space import ARMS

POINT_FIGURES = ("per_user_tok_s", "aggregate_tok_s", "ttft_ms", "usd_per_mtok", "memory_gb_per_gpu")


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
    layout: str = ""  # an xPyD split ("1P3D"), "" for an aggregated configuration
    # each target the plan sets, three-valued: meets, misses, or within the band (the figure's
    # band spans the target, so the model cannot tell)
    target_status: dict[str, str] = field(default_factory=dict)
    chosen_over: str = ""  # the cheaper row the verdict's rule set aside for this one (best only)
    price_kind: str | None = None  # on-demand, capacity-block, quote, or given (typed)

    def band_notes(self, short: bool = False) -> list[str]:
        """A line per target this point's band spans, to print beside it (`short`: for a table)."""
        out = []
        for key, figure_name, words, brief, digits in (
            ("slo_tok_s", "per_user_tok_s", "the {v:g} tok/s per-user floor", "band spans the floor", 1),
            ("ttft_ms", "ttft_ms", "the {v:g} ms TTFT ceiling", "band spans the TTFT cap", 0),
        ):
            if self.target_status.get(key) != "within the band":
                continue
            if short:
                out.append(brief)
                continue
            figure, limit = self.figures[figure_name], float(self.config[key])
            met = figure.scalar >= limit if key == "slo_tok_s" else figure.scalar <= limit
            band = f"{float(figure.low):,.{digits}f}-{float(figure.high):,.{digits}f}"
            may = "it may miss it" if met else "it may meet it"
            out.append(f"its band {band} spans {words.format(v=limit)}: {may}")
        return out

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
            target_status=dict(self.target_status),
            chosen_over=self.chosen_over,
            price_kind=self.price_kind,
            disaggregated=bool(self.layout),
            layout=self.layout or "aggregated",
        )
        return out


def arm_text(arm: str, transport: str, comms: int, nodes: int) -> str:
    """`DeepEP efa-proxy K=8`, `allgather`: EP_NUM_COMMS only where it changes the transport."""
    if arm != "deepep":
        return ARM_LABELS[arm]
    t = load_transports()[transport]
    extra = f" K={comms}" if t.comms_sensitive and nodes > 1 else ""
    return f"DeepEP {deepep_route(transport, nodes)}{extra}"


def label_of(config: dict[str, Any], arm: str) -> str:
    """One line naming a configuration: `2x p5en vllm CUDA graphs, DeepEP efa-gda`."""
    c = config
    if arm == "disagg":
        return disagg_label(c)
    dtype = f" {c['weight_dtype']}" if c.get("weight_dtype") else ""
    head = f"{c['nodes']}x {c['instance']} {c['engine']} {mode_name(c['cuda_graphs'])}{dtype}"
    return f"{head}, {arm_text(arm, c['transport'], c['comms'], c['nodes'])}"


def disagg_label(c: dict[str, Any]) -> str:
    """`3x p5en vllm CUDA graphs, 1P2D: prefill TP / decode DeepEP efa-gda, KV mooncake-efa`
    (a side's graph mode is named where it differs from the decode side's)."""
    dtype = f" {c['weight_dtype']}" if c.get("weight_dtype") else ""
    head = f"{c['nodes']}x {c['instance']} {c['engine']} {mode_name(c['decode_cuda_graphs'])}{dtype}"
    sides = []
    for role in ("prefill", "decode"):
        arm = c[f"{role}_arm"]
        transport = c[f"{role}_transport"] or c["transport"]
        what = "TP" if arm == "tp" else arm_text(arm, transport, c["comms"], c[f"{role}_nodes"])
        if c[f"{role}_cuda_graphs"] != c["decode_cuda_graphs"]:
            what += f" {mode_name(c[f'{role}_cuda_graphs'])}"
        sides.append(f"{role} {what}")
    split = f"{c['prefill_nodes']}P{c['decode_nodes']}D"
    return f"{head}, {split}: {' / '.join(sides)}, KV {c['kv_transport']}"


def _statuses(a: ArmResult, sustainable: bool | None) -> dict[str, str]:
    """The arm's target statuses (`evaluate`'s own); an unsustainable rate has no TTFT to judge."""
    out = {}
    if a.slo_status is not None:
        out["slo_tok_s"] = a.slo_status
    if a.ttft_status is not None and sustainable is not False:
        out["ttft_ms"] = a.ttft_status
    return out


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
        """Row i as a Point, re-evaluated once with the scalar model and cached."""
        if i in self.cache:
            return self.cache[i]
        req, s = self.req, self.scan
        config = config_of(req, s.search, s.rows, i)
        arm = ARMS[int(s.rows["arm"][i])]
        p = self._disagg_point(i, config) if arm == "disagg" else self._aggregated_point(i, config, arm)
        self.cache[i] = p
        return p

    def _aggregated_point(self, i: int, config: dict[str, Any], arm: str) -> Point:
        """An aggregated row: the scalar model's figures, its evidence, rate and price notes."""
        r = resolve(Scenario(**config), self.req.specs())
        result = compute(r)
        a: ArmResult = result.arms[arm]
        figures = {name: getattr(a, name) for name in POINT_FIGURES}
        notes = notes_for(
            config["instance"],
            config["engine"],
            config["cuda_graphs"],
            arm,
            config["transport"],
            config["nodes"],
        )
        evidence = "assumed" if notes else "anchored"
        sustainable, max_rate = self._rate(i, figures, notes)
        t = load_transports().get(config["transport"])
        if arm == "deepep" and config["nodes"] > 1 and t is not None and t.requires:
            notes.append(f"{t.name} requires {t.requires}")
        price = r.instance.price(config["price_per_hour"])
        kind = "given" if config["price_per_hour"] is not None else r.instance.price_kind
        notes.append(
            f"price ({PRICE_KIND_WORDS[kind]}): {price.source}"
            if kind != "given"
            else "price: the one you gave"
        )
        if a.measured_cell:
            notes.append(f"figures are the measured cell {a.measured_cell}")
        per_hour = (price * float(config["nodes"])).as_("$/h", f"nodes x price per node-hour; {price.source}")
        per_node = (a.aggregate_tok_s / float(config["nodes"])).as_("tok/s/node", "aggregate / nodes")
        return Point(
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
            flags=engine_flags(result, arm),
            target_status=_statuses(a, sustainable),
            price_kind=kind,
        )

    def _rate(self, i: int, figures: dict[str, Q], notes: list[str]) -> tuple[bool | None, Q | None]:
        """Under a request rate: whether row i sustains it and the most it serves (None, None
        under a concurrency); an unsustainable row's TTFT becomes NaN with a note saying why."""
        req, rate = self.req, self.scan.rate
        if rate is None:
            return None, None
        sustainable = bool(rate.sustainable[i])
        max_rate = Q(
            float(rate.max_rate_per_s[i]),
            "req/s",
            figures["aggregate_tok_s"].tag,
            "requests served per second at the batch limit: running / service time",
        )
        if not sustainable:
            figures["ttft_ms"] = _no_steady_state(req.request_rate)  # type: ignore[arg-type]
            notes.append(
                f"cannot sustain {req.request_rate:g} req/s: at its batch limit it serves "
                f"{rate.max_rate_per_s[i]:,.2f} req/s, so the queue grows"
            )
        return sustainable, max_rate

    def _disagg_point(self, i: int, config: dict[str, Any]) -> Point:
        """A disaggregated row re-evaluated with the scalar model: `evaluate`'s own figures."""
        r = resolve(Scenario(**config), self.req.specs())
        result = compute_with_disagg(r)
        d = result.disaggregated
        figures = {name: getattr(d, name) for name in POINT_FIGURES}
        inside, coverage = covered(r, d.spec)
        notes = [f"disaggregated {d.label}: {coverage}"]
        if not inside:
            notes.append("its evidence is assumed: no measured reference ran this split as a whole")
        if d.kv.warning:
            notes.append(d.kv.warning)
        price = r.instance.price(config["price_per_hour"])
        kind = "given" if config["price_per_hour"] is not None else r.instance.price_kind
        notes.append(
            f"price ({PRICE_KIND_WORDS[kind]}): {price.source}"
            if kind != "given"
            else "price: the one you gave"
        )
        statuses = {}
        if r.scenario.slo_tok_s is not None:
            statuses["slo_tok_s"] = target_status(d.per_user_tok_s, r.scenario.slo_tok_s, floor=True)
        if r.scenario.ttft_ms is not None:
            statuses["ttft_ms"] = target_status(d.ttft_ms, r.scenario.ttft_ms, floor=False)
        nodes = float(config["nodes"])
        per_hour = (price * nodes).as_("$/h", f"nodes x price per node-hour; {price.source}")
        per_node = (d.aggregate_tok_s / nodes).as_("tok/s/node", "aggregate / nodes")
        flags = {
            "engine": config["engine"],
            "arm": "disagg",
            "args": [],
            "config": {},
            "env": {},
            "cuda_graphs": "",
            "requires": "",
            "launch": None,
            "disaggregated": launch_blocks(result),
        }
        return Point(
            config=config,
            arm=config["decode_arm"],  # the contract's arm: the decode side's (`layout` marks it)
            figures=figures,
            meets_targets=bool(self.ok[i]),
            usd_per_hour=per_hour,
            aggregate_per_node=per_node,
            evidence="anchored" if inside else "assumed",
            notes=notes,
            label=label_of(config, "disagg"),
            misses=self.miss_text(i),
            sustainable=None,
            flags=flags,
            layout=d.label,
            target_status=statuses,
            price_kind=kind,
        )

    def light(self, i: int) -> Point:
        """A Point from the vectorised row alone (for chart clouds: no scalar re-evaluation)."""
        if i in self.cache:
            return self.cache[i]
        req, s = self.req, self.scan
        t = s.search.rows
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
            family = self.scan.families[int(self.scan.rows["family"][i])]
            out.append(f"no price for {family.instance.name}: cannot be costed")
        elif m["budget_per_hour"][i] > 0:
            out.append(f"costs {c.usd_per_hour[i]:,.2f} $/h, above the {req.budget_per_hour:g} $/h budget")
        return out
