"""`question/fields.py`: the plain tables of the question (defaults, limits, field names) that
`--help` reads without importing the scenario module. Its promises: the tables agree with
`Scenario`, the default scenario is the measured cells' A/B, and the limits are the ones
`scenario.py` enforces.
"""

from __future__ import annotations

import ast
import inspect

import pytest

from deepep_calc.base.errors import InputError
from deepep_calc.catalog.measured import CELL_INSTANCE, CELL_MODEL, CELL_NODES
from deepep_calc.question import fields
from deepep_calc.question.fields import (
    DEFAULTS,
    DISAGG_FIELDS,
    FIELDS,
    FLOAT_LIMIT,
    LIMITS,
    OVERRIDE_LIMIT,
    PROMPT_TIMEOUT_MS,
)
from deepep_calc.question.scenario import INT_FIELDS, Scenario, check_numbers, resolve


def test_the_defaults_are_what_an_empty_scenario_holds() -> None:
    """Every field not in DEFAULTS defaults to None (an unset override, no profile)."""
    assert set(DEFAULTS) <= set(FIELDS)
    assert Scenario().as_dict() == {name: DEFAULTS.get(name) for name in FIELDS}


def test_fields_list_the_scenario_fields_in_order() -> None:
    assert Scenario.field_names() == FIELDS
    assert len(set(FIELDS)) == len(FIELDS)


def test_the_default_scenario_is_the_measured_cells_a_b() -> None:
    assert (DEFAULTS["model"], DEFAULTS["instance"], DEFAULTS["nodes"]) == (
        CELL_MODEL,
        CELL_INSTANCE,
        CELL_NODES,
    )
    assert DEFAULTS["concurrency"] == 32 and DEFAULTS["cuda_graphs"] is False  # the cells ran eager


def test_disagg_fields_are_the_trailing_split_fields_all_unset_by_default() -> None:
    assert DISAGG_FIELDS == (
        "prefill_nodes",
        "decode_nodes",
        "kv_transport",
        "prefill_arm",
        "decode_arm",
        "prefill_transport",
        "decode_transport",
        "prefill_cuda_graphs",
        "decode_cuda_graphs",
    )
    assert FIELDS[-len(DISAGG_FIELDS) :] == DISAGG_FIELDS
    assert all(DEFAULTS[name] is None for name in DISAGG_FIELDS)


def test_limits_bound_whole_number_fields_and_hold_the_defaults() -> None:
    assert set(LIMITS) <= set(INT_FIELDS)
    assert LIMITS["prefill_nodes"] == LIMITS["decode_nodes"] == LIMITS["nodes"]
    for name, limit in LIMITS.items():
        default = DEFAULTS.get(name)
        assert default is None or 0 < default <= limit, name


def test_the_prompt_timeout_is_ten_minutes() -> None:
    assert PROMPT_TIMEOUT_MS == 10 * 60 * 1000


@pytest.mark.parametrize("name", sorted(set(LIMITS) - {"prefill_nodes", "decode_nodes"}))
def test_each_limit_is_the_largest_value_a_scenario_may_hold(name: str) -> None:
    """`check_numbers` takes the limit itself and refuses one more, naming the limit."""
    check_numbers(Scenario(**{name: LIMITS[name]}))
    with pytest.raises(InputError) as info:
        check_numbers(Scenario(**{name: LIMITS[name] + 1}))
    assert f"at most {LIMITS[name]:,}" in info.value.message


def test_float_and_override_limits_are_enforced() -> None:
    with pytest.raises(InputError, match="a finite number below 1e12"):
        check_numbers(Scenario(price_per_hour=FLOAT_LIMIT * 2))
    with pytest.raises(
        InputError, match=f"--experts: {OVERRIDE_LIMIT + 1} is not allowed; expected at most 1,000,000"
    ):
        resolve(Scenario(experts=OVERRIDE_LIMIT + 1))


def test_the_module_imports_nothing_heavy() -> None:
    """Light enough for `--help`: only the standard library's typing (numpy and the catalogs
    are `scenario.py`'s)."""
    tree = ast.parse(inspect.getsource(fields))
    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported == {"__future__", "typing"}
