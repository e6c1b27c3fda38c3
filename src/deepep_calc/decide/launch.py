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
from dataclasses import dataclass
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
    native = native_model(s, r.models)
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


def shell_comments(notes: list[str], width: int = 78) -> list[str]:
    """Notes as shell comments wrapped to the card's width (a comment pastes harmlessly)."""
    import textwrap

    return [
        line
        for n in notes
        for line in textwrap.wrap(
            n, width, initial_indent="# ", subsequent_indent="#   ", break_on_hyphens=False
        )
    ]


@dataclass(frozen=True)
class _Start:
    """What every engine's command line is built from: the model it loads, the catalog's
    flags, the graph-mode flag and how many GPUs the server spans against one node's."""

    model: str
    args: list[str]
    graph: str
    ranks: int
    gpn: int


def _split_prose(texts: Any) -> tuple[list[str], list[str]]:
    """(flags, notes): the catalog's arguments as shell words, its prose as notes."""
    args: list[str] = []
    notes: list[str] = []
    for a in texts:
        if a.startswith("-"):
            args += shlex.split(a)
        else:
            notes.append(a)
    return args, notes


def _exports(env: dict[str, str]) -> tuple[list[str], list[str]]:
    """(export lines, notes): a value with whitespace is prose, never an export."""
    exports: list[str] = []
    notes: list[str] = []
    for key, value in env.items():
        if re.search(r"\s", value):
            notes.append(f"{key}: {value}")
        else:
            exports.append(f"export {key}={shlex.quote(value)}")
    return exports, notes


def _trtllm_config(spec: Any, fill: Any, weight_flags: list[str]) -> dict[str, str]:
    """TensorRT-LLM's LLM API options: the arm's config keys and any weight option as a key."""
    config = {k: fill(v) for k, v in spec.config.items()}
    for wf in weight_flags:
        key, sep, value = wf.partition(": ")
        if sep and not wf.startswith("-"):
            config[key] = value
    return config


def _trtllm_yaml(config: dict[str, str], graph: str) -> str:
    """The options file: one key per line, a value's prose as a YAML comment."""
    yaml = []
    for key, value in config.items():
        m = _VALUE_NOTE.match(value)
        if m:
            yaml.append(f"{key}: {_yaml_value(m.group(1))}  # {m.group(2)}")
        else:
            yaml.append(f"{key}: {_yaml_value(value)}")
    if ":" in graph:
        yaml.append(graph)
    return "\n".join(yaml) + "\n"


def _trtllm(st: _Start, config: dict[str, str]) -> tuple[list[str], dict[str, str], list[str]]:
    """(command, options file, notes) for trtllm-serve; the sizes that are flags leave the file."""
    notes: list[str] = []
    cli = ["trtllm-serve", _quoted(st.model), "--backend", "pytorch"]
    cli += ["--tp_size", config.pop("tp_size", str(st.ranks))]
    ep = config.pop("moe_ep_size", str(st.ranks))
    cli += ["--ep_size", ep]
    if "moe_tp_size" in config:
        notes.append(f"MoE tensor parallel {config.pop('moe_tp_size')} follows from tp_size / ep_size")
    if "note" in config:
        notes.append(config.pop("note"))
    config_file = {"name": TRTLLM_OPTIONS_FILE, "text": _trtllm_yaml(config, st.graph)}
    cli += ["--extra_llm_api_options", TRTLLM_OPTIONS_FILE]
    if st.ranks > st.gpn:
        notes.append(
            f"{st.ranks // st.gpn} nodes: start it once under Slurm or MPI with one rank per GPU, e.g. "
            f"srun -N {st.ranks // st.gpn} --ntasks-per-node {st.gpn} trtllm-llmapi-launch <this command>"
        )
    return cli, config_file, notes


