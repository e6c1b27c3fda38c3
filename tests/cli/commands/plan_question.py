"""One planning question asked both ways, shared by the tests of `cli/commands/plan.py` (as
`deepep-calc plan` flags) and of `web/plan_routes.py` (as the `/api/plan` body): DeepSeek-V3 at
ISL 1024 / OSL 256, 64 in flight, a 20 tok/s floor, over p5en and p6-b200, vLLM and SGLang, up
to 4 nodes. `cli_json` is the CLI's answer to it, computed once per process and parsed afresh
for each module."""

from __future__ import annotations

import functools
import json

import pytest

ARGS = [
    "plan",
    "--model",
    "deepseek-v3",
    "--isl",
    "1024",
    "--osl",
    "256",
    "--concurrency",
    "64",
    "--slo-tok-s",
    "20",
    "--instances",
    "p5en,p6-b200",
    "--engines",
    "vllm,sglang",
    "--max-nodes",
    "4",
]

BODY = {
    "model": "deepseek-v3",
    "isl": 1024,
    "osl": 256,
    "concurrency": 64,
    "slo_tok_s": 20.0,
    "instances": "p5en,p6-b200",
    "engines": "vllm,sglang",
    "max_nodes": 4,
}


@functools.cache
def _cli_answer() -> str:
    """The CLI's JSON text for ARGS, run once per process (both test modules ask for it)."""
    import contextlib
    import io

    from deepep_calc import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli.main([*ARGS, "--json"])
    return out.getvalue()


@pytest.fixture(scope="module")
def cli_json():
    """The CLI's JSON for ARGS (module-scoped, so captured by hand rather than with capsys)."""
    return json.loads(_cli_answer())
