"""Coverage-guided fuzzing of the file importers with atheris: a bounded run, outside the unit suite.

The hypothesis tests (tests/properties/test_fuzz_importers.py) try the hostile inputs we can think of;
libFuzzer mutates real files towards code the importers have not run yet, and finds the ones
we did not. A finding is any exception other than the tool's own `CalcError`, or a `CalcError`
whose message spans lines: libFuzzer stops and writes the input next to the corpus.

    pip install -e '.[fuzz]'
    python benchmarks/fuzz_atheris.py config          # 20,000 runs from the real config.json files
    python benchmarks/fuzz_atheris.py aiperf-json -runs=100000
    python benchmarks/fuzz_atheris.py all             # each target in turn, 20,000 runs each

Targets: config, aiperf-json, aiperf-csv, profile, kernel-log. The profile target needs a profile
to start from; it writes one with `deepep-calc calibrate` from tests/fixtures/aiperf.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests" / "fixtures"
AIPERF = TESTS / "aiperf"
SAMPLE_LOG = REPO / "src" / "deepep_calc" / "io" / "samples" / "deepep_ll_efa_proxy_p5en_ep16.log"
DEFAULT_RUNS = 20_000


def _seeds(target: str, scratch: Path) -> list[Path]:
    if target == "config":
        return sorted(TESTS.glob("hf/*/config.json"))
    if target == "aiperf-json":
        return sorted(TESTS.glob("aiperf_extra/*.json")) + sorted(AIPERF.glob("*.json"))[:3]
    if target == "aiperf-csv":
        return sorted(TESTS.glob("aiperf_extra/*.csv")) + sorted(AIPERF.glob("*.csv"))
    if target == "kernel-log":
        return [SAMPLE_LOG]
    out = scratch / "seed.toml"
    dense = AIPERF / "trtllm-0.21_qwen3-30b-a3b-fp8_ep16_2xp5en_dense-allgather_c4_isl120.json"
    deepep = AIPERF / "trtllm-0.21_qwen3-30b-a3b-fp8_ep16_2xp5en_deepep-epnc1_c4_isl120.json"
    if not deepep.is_file():
        raise SystemExit("the profile target needs tests/fixtures/aiperf to write a seed profile")
    cmd = [
        sys.executable,
        "-m",
        "deepep_calc.cli",
        "calibrate",
        "--dense",
        str(dense),
        "--deepep",
        str(deepep),
    ]
    subprocess.run(
        [*cmd, "--kernel-log", str(SAMPLE_LOG), "-o", str(out), "--json"], check=True, capture_output=True
    )
    return [out]


def _loaders() -> dict[str, tuple[Callable[[Path], Any], str]]:
    import atheris

    with atheris.instrument_imports(include=["deepep_calc"]):
        from deepep_calc.fit.profile import load_profile
        from deepep_calc.io.aiperf import load_aiperf
        from deepep_calc.io.hf_config import load_hf_config
        from deepep_calc.io.kernel_log import load_kernel_log
    return {
        "config": (load_hf_config, ".json"),
        "aiperf-json": (load_aiperf, ".json"),
        "aiperf-csv": (load_aiperf, ".csv"),
        "profile": (load_profile, ".toml"),
        "kernel-log": (load_kernel_log, ".log"),
    }


def fuzz(target: str, flags: list[str]) -> None:
    """Run one target in this process (libFuzzer exits the process when it is done)."""
    import atheris

    load, suffix = _loaders()[target]  # first: instrumentation only covers modules imported after it
    from deepep_calc.base.errors import CalcError

    scratch = Path(tempfile.mkdtemp(prefix=f"fuzz-{target}-"))
    corpus = scratch / "corpus"
    corpus.mkdir()
    for seed in _seeds(target, scratch):
        shutil.copy(seed, corpus / f"{seed.parent.name}-{seed.name}")  # config.json x 11
    path = scratch / f"input{suffix}"

    def one(data: bytes) -> None:
        path.write_bytes(data)
        try:
            load(path)
        except CalcError as exc:
            if "\n" in exc.message or "\r" in exc.message:
                raise AssertionError(f"multi-line error: {exc.message!r}") from None

    if not any(f.startswith("-runs=") for f in flags):
        flags = [*flags, f"-runs={DEFAULT_RUNS}"]
    args = [sys.argv[0], *flags, "-max_len=16384", f"-artifact_prefix={scratch}/", str(corpus)]
    print(f"fuzzing {target}: {' '.join(args[1:])}", flush=True)
    atheris.Setup(args, one)
    atheris.Fuzz()


def main() -> None:
    target = next((a for a in sys.argv[1:] if not a.startswith("-")), "config")
    flags = [a for a in sys.argv[1:] if a.startswith("-")]
    if target != "all":
        fuzz(target, flags)
        return
    for one in ("config", "aiperf-json", "aiperf-csv", "profile", "kernel-log"):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, __file__, one, *flags], capture_output=True, text=True)
        tail = [line for line in done.stderr.splitlines() if line.startswith(("Done", "#", "==", "INFO: A"))]
        summary = next((line for line in reversed(tail) if line.startswith("Done")), "no summary")
        cov = next((line.split("cov: ")[1].split()[0] for line in reversed(tail) if "cov: " in line), "?")
        status = "ok" if done.returncode == 0 else f"FINDING (exit {done.returncode})"
        print(f"{one:12s} {summary}; coverage {cov} edges; {time.perf_counter() - start:.1f} s; {status}")
        if done.returncode != 0:
            print(done.stderr[-3000:])


if __name__ == "__main__":
    main()
