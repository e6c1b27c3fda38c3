"""The accuracy report: the model against every published reference, in and out of sample.

In-sample: the built-in fit (`fit/build.py`) predicts every reference. That is bookkeeping:
the references it was fitted to are reproduced by construction or near it.

Out of sample (`cross_validate`): each reference is predicted by a fit that never saw it.
- kernel rows: leave one row out and refit each transport from the references it has left (a
  transport left with none is *unmeasured*: it falls back to the median of its class, and the
  report counts those rows apart as well); then leave each transport and each instance out whole;
- serving runs: leave one run out (both legs of an A/B together, so a ratio is never half
  in-sample); then leave each engine, each model and each transport out whole (a transport's
  kernel rows leave with its serving runs).
Then each combination of engine, exchange, route, model family and graph mode the references
cover (fit/evidence.py) is left out whole and predicted: what the model misses on a
combination it has never seen. The bands every modelled figure carries are 80 % prediction
intervals of model / reference per kind of figure (split-conformal order statistics of the
held-out misses): from the leave-one-out misses where references cover the figure's
combination, from the leave-a-combination-out misses where none does. Their coverage is
checked the same way: each held-out miss against the band made from the others.

Serving references are compared with the model itself, never with the measured substitution
`evaluate()` applies at a cell. A/B verdicts use the verdict's noise band: above 1 + band the
DeepEP leg wins, below 1 - band the other leg does, between is a tie, which the verdict
counts against DeepEP. The report is deterministic: docs/model.md embeds its tables
(`report/accuracy_md.py`).

Why one module: the in-sample table, the leave-one-group-out folds and the report that
prints both read the same reference rows and residual records; apart they would drift.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from ..catalog.constants import const
from ..catalog.hardware import get_instance
from ..catalog.references import not_compared
from ..estimate.compute import compute
from ..estimate.result import Result
from ..fit.build import built_in_table, fit_kernels, fit_table
from ..fit.evidence import UNCOVERED, obs_key
from ..fit.kernels import KernelRow, fit_rows, kernel_rows, nvlink_rows, shape_of
from ..fit.observations import Obs, observations, pairs
from ..fit.table import Table
from ..physics.deepep import KernelSite, kernel_us
from . import disagg_refs

KINDS = ("kernel", "step", "aggregate", "ttft", "ratio")
BAND_LEVEL = 0.8  # central coverage of a band: the 10th-90th percentile of what would be measured


@dataclass
class Row:
    """One measured figure against the model: in sample and out of sample."""

    kind: str  # "kernel", "step", "aggregate", "ttft"
    reference: str
    metric: str
    measured: float
    predicted: float  # the built-in fit
    held_out: float | None  # a fit that never saw this reference (leave one out)
    source: str
    fitted: bool  # the built-in fit used this reference
    in_scope: bool = True
    scope_note: str = ""
    groups: dict[str, str] = field(default_factory=dict)
    unmeasured: bool = False  # held out, no reference of its transport was left to fit
    far: float | None = None  # predicted with its whole combination left out of the fit

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured

    @property
    def cv_error(self) -> float | None:
        return None if self.held_out is None else (self.held_out - self.measured) / self.measured

    @property
    def banded(self) -> bool:
        """Whether its misses set a band: in scope, fitted (check rows describe another domain)."""
        return self.in_scope and not self.groups.get("check")

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "reference": self.reference,
            "metric": self.metric,
            "measured": self.measured,
            "predicted": self.predicted,
            "held_out": self.held_out,
            "error": self.error,
            "cv_error": self.cv_error,
            "fitted": self.fitted,
            "unmeasured_when_held_out": self.unmeasured,
            "combination": self.groups.get("combination"),
            "combination_left_out": self.far,
            "in_scope": self.in_scope,
            "scope_note": self.scope_note,
            "source": self.source,
        }


@dataclass
class ABRow:
    pair: str
    engine: str
    labels: tuple[str, str]  # (DeepEP leg, other leg); the JSON key is `sides`
    basis: str  # "aggregate" or "per-user"
    measured_ratio: float
    predicted_ratio: float
    held_out_ratio: float | None
    far_ratio: float | None = None  # both legs' combinations left out of the fit
    # Both runs' aggregates less a cold start their exports show (derived; the cell says how).
    # Shown beside the measured ratio, which stays the one the accuracy figures compare with.
    steady_ratio: float | None = None
    note: str = ""

    @staticmethod
    def call(ratio: float, labels: tuple[str, str]) -> str:
        noise_band = const("noise_band").scalar
        if ratio > 1.0 + noise_band:
            return labels[0]
        if ratio < 1.0 - noise_band:
            return labels[1]
        return "tie"

    @property
    def measured_call(self) -> str:
        return self.call(self.measured_ratio, self.labels)

    @property
    def predicted_call(self) -> str:
        ratio = self.held_out_ratio if self.held_out_ratio is not None else self.predicted_ratio
        return self.call(ratio, self.labels)

    @property
    def agree(self) -> bool:
        """Out of sample, the verdicts agree: a tie goes to the other leg, as the verdict rules."""
        return (self.measured_call == self.labels[0]) == (self.predicted_call == self.labels[0])

    @property
    def ratio_error(self) -> float | None:
        return None if self.held_out_ratio is None else self.held_out_ratio - self.measured_ratio

    def to_json(self) -> dict[str, Any]:
        return {
            "pair": self.pair,
            "engine": self.engine,
            "sides": list(self.labels),
            "basis": self.basis,
            "measured_ratio": self.measured_ratio,
            "predicted_ratio": self.predicted_ratio,
            "held_out_ratio": self.held_out_ratio,
            "ratio_error": self.ratio_error,
            "combination_left_out_ratio": self.far_ratio,
            "measured_call": self.measured_call,
            "predicted_call": self.predicted_call,
            "verdict_agrees": self.agree,
            "steady_state_ratio": self.steady_ratio,
            "note": self.note,
        }

    def steady_line(self) -> str:
        """The pair's cold start in words, with the ratio it leaves at steady state."""
        held = "" if self.held_out_ratio is None else f", held out {self.held_out_ratio:.2f}"
        return (
            f"{self.pair}: {self.note}. At steady state the ratio is {self.steady_ratio:.2f} [derived] "
            f"against {self.measured_ratio:.2f} as measured (model {self.predicted_ratio:.2f}{held})"
        )


