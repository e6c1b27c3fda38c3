"""DeepEP-on-EFA calculator: DeepEP all-to-all or a dense / allgather alternative?

Public API::

    from deepep_calc import evaluate, Scenario
    result = evaluate(Scenario(model="deepseek-v3", instance="p5en", nodes=4))
    result.verdict.code  # "dense" | "capacity" | "deepep"

The names are imported on first use, not with the package: `deepep-calc --help` imports this
package and should not pay for numpy, pydantic and the model it never runs.
"""

from __future__ import annotations

from typing import Any

from .base.version import __version__ as __version__

__all__ = ["Q", "Result", "Scenario", "Tag", "evaluate", "explain_verdict", "load_catalog"]

# public name -> the submodule that defines it
_LAZY = {
    "Q": "base.quantity",
    "Tag": "base.quantity",
    "Scenario": "question.scenario",
    "Result": "estimate.result",
    "evaluate": "api",
    "explain_verdict": "whatif.explanation",
}


def load_catalog() -> dict[str, Any]:
    """Every catalog, validated: models, instances, transports, engines, measured cells."""
    from .catalog.engines import load_engines
    from .catalog.hardware import load_instances
    from .catalog.measured import load_cells
    from .catalog.model_catalog import load_models
    from .catalog.transports import load_transports

    return {
        "models": load_models(),
        "instances": load_instances(),
        "transports": load_transports(),
        "engines": load_engines(),
        "cells": load_cells(),
    }


def __getattr__(name: str) -> Any:
    """`Q`, `Tag`, `Scenario`, `Result`, `evaluate`, `explain_verdict` from their modules, imported
    on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
