"""The speed work changes no printed byte: CLI and API outputs equal those taken from main.

The fixtures under tests/fixtures/speed/ were written by `python tests/fixtures/speed/make.py`
run on main at df8d327, before any speed change (lazy verdict advisories, lazy imports, catalog
and fit caches, one API cache key), and regenerated once after the speed work had passed against
them, for two deliberate text changes merged beside it: the bands under modelled figures on the
card, and the reason that no longer blames a host proxy the model charges nothing under CUDA
graphs. Each case is a `deepep-calc evaluate` argument list
(`make.CASES`): its `--json` output and its 80-column terminal view, the no-argument card (text
and `--json`), and the bytes `POST /api/evaluate` answers (`make.API_CASES`). A model change
that moves a number on purpose regenerates them in its own commit.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from paths import FIXTURES

HERE = FIXTURES / "speed"


def _make() -> ModuleType:
    spec = importlib.util.spec_from_file_location("speed_fixtures", HERE / "make.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _make()


@pytest.mark.parametrize("name", sorted(MAKE.CASES))
def test_evaluate_json_is_byte_identical(name: str) -> None:
    out = MAKE.run(["evaluate", *MAKE.CASES[name], "--json"])
    assert out == (HERE / f"{name}.json").read_text()


@pytest.mark.parametrize("name", sorted(MAKE.CASES))
def test_evaluate_text_is_byte_identical(name: str) -> None:
    out = MAKE.run(["evaluate", *MAKE.CASES[name]])
    assert out == (HERE / f"{name}.txt").read_text()


def test_card_is_byte_identical() -> None:
    assert MAKE.run(["--json"]) == (HERE / "card.json").read_text()
    assert MAKE.run([]) == (HERE / "card.txt").read_text()


def test_console_script_json_is_byte_identical() -> None:
    """The installed `deepep-calc` script (the entry point users run), not only `-m`."""
    exe = Path(sys.executable).parent / "deepep-calc"
    if not exe.exists():
        pytest.skip("deepep-calc console script not installed")
    env = {**os.environ, **MAKE.ENV}
    out = subprocess.run(
        [str(exe), "evaluate", "--json"], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout == (HERE / "calibration.json").read_text()


@pytest.mark.parametrize("name", sorted(MAKE.API_CASES))
def test_api_evaluate_is_byte_identical(name: str) -> None:
    from fastapi.testclient import TestClient

    from deepep_calc.web import api
    from deepep_calc.web.app import create_app

    api.clear_caches()
    client = TestClient(create_app())
    want = (HERE / f"api_{name}.json").read_bytes()
    first = client.post("/api/evaluate", json=MAKE.API_CASES[name])
    again = client.post("/api/evaluate", json=MAKE.API_CASES[name])  # from the cache
    assert first.status_code == 200 and first.content == want
    assert again.content == want