@dataclass
class GroupCV:
    """One leave-a-group-out fold family: e.g. by engine, every engine left out in turn."""

    by: str
    folds: list[tuple[str, int, float]]  # (group left out, rows predicted, MAPE of those rows)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "by": self.by,
            "folds": [{"left_out": g, "rows": n, "mape": m} for g, n, m in self.folds],
            "note": self.note,
        }


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    ab: list[ABRow] = field(default_factory=list)
    group_cv: list[GroupCV] = field(default_factory=list)
    not_compared: list[tuple[str, str]] = field(default_factory=list)
    cross_validated: bool = False
    # disaggregated deployments (accuracy/disagg_refs.py): compared apart, never fitted, outside
    # the bands above; their own band is the wider band of out-of-range disaggregated figures
    disaggregated: list[Row] = field(default_factory=list)
    disaggregated_cv: list[GroupCV] = field(default_factory=list)

    def kinds(self) -> dict[str, dict[str, Any]]:
        """Per kind: rows, in-sample MAPE and (cross-validated) held-out MAPE, in-scope rows only."""
        out: dict[str, dict[str, Any]] = {}
        for kind in ("kernel", "step", "aggregate", "ttft"):
            rows = [r for r in self.rows if r.kind == kind and r.in_scope]
            if not rows:
                continue
            held = [r for r in rows if r.cv_error is not None]
            out[kind] = {
                "rows": len(rows),
                "mape": _mape([r.error for r in rows]),
                "held_out_rows": len(held),
                "held_out_mape": _mape([r.cv_error for r in held]) if held else None,  # type: ignore[misc]
            }
        return out

    def kernel_split(self) -> dict[str, dict[str, Any]]:
        """Held-out kernel rows split by whether their transport kept a reference in the fold:
        `measured` (refitted from its other references), `unmeasured` (its class's median)."""
        out = {}
        for name, flag in (("measured", False), ("unmeasured", True)):
            rows = [r for r in self.rows if r.kind == "kernel" and r.in_scope and r.cv_error is not None]
            errs = [r.cv_error for r in rows if r.unmeasured == flag]
            out[name] = {"rows": len(errs), "held_out_mape": _mape(errs) if errs else None}  # type: ignore[arg-type]
        return out

    def verdict_agreement(self) -> dict[str, Any]:
        agree = sum(r.agree for r in self.ab)
        errors = [abs(r.ratio_error) for r in self.ab if r.ratio_error is not None]
        return {
            "pairs": len(self.ab),
            "agree": agree,
            "rate": agree / len(self.ab) if self.ab else None,
            "max_ratio_error": max(errors) if errors else None,
        }

    def misses(self, far: bool = False) -> dict[str, list[float]]:
        """Per kind, log(model / reference) of every held-out figure that sets a band: left out
        one at a time (`far` False) or with its whole combination (`far` True)."""
        logs: dict[str, list[float]] = {k: [] for k in KINDS}
        for r in self.rows:
            v = r.far if far else r.held_out
            if v is not None and v > 0 and r.banded:
                logs[r.kind].append(math.log(v / r.measured))
        for a in self.ab:
            v = a.far_ratio if far else a.held_out_ratio
            if v is not None and v > 0:
                logs["ratio"].append(math.log(v / a.measured_ratio))
        return logs

    def bands(self) -> dict[str, tuple[float, float]]:
        """Band factors per kind (model / reference): where references cover the combination,
        and `<kind>:uncovered` from the leave-a-combination-out misses."""
        out = {}
        for far in (False, True):
            for kind, values in self.misses(far).items():
                band = prediction_band(values)
                if band is not None:
                    out[kind + (UNCOVERED if far else "")] = band
        return out

    def coverage(self) -> dict[str, dict[str, Any]]:
        """Per band: how many held-out figures fall inside the band made from the others."""
        out = {}
        for far in (False, True):
            for kind, values in self.misses(far).items():
                if len(values) < 4:
                    continue
                inside = 0
                for i, v in enumerate(values):
                    band = prediction_band(values[:i] + values[i + 1 :])
                    assert band is not None
                    inside += math.log(band[0]) <= v <= math.log(band[1])
                out[kind + (UNCOVERED if far else "")] = {
                    "figures": len(values),
                    "inside": inside,
                    "rate": inside / len(values),
                }
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "cross_validated": self.cross_validated,
            "kinds": self.kinds(),
            "kernel_held_out_by_transport_evidence": self.kernel_split(),
            "verdict_agreement": self.verdict_agreement(),
            "bands": {k: {"low": lo, "high": hi} for k, (lo, hi) in self.bands().items()},
            "band_coverage": self.coverage(),
            "group_cv": [g.to_json() for g in self.group_cv],
            "rows": [r.to_json() for r in self.rows],
            "ab": [r.to_json() for r in self.ab],
            "not_compared": [{"reference": k, "why": v} for k, v in self.not_compared],
            "disaggregated": {
                "rows": [r.to_json() for r in self.disaggregated],
                "group_cv": [g.to_json() for g in self.disaggregated_cv],
                "bands": {
                    k: {"low": lo, "high": hi}
                    for k, (lo, hi) in disagg_refs.bands(self.disaggregated).items()
                },
            },
        }


