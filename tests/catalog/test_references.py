"""`catalog/references.py`: the published serving references beyond the measured cells
(`data/references.toml`): single-scenario rows with their decode step, disaggregated runs, the
models only references use, and the sources deliberately not compared. Every row must name
rows of the other catalogs, and an A/B pair must differ only in its exchange."""

from __future__ import annotations

from collections import defaultdict

import pytest

from deepep_calc.base.records import RecordError
from deepep_calc.catalog.engines import load_engines
from deepep_calc.catalog.hardware import load_instances
from deepep_calc.catalog.kv_transports import engine_kv, load_kv_transports
from deepep_calc.catalog.model_catalog import load_models
from deepep_calc.catalog.references import (
    DisaggRef,
    ServingRef,
    load_disagg_refs,
    load_serving_refs,
    not_compared,
    reference_models,
)
from deepep_calc.catalog.transports import load_transports

SERVING = load_serving_refs()
DISAGG = load_disagg_refs()
MODELS = {**load_models(), **reference_models()}


def test_ids_are_the_keys_and_unique_across_both_kinds() -> None:
    assert all(k == r.id for k, r in SERVING.items()) and all(k == r.id for k, r in DISAGG.items())
    assert not set(SERVING) & set(DISAGG)


def test_serving_rows_name_catalog_rows_their_transport_reaches() -> None:
    instances, engines, transports = load_instances(), load_engines(), load_transports()
    for name, r in SERVING.items():
        assert r.model in MODELS and r.instance in instances and r.engine in engines, name
        assert r.instance in transports[r.transport].instances, name
        assert r.source and r.title, name


def test_a_pair_is_two_runs_of_one_workload_that_differ_in_the_exchange() -> None:
    pairs: dict[str, list[ServingRef]] = defaultdict(list)
    for r in SERVING.values():
        if r.pair:
            pairs[r.pair].append(r)
    assert pairs, "the catalog holds A/B pairs"
    for pair, (a, *rest) in pairs.items():
        assert len(rest) == 1, pair
        (b,) = rest
        # not concurrency: a pair offered at one request rate runs as many requests as its step
        # allows (Little's law, the rows' concurrency_note), so a faster arm holds fewer
        workload = ("model", "instance", "nodes", "engine", "cuda_graphs", "isl", "osl")
        assert all(getattr(a, f) == getattr(b, f) for f in workload), pair
        assert (a.arm, a.transport) != (b.arm, b.transport), pair


def test_disaggregated_rows_name_catalog_rows_and_a_kv_transport_the_engine_has() -> None:
    instances, transports, kv = load_instances(), load_transports(), load_kv_transports()
    for name, r in DISAGG.items():
        assert r.model in MODELS and r.instance in instances, name
        assert r.prefill_transport in transports and r.decode_transport in transports, name
        assert r.kv_transport in kv and r.instance in kv[r.kv_transport].instances, name
        assert r.kv_transport in engine_kv(r.engine).connectors, name
        assert r.group, name


def test_a_disaggregated_row_needs_something_measured() -> None:
    raw = next(iter(DISAGG.values())).as_dict()
    for figure in ("tpot_ms", "ttft_ms", "output_tok_s"):
        raw[figure] = None
    with pytest.raises(RecordError, match="needs a measured TPOT, TTFT or output tok/s"):
        DisaggRef.validate(raw)
    assert DisaggRef.validate({**raw, "ttft_ms": 100.0}).ttft_ms == 100.0  # one is enough


def test_a_serving_row_with_an_unknown_arm_or_use_is_refused() -> None:
    raw = next(iter(SERVING.values())).as_dict()
    for field, value in (("arm", "dense"), ("use", "maybe"), ("tpot_ms", 0.0)):
        with pytest.raises(RecordError) as info:
            ServingRef.validate({**raw, field: value})
        assert info.value.loc == field


def test_reference_models_are_valid_and_no_preset_s_namesake() -> None:
    """GPT-2 is the dense model of the engine-overhead rows: no MoE layer at all."""
    refs = reference_models()
    assert not set(refs) & set(load_models())
    assert refs["gpt2"].moe_layers == 0 and refs["gpt2"].dense_layers == refs["gpt2"].layers


def test_each_source_not_compared_says_why() -> None:
    rows = not_compared()
    assert rows and all(r.reference and r.why for r in rows)


def test_references_not_in_the_catalog_are_listed_with_why() -> None:
    listed = {n.reference.split("]")[0] + "]": n.why for n in not_compared()}
    assert "Hy4-preview is not in the model catalog" in listed["[HY4PD]"]
    assert "admission-limited" in listed["[IXK25]"]
