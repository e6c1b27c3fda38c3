"""The suites that live in folders of their own (tests/properties, tests/hardening,
tests/speed): each folder's conftest marks what it collects, so a marker selects a suite."""

from __future__ import annotations

from pathlib import Path

import pytest


def mark_suite(items: list[pytest.Item], folder: Path, *marks: str) -> None:
    """Give every test collected under `folder` the `marks` (a suite folder's conftest calls it:
    the property, hardening and speed suites are selected or left out by marker)."""
    for item in items:
        if folder in item.path.parents:
            for name in marks:
                item.add_marker(getattr(pytest.mark, name))
