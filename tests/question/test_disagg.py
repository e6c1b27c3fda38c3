"""`question/disagg.py`: a disaggregated deployment as a question. `--disagg xPyD` is parsed,
each side's nodes, arm, DeepEP transport and graph mode are checked and attached, and the KV
transport is the engine's default unless given. It computes nothing, so the tests call
`parse_disagg` / `resolve_disagg` on catalog rows directly, but for one: its refusals as
`deepep-calc evaluate` prints them (one line, exit 2; the `--nodes` that is not P + D among them
is `cli/options.py`'s).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from cli_runner import run_cli
from deepep_calc.base.errors import InputError
from deepep_calc.catalog.constants import CATALOG
from deepep_calc.catalog.engines import get_engine
from deepep_calc.catalog.hardware import get_instance
from deepep_calc.catalog.kv_transports import engine_kv
from deepep_calc.catalog.transports import get_transport
from deepep_calc.question.disagg import (
    DisaggSpec,
    is_disaggregated,
    label,
    parse_disagg,
    resolve_disagg,
)
from deepep_calc.question.scenario import Scenario
from one_line import assert_one_line

ALLOWED = "xPyD with x prefill and y decode nodes, each at least 1"


def split(
    instance: str = "p5en", engine: str = "vllm", transport: str = "efa-proxy", **kw: Any
) -> DisaggSpec:
    s = Scenario(instance=instance, engine=engine, transport=transport, **kw)
    spec = resolve_disagg(s, get_instance(instance), get_engine(engine), get_transport(transport))
    assert spec is not None
    return spec


def refused(**kw: Any) -> str:
    with pytest.raises(InputError) as info:
        split(**kw)
    return assert_one_line(info.value)


# ---------------------------------------------------------------- --disagg xPyD


@pytest.mark.parametrize(("text", "pd"), [("1P3D", (1, 3)), (" 2p6d ", (2, 6)), ("1 P 1 D", (1, 1))])
def test_xpyd_reads_prefill_then_decode_nodes(text: str, pd: tuple[int, int]) -> None:
    assert parse_disagg(text) == pd
    assert parse_disagg(label(*pd)) == pd  # the label reads back as the split


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0P1D", f"'0P1D' is not allowed; expected {ALLOWED}"),
        ("1P", f"'1P' is not allowed; expected {ALLOWED}"),
        ("1D1P", f"'1D1P' is not allowed; expected {ALLOWED}"),
        (13, f"13 is not allowed; expected {ALLOWED}"),
        ("1000P100D", "'1000P100D' is not allowed; expected P + D of at most 1,024 nodes"),
    ],
)
def test_a_bad_xpyd_is_one_line_naming_the_flag(text: Any, expected: str) -> None:
    with pytest.raises(InputError) as info:
        parse_disagg(text)
    assert assert_one_line(info.value).startswith(f"--disagg: {expected}")
    assert info.value.field == "--disagg"


def test_label_and_is_disaggregated() -> None:
    assert label(1, 3) == "1P3D"
    assert not is_disaggregated(Scenario())
    assert is_disaggregated(SimpleNamespace(prefill_nodes=None, decode_nodes=2))
    assert is_disaggregated(SimpleNamespace(prefill_nodes=1))  # a half-given split is checked, not ignored
    assert not is_disaggregated(object())


# ---------------------------------------------------------------- the sides


def test_an_aggregated_scenario_has_no_split() -> None:
    s = Scenario()
    assert resolve_disagg(s, get_instance("p5en"), get_engine("vllm"), get_transport("efa-proxy")) is None


def test_a_split_with_nothing_else_given() -> None:
    """1P3D on p5en over efa-proxy with vLLM: the one prefill node rides NVLink, the three decode
    nodes the scenario's transport; both eager like the scenario; vLLM's default KV transport."""
    spec = split(prefill_nodes=1, decode_nodes=3)
    assert (spec.nodes, spec.label) == (4, "1P3D")
    p, d = spec.prefill, spec.decode
    assert (p.role, p.nodes, p.arm, p.transport.name, p.cuda_graphs) == ("prefill", 1, None, "nvlink", False)
    assert (d.role, d.nodes, d.arm, d.transport.name, d.cuda_graphs) == (
        "decode",
        3,
        None,
        "efa-proxy",
        False,
    )
    assert not any((p.arm_given, p.transport_given, p.graphs_given, d.arm_given, d.transport_given))
    assert spec.side("prefill") is p and spec.side("decode") is d
    assert (spec.kv.name, spec.kv_given) == (engine_kv("vllm").default_kv_transport, False)
    assert spec.engine_kv.engine == "vllm"


def test_what_a_side_is_given_it_keeps_and_says_so() -> None:
    spec = split(
        prefill_nodes=2,
        decode_nodes=2,
        prefill_arm=" DeepEP ",
        decode_arm="tp",
        prefill_transport="efa-gda",
        decode_cuda_graphs=True,
        kv_transport="mooncake-efa",
    )
    p, d = spec.prefill, spec.decode
    assert (p.arm, p.arm_given, p.transport.name, p.transport_given) == ("deepep", True, "efa-gda", True)
    assert (d.arm, d.transport.name, d.transport_given) == ("tp", "efa-proxy", False)
    assert (p.cuda_graphs, p.graphs_given, d.cuda_graphs, d.graphs_given) == (False, False, True, True)
    assert (spec.kv.name, spec.kv_given) == ("mooncake-efa", True)


def test_a_side_inherits_the_scenario_graph_mode() -> None:
    spec = split(prefill_nodes=1, decode_nodes=1, cuda_graphs=True, prefill_cuda_graphs=False)
    assert (spec.prefill.cuda_graphs, spec.decode.cuda_graphs) == (False, True)


@pytest.mark.parametrize(("instance", "scale_out"), [("p5en", "efa-proxy"), ("ib-h200", "ib-ibgda")])
def test_an_nvlink_scenario_gives_a_multi_node_side_the_instance_scale_out(
    instance: str, scale_out: str
) -> None:
    spec = split(instance, transport="nvlink", nodes=1, prefill_nodes=2, decode_nodes=1, kv_transport="tcp")
    assert (spec.prefill.transport.name, spec.decode.transport.name) == (scale_out, "nvlink")


def test_a_side_transport_named_here_carries_the_figures_of_the_assumptions() -> None:
    """A side's own transport is read under the assumptions in force; a side that takes the
    scenario's keeps the row the caller resolved (under the same assumptions)."""
    moved = CATALOG.with_values({"transport:efa-proxy:bw_k1_gb_s": 5.0})
    s = Scenario(transport="efa-gda", prefill_nodes=2, decode_nodes=2, prefill_transport="efa-proxy")
    given = get_transport("efa-gda", moved)
    spec = resolve_disagg(s, get_instance("p5en"), get_engine("vllm"), given, moved)
    assert spec is not None
    assert spec.prefill.transport.bw_k1_gb_s == 5.0 != get_transport("efa-proxy").bw_k1_gb_s
    assert spec.decode.transport is given


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            {"kv_transport": "tcp"},
            "--kv-transport: 'tcp' is not allowed; expected set only with --prefill-nodes and "
            "--decode-nodes (or --disagg xPyD)",
        ),
        (
            {"prefill_nodes": 1},
            "--decode-nodes: missing; give a node count beside --prefill-nodes (or --disagg xPyD)",
        ),
        (
            {"decode_nodes": 2},
            "--prefill-nodes: missing; give a node count beside --decode-nodes (or --disagg xPyD)",
        ),
        (
            {"prefill_nodes": 0, "decode_nodes": 1},
            "--prefill-nodes: 0 is not allowed; expected a whole number of nodes, at least 1 "
            "(each side needs one)",
        ),
        (
            {"prefill_nodes": 1, "decode_nodes": 2000},
            "--decode-nodes: 2000 is not allowed; expected at most 1,024",
        ),
        (
            {"prefill_nodes": 1000, "decode_nodes": 100},
            "--decode-nodes: 100 is not allowed; expected P + D of at most 1,024 nodes (here 1000 + 100)",
        ),
        (
            {"prefill_nodes": 1, "decode_nodes": 1, "prefill_arm": "dense"},
            "--prefill-arm: 'dense' is not allowed; expected one of deepep, allgather, tp, replica",
        ),
        (
            {"prefill_nodes": 2, "decode_nodes": 1, "prefill_transport": "nvlink"},
            "--prefill-transport: 'nvlink' is not allowed; expected a scale-out transport for the 2 "
            "prefill nodes: NVLink reaches only one node's GPUs",
        ),
        (
            {"prefill_nodes": 1, "decode_nodes": 1, "kv_transport": "nope"},
            "--kv-transport: 'nope' is not allowed; "
            "expected one of nixl-libfabric, mooncake-efa, nixl-ucx, tcp",
        ),
    ],
    ids=[
        "kv-without-split",
        "no-decode",
        "no-prefill",
        "zero",
        "over-limit",
        "p-plus-d",
        "arm",
        "nvlink-across",
        "kv-name",
    ],
)
def test_each_refusal_names_the_flag_the_value_and_what_is_allowed(
    given: dict[str, Any], expected: str
) -> None:
    assert refused(**given) == expected


