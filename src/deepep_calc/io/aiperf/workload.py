"""What the run was asked to do, from the JSON export's `input_config` (or its command line).

Why a module of its own: AIPerf has moved these fields between releases (`phases` vs the legacy
`loadgen`, `models.items` vs `endpoint.model_names`, `datasets` vs `input.prompt`), and an A/B
must hold exactly these values equal, so each lookup and its fallbacks are kept in one place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deepep_calc.base.errors import FileInputError
from deepep_calc.io.aiperf.metrics import MAX_METRIC, number

_CLI_CONCURRENCY_RE = re.compile(r"--concurrency[= ]+'?(\d+)")


def dig(obj: Any, *keys: str | int) -> Any:
    """Follow keys and list indices into a JSON value; None as soon as a step does not exist."""
    for key in keys:
        if isinstance(key, int):
            if not isinstance(obj, list) or len(obj) <= key:
                return None
        elif not isinstance(obj, Mapping):
            return None
        obj = obj[key] if isinstance(key, int) else obj.get(key)
    return obj


def config_concurrency(path: Path, config: Mapping[str, Any], cli: str | None) -> int | None:
    """Concurrency from the profiling phase, the legacy loadgen block, or the recorded command."""
    raw: Any = None
    phases = config.get("phases")
    if isinstance(phases, list):
        named = [p for p in phases if isinstance(p, Mapping) and p.get("name") == "profiling"]
        if not named and len(phases) == 1 and isinstance(phases[0], Mapping):
            named = phases
        if named:
            raw = named[0].get("concurrency")
    if raw is None:
        raw = dig(config, "loadgen", "concurrency")
    if raw is None and cli and (m := _CLI_CONCURRENCY_RE.search(cli)) is not None:
        raw = int(m.group(1))
    if raw is None:
        return None
    value = number(raw)
    if value is None or value <= 0 or value != int(value):
        raise FileInputError(
            path,
            f"concurrency in input_config is {raw!r}, expected a positive whole number",
            field="concurrency",
        )
    return int(value)


def config_model(config: Mapping[str, Any]) -> tuple[str | None, str | None]:
    items = dig(config, "models", "items")
    if isinstance(items, list) and items:
        first = items[0]
        name = first.get("name") if isinstance(first, Mapping) else first
    else:
        models = config.get("models")
        name = models[0] if isinstance(models, list) and models else None
        if name is None:
            name = dig(config, "endpoint", "model_names", 0)
    tokenizer = dig(config, "tokenizer", "name")
    return (
        name if isinstance(name, str) else None,
        tokenizer if isinstance(tokenizer, str) else None,
    )


def config_lengths(config: Mapping[str, Any]) -> tuple[float | None, float | None]:
    isl = osl = None
    datasets = config.get("datasets")
    if isinstance(datasets, list):
        for ds in datasets:
            prompts = ds.get("prompts") if isinstance(ds, Mapping) else None
            if isinstance(prompts, Mapping):
                isl = number(dig(prompts, "isl", "mean"))
                osl = number(dig(prompts, "osl", "mean"))
                if isl is not None or osl is not None:
                    break
    if isl is None:
        isl = number(dig(config, "input", "prompt", "input_tokens", "mean"))
    if osl is None:
        osl = number(dig(config, "input", "prompt", "output_tokens", "mean"))
    return isl, osl


def check_lengths(path: Path, isl: float | None, osl: float | None) -> None:
    """A requested length is a token count: positive and of a size a model can serve."""
    for name, value in (("ISL", isl), ("OSL", osl)):
        if value is not None and not 0 < value <= MAX_METRIC:
            raise FileInputError(
                path,
                f"input_config requests an {name} mean of {value:g} tokens; expected a positive count",
                field=name.lower(),
            )
