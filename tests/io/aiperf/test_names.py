"""What file and folder names say about a run, and one spelling per checkpoint
(`io/aiperf/names.py`): the shared naming convention read token by token (engine and version,
leg, EP_NUM_COMMS, concurrency, ISL, cluster), a model's hub id, HF-cache path and snapshot hash
made one, and the label every figure's source starts with."""

from __future__ import annotations

from pathlib import Path

import pytest

from calibrate.user_runs import PREFIX, TRT_DENSE, vllm
from deepep_calc.io.aiperf import load_aiperf, normalise_model, parse_export_name
from deepep_calc.io.aiperf.names import NameHints, display_name, source_label


def test_file_name_hints() -> None:
    run = load_aiperf(vllm(8, 4))
    assert (run.engine, run.engine_version, run.leg, run.leg_label, run.comms) == (
        "vllm",
        "0.24",
        "deepep",
        "deepep-epnc8",
        8,
    )
    dense = load_aiperf(TRT_DENSE)
    assert (dense.engine, dense.leg, dense.comms) == ("trtllm", "dense", None)


def test_normalise_model_spellings() -> None:
    h = "d206ba732169f29bb77fbf80fc2c4b81d4d30782"
    cache = f"/data/hf/hub/models--Qwen--Qwen3-30B-A3B-FP8/snapshots/{h}/"
    assert normalise_model(cache) == "Qwen/Qwen3-30B-A3B-FP8"
    assert normalise_model(h, cache) == "Qwen/Qwen3-30B-A3B-FP8"
    assert normalise_model(h, None) == h
    assert normalise_model("Qwen/Qwen3-30B-A3B-FP8") == "Qwen/Qwen3-30B-A3B-FP8"
    assert normalise_model(None) is None


def test_parse_export_name() -> None:
    hints = parse_export_name(f"sglang-0.5.11_{PREFIX}_deepep-epnc8_c32_isl120.json")
    assert (
        hints.engine,
        hints.engine_version,
        hints.leg,
        hints.comms,
        hints.concurrency,
        hints.isl,
    ) == ("sglang", "0.5.11", "deepep", 8, 32, 120)
    assert parse_export_name("profile_export_aiperf.json").engine is None


@pytest.mark.parametrize(
    ("name", "field", "value"),
    [
        ("c32", "concurrency", 32),
        ("deepep-epnc8", "comms", 8),
        ("dense", "leg", "dense"),
        ("vllm", "engine", "vllm"),
        ("Qwen_Qwen3-30B-A3B-FP8-openai-chat-concurrency64", "concurrency", 64),
    ],
)
def test_folder_names_carry_hints(name: str, field: str, value: object) -> None:
    assert getattr(parse_export_name(name), field) == value


@pytest.mark.parametrize(
    ("name", "hints"),
    [
        ("TensorRT-LLM-v1.0_x_dense_c8", NameHints("trtllm", "1.0", "dense", "dense", concurrency=8)),
        ("trt-llm_x", NameHints("trtllm")),
        ("SGLang0.5_c4.json", NameHints("sglang", "0.5", concurrency=4)),
        (
            "vllm_1xp6-b200_deepep_isl2048.csv",
            NameHints("vllm", None, "deepep", "deepep", isl=2048, instances="1xp6-b200"),
        ),
        ("allgather_c2", NameHints(leg="dense", leg_label="allgather", concurrency=2)),
        ("deepep-shim", NameHints(leg="deepep", leg_label="deepep-shim")),  # a DeepEP run naming no comms
        ("run-concurrency-16.json", NameHints(concurrency=16)),
        ("foo_bar.json", NameHints()),
    ],
)
def test_each_token_of_a_name(name: str, hints: NameHints) -> None:
    """Engines in any of their spellings and cases, a version glued on or after a dash, the
    cluster token `<n>x<instance>`; tokens the convention does not know are ignored."""
    assert parse_export_name(name) == hints


def test_an_aiperf_generic_name_is_shown_with_its_folder() -> None:
    """`profile_export_aiperf.json` says nothing on its own: its folder is the run's name."""
    assert display_name(Path("runs/c4/profile_export_aiperf.json")) == "c4/profile_export_aiperf.json"
    assert display_name(Path("runs/c4/mine.json")) == "mine.json"
    assert display_name(Path("profile_export_aiperf.json")) == "profile_export_aiperf.json"


def test_a_source_names_the_file_and_the_benchmark() -> None:
    assert source_label(Path("r/x.json"), "fae6e9f1f9fc") == "AIPerf x.json benchmark fae6e9f1f9fc"
    assert source_label(Path("x.csv"), None) == "AIPerf x.csv (no benchmark id)"


def test_a_checkpoint_path_of_any_platform_is_its_hub_id() -> None:
    assert normalise_model(r"C:\hf\models--Org--Name\snapshots\abc") == "Org/Name"
    assert normalise_model("  Qwen/Qwen3-8B/ ") == "Qwen/Qwen3-8B"
    assert normalise_model("") is None
