"""Sweep throughput: >= 1,000,000 scenarios in < 10 s on 2 cores, memory bounded by chunking.

    .venv/bin/python benchmarks/sweep_speed.py            # every case, each in its own process
    .venv/bin/python benchmarks/sweep_speed.py --write    # also time CSV and Parquet output

Each case runs in a fresh interpreter so its peak RSS (getrusage ru_maxrss) is its own.
Timing starts after planning (parse + validate + resolve), which is reported separately.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = {
    # one model and transport: nodes x concurrency x ISL x OSL x EP_NUM_COMMS
    "grid-1-model": {
        "nodes": "1,2,4,8,16",
        "concurrency": "1:4096",
        "isl": "128,1024,8192,32768",
        "osl": "128,1024",
        "comms": "1,2,4,8,16,32,64",
    },
    # three models x three transports (nine resolved combinations)
    "multi-model": {
        "model": "deepseek-v3,qwen3-235b-a22b,qwen3-30b-a3b-fp8",
        "transport": "efa-proxy,efa-gda,efa-uccl",
        "nodes": "1,2,4,8",
        "concurrency": "1:8192",
        "isl": "120,1024,2048,8192",
    },
}
TARGET_S = 10.0


def run_case(name: str, write: str | None) -> dict[str, object]:
    from deepep_calc.sweep import plan_sweep, run_sweep

    t0 = time.perf_counter()
    plan = plan_sweep(CASES[name])
    planned = time.perf_counter() - t0
    out = None
    with tempfile.TemporaryDirectory() as tmp:
        if write:
            out = str(Path(tmp) / f"rows.{write}")
        t1 = time.perf_counter()
        summary = run_sweep(plan, output=out, progress=False)
        wall = time.perf_counter() - t1
        size = Path(out).stat().st_size if out else 0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "case": name,
        "output": write or "none",
        "rows": summary.rows,
        "combinations": summary.combinations,
        "plan_s": round(planned, 3),
        "wall_s": round(wall, 3),
        "rows_per_s": round(summary.rows / wall),
        "peak_rss_mb": round(rss_mb, 1),
        "file_mb": round(size / 1e6, 1),
        "verdicts": summary.verdicts,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--case", choices=sorted(CASES))
    ap.add_argument("--output", choices=["csv", "parquet"])
    ap.add_argument("--write", action="store_true", help="also time CSV and Parquet output")
    args = ap.parse_args()
    if args.case:  # child: one case, one JSON line
        print(json.dumps(run_case(args.case, args.output)))
        return
    outputs = [None, "csv", "parquet"] if args.write else [None]
    worst = 0.0
    for name in CASES:
        for fmt in outputs:
            cmd = [sys.executable, __file__, "--case", name] + (["--output", fmt] if fmt else [])
            res = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            if fmt is None:
                worst = max(worst, res["wall_s"] * 1_000_000 / res["rows"])
            print(
                f"{res['case']:13s} out={res['output']:8s} rows={res['rows']:>10,} "
                f"wall={res['wall_s']:6.2f} s  {res['rows_per_s']:>11,} rows/s  "
                f"plan={res['plan_s']:.2f} s  peak RSS={res['peak_rss_mb']:7.1f} MB"
                + (f"  file={res['file_mb']:.0f} MB" if fmt else "")
            )
    verdict = "PASS" if worst < TARGET_S else "FAIL"
    print(
        f"evaluation time per 1,000,000 rows (worst case): {worst:.2f} s (target < {TARGET_S:g} s) {verdict}"
    )


if __name__ == "__main__":
    main()
