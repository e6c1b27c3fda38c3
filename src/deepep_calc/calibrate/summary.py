"""A fitted calibration profile summarised as JSON: what `calibrate --json` prints and the
terminal view (`report/calibration_view.py`) draws, each number with its unit, tag and source.

Built from the profile as the reader parsed it back, so the summary shows what `--calibration`
will use, not what the fit meant to write.
"""

from __future__ import annotations

from typing import Any

from ..fit.profile_records import CONSTANTS

# The A/B pair's ratios, as the summary names them.
PAIR_RATIOS = {
    "per_user_ratio": "per-user",
    "aggregate_ratio": "aggregate",
    "steady_aggregate_ratio": "steady-state aggregate",
    "ttft_ratio": "TTFT p50",
}


def summarise(profile: Any, path: str) -> dict[str, Any]:
    """Everything the table shows, as JSON: each number with its unit, tag and source."""
    label = profile.label
    return {
        "profile": path,
        "scenario": profile.scenario.as_dict(exclude_none=True),
        "inputs": [i.model_dump(exclude_none=True) for i in profile.inputs],
        "measured": _measured_rows(profile),
        "derived": _derived(profile),
        "fitted": {name: _fitted(profile.constants.get(name), label) for name in CONSTANTS},
        "kernel": _kernel(profile),
        "residuals": [r.model_dump() for r in profile.residuals],
        "warnings": list(profile.warnings),
    }


def _rec(r: Any, label: str) -> Any:
    """A stored figure as JSON with the profile's label in its source; None stays None."""
    return r.q(label).to_json() if r is not None else None


def _fitted(c: Any, label: str) -> dict[str, Any]:
    """A fitted constant as JSON beside the built-in value it replaces."""
    return {**c.q(label).to_json(), "builtin": c.builtin}


def _measured_rows(profile: Any) -> list[dict[str, Any]]:
    """One row per measured run: each DeepEP leg, and the allgather leg once per concurrency (the
    cells at one concurrency share their dense run)."""
    measured = []
    seen_dense: set[int] = set()
    for cell in profile.cells():
        for leg in ("deepep", "allgather"):
            if cell.leg(leg) is None or (leg == "allgather" and cell.concurrency in seen_dense):
                continue
            if leg == "allgather":
                seen_dense.add(cell.concurrency)
            row: dict[str, Any] = {
                "cell": cell.id,
                "arm": "DeepEP" if leg == "deepep" else "dense",
                "concurrency": cell.concurrency,
                "comms": cell.comms if leg == "deepep" else None,
            }
            for metric, unit in (
                ("per_user_tok_s", "tok/s"),
                ("itl_ms", "ms"),
                ("ttft_p50_ms", "ms"),
                ("aggregate_tok_s", "tok/s"),
            ):
                q = cell.q(leg, metric, unit)
                row[metric] = q.to_json() if q is not None else None
            measured.append(row)
    return measured


def _derived(profile: Any) -> dict[str, list[dict[str, Any]]]:
    """The A/B pairs' tax and ratios, and the EP_NUM_COMMS comparisons."""
    label = profile.label
    pairs = [
        {
            "cell": p.cell,
            **{k: _rec(getattr(p, k), label) for k in ("tax_ms", "tax_spread_ms", *PAIR_RATIOS)},
        }
        for p in profile.pairs
    ]
    multicomm = [
        {
            "concurrency": m.concurrency,
            "comms_low": m.comms_low,
            "comms_high": m.comms_high,
            **{k: _rec(getattr(m, k), label) for k in ("aggregate_ratio", "per_user_ratio", "itl_ratio")},
        }
        for m in profile.multicomm
    ]
    return {"pairs": pairs, "multicomm": multicomm}


def _kernel(profile: Any) -> dict[str, Any] | None:
    """The kernel-log refit (the last, if several), or None without a log."""
    label = profile.label
    kernel = None
    for k in profile.kernel:
        kernel = {
            "transport": k.transport,
            "instance": k.instance,
            "ep": k.ep,
            "tokens": k.tokens,
            "comms": k.comms,
            "qps": k.qps,
            "dispatch_p50_us": _rec(k.dispatch_p50_us, label),
            "combine_p50_us": _rec(k.combine_p50_us, label),
            "total_p50_us": _rec(k.total_p50_us, label),
            "dispatch_beta_us": _fitted(k.dispatch_beta_us, label),
            "combine_beta_us": _fitted(k.combine_beta_us, label),
        }
    return kernel
