"""Find the AIPerf runs in what the user points `calibrate` at: files, artifact folders, campaigns.

Why a separate step: people hand over their benchmark folders as AIPerf left them. One AIPerf
run writes a folder of files (the summary `profile_export_aiperf.json` and its `.csv` twin,
per-request `profile_export.jsonl`, `inputs.json`, logs, sometimes time slices, telemetry or
plots), and a benchmark campaign is a folder of such folders, one per concurrency, often nested
by leg or EP_NUM_COMMS. Files named by our own convention (`trtllm-0.21_..._deepep-epnc8_c32_isl120.json`)
may also sit side by side in one folder. This module walks a folder, keeps one summary export
per run (the JSON over its CSV twin), and records every other file with the reason it was not
read, so the user sees exactly what the calibration rests on.

Folder names count as file names do: `runs/vllm/deepep-epnc8/c32/profile_export_aiperf.json`
is a vLLM DeepEP run at EP_NUM_COMMS=8 and concurrency 32 (the export itself still wins where
it states a value). A file named or filed as the other leg is skipped, so `--dense runs/
--deepep runs/` on one mixed folder reads each run once.

A file that claims to be a summary (AIPerf's own name, or our convention) and cannot be read
is an error, not a skip: quietly dropping a run would change the fit without saying so.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..base.errors import FileInputError, InputError
from .aiperf import (
    EXPORT_CSV,
    EXPORT_JSON,
    AIPerfRun,
    NameHints,
    load_aiperf,
    parse_export_name,
    stat_path,
)

Leg = Literal["dense", "deepep"]

MAX_DEPTH = 8
"""Folder levels below the one given; a campaign is two or three deep."""
MAX_ENTRIES = 20_000
"""Files and folders looked at under one argument; beyond it, the wrong folder was given."""

_RECORDS = (".jsonl", ".parquet")
_NOT_EXPORTS = {
    ".log": "a log file",
    ".txt": "a text file",
    ".md": "a text file",
    ".png": "a plot",
    ".svg": "a plot",
    ".jpg": "a plot",
    ".html": "a plot or page",
    ".yaml": "a configuration file",
    ".yml": "a configuration file",
    ".toml": "a configuration file",
    ".sh": "a script",
    ".py": "a script",
    ".out": "console output",
    ".err": "console output",
    ".gz": "an archive",
    ".tar": "an archive",
    ".zip": "an archive",
}


@dataclass(frozen=True)
class Used:
    """A run that goes into the calibration, and the argument it was found under."""

    path: Path
    leg: Leg
    run: AIPerfRun
    note: str = ""


@dataclass(frozen=True)
class Skipped:
    """A file that was looked at and not read as a run, with the reason in words."""

    path: Path
    leg: Leg
    reason: str


@dataclass
class Discovery:
    """Every run found for both legs, and every file passed over."""

    used: list[Used] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def runs(self, leg: Leg) -> list[AIPerfRun]:
        return [u.run for u in self.used if u.leg == leg]

    def to_json(self) -> dict[str, Any]:
        return {
            "used": [
                {
                    "path": str(u.path),
                    "arm": u.leg,  # the JSON key keeps its name
                    "format": u.run.export_format,
                    "concurrency": u.run.concurrency,
                    "comms": u.run.comms if u.leg == "deepep" else None,
                    **({"note": u.note} if u.note else {}),
                }
                for u in self.used
            ],
            "skipped": [{"path": str(s.path), "arm": s.leg, "reason": s.reason} for s in self.skipped],
        }


def skip_reason(path: Path) -> str | None:
    """Why a file is not a summary export, from its name alone (None: it may be one)."""
    name = path.name.lower()
    suffix = path.suffix.lower()
    if suffix in _RECORDS:
        return "AIPerf per-request records; the run's summary export is read instead"
    if name == "inputs.json":
        return "the request payloads AIPerf sent, not results"
    if "timeslice" in name:
        return "statistics per time slice; the whole-run summary is read instead"
    if "telemetry" in name:
        return "GPU telemetry, not serving metrics"
    if "server_metrics" in name:
        return "server-side metrics, not used by the calibration"
    if "aggregate" in name:
        return "statistics over repeated runs; each run's own export is read instead"
    if suffix in _NOT_EXPORTS:
        return f"not an AIPerf summary export ({_NOT_EXPORTS[suffix]})"
    if suffix not in (".json", ".csv"):
        return "not an AIPerf summary export (only .json and .csv summaries are read)"
    return None


def _claims_to_be_a_summary(path: Path) -> bool:
    """AIPerf's summary name, or our convention's: such a file must read, or it is an error."""
    if path.name.lower() in (EXPORT_JSON, EXPORT_CSV):
        return True
    hints = parse_export_name(path.name)
    return hints.concurrency is not None and (hints.leg is not None or hints.engine is not None)


def _folder_hints(path: Path, root: Path) -> list[NameHints]:
    """Hints from each folder between the file and the argument (nearest first, root included)."""
    out = []
    folder = path.parent
    while True:
        out.append(parse_export_name(folder.name))
        if folder == root or folder == folder.parent:
            break
        folder = folder.parent
    return out


def _with_folder_hints(run: AIPerfRun, hints: list[NameHints]) -> AIPerfRun:
    """Fill what neither the export nor its file name states from the folders' names."""
    update: dict[str, Any] = {}
    warnings = list(run.warnings)
    for h in hints:
        for key in ("engine", "engine_version", "comms"):
            if getattr(run, key) is None and key not in update and getattr(h, key) is not None:
                update[key] = getattr(h, key)
        if run.leg is None and "leg" not in update and h.leg is not None:
            update["leg"], update["leg_label"] = h.leg, h.leg_label
        if run.concurrency is None and "concurrency" not in update and h.concurrency is not None:
            update["concurrency"] = h.concurrency
            warnings.append(
                f"concurrency {h.concurrency} taken from the folder name: the export does not state it"
            )
    if not update:
        return run
    return replace(run, **update, warnings=warnings)


