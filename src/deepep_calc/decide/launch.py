"""The "Run it" block: an engine command line, its config file and `export` lines, ready to paste.

The engine catalog (catalog/data/engines.toml) states, per engine and arm, the arguments,
config keys and environment that select the MoE exchange, with some prose mixed in ("one
server per node, load-balanced", "DeepEP (picked only when ...)"). This module turns that into
three separate texts a person can paste: a config file (TensorRT-LLM's extra LLM API options),
a command line, and `export` lines. Prose never lands inside a command: it becomes a shell or
YAML comment, which pastes harmlessly. Multi-node launches name the extra flags each engine
needs and leave the first node's address to an environment variable that fails loudly if unset.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

TRTLLM_OPTIONS_FILE = "extra-llm-api-config.yml"
HEAD_VAR = "${HEAD_IP:?set HEAD_IP to the address of the first node}"
HEAD = f'"{HEAD_VAR}"'
_VALUE_NOTE = re.compile(r"^(\S+)\s+\((.+)\)$")  # "DeepEP (picked only when ...)"
_TRTLLM_CLI = {"tp_size": "--tp_size", "moe_ep_size": "--ep_size"}  # config keys that are CLI flags


def model_reference(result: Any) -> str:
    """What the engine is pointed at: the HF id, else the folder of the user's config.json."""
    m, s = result.model, result.scenario
    if m.hf_id:
        return m.hf_id
    text = s.model.strip()
    if text.lower().endswith(".json"):
        return str(Path(text).parent)
    return text if "/" in text or "\\" in text else m.name


SIXTEEN_BIT = ("bf16", "fp16")


def weights(result: Any) -> tuple[str, list[str], list[str]]:
    """What the engine loads for the weight dtype asked, from the configuration alone:
    (model reference, flags, notes).

    - the checkpoint's own dtype (no --weight-dtype, or the one it is stored in): its reference;
    - a dtype the model lists a published checkpoint for (models.toml `checkpoints`): that one;
    - a 16-bit checkpoint and an engine flag for the dtype (engines.toml [engine.weights]):
      the checkpoint and the flag (vLLM / SGLang `--quantization fp8` quantise as they load);
    - otherwise a folder the user fills: a variable that fails loudly if unset, and a note
      saying what to put there. A BF16 reference never stands for an FP8 deployment.
    """
    from ..question.scenario import native_model

    s, r = result.scenario, result.resolved
    ref = model_reference(result)
    if s.weight_dtype is None:
        return ref, [], []
    want = s.weight_dtype.strip().lower()
    native = native_model(s)
    stored = native.expert_dtype or native.weight_dtype
    if want == native.weight_dtype and stored == want:
        return ref, [], []
    listed = native.checkpoints.get(want)
    if listed:
        return listed, [], [f"{want} weights: the published {want} checkpoint ({native.checkpoints_source})"]
    flag = r.engine.weights.flags.get(want)
    if flag and native.weight_dtype in SIXTEEN_BIT and stored in SIXTEEN_BIT:
        how = "quantises" if want not in (*SIXTEEN_BIT, "fp32") else "casts"
        return (
            ref,
            [flag],
            [
                f"{want} weights: {r.engine.name} {how} the {native.weight_dtype} checkpoint to {want} as it "
                f"loads it ({flag}; assumed)"
            ],
        )
    var = f"MODEL_{want.upper()}"
    folder = f'"${{{var}:?set {var} to the folder of a checkpoint of {ref} in {want}}}"'
    have = f"{native.weight_dtype}" + (f" with {native.expert_dtype} experts" if native.expert_dtype else "")
    return (
        folder,
        [],
        [
            f"{want} weights: no checkpoint of {ref} in {want} is listed, and {r.engine.name} cannot make "
            f"one from its {have} weights as it loads them: prepare one (quantise or convert the weights) "
            f"and set {var} to its folder"
        ],
    )


def _yaml_value(text: str) -> str:
    if text in ("true", "false") or re.fullmatch(r"-?\d+(\.\d+)?", text):
        return text
    return text if re.fullmatch(r"[A-Za-z0-9_.\-]+", text) else '"' + text.replace('"', '\\"') + '"'


def _quoted(model: str) -> str:
    """The model argument for the shell: a `"${VAR:?...}"` placeholder is already quoted."""
    return model if model.startswith('"${') else shlex.quote(model)


def _lines(command: list[str], indent: str = "  ") -> str:
    """A command split one option per line with backslash continuations (80 columns): the
    program and its positional arguments first, then each option with its values."""
    out = [command[0]]
    for part in command[1:]:
        if part.startswith("-") and len(part) > 1 and not part[1:2].isdigit():
            out.append(part)
        else:
            out[-1] += f" {part}"
    return (" \\\n" + indent).join(out)


def _comments(notes: list[str], width: int = 78) -> list[str]:
    """Notes as shell comments wrapped to the card's width (a comment pastes harmlessly)."""
    import textwrap

    return [
        line
        for n in notes
        for line in textwrap.wrap(
            n, width, initial_indent="# ", subsequent_indent="#   ", break_on_hyphens=False
        )
    ]


