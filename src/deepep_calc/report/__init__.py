"""Presentations of a Result: terminal (rich), Markdown, self-contained HTML."""
