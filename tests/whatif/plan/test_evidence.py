"""What the planner's configurations rest on (`whatif/plan/evidence.py`): --measured-only keeps
the anchored ones, the others say so, and the anchoring sets are the catalog's."""

from __future__ import annotations

import pytest

from deepep_calc.whatif.plan.evidence import anchored, evidence, mode_name, notes_for
from deepep_calc.whatif.plan.search import plan_request, run_plan

from .small import SMALL


def test_measured_only_keeps_anchored_configurations_only(small):
    p = run_plan(plan_request(**dict(SMALL, measured_only=True)))
    assert 0 < p.searched < small.searched
    assert p.skipped_reasons.get("outside the measured evidence (--measured-only)", 0) > 0
    for point in [p.best, *p.frontier]:
        if point is None:
            continue
        assert point.evidence == "anchored" and point.arm != "tp"
        c = point.config
        assert anchored(c["instance"], c["engine"], c["cuda_graphs"], point.arm, c["transport"], c["nodes"])
    ev = evidence()
    assert ("p5en", "efa-proxy") in ev.kernel and ("p6-b300", "efa-gda") not in ev.kernel
    assert ("trtllm", False) in ev.serving and ("trtllm", True) not in ev.serving


def test_points_outside_the_evidence_say_so(small):
    assumed = [p for p in [small.best, *small.frontier] if p.evidence == "assumed"]
    for p in assumed:
        assert any("(assumed)" in n or "borrowed" in n for n in p.notes)
    tp = [p for p in small.frontier if p.arm == "tp"]
    for p in tp:
        assert p.evidence == "assumed"


def test_docs_state_the_anchored_pairs_the_catalog_has():
    """docs/plan.md lists the kernel-anchored instance x transport pairs: they must not drift."""
    documented = {
        ("p5", "efa-proxy"), ("p5en", "efa-proxy"),
        ("p5en", "efa-gda"), ("p6-b200", "efa-gda"),
        ("p5en", "efa-nvshmem"), ("p6-b200", "efa-nvshmem"),
        ("p5en", "efa-uccl"), ("p6-b200", "efa-uccl"),
        ("p5en", "efa-pplx"), ("p5en", "efa-native-cqpoll"),
        ("ib-h800", "ib-ibgda"),
    }  # fmt: skip
    assert set(evidence().kernel) == documented
    assert set(evidence().one_node) == {
        ("p5en", "deepep-v1"), ("p6-b300", "deepep-v1"), ("ib-h800", "deepep-v1"),
        ("p5en", "deepep-v2"), ("p5en", "uccl-ep"), ("p5en", "pplx-garden"),
    }  # fmt: skip
    assert set(evidence().serving) == {
        ("trtllm", False),
        ("vllm", False),
        ("vllm", True),
        ("sglang", False),
        ("sglang", True),
    }


# Each clause of the rule, on one configuration ---------------------------------------------------


def test_a_configuration_inside_every_clause_is_anchored() -> None:
    """DeepEP over efa-proxy across two p5en nodes, vLLM eager: a measured kernel row there, a
    measured vLLM eager run, and DeepEP measured in serving."""
    assert notes_for("p5en", "vllm", False, "deepep", "efa-proxy", 2) == []
    assert anchored("p5en", "vllm", False, "deepep", "efa-proxy", 2)
    assert anchored("p5en", "sglang", True, "allgather", "efa-proxy", 1)


@pytest.mark.parametrize(
    ("config", "notes"),
    [
        (
            ("p6-b200", "vllm", False, "deepep", "efa-proxy", 2),
            ["no measured efa-proxy kernel reference on p6-b200: carried over from p5en (assumed)"],
        ),
        (  # p6-b300 has no same-harness kernel pair: its instance factor is assumed
            ("p6-b300", "vllm", False, "deepep", "efa-gda", 2),
            [
                "no measured efa-gda kernel reference on p6-b300: carried over from p5en with an "
                "assumed instance factor of 1 (assumed)"
            ],
        ),
        (  # one node rides NVLink: the library efa-proxy loads, DeepEP 2.x, has no row on p5
            ("p5", "vllm", False, "deepep", "nvlink", 1),
            ["no measured one-node deepep-v2 kernel reference on p5 (assumed)"],
        ),
        (
            ("p5en", "vllm", False, "tp", "efa-proxy", 2),
            ["no serving run in the references used the tp arm: modelled only (assumed)"],
        ),
        (
            ("p5en", "trtllm", True, "allgather", "efa-proxy", 2),
            ["no measured trtllm CUDA graphs serving run: its engine constants are borrowed"],
        ),
        (  # every clause missed at once, in the rule's order
            ("p6-b300", "trtllm", True, "deepep", "efa-gda", 2),
            [
                "no measured efa-gda kernel reference on p6-b300: carried over from p5en with an "
                "assumed instance factor of 1 (assumed)",
                "no measured trtllm CUDA graphs serving run: its engine constants are borrowed",
            ],
        ),
    ],
    ids=["kernel-elsewhere", "assumed-factor", "one-node-library", "tp", "engine-mode", "several"],
)
def test_each_clause_missed_is_a_note(config: tuple, notes: list[str]) -> None:
    assert notes_for(*config) == notes
    assert not anchored(*config)


def test_the_evidence_is_read_once_and_names_graph_modes() -> None:
    assert evidence() is evidence()
    assert (mode_name(True), mode_name(False)) == ("CUDA graphs", "eager")
