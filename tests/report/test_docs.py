"""Generated documents must match the data they are generated from."""

import re
from pathlib import Path

import pytest

from deepep_calc.report.measured_md import render_measured_markdown
from paths import REPO

DOCS = REPO / "docs"


def test_measured_data_doc_matches_catalog() -> None:
    assert (DOCS / "MEASURED-DATA.md").read_text(encoding="utf-8") == render_measured_markdown(), (
        "docs/MEASURED-DATA.md drifted: python -m deepep_calc.report.measured_md > docs/MEASURED-DATA.md"
    )


def test_measured_doc_lists_every_headline_number() -> None:
    text = (DOCS / "MEASURED-DATA.md").read_text(encoding="utf-8")
    for number in ("19.62", "27.57", "545.04", "794.56", "284.22", "424.67", "64.236", "106.358"):
        assert number in text


@pytest.mark.slow
def test_model_doc_generated_sections_are_current() -> None:
    from deepep_calc.report.model_doc import render

    text = (DOCS / "model.md").read_text(encoding="utf-8")
    assert "<!-- BEGIN GENERATED: validation -->" in text
    assert render(text) == text, "docs/model.md drifted: python -m deepep_calc.report.model_doc docs/model.md"


def _close(a: object, b: object, path: str = "") -> None:
    """Equal TOML documents, floats to 1e-6 relative (a refit on another BLAS may differ in the
    last digits; anything larger means the references or the equations changed)."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-6, abs=1e-9), path
    else:
        assert a == b, path


@pytest.mark.slow
def test_shipped_fit_is_what_a_fresh_fit_gives() -> None:
    """catalog/data/fitted.toml is the fit of today's catalogs: regenerate it with
    `python tools/regenerate.py fitted` whenever a reference or an equation changes."""
    import tomllib

    from deepep_calc.accuracy.ship_fit import fresh_text
    from deepep_calc.fit.shipped import shipped_text

    shipped = shipped_text()
    assert shipped is not None, "catalog/data/fitted.toml is missing"
    _close(tomllib.loads(fresh_text()), tomllib.loads(shipped))


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
