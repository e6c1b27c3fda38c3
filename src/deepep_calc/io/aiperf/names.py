"""What file and folder names say about a run, and one spelling per checkpoint.

Why a module of its own: the CSV export carries no configuration, so the shared file-name
convention is its only record of the workload (and a cross-check for JSON); and the same
weights launched by hub id, HF-cache path or snapshot hash must compare equal in an A/B.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_KNOWN_ENGINES = {
    "trtllm": "trtllm",
    "tensorrt-llm": "trtllm",
    "trt-llm": "trtllm",
    "vllm": "vllm",
    "sglang": "sglang",
}
_ENGINE_RE = re.compile(r"^(tensorrt-llm|trt-llm|trtllm|vllm|sglang)(?:[-_]?v?(\d[\w.]*))?$", re.I)
_HF_CACHE_RE = re.compile(r"models--([^/\\]+?)--([^/\\]+)")
_SNAPSHOT_RE = re.compile(r"[0-9a-f]{40}")
_CONCURRENCY_WORD_RE = re.compile(r"(?:^|[-_.])(?:concurrency|conc)[-_]?(\d+)(?=$|[-_.])", re.I)


@dataclass(frozen=True)
class NameHints:
    """What the shared file-name convention says about a run.

    `<engine>_<model>_<layout>_<instances>_<leg>_c<concurrency>_isl<ISL>.json`. The CSV export
    carries no configuration at all, so for it the name is the only record of the workload;
    for JSON it is a cross-check. Every field is optional: users name files as they like.
    """

    engine: str | None = None
    engine_version: str | None = None
    leg: str | None = None  # "dense" or "deepep"
    leg_label: str | None = None  # the token as written, e.g. "deepep-epnc8"
    comms: int | None = None  # EP_NUM_COMMS from "epnc<K>"
    concurrency: int | None = None
    isl: int | None = None
    instances: str | None = None  # the cluster token as written, e.g. "2xp5en"


_INSTANCES_RE = re.compile(r"\d+x[a-z][a-z0-9-]*", re.I)  # "2xp5en", "1xp6-b200"


def parse_export_name(name: str) -> NameHints:
    """Read engine, leg, comms, concurrency and ISL from a file or folder name, if it follows
    the convention; unknown tokens are ignored."""
    stem = name
    for suffix in (".json", ".csv", ".log", ".txt"):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    parts = stem.split("_")
    engine = engine_version = leg = leg_label = instances = None
    comms = concurrency = isl = None
    m = _ENGINE_RE.match(parts[0]) if parts else None
    if m:
        engine = _KNOWN_ENGINES[m.group(1).lower()]
        engine_version = m.group(2)
    for token in parts[1:] if m else parts:  # a folder may be just "c32" or "deepep-epnc8"
        low = token.lower()
        if (c := re.fullmatch(r"c(\d+)", low)) is not None:
            concurrency = int(c.group(1))
        elif (i := re.fullmatch(r"isl(\d+)", low)) is not None:
            isl = int(i.group(1))
        elif _INSTANCES_RE.fullmatch(low):
            instances = low
        elif low.startswith(("dense", "allgather")):
            leg, leg_label = "dense", token
        elif low.startswith("deepep"):
            leg, leg_label = "deepep", token
            if (k := re.search(r"epnc(\d+)", low)) is not None:
                comms = int(k.group(1))
    if concurrency is None and (c := _CONCURRENCY_WORD_RE.search(stem)) is not None:
        concurrency = int(c.group(1))  # AIPerf's own artifact folders: ...-concurrency32
    return NameHints(engine, engine_version, leg, leg_label, comms, concurrency, isl, instances)


def normalise_model(name: str | None, tokenizer: str | None = None) -> str | None:
    """Reduce the many spellings of one checkpoint to `org/name` so two legs can be compared.

    Engines are launched with a hub id, an HF-cache path or a bare snapshot hash; the same
    weights must not look like different models to the A/B check.
    """
    if not name:
        return None
    text = name.strip().rstrip("/\\")
    if (m := _HF_CACHE_RE.search(text)) is not None:
        return f"{m.group(1)}/{m.group(2)}"
    if (
        _SNAPSHOT_RE.fullmatch(text)
        and tokenizer
        and text in tokenizer
        and (t := _HF_CACHE_RE.search(tokenizer)) is not None
    ):
        return f"{t.group(1)}/{t.group(2)}"
    return text


def display_name(path: Path) -> str:
    """File name, with the folder when the name is AIPerf's generic one (else it says nothing)."""
    if path.name.startswith("profile_export") and path.parent.name:
        return f"{path.parent.name}/{path.name}"
    return path.name


def source_label(path: Path, benchmark_id: str | None) -> str:
    if benchmark_id:
        return f"AIPerf {display_name(path)} benchmark {benchmark_id}"
    return f"AIPerf {display_name(path)} (no benchmark id)"
