"""A disaggregated deployment as a question: P prefill nodes, D decode nodes, a KV transport.

`--prefill-nodes P --decode-nodes D` (or `--disagg PpDd`, e.g. `1P3D`) split the cluster: the
prefill servers run every prompt and hand its KV cache to the decode servers, which run no
prefill. Each side has its own layout (arm, DeepEP transport, graph mode); what is not given is
left for the estimate to choose, the side's best by the model (`estimate/disagg.py`). The
aggregated arms of the same P + D nodes are still computed, so the two can be compared.

This module checks the fields and attaches their catalog rows; it computes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..base.errors import InputError
from ..base.vocabulary import ARMS, flag_of
from ..catalog.constants import CATALOG, Assumptions
from ..catalog.kv_transports import EngineKv, KvTransport, engine_kv, get_kv_transport, kv_transports_for
from ..catalog.transports import Transport, get_transport
from .fields import DISAGG_FIELDS, LIMITS

SIDE_ARMS = ARMS
ROLES = ("prefill", "decode")
_XPYD = re.compile(r"^\s*(\d+)\s*p\s*(\d+)\s*d\s*$", re.IGNORECASE)
XPYD_ALLOWED = "xPyD with x prefill and y decode nodes, each at least 1 (e.g. 1P1D, 1P3D, 2P6D)"


def parse_disagg(text: Any) -> tuple[int, int]:
    """`1P3D` -> (1, 3); anything else is refused with the flag, the value and what is allowed."""
    m = _XPYD.match(str(text)) if isinstance(text, str) else None
    if m is None:
        raise InputError("--disagg", text, XPYD_ALLOWED)
    p, d = int(m.group(1)), int(m.group(2))
    if p < 1 or d < 1:
        raise InputError("--disagg", text.strip(), XPYD_ALLOWED)
    if p + d > LIMITS["nodes"]:
        raise InputError("--disagg", text.strip(), f"P + D of at most {LIMITS['nodes']:,} nodes")
    return p, d


def label(prefill_nodes: int, decode_nodes: int) -> str:
    return f"{prefill_nodes}P{decode_nodes}D"


@dataclass(frozen=True, eq=False)
class Side:
    """One side's layout as asked: what is None is chosen by the estimate."""

    role: str  # "prefill" or "decode"
    nodes: int
    arm: str | None
    transport: Transport
    cuda_graphs: bool
    arm_given: bool
    transport_given: bool
    graphs_given: bool


@dataclass(frozen=True, eq=False)
class DisaggSpec:
    """The checked disaggregated deployment of one scenario."""

    prefill: Side
    decode: Side
    kv: KvTransport
    kv_given: bool
    engine_kv: EngineKv

    @property
    def nodes(self) -> int:
        return self.prefill.nodes + self.decode.nodes

    @property
    def label(self) -> str:
        return label(self.prefill.nodes, self.decode.nodes)

    def side(self, role: str) -> Side:
        return self.prefill if role == "prefill" else self.decode


def is_disaggregated(s: Any) -> bool:
    return getattr(s, "prefill_nodes", None) is not None or getattr(s, "decode_nodes", None) is not None


