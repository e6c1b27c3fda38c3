"""What every web test checks of a response, shared by the tests of `api.py`, `app.py`,
`guard.py`, `inputs.py`, `pages.py` and `schemas.py`: no Python internals leak into a body,
a refusal is `{error, field}` on one line, and the CLI's message for the same scenario (the
API words it with JSON field names)."""

from __future__ import annotations

import pytest

from deepep_calc.api import evaluate
from deepep_calc.base.errors import CalcError
from deepep_calc.question.scenario import Scenario
from paths import TESTS

HF = TESTS / "fixtures" / "hf"
LEAKS = ("Traceback", 'File "', "site-packages", "Error(")


def clean(resp):
    """Every response: no traceback or Python internals in the body."""
    for marker in LEAKS:
        assert marker not in resp.text, f"{marker!r} leaked into a {resp.status_code} response"
    return resp


def post(client, path, body=None, **kw):
    return clean(
        client.post(path, json=body, **kw) if body is not None or not kw else client.post(path, **kw)
    )


def error_of(resp, status=422):
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error", "field"}
    assert "\n" not in body["error"]
    return body


def cli_message(**fields) -> str:
    """What the CLI prints (after 'deepep-calc: error: ') for the same scenario."""
    with pytest.raises(CalcError) as info:
        evaluate(Scenario(**fields))
    return info.value.message


def api_message(**fields) -> str:
    """The CLI's message as the API words it: the field by its JSON name, not its flag."""
    message = cli_message(**fields)
    flag, rest = message.split(":", 1)
    assert flag.startswith("--")
    return flag[2:].replace("-", "_") + ":" + rest
