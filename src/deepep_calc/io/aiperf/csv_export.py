"""The CSV export (`profile_export_aiperf.csv`): metric tables keyed by display name.

Why a module of its own: the CSV carries no tags, no configuration and no benchmark id, so its
reader rebuilds flat-layout metric blocks from the tables and leaves the workload to the file
name; it is the fallback when a run folder has no JSON.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

from deepep_calc.base.errors import FileInputError
from deepep_calc.io.aiperf.metrics import csv_cell, csv_tag, number
from deepep_calc.io.aiperf.run import Export
from deepep_calc.io.textfile import one_line

GENERATION = "csv"


def read(path: Path, text: str) -> Export:
    """Rebuild flat-layout metric blocks from the CSV's two metric tables.

    The first table is `Metric,avg,min,...` (record metrics), then a blank line, then
    `Metric,Value` (derived metrics); a GPU telemetry table may follow and is ignored. The CSV
    has no count column, so a block's count is recovered as sum / avg where both exist.
    """
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise FileInputError(path, f"not a readable CSV ({one_line(str(exc))})") from None
    metrics: dict[str, dict[str, Any]] = {}
    header: list[str] | None = None
    seen_table = False
    for row in rows:
        if not row or not any(cell.strip() for cell in row):
            header = None
            continue
        first = row[0].strip()
        if first.lower() == "metric":
            header = [cell.strip().lower() for cell in row]
            seen_table = True
            continue
        if header is None:
            continue  # telemetry or any other table: not ours
        tag, unit = csv_tag(first)
        block: dict[str, Any] = {"unit": unit}
        for name, cell in zip(header[1:], row[1:], strict=False):
            value = csv_cell(cell)
            if value is not None:
                block["avg" if name == "value" else name] = value
        avg, total = number(block.get("avg")), number(block.get("sum"))
        if "count" not in block and avg and total is not None and math.isfinite(total / avg):
            block["count"] = round(total / avg)
        metrics[tag] = block
    if not seen_table:
        raise FileInputError(path, "not an AIPerf CSV export (no table starting with a 'Metric' header)")
    return Export(path=path, fmt=GENERATION, metrics=metrics)
