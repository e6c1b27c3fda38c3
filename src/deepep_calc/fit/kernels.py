"""Kernel constants from kernel references: NVLink per library, each transport's latency of
leaving the node and cost per message, and the instance factors.

1. NVLink (one node), per library: `t(T) = alpha + NVLink bytes(T) / (NVLink x eff)`, linear in
   (alpha, 1 / eff), least squares on the relative error of the library's one-node rows at
   several token counts and shapes; `eff` never above 1 (the NVLink peak). A library measured
   at one byte count takes the others' median efficiency; one never measured, DeepEP 2.x's.
   Half of `alpha` is the `local` part every direction pays across nodes too.
2. Across nodes, per direction: `t = f(I) x local + max(f(I) x leaving, wire, NVLink, f(I) x
   beta x messages x lanes_ref / lanes)`, messages = data + r x signals (physics/deepep.py). A
   transport whose own cross-node references span two token counts (one at <= 32 tokens per
   rank, one at >= 128) fits `leaving` and `beta` together: least squares on the log error of
   every published figure (dispatch and combine where both are given, else their sum, else
   dispatch alone), with bytes, messages, lanes, `local` and `f(I)` computed, never fitted.
   The others take the fabric's `leaving`: the mean over those small-token transports (on EFA;
   InfiniBand's is EFA's times the ratio of the two one-way latencies, assumed), raised to a
   measured small-message floor where the transport has one (NVSHMEM: the floor less `local`),
   never above what its fastest measured reference leaves after `local`; then `beta` alone.
3. Instance factors: the geometric mean, over same-harness pairs of one transport on two
   instances, of `(t_I - fixed) / (t_p5en - fixed)`, fixed = 2 x local + both leaving
   latencies; instances without such a pair get 1 (assumed). The fabric's leaving latency is
   measured on the home instance first, so the factors and the final fits see the same terms.

Leaving references out (cross-validation) refits each transport from the references it has
left; a transport with none left is *unmeasured* and takes the median beta of the other
transports of its class (fabric x initiation), `fallback_transport`, counted apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..base.quantity import ASSUMED, Q
from ..catalog.constants import CATALOG, Assumptions
from ..catalog.hardware import get_instance, load_instances
from ..catalog.transports import KernelRef, Transport, get_transport, load_transports
from ..physics.deepep import issue_lanes, messages
from .kernel_solve import exact_betas, figures, shape_of, solve, terms
from .table import NvlinkFit, TransportFit

HOME = "p5en"  # instance factors are stated relative to this instance
SMALL_TOKENS = 32  # a reference at or below this many tokens per rank pins the fixed term
LARGE_TOKENS = 128  # ... together with one at or above this many
FALLBACK_LIBRARY = "deepep-v2"


@dataclass(frozen=True)
class KernelRow:
    """One kernel reference with the transport it measures."""

    transport: Transport
    ref: KernelRef

    @property
    def key(self) -> str:
        return f"{self.transport.name}|{self.ref.describe(self.transport.name)}|{self.ref.source}"

    @property
    def one_node(self) -> bool:
        """Inside one node: the transport's library over NVLink, no network."""
        return (
            self.transport.fabric == "nvlink" or self.ref.ep <= get_instance(self.ref.instance).gpus_per_node
        )


def kernel_rows(assumptions: Assumptions = CATALOG) -> list[KernelRow]:
    """Every kernel reference, with its transport carrying the figures `assumptions` changes."""
    rows = []
    for name in load_transports():
        t = get_transport(name, assumptions)
        rows.extend(KernelRow(t, ref) for ref in t.references())
    return rows


def _tag(rows: Iterable[KernelRow]) -> Callable[..., Q]:
    return Q.assumed if any(r.ref.trust == "assumed" for r in rows) else Q.derived


# 1. NVLink, per library -------------------------------------------------------------------------


def nvlink_bytes_mb(ref: KernelRef) -> float:
    """Dispatch + combine bytes one rank moves over NVLink at this reference's shape (MB)."""
    inst = get_instance(ref.instance)
    shape = shape_of(ref)
    m = messages(ref.ep, inst.gpus_per_node, shape)
    per_sel = shape.dispatch_bytes_per_token + shape.combine_bytes_per_token
    return float(np.asarray(m.nvlink_sel)) * per_sel / 1e6


def nvlink_rows(rows: Iterable[KernelRow]) -> list[KernelRow]:
    """In-scope low-latency rows inside one node: they fit their library's NVLink constants."""
    return [r for r in rows if r.one_node and r.ref.in_scope and not r.ref.prefill]


def _label(r: KernelRow) -> str:
    """`[A2ALL] @ p5en T=4`: a reference's source key (or the start of its source) and shape."""
    src = r.ref.source
    key = (
        src[: src.index("]") + 1] if src.startswith("[") and "]" in src else src.split(",")[0].split(" (")[0]
    )
    return f"{key} @ {r.ref.instance} T={r.ref.tokens}"


