"""`deepep-calc kernel`: one MoE layer's dispatch + combine latency for a transport and shape."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base.errors import InputError
from ..base.quantity import Q
from ..catalog.hardware import Instance, get_instance
from ..catalog.transports import KernelRef, Transport, get_transport
from ..fit.build import built_in_table
from ..physics.deepep import PARTS, KernelShape, KernelSite, binding_pipe, kernel_parts
from ..question.fields import DEFAULTS

LIMITS = {"ep": 1024, "tokens": 65536, "hidden": 65536, "topk": 64, "experts": 4096, "comms": 64, "qps": 1024}


def _check(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(f"--{name}", value, "a whole number greater than 0")
    if value > LIMITS[name]:
        raise InputError(f"--{name}", value, f"at most {LIMITS[name]:,}")


def _check_query(ep: int, shape: KernelShape, comms: int, qps: int) -> None:
    """Each number whole, positive and within its limit, then the shape's own consistency."""
    for name, value in (
        ("ep", ep),
        ("tokens", shape.tokens),
        ("hidden", shape.hidden),
        ("topk", shape.topk),
        ("experts", shape.experts),
        ("comms", comms),
        ("qps", qps),
    ):
        _check(name, value)
    if shape.topk > shape.experts:
        raise InputError("--topk", shape.topk, f"at most the expert count ({shape.experts})")
    if shape.dispatch_dtype not in ("fp8", "bf16"):
        raise InputError("--dispatch-dtype", shape.dispatch_dtype, "fp8 or bf16")


def _placed(transport: str, instance: str, ep: int) -> tuple[Transport, Instance]:
    """The transport and instance asked for, refused where the one does not run on the other
    (or NVLink asked to span more than one node)."""
    t = get_transport(transport)
    inst = get_instance(instance)
    if inst.name not in t.instances:
        raise InputError("--instance", instance, f"one of {', '.join(t.instances)} for {t.name}")
    gpn = inst.gpus_per_node
    if t.name == "nvlink" and ep > gpn:
        raise InputError("--ep", ep, f"at most {gpn} for nvlink (one node)")
    return t, inst


def _table(profile: Any, t: Transport) -> tuple[Any, bool]:
    """The constants the kernel runs with, and whether a profile refitted this transport's."""
    table = built_in_table()
    own = profile is not None and profile.kernel_fit(t.name) is not None
    if own:
        table = table.with_transport(t.name, profile.kernel_fit(t.name))
    return table, own


def _modelled(parts: dict[str, Any], table: Any) -> dict[str, Q]:
    """The model's three totals, banded by the kernel misses where the table has that band."""
    d, c = parts["dispatch"]["total"], parts["combine"]["total"]
    out = {"dispatch_us": d, "combine_us": c, "total_us": (d + c).as_("us")}
    band = table.band("kernel")
    if band is not None:
        lo, hi = band
        out = {k: v.with_band(v.scalar / hi, v.scalar / lo) for k, v in out.items()}
    return out


