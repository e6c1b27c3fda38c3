"""Load: many clients against a real `deepep-calc serve` for seconds at a time. Marked `load`
and `slow`."""

from __future__ import annotations

import pytest

from paths import TESTS
from suites import mark_suite


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_suite(items, TESTS / "load", "load", "slow")
