"""The clean stop a signal asks for, shared by the command that raises it (`serve`) and the
entry point that decides what handlers a stopping process leaves behind."""

from __future__ import annotations


class CleanStop(SystemExit):
    """A stop a signal asked for that counts as success: a server told to stop by its service
    manager exits 0, not by death from the signal."""

    def __init__(self) -> None:
        super().__init__(0)
