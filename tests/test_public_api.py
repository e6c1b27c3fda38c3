"""The public surface other code builds on: `deepep_calc.__all__` and the field names of every
`--json` answer, pinned. A field added on purpose is added to `tests/fixtures/api/` in the same
commit (`python tests/test_public_api.py` rewrites them); one renamed or lost by a refactor fails.
"""

from __future__ import annotations

import json
import sys
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

import pytest

import deepep_calc

PINS = Path(__file__).parent / "fixtures" / "api" / "json_fields.json"

# one fixed question per answer shape (the default scenario where a command has one)
COMMANDS: dict[str, list[str]] = {
    "evaluate": ["evaluate", "--json"],
    "evaluate-tp": ["evaluate", "--model", "deepseek-v3", "--nodes", "4", "--alternative", "tp", "--json"],
    "evaluate-disagg": ["evaluate", "--model", "deepseek-v3", "--disagg", "1P1D", "--json"],
    "kernel": ["kernel", "--json"],
    "plan": ["plan", "--model", "qwen3-30b-a3b-fp8", "--concurrency", "16", "--max-nodes", "2", "--json"],
}


def field_paths(doc: Any, path: str = "") -> set[str]:
    """Every key path of a JSON document; a list's items share one `[]` step."""
    if isinstance(doc, dict):
        return {
            p for key, value in doc.items() for p in {f"{path}.{key}"} | field_paths(value, f"{path}.{key}")
        }
    if isinstance(doc, list):
        return {p for item in doc for p in field_paths(item, f"{path}[]")}
    return set()


def answers() -> dict[str, list[str]]:
    """Each command's sorted field paths, run in process."""
    from deepep_calc import cli

    got = {}
    for name, args in COMMANDS.items():
        buffer = StringIO()
        with redirect_stdout(buffer):
            cli.main(args)
        got[name] = sorted(field_paths(json.loads(buffer.getvalue())))
    return got


_ANSWERS: dict[str, list[str]] = {}


def answers_once() -> dict[str, list[str]]:
    """The answers, computed for the first test that asks and shared with the rest."""
    if not _ANSWERS:
        _ANSWERS.update(answers())
    return _ANSWERS


def test_the_package_exports_exactly_its_public_names() -> None:
    assert deepep_calc.__all__ == [
        "Q",
        "Result",
        "Scenario",
        "Tag",
        "evaluate",
        "explain_verdict",
        "load_catalog",
    ]
    assert all(getattr(deepep_calc, name) is not None for name in deepep_calc.__all__)
    result = deepep_calc.evaluate(deepep_calc.Scenario())
    assert isinstance(result, deepep_calc.Result) and result.verdict.code in ("dense", "capacity", "deepep")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_json_field_names_are_the_pinned_ones(name: str) -> None:
    pinned = json.loads(PINS.read_text())[name]
    got = answers_once()[name]
    lost, added = sorted(set(pinned) - set(got)), sorted(set(got) - set(pinned))
    assert not lost, f"{name}: fields gone from the JSON contract: {lost}"
    assert not added, f"{name}: new fields not pinned (add them to {PINS.name} on purpose): {added}"


def test_the_design_contract_is_inside_the_pins() -> None:
    """DESIGN.md's evaluate / kernel / plan fields, by name: the pins cannot drop them unnoticed."""
    pins = json.loads(PINS.read_text())
    q = ("value", "unit", "tag", "source")
    evaluate = {".scenario", ".verdict.code", ".verdict.headline", ".verdict.reasons", ".verdict.advisories"}
    evaluate |= {".verdict.flags", ".ratio_deepep_vs_alternative.value", ".tax_ms_per_token.value"}
    for arm in ("deepep", "allgather", "replica"):
        evaluate |= {f".arms.{arm}.{key}" for key in ("feasible", "fits_memory", "breakdown_ms")}
        for figure in ("per_user_tok_s", "step_ms", "aggregate_tok_s", "ttft_ms", "usd_per_mtok"):
            evaluate |= {f".arms.{arm}.{figure}.{k}" for k in q}
    assert evaluate <= set(pins["evaluate"])
    assert {f".{part}_us.{k}" for part in ("dispatch", "combine", "total") for k in q} <= set(pins["kernel"])
    plan = {".targets", ".searched", ".skipped", ".best", ".frontier", ".nearest_misses", ".note"}
    plan |= {f".frontier[].{key}" for key in ("config", "arm", "meets_targets")}
    plan |= {f".frontier[].{figure}.value" for figure in ("per_user_tok_s", "aggregate_tok_s", "ttft_ms")}
    assert plan <= set(pins["plan"])


if __name__ == "__main__":  # rewrite the pins after a deliberate change of the contract
    from deepep_calc.io.safe_write import write_atomic

    write_atomic(PINS, json.dumps(answers(), indent=1) + "\n", "json_fields.json")
    sys.exit(0)
