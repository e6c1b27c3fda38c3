"""The older JSON export (AIPerf before 2025-10): metric blocks nested under `"records"`.

Why a module of its own: users still hold exports from those releases, and the layout is told
apart from the flat one only by where the blocks sit; the header around them is the flat one's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deepep_calc.base.errors import FileInputError
from deepep_calc.io.aiperf.flat import header
from deepep_calc.io.aiperf.metrics import CORE_TAGS, json_type
from deepep_calc.io.aiperf.run import Export

GENERATION = "json-records"


def claims(path: Path, doc: dict[str, Any]) -> bool:
    """True when `records` holds metric blocks we know; a `records` that is not an object is
    refused here rather than read as a flat export that happens to have such a key."""
    records = doc.get("records")
    if records is not None and not isinstance(records, dict):
        raise FileInputError(
            path,
            f"'records' is {json_type(records)}, expected an object of metric blocks",
            field="records",
        )
    return isinstance(records, dict) and any(t in records for t in CORE_TAGS)


def read(path: Path, doc: dict[str, Any]) -> Export:
    """The records layout's metric blocks are `doc["records"]`."""
    return header(path, doc, metrics=doc["records"], fmt=GENERATION)
