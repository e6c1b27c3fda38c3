"""One estimate of each tool on the calibration scenario class, paired: deepep-calc against
NVIDIA AIConfigurator (issue 12, item 6).

The scenario class: Qwen3-30B-A3B-FP8, TensorRT-LLM, 2 nodes of 8 H200-class GPUs as EP16 with
attention data-parallel, concurrency 32, ISL 120 / OSL 128. Each round runs, back to back, one
whole `deepep-calc evaluate --json` process and one whole `aiconfigurator cli estimate` process
(agg mode, the same shape; its H200 SXM system stands for p5en), so a burst of load hits both;
the ratio of their wall times is reported per round, then min / median. Both are what a user
waits for one answer; neither tool's numbers are compared here, only its time.

    .venv/bin/python benchmarks/vs_aiconfigurator.py [--rounds 3] [--aic PATH]

AIConfigurator is optional (`pip install -e '.[aiconfigurator]'`, or any venv: `--aic` names its
`aiconfigurator` executable). Without it the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEEPEP = ["evaluate", "--json"]  # the calibration scenario is the default
AIC = [
    "cli", "estimate", "--model-path", "Qwen/Qwen3-30B-A3B-FP8", "--system", "h200_sxm",
    "--backend", "trtllm", "--estimate-mode", "agg", "--isl", "120", "--osl", "128",
    "--batch-size", "32", "--tp-size", "1", "--attention-dp-size", "16", "--moe-ep-size", "16",
]  # fmt: skip


def _aic_executable(given: str | None) -> str | None:
    if given:
        return given if Path(given).exists() else None
    here = Path(sys.executable).parent / "aiconfigurator"
    return str(here) if here.exists() else shutil.which("aiconfigurator")


def _wall(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--aic", help="path of the aiconfigurator executable (default: this venv, then PATH)")
    args = ap.parse_args()
    aic = _aic_executable(args.aic)
    if aic is None:
        print("aiconfigurator is not installed (pip install -e '.[aiconfigurator]' or --aic PATH): skipped")
        return 0
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    ours = [sys.executable, "-m", "deepep_calc", *DEEPEP]
    with tempfile.TemporaryDirectory() as out:
        theirs = [aic, *AIC, "--save-dir", out]
        _wall(ours, env)  # bytecode and page cache, for both
        _wall(theirs, env)
        pairs = []
        for i in range(args.rounds):
            a, b = _wall(ours, env), _wall(theirs, env)
            pairs.append((a, b))
            print(f"round {i + 1}: deepep-calc {a:.3f} s   aiconfigurator {b:.3f} s   ratio {b / a:.1f}x")
    ratios = [b / a for a, b in pairs]
    ours_t, theirs_t = [a for a, _ in pairs], [b for _, b in pairs]
    print(
        f"deepep-calc     min {min(ours_t):.3f}  median {statistics.median(ours_t):.3f} s\n"
        f"aiconfigurator  min {min(theirs_t):.3f}  median {statistics.median(theirs_t):.3f} s\n"
        f"ratio (aiconfigurator / deepep-calc, per round)  min {min(ratios):.1f}x  "
        f"median {statistics.median(ratios):.1f}x  (goal >= 25x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
