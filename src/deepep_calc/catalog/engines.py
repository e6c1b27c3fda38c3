"""Serving engines: the flags that pick each MoE exchange, batch limits, and fit priors."""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..base.errors import InputError
from ._toml import validate_rows

Arm = Literal["deepep", "allgather", "tp", "replica"]


class ArmFlags(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    env: dict[str, str] = Field(default_factory=dict)
    config: dict[str, str] = Field(default_factory=dict)
    args: list[str] = Field(default_factory=list)


class Engine(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    label: str
    max_batch_per_rank: int = Field(gt=0)
    max_batch_source: str
    graph_flag_eager: str
    graph_flag_graphs: str
    prior_engine: str = Field("", description="engine whose constants stand in where ours are unpinned")
    proxy_wait: Literal["gpu", "host"] = Field(
        "gpu", description="where eager runs wait for a host-proxied exchange (physics/step.py)"
    )
    proxy_wait_source: str = ""
    flags: dict[Arm, ArmFlags]


@cache
def load_engines() -> dict[str, Engine]:
    return validate_rows("engines.toml", "engine", Engine)


def get_engine(name: str) -> Engine:
    engines = load_engines()
    key = name.strip().lower()
    if key not in engines:
        raise InputError("--engine", name, f"one of {', '.join(engines)}")
    return engines[key]
