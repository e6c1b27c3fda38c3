"""Scenarios, fixture paths and CLI answers that more than one test file uses, in tests/estimate/
and tests/decide/ (imported there as `estimate.shared`): defined once, never copied."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cli_runner import run_cli
from deepep_calc.catalog.measured import load_cells
from deepep_calc.estimate.disagg import compute_with_disagg
from deepep_calc.question.scenario import Scenario, resolve
from paths import FIXTURES

# The calibration A/B's fixed fields: Qwen3-30B-A3B-FP8 on 2x p5en, TRT-LLM, efa-proxy at
# EP_NUM_COMMS=8 against allgather (the measured cells vary concurrency and ISL around them).
CALIBRATION_FIELDS = dict(
    model="qwen3-30b-a3b-fp8",
    instance="p5en",
    nodes=2,
    engine="trtllm",
    transport="efa-proxy",
    alternative="allgather",
    comms=8,
)

# DeepSeek-V3 on vLLM under CUDA graphs: the replicas' one-node layout is a real choice there.
DSV3_VLLM = {"model": "deepseek-v3", "engine": "vllm", "cuda_graphs": True}

# The calibration A/B's cell at concurrency 32 and EP_NUM_COMMS=8, the default scenario's.
CALIBRATION_CELL = load_cells()["trt-ab-k8-c32"]

HF = FIXTURES / "hf"
QWEN_CONFIG = HF / "qwen3-30b-a3b-fp8" / "config.json"  # the calibrated preset's own config.json


def evaluate_json(capsys: pytest.CaptureFixture[str], *args: Any) -> dict[str, Any]:
    """`deepep-calc evaluate ARGS --json`, which must succeed, parsed."""
    code, out, err = run_cli(capsys, "evaluate", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def evaluate_refused(capsys: pytest.CaptureFixture[str], *args: Any) -> str:
    """`deepep-calc evaluate ARGS`, which must refuse: exit 2, nothing on stdout, one line on
    stderr without a traceback; that line."""
    code, out, err = run_cli(capsys, "evaluate", *args)
    assert code == 2 and not out, (code, out)
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def disagg(**kw):
    """The disaggregated deployment of `Scenario(**kw)`, computed without the verdict."""
    return compute_with_disagg(resolve(Scenario(**kw))).disaggregated
