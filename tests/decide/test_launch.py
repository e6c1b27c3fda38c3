"""decide/launch.py, issue 10 item 11: the "Run it" block is a config file, a command line and
exports that paste.

Every engine x arm x single/multi-node launch is checked by the shell itself (`bash -n`), the
config file by a YAML parser, and the card, the Markdown report and the page for showing each
part in its own fenced block with nothing around it that would break a paste. The flags
themselves (`explain.engine_flags`: the DeepEP library an engine loads) are test_explain.py's.
"""

from __future__ import annotations

import html as html_lib
import re
import shutil
import subprocess
from typing import Any

import pytest
from rich.console import Console

from deepep_calc import Scenario, evaluate
from deepep_calc.decide.explain import engine_flags
from deepep_calc.decide.launch import run_blocks
from deepep_calc.report.markdown import render_markdown
from deepep_calc.report.terminal import print_result
from web_fixtures import app, client  # noqa: F401  (fixtures)

from .shared import command_tokens as _tokens

BASH = shutil.which("bash")
ARMS = ("deepep", "allgather", "tp", "replica")


def _syntax_ok(text: str) -> None:
    assert BASH is not None
    proc = subprocess.run([BASH, "-n"], input=text, text=True, capture_output=True, check=False)
    assert proc.returncode == 0, (proc.stderr, text)


@pytest.mark.skipif(BASH is None, reason="bash not installed")
@pytest.mark.parametrize("engine", ["trtllm", "vllm", "sglang"])
@pytest.mark.parametrize("nodes", [1, 2, 4])
@pytest.mark.parametrize("arm", ARMS)
def test_every_launch_block_is_valid_shell_and_yaml(engine: str, nodes: int, arm: str) -> None:
    yaml = pytest.importorskip("yaml")
    result = evaluate(Scenario(model="deepseek-v3", engine=engine, nodes=nodes, transport="efa-gda"))
    flags = engine_flags(result, arm)
    launch = flags["launch"]
    _syntax_ok(launch["command"])
    _syntax_ok(launch["exports"])
    for line in launch["exports"].splitlines():
        assert re.fullmatch(r"export [A-Z][A-Z0-9_]*=\S+", line), line
    tokens = _tokens(launch["command"])
    program = {"trtllm": "trtllm-serve", "vllm": "vllm", "sglang": "python3"}[engine]
    assert tokens[0] == program
    assert "deepseek-ai/DeepSeek-V3" in tokens
    for tok in tokens:  # prose from the catalog never lands inside the command
        assert " " not in tok or tok.startswith("${HEAD_IP"), tok
    if launch["config_file"] is not None:
        doc = yaml.safe_load(launch["config_file"]["text"])
        assert isinstance(doc, dict) and doc
        assert all(isinstance(k, str) and " " not in k for k in doc)
    ranks = 8 if arm == "replica" else 8 * nodes
    if engine == "trtllm":
        assert tokens[tokens.index("--tp_size") + 1] == str(ranks)
    if arm == "deepep" and nodes > 1:
        assert "export NCCL_GIN_TYPE=5" in launch["exports"]  # the transport's own environment


def test_the_card_reads_at_80_columns_and_its_run_block_pastes() -> None:
    console = Console(width=80, record=True, highlight=False, color_system=None)
    print_result(evaluate(Scenario()), console)
    text = console.export_text()
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    start = next(i for i, line in enumerate(lines) if line.startswith("Run it (trtllm, allgather)"))
    assert all("│" not in line and "╰" not in line for line in lines[start:])  # outside the box
    fences = re.findall(r"```(\w+)\n(.*?)\n```", "\n".join(lines[start:]), re.S)
    assert [lang for lang, _ in fences] == ["yaml", "sh", "sh"]
    assert fences[0][1].splitlines() == ["enable_attention_dp: true", "use_cuda_graph: false"]
    if BASH:
        _syntax_ok(fences[1][1])
        _syntax_ok(fences[2][1])
    title = next(line for line in lines if "■" in line)
    assert "Use DENSE / allgather" in title
    assert "Run allgather" in text


def test_markdown_report_fences_each_part_on_its_own() -> None:
    result = evaluate(
        Scenario(
            engine="vllm",
            model="deepseek-v3",
            nodes=2,
            transport="efa-gda",
            cuda_graphs=True,
            concurrency=1024,
            isl=128,
            osl=1024,
        )
    )  # a batch past one node's KV cache: DeepEP beats the TP replicas too
    assert result.verdict.recommended_arm == "deepep"
    md = render_markdown(result)
    section = md.split("## Run it", 1)[1].split("\n## ", 1)[0]
    fences = re.findall(r"```(\w+)\n(.*?)\n```", section, re.S)
    assert [lang for lang, _ in fences] == ["sh", "sh"]  # vLLM takes no config file
    assert fences[0][1].count("vllm serve") == 1 and "--data-parallel-address" in fences[0][1]
    assert all(line.startswith("export ") for line in fences[1][1].splitlines())


def test_nothing_fits_has_no_run_block() -> None:
    result = evaluate(Scenario(model="deepseek-v3", instance="p5", nodes=1))
    assert run_blocks(result.verdict.flags) == []
    assert "Nothing runs as asked" in render_markdown(result)


def test_the_page_shows_each_part_in_its_own_block(client: Any) -> None:  # noqa: F811
    resp = client.get("/")
    assert resp.status_code == 200
    blocks = re.findall(r'<pre class="flags" data-lang="(\w+)">(.*?)</pre>', resp.text, re.S)
    assert [lang for lang, _ in blocks] == ["yaml", "sh", "sh"]
    assert "trtllm-serve Qwen/Qwen3-30B-A3B-FP8" in html_lib.unescape(blocks[1][1])
    lit = re.search(r'card card-dense lit".*?<span class="card-name">(.*?)</span>', resp.text, re.S)
    assert lit and lit.group(1) == "Use DENSE / allgather"
