"""The run record (`io/aiperf/run.py`): the prefix every figure's source carries, the name a run
is shown by, the cluster its file name states, and any other statistic read on demand."""

from __future__ import annotations

from pathlib import Path

from calibrate.user_runs import TRT_DEEPEP
from deepep_calc.base.quantity import Tag
from deepep_calc.io.aiperf import load_aiperf
from deepep_calc.io.aiperf.build import build_run
from deepep_calc.io.aiperf.run import Export


def test_a_run_names_its_file_its_benchmark_and_its_cluster() -> None:
    run = load_aiperf(TRT_DEEPEP)
    assert run.source == f"AIPerf {TRT_DEEPEP.name} benchmark e27e731ea174"
    assert run.name == TRT_DEEPEP.name and run.instances == "2xp5en"
    assert run.itl_ms is not None and run.itl_ms.source.startswith(run.source + ": ")


def test_any_other_statistic_is_read_on_demand_as_measured() -> None:
    """The TTFT p99 no reader check was written for, as exported (ms), tagged measured."""
    run = load_aiperf(TRT_DEEPEP)
    p99 = run.metric("time_to_first_token", "p99")
    assert p99 is not None and p99.tag is Tag.MEASURED and p99.unit == "ms"
    assert p99.value == run.metrics["time_to_first_token"]["p99"]
    assert p99.source == f"{run.source}: time_to_first_token.p99"


def test_a_run_in_an_aiperf_folder_is_shown_with_the_folder() -> None:
    """AIPerf names every export alike: the folder tells runs apart; no convention, no cluster."""
    metrics = {"output_token_throughput": {"avg": 600.0}}
    run = build_run(Export(Path("runs/c32/profile_export_aiperf.json"), "json", metrics))
    assert run.name == "c32/profile_export_aiperf.json" and run.instances is None
    assert run.source == "AIPerf c32/profile_export_aiperf.json (no benchmark id)"


def test_an_export_record_defaults_to_a_run_that_states_nothing() -> None:
    export = Export(Path("x.json"), "json", {})
    assert (export.config, export.benchmark_id, export.was_cancelled, export.cli_command) == (
        {},
        None,
        False,
        None,
    )
