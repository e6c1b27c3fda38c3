"""The headline of a verdict: one sentence that says what to run and why, from the figures.

The rule (`verdict.py`) settles the code and the recommended arm; this module words it, with
the compared figures beside the claim, so a headline never states more than its numbers: a
ratio above 1 next to a positive tax says why both hold, a close call says so, nothing-fits
names the smallest change that fits, missed targets name what would meet them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..base.arrays import first_float
from ..base.quantity import Q
from ..catalog.transports import deepep_route
from ..estimate.arms import duration, prompt_ceiling_ms
from .explain import replica_words
from .verdict import ARM_LABELS, Comparison, Verdict, pair, tagged, times


def step_clause(ratio: Q, tax: Q) -> str:
    """How the per-token step reads beside the aggregate ratio, with no negative 'more'.

    A ratio above 1 next to a longer step (or below 1 next to a shorter one) is possible: the
    aggregate also counts time to first token and batch size. The clause then says so instead
    of letting the two numbers seem to contradict each other.
    """
    longer = tax.scalar > 0
    size = Q(abs(tax.scalar), tax.unit, tax.tag, tax.source)
    if ratio.scalar > 1.0 and longer:
        return (
            f", despite a decode step {tagged(size)} longer: time to first token and batch size "
            "carry the aggregate"
        )
    if ratio.scalar <= 1.0 and not longer and size.scalar > 0:
        return (
            f", although its decode step is {tagged(size)} shorter: time to first token and batch "
            "size cost more than that saves"
        )
    if longer:
        return f" and pays a tax of {tagged(size)}"
    if size.scalar > 0:
        return f" and saves {tagged(size)}"
    return ""


def headline(
    result: Any, v: Verdict, contending: dict[str, bool], fixes: list[Any], caveats: list[str]
) -> str:
    """The one sentence (or few) a reader takes away, then the caveats; it quotes the compared
    figures."""
    parts: list[str] = []
    if v.status == "nothing_fits":
        parts.append(_nothing_fits(result, fixes))
    else:
        if v.status == "targets_missed":
            parts.append(_targets_missed(result, fixes))
        parts.append(_main(result, v, contending))
    parts += caveats
    return " ".join(parts)


def _fix_text(fixes: list[Any], goal: str) -> str:
    if not fixes:
        return f"No single change the tool searched {goal} (the advisories say what was tried)."
    first = fixes[0]
    more = f"; also {', '.join(f.change for f in fixes[1:3])}" if len(fixes) > 1 else ""
    return f"Smallest change that {goal}: {first.change} (then {first.note}){more}."


def _nothing_fits(result: Any, fixes: list[Any]) -> str:
    r, s = result.resolved, result.scenario
    arms = result.arms
    if not any(bool(a.fits_memory) for a in arms.values()):
        lean = min(arms, key=lambda n: arms[n].memory_gb_per_gpu.scalar)
        why = (
            f"no arm fits in HBM (the leanest, {ARM_LABELS[lean]}, needs "
            f"{arms[lean].memory_gb_per_gpu.scalar:,.0f} GB per GPU against "
            f"{arms[lean].memory.usable_gb.scalar:,.0f} GB usable)"
        )
    elif all(bool(a.splits) and bool(a.fits_memory) for a in arms.values()):
        quick = min(arms, key=lambda n: arms[n].ttft_ms.scalar)
        why = (
            f"every arm keeps requests waiting past the "
            f"{duration_text(prompt_ceiling(s))} a client waits (quickest: {ARM_LABELS[quick]}, "
            f"first token after {duration_text(arms[quick].ttft_ms.scalar)})"
        )
    else:
        why = "; ".join(f"{ARM_LABELS[n]} {a.why_not}" for n, a in arms.items())
    return (
        f"Nothing fits on {s.nodes}× {r.instance.name} at concurrency {s.concurrency:,} "
        f"(ISL {s.isl:,} / OSL {s.osl:,}): {why}. {_fix_text(fixes, 'fits')}"
    )


def duration_text(ms: float) -> str:
    return duration(ms)


def prompt_ceiling(s: Any) -> float:
    return prompt_ceiling_ms(s.ttft_ms)


def _targets_missed(result: Any, fixes: list[Any]) -> str:
    s = result.scenario
    missed: list[str] = []
    feasible = {n: a for n, a in result.arms.items() if a.feasible}
    if s.slo_tok_s is not None and not any(a.meets_slo for a in feasible.values()):
        best = max(feasible, key=lambda n: feasible[n].per_user_tok_s.scalar)
        missed.append(
            f"the {s.slo_tok_s:g} tok/s per-user floor (fastest: {ARM_LABELS[best]} at "
            f"{tagged(feasible[best].per_user_tok_s)}{_within(feasible[best].slo_status)})"
        )
    if s.ttft_ms is not None and not any(a.meets_ttft for a in feasible.values()):
        best = min(feasible, key=lambda n: feasible[n].ttft_ms.scalar)
        missed.append(
            f"the {s.ttft_ms:g} ms TTFT ceiling (quickest: {ARM_LABELS[best]} at "
            f"{tagged(feasible[best].ttft_ms, 0)}{_within(feasible[best].ttft_status)})"
        )
    if not missed:  # each target is met by some arm, but no arm meets all of them at once
        missed.append("every target at once (each is met by some arm, none meets them together)")
    goal = "meets it" if len(missed) == 1 and (s.slo_tok_s is None or s.ttft_ms is None) else "meets them"
    return f"No arm meets {' or '.join(missed)}. {_fix_text(fixes, goal)}"


def _within(status: str | None) -> str:
    """`, within its band` beside a target's nearest figure whose band spans the target."""
    return ", though its band spans the target" if status == "within the band" else ""