def launch(result: Any, arm: str, spec: Any, fill: Any) -> dict[str, Any]:
    """Config file, command line, exports and notes for `arm` of this scenario."""
    r, s = result.resolved, result.scenario
    engine = r.engine
    notes: list[str] = []
    args: list[str] = []
    for a in (fill(x) for x in spec.args):
        if a.startswith("-"):
            args += shlex.split(a)
        else:
            notes.append(a)
    graph = engine.graph_flag_graphs if s.cuda_graphs else engine.graph_flag_eager
    exports: list[str] = []
    env = dict(arm_env(result, arm, spec, fill))
    for key, value in env.items():
        if re.search(r"\s", value):
            notes.append(f"{key}: {value}")
        else:
            exports.append(f"export {key}={shlex.quote(value)}")
    world = r.world
    gpn = r.gpus_per_node
    ranks = gpn if arm == "replica" else world
    config_file = None
    model, weight_flags, weight_notes = weights(result)
    notes += weight_notes
    for wf in weight_flags:
        if wf.startswith("-"):
            args += shlex.split(wf)
    if engine.name == "trtllm":
        config = {k: fill(v) for k, v in spec.config.items()}
        for wf in weight_flags:
            key, sep, value = wf.partition(": ")
            if sep and not wf.startswith("-"):
                config[key] = value
        cli = ["trtllm-serve", _quoted(model), "--backend", "pytorch"]
        cli += ["--tp_size", config.pop("tp_size", str(ranks))]
        ep = config.pop("moe_ep_size", str(ranks))
        cli += ["--ep_size", ep]
        if "moe_tp_size" in config:
            notes.append(f"MoE tensor parallel {config.pop('moe_tp_size')} follows from tp_size / ep_size")
        if "note" in config:
            notes.append(config.pop("note"))
        yaml = []
        for key, value in config.items():
            m = _VALUE_NOTE.match(value)
            if m:
                yaml.append(f"{key}: {_yaml_value(m.group(1))}  # {m.group(2)}")
            else:
                yaml.append(f"{key}: {_yaml_value(value)}")
        if ":" in graph:
            yaml.append(graph)
        config_file = {"name": TRTLLM_OPTIONS_FILE, "text": "\n".join(yaml) + "\n"}
        cli += ["--extra_llm_api_options", TRTLLM_OPTIONS_FILE]
        if ranks > gpn:
            notes.append(
                f"{ranks // gpn} nodes: start it once under Slurm or MPI with one rank per GPU, e.g. "
                f"srun -N {ranks // gpn} --ntasks-per-node {gpn} trtllm-llmapi-launch <this command>"
            )
    elif engine.name == "vllm":
        cli = ["vllm", "serve", _quoted(model), *args]
        if graph.startswith("-"):
            cli.append(graph)
        if ranks > gpn and arm in ("deepep", "allgather"):
            cli += ["--data-parallel-size-local", str(gpn), "--data-parallel-address", HEAD]
            cli += ["--data-parallel-rpc-port", "13345"]
            others = ranks // gpn - 1
            which = "node k = 1" if others == 1 else f"each node k = 1 to {others}"
            notes.append(
                f"run this on the first node; on {which} add --headless "
                f"--data-parallel-start-rank $((k * {gpn}))"
            )
        elif ranks > gpn:
            notes.append(f"tensor parallel over {ranks // gpn} nodes runs on one Ray cluster spanning them")
    else:  # sglang
        cli = ["python3 -m sglang.launch_server", "--model-path", _quoted(model), *args]
        if graph.startswith("-"):
            cli.append(graph)
        if ranks > gpn:
            cli += [
                "--nnodes",
                str(ranks // gpn),
                "--node-rank",
                "0",
                "--dist-init-addr",
                f'"{HEAD_VAR}:5000"',
            ]
            notes.append(f"run this on every node, with --node-rank 0..{ranks // gpn - 1}")
    if arm == "replica" and s.nodes > 1:
        notes = [n for n in notes if "per node" not in n]  # the catalog's prose, said once with the count
        notes.append(f"run {s.nodes} such servers, one per node, behind a load balancer")
    if arm == "deepep" and r.transport.requires:
        notes.append(f"requires: {r.transport.requires}")
    command = "\n".join([*_comments(notes), _lines(cli)])
    blocks = []
    if config_file is not None:
        blocks.append(
            {"caption": f"save as {config_file['name']}", "lang": "yaml", "text": config_file["text"]}
        )
    blocks.append({"caption": "start the server", "lang": "sh", "text": command})
    if exports:
        blocks.append({"caption": "environment, before starting", "lang": "sh", "text": "\n".join(exports)})
    return {
        "config_file": config_file,
        "command": command,
        "exports": "\n".join(exports),
        "notes": notes,
        "blocks": blocks,
    }


def arm_env(result: Any, arm: str, spec: Any, fill: Any) -> dict[str, str]:
    """The arm's environment: the engine's, plus the transport's for a cross-node DeepEP arm."""
    r, s = result.resolved, result.scenario
    env = {k: fill(v) for k, v in spec.env.items()}
    if arm == "deepep" and s.nodes > 1:
        env.update(r.transport.env)
        if r.transport.comms_sensitive:  # the configuration's values; the advisories say what to raise
            env["EP_NUM_COMMS"] = str(s.comms)
            env["EP_EFA_MAX_QPS"] = str(s.max_qps)
    return env


def run_blocks(flags: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(caption, fence language, text) of each block to paste, in order; every face uses these."""
    block = flags.get("launch")
    if not block:
        return []
    return [(b["caption"], b["lang"], b["text"].rstrip("\n")) for b in block["blocks"]]
