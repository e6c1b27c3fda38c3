"""The small plan and its brute force, computed once for every planner test that reads them
(`small.py` says what the space is). `test_disagg.py` has a `small` of its own: its xPyD space."""

from __future__ import annotations

from typing import Any

import pytest

from deepep_calc.whatif.plan.search import plan_request, run_plan

from .small import SMALL, brute_force


@pytest.fixture(scope="package")
def small() -> Any:
    return run_plan(plan_request(**SMALL))


@pytest.fixture(scope="package")
def brute() -> list[dict[str, Any]]:
    return brute_force(**SMALL)