def fit_nvlink(rows: Iterable[KernelRow]) -> dict[str, NvlinkFit]:
    """(alpha D+C us, efficiency) per library, from its one-node rows."""
    by_lib: dict[str, list[KernelRow]] = {}
    for r in nvlink_rows(rows):
        by_lib.setdefault(r.transport.library, []).append(r)
    out: dict[str, NvlinkFit] = {}
    pending = []
    for lib, use in sorted(by_lib.items()):
        x = np.array(
            [nvlink_bytes_mb(r.ref) / get_instance(r.ref.instance).nvlink_gb_s().value * 1e3 for r in use]
        )
        t = np.array([r.ref.total for r in use])
        if len(set(np.round(x, 9))) < 2:
            pending.append((lib, use, x, t))
            continue
        A = np.stack([np.ones_like(x), x], axis=1) / t[:, None]
        sol, *_ = np.linalg.lstsq(A, np.ones_like(t), rcond=None)
        alpha, inv_eff = float(sol[0]), float(sol[1])
        if inv_eff < 1.0:  # faster than the NVLink peak: the bytes overlap the fixed part
            inv_eff = 1.0
            alpha = float(np.sum((t - x) / t) / np.sum(1.0 / t))
        alpha = max(alpha, 0.0)
        src = f"fitted to {len(use)} one-node {lib} rows at {len({r.ref.tokens for r in use})} token counts"
        src += f" ({'; '.join(sorted({_label(r).split(' T=')[0] for r in use}))})"
        tag = _tag(use)
        out[lib] = NvlinkFit(tag(alpha, "us", src), tag(1.0 / inv_eff, "", src))
    effs = [f.efficiency.scalar for f in out.values()]
    eff_all = float(np.median(effs)) if effs else 0.6
    for lib, use, x, t in pending:
        alpha = max(float(np.mean(t - x / eff_all)), 0.0)
        src = (
            f"{len(use)} one-node {lib} row(s) at one byte count: alpha from them at the other "
            "libraries' median efficiency"
        )
        out[lib] = NvlinkFit(Q.assumed(alpha, "us", src), Q.assumed(eff_all, "", src))
    if FALLBACK_LIBRARY not in out:
        src = f"fallback: no one-node {FALLBACK_LIBRARY} row in this fit"
        out[FALLBACK_LIBRARY] = NvlinkFit(Q.assumed(96.0, "us", src), Q.assumed(eff_all, "", src))
    for lib in {t.library for t in load_transports().values()} - set(out):
        base = out[FALLBACK_LIBRARY]
        src = f"no one-node {lib} measurement: {FALLBACK_LIBRARY}'s ({base.alpha_us.source})"
        out[lib] = NvlinkFit(
            Q.assumed(base.alpha_us.scalar, "us", src), Q.assumed(base.efficiency.scalar, "", src)
        )
    return out


# 2. Across nodes --------------------------------------------------------------------------------


def fit_rows(t: Transport, rows: Iterable[KernelRow]) -> list[KernelRow]:
    """The references a transport's cross-node fit uses: in scope, low-latency, across nodes."""
    return [
        r
        for r in rows
        if r.transport.name == t.name
        and t.fabric != "nvlink"
        and r.ref.in_scope
        and not r.ref.prefill
        and not r.one_node
    ]


def spans_tokens(rows: Sequence[KernelRow]) -> bool:
    """Whether the rows pin a fixed term: one at a few tokens per rank and one at 128 or more."""
    tokens = [r.ref.tokens for r in rows]
    return bool(tokens) and min(tokens) <= SMALL_TOKENS and max(tokens) >= LARGE_TOKENS


def reference_lanes(t: Transport) -> float:
    return float(np.asarray(issue_lanes(t, t.reference.comms, t.reference.qps)))


@dataclass(frozen=True)
class Leaving:
    """What a fabric's transports share where their own references cannot pin it: the latency
    of leaving the node per direction, and what a signal costs against a put."""

    dispatch_us: Q
    combine_us: Q
    signal_ratio: Q


