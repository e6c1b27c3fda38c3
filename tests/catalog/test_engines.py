"""`catalog/engines.py`: the serving engines (`data/engines.toml`): the flags that pick each
arm, batch limits, graph-mode flags, fit priors. `get_engine` is `--engine`."""

from __future__ import annotations

import re
from typing import get_args

import pytest

from deepep_calc.base.errors import InputError
from deepep_calc.base.vocabulary import ARMS
from deepep_calc.catalog.engines import Engine, get_engine, load_engines
from deepep_calc.catalog.models import DTYPES
from deepep_calc.catalog.transports import Library
from one_line import assert_one_line

ENGINES = load_engines()
# What the launch command fills in (decide/explain.py: the flags' placeholders).
PLACEHOLDERS = {"world", "gpus_per_node", "deepep_backend"}


def _texts(e: Engine) -> list[str]:
    return [t for f in e.flags.values() for t in (*f.env.values(), *f.config.values(), *f.args)]


def test_the_engines_and_their_names() -> None:
    assert list(ENGINES) == ["trtllm", "vllm", "sglang"]
    assert all(name == e.name for name, e in ENGINES.items())


@pytest.mark.parametrize("text", ["vllm", " VLLM ", "vLLM"])
def test_get_engine_ignores_case_and_spaces(text: str) -> None:
    assert get_engine(text) is ENGINES["vllm"]


def test_an_unknown_engine_lists_the_engines() -> None:
    with pytest.raises(InputError) as info:
        get_engine("tgi")
    assert (
        assert_one_line(info.value) == "--engine: 'tgi' is not allowed; expected one of trtllm, vllm, sglang"
    )
    assert info.value.field == "--engine"


def test_every_engine_has_flags_for_every_arm() -> None:
    for name, e in ENGINES.items():
        assert tuple(e.flags) == ARMS, name


def test_placeholders_are_ones_the_launch_command_fills_and_the_backend_is_known() -> None:
    """An engine whose DeepEP flags say `{deepep_backend}` maps every DeepEP library it loads
    to its flag value; an engine that never says it needs no map."""
    for name, e in ENGINES.items():
        used = {m for t in _texts(e) for m in re.findall(r"\{(\w+)\}", t)}
        assert used <= PLACEHOLDERS, (name, used)
        assert ("deepep_backend" in used) == bool(e.deepep_backend), name
        assert set(e.deepep_backend) <= set(get_args(Library)), name


def test_priors_name_another_engine() -> None:
    for name, e in ENGINES.items():
        assert e.prior_engine in ("", *ENGINES) and e.prior_engine != name, name


def test_graph_flags_say_which_engines_capture_graphs_by_default() -> None:
    """A flag in parentheses is a default, not a flag to pass (decide/explain.py reads it so)."""
    by_default = {n for n, e in ENGINES.items() if e.graph_flag_graphs.startswith("(")}
    assert by_default == {"vllm", "sglang"}
    assert all(e.graph_flag_eager and not e.graph_flag_eager.startswith("(") for e in ENGINES.values())


def test_weight_flags_name_dtypes_and_batch_limits_cite_a_source() -> None:
    for name, e in ENGINES.items():
        assert set(e.weights.flags) <= set(DTYPES) and e.weights.source, name
        assert e.max_batch_per_rank > 0 and e.max_batch_source, name


def test_a_row_with_a_zero_batch_limit_or_an_unknown_arm_is_refused() -> None:
    from deepep_calc.base.records import RecordError

    good = ENGINES["vllm"].as_dict()
    assert Engine.validate(good) == ENGINES["vllm"]
    with pytest.raises(RecordError) as info:
        Engine.validate({**good, "max_batch_per_rank": 0})
    assert info.value.loc == "max_batch_per_rank"
    with pytest.raises(RecordError) as info:
        Engine.validate({**good, "flags": {**good["flags"], "dense": {}}})
    assert info.value.loc.startswith("flags")
