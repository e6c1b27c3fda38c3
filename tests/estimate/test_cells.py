"""estimate/cells.py, the measured-cell substitution: which cell a scenario is, and what it
replaces.

At a measured cell only what was observed is tagged measured (per-user rate, aggregate, TTFT and
ITL where the cell has them); whatever is computed from those figures (the tax, the ratios, a
step from a per-user rate) is derived, and the model's other figures stay modelled. A user's
config.json of a calibrated preset, and a profile calibrated on a config path, keep their cells;
the allgather run measures its arm whatever DeepEP's own knobs. The default scenario's three
cells printed exactly are `test_cells_default_scenario.py`'s.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from deepep_calc import Scenario, evaluate
from deepep_calc.base.quantity import Q, Tag
from deepep_calc.catalog.measured import Cell, LegMetrics, load_cells
from deepep_calc.estimate.cells import (
    _is_cell_scenario,
    _native_dtype,
    _same_batching,
    apply_cell,
    measured_cell_for,
)
from deepep_calc.fit.observations import cell_scenario
from deepep_calc.question.scenario import resolve
from paths import TESTS

from .shared import CALIBRATION_CELL as CAL
from .shared import QWEN_CONFIG


def _cell(**changes: object) -> Cell:
    """A user cell shaped like the calibration cell (TRT-LLM, 2x p5en, comms 8, conc 32)."""
    base = CAL.as_dict()
    base.update(changes)
    return Cell.validate(base)


def _with_cells(r: object, *cells: Cell) -> object:
    return dataclasses.replace(r, profile=SimpleNamespace(cells=lambda: list(cells)))


def test_calibration_scenario_tags_only_observations_measured() -> None:
    """Scenario() is cell trt-ab-k8-c32: per-user 19.62 / 27.57 and aggregate 545.04 / 794.56 tok/s
    were observed; the cell has no ITL, so the step is 1000 / per-user (derived); no TTFT was
    published, so TTFT stays modelled. Tax 1000/19.62 − 1000/27.57 = 14.697 ms, aggregate ratio
    545.04 / 794.56 = 0.68597, per-user ratio 19.62 / 27.57 = 0.71165: all derived."""
    r = evaluate(Scenario())
    d, a = r.arms["deepep"], r.arms["allgather"]
    for arm, pu, agg in ((d, 19.62, 545.04), (a, 27.57, 794.56)):
        assert arm.measured_cell == "trt-ab-k8-c32"
        assert arm.per_user_tok_s.tag is Tag.MEASURED and arm.per_user_tok_s.value == pu
        assert arm.aggregate_tok_s.tag is Tag.MEASURED and arm.aggregate_tok_s.value == agg
        assert arm.step_ms.tag is Tag.DERIVED and arm.step_ms.scalar == pytest.approx(1000 / pu)
        assert arm.ttft_ms.tag is not Tag.MEASURED
        assert arm.usd_per_mtok.tag is not Tag.MEASURED  # the price is assumed
        assert not arm.per_user_tok_s.banded and not arm.aggregate_tok_s.banded
        assert arm.ttft_ms.banded  # modelled figures carry their band
    assert r.tax_ms_per_token.tag is Tag.DERIVED
    assert r.tax_ms_per_token.scalar == pytest.approx(14.6974, abs=1e-3)
    assert r.ratio_deepep_vs_alternative.tag is Tag.DERIVED
    assert r.ratio_deepep_vs_alternative.scalar == pytest.approx(0.68597, abs=1e-5)
    assert r.ratio_per_user.tag is Tag.DERIVED
    assert r.ratio_per_user.scalar == pytest.approx(0.71165, abs=1e-5)
    rep = r.arms["replica"]
    assert rep.measured_cell is None
    assert all(q.tag is not Tag.MEASURED for q in (rep.per_user_tok_s, rep.aggregate_tok_s, rep.step_ms))
    assert r.arms["deepep"].model_aggregate_tok_s.tag is not Tag.MEASURED


def test_a_cell_with_itl_and_ttft_keeps_each_observation() -> None:
    """trt-ab-k1-c4 exported ITL 51.90 ms, per-user 19.268 tok/s and TTFT p50 210.9 ms for DeepEP
    (35.64 / 28.064 / 116.9 dense). The per-user rate is the export's, not 1000 / 51.90 = 19.2678:
    both are measured, and they are different numbers."""
    r = evaluate(Scenario(comms=1, concurrency=4))
    d, a = r.arms["deepep"], r.arms["allgather"]
    assert d.measured_cell == a.measured_cell == "trt-ab-k1-c4"
    assert (d.step_ms.value, d.per_user_tok_s.value, d.ttft_ms.value) == (51.90, 19.268, 210.9)
    assert (a.step_ms.value, a.per_user_tok_s.value, a.ttft_ms.value) == (35.64, 28.064, 116.9)
    for q in (d.step_ms, d.per_user_tok_s, d.ttft_ms, d.aggregate_tok_s, a.ttft_ms):
        assert q.tag is Tag.MEASURED
    assert r.tax_ms_per_token.scalar == pytest.approx(51.90 - 35.64)
    assert r.tax_ms_per_token.tag is Tag.DERIVED


MODEL = {
    "step": Q.assumed(40.0, "ms", "model"),
    "per_user": Q.assumed(25.0, "tok/s", "model"),
    "aggregate": Q.assumed(100.0, "tok/s", "model"),
    "ttft": Q.assumed(300.0, "ms", "model"),
}


def _applied(**metrics: float) -> tuple[Q, Q, Q, Q]:
    cell = _cell(deepep=LegMetrics(**metrics))
    return apply_cell(cell, "deepep", MODEL["step"], MODEL["per_user"], MODEL["aggregate"], MODEL["ttft"])


def test_apply_cell_with_itl_only_derives_the_rate() -> None:
    """ITL 50 ms and nothing else: step 50 ms (measured), per-user 1000 / 50 = 20 tok/s
    (derived), the model's aggregate and TTFT stay."""
    step, pu, agg, ttft = _applied(itl_ms=50.0)
    assert (step.value, step.tag, step.unit) == (50.0, Tag.MEASURED, "ms")
    assert (pu.value, pu.tag, pu.unit) == (20.0, Tag.DERIVED, "tok/s")
    assert agg is MODEL["aggregate"] and ttft is MODEL["ttft"]