def leaving_costs(
    fits: dict[str, tuple[Transport, TransportFit]], assumptions: Assumptions
) -> dict[str, Leaving]:
    """Per fabric, the mean over the transports whose own small-token rows pin these."""
    out: dict[str, Leaving] = {}
    mine = [(t, f) for t, f in fits.values() if t.fabric == "efa"]
    if mine:
        names = ", ".join(sorted(t.name for t, _ in mine))
        tag = Q.assumed if any(f.leaving_dispatch_us.tag == ASSUMED for _, f in mine) else Q.derived

        def mean(get: Callable[[TransportFit], Q], what: str, unit: str) -> Q:
            src = f"{what}, mean over {names} (fitted with their small-token rows)"
            return tag(max(float(np.mean([get(f).scalar for _, f in mine])), 0.0), unit, src)

        out["efa"] = Leaving(
            mean(lambda f: f.leaving_dispatch_us, "latency of leaving the node (dispatch)", "us"),
            mean(lambda f: f.leaving_combine_us, "latency of leaving the node (combine)", "us"),
            mean(lambda f: f.signal_ratio, "cost of a signal in puts", ""),
        )
    else:  # a fold with no small-token transport left: the latency facts stand in
        one_way = assumptions.const("efa_one_way_us")
        out["efa"] = Leaving(one_way, one_way, assumptions.const("signal_cost_ratio"))
    efa = out["efa"]
    ratio = (assumptions.const("ib_one_way_us") / assumptions.const("efa_one_way_us")).as_("")
    why = "EFA's x IB / EFA one-way small-message latency"
    out["ib"] = Leaving(
        (efa.dispatch_us * ratio).as_("us", f"{why} ({efa.dispatch_us.source})"),
        (efa.combine_us * ratio).as_("us", f"{why} ({efa.combine_us.source})"),
        efa.signal_ratio.as_("", f"EFA's ({efa.signal_ratio.source})"),
    )
    return out


def fixed_prior(t: Transport, nvlink: dict[str, NvlinkFit], leaving: dict[str, Leaving]) -> tuple[Q, Q]:
    """The latency of leaving the node of a transport whose references do not pin it, per
    direction: its fabric's, or its own measured floor less the library's local part."""
    local = nvlink[t.library].alpha_us.scalar / 2
    leave = leaving[t.fabric]
    out = []
    for cost in (leave.dispatch_us, leave.combine_us):
        q = cost
        if t.fixed_floor_us is not None and t.fixed_floor_us - local > q.scalar:
            q = Q.assumed(
                t.fixed_floor_us - local, "us", f"{t.fixed_floor_source}, less the library's local part"
            )
        out.append(q)
    return out[0], out[1]


def _capped(q: Q, cap: float) -> Q:
    return q if cap >= q.scalar else Q(cap, "us", q.tag, f"{q.source} (capped by the fastest reference)")


# size: transport, rows, NVLink fits, leaving costs, instance factors, constants in force
def fit_transport_rows(
    t: Transport,
    rows: Sequence[KernelRow],
    nvlink: dict[str, NvlinkFit],
    leaving: dict[str, Leaving] | None,
    factors: Callable[[str], Q],
    assumptions: Assumptions,
) -> TransportFit:
    """Leaving latency, cost per message and signal ratio from every reference in `rows` (all of
    transport `t`); `leaving` None, or rows spanning two token counts: all fitted."""
    ref_lanes = reference_lanes(t)
    nvl = nvlink[t.library]
    pipes = [terms(t, r.ref, nvl, factors(r.ref.instance).scalar, ref_lanes) for r in rows]
    names = "; ".join(sorted({_label(r).split(" T=")[0] for r in rows}))
    weak = any(r.ref.trust == "assumed" for r in rows) or any(
        factors(r.ref.instance).tag == ASSUMED for r in rows
    )
    tag = Q.assumed if weak else Q.derived
    src = f"least squares on the log error of {len(rows)} references ({names})"
    if spans_tokens(rows) or leaving is None:
        one_way = assumptions.const("efa_one_way_us" if t.fabric == "efa" else "ib_one_way_us").scalar
        (f_d, f_c), (b_d, b_c), r = solve(pipes, None, None, one_way)
        fd, fc, ratio = tag(f_d, "us", src), tag(f_c, "us", src), tag(r, "", src)
    else:
        fd, fc = fixed_prior(t, nvlink, leaving)
        ratio = leaving[t.fabric].signal_ratio
        capping = [x for x in pipes if x.ref.trust == "measured"] or pipes
        caps = []
        for x in capping:  # never more than the fastest measured reference leaves
            ref = x.ref
            if ref.total_us is not None:
                half = max(ref.total_us / (2 * x.factor) - x.local, 0.0)
                caps.append((half, half))
            else:
                assert ref.dispatch_us is not None
                cd = max(ref.dispatch_us / x.factor - x.local, 0.0)
                cc = cd if ref.combine_us is None else max(ref.combine_us / x.factor - x.local, 0.0)
                caps.append((cd, cc))
        fd, fc = _capped(fd, min(c[0] for c in caps)), _capped(fc, min(c[1] for c in caps))
        if len(pipes) == 1:  # two costs, two figures: exact
            b_d, b_c = exact_betas(pipes[0], (fd.scalar, fc.scalar), ratio.scalar)
        else:
            _, (b_d, b_c), _ = solve(pipes, (fd.scalar, fc.scalar), ratio.scalar)
    fit = TransportFit(fd, fc, tag(b_d, "us", src), tag(b_c, "us", src), ref_lanes, ratio)
    if len(rows) == 1:
        p = ((fd.scalar, fc.scalar), (b_d, b_c), ratio.scalar)
        fit = replace(fit, residual_us=tuple(m - ref for m, ref in figures(pipes[0], p)))
    return fit


