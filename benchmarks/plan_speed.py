"""Planner speed: the default plan, xPyD splits included, answers in < 1 s on this machine (2 cores).

    .venv/bin/python benchmarks/plan_speed.py              # every case, 7 runs each
    .venv/bin/python benchmarks/plan_speed.py --runs 15 --case default

Each case is run repeatedly after one warm-up; min and median wall times are reported with
the configurations searched, and each is also given as a multiple of one scalar `evaluate()`
of the calibration scenario timed in the same process (the baseline), so a figure taken on a
busy machine can still be compared with one taken on an idle one. The p6 instances have no
catalog price yet: the cases price them (`--price-per-hour`) so the whole space is searched.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

PRICES = "p6-b200=113.93,p6-b300=142.42"  # benchmark-only prices so every instance is searched
CASES: dict[str, dict[str, Any]] = {
    # the default plan: every EFA instance x 1-16 nodes x every engine, arm, graph mode, comms,
    # and every xPyD split of P + D <= 16 nodes (each side's layout, the RDMA KV transports)
    "default": dict(
        model="deepseek-v3", isl=1024, osl=256, concurrency=64, slo_tok_s=20, price_per_hour=PRICES
    ),
    # the same plan without the splits (what the default was before disaggregated layouts)
    "aggregated": dict(
        model="deepseek-v3",
        isl=1024,
        osl=256,
        concurrency=64,
        slo_tok_s=20,
        price_per_hour=PRICES,
        layouts="aggregated",
    ),
    # a BF16 checkpoint: FP8 weights are searched too (twice the families)
    "bf16-model": dict(model="qwen3-235b-a22b", isl=1024, osl=256, concurrency=128, price_per_hour=PRICES),
    # nothing meets: the closest misses, the single changes and the 17-64 node extension
    "no-answer": dict(
        model="deepseek-v3", isl=1024, osl=256, concurrency=64, slo_tok_s=1e5, price_per_hour=PRICES
    ),
    # a request rate: Little's law solved for every configuration
    "request-rate": dict(model="deepseek-v3", isl=1024, osl=256, request_rate=4.0, price_per_hour=PRICES),
    # a larger plan (shows a progress bar on the CLI): 1-64 nodes
    "64-nodes": dict(
        model="deepseek-v3", isl=1024, osl=256, concurrency=256, max_nodes=64, price_per_hour=PRICES
    ),
}
TARGET_S = 1.0


def timed(fn: Any, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--case", choices=sorted(CASES))
    args = ap.parse_args()

    from deepep_calc.api import evaluate
    from deepep_calc.question.scenario import Scenario
    from deepep_calc.whatif.plan.search import plan_request, run_plan

    evaluate(Scenario())  # warm the catalogs and the fit
    base = timed(lambda: evaluate(Scenario()), max(args.runs * 3, 10))
    base_min, base_med = min(base), statistics.median(base)
    print(
        f"baseline: one evaluate() of the calibration scenario  min {base_min * 1e3:.1f} ms  "
        f"median {base_med * 1e3:.1f} ms"
    )
    verdict = ""
    for name, fields in CASES.items():
        if args.case and name != args.case:
            continue
        req = plan_request(**fields)
        plan = run_plan(req)  # warm-up, and the counts
        times = timed(lambda r=req: run_plan(r), args.runs)
        lo, med = min(times), statistics.median(times)
        print(
            f"{name:13s} searched={plan.searched:>6,} skipped={plan.skipped:>5,} "
            f"frontier={len(plan.frontier):>3} "
            f"min {lo:6.3f} s  median {med:6.3f} s  = {med / base_med:6.0f} x evaluate()  "
            f"({plan.searched / med:,.0f} configurations/s)"
        )
        if name == "default":
            ok = "PASS" if med < TARGET_S else "FAIL"
            verdict = f"default plan median {med:.3f} s (target < {TARGET_S:g} s) {ok}"
    if verdict:
        print(verdict)


if __name__ == "__main__":
    main()
