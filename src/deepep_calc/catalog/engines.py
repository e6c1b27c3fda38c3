"""Serving engines: the flags that pick each MoE exchange, batch limits, and fit priors."""

from __future__ import annotations

from dataclasses import field
from functools import cache
from typing import TYPE_CHECKING, Annotated, Literal

from ..base.errors import InputError
from ..base.records import Record, row
from ..base.vocabulary import Arm
from ._toml import validate_rows

if TYPE_CHECKING:
    from annotated_types import Gt


@row
class ArmFlags(Record):
    env: dict[str, str] = field(default_factory=dict)
    config: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)


@row
class WeightFlags(Record):
    """How an engine serves a weight dtype from a 16-bit checkpoint: one flag per dtype (a CLI
    argument, or `key: value` for a config file), with its source."""

    flags: dict[str, str] = field(default_factory=dict)
    source: str = ""


@row
class Engine(Record):
    name: str
    label: str
    max_batch_per_rank: Annotated[int, Gt(0)]
    max_batch_source: str
    graph_flag_eager: str
    graph_flag_graphs: str
    prior_engine: str = ""  # engine whose constants stand in where ours are unpinned
    proxy_wait: Literal["gpu", "host"] = (
        "gpu"  # where eager runs wait for a host-proxied exchange (physics/step.py)
    )
    proxy_wait_source: str = ""
    flags: dict[Arm, ArmFlags]
    # `{deepep_backend}` in the DeepEP arm's flags, per transport library (transports.toml): an
    # engine that picks the implementation by flag says which value loads which library
    deepep_backend: dict[str, str] = field(default_factory=dict)
    weights: WeightFlags = field(default_factory=WeightFlags)


@cache
def load_engines() -> dict[str, Engine]:
    return validate_rows("engines.toml", "engine", Engine)


def get_engine(name: str) -> Engine:
    engines = load_engines()
    key = name.strip().lower()
    if key not in engines:
        raise InputError("--engine", name, f"one of {', '.join(engines)}")
    return engines[key]
