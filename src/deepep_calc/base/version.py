"""The tool's version, where every layer can read it (profiles and reports record it)."""

__version__ = "0.1.0"
