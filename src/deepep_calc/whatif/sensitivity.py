"""Sensitivity: which assumed inputs move the verdict (a tornado over their stated spreads).

Each assumed constant of `catalog/data/constants.toml` with a spread > 0 is set to value - spread
and value + spread in turn (a `catalog.constants.Assumptions` value with that one changed); so
is the scenario's transport wire efficiency where the catalog assumes one
(± `WIRE_EFFICIENCY_SPREAD`, within (0, 1]). The question, resolved once by the caller, is
then put under those assumptions (`Resolved.assume`: the same rows, models and profile, the
transports' figures moved) and re-computed with the table fitted under them, and the verdict
re-classified exactly as `evaluate()` does. No state is set anywhere and no file is read: a
case is a value passed along, and the config.json and profile the question names were read by
the face that resolved it (`io.inputs.resolve_files`).

Under other assumptions the whole fit stage runs again (`fit.build.built_in_table(assumptions)`
is cached per value), so a case where HBM is slower is one where the fitted engine and kernel
constants absorb the difference as far as the references allow. That is
the honest question: "if this assumption is off, would the data still say the same?", not "if
this term alone moved". A whole tornado is a few dozen refits, a few seconds (2-3 s on a quiet
machine), so it is not part of `evaluate()` (which must stay under 5 ms): `deepep-calc
sensitivity` and `evaluate --sensitivity` run it.

The ratio shown is the model's aggregate ratio of the comparison that decided the verdict
(`Verdict.deciding`: DeepEP against the alternative, or against the single-node replicas when
they won or were the rival to beat), the two arms fixed by the base scenario, so it moves even
where a measured cell supplies the headline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..base.quantity import Q
from ..base.vocabulary import SYMBOLS
from ..catalog.constants import CATALOG, load_constants
from ..decide.answer import decide
from ..decide.verdict import classify
from ..estimate.compute import compute
from ..estimate.result import Result, table_for
from ..question.scenario import Resolved, Scenario, resolve

WIRE_EFFICIENCY_SPREAD = 0.1  # assumed: ± on a transport's assumed fraction of line rate


@dataclass(frozen=True)
class Case:
    key: str  # the assumption it changes: a constant name or transport:<name>:wire_efficiency
    label: str
    base: Q
    spread: float
    low: float
    high: float


@dataclass
class Row:
    case: Case
    base_verdict: str
    base_ratio: Q
    ratio_low: Q
    ratio_high: Q
    verdict_low: str
    verdict_high: str
    versus: tuple[str, str] = ("deepep", "allgather")  # the two arms whose ratio this is

    @property
    def survives(self) -> bool:
        return self.verdict_low == self.base_verdict and self.verdict_high == self.base_verdict

    @property
    def swing(self) -> float:
        return abs(self.ratio_high.scalar - self.ratio_low.scalar)

    def flips(self) -> list[tuple[float, str]]:
        """(value, new verdict) for each end of the spread that changes the verdict."""
        ends = ((self.case.low, self.verdict_low), (self.case.high, self.verdict_high))
        return [(v, code) for v, code in ends if code != self.base_verdict]

    def to_json(self) -> dict[str, Any]:
        c = self.case
        return {
            "input": c.key,
            "label": c.label,
            "base": c.base.to_json(),
            "spread": c.spread,
            "low": c.low,
            "high": c.high,
            "ratio_low": self.ratio_low.to_json(),
            "ratio_high": self.ratio_high.to_json(),
            "verdict_low": self.verdict_low,
            "verdict_high": self.verdict_high,
            "survives": self.survives,
            "swing": self.swing,
            "versus": list(self.versus),
        }


# how the face turns a scenario into a question: the catalog only (`resolve`, the default), or
# with the config.json and the profile it names read (`io.inputs.resolve_files`)
Resolver = Callable[[Scenario], Resolved]


def question_of(
    question: Resolved | Scenario | None, fields: dict[str, Any], resolve: Resolver = resolve
) -> tuple[Scenario, Resolved]:
    """The scenario as asked and the question resolved once, keyword fields on top: a
    `Resolved` is the face's own; a `Scenario` (or fields on the defaults) is resolved by
    `resolve`, which reads a file only if the face's does."""
    if isinstance(question, Resolved):
        r = question.change(**fields) if fields else question
        return r.scenario, r
    if question is None:
        question = Scenario(**fields)
    elif fields:
        question = question.copy(**fields)
    return question, resolve(question)


