"""Start-up stays lazy: `--help` and `import deepep_calc` load neither numpy nor pydantic, and
the public surface is what it was before the names became lazy (issue 12, item 1).

Each check runs in a fresh interpreter (a subprocess), since this test process has long
imported everything; speed itself is measured in benchmarks/speed.py, never here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

# asyncio: only `serve` needs it (with ssl and concurrent.futures it costs ~30 ms at start-up)
HEAVY = ("numpy", "pydantic", "asyncio", "deepep_calc.estimate.compute", "deepep_calc.question.scenario")


def _modules_after(code: str) -> dict[str, bool]:
    probe = textwrap.dedent(code) + textwrap.dedent(
        f"""
        import json, sys
        print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))
        """
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [["--help"], ["evaluate", "--help"], ["sweep", "--help"]])
def test_help_imports_no_numpy_or_pydantic(argv: list[str]) -> None:
    loaded = _modules_after(
        f"""
        import contextlib, io
        from deepep_calc.cli import main
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            main({argv!r})
        """
    )
    assert loaded == dict.fromkeys(HEAVY, False)


def test_import_package_is_light() -> None:
    assert _modules_after("import deepep_calc") == dict.fromkeys(HEAVY, False)


def test_public_api_unchanged() -> None:
    import deepep_calc
    from deepep_calc import Q, Result, Scenario, Tag, evaluate, explain_verdict, load_catalog

    assert deepep_calc.__all__  # the names themselves are pinned by tests/test_public_api.py
    assert explain_verdict.__module__ == "deepep_calc.whatif.explanation"
    assert callable(evaluate) and evaluate.__name__ == "evaluate"
    assert deepep_calc.evaluate is evaluate and evaluate.__module__ == "deepep_calc.api"
    assert Result.__name__ == "Result" and Scenario.__name__ == "Scenario"
    assert Q.__name__ == "Q" and Tag.MEASURED > Tag.ASSUMED
    assert set(load_catalog()) == {"models", "instances", "transports", "engines", "cells"}
    assert isinstance(evaluate(Scenario()), Result)


def test_evaluate_is_the_function_whichever_import_comes_first() -> None:
    code = """
        import deepep_calc.estimate.compute
        import deepep_calc.api
        import deepep_calc
        from deepep_calc import evaluate
        assert callable(deepep_calc.evaluate) and deepep_calc.evaluate is evaluate
        print(evaluate().verdict.code)
    """
    probe = "import sys\n" + textwrap.dedent(code)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "dense"


def test_unknown_names_still_raise() -> None:
    import deepep_calc
    from deepep_calc.question import scenario

    with pytest.raises(AttributeError):
        _ = deepep_calc.no_such_name  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        _ = scenario.no_such_name
    with pytest.raises(ImportError):
        exec("from deepep_calc.question.scenario import no_such_name")


def test_light_field_list_matches_the_model() -> None:
    from deepep_calc.cli.options import SCENARIO_KEYS
    from deepep_calc.question.fields import FIELDS
    from deepep_calc.question.scenario import Scenario

    assert SCENARIO_KEYS == FIELDS == Scenario.field_names()


def test_scenario_names_come_from_one_place() -> None:
    """The light tables are defined once (question/fields.py); the pydantic half uses them."""
    from deepep_calc.question import fields, scenario

    assert scenario.DEFAULTS is fields.DEFAULTS and scenario.LIMITS is fields.LIMITS


def _run_fresh(code: str, preload: str = "") -> tuple[dict[str, bool], str]:
    """`_modules_after` with bytecode (and so the catalogs' caches) written, as an install runs;
    returns the modules loaded and what the code printed (`preload` runs first, unreported)."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    report = """
        import json, sys
        print(json.dumps({m: m in sys.modules for m in ("pydantic", "tomllib", "numpy")}))
        """
    probe = preload + textwrap.dedent(code) + textwrap.dedent(report)
    runs = [
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env) for _ in "12"
    ]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    *printed, loaded = runs[-1].stdout.strip().splitlines()  # the second run: caches warm
    return json.loads(loaded), "\n".join(printed)


# The card, the JSON of the default scenario (robust: every flip candidate runs), DeepSeek
# what-ifs, scenarios whose flip search stops at a flip (--eager, --nodes 1, --cuda-graphs),
# the TP alternative and the kernel table.
ONE_SCENARIO = [
    [],
    ["evaluate", "--json"],
    ["evaluate", "--model", "deepseek-v3", "--cuda-graphs", "--json"],
    ["evaluate", "--model", "deepseek-v3", "--nodes", "2", "--engine", "sglang", "--cuda-graphs"],
    ["evaluate", "--concurrency", "256", "--isl", "2048", "--json"],
    ["evaluate", "--alternative", "tp", "--engine", "vllm", "--json"],
    ["kernel"],
]


@pytest.mark.slow
@pytest.mark.parametrize("argv", ONE_SCENARIO)
def test_one_scenario_imports_no_numpy_pydantic_or_toml(argv: list[str]) -> None:
    """One scenario runs on plain floats (base/arrays.py): numpy (~0.1 s to import), pydantic
    (the validator, as costly) and the TOML parser (the catalogs come from their validated
    cache) all stay out of the process. The printed text is the same as in a process that
    has numpy loaded already, where the flip search takes its vectorised pass instead."""
    run = f"""
        import contextlib, io
        from deepep_calc.cli import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main({argv!r})
        print(out.getvalue())
        """
    loaded, printed = _run_fresh(run)
    assert loaded == {"pydantic": False, "tomllib": False, "numpy": False}
    batch_loaded, batch_printed = _run_fresh(run, preload="import numpy\n")
    assert batch_loaded["numpy"] is True
    assert printed.strip() and printed == batch_printed


def test_the_python_api_evaluates_without_pydantic_or_numpy() -> None:
    code = "from deepep_calc import Scenario, evaluate\nevaluate(Scenario(nodes=4)).to_json()"
    loaded, _ = _run_fresh(code)
    assert loaded["pydantic"] is False and loaded["numpy"] is False


FACE_LIBRARIES = ("click", "rich", "fastapi", "starlette", "uvicorn", "jinja2", "plotly", "matplotlib")


def test_the_model_runs_without_a_faces_library() -> None:
    """A library user's answer, JSON included, loads no terminal, web or chart library: they are
    the faces' dependencies (pyproject.toml), and import-linter only sees static imports."""
    probe = textwrap.dedent(
        f"""
        import json, sys
        from deepep_calc import Scenario, evaluate, explain_verdict
        result = evaluate(Scenario(model="deepseek-v3", nodes=2))
        explain_verdict(result)
        result.to_json()
        print(json.dumps([m for m in {FACE_LIBRARIES!r} if m in sys.modules]))
        """
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
