"""Where things are, for every test wherever it sits under tests/: defined once, so moving a
test file into another folder moves none of its paths."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
