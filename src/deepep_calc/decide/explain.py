"""Words for a verdict: reasons with their numbers, advisories, caveats, the flip's line, flags.

Nothing here computes: every number comes from a `Result`, or from a what-if the caller hands in
(`whatif/memo.py` runs them), so the explanation cannot disagree with the model. The figures the
rule compared come from `verdict.compare`, so a reason never quotes a number the rule did not
use without saying which one it used.

Why one module: the reasons, the advisories and the flip's line quote the same comparison and
the same tagged figures; split, a reason could word a number differently from its advisory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..base.arrays import first_float
from ..base.quantity import Q
from ..base.vocabulary import exchange_of
from ..catalog.measured import load_facts
from ..catalog.model_catalog import load_models, namesake_difference, preset_twin
from ..estimate.arms import duration
from ..estimate.cells import deepep_neighbour_cell
from ..estimate.result import like_with_like
from .bounds import bound_reasons
from .launch import arm_env, launch
from .verdict import (
    ARM_LABELS,
    NO_ARM,
    SYMBOLS,
    Verdict,
    decision_aggregates,
    pair,
    tagged,
    times,
)

# EP sizes far past the kernel references: beyond this multiple of the largest referenced EP,
# the headline says the DeepEP figures are an extrapolation (below it, a reason says so).
FAR_EP_FACTOR = 4
# The uncapped EP_EFA_MAX_QPS of the measured QP finding ([A1230]: 129 vs the default 2).
UNCAPPED_QPS = 129


def _ms_per_layer(q: Q, layers: int) -> str:
    return f"{q.scalar * 1000.0 / max(layers, 1):,.0f} µs"


def tax_words(tax: Q, ratio: Q | None = None) -> str:
    """A negative tax is a saving: say so instead of printing a minus sign in a 'tax'. Beside an
    aggregate ratio above 1 a longer step is no 'tax' on the outcome: say what carries it."""
    if tax.scalar >= 0:
        if ratio is not None and ratio.scalar > 1.0 and tax.scalar > 0:
            return (
                f"DeepEP's step is {tagged(tax)} longer, yet its aggregate is higher: time to first "
                "token and batch size carry it"
            )
        return f"a tax of {tagged(tax)} on every step"
    saved = Q(-tax.value, tax.unit, tax.tag, tax.source)
    return f"DeepEP saves {tagged(saved)} on every step"


def referenced_ep(transport: Any) -> int:
    """The largest EP any kernel reference of this transport was measured at."""
    return max([transport.reference.ep, *(c.ep for c in transport.cross_check)])


def caveats(result: Any, arm: str) -> list[str]:
    """Inputs at the edge of what the model can honestly say: flagged in the headline."""
    r, s = result.resolved, result.scenario
    out: list[str] = []
    dee = result.arms["deepep"]
    top = referenced_ep(r.transport)
    if s.nodes > 1 and dee.feasible and r.world > FAR_EP_FACTOR * top:
        out.append(
            f"Caveat: DeepEP over {r.transport.name} at EP{r.world} is far past the largest EP it was "
            f"measured at (EP{top}); its figures are an extrapolation."
        )
    if s.concurrency < s.nodes:
        out.append(
            f"Caveat: {s.concurrency:,} concurrent requests on {s.nodes:,} nodes leave at least "
            f"{s.nodes - s.concurrency:,} nodes without a request to serve."
        )
    return out


# A what-if the caller runs: the changed scenario's result (or its DeepEP arm) for an update.
WhatIf = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class WhatIfs:
    """The what-ifs the words quote, run by the caller (`whatif/memo.py`): decide/ runs none."""

    deepep_arm: WhatIf  # the DeepEP arm with a knob only DeepEP reads changed (the advisories)
    bound_mover: WhatIf  # a what-if whose DeepEP arm says what would move DeepEP's bound
    afresh: WhatIf  # the whole changed scenario, computed anew (the measured knobs' reason)


def reasons(result: Any, v: Verdict, whatifs: WhatIfs) -> list[str]:
    """Why the verdict is what it is, each line quoting its numbers with their tags."""

    code, arm = v.code, v.recommended_arm
    dee, alt = result.arms["deepep"], result.arms[result.alternative]
    c = v.compared
    assert c is not None
    out: list[str] = []
    if code == "capacity" and not result.arms["replica"].fits_memory:
        out.append(_capacity_reason(result))
    if c.ratio is not None:
        out += _compared_reasons(result, v, whatifs.afresh)
    out += _deciding_reasons(result, v)
    for name, a in result.arms.items():
        if not a.feasible:
            out.append(f"{ARM_LABELS[name]} {_left_out(a)}.")
    if "replica" in result.arms and arm == "replica":
        out += _replica_reasons(result, v)
    else:
        out += _replicas_shown_ahead(result, arm, c.threshold)
    out.append(transport_reason(result))
    bound = launch_bound_reason(result, v)
    if bound:
        out.append(bound)
    out += _extrapolated(result)
    out += bound_reasons(result, whatifs.bound_mover)
    if dee.measured_cell or alt.measured_cell:
        cells = sorted({x for x in (dee.measured_cell, alt.measured_cell) if x})
        out.append(f"Measured cell(s) {', '.join(cells)} supply the tagged-measured numbers above.")
    out += _model_identity(result)
    return out


def _compared_reasons(result: Any, v: Verdict, afresh: WhatIf) -> list[str]:
    """The rule's comparison of DeepEP with the alternative: on which figures, the ratio against
    the noise band, what was set aside, and the per-user step it costs or saves."""
    c = v.compared
    assert c is not None and c.ratio is not None
    dee, alt = result.arms["deepep"], result.arms[result.alternative]
    alt_label = ARM_LABELS[result.alternative]
    basis = (
        "measured aggregates of both arms"
        if c.basis == "measured"
        else "the model's aggregates of both arms (like with like)"
    )
    out = [
        f"Compared on {basis}: DeepEP {pair(c.aggregate['deepep'], c.aggregate[result.alternative])} "
        f"for {alt_label}, ratio {times(c.ratio)}; DeepEP wins only above {c.threshold:.2f}× "
        "(the noise band)."
    ]
    out += c.set_aside
    out += _from_the_measured_knobs(result, afresh)
    a_pu, b_pu, _ = like_with_like(dee, alt, "per_user_tok_s")
    if c.tax_ms_per_token is not None:
        out.append(
            f"Per-user decode: DeepEP {pair(a_pu, b_pu)} for {alt_label}: "
            f"{tax_words(c.tax_ms_per_token, c.ratio)}."
        )
    return out


def _replica_reasons(result: Any, v: Verdict) -> list[str]:
    """The replicas won: no expert traffic leaves a node, and they are compared on model figures."""
    c = v.compared
    assert c is not None
    dee, alt = result.arms["deepep"], result.arms[result.alternative]
    rep = result.arms["replica"]
    out = [
        f"The model fits one node, so {replica_words(result)} avoid the network for experts "
        f"entirely: {tagged(c.aggregate['replica'])} aggregate (model; replicas have no measured "
        f"cell){_replica_choice(result)}."
    ]
    if rep.measured_cell is None and (dee.measured_cell or alt.measured_cell):
        out.append("Measured cells exist for the other arms; the replicas are compared on model figures.")
    return out


def _extrapolated(result: Any) -> list[str]:
    """DeepEP past the largest EP its kernels were measured at (far past it is a caveat)."""
    r = result.resolved
    top = referenced_ep(r.transport)
    if r.scenario.nodes > 1 and top < r.world <= FAR_EP_FACTOR * top and result.arms["deepep"].feasible:
        return [
            f"DeepEP over {r.transport.name} was measured up to EP{top}; at EP{r.world} its kernel "
            "figures are extrapolated by the model."
        ]
    return []


def _capacity_reason(result: Any) -> str:
    single = result.arms["replica"]
    m = single.memory
    return (
        f"On one {result.resolved.instance.name} node each GPU would need "
        f"{tagged(single.memory_gb_per_gpu, 0)} (weights {tagged(m.weights_gb, 0)}, KV "
        f"{tagged(m.kv_gb, 1)}) against {tagged(m.usable_gb, 0)} usable: experts must be sharded "
        "across nodes."
    )


def _left_out(a: Any) -> str:
    """Why an arm is not in the comparison, as a predicate: it cannot run, or (a planner's
    card) it was left out on purpose."""
    if a.why_code == "left out":
        return f"is left out {a.why_not}"
    return f"cannot run here: {a.why_not}"


def _deciding_reasons(result: Any, v: Verdict) -> list[str]:
    """The comparison that decided, when it is not DeepEP against the alternative (said above):
    DeepEP against the replicas that won or that it had to beat, or the recommended arm against
    its closest rival when DeepEP cannot take part."""
    d = v.deciding
    if d is None or d.is_alternative:
        return []
    a, b = d.arms
    la, lb = ARM_LABELS[a], ARM_LABELS[b]
    basis = "measured on both" if d.basis == "measured" else "the model's figures of both"
    band = _band_text(d.ratio)
    who = "DeepEP" if a == "deepep" else la
    both = pair(d.aggregate[a], d.aggregate[b])
    out = [
        f"The comparison that decided is {who} against {lb} ({basis}): {both}, ratio "
        f"{times(d.ratio)}{band}; {who} is recommended only above {d.threshold:.2f}× (the noise band)."
    ]
    a_pu, b_pu, _ = like_with_like(result.arms[a], result.arms[b], "per_user_tok_s")
    step = _step_words(d.tax_ms_per_token, who)
    out.append(f"Per-user decode against {lb}: {who} {pair(a_pu, b_pu)}: {step}.")
    return out


@dataclass(frozen=True)
class _Target:
    """A target as its band's advisory words it: its name, unit and the digits it is quoted to."""

    name: str
    unit: str
    digits: int