def fit_transport(t: Transport, ref: KernelRef, table: object) -> TransportFit:
    """The cost per message refitted to one reference (a user's kernel log), the leaving
    latency and signal ratio the built-in table's: a log at one token count cannot pin them."""
    from .table import Table

    assert isinstance(table, Table)
    base = table.transports[t.name]
    x = terms(
        t, ref, table.nvlink_fit(t.library), table.instance_factor(ref.instance).scalar, base.reference_lanes
    )
    fixed = (base.leaving_dispatch_us.scalar, base.leaving_combine_us.scalar)
    b_d, b_c = exact_betas(x, fixed, base.signal_ratio.scalar)
    src = f"fitted to {ref.source}"
    tag = Q.assumed if ref.trust == "assumed" else Q.derived
    fit = TransportFit(
        base.leaving_dispatch_us,
        base.leaving_combine_us,
        tag(b_d, "us", src),
        tag(b_c, "us", src),
        base.reference_lanes,
        base.signal_ratio,
    )
    p = (fixed, (b_d, b_c), base.signal_ratio.scalar)
    return replace(fit, residual_us=tuple(m - r for m, r in figures(x, p)))


def class_of(t: Transport) -> tuple[str, str]:
    return (t.fabric, t.initiation)


def fallback_transport(
    t: Transport, fitted: dict[str, TransportFit], nvlink: dict[str, NvlinkFit], leaving: dict[str, Leaving]
) -> TransportFit:
    """A transport whose references are all left out: the median beta of its class."""
    peers = [
        fitted[name]
        for name, other in load_transports().items()
        if name in fitted and name != t.name and class_of(other) == class_of(t)
    ]
    if not peers:
        peers = [fitted[name] for name in fitted if name != t.name]
    if t.fabric == "nvlink":
        fd = fc = Q.derived(0.0, "us", "nothing leaves the node")
        ratio = Q.derived(0.0, "", "no signal leaves the node")
    else:
        fd, fc = fixed_prior(t, nvlink, leaving)
        ratio = leaving[t.fabric].signal_ratio
    b_d = float(np.median([p.beta_dispatch_us.scalar for p in peers])) if peers else 0.2
    b_c = float(np.median([p.beta_combine_us.scalar for p in peers])) if peers else 0.2
    src = f"no reference of {t.name} in this fit: median of its class ({t.fabric}, {t.initiation})"
    return TransportFit(
        fd, fc, Q.assumed(b_d, "us", src), Q.assumed(b_c, "us", src), reference_lanes(t), ratio
    )


# 3. Instance factors ------------------------------------------------------------------------------


def fit_instance_factors(rows: Iterable[KernelRow], fixed_pair: Callable[[Transport], float]) -> dict[str, Q]:
    """Per instance: geometric mean over same-harness pairs of the non-fixed time ratio to p5en."""
    by_harness: dict[tuple[str, str], dict[str, KernelRow]] = {}
    for r in rows:
        if r.ref.harness and r.ref.in_scope and not r.ref.dispatch_only and not r.one_node:
            by_harness.setdefault((r.transport.name, r.ref.harness), {}).setdefault(r.ref.instance, r)
    logs: dict[str, list[float]] = {}
    sources: dict[str, list[str]] = {}
    for (name, harness), per_instance in sorted(by_harness.items()):
        home = per_instance.get(HOME)
        if home is None:
            continue
        a = fixed_pair(home.transport)
        for inst, r in per_instance.items():
            if inst == HOME or (r.ref.tokens, r.ref.hidden) != (home.ref.tokens, home.ref.hidden):
                continue
            ratio = max(r.ref.total - a, 1.0) / max(home.ref.total - a, 1.0)
            logs.setdefault(inst, []).append(math.log(ratio))
            sources.setdefault(inst, []).append(f"{name} {harness}: {r.ref.total:g} vs {home.ref.total:g} us")
    out = {HOME: Q.derived(1.0, "", "the reference instance of the factors")}
    for inst in load_instances().values():
        if inst.fabric == "ib":  # InfiniBand transports are fitted on their own nodes
            out[inst.name] = Q.derived(1.0, "", "InfiniBand node: its transports are fitted on it")
    for inst, values in logs.items():
        out[inst] = Q.derived(
            math.exp(float(np.mean(values))), "", "same-harness pairs vs p5en: " + "; ".join(sources[inst])
        )
    return out
