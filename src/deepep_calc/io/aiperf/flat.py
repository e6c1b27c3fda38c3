"""The flat JSON export (AIPerf schema 1.0-1.5): metric blocks at the top level of the document.

Why a module of its own: this is the current layout and the one the reader is written against.
Its header (input_config, benchmark id, run_info, schema and AIPerf versions, cancellation,
error summary) is shared with the older records layout, which reuses `header` from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deepep_calc.base.errors import FileInputError
from deepep_calc.io.aiperf.metrics import json_type
from deepep_calc.io.aiperf.run import Export

GENERATION = "json"


def claims(path: Path, doc: dict[str, Any]) -> bool:
    """Every JSON object no older layout claimed is read as flat; the builder refuses it if no
    metric block is found at the top level."""
    return True


def read(path: Path, doc: dict[str, Any]) -> Export:
    """The flat layout's metric blocks are the document itself."""
    return header(path, doc, metrics=doc, fmt=GENERATION)


def header(path: Path, doc: dict[str, Any], *, metrics: Mapping[str, Any], fmt: str) -> Export:
    """What a JSON export states about its run, around the metric blocks given."""
    config = doc.get("input_config")
    if config is not None and not isinstance(config, dict):
        raise FileInputError(
            path,
            f"'input_config' is {json_type(config)}, expected an object",
            field="input_config",
        )
    bid = doc.get("benchmark_id")
    run_info = doc.get("run_info") if isinstance(doc.get("run_info"), dict) else {}
    if not isinstance(bid, str) or not bid:
        info_id = run_info.get("benchmark_id")
        bid = info_id if isinstance(info_id, str) else None
    schema = doc.get("schema_version")
    version = doc.get("aiperf_version")
    return Export(
        path=path,
        fmt=fmt,
        metrics=metrics,
        config=config or {},
        benchmark_id=bid or None,
        schema_version=str(schema) if schema is not None else None,
        aiperf_version=str(version) if version is not None else None,
        was_cancelled=doc.get("was_cancelled") is True,
        error_summary=doc.get("error_summary"),
        cli_command=run_info.get("cli_command") if isinstance(run_info.get("cli_command"), str) else None,
    )