PER_USER_FLOOR = _Target("per-user floor", "tok/s", 1)
TTFT_CEILING = _Target("TTFT ceiling", "ms", 0)


def _within_band(arm: str, target: _Target, limit: float, q: Q) -> str:
    """An arm whose figure's band spans a target: it may meet it or not; the model cannot tell.
    A floor (per-user rate) is met from above, a ceiling (TTFT) from below."""
    label = ARM_LABELS[arm]
    verb, its = ("are", "their") if label.endswith("s") else ("is", "its")
    ok = q.scalar >= limit if target.name.endswith("floor") else q.scalar <= limit
    digits = target.digits
    return (
        f"{label} {verb} within the band of the {target.name} of {limit:g} {target.unit}: {its} figure "
        f"{tagged(q, digits)} {'meets' if ok else 'misses'} it, but {its} band{_band_of(q, digits)} "
        "spans it; measure before relying on either."
    )


def _band_of(q: Q, digits: int) -> str:
    """` 17.2–21.0` for a banded figure, else ''."""
    if not q.banded:
        return ""
    return f" {first_float(q.low):,.{digits}f}–{first_float(q.high):,.{digits}f}"


def _band_text(q: Q) -> str:
    """` (band 0.83–1.19×)` for a banded ratio, else ''."""
    if not q.banded:
        return ""
    return f" (band {first_float(q.low):.2f}–{first_float(q.high):.2f}×)"