@dataclass(frozen=True)
class _Terms:
    """What every headline quotes of the rule's comparison: the alternative, the comparison,
    DeepEP's route, the like-with-like note and both aggregates."""

    alt: str
    c: Comparison
    t: str
    basis: str
    dee_a: Q
    alt_a: Q


def _main(result: Any, v: Verdict, contending: dict[str, bool]) -> str:
    """The headline's sentence for the verdict's code: capacity, DeepEP or a non-DeepEP arm."""
    alt = result.alternative
    c = v.compared
    assert c is not None
    w = _Terms(
        alt=alt,
        c=c,
        t=deepep_route(result.resolved.transport.name, result.resolved.scenario.nodes),
        basis="; measured figures set aside to compare like with like" if c.set_aside else "",
        dee_a=c.aggregate["deepep"],
        alt_a=c.aggregate[alt],
    )
    if v.code == "capacity":
        return _capacity_main(result, v, contending, w)
    if v.code == "deepep":
        return _deepep_main(result, v, contending, w)
    return _dense_main(result, v, contending, w)


def _capacity_main(result: Any, v: Verdict, contending: dict[str, bool], w: _Terms) -> str:
    """The model does not fit one node: say so, then which way to shard the experts."""
    alt, c, t, basis, dee_a, alt_a = w.alt, w.c, w.t, w.basis, w.dee_a, w.alt_a
    arm = v.recommended_arm
    single = result.arms["replica"]
    lead = (
        f"Shard experts across nodes: one node would need {single.memory_gb_per_gpu.scalar:,.0f} GB "
        f"per GPU against {single.memory.usable_gb.scalar:,.0f} GB usable."
    )
    if v.close_call and c.ratio is not None:
        lo, hi = _band(c.ratio)
        return (
            f"{lead} Either EP flavour, too close to call: DeepEP over {t} reaches {times(c.ratio)} the "
            f"{ARM_LABELS[alt]} aggregate ({pair(dee_a, alt_a)}), and the model's error band "
            f"{lo:.2f}–{hi:.2f}× spans 1.00×; {ARM_LABELS[arm]} is likely faster."
        )
    if arm == "deepep":
        if contending[alt] and c.ratio is not None:
            return (
                f"{lead} Run DeepEP over {t}: {times(c.ratio)} the {ARM_LABELS[alt]} aggregate "
                f"({pair(dee_a, alt_a)}{basis})."
            )
        return f"{lead} Run DeepEP over {t}: {ARM_LABELS[alt]} {_why_out(result, alt)}."
    if contending["deepep"] and c.ratio is not None:
        return (
            f"{lead} Run {ARM_LABELS[arm]}: DeepEP over {t} reaches {times(c.ratio)} its aggregate "
            f"({pair(dee_a, alt_a)}{basis})."
        )
    return f"{lead} Run {ARM_LABELS[arm]}: DeepEP over {t} {_why_out(result, 'deepep')}."


