"""The verdict: one rule over the computed arms, and the very figures it compared.

Every face (terminal card, JSON, web page, reports, sweep rows, maps) gets its verdict from
`classify_codes` (vectorised) or `decide` (one scenario), so no face can disagree with another.
The rule, stated once here and in docs/model.md §8 (tests/properties/test_verdict_oracle.py holds the code
to it):

1. An arm is *feasible* when its experts split evenly over its EP ranks, its transport reaches
   every rank, it fits weights + KV in HBM, and its first token comes before the prompt ceiling
   (evaluate.prompt_ceiling_ms).
2. The arms *in contention* are the feasible arms that meet every target the user set (per-user
   floor, TTFT ceiling); when no arm meets them, every feasible arm (the verdict then says the
   targets are missed, and what would meet them).
3. Two arms are compared *like with like*: their measured aggregates when both have one, else
   both arms' model aggregates (a benchmark's figure carries its ramp and tail; the model's
   does not). X *beats* Y when aggregate X > aggregate Y x (1 + noise band).
4. capacity: the single-node arm does not fit in HBM (sharding experts across nodes is forced),
   or no arm is feasible at all ("nothing fits": no arm is recommended, and the smallest change
   that fits is named). The recommended arm is DeepEP when its aggregate is higher than the
   alternative's, else the alternative.
5. deepep: DeepEP is in contention and beats every other arm in contention.
6. dense: otherwise, ties included: the alternative, or single-node replicas when they beat it
   (or when the alternative is not in contention).

A modelled ratio may carry a band (`Q.low` / `Q.high`); when the band of the deciding ratio
spans the threshold 1 + noise, the headline says the call is too close to make within the
model's error instead of sounding certain. The code is unchanged by the band.

The *deciding* comparison (`Deciding`, `deciding_arms`) is the one the faces show: DeepEP
against the arm that won, or in a DeepEP win its closest rival (often the single-node replicas,
not the alternative); the recommended arm against its closest rival when DeepEP is out.

Why one module: the rule, the figures it compared (`Comparison`, `Deciding`) and the verdict
that carries them are one statement of §8; split, a face could quote a comparison the rule
did not make.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from ..base.arrays import SCALARS, first, first_float, invert, is_array, np, where
from ..base.quantity import Q, Tag
from ..base.vocabulary import ARMS, SYMBOLS, VERDICT_CODES
from ..catalog.constants import const
from ..estimate.result import like_with_like

TITLES = {  # the three categories, as the page's cards name them
    "dense": "Use DENSE / allgather",
    "capacity": "Use DeepEP (or any EP) for CAPACITY",
    "deepep": "DeepEP wins on throughput",
}
ARM_LABELS = {
    "deepep": "DeepEP",
    "allgather": "allgather",
    "tp": "tensor parallel",
    "replica": "single-node replicas",
    "none": "nothing (nothing fits)",  # the recommended "arm" when nothing fits (JSON: null)
}
NO_ARM = "none"
STATUSES = ("ok", "targets_missed", "nothing_fits")
# The rule works in positions of these tuples (small integers, cheap over a sweep's rows); the
# names are attached on demand (`Assessment.codes`, `.recommended`) or by a sweep's writer.
ARM_NAMES = (*ARMS, NO_ARM)
_DENSE, _DEEPEP, _CAPACITY = range(3)
_ARM = {name: i for i, name in enumerate(ARM_NAMES)}


def tagged(q: Q, digits: int = 1, unit: bool = True) -> str:
    """A number as the reasons quote it: value, unit and provenance tag."""
    value = q.scalar
    text = "n/a" if value != value else f"{value:,.{digits}f}"
    return f"{text}{' ' + q.unit if unit and q.unit not in ('x', '1') else ''} [{q.tag}]"


def times(q: Q, digits: int = 2) -> str:
    """A ratio as the reasons quote it: `1.29× [assumed]`."""
    return f"{q.scalar:.{digits}f}× [{q.tag}]"


def pair(a: Q, b: Q, digits: int = 1) -> str:
    """Two figures side by side, the shared unit and tag said once: `545.0 vs 794.6 tok/s [measured]`."""
    if a.unit == b.unit and a.tag == b.tag:
        return f"{a.scalar:,.{digits}f} vs {tagged(b, digits)}"
    return f"{tagged(a, digits)} vs {tagged(b, digits)}"


def title_for(code: str, arm: str) -> str:
    """The card's title: the category and the arm the headline and the flags name."""
    if code == "deepep":
        return TITLES["deepep"]
    if code == "capacity":
        if arm == NO_ARM:
            return "CAPACITY: nothing fits as asked"
        return "Use DeepEP for CAPACITY" if arm == "deepep" else f"Use EP for CAPACITY: {ARM_LABELS[arm]}"
    return f"Use DENSE / {ARM_LABELS[arm]}"