def _step_words(tax: Q, who: str) -> str:
    if tax.scalar >= 0:
        return f"{who}'s step is {tagged(tax)} longer"
    saved = Q(-tax.value, tax.unit, tax.tag, tax.source)
    return f"{who}'s step is {tagged(saved)} shorter"


def transport_reason(result: Any) -> str:
    """How DeepEP's exchange leaves the node here (host proxy, GPU-initiated, or none at all)."""
    r, s = result.resolved, result.scenario
    dee = result.arms["deepep"]
    proxy = dee.breakdown_ms["proxy"]
    comm = dee.breakdown_ms["moe_comm"]
    layers = r.model.moe_layers
    if r.transport.host_proxied and s.nodes > 1 and s.cuda_graphs and proxy.scalar == 0.0:
        return (
            f"{r.transport.name} posts cross-node dispatches through a host CPU proxy; under CUDA graphs "
            "replay removes the engine's launches and hand-offs, not the proxy's posts, which are inside "
            f"the kernel time its references measure: the all-to-all costs {tagged(comm)} per step "
            f"({_ms_per_layer(comm, layers)} per MoE layer; docs/model.md §3)."
        )
    if r.transport.host_proxied and s.nodes > 1:
        return (
            f"{r.transport.name} posts every cross-node dispatch through a host CPU proxy: "
            f"{tagged(proxy)} per step ({layers} MoE layers x {_ms_per_layer(proxy, layers)}) on top "
            f"of {tagged(comm)} of kernel time; fewer bytes on the wire do not shorten an issue-bound path."
        )
    if s.nodes > 1:
        return (
            f"{r.transport.name} is GPU-initiated: no host round trip per layer; its kernels cost "
            f"{tagged(comm)} per step ({_ms_per_layer(comm, layers)} per MoE layer)."
        )
    return "One node: expert traffic stays on NVLink and no EFA path is involved."