def _mape(errors: Sequence[float]) -> float:
    return float(np.mean([abs(e) for e in errors])) if errors else float("nan")


def prediction_band(logs: Sequence[float], level: float = BAND_LEVEL) -> tuple[float, float] | None:
    """The band (low, high factors) that holds a new miss with probability `level`: split-
    conformal order statistics of the misses seen, so the coverage holds for a small sample too
    (with n misses, the floor((n + 1) x 0.1)-th and ceil((n + 1) x 0.9)-th smallest); never
    excluding 1 (the model itself)."""
    n = len(logs)
    if n < 3:
        return None
    tail = (1.0 - level) / 2.0
    ordered = sorted(logs)
    lo = ordered[max(math.floor((n + 1) * tail), 1) - 1]
    hi = ordered[min(math.ceil((n + 1) * (1.0 - tail)), n) - 1]
    return math.exp(min(lo, 0.0)), math.exp(max(hi, 0.0))


# Predictions ---------------------------------------------------------------------------------


def kernel_prediction(row: KernelRow, table: Table) -> dict[str, float]:
    ref = row.ref
    inst = get_instance(ref.instance)
    k = kernel_us(
        KernelSite(row.transport, inst, inst.gpus_per_node, ref.ep, ref.comms, ref.qps, prefill=ref.prefill),
        shape_of(ref),
        table.kernel_constants(row.transport.name, inst.name),
    )
    return {name: k[name].scalar for name in ("dispatch", "combine", "total")}