@dataclass
class Comparison:
    """The figures the rule compared for DeepEP against the alternative, and on what footing."""

    basis: str  # "measured" (both arms measured) or "model" (both arms' model figures)
    aggregate: dict[str, Q]  # arm -> the aggregate the rule used (each comparison like with like)
    ratio: Q | None  # DeepEP / alternative aggregate; None when either arm cannot run
    per_user_ratio: Q | None
    tax_ms_per_token: Q | None
    threshold: float  # 1 + noise band
    set_aside: list[str] = field(default_factory=list)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        def j(q: Q | None) -> Any:
            return q.to_json() if q is not None else None

        return {
            "basis": self.basis,
            "aggregate_tok_s": {k: v.to_json() for k, v in self.aggregate.items()},
            "ratio": j(self.ratio),
            "per_user_ratio": j(self.per_user_ratio),
            "tax_ms_per_token": j(self.tax_ms_per_token),
            "threshold": self.threshold,
            "set_aside": list(self.set_aside),
            "note": self.note,
        }


def threshold_status(ratio: Q, threshold: float) -> str:
    """Whether a ratio clears a threshold, three-valued where the ratio carries a band: "meets"
    (the whole band is above), "misses" (the whole band is at or below) or "within the band"
    (the band spans the threshold: the model cannot tell)."""
    if band_crosses(ratio, threshold):
        return "within the band"
    return "meets" if first_float(ratio.value) > threshold else "misses"


@dataclass
class Deciding:
    """The comparison that decided the verdict: arm `arms[0]` against `arms[1]`.

    Usually DeepEP against the alternative (then the same figures as `Comparison`), but when the
    replicas won, or were the rival DeepEP had to beat, it is DeepEP against them; when DeepEP
    cannot take part, the recommended arm against its closest rival. `status` says whether the
    first arm clears the threshold over the second: meets, misses, or within the band.
    """

    arms: tuple[str, str]
    basis: str  # "measured" (both aggregates measured) or "model"
    aggregate: dict[str, Q]
    ratio: Q
    per_user_ratio: Q
    tax_ms_per_token: Q
    threshold: float
    status: str

    @property
    def is_alternative(self) -> bool:
        """DeepEP against the scenario's alternative: the two arms `Comparison` already holds."""
        return self.arms[0] == "deepep" and self.arms[1] in ("allgather", "tp")

    def to_json(self) -> dict[str, Any]:
        return {
            "arms": list(self.arms),
            "basis": self.basis,
            "aggregate_tok_s": {k: v.to_json() for k, v in self.aggregate.items()},
            "ratio": self.ratio.to_json(),
            "per_user_ratio": self.per_user_ratio.to_json(),
            "tax_ms_per_token": self.tax_ms_per_token.to_json(),
            "threshold": self.threshold,
            "status": self.status,
        }


