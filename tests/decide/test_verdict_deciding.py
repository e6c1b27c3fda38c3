"""decide/verdict.py, the deciding comparison: the comparison shown is the one that decided
(issue #26 item 3).

When the single-node replicas won the verdict, or were the rival DeepEP had to beat, the
headline ratio, its band, the tax, the card's comparison line, the page's comparison table and
the sensitivity tornado are DeepEP against the replicas, not DeepEP against the alternative;
`ratio_deepep_vs_alternative` stays in the JSON as it was. (The lit card's blurb, one of the
verdict's own reasons, is `test_explain.py`'s.)
"""

from __future__ import annotations

import re

import pytest

from cli_runner import run_cli
from deepep_calc import Scenario, evaluate
from deepep_calc.report.markdown import render_markdown
from deepep_calc.report.view import compare_rows
from deepep_calc.whatif.sensitivity import model_ratio, sensitivity
from web_fixtures import app, client  # noqa: F401

from .shared import REPLICA_RIVAL

# the replicas (tensor parallel on each node) win a dense verdict: DeepSeek-V3 on vLLM, graphs, c64
REPLICA_WINS = Scenario(model="deepseek-v3", nodes=2, engine="vllm", cuda_graphs=True, concurrency=64)


def _first_ratio(text: str) -> float:
    return float(re.findall(r"(\d+\.\d\d)× \[", text)[0])


@pytest.mark.parametrize("scenario", [REPLICA_RIVAL, REPLICA_WINS], ids=["rival", "winner"])
def test_the_headline_and_the_json_carry_the_deciding_arms(scenario: Scenario) -> None:
    result = evaluate(scenario)
    v = result.verdict
    d = v.deciding
    assert d is not None and d.arms == ("deepep", "replica"), (d, v.headline)
    dee, rep = result.arms["deepep"], result.arms["replica"]
    ratio = dee.model_aggregate_tok_s.scalar / rep.model_aggregate_tok_s.scalar
    assert d.ratio.scalar == pytest.approx(ratio, rel=1e-12)
    assert d.ratio.banded and d.per_user_ratio.banded  # modelled: banded as the alternative's ratio
    tax = dee.model_step_ms.scalar - rep.model_step_ms.scalar
    assert d.tax_ms_per_token.scalar == pytest.approx(tax, rel=1e-9)
    if not v.close_call:
        assert _first_ratio(v.headline) == round(ratio, 2), v.headline
    # the contract field is kept as it was: DeepEP against the alternative
    doc = result.to_json()
    alt = result.arms["allgather"]
    assert doc["ratio_deepep_vs_alternative"]["value"] == pytest.approx(
        dee.model_aggregate_tok_s.scalar / alt.model_aggregate_tok_s.scalar, rel=1e-12
    )
    dj = doc["verdict"]["deciding"]
    assert dj["arms"] == ["deepep", "replica"] and dj["ratio"]["value"] == d.ratio.scalar
    assert dj["status"] in ("meets", "misses", "within the band")


def test_the_card_and_the_page_show_the_deciding_comparison(capsys, client) -> None:  # noqa: F811
    code, out, _ = run_cli(
        capsys, "evaluate", "--model", "deepseek-v3", "--nodes", "2", "--engine", "vllm",
        "--cuda-graphs", "--concurrency", "256",
    )  # fmt: skip
    assert code == 0
    summary = out.split("Why")[0]
    assert "DeepEP / single-node replicas: aggregate" in summary
    assert "DeepEP / allgather: aggregate" not in summary
    result = evaluate(REPLICA_RIVAL)
    rows = compare_rows(result.to_json())
    assert rows[0][0] == "DeepEP / single-node replicas, aggregate"
    assert rows[0][1]["value"] == result.verdict.deciding.ratio.scalar
    assert "(against single-node replicas)" in rows[2][0]
    assert "DeepEP / single-node replicas, aggregate" in render_markdown(result)


@pytest.mark.slow
def test_the_tornado_is_against_the_deciding_arm() -> None:
    rows = sensitivity(REPLICA_WINS)
    assert rows and all(r.versus == ("deepep", "replica") for r in rows)
    base = evaluate(REPLICA_WINS)
    assert rows[0].base_ratio.scalar == pytest.approx(model_ratio(base, ("deepep", "replica")).scalar)
    assert rows[0].to_json()["versus"] == ["deepep", "replica"]
    assert "replica" in rows[0].ratio_low.source
