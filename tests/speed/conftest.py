"""Speed work changes no answer: fast paths against plain ones, lazy imports, outputs byte
for byte against fixtures. Marked `speed`; its few long tests carry `slow` themselves."""

from __future__ import annotations

import pytest

from paths import TESTS
from suites import mark_suite


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_suite(items, TESTS / "speed", "speed")
