"""The launch lines of a disaggregated deployment: both servers' command lines (each side's
arm, plus the engine's KV connector flags) and the router / proxy that sends each request to a
prefill server and then to a decode server, with the EFA environment; what the facts do not
pin is said in comments. The figures come from `estimate/disagg.py`.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..catalog.engines import ArmFlags
from ..catalog.models import ModelSpec
from ..estimate.disagg import DisaggResult
from ..question.fields import DISAGG_FIELDS
from ..question.scenario import Resolved, Scenario
from .launch import launch, shell_comments
from .verdict import ARM_LABELS


@dataclass(frozen=True)
class SideView:
    """One side of a disaggregated deployment, as `engine_flags` and `launch` read a result:
    they need its question (resolved and as asked) and its model, not its figures."""

    resolved: Resolved
    scenario: Scenario
    model: ModelSpec


def _side_result(result: Any, d: DisaggResult, role: str) -> SideView:
    """One side's question: its nodes, transport and graph mode, no disaggregation of its own."""
    side = d.spec.side(role)
    r = result.resolved
    s = result.scenario.copy(
        nodes=side.nodes,
        transport=side.transport.name,
        cuda_graphs=side.cuda_graphs,
        **dict.fromkeys(DISAGG_FIELDS),
    )
    rs = replace(r, scenario=s, transport=side.transport, disagg=None, disaggregated=role == "decode")
    return SideView(rs, s, r.model)


def _kept(arg: str) -> str:
    """An option whose value must reach the shell quoted (a JSON object): `launch` splits each
    argument with shlex, so the value is quoted twice to come out quoted once."""
    parts = shlex.split(arg)
    if len(parts) != 2 or shlex.quote(parts[1]) == parts[1]:
        return arg
    return f"{parts[0]} {shlex.quote(shlex.quote(parts[1]))}"


def _servers(d: DisaggResult, role: str) -> int:
    """Servers one side runs: one per node for replicas, else one spanning its nodes."""
    side = getattr(d, role)
    return side.nodes if str(side.arm) == "replica" else 1


def _continued(parts: list[str]) -> str:
    """A command with one option (and its values) per line, backslash-continued."""
    head = 3 if len(parts) > 2 and parts[1] == "-m" else 1  # `python3 -m module` stays whole
    out = [" ".join(parts[:head])]
    for part in parts[head:]:
        if part.startswith("-") and len(part) > 1 and not part[1:2].isdigit():
            out.append(part)
        else:
            out[-1] += f" {part}"
    return " \\\n  ".join(out)


def _filler(d: DisaggResult) -> Callable[[str], str]:
    """The catalog's `{connector}` / `{backend}` placeholders filled for this KV transport."""
    connector = d.spec.engine_kv.connectors[d.kv.name]

    def fill(text: str) -> str:
        return text.replace("{connector}", connector).replace("{backend}", d.kv.backend)

    return fill


def _kv_env(d: DisaggResult) -> dict[str, str]:
    """The transfer library's environment, for an RDMA KV transport (TCP needs none)."""
    ekv = d.spec.engine_kv
    return dict(ekv.env_nixl if d.kv.library == "nixl" else ekv.env_mooncake) if d.kv.rdma else {}


def _unquote_flow_maps(block: dict[str, Any], extra_config: dict[str, str]) -> None:
    """A flow mapping (a JSON object) the engine's YAML writer would quote, unquoted in place."""
    for b in block["blocks"]:
        if b["lang"] == "yaml":
            for value in extra_config.values():
                if value.startswith("{"):
                    b["text"] = b["text"].replace(f'"{value}"', value)


def _side_caption(d: DisaggResult, role: str, arm: str, servers: int) -> str:
    """`prefill server: 2 nodes, DeepEP (2 servers, one per node)`: the head of a side's blocks."""
    side_nodes = d.spec.side(role).nodes
    caption = f"{role} server: {side_nodes} node{'s' if side_nodes > 1 else ''}, {ARM_LABELS.get(arm, arm)}"
    if servers > 1:
        caption += f" ({servers} servers, one per node)"
    return caption