# An eager step is launch-bound when the host time beyond the GPU work is at least this share of it.
LAUNCH_BOUND_SHARE = 0.05


def _launch_bound(a: Any) -> bool:
    engine, step = a.breakdown_ms["engine"].scalar, a.step_ms.scalar
    return bool(a.feasible) and step > 0 and engine >= LAUNCH_BOUND_SHARE * step


def launch_bound_reason(result: Any, v: Verdict) -> str:
    """In eager mode, when the host's kernel launches bind the step of the arms compared, say so:
    their exchange costs then hide under the launching thread, and arms can tie whatever their
    exchange costs (CUDA graphs take the launches off the step)."""
    s = result.scenario
    if s.cuda_graphs:
        return ""
    d = v.deciding
    compared = list(d.arms) if d is not None else [v.recommended_arm]
    arms = result.arms
    if not compared or any(n not in arms or not _launch_bound(arms[n]) for n in compared):
        return ""
    shown = [n for n in arms if _launch_bound(arms[n])]
    every = len(shown) == len(arms)
    parts = ", ".join(f"{ARM_LABELS[n]} {tagged(arms[n].breakdown_ms['engine'], 2)}" for n in shown)
    whose = "every arm's" if every else "the compared arms'"
    return (
        f"Launch-bound: in eager mode the host's kernel launches bind {whose} step (the host runs "
        f"past the GPU work by {parts}): an exchange cheaper on the GPU does not shorten such a step; "
        "CUDA graphs replay the launches (--cuda-graphs)."
    )


def assumed_mode_note(result: Any) -> str:
    """The one line a card shows when the question left the graph mode unset: which mode is
    assumed, and why (the calibration cells ran eager; vLLM and SGLang capture CUDA graphs
    unless told not to, so for them the flag is usually the honest one)."""
    e = result.resolved.engine
    if result.scenario.cuda_graphs:
        return ""
    line = "Decode mode not given: eager assumed (the calibration cells ran eager)"
    if e.graph_flag_graphs.startswith("("):  # the engine captures graphs by default
        line += f"; {e.name} captures CUDA graphs by default: pass --cuda-graphs unless you disable them"
    else:
        line += "; pass --cuda-graphs if you serve with CUDA graphs"
    return line + "."


def mechanism(result: Any, v: Verdict) -> str:
    """The one reason that says why, for a short blurb beside the verdict (the page's lit card):
    the launch-bound step when it decides, else how the exchange leaves the node. It is one of
    `reasons(...)`, word for word."""
    if v.status == "nothing_fits":
        return "Nothing fits as asked: the headline names the smallest change that fits."
    bound = launch_bound_reason(result, v)
    if v.code == "capacity" and not bound and not result.arms["replica"].fits_memory:
        return _capacity_reason(result)
    return bound or transport_reason(result)


