"""`Scenario` checks its field types when it is built, as the CLI's flags would (one line
naming the flag), and converts only what a JSON or TOML reader would: a whole float to an int,
an int to a float where a float is due. Values are `resolve()`'s to check (`test_scenario.py`,
and the limits `test_fields.py`)."""

from __future__ import annotations

import numpy as np
import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.base.errors import InputError
from deepep_calc.question.scenario import BOOL_FIELDS, FLOAT_FIELDS, INT_FIELDS


@pytest.mark.parametrize(
    ("field", "value", "flag", "allowed"),
    [
        ("nodes", "2", "--nodes", "a whole number"),
        ("nodes", 2.5, "--nodes", "a whole number"),
        ("nodes", True, "--nodes", "a whole number"),
        ("concurrency", float("nan"), "--concurrency", "a whole number"),
        ("gpus_per_node", "8", "--gpus-per-node", "a whole number"),
        ("slo_tok_s", "30", "--slo-tok-s", "a number"),
        ("ttft_ms", False, "--ttft-ms", "a number"),
        ("cuda_graphs", 1, "--cuda-graphs", "true or false"),
        ("instance", 5, "--instance", "a text value"),
        ("alternative", "dense", "--alternative", "allgather or tp"),
    ],
)
def test_a_value_of_the_wrong_type_is_one_line_naming_the_flag(
    field: str, value: object, flag: str, allowed: str
) -> None:
    with pytest.raises(InputError) as info:
        Scenario(**{field: value})
    message = info.value.message
    assert message.startswith(f"{flag}: ") and allowed in message and "\n" not in message


def test_reader_conversions_and_nothing_else() -> None:
    s = Scenario(nodes=4.0, concurrency=np.int64(64), slo_tok_s=30, cuda_graphs=np.bool_(True))
    assert (s.nodes, type(s.nodes)) == (4, int)
    assert (s.concurrency, type(s.concurrency)) == (64, int)
    assert (s.slo_tok_s, type(s.slo_tok_s)) == (30.0, float)
    assert s.cuda_graphs is True
    assert Scenario(slo_tok_s=None).slo_tok_s is None  # optional fields stay unset
    with pytest.raises(TypeError):
        Scenario(no_such_field=1)  # type: ignore[call-arg]


def test_copies_are_checked_like_new_scenarios() -> None:
    base = Scenario()
    assert base.copy(nodes=3).nodes == 3 and base.nodes == 2
    with pytest.raises(InputError, match="--comms"):
        base.copy(comms="8")


def test_a_converted_scenario_evaluates_as_the_typed_one() -> None:
    assert (
        evaluate(Scenario(nodes=2.0, slo_tok_s=20)).to_json()
        == evaluate(Scenario(nodes=2, slo_tok_s=20.0)).to_json()
    )


def test_field_kinds_are_read_from_the_annotations() -> None:
    assert "nodes" in INT_FIELDS and "max_batch" in INT_FIELDS and "experts" in INT_FIELDS
    assert FLOAT_FIELDS == ("slo_tok_s", "ttft_ms", "price_per_hour")
    assert BOOL_FIELDS == ("cuda_graphs", "prefill_cuda_graphs", "decode_cuda_graphs")


def test_a_copy_checks_what_it_changes_and_equals_a_fresh_scenario() -> None:
    """`Scenario.copy` (every what-if) re-checks only the updated fields, with the same rules
    and conversions as a new Scenario, and leaves the original as it was."""
    base = Scenario(model="deepseek-v3", nodes=2, concurrency=64)
    update = {"nodes": 4.0, "cuda_graphs": np.bool_(True), "price_per_hour": 7}
    copy = base.copy(**update)
    fresh = Scenario(**{**base.as_dict(), **update})
    assert copy.as_dict() == fresh.as_dict()
    assert type(copy.nodes) is int and type(copy.cuda_graphs) is bool and type(copy.price_per_hour) is float
    assert (base.nodes, base.cuda_graphs, base.price_per_hour) == (2, False, None)
    with pytest.raises(InputError, match=r"--nodes: 2\.5 is not allowed; expected a whole number"):
        base.copy(nodes=2.5)
    with pytest.raises(TypeError, match="no field 'nodez'"):
        base.copy(nodez=4)
