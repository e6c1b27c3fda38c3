"""Shell completion of catalog names (`cli/completion.py`): through click's bash completion of the
real program, then `_complete` on a names list written here (prefix matching, the last item of a
comma list, a path left to the shell's file completion)."""

from __future__ import annotations

import pytest
from click.shell_completion import BashComplete

from deepep_calc.cli import program
from deepep_calc.cli.completion import LISTS, SINGLE, _complete, completer
from paths import REPO

NAMES = [("p5", "first"), ("p5en", "second"), ("p6-b200", "third")]


def names():
    return NAMES


def complete(*words: str) -> list[str]:
    program._load_extensions()
    *args, incomplete = words
    comp = BashComplete(program.app, {}, "deepep-calc", "_DEEPEP_CALC_COMPLETE")
    return [item.value for item in comp.get_completions(list(args), incomplete)]


def test_completion_of_catalog_names() -> None:
    assert complete("evaluate", "--instance", "p6") == ["p6-b200", "p6-b300"]
    assert complete("report", "--engine", "") == ["trtllm", "vllm", "sglang"]
    assert "efa-gda" in complete("breakeven", "--transport", "efa-")
    assert "deepseek-v3" in complete("evaluate", "--model", "deep")
    assert complete("kernel", "--transport", "ib") == ["ib-ibgda"]


def test_completion_of_lists_and_paths() -> None:
    assert complete("sweep", "--instance", "p5,p6-b3") == ["p5,p6-b300"]
    assert complete("sweep", "--transport", "efa-proxy,nv") == ["efa-proxy,nvlink"]
    comp = BashComplete(program.app, {}, "deepep-calc", "_DEEPEP_CALC_COMPLETE")
    items = comp.get_completions(["evaluate", "--model"], "./configs/")
    assert [i.type for i in items] == ["file"]  # a path: the shell completes files


def test_readme_documents_completion() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "_DEEPEP_CALC_COMPLETE=bash_source" in readme
    assert "_DEEPEP_CALC_COMPLETE=zsh_source" in readme


@pytest.mark.parametrize(
    ("incomplete", "values"),
    [
        ("p5", ["p5", "p5en"]),
        ("P5E", ["p5en"]),  # typed in capitals, matched lower-case
        ("", ["p5", "p5en", "p6-b200"]),
        ("p7", []),
        ("p5,p6", []),  # a single value: the comma is part of what was typed
    ],
)
def test_a_single_value_completes_by_prefix(incomplete: str, values: list[str]) -> None:
    items = _complete(names, incomplete, lists=False, paths=False)
    assert [i.value for i in items] == values
    assert [i.help for i in items] == [dict(NAMES)[v] for v in values]


def test_a_list_completes_its_last_item_and_keeps_the_rest() -> None:
    assert [i.value for i in _complete(names, "p6-b200,P5", lists=True, paths=False)] == [
        "p6-b200,p5",
        "p6-b200,p5en",
    ]
    assert [i.value for i in _complete(names, "a,b,", lists=True, paths=False)] == [
        "a,b,p5",
        "a,b,p5en",
        "a,b,p6-b200",
    ]


@pytest.mark.parametrize("incomplete", ["./conf", "~/models/x", "/abs/config.json", "configs/x"])
def test_a_path_is_left_to_the_shells_file_completion(incomplete: str) -> None:
    (item,) = _complete(names, incomplete, lists=False, paths=True)
    assert (item.value, item.type) == (incomplete, "file")
    assert _complete(names, incomplete, lists=False, paths=False) == []  # where no path is taken


def test_a_path_as_the_last_item_of_a_list() -> None:
    (item,) = _complete(names, "p5,./x", lists=True, paths=True)
    assert (item.value, item.type) == ("p5,./x", "file")


def test_completer_is_a_click_callback_over_its_names() -> None:
    complete = completer(names, lists=True)
    assert [i.value for i in complete(None, None, "p5,p6")] == ["p5,p6-b200"]


def test_the_completed_flags_and_their_help() -> None:
    """Help is read from the catalogs: GPU x count and fabric for an instance, who initiates and
    the fabric for a transport, the engine's label, the preset's Hugging Face id."""
    assert set(SINGLE) == set(LISTS) == {"model", "instance", "engine", "transport"}

    def helps(name: str, incomplete: str) -> dict[str, str]:
        return {i.value: i.help for i in SINGLE[name](None, None, incomplete)}

    assert helps("instance", "p5") == {"p5": "H100 SXM x8, EFA", "p5en": "H200 x8, EFA"}
    assert helps("transport", "efa-proxy") == {"efa-proxy": "host proxy, efa"}
    assert helps("transport", "efa-gda") == {"efa-gda": "GPU-initiated, efa"}
    assert helps("engine", "vllm") == {"vllm": "vLLM 0.24"}
    assert helps("model", "deepseek-v3") == {"deepseek-v3": "deepseek-ai/DeepSeek-V3"}
