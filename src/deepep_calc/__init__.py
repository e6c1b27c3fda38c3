"""DeepEP-on-EFA calculator: DeepEP all-to-all or a dense / allgather alternative?

Public API::

    from deepep_calc import evaluate, Scenario
    result = evaluate(Scenario(model="deepseek-v3", instance="p5en", nodes=4))
    result.verdict.code  # "dense" | "capacity" | "deepep"
"""

from __future__ import annotations

from typing import Any

from .quantity import Q, Tag
from .scenario import Scenario

# Imported eagerly on purpose: binding the function here, while the submodule of the same
# name is first imported, keeps `deepep_calc.evaluate` the function for every later import.
from .evaluate import Result, evaluate  # isort: skip

__all__ = ["Q", "Result", "Scenario", "Tag", "evaluate", "load_catalog"]
__version__ = "0.1.0"


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
