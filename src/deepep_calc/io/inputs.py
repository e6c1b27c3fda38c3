"""The files a question names, read before it is resolved: the model layers read none.

A scenario may name a config.json (`--model PATH`) and a calibration profile
(`--calibration FILE`). `resolve_files` is `question.resolve` with both read here: the config.json
at the point `resolve` checks the model (so a bad file is reported where it always was), the
profile once the question is valid. The what-ifs of the answer then reuse both
(`Resolved.change` keeps the models and the profile).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..catalog.constants import CATALOG, Assumptions
from ..catalog.models import ModelSpec
from ..question.scenario import Resolved, Scenario, resolve
from .hf_config import load_hf_config
from .profile import load_profile


def resolve_files(
    scenario: Scenario,
    models: Mapping[str, ModelSpec] | None = None,
    assumptions: Assumptions = CATALOG,
) -> Resolved:
    """`resolve(scenario, models, assumptions)` with the config.json and the profile it names read."""
    r = resolve(scenario, models, assumptions, read_model=load_hf_config)
    if r.scenario.calibration is not None:
        r = replace(r, profile=load_profile(r.scenario.calibration))
    return r
