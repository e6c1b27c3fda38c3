"""Kernel constants from kernel references: NVLink, per-transport issue cost, instance factors.

1. NVLink (single node): `t(T) = alpha_nvl + NVLink bytes(T) / (NVLink x eff)`, linear in
   (alpha_nvl, 1 / eff); least squares over the token-scaling rows (T = 1 and 256 on B300, T = 1
   on H200), so both the fixed and the per-token part come from references at two shapes.
2. Fixed latency by class, from latency facts (assumed): per direction
   `alpha = alpha_nvl / 2 + one network one-way (EFA or IB) [+ proxy hand-off if host-proxied]`,
   never more than the reference leaves after its wire and NVLink time.
3. Per transport: the time beyond alpha is the issue pipe, `f(I) x beta x remote selections x
   reference lanes / lanes`, per direction. `beta` is fitted to **every** in-scope cross-node
   low-latency reference of the transport (`fit_transport_rows`): least squares on the log
   error of each published figure (dispatch and combine where both are given, else their sum,
   else dispatch alone), with the instance factor, the lanes and the bytes computed, never
   fitted. One reference is reproduced exactly (`fit_transport`, also a user's kernel log).
4. Instance factors: the geometric mean, over same-harness pairs of one transport on two
   instances, of `(t_I - alpha) / (t_p5en - alpha)`; instances without such a pair get 1
   (assumed).

Leaving references out (cross-validation) refits each transport from the references it has
left; a transport with none left is *unmeasured* and takes the median beta of the other
transports of its class (fabric x initiation), `fallback_transport`. The validation reports
that case apart: it answers "how good is the class prior", not "how well does the model carry
a measured transport to another shape, instance or harness".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..base.quantity import ASSUMED, Q
from ..catalog.constants import const
from ..catalog.hardware import get_instance, load_instances
from ..catalog.transports import KernelRef, Transport, get_transport, load_transports
from ..physics.deepep import KernelShape, issue_lanes, nvlink_bw, scaleout_bw, traffic
from .search import golden
from .table import TransportFit

HOME = "p5en"  # instance factors are stated relative to this instance


@dataclass(frozen=True)
class KernelRow:
    """One kernel reference with the transport it measures."""

    transport: Transport
    ref: KernelRef

    @property
    def key(self) -> str:
        return f"{self.transport.name}|{self.ref.describe(self.transport.name)}|{self.ref.source}"


def kernel_rows() -> list[KernelRow]:
    """Every kernel reference, with its transport as the active constant overrides see it."""
    rows = []
    for name in load_transports():
        t = get_transport(name)
        rows.extend(KernelRow(t, ref) for ref in t.references())
    return rows


def shape_of(ref: KernelRef) -> KernelShape:
    return KernelShape(ref.tokens, ref.hidden, ref.topk, ref.experts, ref.dispatch_dtype)


# 1. NVLink ------------------------------------------------------------------------------------


def nvlink_bytes_mb(ref: KernelRef) -> float:
    """Dispatch + combine bytes one rank moves over NVLink at this reference's shape (MB)."""
    inst = get_instance(ref.instance)
    shape = shape_of(ref)
    tr = traffic(ref.ep, inst.gpus_per_node, shape)
    per_sel = shape.dispatch_bytes_per_token + shape.combine_bytes_per_token
    return float(np.asarray(tr.nvlink_sel)) * per_sel / 1e6


