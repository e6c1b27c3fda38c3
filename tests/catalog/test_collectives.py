"""`catalog/collectives.py`: NCCL's own collectives measured across nodes, one row per kind and
instance (`data/collectives.toml`). What the physics relies on: every kind has a reference row,
rows are found by `kind@instance`, and each figure is the one its source quotes."""

from __future__ import annotations

from typing import get_args

import pytest

from deepep_calc.base.records import RecordError
from deepep_calc.catalog.collectives import (
    Collective,
    Kind,
    load_collectives,
    measured_collective,
    reference_collective,
)
from deepep_calc.catalog.hardware import load_instances

ROWS = load_collectives()


def test_rows_are_keyed_by_kind_at_instance() -> None:
    for key, c in ROWS.items():
        assert key == c.id == f"{c.kind}@{c.instance}"
        assert measured_collective(c.kind, c.instance) is c


@pytest.mark.parametrize("kind", get_args(Kind))
def test_every_kind_has_a_reference_row_other_instances_scale_from(kind: str) -> None:
    ref = reference_collective(kind)
    assert ref.kind == kind
    assert ref is next(c for c in ROWS.values() if c.kind == kind)  # the first in the file


def test_an_instance_without_its_own_row_has_none() -> None:
    assert measured_collective("allreduce", "p5en") is None
    assert measured_collective("broadcast", "p6-b300") is None


def test_each_row_runs_on_a_catalog_instance_with_all_its_gpus() -> None:
    instances = load_instances()
    for c in ROWS.values():
        assert c.ranks == c.nodes * instances[c.instance].gpus_per_node, c.id


def test_each_figure_is_the_one_its_source_quotes() -> None:
    """The source line of a row is what a reader checks: it states the latency and bandwidth."""
    for c in ROWS.values():
        assert f"{c.latency_us} us" in c.source and f"{c.busbw_gb_s:.2f} GB/s" in c.source, c.id
        for point in c.sizes:
            assert f"{point.busbw_gb_s} GB/s" in c.source, (c.id, point)


def test_mid_size_points_rise_with_the_message_and_stay_under_the_large_message_figure() -> None:
    for c in ROWS.values():
        sizes = [p.bytes for p in c.sizes]
        assert sizes == sorted(set(sizes)), c.id
        rates = [p.busbw_gb_s for p in c.sizes]
        assert rates == sorted(rates) and all(r < c.busbw_gb_s for r in rates), c.id


def test_a_row_within_one_node_or_of_another_kind_is_refused() -> None:
    good = ROWS["allreduce@p6-b300"].as_dict()
    with pytest.raises(RecordError) as info:
        Collective.validate({**good, "nodes": 1})
    assert info.value.loc == "nodes"
    with pytest.raises(RecordError) as info:
        Collective.validate({**good, "kind": "broadcast"})
    assert info.value.loc == "kind"
    assert Collective.validate(good) == ROWS["allreduce@p6-b300"]
