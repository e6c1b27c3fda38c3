"""decide/disagg_launch.py: the launch lines of a disaggregated deployment.

Direct: an option whose JSON value must reach the shell quoted, a command one option per line,
one server per node for a side of replicas (else one server spanning the side), the router's
command and config file listing every server, and no blocks for an aggregated scenario. Then,
for each engine, that both servers and the router have a block (issue 28).
"""

from __future__ import annotations

import shlex

import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.decide.disagg_launch import _continued, _kept, launch_blocks

REPLICA_DECODE = dict(model="deepseek-v3", prefill_nodes=1, decode_nodes=3, decode_arm="replica")


def test_a_json_value_is_quoted_twice_so_the_shell_sees_it_quoted_once() -> None:
    """`launch` splits each argument with shlex: a JSON object given once quoted would lose its
    quotes there. Quoted twice, one shlex split leaves the value quoted for the shell."""
    arg = """--kv-transfer-config '{"kv_connector": "NixlConnector"}'"""
    kept = _kept(arg)
    option, value = shlex.split(kept)
    assert option == "--kv-transfer-config" and shlex.split(value) == ['{"kv_connector": "NixlConnector"}']
    assert _kept("--port 8000") == "--port 8000"  # nothing to protect
    assert _kept("--flag") == "--flag"


def test_a_command_reads_one_option_per_line() -> None:
    """`python3 -m module` stays whole; an option's values follow it; a negative number is a
    value, not an option."""
    parts = ["python3", "-m", "sglang.launch_server", "--tp", "8", "--x", "-1", "--flag"]
    assert _continued(parts) == "python3 -m sglang.launch_server \\\n  --tp 8 \\\n  --x -1 \\\n  --flag"
    assert _continued(["vllm", "serve", "m", "--port", "8100"]) == "vllm serve m \\\n  --port 8100"


def test_an_aggregated_scenario_has_no_disaggregated_launch() -> None:
    assert launch_blocks(evaluate(Scenario(), explain=False)) is None


def test_a_side_of_replicas_runs_one_server_per_node_and_the_router_lists_each() -> None:
    """vLLM, 1 prefill node and 3 decode nodes of single-node replicas: one prefill server and
    three decode servers, each an address the user must set (the shell fails loudly if unset);
    the router takes the ports of the sides' own `--port` (8100 and 8200)."""
    block = launch_blocks(evaluate(Scenario(**REPLICA_DECODE, engine="vllm"), explain=False))
    assert (block["layout"], block["kv_transport"], block["connector"]) == (
        "1P3D",
        "nixl-libfabric",
        "NixlConnector",
    )
    captions = [b["caption"] for b in block["blocks"]]
    assert (
        "decode server: 3 nodes, single-node replicas (3 servers, one per node): start the server" in captions
    )
    assert captions[-1] == "router / proxy: one entry point for clients"
    command = block["router"]["command"]
    decoders = " ".join(f'"${{DECODE_{i}:?address of decode server {i}}}"' for i in (1, 2, 3))
    assert f"--decoder-hosts {decoders}" in command
    assert '--prefiller-hosts "${PREFILL_1:?address of prefill server 1}"' in command
    assert "--prefiller-ports 8100" in command and "--decoder-ports 8200" in command
    assert block["router"]["config_file"] is None  # vLLM's proxy takes no config file
    assert "HEAD_IP in each server's block is the first node of that side" not in block["router"]["notes"]


def test_a_router_that_takes_a_config_file_lists_every_server() -> None:
    """TensorRT-LLM's disaggregated server reads the servers from a YAML file: 1 context server
    and 3 generation servers, at port 8000 each."""
    block = launch_blocks(evaluate(Scenario(**REPLICA_DECODE, engine="trtllm"), explain=False))
    config = block["router"]["config_file"]
    assert config["name"] == "disagg_config.yaml"
    text = config["text"]
    assert (
        "context_servers:\n  num_instances: 1\n" in text
        and "generation_servers:\n  num_instances: 3\n" in text
    )
    assert '"${DECODE_3:?address of decode server 3}:8000"' in text
    assert [b["caption"] for b in block["blocks"]][-2:] == [
        "router: save as disagg_config.yaml",
        "router / proxy: one entry point for clients",
    ]


def test_a_side_spanning_its_nodes_runs_one_server_and_says_where_its_head_is() -> None:
    """DeepEP decode over 2 nodes is one server across them: its block's HEAD_IP is that side's
    first node, and the router's notes say so."""
    block = launch_blocks(
        evaluate(
            Scenario(
                model="deepseek-v3", prefill_nodes=1, decode_nodes=2, decode_arm="deepep", engine="vllm"
            ),
            explain=False,
        )
    )
    assert '"${DECODE_1:?address of decode server 1}"' in block["router"]["command"]
    assert "DECODE_2" not in block["router"]["command"]
    assert "HEAD_IP in each server's block is the first node of that side" in block["router"]["notes"]


# Every engine (issue 28) -------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_both_servers_and_the_router_have_a_launch_block(engine):
    flags = evaluate(
        Scenario(model="deepseek-v3", prefill_nodes=1, decode_nodes=3, engine=engine)
    ).verdict.flags
    block = flags["disaggregated"]
    captions = [b["caption"] for b in block["blocks"]]
    assert any(c.startswith("prefill server") for c in captions)
    assert any(c.startswith("decode server") for c in captions)
    assert any(c.startswith("router") for c in captions)
    text = "\n".join(b["text"] for b in block["blocks"])
    if engine == "vllm":
        assert "NixlConnector" in text and "kv_producer" in text and "kv_consumer" in text
        assert "--kv-transfer-config '{" in text  # the JSON reaches the shell quoted
    if engine == "sglang":
        assert "--disaggregation-mode prefill" in text and "--disaggregation-mode decode" in text
        assert "mini_lb" in text
    if engine == "trtllm":
        assert "cache_transceiver_config: {backend: NIXL}" in text and "trtllm-serve disaggregated" in text
    assert "# unsure:" in text  # what the facts do not pin is said, not guessed
    if block["kv_transport"].startswith("nixl"):
        assert "FI_PROVIDER=efa" in text  # the EFA environment of NIXL's LIBFABRIC path
