"""A verdict oracle: the rules of docs/model.md §8, written again from the JSON, against the code.

For random valid scenarios (steered into each verdict region: dense, capacity, DeepEP) every
verdict must satisfy, with nothing but the document `evaluate --json` prints:

* the recommended arm is feasible, or the verdict says nothing fits and recommends none;
* if any arm meets the targets, the recommended one does;
* the headline's ratio and the tax are computed from figures shown in the same document, both
  arms on the same footing (measured on both, or modelled on both), and the headline's ratio is
  the one of the comparison that decided (DeepEP against the replicas when they won);
* code and recommended arm are what the §8 rules give, recomputed here independently;
* no headline has a negative "more", and no ratio above 1 stands beside a plain tax.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, assume, event, find, given, settings
from hypothesis import strategies as st

from deepep_calc import Scenario, evaluate
from deepep_calc.base.errors import CalcError
from deepep_calc.catalog.constants import const
from deepep_calc.catalog.hardware import load_instances
from deepep_calc.catalog.model_catalog import load_models
from deepep_calc.catalog.transports import load_transports
from paths import REPO

from .test_invariants_hypothesis import scenarios as any_scenarios

DOC = REPO / "docs" / "model.md"
NOISE = float(const("noise_band").value)
MODELS = load_models()
ON = {i: sorted(t for t, spec in load_transports().items() if i in spec.instances) for i in load_instances()}
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _evaluate(s: Scenario) -> dict[str, Any] | None:
    try:
        return evaluate(s).to_json()
    except CalcError:
        return None


# the scenario space, steered ---------------------------------------------------------------------


@st.composite
def dense_region(draw: st.DrawFn) -> Scenario:
    """Host-proxied EFA at modest scale: the calibration's side of the map."""
    return Scenario(
        model=draw(
            st.sampled_from(["qwen3-30b-a3b-fp8", "gpt-oss-120b", "mixtral-8x7b", "qwen3-235b-a22b-fp8"])
        ),
        instance=draw(st.sampled_from(["p5en", "p6-b200"])),
        nodes=draw(st.sampled_from([2, 4])),
        transport=draw(st.sampled_from(["efa-proxy", "efa-nvshmem", "efa-uccl"])),
        engine=draw(st.sampled_from(["trtllm", "vllm", "sglang"])),
        concurrency=draw(st.sampled_from([4, 16, 32, 64, 256])),
        isl=draw(st.sampled_from([120, 1024, 4096])),
        osl=draw(st.sampled_from([128, 512])),
        slo_tok_s=draw(st.none() | st.sampled_from([5.0, 20.0, 40.0])),
    )


@st.composite
def deepep_region(draw: st.DrawFn) -> Scenario:
    """GPU-initiated transports, large models and large batches, where DeepEP can win."""
    instance = draw(st.sampled_from(["ib-h200", "ib-h100", "p5en", "p6-b200", "p6-b300"]))
    transport = "ib-ibgda" if instance.startswith("ib-") else "efa-gda"
    return Scenario(
        model=draw(st.sampled_from(["deepseek-v3", "kimi-k2", "glm-4.5", "qwen3-235b-a22b-fp8"])),
        instance=instance,
        nodes=draw(st.sampled_from([4, 8, 16])),
        transport=transport,
        engine=draw(st.sampled_from(["vllm", "sglang", "trtllm"])),
        cuda_graphs=draw(st.booleans()),
        concurrency=draw(st.sampled_from([512, 1024, 2048, 4096, 8192])),
        isl=draw(st.sampled_from([120, 1024])),
        osl=draw(st.sampled_from([128, 1024])),
        ttft_ms=draw(st.none() | st.sampled_from([2_000.0, 30_000.0])),
    )


@st.composite
def capacity_region(draw: st.DrawFn) -> Scenario:
    """Models larger than one node's HBM: sharding is forced, or nothing fits at all."""
    instance = draw(st.sampled_from(["p5", "ib-h100", "ib-h800", "p5en"]))
    return Scenario(
        model=draw(st.sampled_from(["deepseek-v3", "kimi-k2", "qwen3-235b-a22b"])),
        instance=instance,
        nodes=draw(st.sampled_from([1, 2, 4, 8])),
        transport=draw(st.sampled_from([t for t in ON[instance] if t != "nvlink"])),
        engine=draw(st.sampled_from(["trtllm", "vllm"])),
        concurrency=draw(st.sampled_from([8, 64, 512])),
        isl=draw(st.sampled_from([120, 8192])),
    )


REGIONS = {"dense": dense_region(), "deepep": deepep_region(), "capacity": capacity_region()}


# the oracle --------------------------------------------------------------------------------------