def fit_nvlink(rows: Iterable[KernelRow]) -> tuple[Q, Q, tuple[str, ...]]:
    """(alpha_nvl D+C us, efficiency) by least squares on the single-node fit rows."""
    use = [r for r in rows if r.transport.fabric == "nvlink" and r.ref.role == "fit" and r.ref.in_scope]
    if len(use) < 2:
        return (
            Q.assumed(52.0, "us", "fallback: no NVLink token-scaling rows in this fit"),
            Q.assumed(0.5, "", "fallback NVLink efficiency (no rows)"),
            (),
        )
    A, b = [], []
    for r in use:
        inst = get_instance(r.ref.instance)
        per_dir = inst.nvlink_gb_s().value
        A.append([1.0, nvlink_bytes_mb(r.ref) / per_dir * 1e3])  # x = [alpha, 1 / eff]
        b.append(r.ref.total)
    x, *_ = np.linalg.lstsq(np.array(A), np.array(b), rcond=None)
    alpha, inv_eff = float(max(x[0], 0.0)), float(max(x[1], 1.0))
    anchors = tuple(r.ref.source.split(",")[0] + f" T={r.ref.tokens} {r.ref.dispatch_dtype}" for r in use)
    src = f"fitted to {len(use)} single-node token-scaling rows ({'; '.join(anchors)})"
    tag = Q.assumed if any(r.ref.trust == "assumed" for r in use) else Q.derived
    return tag(alpha, "us", src), tag(1.0 / inv_eff, "", src), tuple(r.key for r in use)


# 2-3. Transports -----------------------------------------------------------------------------


def alpha_prior(t: Transport, nvlink_alpha: Q) -> Q:
    """Fixed latency per direction at T -> 0, by class, from latency facts."""
    if t.fabric == "nvlink":
        return (nvlink_alpha * 0.5).as_("us")
    one_way = const("efa_one_way_us" if t.fabric == "efa" else "ib_one_way_us")
    alpha = ((nvlink_alpha * 0.5).as_("us") + one_way).as_("us")
    if t.host_proxied:
        alpha = (alpha + const("proxy_handoff_us")).as_("us")
    return alpha.as_(
        "us", f"NVLink alpha / 2 + {t.fabric} one-way" + (" + proxy hand-off" if t.host_proxied else "")
    )


def _pipes(t: Transport, ref: KernelRef, eff: Q) -> tuple[float, float, float, float, float]:
    """(remote selections, wire D, wire C, NVLink D, NVLink C) in us at the reference's shape."""
    inst = get_instance(ref.instance)
    gpn = inst.gpus_per_node
    shape = shape_of(ref)
    tr = traffic(ref.ep, gpn, shape, ref.prefill)
    bw = scaleout_bw(t, inst, gpn, ref.comms, ref.prefill).scalar
    nvl = nvlink_bw(inst, eff).scalar
    rs, ns = float(np.asarray(tr.remote_sel)), float(np.asarray(tr.nvlink_sel))
    d_b, c_b = shape.dispatch_bytes_per_token, shape.combine_bytes_per_token
    return rs, rs * d_b / bw / 1e3, rs * c_b / bw / 1e3, ns * d_b / nvl / 1e3, ns * c_b / nvl / 1e3


def fit_transport(t: Transport, ref: KernelRef, nvlink_alpha: Q, eff: Q, factor: Q) -> TransportFit:
    """alpha (capped by what the reference leaves) and beta per direction from one reference."""
    prior = alpha_prior(t, nvlink_alpha)
    rs, wd, wc, nd, nc = _pipes(t, ref, eff)
    lanes = float(np.asarray(issue_lanes(t, ref.comms, ref.qps)))
    f = factor.scalar
    src = f"fitted to {ref.source}"
    tag = Q.assumed if (ref.trust == "assumed" or factor.tag == 0) else Q.derived
    if ref.dispatch_us is not None and ref.combine_us is not None:
        out = []
        for t_ref, wire, nvl in ((ref.dispatch_us, wd, nd), (ref.combine_us, wc, nc)):
            a = min(prior.scalar, max(t_ref - max(wire, nvl), 0.0) / f)
            beta = max(t_ref - a * f, 0.0) / (f * rs)
            out.append((a, beta))
        (a_d, b_d), (a_c, b_c) = out
    else:
        total = ref.total
        a = min(prior.scalar, max(total - max(wd, nd) - max(wc, nc), 0.0) / (2 * f))
        a_d = a_c = a

        def model_total(beta: float) -> float:
            issue = f * beta * rs
            return 2 * a * f + max(wd, nd, issue) + max(wc, nc, issue)

        lo, hi = 0.0, max(total, 1.0) / max(f * rs, 1e-9)
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if model_total(mid) < total else (lo, mid)
        b_d = b_c = 0.5 * (lo + hi)
    alpha_src = f"{prior.source} (capped by {ref.source.split(',')[0]})"
    fit = TransportFit(
        Q(a_d, "us", prior.tag, alpha_src),
        Q(a_c, "us", prior.tag, alpha_src),
        tag(b_d, "us", src),
        tag(b_c, "us", src),
        lanes,
    )
    return replace(fit, residual_us=_residual(fit, t, ref, (rs, wd, wc, nd, nc), f))