def test_apply_cell_with_a_rate_only_derives_the_step() -> None:
    """Per-user 20 tok/s: the step is 1000 / 20 = 50 ms (derived), the rate measured."""
    step, pu, agg, ttft = _applied(per_user_tok_s=20.0, aggregate_tok_s=640.0, ttft_p50_ms=120.0)
    assert (step.value, step.tag, step.unit) == (50.0, Tag.DERIVED, "ms")
    assert (pu.value, pu.tag) == (20.0, Tag.MEASURED)
    assert (agg.value, agg.tag) == (640.0, Tag.MEASURED)
    assert (ttft.value, ttft.tag) == (120.0, Tag.MEASURED)


def test_apply_cell_with_both_keeps_both_and_without_either_keeps_the_model() -> None:
    step, pu, _, _ = _applied(itl_ms=50.0, per_user_tok_s=19.0)
    assert (step.value, pu.value) == (50.0, 19.0)
    assert step.tag is Tag.MEASURED and pu.tag is Tag.MEASURED
    step, pu, agg, ttft = _applied(aggregate_tok_s=640.0)
    assert step is MODEL["step"] and pu is MODEL["per_user"] and ttft is MODEL["ttft"]
    assert agg.value == 640.0


def test_measured_cell_for_each_arm() -> None:
    """DeepEP and allgather of the default scenario are its cell; TP and replica never are;
    another DeepEP transport at the same shape is not that cell."""
    r = resolve(Scenario())
    assert measured_cell_for(r, "deepep").id == "trt-ab-k8-c32"
    assert measured_cell_for(r, "allgather").id == "trt-ab-k8-c32"
    assert measured_cell_for(r, "tp") is None and measured_cell_for(r, "replica") is None
    assert measured_cell_for(resolve(Scenario(transport="efa-uccl")), "deepep") is None
    # the dense arm does not depend on the DeepEP transport: it is still the calibration cell
    assert measured_cell_for(resolve(Scenario(transport="efa-uccl")), "allgather").id == "trt-ab-k8-c32"


