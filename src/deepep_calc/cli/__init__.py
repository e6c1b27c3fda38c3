"""The command line: `deepep-calc` and its subcommands (`program.py`), the shared scenario
flags (`options.py`), shell completion, and the commands that live in `commands/`."""

from .program import app, main

__all__ = ["app", "main"]
