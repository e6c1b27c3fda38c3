"""The three verdicts, decided from the computed arms, with reasons that quote their numbers.

capacity  no arm that keeps experts inside one node fits weights + KV: sharding is forced
deepep    DeepEP is feasible and beats every feasible alternative by more than the noise band
dense     otherwise, ties included
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .catalog.constants import const
from .quantity import Q, Tag

SYMBOLS = {"dense": "■", "capacity": "◆", "deepep": "▲"}
TITLES = {
    "dense": "Use DENSE / allgather",
    "capacity": "Use DeepEP (or any EP) for CAPACITY",
    "deepep": "DeepEP wins on throughput",
}
ARM_LABELS = {
    "deepep": "DeepEP",
    "allgather": "allgather",
    "tp": "tensor parallel",
    "replica": "single-node replicas",
}


def tagged(q: Q, digits: int = 1, unit: bool = True) -> str:
    """A number as the reasons quote it: value, unit and provenance tag."""
    value = q.scalar
    text = "n/a" if value != value else f"{value:,.{digits}f}"
    return f"{text}{' ' + q.unit if unit and q.unit not in ('x', '1') else ''} [{q.tag}]"


def times(q: Q, digits: int = 2) -> str:
    """A ratio as the reasons quote it: `1.29× [assumed]`."""
    return f"{q.scalar:.{digits}f}× [{q.tag}]"


@dataclass
class Verdict:
    code: str
    headline: str
    recommended_arm: str
    reasons: list[str]
    advisories: list[str] = field(default_factory=list)
    flags: dict[str, Any] = field(default_factory=dict)
    robustness: str = ""

    @property
    def symbol(self) -> str:
        return SYMBOLS[self.code]

    @property
    def title(self) -> str:
        return TITLES[self.code]

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "symbol": self.symbol,
            "title": self.title,
            "headline": self.headline,
            "recommended_arm": self.recommended_arm,
            "reasons": list(self.reasons),
            "advisories": list(self.advisories),
            "flags": self.flags,
            "robustness": self.robustness,
        }


def _meets(arm: Any) -> Any:
    ok = np.asarray(True)
    if arm.meets_slo is not None:
        ok = ok & np.asarray(arm.meets_slo)
    if arm.meets_ttft is not None:
        ok = ok & np.asarray(arm.meets_ttft)
    return ok


def classify_codes(result: Any) -> tuple[Any, Any]:
    """Verdict codes and recommended arms, elementwise (works for one scenario or a sweep).

    capacity: the single-node arm does not fit (or, on one node, no arm fits);
    deepep:   DeepEP feasible, meets the targets, and beats every feasible alternative that
              meets them by more than the noise band;
    dense:    otherwise. Among the alternatives, single-node replicas are recommended only
              when they beat the chosen alternative by more than the noise band.
    """
    arms = result.arms
    alt_name = result.alternative
    noise = const("noise_band").value
    dee, alt, rep = arms["deepep"], arms[alt_name], arms["replica"]
    nodes = np.asarray(result.scenario.nodes)

    # Compare like with like: measured aggregates only when every arm has one, else the
    # model's figures (a benchmark's ramp and tail are in the measurement, not the model).
    all_measured = all(a.measured_cell and a.aggregate_tok_s.tag == Tag.MEASURED for a in arms.values())

    def score(arm: Any) -> Any:
        ok = np.asarray(arm.feasible) & _meets(arm)
        value = (
            arm.aggregate_tok_s
            if all_measured or arm.model_aggregate_tok_s is None
            else (arm.model_aggregate_tok_s)
        )
        return np.where(ok, value.value, -np.inf)

    s_dee, s_alt, s_rep = score(dee), score(alt), score(rep)
    capacity = ~np.asarray(rep.feasible) | ((nodes == 1) & ~np.asarray(alt.feasible))
    top = np.maximum(s_alt, s_rep)
    deepep_wins = np.isfinite(s_dee) & (s_dee > np.where(np.isfinite(top), top, 0.0) * (1 + noise))
    dense_arm = np.where(
        np.isfinite(s_rep) & (s_rep > np.where(np.isfinite(s_alt), s_alt, 0.0) * (1 + noise)),
        "replica",
        alt_name,
    )
    cap_arm = np.where(
        (np.asarray(dee.feasible) & ~(np.asarray(alt.feasible) & (s_alt >= s_dee))), "deepep", alt_name
    )
    codes = np.where(capacity, "capacity", np.where(deepep_wins, "deepep", "dense"))
    rec = np.where(capacity, cap_arm, np.where(deepep_wins, "deepep", dense_arm))
    return codes, rec


def classify(result: Any) -> tuple[str, str]:
    """(verdict code, recommended arm) of a single scenario."""
    codes, rec = classify_codes(result)
    return str(codes.reshape(-1)[0]), str(rec.reshape(-1)[0])


def decide(result: Any) -> Verdict:
    from .explain import advisories, engine_flags, flip_advisory, reasons

    code, arm = classify(result)
    v = Verdict(code, "", arm, reasons(result, code, arm))
    v.headline = _headline(result, code, arm)
    v.advisories = advisories(result, code)
    flip = flip_advisory(result, code)
    if flip:
        v.advisories.append(flip)
        v.robustness = f"fragile: {flip}"
    else:
        v.robustness = "robust: no single change of transport, comms, graphs, concurrency or nodes flips it"
    v.flags = engine_flags(result, arm)
    return v


def _headline(result: Any, code: str, arm: str) -> str:
    a = result.arms[arm]
    label = ARM_LABELS[arm]
    if code == "capacity":
        single = result.arms["replica"]
        return (
            f"The model needs more than one node ({single.memory_gb_per_gpu.scalar:,.0f} GB per GPU "
            f"on one node vs {single.memory.usable_gb.scalar:,.0f} GB usable): shard experts across "
            f"nodes; cheapest EP flavour here is {label} at {tagged(a.aggregate_tok_s, 0)}."
        )
    if code == "deepep":
        return (
            f"DeepEP serves {times(result.ratio_deepep_vs_alternative)} the aggregate "
            f"throughput of {ARM_LABELS[result.alternative]}: "
            f"run DeepEP over {result.resolved.transport.name}."
        )
    return (
        f"Run {label}: DeepEP over {result.resolved.transport.name} reaches "
        f"{tagged(result.ratio_deepep_vs_alternative, 2)} of the {ARM_LABELS[result.alternative]} "
        f"aggregate and pays {tagged(result.tax_ms_per_token)} more per token."
    )