def _replicas_shown_ahead(result: Any, arm: str, threshold: float) -> list[str]:
    """Why single-node replicas are not picked when the arms table shows them ahead (by more
    than the noise band).

    The table shows each arm's own figure: a measured aggregate where a cell has one (ramp and
    tail included), else the model's. Replicas have no measured cell, so beside a measured arm
    they can look faster and cheaper while the rule, comparing like with like, finds no win.
    """
    rep, chosen = result.arms.get("replica"), result.arms.get(arm)
    if rep is None or chosen is None or rep is chosen or not rep.feasible:
        return []
    if rep.meets_slo is False or rep.meets_ttft is False:  # out of contention: said elsewhere
        return []
    if not rep.aggregate_tok_s.scalar > chosen.aggregate_tok_s.scalar * threshold:
        return []  # within the noise band the table itself shows no lead to explain
    rq, cq, measured = decision_aggregates(rep, chosen)
    basis = "measured on both" if measured else "the model's figures of both; replicas have no measured cell"
    label = ARM_LABELS[arm]
    rule = (
        f"DeepEP is recommended only above {threshold:.2f}× every other arm in contention"
        if arm == "deepep"
        else f"replicas are recommended only above {threshold:.2f}× {label}"
    )
    return [
        f"Single-node replicas show {tagged(rep.aggregate_tok_s)} aggregate against {label}'s "
        f"{tagged(chosen.aggregate_tok_s)}, but like with like ({basis}) they are "
        f"{pair(rq, cq)}: {rule} (the noise band)."
    ]


def _from_the_measured_knobs(result: Any, afresh: WhatIf) -> list[str]:
    """A DeepEP what-if on EP_NUM_COMMS / EP_EFA_MAX_QPS, read against the model at the run.

    The run's figure is a benchmark's (ramp and tail included); the what-if is the model's, so
    the honest size of the knob's effect is model against model, said here in numbers.
    """

    r, s = result.resolved, result.scenario
    dee = result.arms["deepep"]
    if not r.measured or not dee.feasible:
        return []
    cell = deepep_neighbour_cell(r)
    if cell is None or cell.deepep is None or cell.deepep.aggregate_tok_s is None:
        return []
    there = afresh({"comms": cell.comms, "max_qps": cell.max_qps})
    model_there = there.arms["deepep"].model_aggregate_tok_s
    here = dee.model_aggregate_tok_s or dee.aggregate_tok_s
    if model_there is None or not model_there.scalar > 0:
        return []
    knobs = []
    if cell.comms != s.comms:
        knobs.append(f"EP_NUM_COMMS={cell.comms}")
    if cell.max_qps != s.max_qps:
        knobs.append(f"EP_EFA_MAX_QPS={cell.max_qps}")
    measured = Q.measured(cell.deepep.aggregate_tok_s, "tok/s", cell.source)
    change = here.scalar / model_there.scalar - 1.0
    return [
        f"DeepEP was measured at {' and '.join(knobs)} (cell {cell.id}): {tagged(measured)}, a "
        f"benchmark figure with its ramp; the model gives {tagged(model_there)} there and "
        f"{tagged(here)} here, so this setting changes DeepEP's aggregate by {change:+.1%}."
    ]


def _model_identity(result: Any) -> list[str]:
    """Whether a user's config.json got a preset's measured cells, and if not, why not."""

    s = result.scenario
    if s.model.strip().lower() in load_models():
        return []
    twin = preset_twin(result.model)
    if twin is not None:
        if s.weight_dtype is not None:
            return [
                f"This config.json is architecturally the preset {twin}, but --weight-dtype makes it "
                "another deployment: the preset's measured cells do not apply."
            ]
        return [
            f"This config.json is architecturally the preset {twin} (same shape, attention and "
            "dtypes): the preset's measured cells apply where the scenario matches them."
        ]
    near = namesake_difference(result.model)
    if near is not None:
        name, diff = near
        shown = ", ".join(diff[:3]) + (f" and {len(diff) - 3} more" if len(diff) > 3 else "")
        return [
            f"This config.json names {name} but differs from that preset in {shown}: the preset's "
            "measured cells do not apply, so every figure is modelled."
        ]
    return []