def _kernel_pairs(row: KernelRow, pred: dict[str, float]) -> list[tuple[str, float, float]]:
    ref = row.ref
    if ref.dispatch_us is not None and ref.combine_us is not None:
        return [("D+C us", ref.dispatch_us + ref.combine_us, pred["total"])]
    if ref.total_us is not None:
        return [("D+C us", ref.total_us, pred["total"])]
    assert ref.dispatch_us is not None
    return [("dispatch us", ref.dispatch_us, pred["dispatch"])]


def serving_prediction(o: Obs, table: Table) -> Result:
    """The model (no measured substitution) for one observation, at this table's constants."""
    return compute(o.resolved().vary(concurrency=[o.scenario.concurrency]), table=table)


def _serving_values(o: Obs, table: Table) -> dict[str, float]:
    res = serving_prediction(o, table)
    arm = res.arms[o.arm]
    return {
        "step": _first(arm.step_ms.value),
        "aggregate": _first(arm.aggregate_tok_s.value),
        "ttft": _first(arm.ttft_ms.value),
    }


def _first(v: Any) -> float:
    return float(np.asarray(v).reshape(-1)[0])


def _serving_measured(o: Obs) -> list[tuple[str, str, float]]:
    out = []
    if o.step_ms is not None:
        out.append(("step", "ITL / TPOT ms", o.step_ms))
    if o.aggregate_tok_s is not None:
        out.append(("aggregate", "aggregate tok/s", o.aggregate_tok_s))
    if o.ttft_ms is not None:
        out.append(("ttft", "TTFT p50 ms", o.ttft_ms))
    return out


def _ratio(legs: dict[str, Obs], values: dict[str, dict[str, float]]) -> tuple[str, float, float, str]:
    """(basis, measured ratio, model ratio, other leg) of one A/B pair."""
    other = "versus" if "versus" in legs else "allgather"
    dee, alt = legs["deepep"], legs[other]
    if dee.aggregate_tok_s is not None and alt.aggregate_tok_s is not None:
        measured = dee.aggregate_tok_s / alt.aggregate_tok_s
        model = values[dee.id]["aggregate"] / values[alt.id]["aggregate"]
        return "aggregate", measured, model, other
    assert dee.step_ms is not None and alt.step_ms is not None
    return "per-user", alt.step_ms / dee.step_ms, values[alt.id]["step"] / values[dee.id]["step"], other


# The report -----------------------------------------------------------------------------------


def validate(cross_validated: bool = False) -> Report:
    """Every comparison; with `cross_validated`, each also predicted by a fit that never saw it."""
    table = built_in_table()
    krows, obs = kernel_rows(), observations()
    report = Report(cross_validated=cross_validated)
    report.rows += _kernel_report_rows(krows, table, cross_validated)
    values = {o.id: _serving_values(o, table) for o in obs}
    held_serving = _loo_serving(krows, obs) if cross_validated else {}
    far_serving = _lco_serving(krows, obs) if cross_validated else {}
    report.rows += _serving_report_rows(obs, values, held_serving, far_serving)
    report.ab += _ab_rows(obs, values, held_serving, far_serving, cross_validated)
    if cross_validated:
        report.group_cv = _group_cv(krows, obs)
    report.not_compared = [(n.reference, n.why) for n in not_compared()]
    report.disaggregated = disagg_refs.rows(Row, table)
    if cross_validated:
        report.disaggregated_cv = disagg_refs.group_folds(GroupCV)
    return report


