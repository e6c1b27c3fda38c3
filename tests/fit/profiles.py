"""A calibration profile document built in memory, for the tests of `fit/profile.py` (reading
and checking one) and `fit/profile_records.py` (its records and what the estimate asks of it).

`document()` is the smallest valid profile: the default scenario, one fingerprinted input, the
five TRT-LLM eager engine constants (launch 50 us, step 1,000 us, proxy 100 + 400 us, 2 TTFT
steps, each replacing a built-in value twice as large) and the built-in cell `trt-ab-k8-c4`.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import tomli_w

from deepep_calc import Scenario
from deepep_calc.catalog.measured import load_cells
from deepep_calc.fit.profile_records import KIND, SCHEMA_VERSION

SCENARIO = {k: v for k, v in dataclasses.asdict(Scenario()).items() if v is not None}
CELL = {k: v for k, v in dataclasses.asdict(load_cells()["trt-ab-k8-c4"]).items() if v is not None}
CELL["deepep"] = {k: v for k, v in CELL["deepep"].items() if v is not None}
CELL["allgather"] = {k: v for k, v in CELL["allgather"].items() if v is not None}


def constant(value: float, unit: str = "us") -> dict[str, Any]:
    return {
        "value": value,
        "unit": unit,
        "tag": "derived",
        "source": "fitted to your runs",
        "builtin": 2 * value,
    }


BASE: dict[str, Any] = {
    "kind": KIND,
    "schema_version": SCHEMA_VERSION,
    "created_at": "2026-01-01T00:00:00+00:00",
    "tool_version": "test",
    "scenario": SCENARIO,
    "inputs": [{"role": "dense", "path": "dense.json", "sha256": "0" * 64, "size_bytes": 10}],
    "constants": {
        "launch_us": constant(50.0),
        "step_us": constant(1000.0),
        "proxy_fixed_us": constant(100.0),
        "proxy_lane_us": constant(400.0),
        "ttft_steps": constant(2.0, "steps"),
    },
    "cells": [CELL],
}


def document(**changes: Any) -> dict[str, Any]:
    """A fresh copy of the valid profile with top-level keys replaced (None: removed)."""
    doc = copy.deepcopy(BASE)
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return doc


def kernel_record(**changes: Any) -> dict[str, Any]:
    """efa-proxy refitted to a log at p5en EP16, 128 tokens of DeepSeek's shape, 8 comms and 2
    QPs: leaving 20 / 10 us, 0.5 / 0.25 us per message at 4 lanes, a signal at 0.5 puts; the
    log's medians 300 / 500 us. A change to None leaves the key out."""

    def q(value: float, unit: str = "us") -> dict[str, Any]:
        return {"value": value, "unit": unit, "tag": "measured", "source": "kernel log"}

    record = {
        "transport": "efa-proxy",
        "instance": "p5en",
        "ep": 16,
        "tokens": 128,
        "hidden": 7168,
        "topk": 8,
        "experts": 256,
        "comms": 8,
        "qps": 2,
        "reference_lanes": 4.0,
        "dispatch_alpha_us": q(20.0),
        "combine_alpha_us": q(10.0),
        "dispatch_beta_us": {**q(0.5), "builtin": 0.4},
        "combine_beta_us": {**q(0.25), "builtin": 0.2},
        "signal_ratio": q(0.5, ""),
        "dispatch_p50_us": q(300.0),
        "combine_p50_us": q(500.0),
    }
    record.update(changes)
    return {k: v for k, v in record.items() if v is not None}


def text(doc: dict[str, Any]) -> str:
    """The document as the TOML a profile file holds."""
    return tomli_w.dumps(doc)
