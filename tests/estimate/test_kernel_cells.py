"""One measured kernel cell, one figure per run, on every face (issue #26 item 5).

efa-proxy on p5en at EP16 and 128 tokens per rank was published four times: 443.6 µs (the gate
run: 4 SMs, 6 QPs), 623 (PR #612: 3 SMs, 12 QPs), 740 (QP cap 2) and 935 (a campaign at 17
QPs). Each face shows a run with its setting, and a run's figure is the same wherever it is.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from cli_runner import run_cli
from deepep_calc.catalog.transports import load_transports
from web_fixtures import app, client  # noqa: F401  (fixtures)

PROXY = load_transports()["efa-proxy"]
CELL = [r for r in PROXY.references() if r.in_scope and r.same_point(PROXY.reference)]


def test_the_cell_has_several_runs_each_with_its_setting() -> None:
    assert sorted(r.total for r in CELL) == [443.6, 623.0, 740.0, 935.0]
    assert len({r.setting for r in CELL}) == len(CELL) and all(r.setting for r in CELL)


def test_every_face_shows_each_run_with_its_setting(capsys: Any, client: Any) -> None:  # noqa: F811
    code, out, _ = run_cli(capsys, "transports", "--json")
    assert code == 0
    row = next(r for r in json.loads(out) if r["name"] == "efa-proxy")
    faces = {(row["reference"]["setting"], row["reference"]["total_us"])}
    faces |= {(o["setting"], o["total_us"]) for o in row["other_runs_of_the_reference_cell"]}
    code, out, _ = run_cli(capsys, "kernel", "--max-qps", "6", "--json")
    assert code == 0
    kernel = json.loads(out)
    assert kernel["dispatch_us"]["tag"] == "measured"  # the gate run answers 6 QPs
    assert kernel["dispatch_us"]["value"] + kernel["combine_us"]["value"] == PROXY.reference.total
    listed = {(m["setting"], m["total_us"]) for m in kernel["measurements"]}
    code, out, _ = run_cli(capsys, "validate", "--json")
    assert code == 0
    rows = [
        r for r in json.loads(out)["rows"] if r["kind"] == "kernel" and r["reference"].startswith("efa-proxy")
    ]
    validated = {
        (re.search(r"\((.*)\)$", r["reference"]).group(1), r["measured"])  # type: ignore[union-attr]
        for r in rows
        if "p5en EP16 128 tok (" in r["reference"]
    }
    expected = {(r.setting, r.total) for r in CELL}
    assert faces == listed == validated == expected
    api = client.post("/api/kernel", json={"qps": 2}).json()
    assert {(m["setting"], m["total_us"]) for m in api["measurements"]} == expected
    page = html.unescape(client.get("/mechanism").text)
    campaign = next(r for r in CELL if "campaign" in r.setting)
    assert campaign.setting in page  # the campaign's 935 µs is labelled as the campaign's


def test_the_terminal_marks_the_run_it_shows(capsys: Any) -> None:
    code, out, _ = run_cli(capsys, "kernel")
    assert code == 0
    flat = " ".join(out.split())
    assert "▸ 740.0 µs (QP cap 2, cached handle, p50)" in flat
    assert "443.6 µs (gate run 2026-07-06: 4 SMs, 6 QPs, p50)" in flat
    code, out, _ = run_cli(capsys, "kernel", "--max-qps", "3")
    assert code == 0
    assert "figures above are the model's" in " ".join(out.split())