def _count(name: str, value: Any) -> int:
    flag = flag_of(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(flag, value, "a whole number of nodes, at least 1 (each side needs one)")
    if value > LIMITS[name]:
        raise InputError(flag, value, f"at most {LIMITS[name]:,}")
    return value


# size: the side's role, asked name, the scenario's transport, nodes, instance, constants in force
def _side_transport(
    role: str, name: str | None, transport: Transport, nodes: int, instance: Any, assumptions: Assumptions
) -> Transport:
    """The side's DeepEP transport: the one asked, else the scenario's, where it reaches."""
    flag = f"--{role}-transport"
    if name is None:
        # one node: DeepEP rides NVLink whatever the scenario names (an explicit name is kept)
        t = transport if nodes > 1 or transport.fabric == "nvlink" else get_transport("nvlink", assumptions)
        if t.fabric == "nvlink" and nodes > 1:
            t = get_transport("efa-proxy" if instance.fabric == "efa" else "ib-ibgda", assumptions)
    else:
        t = get_transport(name, assumptions)  # an unknown name: one line naming --transport's list
        if instance.name not in t.instances:
            from ..catalog.transports import load_transports

            ok = ", ".join(n for n, x in load_transports().items() if instance.name in x.instances)
            raise InputError(flag, name, f"a transport available on {instance.name}: {ok}")
    if t.fabric == "nvlink" and nodes > 1:
        raise InputError(
            flag,
            t.name,
            f"a scale-out transport for the {nodes} {role} nodes: NVLink reaches only one node's GPUs",
        )
    return t


def _kv_transport(given: Any, ekv: EngineKv, engine: str, instance: str) -> KvTransport:
    """The KV transport named, or the engine's default; a default that does not run on the
    instance is refused as the engine's, since the user never typed it."""
    name = given if given is not None else ekv.default_kv_transport
    if not isinstance(name, str):
        raise InputError("--kv-transport", name, "a KV transport name")
    usable = [t.name for t in kv_transports_for(engine, instance)]
    if given is None and name not in usable:
        where = f"{engine}'s default, {name}, does not run on {instance}"
        raise InputError(
            "--kv-transport", None, f"{where}; pass one that does: {', '.join(usable) or 'none'}"
        )
    return get_kv_transport(name, engine, instance)


def resolve_disagg(
    s: Any, instance: Any, engine: Any, transport: Transport, assumptions: Assumptions = CATALOG
) -> DisaggSpec | None:
    """The disaggregated deployment a scenario asks for (None: aggregated), every field checked;
    the sides' transports carry the figures `assumptions` changes."""
    if not is_disaggregated(s):
        extra = [n for n in DISAGG_FIELDS if getattr(s, n, None) is not None]
        if extra:
            flag = flag_of(extra[0])
            raise InputError(
                flag,
                getattr(s, extra[0]),
                "set only with --prefill-nodes and --decode-nodes (or --disagg xPyD)",
            )
        return None
    for name in ("prefill_nodes", "decode_nodes"):
        if getattr(s, name) is not None:
            _count(name, getattr(s, name))
    for name, other in (("prefill_nodes", "decode_nodes"), ("decode_nodes", "prefill_nodes")):
        if getattr(s, name) is None:
            raise InputError(
                flag_of(name),
                None,
                f"missing; give a node count beside {flag_of(other)} (or --disagg xPyD)",
            )
    p, d = _count("prefill_nodes", s.prefill_nodes), _count("decode_nodes", s.decode_nodes)
    if p + d > LIMITS["nodes"]:
        raise InputError("--decode-nodes", d, f"P + D of at most {LIMITS['nodes']:,} nodes (here {p} + {d})")
    sides = []
    for role, nodes in (("prefill", p), ("decode", d)):
        arm = getattr(s, f"{role}_arm")
        if arm is not None:
            arm = str(arm).strip().lower()
            if arm not in SIDE_ARMS:
                raise InputError(f"--{role}-arm", getattr(s, f"{role}_arm"), f"one of {', '.join(SIDE_ARMS)}")
        given_t = getattr(s, f"{role}_transport")
        t = _side_transport(role, given_t, transport, nodes, instance, assumptions)
        graphs = getattr(s, f"{role}_cuda_graphs")
        sides.append(
            Side(
                role,
                nodes,
                arm,
                t,
                bool(s.cuda_graphs) if graphs is None else bool(graphs),
                arm is not None,
                given_t is not None,
                graphs is not None,
            )
        )
    ekv = engine_kv(engine.name)
    kv = _kv_transport(s.kv_transport, ekv, engine.name, instance.name)
    return DisaggSpec(sides[0], sides[1], kv, s.kv_transport is not None, ekv)
