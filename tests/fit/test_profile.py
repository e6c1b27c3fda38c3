"""Reading a calibration profile (`fit/profile.py`): the TOML parse, every check on the
document (each refusal one line naming the key and what is allowed), the cache, and the one
way the estimate finds a scenario's profile. The document is `profiles.document()`."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from deepep_calc import Scenario
from deepep_calc.base.errors import FileInputError
from deepep_calc.fit.profile import _out_of_range, parse_profile, parse_toml, profile_of, validate_document
from deepep_calc.question.scenario import resolve
from one_line import assert_one_line

from .profiles import CELL, SCENARIO, constant, document, text


def refusal(doc: dict[str, Any], *needles: str) -> FileInputError:
    with pytest.raises(FileInputError) as err:
        validate_document(doc, "my.toml")
    assert_one_line(err.value, "my.toml: ", *needles)
    return err.value


def test_the_first_number_a_profile_cannot_hold() -> None:
    """NaN, infinities and magnitudes beyond 1e12 are named by their dotted key; booleans and
    text are not numbers; ±1e12 itself is allowed."""
    assert _out_of_range({"a": {"b": [1.0, float("nan")]}}) == "a.b.1"
    assert _out_of_range({"x": -float("inf")}) == "x"
    assert _out_of_range({"x": 1e12 + 1e3, "y": float("nan")}) == "x"
    assert _out_of_range({"x": -1e12, "flag": True, "name": "nan", "n": [3, 4]}) is None


def test_a_text_that_is_not_toml_is_one_line() -> None:
    with pytest.raises(FileInputError) as err:
        parse_toml("kind = [unclosed", "my.toml")
    assert_one_line(err.value, "my.toml: not a TOML file (")
    with pytest.raises(FileInputError) as err:
        parse_toml("x = " + "[" * 100_000, "my.toml")
    assert_one_line(err.value, "my.toml: not a TOML file (nested too deeply)")
    with pytest.raises(FileInputError) as err:
        parse_toml("x = " + "9" * 5000, "my.toml")
    assert_one_line(err.value, "my.toml: not a TOML file (a number with thousands of digits)")


def test_a_valid_document_reads_into_a_profile() -> None:
    p = validate_document(document(), "my.toml")
    assert p.schema_version == 3 and p.engine == "trtllm" and p.graphs is False
    assert p.constants.get("launch_us").value == 50.0
    assert p.scenario == Scenario()


def test_a_parsed_profile_is_named_and_cached_by_its_text() -> None:
    """The name labels its sources; the same name and text give the same object, another text
    (a rewrite inside one timestamp tick) a new one."""
    t = text(document())
    p = parse_profile("my.toml", t, "my.toml")
    assert p.label == "profile my.toml"
    assert parse_profile("my.toml", t, "my.toml") is p
    other = parse_profile("my.toml", text(document(tool_version="other")), "my.toml")
    assert other is not p and other.tool_version == "other"


def test_a_document_that_is_no_profile() -> None:
    refusal(
        document(kind=None), "not a deepep-calc calibration profile (no kind / schema_version at the top)"
    )
    refusal(document(schema_version=None), "no kind / schema_version")
    refusal(document(kind="something else"), "not a deepep-calc calibration profile")


def test_another_schema_version_says_to_recalibrate() -> None:
    refusal(
        document(schema_version=2), "schema_version 2 is not supported (this deepep-calc reads 3)", "re-run"
    )


def test_a_number_out_of_range_is_named_by_its_key() -> None:
    doc = document()
    doc["constants"]["step_us"]["value"] = float("nan")
    refusal(
        doc, "not a valid calibration profile: constants.step_us.value is not a finite number within +-1e12"
    )


def test_an_input_without_its_fingerprint() -> None:
    doc = document(inputs=[{"role": "dense", "path": "dense.json", "size_bytes": 10}])
    refusal(doc, "input 1 has no fingerprint (sha256 missing)", "re-run deepep-calc calibrate")


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"unknown_key": 1}, "unknown_key: Extra inputs are not permitted"),
        ({"inputs": []}, "inputs: List should have at least 1 item"),
        ({"cells": []}, "cells: List should have at least 1 item"),
        ({"tool_version": 3}, "tool_version: Input should be a valid string"),
        ({"constants": {"launch_us": constant(50.0)}}, "constants.step_us: Field required"),
    ],
)
def test_what_the_schema_refuses(change: dict[str, Any], needle: str) -> None:
    refusal(document(**change), f"not a valid calibration profile: {needle}")


def test_text_in_a_number_field_is_refused_strictly() -> None:
    """TOML types its values: the string "NaN" where a number belongs is an error, not a NaN."""
    doc = document()
    doc["constants"]["step_us"]["value"] = "NaN"
    refusal(doc, "constants.step_us.value: Input should be a valid number")


@pytest.mark.parametrize(
    ("change", "key", "needle"),
    [
        ({"nodes": -5}, "nodes", "scenario.nodes = -5 is not allowed; expected"),
        ({"engine": "tgi"}, "engine", "scenario.engine = 'tgi' is not allowed; expected one of"),
        ({"instance": "ib-h200"}, "transport", "scenario.transport = 'efa-proxy' is not allowed"),
    ],
)
def test_the_scenario_obeys_the_rules_of_a_typed_scenario(
    change: dict[str, Any], key: str, needle: str
) -> None:
    err = refusal(document(scenario={**SCENARIO, **change}), f"not a valid calibration profile: {needle}")
    assert err.field == f"scenario.{key}"


def test_a_cell_figure_too_small_to_divide_by() -> None:
    """1000 / 5e-324 is infinite: a cell's figure must be at least 1e-6."""
    cell = {**CELL, "deepep": {**CELL["deepep"], "per_user_tok_s": 1e-9}}
    refusal(document(cells=[cell]), "cells.0.deepep.per_user_tok_s = 1e-09; expected at least 1e-06")


def test_control_characters_in_a_profile_reach_no_terminal() -> None:
    cell = {**CELL, "source": "run\x1b[2J on p5en"}
    p = validate_document(document(cells=[cell]), "my.toml")
    assert p.measured[0].source == "run\\x1b[2J on p5en"


def test_the_estimate_finds_the_profile_its_scenario_carries() -> None:
    """No profile: None. A read profile travels in the resolved scenario. A scenario that names a
    profile nobody read is a caller's mistake, said loudly."""
    r = resolve(Scenario())
    assert profile_of(r) is None
    p = validate_document(document(), "my.toml")
    assert profile_of(replace(r, profile=p)) is p
    with pytest.raises(RuntimeError, match=re.escape("--calibration my.toml was never read")):
        profile_of(resolve(Scenario(calibration="my.toml")))
