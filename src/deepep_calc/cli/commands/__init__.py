"""Subcommands that live with their subsystem; each module exposes `register(app)`."""
