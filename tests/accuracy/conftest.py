"""The cross-validated report the slow tests of this folder ask for as `cv` (`reports.py`)."""

from __future__ import annotations

from .reports import cv  # noqa: F401  (fixture)
