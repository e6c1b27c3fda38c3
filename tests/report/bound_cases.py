"""The scenarios whose bounds every face must state: the default scenario, a CUDA-graphs DeepSeek,
a model only EP fits, one node, a large GPU-initiated batch, and tensor parallel with a floor.
Shared by `test_bound_view.py` (the card's line) and `tests/estimate/test_bounds.py` (the JSON)."""

from __future__ import annotations

CASES = [
    {},
    {"model": "deepseek-v3", "nodes": 2, "engine": "sglang", "cuda_graphs": True},
    {"model": "kimi-k2", "nodes": 4, "engine": "vllm"},
    {"nodes": 1},
    {"model": "deepseek-v3", "nodes": 4, "transport": "efa-gda", "cuda_graphs": True, "concurrency": 1024},
    {"model": "qwen3-235b-a22b", "instance": "p5", "nodes": 2, "alternative": "tp", "slo_tok_s": 40},
]