def _meets(a: dict[str, Any]) -> bool:
    return a["meets_slo"] is not False and a["meets_ttft"] is not False


def _footing(x: dict[str, Any], y: dict[str, Any], key: str, model_key: str) -> tuple[float, float, bool]:
    """Two arms' figures on one footing: both from a measured cell, else both the model's."""

    def from_cell(arm: dict[str, Any]) -> bool:
        return arm["measured_cell"] is not None and arm[key]["value"] != arm[model_key]["value"]

    if from_cell(x) and from_cell(y):
        return x[key]["value"], y[key]["value"], True
    return x[model_key]["value"], y[model_key]["value"], False


def _agg(x: dict[str, Any], y: dict[str, Any]) -> tuple[float, float, bool]:
    return _footing(x, y, "aggregate_tok_s", "model_aggregate_tok_s")


def oracle(doc: dict[str, Any]) -> tuple[str, str | None]:
    """The §8 rules, from the JSON alone."""
    arms = doc["arms"]
    alt = doc["scenario"]["alternative"]
    feasible = {n: a["feasible"] for n, a in arms.items()}
    ok = {n: feasible[n] and _meets(a) for n, a in arms.items()}
    pool = ok if any(ok.values()) else feasible

    def beats(x: str, y: str, band: float = NOISE) -> bool:
        ax, ay, _ = _agg(arms[x], arms[y])
        return ax is not None and ay is not None and ax > ay * (1 + band)

    if not any(feasible.values()):
        return "capacity", None
    if not arms["replica"]["fits_memory"]:
        faster = pool["deepep"] and (not pool[alt] or beats("deepep", alt, 0.0))
        return "capacity", "deepep" if faster else alt
    if pool["deepep"] and all(not pool[n] or beats("deepep", n) for n in (alt, "replica")):
        return "deepep", "deepep"
    if pool["replica"] and (not pool[alt] or beats("replica", alt)):
        return "dense", "replica"
    return "dense", alt


def deciding_arms(doc: dict[str, Any], code: str, rec: str | None) -> tuple[str, str] | None:
    """The comparison that decided (docs/model.md §8), from the JSON alone: DeepEP against the
    arm it had to beat (the winner; in a DeepEP win its closest rival), else the recommended arm
    against its closest rival."""
    arms = doc["arms"]
    alt = doc["scenario"]["alternative"]
    feasible = {n: a["feasible"] for n, a in arms.items()}
    ok = {n: feasible[n] and _meets(a) for n, a in arms.items()}
    pool = ok if any(ok.values()) else feasible
    if rec is None:
        return None

    def ratio(x: str, y: str) -> float:
        ax, ay, _ = _agg(arms[x], arms[y])
        return ax / ay

    if code == "capacity":
        return ("deepep", alt) if pool["deepep"] and pool[alt] else None
    if pool["deepep"]:
        rivals = [n for n in arms if n != "deepep" and pool[n]]
        if not rivals:
            return None
        if code == "dense":
            unbeaten = [n for n in rivals if not ratio("deepep", n) > 1 + NOISE]
            if rec in unbeaten:
                return ("deepep", rec)
            rivals = unbeaten or rivals
        return ("deepep", min(rivals, key=lambda n: (ratio("deepep", n), n != rec)))
    rivals = [n for n in arms if n not in (rec, "deepep") and pool[n]]
    if doc["scenario"]["nodes"] <= 1:  # one node: the replica and allgather are one deployment
        twin = {"allgather": "replica", "replica": "allgather"}.get(rec)
        rivals = [n for n in rivals if n != twin]
    return (rec, min(rivals, key=lambda n: ratio(rec, n))) if rivals else None