def fit_rows(t: Transport, rows: Iterable[KernelRow]) -> list[KernelRow]:
    """The references `fit_transport_rows` uses for `t`: in scope, cross-node, low-latency."""
    return [
        r
        for r in rows
        if r.transport.name == t.name
        and t.fabric != "nvlink"
        and r.ref.in_scope
        and not r.ref.prefill
        and r.ref.ep > get_instance(r.ref.instance).gpus_per_node
    ]


def fit_transport_rows(
    t: Transport, rows: Sequence[KernelRow], nvlink_alpha: Q, eff: Q, factors: Callable[[str], Q]
) -> TransportFit:
    """alpha and beta per direction from every reference in `rows` (all of transport `t`).

    alpha is the class prior, capped by what the fastest measured reference leaves after its
    wire and NVLink time. beta minimises the sum of squared log errors of every published figure: each
    reference's instance factor, lanes (its EP_NUM_COMMS and QPs) and bytes (its EP, hidden,
    top-k and dispatch dtype) enter through the physics, so references at different shapes,
    instances and dtypes constrain the same two constants. One reference: `fit_transport`.
    """
    if len(rows) == 1:
        r = rows[0]
        return fit_transport(t, r.ref, nvlink_alpha, eff, factors(r.ref.instance))
    prior = alpha_prior(t, nvlink_alpha)
    ref_lanes = float(np.asarray(issue_lanes(t, t.reference.comms, t.reference.qps)))
    data = []
    a_d = a_c = prior.scalar
    # figures converted from a bandwidth (trust "assumed") carry no latency: they cap alpha only
    # when no measured figure is left
    capping = [r for r in rows if r.ref.trust == "measured"] or list(rows)
    for r in rows:
        ref = r.ref
        rs, wd, wc, nd, nc = _pipes(t, ref, eff)
        f = factors(ref.instance).scalar
        scale = f * rs * ref_lanes / float(np.asarray(issue_lanes(t, ref.comms, ref.qps)))
        data.append((ref, f, scale, max(wd, nd), max(wc, nc)))
        if r not in capping:
            continue
        if ref.total_us is not None:
            half = max(ref.total_us - max(wd, nd) - max(wc, nc), 0.0) / (2 * f)
            a_d, a_c = min(a_d, half), min(a_c, half)
        else:
            assert ref.dispatch_us is not None
            a_d = min(a_d, max(ref.dispatch_us - max(wd, nd), 0.0) / f)
            if ref.combine_us is not None:
                a_c = min(a_c, max(ref.combine_us - max(wc, nc), 0.0) / f)

    # (factor, scale, floors, published figures) per reference, read once: the searches below
    # evaluate the loss ~10^3 times per transport
    terms = []
    for ref, f, scale, floor_d, floor_c in data:
        assert ref.total_us is not None or ref.dispatch_us is not None
        terms.append((f, scale, floor_d, floor_c, ref.total_us, ref.dispatch_us, ref.combine_us))

    def loss(b_d: float, b_c: float) -> float:
        total = 0.0
        for f, scale, floor_d, floor_c, both_us, dispatch_us, combine_us in terms:
            d = f * a_d + max(floor_d, b_d * scale)
            c = f * a_c + max(floor_c, b_c * scale)
            if both_us is not None:
                total += math.log((d + c) / both_us) ** 2
                continue
            total += math.log(d / dispatch_us) ** 2
            if combine_us is not None:
                total += math.log(c / combine_us) ** 2
        return total

    lo, hi = math.log(1e-5), math.log(50.0)
    b_d = b_c = 0.3
    for _ in range(8):  # coordinate descent: each direction's loss is unimodal in log beta
        b_d = math.exp(golden(lambda x, c=b_c: loss(math.exp(x), c), lo, hi))
        b_c = math.exp(golden(lambda x, d=b_d: loss(d, math.exp(x)), lo, hi))
    names = "; ".join(r.ref.source.split(",")[0] + f" @ {r.ref.instance}" for r in rows)
    src = f"least squares on the log error of {len(rows)} references ({names})"
    weak = all(r.ref.trust == "assumed" for r in rows) or any(
        factors(r.ref.instance).tag == ASSUMED for r in rows
    )
    tag = Q.assumed if weak else Q.derived
    alpha_src = f"{prior.source} (capped by the fastest of {len(rows)} references)"
    return TransportFit(
        Q(a_d, "us", prior.tag, alpha_src),
        Q(a_c, "us", prior.tag, alpha_src),
        tag(b_d, "us", src),
        tag(b_c, "us", src),
        ref_lanes,
    )


