"""The question a user asks: its defaults, limits and field names, light enough for `--help`.

Why a module of its own: the CLI's flags, `--help` and the shell completion need the defaults
and the field names only, and importing numpy and the catalogs for them costs most of `--help`'s
time. This module holds those plain tables; the `Scenario` dataclass, `Resolved` and `resolve()`
are in `scenario.py`, which reads its defaults and limits from here.
"""

from __future__ import annotations

from typing import Any

# The default scenario: the fair A/B of the measured cells (docs/MEASURED-DATA.md) at concurrency 32.
DEFAULTS: dict[str, Any] = {
    "model": "qwen3-30b-a3b-fp8",
    "instance": "p5en",
    "nodes": 2,
    "gpus_per_node": None,
    "engine": "trtllm",
    "cuda_graphs": False,
    "transport": "efa-proxy",
    "alternative": "allgather",
    "comms": 8,
    "max_qps": 2,
    "concurrency": 32,
    "isl": 120,
    "osl": 128,
    "weight_dtype": None,
    "slo_tok_s": None,
    "ttft_ms": None,
    "price_per_hour": None,
    "max_batch": None,
    # a disaggregated deployment (question/disagg.py): None = aggregated, every side's layout
    # chosen by the model where not given
    "prefill_nodes": None,
    "decode_nodes": None,
    "kv_transport": None,
    "prefill_arm": None,
    "decode_arm": None,
    "prefill_transport": None,
    "decode_transport": None,
    "prefill_cuda_graphs": None,
    "decode_cuda_graphs": None,
}

# Beyond these the model has nothing trustworthy to say (and the numbers would overflow
# intuition long before floats): refuse with a message instead of extrapolating.
LIMITS = {
    "nodes": 1024,
    "gpus_per_node": 72,
    "comms": 64,
    "max_qps": 1024,
    "concurrency": 10_000_000,
    "isl": 10_000_000,
    "osl": 10_000_000,
    "max_batch": 65_536,
    "prefill_nodes": 1024,  # P + D is at most `nodes`' limit too
    "decode_nodes": 1024,
}
OVERRIDE_LIMIT = 1_000_000  # structural overrides (--experts, --topk, --hidden, --moe-layers)
FLOAT_LIMIT = 1e12  # SLO, TTFT and price: positive and below this


# An arm whose first token comes later than this does not serve the load: its clients have given
# up. 10 minutes is the default request timeout of common OpenAI-compatible clients (the OpenAI
# Python SDK waits 600 s), far beyond any interactive TTFT. A user's --ttft-ms above it raises it.
PROMPT_TIMEOUT_MS = 600_000.0

# Scenario's fields in declaration order (`scenario.py` asserts they agree): the CLI pops these
# out of a command's keyword arguments without importing the scenario module.
FIELDS = (
    "model",
    "instance",
    "nodes",
    "gpus_per_node",
    "engine",
    "cuda_graphs",
    "transport",
    "alternative",
    "comms",
    "max_qps",
    "concurrency",
    "isl",
    "osl",
    "weight_dtype",
    "slo_tok_s",
    "ttft_ms",
    "price_per_hour",
    "max_batch",
    "calibration",
    "experts",
    "topk",
    "hidden",
    "moe_layers",
    "kv_dtype",
    "prefill_nodes",
    "decode_nodes",
    "kv_transport",
    "prefill_arm",
    "decode_arm",
    "prefill_transport",
    "decode_transport",
    "prefill_cuda_graphs",
    "decode_cuda_graphs",
)

# The fields that describe a disaggregated deployment (all None: an aggregated one).
DISAGG_FIELDS = FIELDS[FIELDS.index("prefill_nodes") :]