def _vllm(st: _Start, arm: str) -> tuple[list[str], list[str]]:
    """(command, notes) for vllm serve: data parallel across nodes for the EP arms."""
    ranks, gpn = st.ranks, st.gpn
    notes: list[str] = []
    cli = ["vllm", "serve", _quoted(st.model), *st.args]
    if st.graph.startswith("-"):
        cli.append(st.graph)
    if ranks > gpn and arm in ("deepep", "allgather"):
        cli += ["--data-parallel-size-local", str(gpn), "--data-parallel-address", HEAD]
        cli += ["--data-parallel-rpc-port", "13345"]
        others = ranks // gpn - 1
        which = "node k = 1" if others == 1 else f"each node k = 1 to {others}"
        notes.append(
            f"run this on the first node; on {which} add --headless --data-parallel-start-rank $((k * {gpn}))"
        )
    elif ranks > gpn:
        notes.append(f"tensor parallel over {ranks // gpn} nodes runs on one Ray cluster spanning them")
    return cli, notes


def _sglang(st: _Start) -> tuple[list[str], list[str]]:
    """(command, notes) for sglang.launch_server: one process per node, node 0 the head."""
    notes: list[str] = []
    cli = ["python3 -m sglang.launch_server", "--model-path", _quoted(st.model), *st.args]
    if st.graph.startswith("-"):
        cli.append(st.graph)
    if st.ranks > st.gpn:
        cli += [
            "--nnodes",
            str(st.ranks // st.gpn),
            "--node-rank",
            "0",
            "--dist-init-addr",
            f'"{HEAD_VAR}:5000"',
        ]
        notes.append(f"run this on every node, with --node-rank 0..{st.ranks // st.gpn - 1}")
    return cli, notes


def _blocks(config_file: dict[str, str] | None, command: str, exports: list[str]) -> list[dict[str, str]]:
    """The blocks to paste, in order: the options file, the command, the environment."""
    blocks = []
    if config_file is not None:
        blocks.append(
            {"caption": f"save as {config_file['name']}", "lang": "yaml", "text": config_file["text"]}
        )
    blocks.append({"caption": "start the server", "lang": "sh", "text": command})
    if exports:
        blocks.append({"caption": "environment, before starting", "lang": "sh", "text": "\n".join(exports)})
    return blocks


def launch(result: Any, arm: str, spec: Any, fill: Any) -> dict[str, Any]:
    """Config file, command line, exports and notes for `arm` of this scenario."""
    r, s = result.resolved, result.scenario
    engine = r.engine
    args, notes = _split_prose(fill(x) for x in spec.args)
    graph = engine.graph_flag_graphs if s.cuda_graphs else engine.graph_flag_eager
    exports, env_notes = _exports(dict(arm_env(result, arm, spec, fill)))
    notes += env_notes
    ranks = r.gpus_per_node if arm == "replica" else r.world
    config_file = None
    model, weight_flags, weight_notes = weights(result)
    notes += weight_notes
    for wf in weight_flags:
        if wf.startswith("-"):
            args += shlex.split(wf)
    st = _Start(model, args, graph, ranks, r.gpus_per_node)
    if engine.name == "trtllm":
        cli, config_file, engine_notes = _trtllm(st, _trtllm_config(spec, fill, weight_flags))
    elif engine.name == "vllm":
        cli, engine_notes = _vllm(st, arm)
    else:  # sglang
        cli, engine_notes = _sglang(st)
    notes += engine_notes
    if arm == "replica" and s.nodes > 1:
        notes = [n for n in notes if "per node" not in n]  # the catalog's prose, said once with the count
        notes.append(f"run {s.nodes} such servers, one per node, behind a load balancer")
    if arm == "deepep" and r.transport.requires:
        notes.append(f"requires: {r.transport.requires}")
    command = "\n".join([*shell_comments(notes), _lines(cli)])
    return {
        "config_file": config_file,
        "command": command,
        "exports": "\n".join(exports),
        "notes": notes,
        "blocks": _blocks(config_file, command, exports),
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
