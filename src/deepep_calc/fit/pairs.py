"""Pair a dense and a DeepEP run into an A/B, and sort runs into concurrency levels.

Why a module of its own: this is where imported numbers first meet each other. A tax computed
across different workloads would be a difference of workloads, not of MoE exchanges, so the
checks that refuse such a pair sit beside the arithmetic that derives the tax and its spread.

Why in the fit: it reads no file. The AIPerf reader (`io/aiperf/`) hands over parsed runs, and
both it and the calibration (`calibrate/runs.py`) pair them with this arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from deepep_calc.base.errors import InputError
from deepep_calc.base.quantity import Q, qmap

if TYPE_CHECKING:  # runs are handed in parsed: the pairing reads no file
    from deepep_calc.io.aiperf.run import AIPerfRun

OSL_TOLERANCE = 0.05
"""Relative gap between measured and requested output length above which we warn: per-token
figures from runs that stopped early (no ignore_eos) are not comparable to the requested shape."""


@dataclass(frozen=True)
class ABPair:
    """A dense run and a DeepEP run of the same workload, and what differs between them.

    The tax is the per-token step-time difference, the quantity the physics must reproduce at
    the pair's scenario. The spread is the standard error of that difference (each leg's ITL
    std over its request count, combined in quadrature): with n = 1 run per cell it is the only
    honest width we can attach. Ratios are DeepEP over dense, so below 1 means DeepEP is slower.
    """

    dense: AIPerfRun
    deepep: AIPerfRun
    tax_ms: Q
    tax_spread_ms: Q | None
    tax_from_per_user_ms: Q | None
    step_ms_dense: Q
    step_ms_deepep: Q
    per_user_dense: Q | None
    per_user_deepep: Q | None
    per_user_ratio: Q | None
    aggregate_ratio: Q | None
    ttft_ratio: Q | None
    ttft_basis: str | None  # "p50" or "avg": which TTFT statistic the ratio uses
    warnings: list[str] = field(default_factory=list)
    # derived: the aggregates less a first-wave cold start, when either run shows one (a run
    # that shows none enters as measured); None when neither does
    steady_aggregate_ratio: Q | None = None

    @property
    def concurrency(self) -> int | None:
        return self.dense.concurrency


def workload_length(run: AIPerfRun, which: str) -> tuple[float | None, bool]:
    """The run's ISL or OSL: the requested value when known (exact), else the measured mean."""
    requested = run.isl_requested if which == "isl" else run.osl_requested
    if requested is not None:
        return requested, True
    measured = run.isl_measured if which == "isl" else run.osl_measured
    return (measured.scalar if measured is not None else None), False


def check_pair(dense: AIPerfRun, deepep: AIPerfRun) -> list[str]:
    """Refuse an A/B whose legs ran different workloads; list the smaller doubts otherwise.

    A tax computed across different models, lengths or concurrencies would be a difference of
    workloads, not of MoE exchanges, so those mismatches are input errors. Everything that
    only weakens the comparison (different engines, a cancelled leg, ...) is a warning.
    """
    warnings: list[str] = []
    _check_model(dense, deepep, warnings)
    for which in ("isl", "osl"):
        _check_length(dense, deepep, which, warnings)
    _check_concurrency(dense, deepep, warnings)
    warnings += _setup_doubts(dense, deepep)
    for role, run in (("dense", dense), ("DeepEP", deepep)):
        warnings.extend(f"{role} run ({run.name}): {w}" for w in run.warnings)
    return warnings


def _check_model(dense: AIPerfRun, deepep: AIPerfRun, warnings: list[str]) -> None:
    """Different models refuse the pair; a model one export leaves out is a warning."""
    if dense.model and deepep.model and dense.model.lower() != deepep.model.lower():
        raise InputError(
            "model",
            deepep.model,
            f"the dense run's model {dense.model!r} ({dense.name}); the DeepEP run ({deepep.name}) differs",
        )
    if not (dense.model and deepep.model):
        warnings.append("model not stated by both exports; cannot confirm both runs ran the same")


def _check_length(dense: AIPerfRun, deepep: AIPerfRun, which: str, warnings: list[str]) -> None:
    """ISL or OSL: requested values must agree exactly, measured means within the tolerance."""
    a, a_exact = workload_length(dense, which)
    b, b_exact = workload_length(deepep, which)
    if a is None or b is None:
        warnings.append(f"{which.upper()} not known for both runs; cannot confirm it matches")
        return
    exact = a_exact and b_exact
    differs = a != b if exact else abs(a - b) > OSL_TOLERANCE * max(a, b)
    if differs:
        kind = "requested" if exact else "requested or measured"
        raise InputError(
            which,
            b,
            f"the dense run's {kind} {which.upper()} {a:g} ({dense.name}); the DeepEP run "
            f"({deepep.name}) ran {b:g}",
        )
    if not exact:
        warnings.append(
            f"{which.upper()} compared on measured means ({a:g} vs {b:g}): the "
            "requested value is not in both exports"
        )


def _check_concurrency(dense: AIPerfRun, deepep: AIPerfRun, warnings: list[str]) -> None:
    """Different concurrencies refuse the pair; an unknown one is a warning."""
    if dense.concurrency is None or deepep.concurrency is None:
        warnings.append("concurrency not known for both runs; cannot confirm it matches")
    elif dense.concurrency != deepep.concurrency:
        raise InputError(
            "concurrency",
            deepep.concurrency,
            f"the dense run's concurrency {dense.concurrency} ({dense.name}); the DeepEP run "
            f"({deepep.name}) ran {deepep.concurrency}",
        )


