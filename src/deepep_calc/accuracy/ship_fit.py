"""The shipped fit's text: refit every reference and cross-validate (no file touched here).

    python tools/regenerate.py fitted

writes it to `catalog/data/fitted.toml`, which every process reads (`fit/shipped.py`); this is
how it is made. It sits in accuracy/ because the bands it records come from the cross-validation
(`validate.py`), which runs the whole estimate once per held-out group.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..fit.build import fit_table
from ..fit.kernels import kernel_rows
from ..fit.observations import observations
from ..fit.shipped import to_toml
from .validate import cross_validate


def fresh_text() -> str:
    """A fresh fit and cross-validation, as the text the shipped file must hold."""
    table = fit_table(kernel_rows(), observations())
    bands = cross_validate_bands(cross_validate)
    return to_toml(replace(table, bands=bands))


def cross_validate_bands(run: Any) -> dict[str, tuple[float, float]]:
    """The bands of a cross-validation run, rounded to four digits as the shipped file holds them."""
    return {k: (round(lo, 4), round(hi, 4)) for k, (lo, hi) in run().bands().items()}