def advisories(result: Any, v: Verdict, fixes: list[Any], whatifs: WhatIfs) -> list[str]:
    """Things worth doing or knowing that do not change the verdict's code."""

    r = result.resolved
    s = r.scenario
    out: list[str] = []
    facts = load_facts()
    t = r.transport
    if t.comms_sensitive and s.comms < 8 and s.nodes > 1 and result.arms["deepep"].feasible:
        better = whatifs.deepep_arm({"comms": 8})
        out.append(
            f"Set EP_NUM_COMMS=8: the DeepEP step falls from {tagged(result.arms['deepep'].step_ms)} "
            f"to {tagged(better.step_ms)} (measured on vLLM: ITL halves, 203 -> 100 ms)."
        )
    if t.name == "efa-proxy" and s.max_qps <= 2 and s.nodes > 1 and result.arms["deepep"].feasible:
        uncapped = whatifs.deepep_arm({"max_qps": UNCAPPED_QPS})
        out.append(_qp_advisory(result, facts["qp_uncap_throughput_gain"].value, uncapped))
    for name, arm in result.arms.items():
        if arm.slo_status == "within the band":
            out.append(_within_band(name, PER_USER_FLOOR, s.slo_tok_s, arm.per_user_tok_s))
        elif arm.meets_slo is False:
            out.append(
                f"{ARM_LABELS[name]} misses the per-user floor of {s.slo_tok_s:g} tok/s "
                f"({tagged(arm.per_user_tok_s)})."
            )
        if arm.ttft_status == "within the band":
            out.append(_within_band(name, TTFT_CEILING, s.ttft_ms, arm.ttft_ms))
        elif arm.meets_ttft is False:
            out.append(
                f"{ARM_LABELS[name]} misses the TTFT ceiling of {s.ttft_ms:g} ms ({tagged(arm.ttft_ms, 0)})."
            )
    chosen = result.arms.get(v.recommended_arm)
    if chosen is not None and chosen.feasible and s.concurrency > chosen.running.scalar:
        out.append(
            f"{ARM_LABELS[v.recommended_arm]} runs {chosen.running.scalar:,.0f} sequences at once "
            f"({r.engine.name}'s batch limit); the other {s.concurrency - chosen.running.scalar:,.0f} "
            f"requests wait for a slot, which is in its TTFT of {duration(chosen.ttft_ms.scalar)}."
        )
    for fix in fixes[1:]:
        goal = "fits" if v.status == "nothing_fits" else "meets the targets"
        out.append(f"Also {goal}: {fix.change} ({fix.note}).")
    if v.status != "ok" and not fixes:
        out.append(_searched(v.status))
    if r.engine.name == "trtllm" and r.world <= r.model.topk:
        out.append(
            f"TensorRT-LLM picks DeepEP only when moe_ep_size > top_k ({r.world} <= {r.model.topk}): "
            "the DeepEP arm would silently fall back."
        )
    if not r.instance.gda_supported and r.instance.fabric == "efa":
        out.append(f"EFA-GDA (GPU-initiated) is not supported on {r.instance.name}; p5en and p6 have it.")
    price = result.arms["deepep"].usd_per_mtok
    if price.scalar != price.scalar:
        out.append(f"No price for {r.instance.name}: pass --price-per-hour to get $/Mtok.")
    return out


def _qp_advisory(result: Any, measured_gain: float, uncapped_arm: Any) -> str:
    """Raising the QP cap, with the model's effect here (`uncapped_arm`: DeepEP at the uncapped
    figure) beside the one measured elsewhere."""
    s = result.scenario
    uncapped = UNCAPPED_QPS
    dee = result.arms["deepep"]
    here = dee.model_aggregate_tok_s or dee.aggregate_tok_s
    there = uncapped_arm.aggregate_tok_s
    gain = there.scalar / here.scalar - 1.0
    elsewhere = (
        f"uncapping it ({uncapped} vs 2) gave +{measured_gain * 100:.1f} % throughput [measured] on "
        "2x p6-b200 through the vLLM proxy path"
    )
    if gain < 0.01:
        return (
            f"EP_EFA_MAX_QPS={s.max_qps}: the model sees under 1 % from uncapping it here "
            f"({tagged(here)} now), because the host or the wire, not the queue pairs, sets this "
            f"step; {elsewhere}: a step the kernel's issue rate sets can gain that much."
        )
    return (
        f"Raise EP_EFA_MAX_QPS where the ring allows: at {uncapped} the model gives DeepEP "
        f"{tagged(there)} against {tagged(here)} now ({gain:+.1%}); {elsewhere}."
    )