def _setup_doubts(dense: AIPerfRun, deepep: AIPerfRun) -> list[str]:
    """What weakens a same-workload comparison: engines, leg names, AIPerf versions, request counts."""
    warnings: list[str] = []
    if dense.engine and deepep.engine and dense.engine != deepep.engine:
        warnings.append(
            f"the two runs ran on different engines ({dense.engine} vs {deepep.engine}); "
            "the tax then includes engine differences"
        )
    if dense.leg == "deepep":
        warnings.append(f"the dense run is named {dense.leg_label!r}")
    if deepep.leg == "dense":
        warnings.append(f"the DeepEP run is named {deepep.leg_label!r}")
    if dense.aiperf_version and deepep.aiperf_version and dense.aiperf_version != deepep.aiperf_version:
        warnings.append(
            f"different AIPerf versions ({dense.aiperf_version} vs "
            f"{deepep.aiperf_version}); metric definitions may differ"
        )
    if (
        dense.request_count is not None
        and deepep.request_count is not None
        and dense.request_count != deepep.request_count
    ):
        warnings.append(f"different request counts ({dense.request_count} vs {deepep.request_count})")
    return warnings


def _ratio(num: Q | None, den: Q | None) -> Q | None:
    if num is None or den is None or den.scalar == 0:
        return None
    return (num / den).as_("ratio")


def derive_pair(dense: AIPerfRun, deepep: AIPerfRun) -> ABPair:
    """The A/B quantities the calibration fits: per-token tax, its spread, and the ratios.

    Everything computed here is `derived` (Q arithmetic on measured inputs); the per-user
    rates and step times are passed through as measured, exactly as exported.
    """
    warnings = check_pair(dense, deepep)
    for run in (dense, deepep):
        if run.itl_ms is None:
            raise InputError(
                "inter_token_latency",
                None,
                f"a streaming run with inter-token latency in both runs; {run.name} has none",
            )
    assert dense.itl_ms is not None and deepep.itl_ms is not None
    spread = _tax_spread(dense, deepep)
    if spread is None:
        warnings.append("ITL std or count missing in a run; no spread for the tax")
    tax_pu: Q | None = None
    if dense.per_user_tok_s is not None and deepep.per_user_tok_s is not None:
        tax_pu = (1000.0 / deepep.per_user_tok_s - 1000.0 / dense.per_user_tok_s).as_("ms")
    ttft_ratio, ttft_basis = _ttft_ratio(dense, deepep)
    return ABPair(
        dense=dense,
        deepep=deepep,
        tax_ms=deepep.itl_ms - dense.itl_ms,
        tax_spread_ms=spread,
        tax_from_per_user_ms=tax_pu,
        step_ms_dense=dense.itl_ms,
        step_ms_deepep=deepep.itl_ms,
        per_user_dense=dense.per_user_tok_s,
        per_user_deepep=deepep.per_user_tok_s,
        per_user_ratio=_ratio(deepep.per_user_tok_s, dense.per_user_tok_s),
        aggregate_ratio=_ratio(deepep.aggregate_tok_s, dense.aggregate_tok_s),
        ttft_ratio=ttft_ratio,
        ttft_basis=ttft_basis,
        warnings=warnings,
        steady_aggregate_ratio=_steady_ratio(deepep, dense),
    )


def _tax_spread(dense: AIPerfRun, deepep: AIPerfRun) -> Q | None:
    """The standard error of the ITL difference of two independent means; None without the std
    and count of both legs."""
    sd_a, n_a = dense.itl_std_ms, dense.itl_count
    sd_b, n_b = deepep.itl_std_ms, deepep.itl_count
    if sd_a is None or sd_b is None or n_a is None or n_b is None:
        return None
    if not (n_a.scalar > 0 and n_b.scalar > 0):  # written so that a NaN count gives no spread
        return None
    variance = sd_a * sd_a / n_a + sd_b * sd_b / n_b
    return qmap(math.sqrt, variance, unit="ms")


def _ttft_ratio(dense: AIPerfRun, deepep: AIPerfRun) -> tuple[Q | None, str | None]:
    """DeepEP / dense TTFT and the statistic it uses: p50 where both have it, else the mean."""
    if dense.ttft_p50_ms is not None and deepep.ttft_p50_ms is not None:
        return _ratio(deepep.ttft_p50_ms, dense.ttft_p50_ms), "p50"
    if dense.ttft_ms is not None and deepep.ttft_ms is not None:
        return _ratio(deepep.ttft_ms, dense.ttft_ms), "avg"
    return None, None


def _steady_ratio(deepep: AIPerfRun, dense: AIPerfRun) -> Q | None:
    """DeepEP / dense aggregate at steady state (io/aiperf/cold_start.py), if a run waited."""
    if deepep.steady_aggregate_tok_s is None and dense.steady_aggregate_tok_s is None:
        return None
    return _ratio(
        deepep.steady_aggregate_tok_s or deepep.aggregate_tok_s,
        dense.steady_aggregate_tok_s or dense.aggregate_tok_s,
    )


def group_by_concurrency(runs: Iterable[AIPerfRun]) -> dict[int, list[AIPerfRun]]:
    """Sort a set of runs into concurrency levels (ascending), keeping input order within one.

    A run with no known concurrency cannot be placed, and dropping it silently would bias a
    fit, so it is an input error.
    """
    groups: dict[int, list[AIPerfRun]] = {}
    for run in runs:
        if run.concurrency is None:
            raise InputError(
                "concurrency",
                None,
                f"a known concurrency for every run; {run.name} states none in its export or its file name",
            )
        groups.setdefault(run.concurrency, []).append(run)
    return dict(sorted(groups.items()))