def _deepep_main(result: Any, v: Verdict, contending: dict[str, bool], w: _Terms) -> str:
    """DeepEP is recommended: against the comparison that decided, or as the only arm left."""
    alt, c, t, basis, dee_a, alt_a = w.alt, w.c, w.t, w.basis, w.dee_a, w.alt_a
    d = v.deciding
    rivals = [n for n in (alt, "replica") if contending[n]]
    if not rivals:
        return (
            f"Run DeepEP over {t}: it is the only arm that "
            f"{'meets the targets' if v.status == 'ok' and _has_targets(result) else 'can run here'}."
        )
    if v.close_call and d is not None and not d.is_alternative:
        return _close_deciding(result, v)
    if v.close_call and contending[alt] and c.ratio is not None:
        return _close_text(result, "DeepEP", c)
    if d is not None and not d.is_alternative:
        other = d.arms[1]
        return (
            f"Run DeepEP over {t}: {times(d.ratio)} {whose(other)} aggregate, its closest "
            f"rival ({pair(d.aggregate['deepep'], d.aggregate[other])})"
            f"{step_clause(d.ratio, d.tax_ms_per_token)}."
        )
    lead = f"Run DeepEP over {t}"
    if contending[alt] and c.ratio is not None and c.tax_ms_per_token is not None:
        return (
            f"{lead}: {times(c.ratio)} the {ARM_LABELS[alt]} aggregate ({pair(dee_a, alt_a)}{basis})"
            f"{step_clause(c.ratio, c.tax_ms_per_token)}."
        )
    other = rivals[0]
    return (
        f"{lead}: {pair(dee_a, c.aggregate[other])} for {ARM_LABELS[other]}; "
        f"{ARM_LABELS[alt]} {_why_out(result, alt)}."
    )


def _replica_main(result: Any, v: Verdict, contending: dict[str, bool], w: _Terms) -> str:
    """The single-node replicas are recommended: their aggregate against the arms in contention."""
    c, t, d = w.c, w.t, v.deciding
    rep = c.aggregate["replica"]
    vs = [f"{ARM_LABELS[n]} {tagged(c.aggregate[n])}" for n in (w.alt, "deepep") if contending[n]]
    out = f"Run {replica_words(result)}: {tagged(rep)} aggregate"
    out += f" against {' and '.join(vs)}" if vs else ""
    out += "; no expert traffic leaves a node"
    if d is not None and d.arms == ("deepep", "replica"):
        out += f"; DeepEP over {t} reaches {times(d.ratio)} their aggregate{_band_words(d.ratio)}"
    if contending["deepep"] and w.dee_a.scalar > rep.scalar:
        out += (
            f"; DeepEP's higher figure is within the {c.threshold - 1:.0%} noise band, a tie, "
            "and ties go to the arm with no expert traffic"
        )
    return out + "."


