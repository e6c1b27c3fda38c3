"""The runs a user hands to `calibrate`, as the io, fit and calibrate tests read them: the shared AIPerf
exports (tests/fixtures/aiperf, with hand-made ones in aiperf_extra), the TRT-LLM conc-4 pair
assembled, fitted and fingerprinted the way the command does it, and the CLI helpers the
calibrate tests share.

It sits in tests/calibrate/ because that folder is a package, importable from anywhere in the
suite (`from calibrate.user_runs import ...`): tests/io/ has no `__init__.py` (a package named
`io` would shadow the standard library), so a helper there could be imported from its own
folder only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli_runner import run_cli
from deepep_calc.calibrate.fit import fit_engine
from deepep_calc.calibrate.profile import input_files, input_records
from deepep_calc.calibrate.runs import assemble, build_cells
from deepep_calc.io.aiperf import load_aiperf
from deepep_calc.io.profile import fingerprint
from deepep_calc.question.scenario import Scenario
from paths import FIXTURES

REAL = FIXTURES / "aiperf"
EXTRA = FIXTURES / "aiperf_extra"

PREFIX = "qwen3-30b-a3b-fp8_ep16_2xp5en"
DENSE_NAME = f"trtllm-0.21_{PREFIX}_dense-allgather_c4_isl120.json"
DEEPEP_NAME = f"trtllm-0.21_{PREFIX}_deepep-epnc1_c4_isl120.json"
TRT_DENSE = REAL / DENSE_NAME
TRT_DEEPEP = REAL / DEEPEP_NAME
TRT_DENSE_CSV = EXTRA / f"trtllm-0.21_{PREFIX}_dense-allgather_c4_isl120.csv"  # hand-made twin

# The scenario the TRT-LLM pair ran, as flags.
PAIR_SCENARIO = [
    "--model",
    "qwen3-30b-a3b-fp8",
    "--comms",
    "1",
    "--concurrency",
    "4",
    "--isl",
    "120",
    "--osl",
    "128",
]


def vllm(comms: int, conc: int, suffix: str = "json") -> Path:
    return REAL / f"vllm-0.24_{PREFIX}_deepep-epnc{comms}_c{conc}_isl120.{suffix}"


def sglang(conc: int) -> Path:
    return REAL / f"sglang-0.5.11_{PREFIX}_deepep-epnc8_c{conc}_isl120.json"


def records(rs: Any, log: Path | None = None) -> list:
    """The input records as the face makes them: each input fingerprinted, then recorded."""
    return input_records(rs, log, {p: fingerprint(p) for p in input_files(rs, log)})


def trt_set() -> tuple:
    """The TRT-LLM pair as `calibrate` takes it: assembled, its cells built, the engine fitted."""
    rs = assemble([load_aiperf(TRT_DENSE)], [load_aiperf(TRT_DEEPEP)], Scenario())
    cells = build_cells(rs)
    return rs, cells, fit_engine(rs.scenario, cells)


run = run_cli


def run_json(capsys: pytest.CaptureFixture[str], *args: Any) -> dict[str, Any]:
    """`deepep-calc ARGS --json`, which must succeed, as parsed JSON."""
    code, out, err = run(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)
