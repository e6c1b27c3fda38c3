"""`tools/snapshot.py`, the before / after fingerprint a code move is proved with: a run it wrote
checks identical, a changed fingerprint is named and fails, and its timing figures are blanked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "snapshot.py"


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, TOOL, *map(str, args)], capture_output=True, text=True, check=False
    )


@pytest.mark.slow
def test_written_fingerprints_check_identical_and_a_changed_one_is_named(tmp_path: Path) -> None:
    saved = tmp_path / "before.json"
    assert run("-o", saved, "--only", "card,kernel-4-tokens").returncode == 0
    prints = json.loads(saved.read_text())
    assert list(prints) == ["card", "kernel-4-tokens"] and all(len(h) == 64 for h in prints.values())
    same = run("--check", saved, "--only", "card,kernel-4-tokens")
    assert (same.returncode, same.stdout.splitlines()[-1]) == (0, "2 of 2 identical")
    saved.write_text(json.dumps({**prints, "card": "0" * 64}))
    moved = run("--check", saved, "--only", "card,kernel-4-tokens")
    assert moved.returncode == 1
    assert moved.stdout.splitlines()[0].startswith("differs: card ") and "1 of 2 identical" in moved.stdout


def test_an_unknown_case_is_refused_with_the_cases_listed(tmp_path: Path) -> None:
    done = run("-o", tmp_path / "x.json", "--only", "card,nope")
    assert done.returncode == 2 and "--only: nope is not a case" in done.stderr and "sweep-10k" in done.stderr
    assert not (tmp_path / "x.json").exists()


def test_only_the_elapsed_figures_are_blanked() -> None:
    sys.path.insert(0, str(TOOL.parent))
    try:
        import snapshot
    finally:
        sys.path.remove(str(TOOL.parent))
    sweep = b"10,000 scenarios in 5 combination(s), 5 pass(es), 0.20 s (50,616 rows/s)"
    plan = b"Searched 20,748 configurations in 0.47 s, 27,462 skipped"
    model = b"decode step 54.88 ms, TTFT 0.47 s"
    assert snapshot.ELAPSED.sub(b"<elapsed>", sweep).endswith(b"pass(es), <elapsed>")
    assert (
        snapshot.ELAPSED.sub(b"<elapsed>", plan)
        == b"Searched 20,748 configurations in <elapsed>, 27,462 skipped"
    )
    assert snapshot.ELAPSED.sub(b"<elapsed>", model) == model
