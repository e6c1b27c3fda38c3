"""The installed program in its own process, as a user runs it: the README's first command, the
console script's one-line refusal, `python -m deepep_calc`, and a calibration round trip."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from paths import TESTS

REAL = TESTS / "fixtures" / "aiperf"
EXTRA = TESTS / "fixtures" / "aiperf_extra"
PREFIX = "qwen3-30b-a3b-fp8_ep16_2xp5en"
TRT_DENSE = REAL / f"trtllm-0.21_{PREFIX}_dense-allgather_c4_isl120.json"
TRT_DEEPEP = REAL / f"trtllm-0.21_{PREFIX}_deepep-epnc1_c4_isl120.json"
PAIR_SCENARIO = [
    *("--model", "qwen3-30b-a3b-fp8", "--comms", "1"),
    *("--concurrency", "4", "--isl", "120", "--osl", "128"),
]


def test_the_readme_first_command_prints_the_calibration_card() -> None:
    """`deepep-calc` with no arguments: the card of the default scenario, exit 0."""
    done = subprocess.run([str(_console_script())], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Run allgather" in done.stdout and "14.7 ms/token" in done.stdout


def test_console_script_installed() -> None:
    exe = Path(sys.executable).parent / "deepep-calc"
    proc = subprocess.run([str(exe), "evaluate", "--concurrency", "-1"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and proc.stdout == ""


def test_python_dash_m_runs_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deepep_calc", "kernel", "--json"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)) == {
        "dispatch_us",
        "combine_us",
        "total_us",
        "parts_us",
        "binds",
        "measurements",
    }


def _console_script() -> Path:
    exe = Path(sys.executable).with_name("deepep-calc")
    if not exe.exists():
        pytest.skip("deepep-calc console script not installed next to this interpreter")
    return exe


def test_console_script_end_to_end(tmp_path: Path) -> None:
    exe = _console_script()
    out = tmp_path / "cli.toml"
    done = subprocess.run(
        [exe, "calibrate", "--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "-o", out, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["profile"] == str(out)
    done = subprocess.run(
        [exe, "evaluate", "--calibration", out, *PAIR_SCENARIO, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert round(json.loads(done.stdout)["arms"]["deepep"]["per_user_tok_s"]["value"], 2) == 19.27


def test_console_script_error_is_one_line(tmp_path: Path) -> None:
    exe = _console_script()
    out = tmp_path / "never.toml"
    done = subprocess.run(
        [exe, "calibrate", "--dense", EXTRA / "truncated.json", "--deepep", TRT_DEEPEP, "-o", out],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "truncated JSON" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()
