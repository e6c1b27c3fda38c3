"""`report/calibration_view.py`: what `calibrate` prints: the files it read and passed over, then
the profile's measured, derived and fitted numbers and its residuals, each row with its tag.

The summary is a small dict of `calibrate/summary.py`'s shape, built by hand, so each row's
wording is checked on figures chosen here; names read from files may hold control characters,
which must reach the terminal escaped. One real pair (TRT-LLM at 4 clients) is drawn through
`calibrate` with its figures and tag symbols; the README's calibration (real AIPerf exports
through the CLI) is `test_terminal_readme.py`'s.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from calibrate.user_runs import TRT_DEEPEP, TRT_DENSE, run
from deepep_calc.report import calibration_view


def q(
    value: float | None, unit: str, tag: str = "measured", source: str = "run: file a.json"
) -> dict[str, Any]:
    return {"value": value, "unit": unit, "tag": tag, "source": source}


def test_every_string_of_the_summary_is_escaped_for_the_terminal() -> None:
    """ESC (a screen clear) and a newline in a name read from a file print as visible text."""
    raw = {"a": ["x\x1b[2J", {"b": "ok\nthen"}], "n": 3, "none": None}
    assert calibration_view._safe(raw) == {"a": ["x\\x1b[2J", {"b": "ok\\nthen"}], "n": 3, "none": None}


def test_a_value_with_its_unit_or_a_dash() -> None:
    assert calibration_view._num(q(1234.5678, "ms")) == "1,234.57 ms"
    assert calibration_view._num(q(19.34, "tok/s"), 1) == "19.3 tok/s"
    assert calibration_view._num(None) == "—" and calibration_view._num(q(None, "ms")) == "—"


def test_a_row_takes_the_weakest_tag_of_its_numbers() -> None:
    assert calibration_view._tag(q(1, "ms"), q(2, "ms", "assumed"), None).plain == "○"
    assert calibration_view._tag(q(1, "ms"), q(2, "ms", "derived")).plain == "◐"
    assert calibration_view._tag(None).plain == ""


PROFILE = SimpleNamespace(
    scenario=SimpleNamespace(
        model="qwen3-30b-a3b-fp8",
        nodes=2,
        instance="p5en",
        engine="trtllm",
        cuda_graphs=False,
        transport="efa-proxy",
        isl=120,
        osl=128,
    )
)


def summary(**changes: Any) -> dict[str, Any]:
    pair = {
        "cell": "c4-k1",
        "tax_ms": q(16.27, "ms/token", "derived"),
        "tax_spread_ms": q(0.123, "ms/token", "derived"),
        "per_user_ratio": q(0.69, "x", "derived"),
        "aggregate_ratio": q(0.604, "x", "derived"),
        "steady_aggregate_ratio": None,  # no cold start in these runs
        "ttft_ratio": None,
    }
    measured = {
        "arm": "DeepEP",
        "concurrency": 4,
        "comms": 1,
        "per_user_tok_s": q(19.3, "tok/s"),
        "itl_ms": q(51.8, "ms"),
        "ttft_p50_ms": q(120.04, "ms"),
        "aggregate_tok_s": q(70.12, "tok/s"),
    }
    out = {
        "profile": "mine.toml",
        "measured": [measured, {**measured, "arm": "dense", "comms": None}],
        "derived": {"pairs": [pair], "multicomm": []},
        "fitted": {
            "launch_us": {**q(12.5, "us", "derived", "fit: eager launch of your runs"), "builtin": 11.0}
        },
        "kernel": None,
        "residuals": [
            {
                "cell": "c4-k1",
                "arm": "deepep",
                "quantity": "per-user",
                "measured": 19.3,
                "model": 19.5,
                "residual": 0.2,
            }
        ],
        "warnings": [],
    }
    return out | changes


def cells(text: str) -> list[list[str]]:
    """The body rows of every table printed, cell by cell."""
    return [[c.strip() for c in line.split("│")[1:-1]] for line in text.splitlines() if line.startswith("│")]


def printed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, s: dict, readable: bool = True
) -> str:
    monkeypatch.setenv("COLUMNS", "160")
    calibration_view.print_summary(PROFILE, s, readable)
    return capsys.readouterr().out


def test_the_summary_names_the_profile_and_every_table(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = printed(capsys, monkeypatch, summary())
    assert text.splitlines()[0] == (
        "Calibration profile mine.toml: qwen3-30b-a3b-fp8 on 2x p5en, trtllm eager, "
        "DeepEP over efa-proxy, ISL 120 / OSL 128"
    )
    rows = cells(text)
    assert ["DeepEP c4 k1", "19.30 tok/s", "51.80 ms", "120.0 ms", "70.1 tok/s", "●"] in rows
    assert ["dense c4", "19.30 tok/s", "51.80 ms", "120.0 ms", "70.1 tok/s", "●"] in rows  # no comms
    assert ["c4-k1", "tax per token", "16.27 ms/token", "0.123 ms/token", "◐"] in rows
    assert ["c4-k1", "TTFT p50 ratio", "—", "", ""] in rows  # a ratio the runs lack: a dash
    assert not any("steady-state" in cell for row in rows for cell in row)  # no cold start: no row
    assert ["launch_us", "12.500 us", "11.000", "◐"] in rows
    assert "  launch_us: eager launch of your runs" in text.splitlines()  # the source, less its prefix
    assert ["c4-k1", "deepep", "per-user", "19.30", "19.50", "+0.200"] in rows
    assert "Kernel log" not in text and "Warnings" not in text
    assert text.rstrip().endswith("Wrote mine.toml; use it with --calibration mine.toml")


def test_a_cold_start_a_kernel_log_and_warnings_get_their_rows(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s = summary()
    s["derived"]["pairs"][0]["steady_aggregate_ratio"] = q(0.675, "x", "derived")
    s["derived"]["multicomm"] = [
        {
            "concurrency": 4,
            "comms_low": 1,
            "comms_high": 8,
            **{k: q(1.2, "x", "derived") for k in ("aggregate_ratio", "per_user_ratio", "itl_ratio")},
        }
    ]
    beta = {**q(0.021, "us", "derived", "fit: the log's medians"), "builtin": 0.03}
    s["kernel"] = {
        "transport": "efa-proxy",
        "instance": "p5en",
        "ep": 16,
        "tokens": 128,
        "dispatch_p50_us": q(380.0, "us"),
        "combine_p50_us": q(360.0, "us"),
        "dispatch_beta_us": beta,
        "combine_beta_us": beta,
    }
    s["warnings"] = ["both runs waited for a cold start"]
    text = printed(capsys, monkeypatch, s, readable=False)
    assert "steady-state aggregate ratio" in text and "0.675 x" in text
    assert "EP_NUM_COMMS aggregate gain" in text and "c4 k8/k1" in text
    assert "cost per message, dispatch (efa-proxy)" in text
    assert "Kernel log, EP16 x 128 tokens/rank on p5en: dispatch 380.0 us, combine 360.0 us ●" in text
    assert "  • both runs waited for a cold start" in text.splitlines()
    assert "Wrote the profile to mine.toml (not a file --calibration can read)" in text


def test_a_control_character_in_a_name_never_reaches_the_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = printed(capsys, monkeypatch, summary(profile="evil\x1b]52;c;x\x07.toml"))
    assert "\x1b" not in text and "\x07" not in text
    assert "evil\\x1b]52;c;x\\x07.toml" in text


def test_the_files_read_and_the_files_passed_over(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DeepEP run shows its EP_NUM_COMMS, a dense run none; a skipped file says why."""
    monkeypatch.setenv("COLUMNS", "160")

    def used(leg: str, comms: int | None, note: str = "") -> SimpleNamespace:
        run = SimpleNamespace(comms=comms, concurrency=4, export_format="json")
        return SimpleNamespace(path=Path(f"/runs/{leg}.json"), leg=leg, run=run, note=note)

    found = SimpleNamespace(
        used=[used("deepep", 8, "ISL read from the inputs"), used("allgather", 8)],
        skipped=[SimpleNamespace(path=Path("/runs/other.csv"), reason="no per-user figure")],
    )
    calibration_view.print_files(found)
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith("Runs read (2)")
    rows = cells(text)
    assert ["/runs/deepep.json", "DeepEP", "4", "8", "json"] in rows
    assert ["/runs/allgather.json", "dense", "4", "", "json"] in rows
    assert "  note: ISL read from the inputs" in lines
    assert any(line.startswith("Skipped (1)") for line in lines)
    assert ["/runs/other.csv", "no per-user figure"] in rows


def test_trt_pair_table_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(
        capsys, "calibrate", "--dense", TRT_DENSE, "--deepep", TRT_DEEPEP, "-o", tmp_path / "p.toml"
    )
    assert code == 0, err
    for needle in (
        "Measured: your runs",
        "Fitted constants",
        "Residuals",
        "19.27 tok/s",
        "51.90 ms",
        "16.27 ms",
    ):
        assert needle in out
    assert re.search(r"proxy_lane_us .* ○", out)  # assumed
    assert re.search(r"DeepEP c4 k1 .* ●", out)  # measured
    assert "● measured  ◐ derived  ○ assumed" in out