def _side_launch(
    result: Any, d: DisaggResult, role: str
) -> tuple[list[dict[str, str]], dict[str, Any], list[str]]:
    """One side's captioned blocks, its flags and launch, and the addresses of its servers:
    its arm's engine flags with the KV connector's arguments, config and environment added."""
    from .explain import engine_flags

    ekv, fill = d.spec.engine_kv, _filler(d)
    side_res = _side_result(result, d, role)
    arm = str(getattr(d, role).arm)
    base = engine_flags(side_res, arm)
    extra_args = [_kept(fill(a)) for a in (ekv.prefill_args if role == "prefill" else ekv.decode_args)]
    extra_config = {
        k: fill(v) for k, v in (ekv.prefill_config if role == "prefill" else ekv.decode_config).items()
    }
    spec = ArmFlags(
        env={**base["env"], **_kv_env(d)},
        config={**base["config"], **extra_config},
        args=[*base["args"], *extra_args],
    )
    block = launch(side_res, arm, spec, lambda x: x)
    _unquote_flow_maps(block, extra_config)
    servers = _servers(d, role)
    var = role.upper()
    hosts = [f"${{{var}_{i + 1}:?address of {role} server {i + 1}}}" for i in range(servers)]
    caption = _side_caption(d, role, arm, servers)
    blocks = [{**b, "caption": f"{caption}: {b['caption']}"} for b in block["blocks"]]
    side = {**base, "args": spec.args, "config": spec.config, "env": spec.env, "launch": block}
    return blocks, side, hosts


def _router_notes(result: Any, d: DisaggResult) -> list[str]:
    """What the router's block says in comments: what the facts do not pin, and the KV path."""
    ekv = d.spec.engine_kv
    notes = [f"unsure: {u}" for u in ekv.unsure]
    if any(d.spec.side(role).nodes > _servers(d, role) for role in ("prefill", "decode")):
        notes.append("HEAD_IP in each server's block is the first node of that side")
    connector = ekv.connectors[d.kv.name]
    notes.append(f"{result.resolved.engine.name}: KV over {d.kv.name} ({d.kv.label}); connector {connector}")
    if d.kv.warning:
        notes.append(d.kv.warning)
    return notes


def _router_config(ekv: Any, hosts: dict[str, list[str]]) -> dict[str, str] | None:
    """The router's config file with both sides' servers, where the engine's router takes one."""
    if not ekv.router_config:
        return None
    text = (
        ekv.router_config.replace("{prefill_servers}", str(len(hosts["prefill"])))
        .replace("{decode_servers}", str(len(hosts["decode"])))
        .replace("{prefill_list}", ", ".join(f'"{h}:8000"' for h in hosts["prefill"]))
        .replace("{decode_list}", ", ".join(f'"{h}:8000"' for h in hosts["decode"]))
    )
    return {"name": "disagg_config.yaml", "text": text}


def launch_blocks(result: Any) -> dict[str, Any] | None:
    """Both servers' launch lines and the router's, for a disaggregated scenario (else None)."""
    d: DisaggResult | None = result.disaggregated
    if d is None:
        return None
    ekv = d.spec.engine_kv
    blocks: list[dict[str, str]] = []
    sides: dict[str, Any] = {}
    hosts: dict[str, list[str]] = {}
    for role in ("prefill", "decode"):
        side_blocks, sides[role], hosts[role] = _side_launch(result, d, role)
        blocks += side_blocks
    notes = _router_notes(result, d)
    router_text = "\n".join([*shell_comments(notes), _router(ekv, hosts)])
    router_config = _router_config(ekv, hosts)
    if router_config is not None:
        blocks.append(
            {"caption": "router: save as disagg_config.yaml", "lang": "yaml", "text": router_config["text"]}
        )
    blocks.append(
        {"caption": "router / proxy: one entry point for clients", "lang": "sh", "text": router_text}
    )
    return {
        "layout": d.label,
        "kv_transport": d.kv.name,
        "connector": ekv.connectors[d.kv.name],
        "prefill": sides["prefill"],
        "decode": sides["decode"],
        "router": {"command": router_text, "config_file": router_config, "notes": notes},
        "blocks": blocks,
    }


def _router(ekv: Any, hosts: dict[str, list[str]]) -> str:
    ports = {"prefill": ekv.prefill_args, "decode": ekv.decode_args}
    port_of = {}
    for role, args in ports.items():
        port = next((a.split()[1] for a in args if a.startswith("--port ")), "8000")
        port_of[role] = port
    text = (
        ekv.router.replace("{prefill_hosts}", " ".join(f'"{h}"' for h in hosts["prefill"]))
        .replace("{decode_hosts}", " ".join(f'"{h}"' for h in hosts["decode"]))
        .replace("{prefill_urls}", " ".join(f'"http://{h}:{port_of["prefill"]}"' for h in hosts["prefill"]))
        .replace("{decode_urls}", " ".join(f'"http://{h}:{port_of["decode"]}"' for h in hosts["decode"]))
    )
    return _continued(shlex.split(text, posix=False))
