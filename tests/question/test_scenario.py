"""`question/scenario.py`: what `resolve` refuses of a scenario whose fields are each well typed
but that no deployment can run, as `deepep-calc evaluate` prints it (one line, exit 2): NVLink
across nodes (the kernel query refuses it too) and a prompt past the model's context window.
The field types are `test_scenario_types.py`'s, the field limits `test_fields.py`'s.
"""

from __future__ import annotations

import pytest

from cli_runner import run_cli
from estimate.shared import evaluate_refused as _refused


def test_nvlink_across_nodes_is_refused_like_the_kernel_command(capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(
        capsys, "--transport", "nvlink", "--nodes", "8", "--model", "deepseek-v3", "--concurrency", 512
    )
    assert "--transport: 'nvlink' is not allowed" in err and "one node" in err and "efa-gda" in err
    code, _, kerr = run_cli(capsys, "kernel", "--transport", "nvlink", "--ep", 32)
    assert code == 2 and "nvlink" in kerr  # the same refusal the kernel query gives


def test_isl_beyond_the_context_window_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(capsys, "--isl", "1000000")
    assert "--isl: 1000000" in err and "40,960" in err and "context window" in err