@dataclass
class Verdict:
    """One scenario's verdict: code, the arm to run, the words, and the figures behind them.

    `decide` makes it with the rule's fields (code, arm, status, close call, the comparisons);
    the words (headline, reasons, caveats, fixes, run flags, blurb) and the advice (advisories,
    the robustness line, disaggregation) are `explain_verdict`'s, which a face that shows them
    asks for: the advice needs what-if passes of the model, most of an answer's time, and a
    caller that reads only the code and the figures should not pay for them.
    """

    code: str
    recommended_arm: str
    headline: str = ""
    reasons: list[str] = field(default_factory=list)
    advisories: list[str] = field(default_factory=list)
    flags: dict[str, Any] = field(default_factory=dict)
    robustness: str = ""
    status: str = "ok"
    close_call: bool = False
    compared: Comparison | None = None
    caveats: list[str] = field(default_factory=list)
    fixes: list[dict[str, Any]] = field(default_factory=list)
    deciding: Deciding | None = None
    blurb: str = ""  # the reason that says why
    # disaggregated against aggregated on the same nodes (decide/disagg.py): the card's extra line
    disaggregation: dict[str, Any] | None = None
    # which arms were still in the running when the rule ended (the headline words them)
    contending: dict[str, bool] = field(default_factory=dict, repr=False, compare=False)
    explained: bool = False  # the words and the advice are worked out (`explain_verdict`)

    @property
    def symbol(self) -> str:
        return SYMBOLS[self.code]

    @property
    def title(self) -> str:
        return title_for(self.code, self.recommended_arm)

    def to_json(self) -> dict[str, Any]:
        if not self.explained:
            raise RuntimeError(
                "the verdict's words and advice are not worked out: "
                "call deepep_calc.explain_verdict(result) first (evaluate() does unless explain=False)"
            )
        return {
            "code": self.code,
            "symbol": self.symbol,
            "title": self.title,
            "headline": self.headline,
            "recommended_arm": None if self.recommended_arm == NO_ARM else self.recommended_arm,
            "reasons": list(self.reasons),
            "advisories": list(self.advisories),
            "flags": self.flags,
            "robustness": self.robustness,
            "status": self.status,
            "close_call": self.close_call,
            "compared": self.compared.to_json() if self.compared is not None else None,
            "caveats": list(self.caveats),
            "fixes": list(self.fixes),
            "deciding": self.deciding.to_json() if self.deciding is not None else None,
            "blurb": self.blurb,
            "disaggregation": self.disaggregation,
        }


# The rule ------------------------------------------------------------------------------------


def _meets(arm: Any) -> Any:
    ok = True
    if arm.meets_slo is not None:
        ok = ok & arm.meets_slo
    if arm.meets_ttft is not None:
        ok = ok & arm.meets_ttft
    return ok


def decision_aggregates(a: Any, b: Any) -> tuple[Q, Q, bool]:
    """The aggregates two arms are compared on (rule 3), and whether both are measured."""
    return like_with_like(a, b, "aggregate_tok_s")


@dataclass(eq=False)
class Assessment:
    """The rule's intermediate state, elementwise (one scenario or a sweep's rows).

    `code_index` and `arm_index` are positions in VERDICT_CODES and ARM_NAMES (plain ints for
    one scenario, int8 arrays for a sweep); `codes` and `recommended` are the same as names."""

    code_index: Any
    arm_index: Any
    contending: dict[str, Any]
    feasible: dict[str, Any]
    fits_any: Any
    meets_any: Any
    targets: bool  # the scenario sets an SLO or TTFT target

    @property
    def codes(self) -> Any:
        i = self.code_index
        return VERDICT_CODES[i] if type(i) is int else np.asarray(VERDICT_CODES)[i]

    @property
    def recommended(self) -> Any:
        i = self.arm_index
        return ARM_NAMES[i] if type(i) is int else np.asarray(ARM_NAMES)[i]