def test_a_side_transport_not_on_the_instance_lists_those_that_are() -> None:
    msg = refused(prefill_nodes=1, decode_nodes=1, decode_transport="ib-ibgda")
    assert msg.startswith(
        "--decode-transport: 'ib-ibgda' is not allowed; expected a transport available on p5en: "
    )
    assert "efa-proxy" in msg and "nvlink" in msg and "ib-ibgda" not in msg.split("p5en: ")[1]


def test_a_count_that_is_not_a_whole_number_is_refused() -> None:
    s = SimpleNamespace(**{**Scenario().as_dict(), "prefill_nodes": True, "decode_nodes": 1})
    with pytest.raises(InputError, match=r"^--prefill-nodes: true is not allowed"):
        resolve_disagg(s, get_instance("p5en"), get_engine("vllm"), get_transport("efa-proxy"))
    s.prefill_nodes, s.kv_transport = 1, 5
    with pytest.raises(InputError, match=r"^--kv-transport: 5 is not allowed; expected a KV transport name"):
        resolve_disagg(s, get_instance("p5en"), get_engine("vllm"), get_transport("efa-proxy"))


def test_an_engine_default_kv_transport_not_on_the_instance_is_not_quoted_as_typed() -> None:
    """vLLM's default KV transport is nixl-libfabric, which runs on EFA only: on an InfiniBand
    instance the refusal says the default was the engine's and lists what runs there, instead of
    "'nixl-libfabric' is not allowed" for a flag the user never gave."""
    msg = refused(instance="ib-h200", transport="ib-ibgda", prefill_nodes=1, decode_nodes=1)
    assert msg == (
        "--kv-transport: vllm's default, nixl-libfabric, does not run on ib-h200; pass one that does: tcp"
    )
    typed = refused(
        instance="ib-h200",
        transport="ib-ibgda",
        prefill_nodes=1,
        decode_nodes=1,
        kv_transport="nixl-libfabric",
    )
    assert typed == "--kv-transport: 'nixl-libfabric' is not allowed; expected one available on ib-h200: tcp"


