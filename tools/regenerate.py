"""Rewrite the package data the model derives from its own catalogs, after a reference or an
equation changes.

    python tools/regenerate.py fitted          # catalog/data/fitted.toml: refit, cross-validate
    python tools/regenerate.py disagg-bands    # catalog/data/disagg_bands.toml: the split's band
    python tools/regenerate.py all

Each text comes from the package (`accuracy/ship_fit.py`, `accuracy/disagg_refs.py`: numbers
only, no file touched); this tool writes it through the package's safe writer, whole or not at
all, since every process reads these files. `tests/accuracy/test_ship_fit.py` and
`tests/accuracy/test_disagg_refs.py` fail when a shipped file and a fresh text disagree.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def _targets() -> dict[str, tuple[Path, Callable[[], str]]]:
    """Each generated file: its path inside the imported package, and what makes its text."""
    import deepep_calc
    from deepep_calc.accuracy import disagg_refs, ship_fit
    from deepep_calc.catalog.kv_transports import BANDS_FILE
    from deepep_calc.fit.shipped import FILE

    data = Path(deepep_calc.__file__).resolve().parent / "catalog" / "data"
    return {
        "fitted": (data / FILE, ship_fit.fresh_text),
        "disagg-bands": (data / BANDS_FILE, disagg_refs.fresh_text),
    }


def main() -> int:
    targets = _targets()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", choices=[*targets, "all"], help="the file to rewrite")
    opts = parser.parse_args()
    from deepep_calc.io.safe_write import write_atomic

    for name, (path, text) in targets.items():
        if opts.which in (name, "all"):
            write_atomic(path, text(), path.name)
            sys.stdout.write(f"wrote {path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