def _residual(
    fit: TransportFit, t: Transport, ref: KernelRef, pipes: tuple[float, ...], f: float
) -> tuple[float, ...]:
    """Model minus reference (dispatch, combine; or the total): non-zero only where the
    reference is faster than its own wire or NVLink bytes allow."""
    rs, wd, wc, nd, nc = pipes
    d = f * fit.alpha_dispatch_us.scalar + max(wd, nd, f * fit.beta_dispatch_us.scalar * rs)
    c = f * fit.alpha_combine_us.scalar + max(wc, nc, f * fit.beta_combine_us.scalar * rs)
    if ref.dispatch_us is not None and ref.combine_us is not None:
        return (d - ref.dispatch_us, c - ref.combine_us)
    return (d + c - ref.total,)


def class_of(t: Transport) -> tuple[str, str]:
    return (t.fabric, t.initiation)


def fallback_transport(t: Transport, fitted: dict[str, TransportFit], nvlink_alpha: Q) -> TransportFit:
    """A transport whose references are all left out: the median beta of its class."""
    peers = [
        fitted[name]
        for name, other in load_transports().items()
        if name in fitted and name != t.name and class_of(other) == class_of(t)
    ]
    if not peers:
        peers = [fitted[name] for name in fitted if name != t.name]
    prior = alpha_prior(t, nvlink_alpha)
    b_d = float(np.median([p.beta_dispatch_us.scalar for p in peers])) if peers else 0.2
    b_c = float(np.median([p.beta_combine_us.scalar for p in peers])) if peers else 0.2
    lanes = float(np.asarray(issue_lanes(t, t.reference.comms, t.reference.qps)))
    src = f"no reference of {t.name} in this fit: median of its class ({t.fabric}, {t.initiation})"
    return TransportFit(prior, prior, Q.assumed(b_d, "us", src), Q.assumed(b_c, "us", src), lanes)


# 4. Instance factors --------------------------------------------------------------------------


def fit_instance_factors(rows: Iterable[KernelRow], nvlink_alpha: Q) -> dict[str, Q]:
    """Per instance: geometric mean over same-harness pairs of the non-fixed time ratio to p5en."""
    by_harness: dict[tuple[str, str], dict[str, KernelRow]] = {}
    for r in rows:
        if r.ref.harness and r.ref.in_scope and not r.ref.dispatch_only:
            by_harness.setdefault((r.transport.name, r.ref.harness), {})[r.ref.instance] = r
    logs: dict[str, list[float]] = {}
    sources: dict[str, list[str]] = {}
    for (name, harness), per_instance in by_harness.items():
        home = per_instance.get(HOME)
        if home is None:
            continue
        a = 2 * alpha_prior(home.transport, nvlink_alpha).scalar
        for inst, r in per_instance.items():
            if inst == HOME:
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
