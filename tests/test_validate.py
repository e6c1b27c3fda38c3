"""The accuracy report: every reference present, primaries exact, MAPEs finite, A/B verdicts scored."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from deepep_calc.catalog.engines import load_engines
from deepep_calc.catalog.measured import load_cells
from deepep_calc.catalog.transports import load_transports
from deepep_calc.cli import main
from deepep_calc.evaluate import compute
from deepep_calc.physics.fit import cell_scenario
from deepep_calc.quantity import Tag
from deepep_calc.scenario import resolve
from deepep_calc.validate import ABRow, Report, render_markdown, validate


@pytest.fixture(scope="module")
def report() -> Report:
    return validate()


def _metrics(ref: object) -> list[tuple[str, float]]:
    if ref.dispatch_us is not None and ref.combine_us is not None:  # type: ignore[attr-defined]
        return [("dispatch_us", ref.dispatch_us), ("combine_us", ref.combine_us)]  # type: ignore[attr-defined]
    return [("total_us", ref.total)]  # type: ignore[attr-defined]


def test_every_kernel_reference_appears(report: Report) -> None:
    kernel_rows = [r for r in report.rows if r.group.startswith("kernel")]
    expected = 0
    for t in load_transports().values():
        for group, refs in (("kernel primary", [t.reference]), ("kernel cross-check", t.cross_check)):
            for ref in refs:
                for metric, value in _metrics(ref):
                    expected += 1
                    match = [
                        r
                        for r in kernel_rows
                        if r.group == group
                        and r.reference
                        == f"{t.name} @ {ref.instance} EP{ref.ep}"
                        + (f" prefill {ref.tokens} tok" if ref.prefill else "")
                        + (f" {ref.dispatch_dtype} dispatch" if ref.dispatch_dtype != "fp8" else "")
                        and r.metric == metric
                        and r.measured == value
                        and r.source == ref.source
                    ]
                    assert len(match) == 1, (t.name, ref.source, metric)
    assert len(kernel_rows) == expected


def test_primary_references_reproduce(report: Report) -> None:
    primaries = [r for r in report.rows if r.group == "kernel primary"]
    assert len(primaries) >= len(load_transports())
    for r in primaries:
        assert abs(r.error) < 0.15  # the brief's bound ...
        assert abs(r.error) < 1e-9  # ... and in fact exact: alpha is solved from these
        assert r.fitted


def test_group_mapes_are_finite(report: Report) -> None:
    groups = report.groups()
    for name in ("kernel primary", "kernel cross-check", "TTFT", "aggregate", "ITL", "A/B ratio"):
        assert name in groups
        assert math.isfinite(groups[name]["mape"])
    engines = {c.engine for c in load_cells().values()}
    for engine in engines:
        g = groups[f"per-user ({engine})"]
        assert math.isfinite(g["mape"]) and g["rows"] > 0
    assert groups["kernel primary"]["held_out_rows"] == 0
    assert groups["kernel cross-check"]["held_out_mape"] > 0  # the spread is real and reported


def test_serving_rows_are_the_model_not_the_measurement(report: Report) -> None:
    cell = load_cells()["trt-ab-k8-c32"]
    row = next(
        r for r in report.rows if r.reference == "trt-ab-k8-c32 efa-proxy" and r.metric == "aggregate_tok_s"
    )
    model = compute(resolve(cell_scenario(cell, "trtllm")).vary(concurrency=[32])).arms["deepep"]
    assert row.predicted.scalar == pytest.approx(float(np.asarray(model.aggregate_tok_s.value)[0]))
    assert row.predicted.scalar != pytest.approx(545.04, rel=1e-3)  # not the substituted measurement
    assert row.measured == 545.04
    assert row.predicted.tag is not Tag.MEASURED


def test_ab_cells_and_verdict_agreement(report: Report) -> None:
    ab_cells = {
        c.id
        for c in load_cells().values()
        if c.role != "reference-only"
        and c.isl > 0
        and c.deepep.aggregate_tok_s
        and ((c.allgather and c.allgather.aggregate_tok_s) or (c.versus and c.versus.aggregate_tok_s))
    }
    assert {a.cell for a in report.ab} == ab_cells
    for a in report.ab:
        assert a.measured_call in (*a.labels, "tie")
        assert a.predicted_call in (*a.labels, "tie")
        assert a.agree == ((a.measured_call == a.labels[0]) == (a.predicted_call == a.labels[0]))
    va = report.verdict_agreement()
    assert va["cells"] == len(ab_cells) and 0 <= va["agree"] <= va["cells"]
    headline = next(a for a in report.ab if a.cell == "trt-ab-k8-c32")
    assert headline.measured_call == "dense" and headline.agree


def test_call_uses_the_noise_band() -> None:
    labels = ("deepep", "dense")
    assert ABRow.call(1.06, labels) == "deepep"
    assert ABRow.call(0.94, labels) == "dense"
    assert ABRow.call(0.97, labels) == "tie"


def test_engine_fit_residuals_for_every_engine(report: Report) -> None:
    assert [f.engine for f in report.fits] == list(load_engines())
    for f in report.fits:
        assert len(f.residuals_us) == len(f.anchors)


def test_markdown_is_deterministic(report: Report) -> None:
    text = render_markdown(report)
    assert text == render_markdown(validate())
    assert "### Accuracy by group" in text and "| kernel primary |" in text
    assert "Verdict agreement on A/B cells" in text


def test_cli_validate_json_and_md(capsys: pytest.CaptureFixture[str]) -> None:
    main(["validate", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert {"groups", "rows", "ab", "engine_fits", "verdict_agreement", "not_compared"} <= set(out)
    assert all(set(r["predicted"]) == {"value", "unit", "tag", "source"} for r in out["rows"])
    main(["validate", "--md"])
    assert capsys.readouterr().out == render_markdown()