# size: the `kernel` entry point: each keyword is one of its CLI and API options, passed by name
def kernel_query(
    transport: str = "efa-proxy",
    instance: str = "p5en",
    ep: int = 16,
    tokens: int = 128,
    hidden: int = 7168,
    topk: int = 8,
    experts: int = 256,
    dispatch_dtype: str = "fp8",
    comms: int = 8,
    qps: int = DEFAULTS["max_qps"],
    calibration: str | None = None,
    read_profile: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """Dispatch, combine and total microseconds, and the model's parts of each direction.

    A published reference at exactly this query is returned as measured (its totals; the parts
    stay the model's, under `parts`). `parts[direction]` holds the library's local part and the
    concurrent pipes (leaving the node, data messages, signals, wire, NVLink); `binds` names the
    pipe that gates each direction.

    With a calibration profile whose kernel log covers this transport, the log's medians are
    returned (measured) at its exact shape, and its refitted cost per message is used elsewhere: the
    user's fabric replaces the reference's. `read_profile` reads the file `calibration` names
    (`io.profile.load_profile`), after the query itself is checked.
    """
    shape = KernelShape(tokens, hidden, topk, experts, dispatch_dtype)
    _check_query(ep, shape, comms, qps)
    t, inst = _placed(transport, instance, ep)
    profile = None
    logged = None
    if calibration is not None:
        if read_profile is None:  # the estimate reads no file: the face hands the reader in
            raise RuntimeError("kernel_query(calibration=...) needs read_profile= (io.profile.load_profile)")
        profile = read_profile(calibration)
        logged = profile.kernel_measured(t.name, inst.name, ep, shape, comms, qps)
    table, own = _table(profile, t)
    site = KernelSite(t, inst, inst.gpus_per_node, ep, comms, qps)
    parts = kernel_parts(site, shape, table.kernel_constants(t.name, inst.name))
    detail = {
        "parts_us": {d: {name: parts[d][name] for name in PARTS} for d in ("dispatch", "combine")},
        "binds": {d: binding_pipe(parts[d]) for d in ("dispatch", "combine")},
        "measurements": [
            (ref.setting, ref.total, ref.source) for ref in point_references(t, inst, ep, shape)
        ],
    }
    if logged is not None:
        return {**logged, **detail}
    ref = None if own else reference_match(site, shape)
    if ref is not None and ref.dispatch_us is not None and ref.combine_us is not None:
        d = Q.measured(ref.dispatch_us, "us", ref.source)
        c = Q.measured(ref.combine_us, "us", ref.source)
        return {"dispatch_us": d, "combine_us": c, "total_us": (d + c).as_("us"), **detail}
    return {**_modelled(parts, table), **detail}


def kernel_json(out: dict[str, Any]) -> dict[str, Any]:
    """`kernel --json` and `POST /api/kernel`: the three totals as Q, the model's parts, and
    every published measurement of this very cell, each with its setting."""
    totals = {k: out[k].to_json() for k in ("dispatch_us", "combine_us", "total_us")}
    parts = {d: {k: q.to_json() for k, q in p.items()} for d, p in out["parts_us"].items()}
    found = [{"setting": what, "total_us": total, "source": src} for what, total, src in out["measurements"]]
    return {**totals, "parts_us": parts, "binds": dict(out["binds"]), "measurements": found}


def point_references(t: Transport, inst: Instance, ep: int, shape: KernelShape) -> list[KernelRef]:
    """The transport's in-scope published measurements of exactly this kernel point (instance,
    EP, shape), whatever their SMs, QPs or statistic: several runs of one point disagree, and each
    face shows them with their settings rather than as one figure."""
    return [
        ref
        for ref in t.references()
        if ref.in_scope
        and not ref.prefill
        and not ref.dispatch_only  # a dispatch alone is another quantity than D+C
        and (ref.instance, ref.ep, ref.tokens, ref.hidden, ref.topk, ref.experts)
        == (inst.name, ep, shape.tokens, shape.hidden, shape.topk, shape.experts)
        and ref.dispatch_dtype == shape.dispatch_dtype
    ]


def reference_match(site: KernelSite, shape: KernelShape) -> KernelRef | None:
    """A published measurement at exactly this query (printed as measured), if there is one.

    For the NCCL-GIN proxy the comms and queue pairs are part of the query: a reference taken
    at EP_EFA_MAX_QPS 6 does not answer a question about 2.
    """
    t = site.transport
    for ref in t.references():
        if (
            ref.instance == site.instance.name
            and ref.ep == site.ep
            and (ref.tokens, ref.hidden, ref.topk, ref.experts)
            == (shape.tokens, shape.hidden, shape.topk, shape.experts)
            and ref.dispatch_dtype == shape.dispatch_dtype
            and not ref.prefill
            and (not t.comms_sensitive or (site.comms, site.qps) == (ref.comms, ref.qps))
            and ref.dispatch_us is not None
            and ref.combine_us is not None
            and ref.in_scope
        ):
            return ref
    return None
