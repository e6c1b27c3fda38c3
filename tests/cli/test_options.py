"""The shared scenario flags (`cli/options.py`) directly: the graph-mode words, how the two mode
flags combine, a `--disagg` split against the node counts, the flags popped into a `Scenario`,
the flag table against the scenario's fields and defaults, and the one JSON printer. (That every
command spells the flags alike is test_options_flag_spelling.py's.)"""

from __future__ import annotations

import click
import pytest

from deepep_calc.base.errors import InputError
from deepep_calc.cli.options import (
    SCENARIO_FLAGS,
    GraphMode,
    ListOf,
    check_nodes,
    emit_json,
    graph_mode,
    mode_unset,
    scenario_from,
)
from deepep_calc.cli.program import evaluate_cmd
from deepep_calc.question.fields import DEFAULTS, FIELDS
from deepep_calc.question.scenario import Scenario


@pytest.mark.parametrize(
    ("word", "graphs_flag", "eager_flag"),
    [
        ("true", True, False),  # true / false answer the flag they follow
        ("YES", True, False),
        (" on ", True, False),
        ("1", True, False),
        ("false", False, True),
        ("off", False, True),
        ("graphs", True, True),  # a mode word names the mode whichever flag carries it
        ("cuda-graphs", True, True),
        ("eager", False, False),
    ],
)
def test_a_mode_word_is_whether_cuda_graphs_are_on(word: str, graphs_flag: bool, eager_flag: bool) -> None:
    assert GraphMode("--cuda-graphs").convert(word, None, None) is graphs_flag
    assert GraphMode("--eager").convert(word, None, None) is eager_flag
    assert GraphMode("--prefill-cuda-graphs").convert(word, None, None) is graphs_flag


def test_an_unknown_mode_word_is_refused_naming_its_flag() -> None:
    with pytest.raises(InputError) as info:
        GraphMode("--decode-cuda-graphs").convert("maybe", None, None)
    assert info.value.message == (
        "--decode-cuda-graphs: 'maybe' is not allowed; expected true or false (or the mode: graphs, eager)"
    )


@pytest.mark.parametrize(
    ("graphs", "eager", "on"),
    [
        (None, None, False),  # neither: eager, the measured mode
        (True, None, True),
        (False, None, False),
        (None, False, False),  # --eager (already the mode it asks for: graphs off)
        (None, True, True),  # --eager false
        (True, True, True),  # both given, agreeing
    ],
)
def test_the_two_mode_flags_give_one_mode(graphs: bool | None, eager: bool | None, on: bool) -> None:
    assert graph_mode(graphs, eager) is on


def test_the_two_mode_flags_disagreeing_are_refused() -> None:
    with pytest.raises(InputError) as info:
        graph_mode(True, False)
    assert info.value.message == "--eager: --cuda-graphs asks for the other mode; give one of the two"


def test_mode_unset_is_neither_flag_given() -> None:
    assert mode_unset({"cuda_graphs": None, "eager": None}) and mode_unset({})
    assert not mode_unset({"cuda_graphs": False, "eager": None})
    assert not mode_unset({"eager": True})


def test_scenario_from_pops_the_scenario_flags_and_leaves_the_commands_own() -> None:
    kwargs = {
        "model": "deepseek-v3",
        "nodes": 4,
        "cuda_graphs": None,
        "eager": None,
        "disagg": None,
        "gpus_per_node": None,
        "max_batch": None,
        "as_json": True,
        "html_path": "x.html",
    }
    assert scenario_from(kwargs) == Scenario(model="deepseek-v3", nodes=4, cuda_graphs=False)
    assert kwargs == {"as_json": True, "html_path": "x.html"}


def test_a_split_sets_the_side_counts_and_the_nodes() -> None:
    """1P3D: one prefill and three decode nodes, a cluster of 1 + 3 = 4 (the default --nodes 2 is
    not typed, so it gives way)."""
    scenario = scenario_from({"disagg": " 1P3D ", "nodes": 2, "prefill_nodes": None})
    assert (scenario.nodes, scenario.prefill_nodes, scenario.decode_nodes) == (4, 1, 3)
    scenario = scenario_from({"disagg": "2P2D", "prefill_nodes": 2})  # a side count that agrees
    assert (scenario.prefill_nodes, scenario.decode_nodes) == (2, 2)


def test_a_split_contradicting_a_side_count_is_refused() -> None:
    with pytest.raises(InputError) as info:
        scenario_from({"disagg": "1P3D", "decode_nodes": 2})
    assert info.value.message == (
        "--decode-nodes: 2 is not allowed; expected 3, as --disagg 1P3D says (or give only one of the two)"
    )


def test_a_typed_node_count_must_be_p_plus_d() -> None:
    """Typed on the command line, --nodes 5 beside 1P3D is refused; --nodes 4 agrees."""
    ctx = evaluate_cmd.make_context("evaluate", ["--disagg", "1P3D", "--nodes", "5"])
    with ctx, pytest.raises(InputError) as info:
        scenario_from(dict(ctx.params))
    assert info.value.message == (
        "--nodes: 5 is not allowed; expected 4 = P + D for a 1P3D split (or leave --nodes out)"
    )
    ctx = evaluate_cmd.make_context(
        "evaluate", ["--prefill-nodes", "2", "--decode-nodes", "6", "--nodes", "8"]
    )
    with ctx:
        assert scenario_from(dict(ctx.params)).nodes == 8


def test_check_nodes_leaves_an_aggregated_scenario_alone() -> None:
    fields = {"nodes": 3, "prefill_nodes": None, "decode_nodes": 2}
    check_nodes(fields)
    assert fields == {"nodes": 3, "prefill_nodes": None, "decode_nodes": 2}
    fields = {"nodes": 3, "prefill_nodes": 1, "decode_nodes": 1}  # outside a command: nothing typed
    check_nodes(fields)
    assert fields["nodes"] == 2


def test_a_list_flag_passes_its_text_on() -> None:
    """`sweep.parse_values` parses lists and ranges and names a bad item; the type keeps the text."""
    assert ListOf(click.INT).convert("1:8:x2", None, None) == "1:8:x2"
    assert ListOf(click.INT).inner is click.INT


def test_the_flag_table_is_the_scenarios_fields() -> None:
    """One flag per Scenario field, in snake case, plus --eager (the other spelling of
    --cuda-graphs) and --disagg (the two side counts at once); where the table gives a default
    it is the default scenario's."""
    names = [flag[2:].replace("-", "_") for flag, *_ in SCENARIO_FLAGS]
    assert len(names) == len(set(names))
    assert set(names) - {"eager", "disagg"} == set(FIELDS)
    for (flag, _, _, default), name in zip(SCENARIO_FLAGS, names, strict=True):
        if default is not None:
            assert default == DEFAULTS[name], flag


def test_emit_json_prints_indented_json_and_refuses_nan(capsys: pytest.CaptureFixture[str]) -> None:
    emit_json({"a": [1, 2], "b": None})
    assert capsys.readouterr().out == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": null\n}\n'
    with pytest.raises(ValueError, match="not JSON compliant"):
        emit_json({"a": float("nan")})
