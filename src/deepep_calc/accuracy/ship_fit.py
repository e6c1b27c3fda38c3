"""Writes the shipped fit: refit every reference, cross-validate, and rewrite the file.

    python -m deepep_calc.accuracy.ship_fit

`catalog/data/fitted.toml` is what every process reads (`fit/shipped.py`); this is how it is
made. It sits with the what-ifs because the bands it records come from the cross-validation
(`validate.py`), which runs the whole estimate once per held-out group.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..fit.build import fit_table
from ..fit.kernels import kernel_rows
from ..fit.observations import observations
from ..fit.shipped import FILE, to_toml
from ..fit.table import Table
from .validate import cross_validate


def fresh_text() -> str:
    """A fresh fit and cross-validation, as the text the shipped file must hold."""
    table = fit_table(kernel_rows(), observations())
    bands = cross_validate_bands(table, cross_validate)
    return to_toml(replace(table, bands=bands))


def cross_validate_bands(table: Table, run: Any) -> dict[str, tuple[float, float]]:
    return {k: (round(lo, 4), round(hi, 4)) for k, (lo, hi) in run().bands().items()}


if __name__ == "__main__":  # pragma: no cover - generator entry point
    from ..io.safe_write import write_atomic

    target = Path(__file__).resolve().parent.parent / "catalog" / "data" / FILE
    write_atomic(target, fresh_text(), "fitted.toml")  # whole or not at all: every process reads it
    sys.stdout.write(f"wrote {target}\n")
