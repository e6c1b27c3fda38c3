"""decide/launch.py, the command's configuration: the launch command is generated from the
chosen configuration and nothing else (issue #26 item 1): checkpoint (the dtype's own
repository, the engine's quantisation flag, or a folder the user fills), TP / EP / DP sizes,
graph mode, the transport's environment and the node count.

Every `evaluate` arm over all engines x weight dtypes (x nodes x graph mode x alternative), and
every point of a few plans, has its printed command read back and checked against the
configuration it was made from. A BF16 repository never stands for an FP8 deployment.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest

from cli_runner import run_cli
from deepep_calc import Scenario
from deepep_calc.base.errors import CalcError
from deepep_calc.base.vocabulary import exchange_of
from deepep_calc.catalog.models import DTYPES
from deepep_calc.decide.explain import engine_flags
from deepep_calc.estimate.compute import compute
from deepep_calc.io.hf_config import resolve_model
from deepep_calc.question.scenario import resolve
from deepep_calc.whatif.plan.search import plan_request, run_plan

from .shared import command_tokens as _tokens

ENGINES = ("trtllm", "vllm", "sglang")
ARMS = ("deepep", "allgather", "tp", "replica")


def _after(tokens: list[str], flag: str) -> str | None:
    return tokens[tokens.index(flag) + 1] if flag in tokens else None


def expected_weights(model: str, dtype: str | None, engine: str) -> tuple[str, str | None]:
    """(what the command must load, the flag that must come with it) for a configuration."""
    native = resolve_model(model)
    stored = native.expert_dtype or native.weight_dtype
    if dtype is None or (dtype == native.weight_dtype and stored == dtype):
        return native.hf_id, None
    if dtype in native.checkpoints:
        return native.checkpoints[dtype], None
    widths = (("bf16", "bfloat16"), ("fp16", "float16"), ("fp32", "float32"))
    flag = {
        ("vllm", "fp8"): "--quantization fp8",
        ("sglang", "fp8"): "--quantization fp8",
        **{(e, d): f"--dtype {w}" for e in ("vllm", "sglang") for d, w in widths},
        **{("trtllm", d): f"dtype: {w}" for d, w in widths},
    }.get((engine, dtype))
    if flag and native.weight_dtype in ("bf16", "fp16") and stored in ("bf16", "fp16"):
        return native.hf_id, flag
    return f"${{MODEL_{dtype.upper()}:?", None


def check_launch(flags: dict[str, Any], config: dict[str, Any], arm: str) -> None:
    """The printed launch of `arm` says exactly what `config` chose."""
    r = resolve(Scenario(**config))
    if arm == "replica":  # each replica launches its one-node layout's command on its own node
        inner = exchange_of(compute(r).arms["replica"].layout)
        if inner != "allgather":
            arm, config = inner, {**config, "nodes": 1}
    launch = flags["launch"]
    command, exports = launch["command"], launch["exports"]
    tokens = _tokens(command)
    yaml = (launch["config_file"] or {}).get("text", "")
    engine = config["engine"]
    gpn, nodes = r.gpus_per_node, config["nodes"]
    world = gpn * nodes
    ranks = gpn if arm == "replica" else world
    # the checkpoint (or the engine's flag) of the weight dtype chosen, nothing else
    want, flag = expected_weights(config["model"], config.get("weight_dtype"), engine)
    model_arg = {"trtllm": tokens[1], "vllm": tokens[2], "sglang": _after(tokens, "--model-path")}[engine]
    assert model_arg is not None
    if want.startswith("${"):
        assert model_arg.startswith(want), (model_arg, want)
    else:
        assert model_arg == want, (model_arg, want, config)
    native = resolve_model(config["model"])
    if model_arg == native.hf_id and want != native.hf_id:
        pytest.fail(f"{native.hf_id} printed for a {config.get('weight_dtype')} deployment")
    if flag is not None:
        if flag.startswith("-"):
            assert flag in " ".join(tokens), (flag, command)
        else:
            assert flag in yaml, (flag, yaml)
    else:
        assert "--quantization" not in tokens
    # parallel sizes
    if engine == "trtllm":
        assert _after(tokens, "--tp_size") == str(ranks)
        ep = "1" if arm == "tp" else str(ranks)
        assert _after(tokens, "--ep_size") == ep
        attention_dp = "false" if arm == "tp" else "true"
        assert f"enable_attention_dp: {attention_dp}" in yaml
    elif engine == "vllm":
        if arm == "tp":
            assert _after(tokens, "--tensor-parallel-size") == str(world)
        else:
            assert _after(tokens, "--data-parallel-size") == str(ranks)
            assert "--enable-expert-parallel" in tokens
    else:
        assert _after(tokens, "--tp") == str(ranks)
        if arm != "tp":
            assert _after(tokens, "--dp") == str(ranks)
        if arm in ("deepep", "allgather"):
            assert _after(tokens, "--ep") == str(ranks)
    # graph mode
    graphs = config["cuda_graphs"]
    if engine == "trtllm":
        assert f"use_cuda_graph: {'true' if graphs else 'false'}" in yaml
    elif engine == "vllm":
        assert ("--enforce-eager" in tokens) is (not graphs)
    else:
        assert ("--disable-cuda-graph" in tokens) is (not graphs)
    # the transport's environment: a cross-node DeepEP arm, and only that
    transport = r.transport
    cross = arm == "deepep" and nodes > 1
    for key, value in transport.env.items():
        if re.search(r"\s", value):
            continue  # prose becomes a comment, not an export
        assert (f"export {key}=" in exports) is cross, (key, exports)
    if cross and transport.comms_sensitive:
        assert f"export EP_NUM_COMMS={config['comms']}" in exports
        assert f"export EP_EFA_MAX_QPS={config['max_qps']}" in exports
    if arm == "deepep" and engine in ("vllm", "sglang"):
        backend = r.engine.deepep_backend.get(transport.library if cross else "deepep-v2")
        if backend is not None and cross:
            flag_name = "--all2all-backend" if engine == "vllm" else "--moe-a2a-backend"
            assert _after(tokens, flag_name) == backend
    # the node count
    if ranks > gpn:
        if engine == "sglang":
            assert _after(tokens, "--nnodes") == str(nodes)
        elif engine == "vllm" and arm != "tp":
            assert _after(tokens, "--data-parallel-size-local") == str(gpn)
        elif engine == "trtllm":
            assert f"srun -N {nodes}" in " ".join(command.replace("#", " ").split())
    else:
        assert "--nnodes" not in tokens and "--data-parallel-size-local" not in tokens
    if arm == "replica" and nodes > 1:
        assert f"run {nodes} such servers" in command


CASES = [
    (model, engine, dtype)
    for model in ("qwen3-235b-a22b", "deepseek-v2-lite", "qwen3-30b-a3b-fp8", "deepseek-r1", "gpt-oss-120b")
    for engine in ENGINES
    for dtype in (None, *DTYPES)
]


@pytest.mark.parametrize(("model", "engine", "dtype"), CASES, ids=lambda v: str(v))
def test_every_evaluate_arm_launches_its_own_configuration(
    model: str, engine: str, dtype: str | None
) -> None:
    checked = 0
    for nodes, graphs, alternative in itertools.product((1, 2), (False, True), ("allgather", "tp")):
        config = {
            "model": model, "engine": engine, "weight_dtype": dtype, "nodes": nodes,
            "cuda_graphs": graphs, "alternative": alternative, "instance": "p5en",
            "transport": "efa-gda", "comms": 4, "max_qps": 6,
        }  # fmt: skip
        try:
            result = compute(resolve(Scenario(**config)))
        except CalcError:
            continue  # a configuration that cannot be asked (experts that do not split)
        for arm in result.arms:
            check_launch(engine_flags(result, arm), config, arm)
            checked += 1
    assert checked


@pytest.mark.parametrize(
    "fields",
    [
        {"model": "qwen3-235b-a22b", "concurrency": 64, "isl": 1024, "osl": 256},
        {"model": "deepseek-v2-lite", "concurrency": 64, "max_nodes": 4},
        {"model": "qwen3-30b-a3b-fp8", "concurrency": 16, "measured_only": True},
    ],
    ids=["qwen3-235b", "v2-lite", "measured-only"],
)
def test_every_plan_point_launches_its_own_configuration(fields: dict[str, Any]) -> None:
    plan = run_plan(plan_request(**fields))
    points = [p for p in [plan.best, *plan.frontier, *plan.frontier_per_node, *plan.nearest_misses] if p]
    assert points
    for p in points:
        if p.layout:  # an xPyD split: both servers and the router, in their own block
            assert p.flags["launch"] is None and p.flags["disaggregated"], p.layout
            continue
        check_launch(p.flags, p.config, p.arm)


@pytest.mark.slow
def test_the_issue_cases(capsys) -> None:
    """`plan --model qwen3-235b-a22b` choosing FP8 printed the BF16 repository with no flag."""
    code, out, _ = run_cli(capsys, "plan", "--model", "qwen3-235b-a22b", "--concurrency", "64", "--json")
    assert code == 0
    best = json.loads(out)["best"]
    assert best["config"]["weight_dtype"] == "fp8"
    assert "Qwen/Qwen3-235B-A22B-FP8" in best["flags"]["launch"]["command"]
    code, out, _ = run_cli(
        capsys, "evaluate", "--model", "deepseek-v2-lite", "--weight-dtype", "fp8", "--engine", "vllm",
        "--nodes", "1", "--json",
    )  # fmt: skip
    command = json.loads(out)["verdict"]["flags"]["launch"]["command"]
    assert "--quantization fp8" in command and "deepseek-ai/DeepSeek-V2-Lite" in command
    code, out, _ = run_cli(capsys, "plan", "--help")
    assert "weight dtypes" in " ".join(out.split())
