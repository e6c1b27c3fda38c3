"""`base/errors.py`: the errors every face prints as one line (CLI exit code 2, HTTP 422).
`InputError` names the field, the value and what is allowed; `FileInputError` the path and the
problem; `printable` escapes whatever could break the line or drive a terminal."""

from __future__ import annotations

import pytest

from deepep_calc.base.errors import CalcError, FileInputError, InputError, printable


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain", "plain"),
        ("naïve 東京", "naïve 東京"),  # printable non-ASCII is kept
        ("a\nb", "a\\nb"),
        ("tab\there", "tab\\there"),
        ("nul\x00", "nul\\x00"),
        ("\x1b[2Jclear", "\\x1b[2Jclear"),  # ESC: a terminal sequence
        ("bidi\u202eoverride", "bidi\\u202eoverride"),
        (42, "42"),
    ],
)
def test_printable_escapes_only_what_is_not_printable(text: object, shown: str) -> None:
    assert printable(text) == shown


def test_a_calc_error_is_one_printable_line_with_its_field() -> None:
    err = CalcError("bad\nthing", field="--x")
    assert (err.message, err.field, str(err)) == ("bad\\nthing", "--x", "bad\\nthing")
    assert CalcError.exit_code == 2 and InputError.exit_code == 2 and FileInputError.exit_code == 2
    assert CalcError("m").field is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "--nodes: 0 is not allowed; expected at least 1"),
        (2.0, "--nodes: 2 is not allowed; expected at least 1"),  # a whole float as a whole number
        (2.5, "--nodes: 2.5 is not allowed; expected at least 1"),
        (1e20, "--nodes: 1e+20 is not allowed; expected at least 1"),  # too big to show whole
        (True, "--nodes: true is not allowed; expected at least 1"),  # the word every face accepts
        ("two", "--nodes: 'two' is not allowed; expected at least 1"),
        ("a\nb", "--nodes: 'a\\nb' is not allowed; expected at least 1"),
        (None, "--nodes: at least 1"),  # nothing given: what is wanted, not "None is not allowed"
    ],
)
def test_an_input_error_names_the_field_the_value_and_what_is_allowed(value: object, message: str) -> None:
    err = InputError("--nodes", value, "at least 1")
    assert err.message == message
    assert (err.field, err.value, err.allowed) == ("--nodes", value, "at least 1")
    assert isinstance(err, CalcError)


def test_a_file_error_names_the_path_and_the_problem() -> None:
    err = FileInputError("/tmp/a\nb.json", "is not valid JSON", field="path")
    assert err.message == "/tmp/a\\nb.json: is not valid JSON"
    assert (err.path, err.field) == ("/tmp/a\nb.json", "path")  # the path itself is kept as given
    assert FileInputError("f.toml", "missing").field is None
