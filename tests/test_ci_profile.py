"""CI runs the derandomised hypothesis profile: `.ci/run` sets CI, `conftest.py` reads it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_PROBE = """
import runpy, sys
runpy.run_path(sys.argv[1])
from hypothesis import settings
print(settings.default.derandomize)
"""


def test_ci_run_exports_ci_before_running_pytest() -> None:
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    pytest_line = next(i for i, line in enumerate(lines) if line.startswith(".venv/bin/pytest"))
    exports = [i for i, line in enumerate(lines) if line == "export CI=1"]
    assert exports and exports[0] < pytest_line


def _derandomized(env: dict[str, str]) -> bool:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(ROOT / "tests" / "conftest.py")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return out.stdout.strip() == "True"


@pytest.mark.slow
def test_the_ci_variable_selects_the_derandomised_profile() -> None:
    base = {k: v for k, v in os.environ.items() if k not in ("CI", "HYPOTHESIS_PROFILE")}
    assert _derandomized({**base, "CI": "1"})
    assert _derandomized({**base, "CI": "true"})
    assert not _derandomized(base)
