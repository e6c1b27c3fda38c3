"""Colours shared by the web page, the mechanism page, the HTML report and every chart.

One table so the code stays the same everywhere: InfiniBand / GPU-initiated paths are violet,
EFA host-proxied paths orange, non-DeepEP arms neutral. Verdict colours avoid both transport hues
so a lit card is never mistaken for a transport; each verdict also carries its symbol.
"""

from __future__ import annotations

from typing import Any

GPU_INITIATED = "#6f42c1"  # InfiniBand IBGDA, EFA-GDA, CQ-poll: the kernel posts its own work
HOST_PROXIED = "#d9480f"  # EFA through a CPU proxy thread
DENSE = "#495057"  # allgather / tensor parallel
REPLICA = "#868e96"  # independent single-node replicas
MEASURED_MARK = "#111111"

VERDICT = {"dense": "#0b7a5c", "capacity": "#1864ab", "deepep": "#b7791f"}
VERDICT_TEXT = {"dense": "#ffffff", "capacity": "#ffffff", "deepep": "#1a1a1a"}

TAG = {"measured": "#2b8a3e", "derived": "#1971c2", "assumed": "#a16207"}

BREAKDOWN = {
    "engine": "#adb5bd",
    "hbm": "#74c0fc",
    "compute": "#38d9a9",
    "kernels": "#ffd8a8",
    "moe_comm": "#5c7cfa",
    "prefill": "#e599f7",
    "proxy": HOST_PROXIED,
}
BOUND = {  # the parts of a step along the path that sets it (physics/bounds.py)
    "launches": "#868e96",
    "host": "#ced4da",
    "hbm": "#74c0fc",
    "compute": "#38d9a9",
    "kernels": "#ffd8a8",
    "exchange_latency": "#5c7cfa",
    "messages": "#9775fa",
    "wire": "#3bc9db",
    "nvlink": "#99e9f2",
    "collective_latency": "#748ffc",
    "arm_term": "#b197fc",
    "prefill": "#e599f7",
    "proxy": HOST_PROXIED,
}
# where a disaggregated request's time goes (the mechanism page's timeline)
REQUEST_TIME = {
    "queue": "#ced4da",
    "prefill": "#e599f7",
    "transfer": "#f59f00",
    "first_decode": "#74c0fc",
    "decode": "#5c7cfa",
}
MEMORY = {"weights": "#495057", "kv_cache": "#74c0fc", "buffers": "#f59f00", "reserve": "#ced4da"}


def deepep_colour(host_proxied: bool) -> str:
    """The DeepEP arm takes the colour of its transport's initiation path."""
    return HOST_PROXIED if host_proxied else GPU_INITIATED


def arm_colour(arm: str, host_proxied: bool) -> str:
    if arm == "deepep":
        return deepep_colour(host_proxied)
    return REPLICA if arm == "replica" else DENSE


def css_variables() -> dict[str, Any]:
    """Custom properties the stylesheets read, so CSS and charts cannot drift apart."""
    out = {
        "--gpu-initiated": GPU_INITIATED,
        "--host-proxied": HOST_PROXIED,
        "--dense": DENSE,
        "--replica": REPLICA,
    }
    for code, colour in VERDICT.items():
        out[f"--verdict-{code}"] = colour
        out[f"--verdict-{code}-text"] = VERDICT_TEXT[code]
    for tag, colour in TAG.items():
        out[f"--tag-{tag}"] = colour
    return out
