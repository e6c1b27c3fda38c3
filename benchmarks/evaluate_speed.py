"""Single-scenario speed: `evaluate()` mean / p95 (target < 5 ms) and the CLI's wall time for
`deepep-calc evaluate --json` (target < 0.5 s, a fresh process each time), each also as min /
median and as a ratio to a baseline timed in the same run (`sum(range(2000))` for evaluate,
`python -c "import numpy"` for the CLI). The issue-12 figures, before / after, are
`benchmarks/speed.py`.

    .venv/bin/python benchmarks/evaluate_speed.py
"""

from __future__ import annotations

import os
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


def evaluate_times(repeats: int = 60) -> tuple[list[float], list[float]]:
    """evaluate() times of fresh scenarios, and the baseline's, interleaved (ms)."""
    from deepep_calc import Scenario, evaluate

    for s in SCENARIOS:  # warm the catalogs and the fitted constants, as a server would be
        evaluate(Scenario(**s))
    times, base = [], []
    for i in range(repeats):
        for s in SCENARIOS:
            scenario = Scenario(**{**s, "concurrency": s.get("concurrency", 32) + i})  # no result cache
            t = time.perf_counter()
            evaluate(scenario, explain=False)  # the rule and the figures; the words are a face's
            times.append((time.perf_counter() - t) * 1000.0)
            t = time.perf_counter()
            sum(range(2000))
            base.append((time.perf_counter() - t) * 1000.0)
    return times, base


def cli_times(repeats: int = 7) -> tuple[list[float], list[float]]:
    """Whole-process times of `deepep-calc evaluate --json` and of the numpy import (s)."""
    exe = shutil.which("deepep-calc", path=str(Path(sys.executable).parent)) or "deepep-calc"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # users have .pyc
    times, base = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run([exe, "evaluate", "--json"], check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - t)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import numpy"], check=True, capture_output=True, env=env)
        base.append(time.perf_counter() - t)
    return times, base


def main() -> None:
    ev_raw, ev_base = evaluate_times()
    ev = sorted(ev_raw)
    mean, p95 = statistics.fmean(ev), ev[int(0.95 * (len(ev) - 1))]
    ok = "PASS" if mean < EVAL_TARGET_MS else "FAIL"
    ratio = statistics.median(ev) / statistics.median(ev_base)
    print(
        f"evaluate(): n={len(ev)} mean={mean:.2f} ms  min={ev[0]:.2f} ms  "
        f"p50={statistics.median(ev):.2f} ms  "
        f"p95={p95:.2f} ms  x{ratio:.0f} sum(range(2000))  (target mean < {EVAL_TARGET_MS:g} ms) {ok}"
    )
    cli_raw, cli_base = cli_times()
    cli = sorted(cli_raw)
    med = statistics.median(cli)
    ok = "PASS" if med < CLI_TARGET_S else "FAIL"
    ratio = med / statistics.median(cli_base)
    print(
        f"deepep-calc evaluate --json: n={len(cli)} min={cli[0] * 1000:.0f} ms  median={med * 1000:.0f} ms  "
        f"max={cli[-1] * 1000:.0f} ms  x{ratio:.2f} numpy import  "
        f"(target < {CLI_TARGET_S * 1000:.0f} ms) {ok}"
    )


if __name__ == "__main__":
    main()
