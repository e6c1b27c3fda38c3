"""Typed errors: bad input is the user's to fix, missing data is ours to admit.

Both are rendered as one line by every face of the tool (CLI exit code 2, HTTP 422);
anything else is a bug and is allowed to surface as one.
"""

from __future__ import annotations

from typing import Any


def _printable(text: str) -> str:
    """Escape control characters (a newline in a file name, a NUL in a value) so the message
    stays the one line every face promises; printable text, non-ASCII included, is kept."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class CalcError(Exception):
    """Base of the errors the tool reports to people as a single line."""

    exit_code = 2

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(_printable(message))
        self.field = field

    @property
    def message(self) -> str:
        return str(self.args[0])


class InputError(CalcError):
    """A value the user gave cannot be used. Names the field, the value and what is allowed."""

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        shown = value if isinstance(value, int | float) else repr(value)
        super().__init__(f"{field}: {shown} is not allowed; expected {allowed}", field)
        self.value = value
        self.allowed = allowed


class FileInputError(CalcError):
    """A file the user pointed at is missing, unreadable or malformed."""

    def __init__(self, path: Any, problem: str, field: str | None = None) -> None:
        super().__init__(f"{path}: {problem}", field)
        self.path = str(path)


class NoDataError(CalcError):
    """The model has nothing trustworthy to say for this shape; we refuse rather than guess."""