def test_parse_disagg():
    assert parse_disagg("1P3D") == (1, 3) and parse_disagg(" 2p6d ") == (2, 6)
    for bad in ("0P3D", "1P0D", "P3D", "1:3", "", "1P3D4"):
        with pytest.raises(InputError):
            parse_disagg(bad)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--disagg", "0P3D"], "--disagg"),
        (["--disagg", "3D1P"], "--disagg"),
        (["--disagg", "1P3D", "--nodes", "8"], "--nodes"),
        (["--disagg", "1P3D", "--kv-transport", "rdma-magic"], "--kv-transport"),
        (["--disagg", "1P3D", "--engine", "trtllm", "--kv-transport", "mooncake-efa"], "--kv-transport"),
        (["--disagg", "1000P100D"], "--disagg"),
        (["--prefill-nodes", "2"], "--decode-nodes"),
        (["--kv-transport", "tcp"], "--kv-transport"),
        (["--disagg", "1P1D", "--decode-arm", "ring"], "--decode-arm"),
        (["--disagg", "1P2D", "--decode-transport", "nvlink"], "--decode-transport"),
    ],
)
def test_bad_disaggregated_input_is_one_line_and_exit_2(capsys, args, field):
    code, out, err = run_cli(capsys, "evaluate", *args)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith(f"deepep-calc: error: {field}:")
