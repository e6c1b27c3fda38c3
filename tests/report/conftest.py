"""The scenario both reports are checked on (`test_html.py`, `test_markdown.py`)."""

from __future__ import annotations

import pytest

from deepep_calc.api import evaluate
from deepep_calc.question.scenario import Scenario


@pytest.fixture(scope="module")
def result():
    """DeepSeek-V3 on four nodes over EFA-GDA: every arm modelled, so every figure has a band."""
    return evaluate(Scenario(model="deepseek-v3", nodes=4, transport="efa-gda"))
