"""Typed errors: bad input is the user's to fix, missing data is ours to admit.

Both are rendered as one line by every face of the tool (CLI exit code 2, HTTP 422);
anything else is a bug and is allowed to surface as one.
"""

from __future__ import annotations

from typing import Any

from .vocabulary import bool_word


def printable(text: Any) -> str:
    """`text` with every control character escaped: safe to show on a terminal, on one line.

    Escapes (a newline in a file name, a NUL in a value, ESC opening a terminal sequence such
    as a screen clear or an OSC 52 clipboard write, a bidi override) become visible `\\x1b`-style
    text, so a name read from a file can neither break the one-line promise nor drive the
    terminal. Printable text, non-ASCII included, is kept as it is. Every face uses this one
    function for what it prints: error lines, file names, model names.
    """
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _shown(value: Any) -> Any:
    """A value as an error line quotes it: whole floats as whole numbers (1025, not 1025.0), a
    yes / no as the word every face accepts (true, not Python's True)."""
    if isinstance(value, bool):
        return bool_word(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return int(value)
    if isinstance(value, int | float):
        return value
    return repr(value)


class CalcError(Exception):
    """Base of the errors the tool reports to people as a single line."""

    exit_code = 2

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(printable(message))
        self.field = field

    @property
    def message(self) -> str:
        return str(self.args[0])


class InputError(CalcError):
    """A value the user gave cannot be used. Names the field, the value and what is allowed."""

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        if value is None:  # nothing was given: say what is wanted, not "None is not allowed"
            text = f"{field}: {allowed}"
        else:
            text = f"{field}: {_shown(value)} is not allowed; expected {allowed}"
        super().__init__(text, field)
        self.value = value
        self.allowed = allowed


class FileInputError(CalcError):
    """A file the user pointed at is missing, unreadable or malformed."""

    def __init__(self, path: Any, problem: str, field: str | None = None) -> None:
        super().__init__(f"{path}: {problem}", field)
        self.path = str(path)