def test_cells_with_assumed_comms_or_outside_the_roles_are_never_used() -> None:
    """trt-shim-c32 matches Scenario() but its EP_NUM_COMMS was not stated: never chosen (the
    calibration cell is). A user cell of role reference-only is skipped; an allgather-less cell
    gives the allgather arm nothing."""
    r = resolve(Scenario())
    assert _is_cell_scenario(r, load_cells()["trt-shim-c32"])
    only_ref = _with_cells(
        resolve(Scenario(concurrency=24)), _cell(id="u-ref", role="reference-only", concurrency=24)
    )
    assert measured_cell_for(only_ref, "deepep") is None
    assumed = _with_cells(
        resolve(Scenario(concurrency=24)), _cell(id="u-k", comms_assumed=True, concurrency=24)
    )
    assert measured_cell_for(assumed, "deepep") is None
    deepep_only = _with_cells(
        resolve(Scenario(concurrency=24)), _cell(id="u-d", concurrency=24, allgather=None)
    )
    assert measured_cell_for(deepep_only, "deepep").id == "u-d"
    assert measured_cell_for(deepep_only, "allgather") is None
    both = _with_cells(
        resolve(Scenario(concurrency=24)),
        _cell(id="u-d", concurrency=24, allgather=None),
        _cell(id="u-a", concurrency=24),
    )
    assert measured_cell_for(both, "allgather").id == "u-a"  # a cell without the arm is skipped, not the end


def test_best_evidenced_cell_wins() -> None:
    """Role first (calibration, then anchor, then cross-check), then a stated shape over an
    assumed one; among equals the first listed (user cells before the catalog's)."""
    r = resolve(Scenario(concurrency=24))
    cross = _cell(id="u-cross", role="cross-check", concurrency=24)
    anchor = _cell(id="u-anchor", role="anchor", concurrency=24)
    cal_assumed = _cell(id="u-cal-assumed", role="calibration", concurrency=24, shape_assumed=True)
    cal = _cell(id="u-cal", role="calibration", concurrency=24)
    assert measured_cell_for(_with_cells(r, cross, anchor), "deepep").id == "u-anchor"
    assert measured_cell_for(_with_cells(r, anchor, cross), "deepep").id == "u-anchor"
    assert measured_cell_for(_with_cells(r, cross, cal_assumed, anchor), "deepep").id == "u-cal-assumed"
    assert measured_cell_for(_with_cells(r, cal_assumed, cal), "deepep").id == "u-cal"
    assert measured_cell_for(_with_cells(r, cal, cal_assumed), "deepep").id == "u-cal"
    twin = _cell(id="u-cal-2", role="calibration", concurrency=24)
    assert measured_cell_for(_with_cells(r, cal, twin), "deepep").id == "u-cal"
    other = _cell(id="u-other", transport="efa-uccl", concurrency=24)
    assert measured_cell_for(_with_cells(r, other), "deepep") is None
    assert measured_cell_for(_with_cells(r, other, cal), "deepep").id == "u-cal"
    # a graph-mode user cell is not the eager scenario
    assert not _is_cell_scenario(resolve(Scenario()), _cell(cuda_graphs=True))


@pytest.mark.parametrize(
    "change",
    [
        {"concurrency": 33},
        {"concurrency": 31},
        {"isl": 121},
        {"isl": 119},
        {"osl": 127},
        {"osl": 129},
        {"nodes": 4},
        {"nodes": 1},
        {"comms": 4},
        {"comms": 16},
        {"engine": "vllm"},
        {"engine": "sglang"},
        {"instance": "p5"},
        {"instance": "p6-b200"},
        {"model": "qwen3-30b-a3b"},
        {"model": "qwen3-next-80b-a3b"},
        {"gpus_per_node": 4},
        {"cuda_graphs": True},
        {"max_qps": 4},
        {"max_qps": 1},
        {"experts": 64},
        {"topk": 4},
        {"hidden": 1024},
        {"moe_layers": 24},
        {"kv_dtype": "fp8"},
        {"weight_dtype": "bf16"},
    ],
)
def test_every_field_of_the_scenario_must_match(change: dict) -> None:
    """The calibration cell measures the default scenario and nothing next to it; only the
    allgather arm, which never reads EP_NUM_COMMS or EP_EFA_MAX_QPS, keeps it across those."""
    assert measured_cell_for(resolve(Scenario()), "deepep") is CAL
    r = resolve(Scenario(**change))
    dee = measured_cell_for(r, "deepep")
    assert dee is None or dee.id != CAL.id  # another run may measure it (vLLM at conc 32 does)
    alt = measured_cell_for(r, "allgather")
    if set(change) <= {"comms", "max_qps"}:
        assert alt is CAL
    else:
        assert alt is None or alt.id != CAL.id