def _searched(status: str) -> str:
    if status == "nothing_fits":
        return (
            "Searched without success: more nodes (up to the limit), a larger-memory instance, a "
            "narrower weight dtype, lower concurrency and shorter inputs."
        )
    return (
        "Searched without success: other production transports, CUDA graphs, EP_NUM_COMMS=8, more "
        "nodes and lower concurrency; the targets may be beyond this model on this hardware."
    )


def _with_backend(text: str, engine: Any, transport: Any) -> str:
    """The DeepEP flag that loads this transport's library, or, where the engine has none, a
    note in its place (prose becomes a comment in the Run-it block, never a flag)."""
    backend = engine.deepep_backend.get(transport.library)
    if backend is not None:
        return text.replace("{deepep_backend}", backend)
    return (
        f"{engine.label} has no backend in this catalog that loads {transport.name} "
        f"({transport.library}): see that library's own serving instructions"
    )


def flip_text(label: str, new_code: str, ratio: Q) -> str:
    """The flip's advisory: the change, the code it flips to, and the ratio there."""
    return (
        f"{label} would flip the verdict to {SYMBOLS[new_code]} {new_code} "
        f"(DeepEP / alternative aggregate {tagged(ratio, 2)})."
    )


def replica_layout(result: Any) -> str:
    """The exchange each single-node replica runs (allgather, deepep or tp), "" when the arm's
    choice differs row by row (a sweep) or the result has no replicas."""
    rep = getattr(result, "arms", {}).get("replica")  # a disaggregated side's stand-in has none
    layout = getattr(rep, "layout", "")
    return exchange_of(layout) if isinstance(layout, str) and layout else ""


REPLICA_LAYOUT_WORDS = {"deepep": "DeepEP over NVLink", "tp": "tensor parallel", "allgather": "allgather"}


def _replica_choice(result: Any) -> str:
    """Why this layout inside each node: the one-node layout the model rates best."""
    inner = REPLICA_LAYOUT_WORDS.get(replica_layout(result))
    if inner is None:
        return ""
    return (
        f"; inside each node the model rates {inner} best of allgather, DeepEP over NVLink and "
        "tensor parallel"
    )


def replica_words(result: Any) -> str:
    """`2 single-node replicas of DeepEP over NVLink`: the deployment and the layout each node runs."""
    n = result.scenario.nodes
    inner = REPLICA_LAYOUT_WORDS.get(replica_layout(result))
    count = "single-node replicas" if not isinstance(n, int) else f"{n} single-node replica{'s' * (n != 1)}"
    return f"{count} of {inner}" if inner else count


def engine_flags(result: Any, arm: str) -> dict[str, Any]:
    """Engine arguments, config, environment and the ready launch block for the recommended arm."""

    r = result.resolved
    s = r.scenario
    if arm == NO_ARM:
        return {
            "engine": r.engine.name,
            "arm": None,
            "args": [],
            "config": {},
            "env": {},
            "cuda_graphs": "",
            "requires": "",
            "launch": None,
        }
    spec = r.engine.flags.get(arm) or r.engine.flags[s.alternative]
    world = r.world
    inner = replica_layout(result) if arm == "replica" else ""
    if inner in ("deepep", "tp"):  # each replica runs that arm's engine layout over its own node
        spec, world = r.engine.flags[inner], r.gpus_per_node

    def fill(text: str) -> str:
        if "{deepep_backend}" in text:
            text = _with_backend(text, r.engine, r.transport)
        return text.replace("{world}", str(world)).replace("{gpus_per_node}", str(r.gpus_per_node))

    return {
        "engine": r.engine.name,
        "arm": arm,
        "args": [fill(a) for a in spec.args],
        "config": {k: fill(v) for k, v in spec.config.items()},
        "env": arm_env(result, arm, spec, fill),
        "cuda_graphs": r.engine.graph_flag_graphs if s.cuda_graphs else r.engine.graph_flag_eager,
        "requires": r.transport.requires if arm == "deepep" else "",
        "launch": launch(result, arm, spec, fill),
    }