def _kernel_report_rows(krows: list[KernelRow], table: Table, cross_validated: bool) -> list[Row]:
    """One row per kernel reference and metric: the built-in model's figure and, cross-validated,
    the figure of a fit that left the reference out."""
    held_kernel = _loo_kernels(krows) if cross_validated else {}
    fitted = {
        r.key for t in {r.transport.name: r.transport for r in krows}.values() for r in fit_rows(t, krows)
    }
    fitted |= {r.key for r in nvlink_rows(krows)}
    out = []
    for row in krows:
        pred = kernel_prediction(row, table)
        held, unmeasured = held_kernel.get(row.key, (None, False))
        for metric, measured, predicted in _kernel_pairs(row, pred):
            h = None
            if held is not None:
                h = next(v for m, _, v in _kernel_pairs(row, held) if m == metric)
            out.append(
                Row(
                    "kernel",
                    row.ref.describe(row.transport.name),
                    metric,
                    measured,
                    predicted,
                    h,
                    row.ref.source,
                    row.key in fitted,
                    row.ref.in_scope,
                    row.ref.scope_note,
                    {"transport": row.transport.name, "instance": row.ref.instance},
                    unmeasured,
                )
            )
    return out


def _serving_report_rows(
    obs: Sequence[Obs],
    values: dict[str, dict[str, float]],
    held_serving: dict[str, dict[str, float]],
    far_serving: dict[str, dict[str, float]],
) -> list[Row]:
    """One row per serving reference and figure it measured; the ones outside the fit are checks."""
    out = []
    for o in obs:
        for kind, metric, measured in _serving_measured(o):
            held = held_serving.get(o.id, {}).get(kind)
            far = far_serving.get(o.id, {}).get(kind)
            out.append(
                Row(
                    kind,
                    o.id,
                    metric,
                    measured,
                    values[o.id][kind],
                    held,
                    o.source,
                    o.use == "fit",
                    o.use == "fit",
                    "" if o.use == "fit" else "outside the model's domain (see the reference's note)",
                    {**o.groups(), "combination": obs_key(o), **({"check": "1"} if o.use != "fit" else {})},
                    far=far,
                )
            )
    return out


def _ab_rows(
    obs: Sequence[Obs],
    values: dict[str, dict[str, float]],
    held_serving: dict[str, dict[str, float]],
    far_serving: dict[str, dict[str, float]],
    cross_validated: bool,
) -> list[ABRow]:
    """Each A/B pair's measured and predicted ratio (held out when both legs were), with the
    steady-state ratio where a run waited for a cold start."""
    out = []
    for key, legs in sorted(pairs(obs).items()):
        basis, measured, model, other = _ratio(legs, values)
        held = None
        if cross_validated and all(s.id in held_serving for s in legs.values()):
            _, _, held, _ = _ratio(legs, held_serving)
        far = None
        if cross_validated and all(s.id in far_serving for s in legs.values()):
            _, _, far, _ = _ratio(legs, far_serving)
        dee = legs["deepep"]
        labels = ("deepep", "dense") if other == "allgather" else (dee.transport, legs[other].transport)
        row = ABRow(key, dee.engine, labels, basis, measured, model, held, far)
        alt = legs[other]
        if basis == "aggregate" and dee.steady_aggregate_tok_s and alt.steady_aggregate_tok_s:
            row.steady_ratio = dee.steady_aggregate_tok_s / alt.steady_aggregate_tok_s
            row.note = dee.cold_start
        out.append(row)
    return out


@cache
def cross_validate() -> Report:
    """The cross-validated report, computed once per process (it refits the model ~150 times:
    ~20 s); treat it as read-only. It validates the catalog's own constants (`CATALOG`): no
    what-if reaches it, so one report per process is the only one."""
    return validate(cross_validated=True)


