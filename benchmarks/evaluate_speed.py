"""Single-scenario speed: `evaluate()` mean / p95 (target < 5 ms) and the CLI's wall time for
`deepep-calc evaluate --json` (target < 0.5 s, a fresh process each time).

    .venv/bin/python benchmarks/evaluate_speed.py
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

SCENARIOS = [
    {},
    {"model": "deepseek-v3", "nodes": 4, "transport": "efa-gda"},
    {"model": "qwen3-235b-a22b", "nodes": 2, "engine": "vllm", "concurrency": 256},
    {"model": "kimi-k2", "nodes": 2, "concurrency": 64, "isl": 4096},
    {"model": "deepseek-v3", "instance": "ib-h800", "transport": "ib-ibgda", "nodes": 4, "alternative": "tp"},
]
EVAL_TARGET_MS = 5.0
CLI_TARGET_S = 0.5


def evaluate_times(repeats: int = 60) -> list[float]:
    from deepep_calc import Scenario, evaluate

    for s in SCENARIOS:  # warm the catalogs and the fitted constants, as a server would be
        evaluate(Scenario(**s))
    times = []
    for i in range(repeats):
        for s in SCENARIOS:
            scenario = Scenario(**{**s, "concurrency": s.get("concurrency", 32) + i})  # no result cache
            t = time.perf_counter()
            evaluate(scenario)
            times.append((time.perf_counter() - t) * 1000.0)
    return times


def cli_times(repeats: int = 7) -> list[float]:
    exe = shutil.which("deepep-calc", path=str(Path(sys.executable).parent)) or "deepep-calc"
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run([exe, "evaluate", "--json"], check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return times


def main() -> None:
    ev = sorted(evaluate_times())
    mean, p95 = statistics.fmean(ev), ev[int(0.95 * (len(ev) - 1))]
    ok = "PASS" if mean < EVAL_TARGET_MS else "FAIL"
    print(
        f"evaluate(): n={len(ev)} mean={mean:.2f} ms  p50={statistics.median(ev):.2f} ms  p95={p95:.2f} ms  "
        f"(target mean < {EVAL_TARGET_MS:g} ms) {ok}"
    )
    cli = sorted(cli_times())
    med = statistics.median(cli)
    ok = "PASS" if med < CLI_TARGET_S else "FAIL"
    print(
        f"deepep-calc evaluate --json: n={len(cli)} median={med * 1000:.0f} ms  max={cli[-1] * 1000:.0f} ms  "
        f"(target < {CLI_TARGET_S * 1000:.0f} ms) {ok}"
    )


if __name__ == "__main__":
    main()