def test_model_name_is_matched_without_case_or_spaces_and_native_dtype_is_the_cell() -> None:
    assert _is_cell_scenario(resolve(Scenario(model="Qwen3-30B-A3B-FP8")), CAL)
    assert _is_cell_scenario(resolve(Scenario(weight_dtype="fp8")), CAL)
    assert not _is_cell_scenario(
        resolve(Scenario(gpus_per_node=8, instance="p5en", nodes=2, comms=8, isl=2048)), CAL
    )


def test_native_dtype() -> None:
    """No override: native. The checkpoint's own dtype (any case, spaces): native. Another dtype:
    not. A model with its own expert dtype (gpt-oss MXFP4) is never native under an override."""
    assert _native_dtype(None, "qwen3-30b-a3b-fp8")
    assert _native_dtype("fp8", "qwen3-30b-a3b-fp8")
    assert _native_dtype(" FP8 ", "qwen3-30b-a3b-fp8")
    assert not _native_dtype("bf16", "qwen3-30b-a3b-fp8")
    assert not _native_dtype("bf16", "gpt-oss-120b")
    assert _native_dtype(None, "gpt-oss-120b")


def test_same_batching() -> None:
    """The cell's batch limit 16 per rank and the scenario's: equal, or neither binds. At
    concurrency 32 over 2 × 8 ranks each rank holds ceil(32 / 16) = 2: a scenario limit of 2
    or more behaves like the cell's 16, a limit of 1 does not. At 33 clients a rank holds 3."""
    r = resolve(Scenario())
    assert _same_batching(r, CAL)
    assert _same_batching(dataclasses.replace(r, max_batch=2), CAL)
    assert not _same_batching(dataclasses.replace(r, max_batch=1), CAL)
    assert _same_batching(dataclasses.replace(r, max_batch=1), _cell(max_batch=None))
    assert not _same_batching(dataclasses.replace(r, max_batch=2), _cell(concurrency=33))
    assert _same_batching(dataclasses.replace(r, max_batch=3), _cell(concurrency=33))
    assert _same_batching(dataclasses.replace(r, max_batch=16), _cell(max_batch=2))
    assert not _same_batching(dataclasses.replace(r, max_batch=16), _cell(max_batch=2, concurrency=48))
    assert _is_cell_scenario(resolve(Scenario(max_batch=2)), CAL)
    assert not _is_cell_scenario(resolve(Scenario(max_batch=1)), CAL)


OWN = [cell_scenario(cell) for cell in load_cells().values()]  # what each cell ran (ISL, OSL >= 1)
NEAR = [
    n for s in OWN for n in (s, s.copy(concurrency=s.concurrency + 1), s.copy(isl=s.isl + 1), s.copy(comms=3))
]


@pytest.mark.parametrize("scenario", NEAR, ids=lambda s: f"{s.engine}-c{s.concurrency}-isl{s.isl}-k{s.comms}")
def test_the_shape_index_picks_what_a_scan_of_every_cell_picks(scenario: Scenario, monkeypatch) -> None:
    """`measured_cell_for` and `deepep_neighbour_cell` look cells up by (concurrency, ISL, OSL,
    nodes); scanning every catalog cell in catalog order (the index bypassed) picks the same,
    for each cell's own scenario and for neighbours one indexed field or EP_NUM_COMMS away."""
    from deepep_calc.estimate import cells as ev

    r = resolve(scenario)
    indexed = [measured_cell_for(r, arm) for arm in ("deepep", "allgather")] + [ev.deepep_neighbour_cell(r)]
    monkeypatch.setattr(ev, "_catalog_candidates", lambda r: tuple(load_cells().values()))
    scanned = [measured_cell_for(r, arm) for arm in ("deepep", "allgather")] + [ev.deepep_neighbour_cell(r)]
    assert [c and c.id for c in indexed] == [c and c.id for c in scanned]


