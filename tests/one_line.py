"""The check every refusal test makes: the error is one line, no traceback, naming what it must."""

from __future__ import annotations

from deepep_calc.base.errors import CalcError


def assert_one_line(err: CalcError, *needles: str) -> str:
    """The message of `err`, checked to be one line without a traceback and to hold every needle."""
    msg = err.message
    assert "\n" not in msg and "\r" not in msg, msg
    assert "Traceback" not in msg
    for needle in needles:
        assert needle in msg, (needle, msg)
    return msg
