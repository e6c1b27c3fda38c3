"""A scenario and a helper that more than one test file of tests/decide/ uses: defined once."""

from __future__ import annotations

import shlex

from deepep_calc import Scenario

# DeepEP wins, and its closest rival is the replicas, not allgather (vLLM, graphs, c256)
REPLICA_RIVAL = Scenario(model="deepseek-v3", nodes=2, engine="vllm", cuda_graphs=True, concurrency=256)


def command_tokens(command: str) -> list[str]:
    """A launch command as the shell splits it: comment lines dropped, continuations joined."""
    body = "\n".join(line for line in command.splitlines() if not line.lstrip().startswith("#"))
    return shlex.split(body.replace("\\\n", " "))
