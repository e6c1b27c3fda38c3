"""Shared test settings: hypothesis profiles, and skips that fail under CI.

`ci` (chosen when the CI variable is set: `.ci/run` exports CI=1) derandomizes every property test:
a red CI run is then reproducible on a laptop with HYPOTHESIS_PROFILE=ci, and a green one does
not depend on luck. `dev` keeps hypothesis's random search for local runs, where finding new
counter-examples is the point. Example counts stay per test (`@settings(max_examples=...)`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


# A skip that means "this clone is missing something the suite needs" (a fixture file, an
# optional dependency, the browser, the installed console script) hides a broken setup behind
# a green run. Under CI it is a failure; locally it stays a skip so a partial setup still runs.
# Skips that are about the platform or the selection (no FIFOs, a deselected fuzz test) stay skips.
MISSING_MARKERS = (
    "could not import",  # pytest.importorskip
    "not installed",
    "not present",
    "not found",
    "missing",
    "no such file",
    "fixture",
    "unavailable",
    "chromium",
    "browser",
)


def skip_means_missing(reason: str) -> bool:
    """Whether a skip reason says something the suite needs is absent."""
    text = reason.lower()
    return any(marker in text for marker in MISSING_MARKERS)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if not (os.environ.get("CI") and report.skipped) or hasattr(report, "wasxfail"):
        return
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    if skip_means_missing(reason):
        report.outcome = "failed"
        report.longrepr = f"CI is set, and this test was skipped for something missing: {reason}"