def assess(result: Any) -> Assessment:
    """Rules 1-6 of the module docstring, vectorised: one scenario's flags are plain bools and
    its indices plain ints (`base.arrays`: no 0-d arrays, no NumPy), a sweep's are arrays."""
    arms = result.arms
    alt = result.alternative
    noise = const("noise_band").value
    names = list(arms)
    flags = [arms[n].feasible for n in names]
    if not all(type(f) is bool for f in flags):
        flags = np.broadcast_arrays(*[np.asarray(f, bool) for f in flags])
    feas = dict(zip(names, flags, strict=True))
    ok = {n: feas[n] & _meets(arms[n]) for n in names}
    meets_any = reduce(operator.or_, ok.values())
    fits_any = reduce(operator.or_, feas.values())
    pool = {n: where(meets_any, ok[n], feas[n]) for n in names}

    def beats(x: str, y: str, margin: float = noise) -> Any:
        qx, qy, _ = decision_aggregates(arms[x], arms[y])
        if type(qx.value) in SCALARS and type(qy.value) in SCALARS:
            return qx.value > qy.value * (1.0 + margin)
        with np.errstate(invalid="ignore"):
            return np.asarray(qx.value) > np.asarray(qy.value) * (1.0 + margin)

    dee, rep = "deepep", "replica"
    deepep_wins = pool[dee] & (invert(pool[alt]) | beats(dee, alt)) & (invert(pool[rep]) | beats(dee, rep))
    dense_arm = where(pool[rep] & (invert(pool[alt]) | beats(rep, alt)), _ARM[rep], _ARM[alt])
    cap_arm = where(pool[dee] & (invert(pool[alt]) | beats(dee, alt, 0.0)), _ARM[dee], _ARM[alt])
    forced = invert(arms[rep].fits_memory)
    nothing = invert(fits_any)
    codes = where(nothing | forced, _CAPACITY, where(deepep_wins, _DEEPEP, _DENSE))
    rec = where(nothing, _ARM[NO_ARM], where(forced, cap_arm, where(deepep_wins, _ARM[dee], dense_arm)))
    if is_array(codes) or is_array(rec):  # a sweep keeps one byte per row
        codes, rec = _int8(codes), _int8(rec)
    s = result.scenario
    targets = s.slo_tok_s is not None or s.ttft_ms is not None
    return Assessment(codes, rec, pool, feas, fits_any, meets_any, targets)


def _int8(x: Any) -> Any:
    return x.astype(np.int8, copy=False) if is_array(x) else np.int8(x)


def classify_codes(result: Any) -> tuple[Any, Any]:
    """Verdict codes and recommended arms, elementwise (one scenario or a sweep)."""
    a = assess(result)
    return a.codes, a.recommended


def classify_indices(result: Any) -> tuple[Any, Any]:
    """`classify_codes` as positions in VERDICT_CODES and ARM_NAMES (int8): what a sweep keeps."""
    a = assess(result)
    return a.code_index, a.arm_index


def classify(result: Any) -> tuple[str, str]:
    """(verdict code, recommended arm) of a single scenario."""
    codes, rec = classify_codes(result)
    return str(first(codes)), str(first(rec))


def status_of(a: Assessment) -> str:
    """ok, targets_missed (something runs, nothing meets the targets) or nothing_fits."""
    if not bool(first(a.fits_any)):
        return "nothing_fits"
    if a.targets and not bool(first(a.meets_any)):
        return "targets_missed"
    return "ok"


