"""What would make a scenario work: the smallest change that fits, or that meets the targets.

When nothing fits (every arm out of HBM, or queueing past the prompt ceiling) or no arm meets
the user's targets, a verdict that only says so leaves the reader stuck. This module names the
changes that would work, each checked by running the changed scenario through the same model
and the same rule (`verdict.assess`), never guessed:

nothing fits      fewest nodes (solved with `breakeven.first_true` on the vectorised model), a
                  larger-memory instance, a narrower weight dtype, the largest concurrency and
                  the largest input length that fit;
targets missed    a production transport, CUDA graphs, EP_NUM_COMMS=8, fewest nodes, and the
                  largest concurrency at which some arm meets every target.

Numeric answers come from the model's own figures (no measured-cell substitution), then the
scalar scenario is evaluated to confirm the answer before it is offered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..base.arrays import first, np
from ..base.errors import CalcError
from ..base.quantity import Q
from ..base.vocabulary import flag_of
from ..catalog.hardware import load_instances
from ..catalog.models import DTYPE_BYTES
from ..catalog.transports import load_transports
from ..decide.verdict import ARM_LABELS, NO_ARM, assess, tagged
from ..estimate.arms import duration
from ..estimate.compute import compute
from ..question.fields import LIMITS

# Transports worth proposing: the production GPU-initiated paths first, then the strongest
# host proxies (research paths are not advice). The flip search proposes the same ones.
PROPOSED_TRANSPORTS = ("efa-gda", "ib-ibgda", "efa-proxy", "efa-uccl")
NARROWER_DTYPES = ("fp8", "nvfp4")  # weight formats engines serve MoE checkpoints in
_CONFIRM_TRIES = 8  # a grid answer that fails the scalar check: try the next few integers


@dataclass(frozen=True)
class Fix:
    """One change to the scenario, the arm the verdict would then recommend, and its figure."""

    change: str  # as CLI flags, e.g. "--nodes 4"
    update: dict[str, Any]
    arm: str
    note: str
    figures: dict[str, Q] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "change": self.change,
            "update": dict(self.update),
            "arm": self.arm,
            "note": self.note,
            "figures": {k: v.to_json() for k, v in self.figures.items()},
        }


def fixes_for(result: Any, status: str) -> list[Fix]:
    """The fixes for a verdict's status (none for `ok`)."""
    if status == "nothing_fits":
        return fits(result)
    if status == "targets_missed":
        return meets(result)
    return []


# Checking one changed scenario ----------------------------------------------------------------


def _changed(result: Any, update: dict[str, Any]) -> Any | None:
    """The changed scenario computed (no verdict words), or None when it is refused."""

    try:
        return compute(result.resolved.change(**update))
    except CalcError:
        return None


def _outcome(res: Any, targets: bool) -> str | None:
    """The arm the rule recommends for a changed scenario, if it works (fits / meets targets)."""

    if res is None:
        return None
    a = assess(res)
    rec = str(first(a.recommended))
    if rec == NO_ARM:
        return None
    if targets and not bool(first(a.meets_any)):
        return None
    return rec


def _fix(result: Any, update: dict[str, Any], change: str, targets: bool) -> Fix | None:

    res = _changed(result, update)
    arm = _outcome(res, targets)
    if arm is None:
        return None
    a = res.arms[arm]
    figures = {"aggregate_tok_s": a.aggregate_tok_s, "per_user_tok_s": a.per_user_tok_s, "ttft_ms": a.ttft_ms}
    s = result.scenario
    label = ARM_LABELS[arm]
    first = f"first token in {duration(a.ttft_ms.scalar)} [{a.ttft_ms.tag}]"
    if targets and s.slo_tok_s is not None and s.ttft_ms is None:
        note = f"{label}: {tagged(a.per_user_tok_s)} per user"
    elif targets and s.ttft_ms is not None and s.slo_tok_s is None:
        note = f"{label}: {first}"
    elif targets:
        note = f"{label}: {tagged(a.per_user_tok_s)} per user, {first}"
    else:
        note = f"{label}: {tagged(a.memory_gb_per_gpu)} per GPU, {first}"
    return Fix(change, update, arm, note, figures)


# Searching a numeric field on the vectorised model --------------------------------------------


def _works(res: Any, targets: bool) -> np.ndarray:
    """Rows where some arm is feasible (and, with targets, meets them)."""
    ok = None
    for arm in res.arms.values():
        row = np.asarray(arm.feasible, bool)
        if targets:
            if arm.meets_slo is not None:
                row = row & np.asarray(arm.meets_slo, bool)
            if arm.meets_ttft is not None:
                row = row & np.asarray(arm.meets_ttft, bool)
        ok = row if ok is None else ok | row
    assert ok is not None
    return ok