def test_the_index_comparison_is_not_vacuous() -> None:
    """Most cells' own scenarios find a measured cell through the index (so the comparison above
    compares cells, not only Nones)."""
    found = [s for s in OWN if measured_cell_for(resolve(s), "deepep") is not None]
    assert len(OWN) >= 8 and len(found) >= len(OWN) // 2


# A config.json, a profile's own cells, DeepEP-only knobs ----------------------------------------


def test_a_config_json_of_the_calibrated_preset_gets_its_measured_cells() -> None:
    mine = evaluate(Scenario(model=str(QWEN_CONFIG)))
    preset = evaluate(Scenario())
    for name in ("deepep", "allgather"):
        assert mine.arms[name].measured_cell == preset.arms[name].measured_cell == "trt-ab-k8-c32"
        assert mine.arms[name].aggregate_tok_s.value == preset.arms[name].aggregate_tok_s.value
    assert any("architecturally the preset qwen3-30b-a3b-fp8" in line for line in mine.verdict.reasons)


def test_a_config_json_that_differs_says_why_it_gets_no_cells(tmp_path: Path) -> None:
    doc = json.loads(QWEN_CONFIG.read_text("utf-8"))
    doc["moe_intermediate_size"] = doc["moe_intermediate_size"] * 2
    path = tmp_path / "qwen3-30b-a3b-fp8" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc), "utf-8")
    result = evaluate(Scenario(model=str(path)))
    assert not any(a.measured_cell for a in result.arms.values())
    assert any("differs from that preset in moe_intermediate" in line for line in result.verdict.reasons)
    dtype = evaluate(Scenario(model=str(QWEN_CONFIG), weight_dtype="bf16"))
    assert not any(a.measured_cell for a in dtype.arms.values())


def test_a_profile_calibrated_on_a_config_path_still_replays_its_cells(tmp_path: Path) -> None:
    """Cells of a user's profile name the model as calibrated (here a config path): they match."""
    from deepep_calc import cli

    real = TESTS / "fixtures" / "aiperf"
    prefix = "trtllm-0.21_qwen3-30b-a3b-fp8_ep16_2xp5en"
    out = tmp_path / "p.toml"
    cli.main(
        [
            "calibrate",
            "--dense",
            str(real / f"{prefix}_dense-allgather_c4_isl120.json"),
            "--deepep",
            str(real / f"{prefix}_deepep-epnc1_c4_isl120.json"),
            "--model",
            str(QWEN_CONFIG),
            "-o",
            str(out),
            "--json",
        ]
    )
    result = evaluate(
        Scenario(model=str(QWEN_CONFIG), calibration=str(out), comms=1, concurrency=4, isl=120, osl=128)
    )
    assert result.arms["deepep"].measured_cell == "your-c4-k1"  # the profile's own cell, replayed


def test_the_allgather_measurement_holds_across_deepep_only_knobs() -> None:
    """EP_NUM_COMMS and EP_EFA_MAX_QPS are DeepEP's knobs: the allgather run still measures its arm."""
    base = evaluate(Scenario())
    for knob in ({"max_qps": 1}, {"max_qps": 6}, {"comms": 4}):
        r = evaluate(Scenario(**knob))
        assert r.arms["allgather"].measured_cell == base.arms["allgather"].measured_cell == "trt-ab-k8-c32"
        assert r.arms["allgather"].aggregate_tok_s.tag == Tag.MEASURED
        assert r.arms["deepep"].measured_cell is None  # DeepEP's own figure is modelled off the run
        assert r.verdict.compared.basis == "model"  # so the rule compares model with model
    k1 = evaluate(Scenario(comms=1, concurrency=4))
    assert k1.arms["allgather"].measured_cell == "trt-ab-k1-c4"  # the exact pair comes first


def test_the_tax_at_the_default_scenario_is_derived_from_the_cells() -> None:
    r = evaluate(Scenario())
    assert r.tax_ms_per_token.scalar == pytest.approx(1000 / 19.62 - 1000 / 27.57)