def cases(r: Resolved, asked: Scenario | None = None) -> list[Case]:
    """Every assumed input with a stated spread that bears on this question.

    The wire efficiency is varied where `asked` (the scenario as given; by default the
    resolved one) has more than one node: a disaggregated `--nodes 1` question counts as one
    here though it runs on P + D nodes, as the tornado always has.
    """
    out = []
    for name, c in load_constants().items():
        if c.spread > 0 and c.tag == "assumed":
            low = c.value - c.spread
            if low <= 0:  # a rate or size cannot reach zero: keep the low end meaningful
                low = c.value / 2.0
            out.append(Case(name, name, c.q(), c.spread, low, c.value + c.spread))
    t = r.transport
    if t.wire_efficiency is not None and (asked or r.scenario).nodes > 1:
        base = Q.assumed(t.wire_efficiency, "1", t.bw_source)
        low = max(t.wire_efficiency - WIRE_EFFICIENCY_SPREAD, 0.05)
        high = min(t.wire_efficiency + WIRE_EFFICIENCY_SPREAD, 1.0)
        out.append(
            Case(
                f"transport:{t.name}:wire_efficiency",
                f"{t.name} wire efficiency",
                base,
                WIRE_EFFICIENCY_SPREAD,
                low,
                high,
            )
        )
    return out


def model_ratio(result: Result, versus: tuple[str, str] | None = None) -> Q:
    """The aggregate ratio of two arms as the model computes it (before measured substitution):
    DeepEP / alternative unless `versus` names two others."""
    a_name, b_name = versus or ("deepep", result.alternative)
    x, y = result.arms[a_name], result.arms[b_name]
    a = x.model_aggregate_tok_s or x.aggregate_tok_s
    b = y.model_aggregate_tok_s or y.aggregate_tok_s
    label = {"deepep": "DeepEP"}.get(a_name, a_name)
    return (a / b).as_("x", f"model aggregate tok/s {label} / {b_name}")


def deciding_arms(r: Resolved) -> tuple[str, str]:
    """The two arms whose comparison decided the base question's verdict (DeepEP against the
    alternative when no comparison decided: nothing fits, or DeepEP is the only arm)."""
    result = compute(r)
    d = decide(result).deciding
    return d.arms if d is not None else ("deepep", result.alternative)


def _run(r: Resolved, versus: tuple[str, str], values: dict[str, float] | None = None) -> tuple[str, Q]:
    """The verdict and deciding ratio with `values` changed from the catalog's: the question
    under those assumptions, the table fitted under them (and the question's calibration
    profile, if any), then the same compute and verdict."""
    case = r.assume(CATALOG.with_values(values or {}))
    result = compute(case, table=table_for(case))
    code, _ = classify(result)
    return code, model_ratio(result, versus)


def sensitivity(
    question: Resolved | Scenario | None = None, /, *, resolve: Resolver = resolve, **fields: Any
) -> list[Row]:
    """The tornado, largest swing of the ratio first; the ratio is the deciding comparison's.

    `question`: what the face resolved (`evaluate`'s `result.resolved`), or a scenario and
    `resolve`, the face's way of resolving it (`io.inputs.resolve_files` reads the config.json
    and the profile it names; the default reads no file). Either way the question is resolved
    once and every case reuses its models and profile.
    """
    asked, r = question_of(question, fields, resolve)
    versus = deciding_arms(r)
    base_code, base_ratio = _run(r, versus)
    rows = []
    for case in cases(r, asked):
        code_lo, ratio_lo = _run(r, versus, {case.key: case.low})
        code_hi, ratio_hi = _run(r, versus, {case.key: case.high})
        rows.append(Row(case, base_code, base_ratio, ratio_lo, ratio_hi, code_lo, code_hi, versus))
    rows.sort(key=lambda row: (row.survives, -row.swing))
    return rows


def fragility(rows: list[Row]) -> str:
    """One line for the verdict card: robust, or the first assumption that flips it."""
    for row in rows:
        flips = row.flips()
        if flips:
            value, code = flips[0]
            c = row.case
            return (
                f"fragile: flips to {SYMBOLS[code]} {code} if {c.label} is {value:g} "
                f"(assumed {c.base.scalar:g} ± {c.spread:g})"
            )
    return "robust: no assumed constant at either end of its stated spread flips it"


def annotate(result: Result, rows: list[Row]) -> None:
    """Add the constants' verdict to the card's robustness line (evaluate --sensitivity)."""
    if result.verdict is not None:
        result.verdict.robustness = f"{result.verdict.robustness}; constants: {fragility(rows)}"
