"""Names of the arms, of the parts of a decode step and of GPU memory, shared by every face.

The card, the page's charts and tables, and the reports name a part the same way; a part
keeps its JSON key (`breakdown_ms.compute`, `memory_detail_gb.kv_cache`) and only its words
live here. `compute` is the tensor-core time that does not hide under the HBM reads, so its
label says "beyond HBM" wherever it is printed.
"""

from __future__ import annotations

import re

from ..base.quantity import Tag
from ..catalog.transports import deepep_route
from ..decide.verdict import ARM_LABELS

# A tag as the verdict's sentences write it, `[derived]`: the terminal draws it as its marker,
# the page and the reports as a badge.
TAG_IN_TEXT = re.compile(r"\[(" + "|".join(str(t) for t in Tag) + r")\]")

STEP_LABELS: dict[str, str] = {
    "engine": "host beyond GPU work",
    "hbm": "HBM reads",
    "compute": "compute beyond HBM",
    "kernels": "kernel floors",
    "moe_comm": "dispatch + combine",
    "prefill": "mixed-in prefill",
    "proxy": "host proxy",
}
BOUND_SHORT: dict[str, str] = {
    "launches": "host launches",
    "host": "host step",
    "hbm": "HBM",
    "compute": "tensor cores",
    "kernels": "kernel floors",
    "exchange_latency": "exchange latency",
    "messages": "messages",
    "wire": "wire",
    "nvlink": "NVLink",
    "collective_latency": "NCCL latency",
    "arm_term": "engine terms",
    "prefill": "prefill",
    "proxy": "host proxy",
}
"""A step's bound in a word or two, for the card's one line (`physics/bounds.LABELS` in full)."""
MEMORY_LABELS: dict[str, str] = {
    "weights": "weights",
    "kv_cache": "KV cache",
    "buffers": "communication buffers",
    "reserve": "framework reserve",
}


def step_label(part: str) -> str:
    """The words for one step part (an unknown part keeps its key, spaced)."""
    return STEP_LABELS.get(part, part.replace("_", " "))


# What each single-node replica runs inside its node, as a head's suffix (allgather: none).
REPLICA_SUFFIX = {"replica:deepep": " (DeepEP NVLink)", "replica:tp": " (TP)"}


def arm_head(arm: str, transport: str, nodes: int, layout: object = "") -> str:
    """An arm's name as a column head or legend: DeepEP names the path it rides (the
    transport, NVLink on one node); the replicas name their one-node layout unless it is
    allgather (or differs row by row)."""
    if arm == "deepep":
        return f"DeepEP ({deepep_route(transport, nodes)})"
    suffix = REPLICA_SUFFIX.get(layout, "") if arm == "replica" and isinstance(layout, str) else ""
    return ARM_LABELS[arm] + suffix
