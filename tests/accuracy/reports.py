"""The cross-validated accuracy report, for the tests of more than one folder that read it
(`tests/accuracy/`, through its conftest, and `tests/report/test_accuracy_md.py`): computed once
per process (~8 s here), whichever module asks first, and handed out as the fixture `cv`."""

from __future__ import annotations

from functools import cache

import pytest

from deepep_calc.accuracy.validate import Report, cross_validate


@cache
def cross_validated() -> Report:
    """Every reference held out in turn (`accuracy/validate.py: cross_validate`)."""
    return cross_validate()


@pytest.fixture(scope="module")
def cv() -> Report:
    return cross_validated()