def _dense_main(result: Any, v: Verdict, contending: dict[str, bool], w: _Terms) -> str:
    """The allgather or TP arm (or the replicas) is recommended: what DeepEP reaches against it, and why
    a lead inside the noise band is a tie."""
    c, t, basis, dee_a, alt_a = w.c, w.t, w.basis, w.dee_a, w.alt_a
    arm, d = v.recommended_arm, v.deciding
    if v.close_call and d is not None and not d.is_alternative:
        return _close_deciding(result, v)
    if arm == "replica":
        return _replica_main(result, v, contending, w)
    if d is not None and d.arms[0] == "deepep" and not d.is_alternative:
        other = d.arms[1]
        tie = ""
        if d.ratio.scalar > 1.0:
            tie = f"; within the {d.threshold - 1:.0%} noise band that is a tie, and ties go against DeepEP"
        return (
            f"Run {ARM_LABELS[arm]}: DeepEP over {t} reaches {times(d.ratio)} {whose(other)} "
            f"aggregate ({pair(d.aggregate['deepep'], d.aggregate[other])}), the rival it has to beat"
            f"{step_clause(d.ratio, d.tax_ms_per_token)}{tie}."
        )
    if v.close_call and c.ratio is not None:
        return _close_text(result, "dense", c)
    if contending["deepep"] and c.ratio is not None and c.tax_ms_per_token is not None:
        tie = ""
        if c.ratio.scalar > 1.0:
            tie = f"; within the {c.threshold - 1:.0%} noise band that is a tie, and ties go against DeepEP"
        return (
            f"Run {ARM_LABELS[arm]}: DeepEP over {t} reaches {times(c.ratio)} its aggregate "
            f"({pair(dee_a, alt_a)}{basis}){step_clause(c.ratio, c.tax_ms_per_token)}{tie}."
        )
    return f"Run {ARM_LABELS[arm]}: DeepEP over {t} {_why_out(result, 'deepep')}."


def _has_targets(result: Any) -> bool:
    s = result.scenario
    return s.slo_tok_s is not None or s.ttft_ms is not None


def _why_out(result: Any, name: str) -> str:
    """Why an arm is out of contention, as a verb phrase."""
    a = result.arms[name]
    if not a.feasible and a.why_code == "left out":
        return f"is left out {a.why_not}"
    if not a.feasible:
        return f"cannot run here ({a.why_not})"
    return "misses the targets"


def _band(ratio: Q) -> tuple[float, float]:
    return first_float(ratio.low), first_float(ratio.high)


def whose(arm: str) -> str:
    """`the single-node replicas'`, `the allgather arm's`: an arm in the possessive."""
    label = ARM_LABELS[arm]
    return f"the {label}'" if label.endswith("s") else f"the {label} arm's"


def _band_words(ratio: Q) -> str:
    if not ratio.banded:
        return ""
    lo, hi = _band(ratio)
    return f" (band {lo:.2f}–{hi:.2f}×)"


def _close_deciding(result: Any, v: Verdict) -> str:
    """A close call on the deciding pair when it is not DeepEP against the alternative."""
    d = v.deciding
    assert d is not None
    a, b = d.arms
    lo, hi = _band(d.ratio)
    likely = ARM_LABELS[v.recommended_arm]
    route = deepep_route(result.resolved.transport.name, result.scenario.nodes)
    first = f"DeepEP over {route}" if a == "deepep" else ARM_LABELS[a]
    return (
        f"Too close to call, likely {likely}: {first} {'reach' if first.endswith('s') else 'reaches'} "
        f"{times(d.ratio)} {whose(b)} "
        f"aggregate ({pair(d.aggregate[a], d.aggregate[b])}), but the model's error band "
        f"{lo:.2f}–{hi:.2f}× spans the {d.threshold:.2f}× threshold; measure both before committing."
    )


def _close_text(result: Any, side: str, c: Comparison) -> str:
    assert c.ratio is not None
    lo, hi = _band(c.ratio)
    alt = ARM_LABELS[result.alternative]
    lead = "likely DeepEP" if side == "DeepEP" else f"likely {alt}"
    both = pair(c.aggregate["deepep"], c.aggregate[result.alternative])
    route = deepep_route(result.resolved.transport.name, result.scenario.nodes)
    return (
        f"Too close to call, {lead}: DeepEP over {route} reaches "
        f"{times(c.ratio)} the {alt} aggregate ({both}), "
        f"but the model's error band {lo:.2f}–{hi:.2f}× spans the {c.threshold:.2f}× threshold; "
        "measure both arms before committing."
    )
