"""Hardening: hostile output targets, signals, file limits and a real server under abuse.
They spawn processes and wait on timers, so the suite is `slow` and `hardening`."""

from __future__ import annotations

import pytest

from paths import TESTS
from suites import mark_suite


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_suite(items, TESTS / "hardening", "hardening", "slow")
