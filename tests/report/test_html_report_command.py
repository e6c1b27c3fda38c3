"""The `deepep-calc report` command around the HTML and Markdown reports: both files written,
no temporary file left, and a bad flag or a missing folder refused before anything is written.

These pin `cli/commands/web.py: report_cmd` (and `io/safe_write.py`'s rules it applies) more
than `report/html.py`: they wait to move to tests/cli/.
"""

from __future__ import annotations

import os

import pytest

from deepep_calc.cli import main


def test_cli_writes_both_files(tmp_path, capsys):
    html_path, md_path = tmp_path / "r.html", tmp_path / "r.md"
    main(["report", "--html", str(html_path), "--md", str(md_path), "--model", "kimi-k2"])
    assert html_path.stat().st_size > 1_000_000
    assert "◆ Use EP for CAPACITY: allgather" in md_path.read_text()  # title names the arm run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "r.md"]  # no temp files left
    out = capsys.readouterr().out
    assert out.count("deepep-calc: wrote") == 2
    assert oct(html_path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_bad_input_writes_nothing(tmp_path, capsys):
    target = tmp_path / "r.html"
    target.write_text("previous report")
    with pytest.raises(SystemExit) as info:
        main(["report", "--html", str(target), "--md", str(tmp_path / "r.md"), "--concurrency", "-1"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "deepep-calc: error: --concurrency: -1 is not allowed; expected a whole number greater than 0"
    ]
    assert target.read_text() == "previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]


def test_missing_folder_and_missing_target_are_one_line_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["report", "--html", str(tmp_path / "no" / "such" / "r.html")])
    assert info.value.code == 2
    assert "does not exist" in capsys.readouterr().err
    main(["report"])  # no file named: Markdown to stdout, nothing written
    assert capsys.readouterr().out.startswith("# deepep-calc report")
