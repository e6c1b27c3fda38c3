"""What `compute` returns: one arm's figures (`ArmResult`), a scenario's (`Result`), the
comparison of two arms like with like, and the constants table a scenario runs with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..base.arrays import np
from ..base.quantity import Q
from ..catalog.models import ModelSpec
from ..fit.build import built_in_table
from ..fit.profile import profile_of
from ..fit.table import Table
from ..physics.memory import Memory
from ..physics.serving import tax_ms
from ..question.scenario import Resolved, Scenario
from .bands import banded
from .bounds import ArmBounds


@dataclass(eq=False)
class ArmResult:
    name: str
    feasible: bool
    fits_memory: bool
    why_not: str
    per_user_tok_s: Q
    step_ms: Q
    aggregate_tok_s: Q
    ttft_ms: Q
    usd_per_mtok: Q
    memory_gb_per_gpu: Q
    breakdown_ms: Mapping[str, Q]  # the decode step's parts (physics.step.PartsMs)
    memory: Memory
    running: Q
    measured_cell: str | None = None
    model_aggregate_tok_s: Q | None = None  # the model's figure before a measured cell replaces it
    meets_slo: bool | None = None
    meets_ttft: bool | None = None
    model_step_ms: Q | None = None  # the model's step before a measured cell replaces it
    model_per_user_tok_s: Q | None = None
    splits: Any = True  # routed experts divide evenly over this arm's EP ranks
    why_code: str = ""  # short form of why_not: split, reach, memory or queue ("" when feasible)
    evidence: Any = True  # references cover this arm's combination (its band is the narrower one)
    layout: Any = ""  # a replica's one-node layout: replica, replica:deepep or replica:tp (per row)
    # the targets, three-valued (`target_status`): meets, misses, or within the band
    slo_status: str | None = None
    ttft_status: str | None = None
    bounds: ArmBounds | None = field(default=None, repr=False)  # what bounds the step (read lazily)

    def to_json(self) -> dict[str, Any]:
        m = self.memory
        return {
            "feasible": self.feasible,
            "fits_memory": self.fits_memory,
            "why_not": self.why_not,
            "why_code": self.why_code,
            "per_user_tok_s": self.per_user_tok_s.to_json(),
            "step_ms": self.step_ms.to_json(),
            "aggregate_tok_s": self.aggregate_tok_s.to_json(),
            "ttft_ms": self.ttft_ms.to_json(),
            "usd_per_mtok": self.usd_per_mtok.to_json(),
            "memory_gb_per_gpu": self.memory_gb_per_gpu.to_json(),
            "breakdown_ms": {k: v.to_json() for k, v in self.breakdown_ms.items()},
            "memory_detail_gb": {
                "weights": m.weights_gb.to_json(),
                "kv_cache": m.kv_gb.to_json(),
                "buffers": m.buffers_gb.to_json(),
                "reserve": m.reserve_gb.to_json(),
                "usable": m.usable_gb.to_json(),
                "headroom": m.headroom_gb.to_json(),
            },
            "max_concurrency": m.max_concurrency.to_json(),
            "kv_token_capacity_per_gpu": m.kv_tokens.to_json(),
            "running_sequences": self.running.to_json(),
            "measured_cell": self.measured_cell,
            "meets_slo": self.meets_slo,
            "meets_ttft": self.meets_ttft,
            "slo_status": self.slo_status,
            "ttft_status": self.ttft_status,
            "model_aggregate_tok_s": _opt_json(self.model_aggregate_tok_s),
            "model_step_ms": _opt_json(self.model_step_ms),
            "evidence_covered": _plain_json(self.evidence),
            **({"layout": _plain_json(self.layout)} if self.layout else {}),
            **(self.bounds.to_json() if self.bounds is not None else {}),
        }


def _opt_json(q: Q | None) -> dict[str, Any] | None:
    return q.to_json() if q is not None else None


def _plain_json(flag: Any) -> Any:
    return flag if type(flag) in (bool, str) else np.asarray(flag).tolist()


@dataclass(eq=False)
class Result:
    scenario: Scenario
    resolved: Resolved
    arms: dict[str, ArmResult]
    alternative: str
    ratio_deepep_vs_alternative: Q
    ratio_per_user: Q
    tax_ms_per_token: Q
    verdict: Any = None  # decide.verdict.Verdict, attached by decide.answer.decide_resolved()
    notes: list[str] = field(default_factory=list)
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)  # see physics.step.shared
    # this result's what-ifs on DeepEP-only knobs, each computed once (whatif/memo.py); its own,
    # never shared with a what-if as `memo` is, so a what-if's what-ifs cannot be mistaken for these
    whatifs: dict[Any, Result] = field(default_factory=dict, repr=False)
    table: Table | None = field(default=None, repr=False)  # the constants the arms were computed with
    _versus: dict[tuple[str, str], tuple[Q, Q, Q, bool]] = field(default_factory=dict, repr=False)
    # a disaggregated scenario's deployment (estimate/disagg.py): its two sides and the KV
    # transfer between them, beside the aggregated arms of the same nodes (None: aggregated)
    disaggregated: Any = None

    @property
    def model(self) -> ModelSpec:
        return self.resolved.model

    def versus(self, a: str, b: str) -> tuple[Q, Q, Q, bool]:
        """Arm `a` against arm `b`: aggregate ratio, per-user ratio and per-token tax, like with
        like, banded as the DeepEP / alternative ratio is where modelled, and whether the
        aggregates are both measured. The verdict reads the pair that decided it from here
        (DeepEP against the replicas, say), computed once per pair."""
        key = (a, b)
        if key == ("deepep", self.alternative):  # the result's own figures, as they stand now
            measured = like_with_like(self.arms[a], self.arms[b], "aggregate_tok_s")[2]
            return self.ratio_deepep_vs_alternative, self.ratio_per_user, self.tax_ms_per_token, measured
        if key not in self._versus:
            ratio, ratio_pu, tax, measured = comparison(self.arms[a], self.arms[b], a, b)
            table = self.table if self.table is not None else table_for(self.resolved)
            if not measured:  # the wider band unless references cover both arms' combinations
                both = both_covered(self.arms[a].evidence, self.arms[b].evidence)
                ratio = banded(ratio, table, "ratio", covered=both)
                ratio_pu = banded(ratio_pu, table, "ratio", covered=both)
            self._versus[key] = (ratio, ratio_pu, tax, measured)
        return self._versus[key]

    def to_json(self) -> dict[str, Any]:
        s = self.scenario.as_dict()
        s["gpus_per_node"] = self.resolved.gpus_per_node
        s["model_resolved"] = self.model.name
        s["weight_dtype"] = self.model.weight_dtype
        return {
            "scenario": s,
            "verdict": self.verdict.to_json() if self.verdict is not None else None,
            "arms": {k: v.to_json() for k, v in self.arms.items()},
            "ratio_deepep_vs_alternative": self.ratio_deepep_vs_alternative.to_json(),
            "ratio_per_user": self.ratio_per_user.to_json(),
            "tax_ms_per_token": self.tax_ms_per_token.to_json(),
            "notes": list(self.notes),
            "disaggregated": None if self.disaggregated is None else self.disaggregated.to_json(),
        }


def like_with_like(a: ArmResult, b: ArmResult, metric: str) -> tuple[Q, Q, bool]:
    """Two arms' figures of one metric on one footing: (a, b, measured?).

    The measured figures when both arms have one; otherwise both arms' model figures, because a
    benchmark's number carries its ramp, tail and run-to-run noise and the model's does not.
    """
    model = {"aggregate_tok_s": "model_aggregate_tok_s", "step_ms": "model_step_ms"}.get(
        metric, "model_per_user_tok_s"
    )
    qa, qb = getattr(a, metric), getattr(b, metric)
    ma, mb = getattr(a, model) or qa, getattr(b, model) or qb
    if qa is not ma and qb is not mb:  # a measured cell replaced the model's figure on both arms
        return qa, qb, True
    return ma, mb, False


def comparison(
    dee: ArmResult, alt: ArmResult, a: str = "DeepEP", b: str = "alternative"
) -> tuple[Q, Q, Q, bool]:
    """Aggregate ratio, per-user ratio and per-token tax of DeepEP against the alternative (or
    of arm `a` against arm `b`), each from like-with-like figures (the figures the verdict
    compares and every face shows), and whether the aggregates compared are both measured."""
    out = []
    both_measured = False
    a = "DeepEP" if a == "deepep" else a
    for metric, unit, what in (
        ("aggregate_tok_s", "x", f"aggregate tok/s {a} / {b}"),
        ("per_user_tok_s", "x", f"per-user tok/s {a} / {b}"),
        ("step_ms", "ms/token", f"{a} step - {b} step"),
    ):
        a, b, measured = like_with_like(dee, alt, metric)
        both_measured = both_measured or (metric == "aggregate_tok_s" and measured)
        basis = "measured on both arms" if measured else "model figures of both arms"
        value = tax_ms(a, b) if metric == "step_ms" else a / b
        out.append(value.as_(unit, f"{what} ({basis})"))
    return out[0], out[1], out[2], both_measured


def both_covered(a: Any, b: Any) -> Any:
    if type(a) is bool and type(b) is bool:
        return a and b
    return np.logical_and(a, b)


def table_for(r: Resolved) -> Table:
    """The built-in table fitted under the question's assumed constants, with a calibration
    profile's constants where one is given."""
    table = built_in_table(r.assumptions)
    profile = profile_of(r)
    if profile is not None:
        table = profile.apply(table, r)
    return table