def compare(result: Any) -> Comparison:
    """DeepEP against the alternative on the footing rule 3 prescribes, with what was set aside."""
    arms = result.arms
    alt = result.alternative
    dee_arm, alt_arm = arms["deepep"], arms[alt]
    a, b, measured = decision_aggregates(dee_arm, alt_arm)
    threshold = 1.0 + float(const("noise_band").value)
    aggregate = {"deepep": a, alt: b}
    for name, arm in arms.items():
        if name not in aggregate:
            aggregate[name] = decision_aggregates(arm, dee_arm)[0]
    set_aside: list[str] = []
    if not measured:
        for name, arm, other in (("deepep", dee_arm, alt_arm), (alt, alt_arm, dee_arm)):
            if arm.aggregate_tok_s.tag == Tag.MEASURED and other.aggregate_tok_s.tag != Tag.MEASURED:
                partner = ARM_LABELS[alt if name == "deepep" else "deepep"]
                set_aside.append(
                    f"{ARM_LABELS[name]}'s measured aggregate {tagged(arm.aggregate_tok_s)} is set aside: "
                    f"it includes the benchmark's ramp and tail, and {partner} has no measurement here, "
                    f"so both arms are compared on the model ({ARM_LABELS[name]} {tagged(aggregate[name])})."
                )
    runs = bool(dee_arm.feasible) and bool(alt_arm.feasible)
    note = ""
    if not runs:
        out = [(n, x) for n, x in (("deepep", dee_arm), (alt, alt_arm)) if not x.feasible]
        which = [ARM_LABELS[n] for n, _ in out]
        left = all(x.why_code == "left out" for _, x in out)
        note = f"{' and '.join(which)} {'left out by the plan' if left else 'cannot run here'}"
    return Comparison(
        "measured" if measured else "model",
        aggregate,
        result.ratio_deepep_vs_alternative if runs else None,
        result.ratio_per_user if runs else None,
        result.tax_ms_per_token if runs else None,
        threshold,
        set_aside,
        note,
    )


def deciding_arms(result: Any, code: str, arm: str, contending: dict[str, bool]) -> tuple[str, str] | None:
    """The two arms whose comparison decided the verdict (see `Deciding`), or None.

    - capacity: DeepEP against the alternative (which EP flavour), when both are in contention;
    - deepep: DeepEP against its closest rival in contention (the least ratio);
    - dense: DeepEP against the arm that won; if DeepEP did clear that one, against the rival it
      did not clear (the closest such);
    - DeepEP out of contention: the recommended arm against its closest rival in contention.
    """
    arms = result.arms
    if arm == NO_ARM:
        return None
    if code == "capacity":
        alt = result.alternative
        return ("deepep", alt) if contending.get("deepep") and contending.get(alt) else None
    noise = float(const("noise_band").value)

    def ratio(x: str, y: str) -> float:
        qx, qy, _ = decision_aggregates(arms[x], arms[y])
        return qx.scalar / qy.scalar if qy.scalar else float("inf")

    if contending.get("deepep"):
        rivals = [n for n in arms if n != "deepep" and contending.get(n)]
        if not rivals:
            return None
        if code == "dense":
            unbeaten = [n for n in rivals if not ratio("deepep", n) > 1.0 + noise]
            if arm in unbeaten:
                return ("deepep", arm)
            rivals = unbeaten or rivals
        return ("deepep", min(rivals, key=lambda n: (ratio("deepep", n), n != arm)))
    rivals = [n for n in arms if n not in (arm, "deepep") and contending.get(n)]
    if result.scenario.nodes <= 1:  # on one node a replica *is* the allgather deployment
        twin = {"allgather": "replica", "replica": "allgather"}.get(arm)
        rivals = [n for n in rivals if n != twin]
    if arm not in arms or not rivals:
        return None
    return (arm, min(rivals, key=lambda n: ratio(arm, n)))


def deciding(result: Any, code: str, arm: str, contending: dict[str, bool]) -> Deciding | None:
    """The deciding comparison with its figures (`Result.versus`) and threshold status."""
    decided = deciding_arms(result, code, arm, contending)
    if decided is None:
        return None
    a, b = decided
    ratio, per_user, tax, measured = result.versus(a, b)
    qa, qb, _ = decision_aggregates(result.arms[a], result.arms[b])
    threshold = 1.0 if code == "capacity" else 1.0 + float(const("noise_band").value)
    return Deciding(
        (a, b),
        "measured" if measured else "model",
        {a: qa, b: qb},
        ratio,
        per_user,
        tax,
        threshold,
        threshold_status(ratio, threshold),
    )


def band_crosses(ratio: Q | None, threshold: float) -> bool:
    """Whether a banded ratio's range spans the decision threshold (a modelled ratio only)."""
    if ratio is None or not ratio.banded:
        return False
    low = first_float(ratio.low)
    high = first_float(ratio.high)
    return low <= threshold <= high
