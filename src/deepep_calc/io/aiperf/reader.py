"""The reader interface: find the export, tell its generation, hand it to that generation's reader.

Why this shape: AIPerf has changed its export over releases, and each generation we know has a
module of its own (`flat`, `records`, `csv_export`) that only locates metric blocks and the
header, returning an `Export`; `build.build_run` then types and checks it the same way for all.
A JSON generation is a pair `claims(path, doc)` / `read(path, doc)`, tried oldest layout first;
adding one is a module and a row in `JSON_LAYOUTS`. AIPerf's per-request JSONL is not a summary
export and has no reader: a large one is refused by size, a small one as invalid JSON.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deepep_calc.base.errors import FileInputError
from deepep_calc.io.aiperf import csv_export, flat, records
from deepep_calc.io.aiperf.build import build_run
from deepep_calc.io.aiperf.metrics import json_type
from deepep_calc.io.aiperf.run import AIPerfRun, Export
from deepep_calc.io.textfile import one_line, read_text_file, stat_path

EXPORT_JSON = "profile_export_aiperf.json"
EXPORT_CSV = "profile_export_aiperf.csv"

JsonLayout = tuple[Callable[[Path, dict[str, Any]], bool], Callable[[Path, dict[str, Any]], Export]]
JSON_LAYOUTS: tuple[JsonLayout, ...] = (
    (records.claims, records.read),
    (flat.claims, flat.read),  # claims every object: keep it last
)
"""JSON export generations as (claims, read), tried in order."""


def find_export(folder: Path) -> Path:
    """Pick the export inside an AIPerf artifact folder.

    The JSON is preferred (it carries the configuration and the benchmark id); the CSV is the
    fallback. Several candidate JSONs that are not the canonical name are ambiguous, and we
    would rather ask than guess which run the user meant.
    """
    canonical = folder / EXPORT_JSON
    if canonical.is_file():
        return canonical
    jsons = sorted(p for p in folder.glob("*aiperf*.json") if p.is_file())
    if len(jsons) == 1:
        return jsons[0]
    if len(jsons) > 1:
        names = ", ".join(p.name for p in jsons[:4]) + (", ..." if len(jsons) > 4 else "")
        raise FileInputError(folder, f"{len(jsons)} candidate AIPerf exports ({names}); pass one file")
    if (folder / EXPORT_CSV).is_file():
        return folder / EXPORT_CSV
    csvs = sorted(p for p in folder.glob("*aiperf*.csv") if p.is_file())
    if len(csvs) == 1:
        return csvs[0]
    raise FileInputError(
        folder,
        f"no AIPerf export in this folder (looked for {EXPORT_JSON}, *aiperf*.json, {EXPORT_CSV})",
    )


def load_aiperf(path: str | Path) -> AIPerfRun:
    """Import one AIPerf run from an export file or an artifact folder.

    Raises `FileInputError` (one line naming the file) when the input is not a usable export;
    returns a run with `warnings` when it is usable but suspect.
    """
    p = Path(path)
    if stat.S_ISDIR(stat_path(p).st_mode):
        p = find_export(p)
    return build_run(read_export(p, read_text_file(p)))


def read_export(path: Path, text: str) -> Export:
    """Tell the generation of an export's text and read it: CSV by suffix (or, for a file with
    neither suffix, by not starting like JSON), otherwise one of the JSON layouts."""
    head = text.lstrip()[:1]
    if path.suffix.lower() == ".csv" or (path.suffix.lower() != ".json" and head not in "{["):
        return csv_export.read(path, text)
    return read_json_export(path, text)


def read_json_export(path: Path, text: str) -> Export:
    """Decode a JSON export and read it with the first generation that claims it."""
    doc = decode_json(path, text)
    for claims, read in JSON_LAYOUTS:
        if claims(path, doc):
            return read(path, doc)
    raise AssertionError("the flat layout claims every JSON object")  # pragma: no cover


def decode_json(path: Path, text: str) -> dict[str, Any]:
    """The document's top-level object; a truncated, invalid or non-object file is one line."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        body = text.rstrip()
        cut_in_string = exc.msg.startswith("Unterminated string") and "\n" not in body[exc.pos :]
        if exc.pos >= len(body) or cut_in_string:
            raise FileInputError(
                path,
                f"truncated JSON: the document ends at line {exc.lineno} before it is complete",
            ) from None
        raise FileInputError(
            path, f"not valid JSON ({one_line(exc.msg)} at line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise FileInputError(path, "not valid JSON (nested too deeply)") from None
    except ValueError:  # the only other parse failure: an integer beyond Python's digit limit
        raise FileInputError(path, "not valid JSON (a number with thousands of digits)") from None
    if not isinstance(doc, dict):
        raise FileInputError(
            path, f"JSON top level is {json_type(doc)}, expected an object (an AIPerf export)"
        )
    return doc
