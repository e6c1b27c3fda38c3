"""README's first lines and its "First five minutes" quote what the program prints today: the
install commands, then every number and quoted phrase of the prose after each command, found in
that command's output (the card of `report/terminal.py`, and `calibrate`'s tables of
`report/calibration_view.py`) (issue 13 item 12).

The commands run in process (`cli.main`) on a 200-column terminal.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from paths import REPO

DOCS = REPO / "docs"


# README: "First five minutes" quotes only what the code prints today (issue 13 item 12) ------

ROOT = DOCS.parent
_NUMBER = re.compile(r"\d[\d,]*\.\d+×?")  # a ratio keeps its ×
_QUOTE = re.compile(r'"([^"]+)"')
_MARKERS = re.compile(r" ?[●◐○]")


def _first_minutes() -> list[tuple[list[str], str]]:
    """(commands of one indented block, the prose after it) in README's "First five minutes"."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## First five minutes\n", 1)[1].split("\n## ", 1)[0]
    blocks: list[tuple[list[str], list[str]]] = []
    pending = ""
    for line in section.splitlines():
        if line.startswith("    ") and (pending or line.strip().startswith("deepep-calc")):
            if not pending and (not blocks or any(p.strip() for p in blocks[-1][1])):
                blocks.append(([], []))  # prose since the last command: a new block
            pending += line.strip().removesuffix("\\").strip() + " "
            if not line.rstrip().endswith("\\"):
                blocks[-1][0].append(pending.strip())
                pending = ""
        elif blocks:
            blocks[-1][1].append(line)
    return [(commands, " ".join(prose)) for commands, prose in blocks]


def _run(args: list[str]) -> str:
    """stdout of one `deepep-calc` command, in process, on a 200-column terminal."""
    import contextlib
    import io

    from deepep_calc import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            cli.main(args)
        except SystemExit as exc:
            assert not exc.code, f"deepep-calc {' '.join(args)} exited {exc.code}"
    return out.getvalue()


def test_readme_first_lines_are_the_install_commands() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[2] == "    python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/deepep-calc"
    assert lines[3] == "    python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/pytest"
    assert (ROOT / "docs" / "img" / "page.png").is_file()
    assert "](docs/img/page.png)" in "\n".join(lines)


def test_readme_first_five_minutes_quotes_the_current_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run every command of the section (the server aside) and find in its output each decimal
    number and each quoted phrase of the prose that follows it (markers aside)."""
    import glob
    import shlex

    monkeypatch.setenv("COLUMNS", "200")
    blocks = _first_minutes()
    assert [cmds[0].split()[:2] for cmds, _ in blocks][:2] == [["deepep-calc"], ["deepep-calc", "evaluate"]]
    assert any("calibrate" in c for cmds, _ in blocks for c in cmds)
    assert blocks[-1][0] == ["deepep-calc serve"]
    monkeypatch.chdir(tmp_path)  # mine.toml lands here; fixture globs are expanded from the root
    checked = 0
    for commands, prose in blocks[:-1]:
        output = ""
        for command in commands:
            args: list[str] = []
            for word in shlex.split(command)[1:]:
                if "*" in word:
                    found = sorted(glob.glob(str(ROOT / word)))
                    assert len(found) == 1, (word, found)
                    args.append(found[0])
                else:
                    args.append(word)
            output += _run(args)
        flat = " ".join(_MARKERS.sub("", output).split())
        for number in _NUMBER.findall(prose):
            assert number in output, (
                f"README quotes {number} after `{commands[0]}`; the code prints otherwise"
            )
            checked += 1
        for quote in _QUOTE.findall(prose):
            assert " ".join(_MARKERS.sub("", quote).split()) in flat, quote
            checked += 1
    assert checked >= 15
