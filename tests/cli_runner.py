"""Run the CLI entry point in process, the way a shell would see it."""

from typing import Any

import pytest

from deepep_calc import cli


def run_cli(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `deepep-calc ARGS...`."""
    try:
        cli.main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`run_cli` with the arguments as one list, before the fixture."""
    return run_cli(capsys, *argv)