def check(doc: dict[str, Any]) -> None:
    v, arms = doc["verdict"], doc["arms"]
    alt = doc["scenario"]["alternative"]
    code, rec = oracle(doc)
    assert (v["code"], v["recommended_arm"]) == (code, rec), v["headline"]
    event(f"region: {code}{' (nothing fits)' if rec is None else ''}")
    # the recommended arm is feasible, or nothing is and the verdict says so
    if rec is None:
        assert v["status"] == "nothing_fits" and not any(a["feasible"] for a in arms.values())
        assert v["headline"].startswith("Nothing fits") and v["flags"]["arm"] is None
    else:
        assert arms[rec]["feasible"] and v["flags"]["arm"] == rec
    # if any arm meets the targets, the recommended one does
    if any(a["feasible"] and _meets(a) for a in arms.values()):
        assert rec is not None and _meets(arms[rec])
        assert v["status"] == "ok"
    elif rec is not None and (doc["scenario"]["slo_tok_s"] or doc["scenario"]["ttft_ms"]):
        assert v["status"] == "targets_missed" and v["headline"].startswith("No arm meets")
    # the ratio and tax come from shown figures, both arms on one footing
    c = v["compared"]
    d, a = arms["deepep"], arms[alt]
    agg_d, agg_a, measured = _agg(d, a)
    assert c["basis"] == ("measured" if measured else "model")
    assert c["aggregate_tok_s"]["deepep"]["value"] == agg_d and c["aggregate_tok_s"][alt]["value"] == agg_a
    ratio = agg_d / agg_a
    assert doc["ratio_deepep_vs_alternative"]["value"] == pytest.approx(ratio, rel=1e-9)
    step_d, step_a, _ = _footing(d, a, "step_ms", "model_step_ms")
    assert doc["tax_ms_per_token"]["value"] == pytest.approx(step_d - step_a, rel=1e-9, abs=1e-9)
    runs = d["feasible"] and a["feasible"]
    assert (c["ratio"] is not None) == runs
    # the comparison that decided: the two arms the rules give, its figures the shown ones, and the
    # headline's ratio is its ratio (DeepEP against the replicas when they are the rival)
    decided = deciding_arms(doc, code, rec)
    dec = v["deciding"]
    assert (dec["arms"] if dec else None) == (list(decided) if decided else None), (dec, decided)
    if decided is not None:
        x, y = decided
        agg_x, agg_y, both = _agg(arms[x], arms[y])
        assert dec["basis"] == ("measured" if both else "model")
        assert dec["ratio"]["value"] == pytest.approx(agg_x / agg_y, rel=1e-9)
        low, high = dec["ratio"].get("low"), dec["ratio"].get("high")
        threshold = 1.0 if code == "capacity" else 1.0 + NOISE
        if low is not None and low <= threshold <= high:
            assert dec["status"] == "within the band"
        else:
            assert dec["status"] == ("meets" if agg_x / agg_y > threshold else "misses")
    shown = re.findall(r"(\d+\.\d\d)× \[", v["headline"])
    if shown and not v["headline"].startswith("Nothing fits"):
        assert decided is not None, v["headline"]
        assert float(shown[0]) == round(dec["ratio"]["value"], 2), v["headline"]
    # no negative "more"; a ratio above 1 never sits beside a plain tax
    assert not re.search(r"(?<![\w-])-\d", v["headline"]), v["headline"]
    assert "more" not in v["headline"] or "-" not in v["headline"].split("more")[0][-20:]
    if runs and ratio > 1 and doc["tax_ms_per_token"]["value"] > 0:
        assert "pays a tax" not in v["headline"], v["headline"]
        assert not any("a tax of" in line for line in v["reasons"]), v["reasons"]
    # the title names the arm the headline and the flags name
    if rec is not None and code != "deepep":
        label = {
            "deepep": "DeepEP",
            "allgather": "allgather",
            "tp": "tensor parallel",
            "replica": "replicas",
        }[rec]
        assert label in v["title"], (v["title"], rec)


# the properties ----------------------------------------------------------------------------------


@pytest.mark.parametrize("region", sorted(REGIONS))
def test_the_oracle_holds_in_each_region(region: str) -> None:
    @SETTINGS
    @given(REGIONS[region])
    def run(s: Scenario) -> None:
        doc = _evaluate(s)
        assume(doc is not None)
        assert doc is not None
        check(doc)

    run()


@pytest.mark.slow
@SETTINGS
@given(any_scenarios())
def test_the_oracle_holds_anywhere(s: Scenario) -> None:
    doc = _evaluate(s)
    assume(doc is not None)
    assert doc is not None
    check(doc)


@pytest.mark.parametrize("region", sorted(REGIONS))
def test_each_steered_strategy_reaches_its_region(region: str) -> None:
    """The steering works: each strategy finds a scenario whose verdict is its region."""

    def lands(s: Scenario) -> bool:
        doc = _evaluate(s)
        return doc is not None and doc["verdict"]["code"] == region

    # The first scenario that lands is proof enough: shrinking it would only make it smaller.
    quick = settings(max_examples=300, deadline=None, database=None, phases=[Phase.generate])
    found = find(REGIONS[region], lands, settings=quick)
    assert evaluate(found).verdict.code == region


def test_the_document_states_the_rules_the_oracle_checks() -> None:
    """docs/model.md §8 and this oracle describe one rule: the numbers and terms it relies on."""
    text = DOC.read_text("utf-8")
    section = text.split("## 8.", 1)[1].split("\n## 9.", 1)[0]
    for phrase in (
        "in contention",
        "like with like",
        f"{NOISE:.0%}".replace("%", " %"),
        "nothing fits",
        "10 minutes",
        "max_position_embeddings",
        "too close to call",
        "never capacity",
    ):
        assert phrase in section, phrase
