"""The profile several calibrate test files evaluate with: `calibrate` run once per test module on
the TRT-LLM conc-4 pair (one module may rewrite it with --force; another module gets its own)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepep_calc import cli

from .user_runs import TRT_DEEPEP, TRT_DENSE


@pytest.fixture(scope="module")
def trt_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("trt") / "trt.toml"
    cli.main(["calibrate", "--dense", str(TRT_DENSE), "--deepep", str(TRT_DEEPEP), "-o", str(out), "--json"])
    return out
