"""Browser: the web page driven through Debian's chromium with Playwright (skipped locally
without it, required in CI). Marked `browser`, which the fast lane leaves out."""

from __future__ import annotations

import pytest

from paths import TESTS
from suites import mark_suite


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_suite(items, TESTS / "browser", "browser")
