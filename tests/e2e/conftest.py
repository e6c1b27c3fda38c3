"""End to end: the installed program run in its own process, as a user runs it (the console
script and `python -m`), with its exit codes and output. Marked `e2e` and `slow`."""

from __future__ import annotations

import pytest

from paths import TESTS
from suites import mark_suite


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_suite(items, TESTS / "e2e", "e2e", "slow")