def _loo_kernels(krows: list[KernelRow]) -> dict[str, tuple[dict[str, float], bool]]:
    """Each row predicted by a fit without it, and whether its transport had a reference left."""
    out = {}
    full = fit_kernels(krows)
    for row in krows:
        if not row.ref.in_scope:  # never in a fit: its held-out prediction is the in-sample one
            out[row.key] = (kernel_prediction(row, full), False)
            continue
        rest = [r for r in krows if r.key != row.key]
        if row.one_node:
            lib = row.transport.library
            unmeasured = not any(r.transport.library == lib for r in nvlink_rows(rest))
        else:
            unmeasured = not fit_rows(row.transport, rest)
        out[row.key] = (kernel_prediction(row, fit_kernels(rest)), unmeasured)
    return out


def _runs(obs: Sequence[Obs]) -> dict[str, list[Obs]]:
    runs: dict[str, list[Obs]] = {}
    for o in obs:
        runs.setdefault(o.pair or o.run, []).append(o)
    return runs


def _loo_serving(krows: list[KernelRow], obs: Sequence[Obs]) -> dict[str, dict[str, float]]:
    """Every observation predicted by a fit without its run (and its A/B twin)."""
    out = {}
    for mine in _runs(obs).values():
        ids = {o.id for o in mine}
        table = fit_table(krows, [o for o in obs if o.id not in ids])
        for o in mine:
            out[o.id] = _serving_values(o, table)
    return out


def _lco_serving(krows: list[KernelRow], obs: Sequence[Obs]) -> dict[str, dict[str, float]]:
    """Every observation predicted by a fit without its whole combination (fit/evidence.py);
    an A/B pair's two legs leave together, so its ratio is predicted from neither."""
    keys = {o.id: obs_key(o) for o in obs}
    folds: list[set[str]] = []
    for legs in pairs(obs).values():  # a pair's combinations leave as one fold
        mine = {keys[o.id] for o in legs.values()}
        joined = [f for f in folds if f & mine]
        for f in joined:
            folds.remove(f)
            mine |= f
        folds.append(mine)
    for key in sorted(set(keys.values())):
        if not any(key in f for f in folds):
            folds.append({key})
    out = {}
    for fold in folds:
        table = fit_table(krows, [o for o in obs if keys[o.id] not in fold])
        for o in obs:
            if keys[o.id] in fold:
                out[o.id] = _serving_values(o, table)
    return out


def _group_cv(krows: list[KernelRow], obs: Sequence[Obs]) -> list[GroupCV]:
    """Leave each engine / model / transport / instance out whole and predict it."""
    out = []
    for by, key in (("engine", "engine"), ("model", "model"), ("transport", "transport")):
        folds = []
        for group in sorted({o.groups()[key] for o in obs if o.use == "fit"} - {"(dense)"}):
            test = [o for o in obs if o.groups()[key] == group and o.use == "fit"]
            train = [o for o in obs if o.groups()[key] != group]
            rows = krows if by != "transport" else [r for r in krows if r.transport.name != group]
            table = fit_table(rows, train)
            errs = [
                (_serving_values(o, table)[kind] - measured) / measured
                for o in test
                for kind, _, measured in _serving_measured(o)
            ]
            folds.append((group, len(errs), _mape(errs)))
        out.append(GroupCV(by, folds))
    folds = []
    instances = sorted({r.ref.instance for r in krows} - {"p5en"})
    for inst in instances:
        test = [r for r in krows if r.ref.instance == inst and r.ref.in_scope]
        table = fit_kernels([r for r in krows if r.ref.instance != inst])
        errs = [(p - m) / m for r in test for _, m, p in _kernel_pairs(r, kernel_prediction(r, table))]
        folds.append((inst, len(errs), _mape(errs)))
    out.append(
        GroupCV(
            "instance",
            folds,
            "kernel rows only: every serving reference ran on p5en, so leaving it out leaves nothing to fit",
        )
    )
    return out
