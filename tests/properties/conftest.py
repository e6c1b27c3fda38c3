"""Property and fuzz tests: hypothesis over scenarios, uploads and the API. Each draws
hundreds of cases, so the suite is `slow` (left out of the fast lane) and `property`."""

from __future__ import annotations

import pytest

from paths import TESTS
from suites import mark_suite


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_suite(items, TESTS / "properties", "property", "slow")