# size: one first-crossing search: field, bracket, goal and direction, each given by both callers
def _search(result: Any, name: str, lo: int, hi: int, targets: bool, *, working: bool) -> int | None:
    """First value in [lo, hi] where the model works (`working`) or stops working."""
    from ..estimate.passes import first_true, model  # the vectorised search: only a fix imports it

    if lo > hi:
        return None
    r = result.resolved

    def pred(values: np.ndarray) -> np.ndarray:
        ok = _works(model(r, **{name: values}), targets)
        ok = np.broadcast_to(ok, np.shape(values))
        return ok if working else ~ok

    try:
        return first_true(pred, lo, hi)
    except CalcError:  # e.g. an input length beyond the model's context on the grid
        return None


def _more_nodes(result: Any, targets: bool) -> Fix | None:

    s, r = result.scenario, result.resolved
    found = _search(result, "nodes", s.nodes + 1, LIMITS["nodes"], targets, working=True)
    if found is None:
        return None
    extra: dict[str, Any] = {}
    if r.transport.fabric == "nvlink":  # NVLink does not leave a node: name a transport that does
        scale_out = [t.name for t in load_transports().values() if t.fabric != "nvlink"]
        on = [t for t in scale_out if r.instance.name in load_transports()[t].instances]
        if not on:
            return None
        extra = {"transport": on[0]}
    for n in range(found, min(found + _CONFIRM_TRIES, LIMITS["nodes"]) + 1):
        change = f"--nodes {n}" + (f" --transport {extra['transport']}" if extra else "")
        fix = _fix(result, {"nodes": n, **extra}, change, targets)
        if fix is not None:
            return fix
    return None


def _less(result: Any, name: str, targets: bool) -> Fix | None:
    """The largest value of `name` below the scenario's at which it works."""
    current = int(getattr(result.scenario, name))
    if current <= 1:
        return None
    broken = _search(result, name, 1, current, targets, working=False)
    if broken is None or broken <= 1:
        return None
    flag = flag_of(name)
    for value in range(broken - 1, max(broken - 1 - _CONFIRM_TRIES, 0), -1):
        fix = _fix(result, {name: value}, f"{flag} {value:,}", targets)
        if fix is not None:
            return fix
    return None


# Nothing fits -----------------------------------------------------------------------------------


def fits(result: Any) -> list[Fix]:
    """Changes after which some arm fits, most workload-preserving first."""
    out = [_more_nodes(result, targets=False), _bigger_instance(result), _narrower_dtype(result)]
    out += [_less(result, "concurrency", targets=False), _less(result, "isl", targets=False)]
    return [f for f in out if f is not None]


def _bigger_instance(result: Any) -> Fix | None:
    r = result.resolved
    larger = sorted(
        (i for i in load_instances().values() if i.hbm_gb > r.instance.hbm_gb), key=lambda i: i.hbm_gb
    )
    for inst in larger:
        on = [t.name for t in load_transports().values() if inst.name in t.instances]
        if r.scenario.nodes > 1:
            on = [t for t in on if load_transports()[t].fabric != "nvlink"]
        if not on:
            continue
        transport = r.transport.name if r.transport.name in on else on[0]
        update = {"instance": inst.name, "transport": transport}
        change = f"--instance {inst.name}" + (
            f" --transport {transport}" if transport != r.transport.name else ""
        )
        fix = _fix(result, update, change, targets=False)
        if fix is not None:
            return fix
    return None


def _narrower_dtype(result: Any) -> Fix | None:
    m = result.model
    widest = max(DTYPE_BYTES[m.weight_dtype], DTYPE_BYTES[m.routed_dtype])
    for dtype in NARROWER_DTYPES:
        size = DTYPE_BYTES[dtype]
        if size >= widest or size > DTYPE_BYTES[m.routed_dtype]:
            continue
        fix = _fix(result, {"weight_dtype": dtype}, f"--weight-dtype {dtype}", targets=False)
        if fix is not None:
            return fix
    return None


# Targets missed ---------------------------------------------------------------------------------


def meets(result: Any) -> list[Fix]:
    """Changes after which some arm meets every target, workload-preserving first."""
    s, r = result.scenario, result.resolved
    out: list[Fix | None] = []
    for name in PROPOSED_TRANSPORTS:
        spec = load_transports()[name]
        if name != r.transport.name and r.instance.name in spec.instances:
            out.append(_fix(result, {"transport": name}, f"--transport {name}", targets=True))
    if not s.cuda_graphs:
        out.append(_fix(result, {"cuda_graphs": True}, "--cuda-graphs", targets=True))
    if r.transport.comms_sensitive and s.comms < 8 and s.nodes > 1:
        out.append(_fix(result, {"comms": 8}, "--comms 8", targets=True))
    out.append(_more_nodes(result, targets=True))
    out.append(_less(result, "concurrency", targets=True))
    found = [f for f in out if f is not None]
    # a change of transport that helps only because the arm it helps is not DeepEP is noise
    return [f for f in found if not (f.update.keys() == {"transport"} and f.arm != "deepep")]
