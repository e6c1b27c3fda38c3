"""`tools/regenerate.py`, which rewrites the shipped fit and the disaggregated bands: it writes
the package's own data files, from the texts `accuracy/` makes (their freshness is held by
tests/accuracy/test_ship_fit.py and tests/accuracy/test_disagg_refs.py)."""

from __future__ import annotations

import subprocess
import sys

from deepep_calc.accuracy import disagg_refs, ship_fit
from paths import REPO

TOOL = REPO / "tools" / "regenerate.py"


def test_each_target_is_a_shipped_file_and_the_text_accuracy_makes() -> None:
    sys.path.insert(0, str(TOOL.parent))
    try:
        import regenerate
    finally:
        sys.path.remove(str(TOOL.parent))
    targets = regenerate._targets()
    assert set(targets) == {"fitted", "disagg-bands"}
    assert targets["fitted"][1] is ship_fit.fresh_text
    assert targets["disagg-bands"][1] is disagg_refs.fresh_text
    for path, _ in targets.values():
        assert path.is_file() and path.parent.name == "data", path
        head = path.read_text(encoding="utf-8").splitlines()[0]
        assert "python tools/regenerate.py" in head, (path, head)  # the file names its maker


def test_an_unknown_target_is_refused_and_nothing_written() -> None:
    done = subprocess.run([sys.executable, TOOL, "everything"], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "invalid choice" in done.stderr and done.stdout == ""
