"""Assumed model constants with their stated uncertainty (used by the sensitivity analysis)."""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..quantity import Q, Tag
from ._toml import read_data


class Constant(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tag: Literal["measured", "derived", "assumed"] = "assumed"
    value: float
    spread: float = Field(ge=0)
    unit: str
    source: str

    def q(self) -> Q:
        return Q(self.value, self.unit, Tag.parse(self.tag), self.source)


@cache
def load_constants() -> dict[str, Constant]:
    return {k: Constant.model_validate(v) for k, v in read_data("constants.toml").items()}


@cache
def const(name: str) -> Q:
    """The constant as a quantity (shared instance: quantities are never mutated)."""
    return load_constants()[name].q()