def _natural(name: str) -> list[Any]:
    """Sort key that puts c4 before c32 (numbers compared as numbers)."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", name)]


def _walk(root: Path) -> list[Path]:
    """Every regular file under `root`, sorted, hidden entries left out; symlinked folders are
    not followed (a link loop cannot trap the walk), symlinked files are."""
    files: list[Path] = []
    seen = 0
    for folder, dirs, names in os.walk(root, followlinks=False):
        depth = len(Path(folder).relative_to(root).parts)
        shown = [d for d in dirs if not d.startswith(".")] if depth < MAX_DEPTH else []
        dirs[:] = sorted(shown, key=_natural)
        seen += len(dirs) + len(names)
        if seen > MAX_ENTRIES:
            raise FileInputError(
                root, f"holds more than {MAX_ENTRIES:,} files and folders; point at the folder of runs"
            )
        for name in sorted(names, key=_natural):
            if not name.startswith("."):
                files.append(Path(folder) / name)
    return files


def _one_argument(given: Path, leg: Leg, out: Discovery) -> None:
    mode = stat_path(given).st_mode
    if not stat.S_ISDIR(mode):
        out.used.append(_explicit_file(given, leg))
        return
    found_before = len(out.used)
    skipped_before = len(out.skipped)
    files = _walk(given)
    candidates: list[Path] = []
    for path in files:
        reason = skip_reason(path)
        if reason is None:
            candidates.append(path)
        else:
            out.skipped.append(Skipped(path, leg, reason))
    json_stems = {(p.parent, p.stem.lower()) for p in candidates if p.suffix.lower() == ".json"}
    for path in candidates:
        if path.suffix.lower() == ".csv" and (path.parent, path.stem.lower()) in json_stems:
            twin = path.with_suffix(".json").name
            reason = f"the CSV twin of {twin}; the JSON is read (it has the configuration)"
            out.skipped.append(Skipped(path, leg, reason))
            continue
        hints = [parse_export_name(path.name), *_folder_hints(path, given)]
        other = next((h.leg for h in hints if h.leg is not None), None)
        if other is not None and other != leg:
            label = "DeepEP" if other == "deepep" else "dense"
            out.skipped.append(Skipped(path, leg, f"named as a {label} run; not read under --{leg}"))
            continue
        try:
            run = load_aiperf(path)
        except FileInputError as err:
            if _claims_to_be_a_summary(path):
                raise
            problem = err.message.removeprefix(f"{err.path}: ")
            out.skipped.append(Skipped(path, leg, f"not an AIPerf summary export ({problem})"))
            continue
        out.used.append(Used(path, leg, _with_folder_hints(run, hints[1:])))
    if len(out.used) == found_before:
        passed = out.skipped[skipped_before:]
        why = "; ".join(f"{s.path.name}: {s.reason}" for s in passed[:3])
        more = f"; and {len(passed) - 3} more" if len(passed) > 3 else ""
        detail = f" (skipped {len(passed)} file(s): {why}{more})" if passed else " (the folder is empty)"
        raise FileInputError(given, f"no AIPerf export in this folder or below it{detail}")


def _explicit_file(path: Path, leg: Leg) -> Used:
    """A file named on the command line is read as a run, or refused with a pointer."""
    reason = skip_reason(path)
    if reason is not None and path.suffix.lower() in (*_RECORDS, ".json"):
        for name in (EXPORT_JSON, EXPORT_CSV):
            summary = path.with_name(name)
            if summary != path and summary.is_file():
                note = f"{path.name} is {reason.split(';')[0]}; read {name} beside it"
                return Used(summary, leg, load_aiperf(summary), note)
    if reason is not None:
        raise FileInputError(path, f"{reason.split(';')[0]}; pass the run's {EXPORT_JSON} (or its folder)")
    return Used(path, leg, load_aiperf(path))


def discover(dense: list[str | Path], deepep: list[str | Path]) -> Discovery:
    """Every run under the `--dense` and `--deepep` arguments (files or folders), in order."""
    out = Discovery()
    for leg, given in (("dense", dense), ("deepep", deepep)):
        for item in given:
            _one_argument(Path(item), leg, out)  # type: ignore[arg-type]
    if not out.runs("deepep"):
        raise InputError("--deepep", None, "at least one DeepEP run (an AIPerf export file or folder)")
    return out
