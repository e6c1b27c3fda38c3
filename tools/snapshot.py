"""Fingerprint what the tool prints, so a change that only moves code can prove it changed nothing.

    python tools/snapshot.py -o before.json          # on the commit before the move
    python tools/snapshot.py --check before.json     # after: exit 1 and the names that differ

Each case runs `deepep-calc` as a user would (its own process, a fixed terminal width, an empty
working folder) and keeps a SHA-256 of its exit code, stdout, stderr and every file it wrote.
The cases are the README's commands that need no file of the user's, `validate --cv --json`,
a fixed sweep of 10,000 rows written as CSV, verdict and bound maps (HTML and PNG), the
sensitivity table, and a calibration fitted from the AIPerf exports in tests/fixtures. What
changes from run to run without the code changing is blanked out: how long a sweep or a plan
search took, plotly's figure ids, the time a profile was written.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The figures a run prints that are not the model's: how long a sweep or a plan search took.
ELAPSED = re.compile(rb"[\d.]+ s \([\d,]+ rows/s\)|(?<=configurations in )[\d.]+ s")
# plotly names each figure's <div> with a fresh UUID: not the model's either.
UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# A calibration profile records when it was written.
WRITTEN_AT = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")

# 5 models x 4 node counts x 10 concurrencies x 5 input lengths x 2 graph modes x 5 output
# lengths: 10,000 combinations, none skipped.
SWEEP_10K = (
    "sweep --model deepseek-v3,qwen3-235b-a22b-fp8,qwen3-30b-a3b,kimi-k2,deepseek-v2-lite"
    " --nodes 1,2,4,8 --concurrency 1:512:x2 --isl 128,512,1024,4096,8192 --cuda-graphs true,false"
    " --osl 64,128,256,512,1024 -o sweep.csv"
)

# Real AIPerf exports the tests ship: a calibration fitted from them prints its terminal views.
# The inputs are copied into the run's folder and named relatively, because the profile records
# each input's path: the fingerprint then holds in any checkout and across a move of the package's
# sample log (it is found wherever the imported package keeps it).
AIPERF = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "aiperf"
RUN = "qwen3-30b-a3b-fp8_ep16_2xp5en"
DENSE = f"trtllm-0.21_{RUN}_dense-allgather_c4_isl120.json"
DEEPEP = f"trtllm-0.21_{RUN}_deepep-epnc1_c4_isl120.json"
SAMPLE_LOG = "deepep_ll_efa_proxy_p5en_ep16.log"
CALIBRATE = (
    f"calibrate --dense {DENSE} --deepep {DEEPEP} --kernel-log {SAMPLE_LOG}"
    " --model qwen3-30b-a3b-fp8 --comms 1 --concurrency 4 --isl 120 --osl 128 -o profile.toml"
)


def _calibrate_inputs() -> list[Path]:
    """The calibration's three inputs: two fixture exports and the package's sample kernel log."""
    spec = importlib.util.find_spec("deepep_calc")
    assert spec is not None and spec.submodule_search_locations
    package = Path(next(iter(spec.submodule_search_locations)))
    return [AIPERF / DENSE, AIPERF / DEEPEP, next(package.rglob(SAMPLE_LOG))]


CASES: dict[str, str] = {
    "card": "",
    "card-json": "--json",
    "evaluate-dsv3-sglang-graphs": "evaluate --model deepseek-v3 --nodes 2 --engine sglang --cuda-graphs",
    "evaluate-dsv3-4n-json": "evaluate --model deepseek-v3 --instance p5en --nodes 4 --concurrency 256"
    " --json",
    "kernel-json": "kernel --transport efa-proxy --instance p5en --ep 16 --json",
    "kernel-4-tokens": "kernel --transport efa-gda --instance p5en --ep 16 --tokens 4",
    "models": "models",
    "instances-json": "instances --json",
    "transports-json": "transports --json",
    "plan-dsv3": "plan --model deepseek-v3 --isl 1024 --osl 256 --concurrency 64 --slo-tok-s 20",
    "disagg-1p3d": "evaluate --model deepseek-v3 --disagg 1P3D --kv-transport nixl-libfabric",
    "disagg-json": "evaluate --model deepseek-v3 --prefill-nodes 2 --decode-nodes 6 --decode-arm deepep"
    " --json",
    "plan-disagg": "plan --model deepseek-v3 --concurrency 64 --layouts disaggregated",
    "breakeven-json": "breakeven --json",
    "validate-cv-json": "validate --cv --json",
    "validate-cv-md": "validate --cv --md",
    "validate-terminal": "validate --cv --sources",
    "sweep-grid": "sweep --nodes 1,2,4,8 --concurrency 1:512:x2 --transport efa-proxy,efa-gda -o grid.csv",
    "sweep-10k": SWEEP_10K,
    "report-md": "report --md summary.md",
    "sweep-maps-html": "sweep --nodes 1,2,4 --concurrency 1:64:x2 --cuda-graphs true,false --map map.html"
    " --bound-map bounds.html",
    "sweep-maps-png": "sweep --nodes 1,2,4 --concurrency 1:64:x2 --map map.png --bound-map bounds.png",
    "sensitivity": "evaluate --model deepseek-v3 --nodes 2 --sensitivity",
    "calibrate": CALIBRATE,
    "calibrate-json": CALIBRATE + " --json",
}


def _blank(data: bytes) -> bytes:
    """The bytes with figure ids and write times replaced: they change from run to run."""
    return WRITTEN_AT.sub(b"<written at>", UUID.sub(b"<uuid>", data))


def fingerprint(args: str) -> str:
    """SHA-256 of one run: exit code, both streams, and each written file by name."""
    digest = hashlib.sha256()
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1", "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory() as folder:
        inputs = _calibrate_inputs() if args.startswith("calibrate ") else []
        for source in inputs:
            shutil.copyfile(source, Path(folder) / source.name)
        done = subprocess.run(
            [sys.executable, "-m", "deepep_calc", *shlex.split(args)],
            cwd=folder,
            env=env,
            capture_output=True,
            check=False,
        )
        digest.update(f"rc={done.returncode}\n".encode())
        digest.update(_blank(ELAPSED.sub(b"<elapsed>", done.stdout)) + b"\0" + done.stderr + b"\0")
        copied = {source.name for source in inputs}
        for path in sorted(Path(folder).rglob("*")):
            if path.is_file() and path.name not in copied:
                digest.update(path.name.encode() + b"\0" + _blank(path.read_bytes()) + b"\0")
    return digest.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("-o", "--output", type=Path, help="write the fingerprints to this JSON file")
    mode.add_argument("--check", type=Path, help="compare against fingerprints written before")
    parser.add_argument("--only", help="comma-separated case names (default: every case)")
    opts = parser.parse_args()
    names = opts.only.split(",") if opts.only else list(CASES)
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        parser.error(f"--only: {', '.join(unknown)} is not a case; the cases are {', '.join(CASES)}")
    got = {name: fingerprint(CASES[name]) for name in names}
    if opts.output:
        # written beside its target and renamed over it, without the package's own writer: the
        # tool runs against other checkouts, whose modules may live elsewhere
        staged = opts.output.with_name(opts.output.name + ".partial")
        staged.write_text(json.dumps(got, indent=1) + "\n", encoding="utf-8")
        os.replace(staged, opts.output)
        print(f"{len(got)} fingerprints written to {opts.output}")
        return 0
    want = json.loads(opts.check.read_text())
    differ = [name for name in names if want.get(name) != got[name]]
    for name in differ:
        print(f"differs: {name}  (deepep-calc {CASES[name]})")
    print(f"{len(names) - len(differ)} of {len(names)} identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
