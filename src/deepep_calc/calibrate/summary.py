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
    measured = []
    seen_dense: set[int] = set()
    for cell in profile.cells():
        for arm in ("deepep", "allgather"):
            if cell.arm(arm) is None or (arm == "allgather" and cell.concurrency in seen_dense):
                continue
            if arm == "allgather":
                seen_dense.add(cell.concurrency)
            row: dict[str, Any] = {
                "cell": cell.id,
                "arm": "DeepEP" if arm == "deepep" else "dense",
                "concurrency": cell.concurrency,
                "comms": cell.comms if arm == "deepep" else None,
            }
            for metric, unit in (
                ("per_user_tok_s", "tok/s"),
                ("itl_ms", "ms"),
                ("ttft_p50_ms", "ms"),
                ("aggregate_tok_s", "tok/s"),
            ):
                q = cell.q(arm, metric, unit)
                row[metric] = q.to_json() if q is not None else None
            measured.append(row)

    def rec(r: Any) -> Any:
        return r.q(label).to_json() if r is not None else None

    pairs = [
        {
            "cell": p.cell,
            **{k: rec(getattr(p, k)) for k in ("tax_ms", "tax_spread_ms", *PAIR_RATIOS)},
        }
        for p in profile.pairs
    ]
    multicomm = [
        {
            "concurrency": m.concurrency,
            "comms_low": m.comms_low,
            "comms_high": m.comms_high,
            **{k: rec(getattr(m, k)) for k in ("aggregate_ratio", "per_user_ratio", "itl_ratio")},
        }
        for m in profile.multicomm
    ]

    def fitted(c: Any) -> dict[str, Any]:
        return {**c.q(label).to_json(), "builtin": c.builtin}

    kernel = None
    for k in profile.kernel:
        kernel = {
            "transport": k.transport,
            "instance": k.instance,
            "ep": k.ep,
            "tokens": k.tokens,
            "comms": k.comms,
            "qps": k.qps,
            "dispatch_p50_us": rec(k.dispatch_p50_us),
            "combine_p50_us": rec(k.combine_p50_us),
            "total_p50_us": rec(k.total_p50_us),
            "dispatch_beta_us": fitted(k.dispatch_beta_us),
            "combine_beta_us": fitted(k.combine_beta_us),
        }
    return {
        "profile": path,
        "scenario": profile.scenario.as_dict(exclude_none=True),
        "inputs": [i.model_dump(exclude_none=True) for i in profile.inputs],
        "measured": measured,
        "derived": {"pairs": pairs, "multicomm": multicomm},
        "fitted": {name: fitted(profile.constants.get(name)) for name in CONSTANTS},
        "kernel": kernel,
        "residuals": [r.model_dump() for r in profile.residuals],
        "warnings": list(profile.warnings),
    }
