"""Every single-scenario speed figure of issue 12, each as min / median of repeated runs and as a
ratio to a baseline timed in the same run (so a figure from a busy machine compares with one
from an idle machine).

    .venv/bin/python benchmarks/speed.py                 # all figures
    .venv/bin/python benchmarks/speed.py --only cli      # cli | evaluate | api
    .venv/bin/python benchmarks/speed.py --check         # exit 1 when a median misses its goal

Figures and their baselines:
  cli       `deepep-calc evaluate --json`, `deepep-calc` (the card) and `deepep-calc --help`, each
            a fresh `python -m deepep_calc` process with bytecode caching on; baseline
            `python -c "import numpy"` (the floor any numpy tool pays). `--before DIR` times
            another checkout's `src/` in the same rounds (e.g. `git archive main src | tar -x`)
  evaluate  `evaluate(explain=False)` (the rule and the figures) of the calibration scenario
            (the first call warms the catalogs and the fit, as a server would be), and of
            distinct scenarios; `evaluate().to_json()`, what `evaluate --json` and the API do
            (the words and the flip search included); baseline a trivial Python function
            (`sum(range(2000))`) timed the same way
  api       service time of `POST /api/evaluate` in process (`web.api.evaluate_json`): cold =
            a scenario never seen, warm = one asked before; p50 / p95 per repeat; baseline the
            same trivial function. The HTTP figure with 20 clients is `benchmarks/api_latency.py`.

Runs are interleaved (one of each figure per round) so a burst of load hits all of them alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

GOALS_MS = {  # issue 12 goals, on the median (this tree only)
    "deepep-calc evaluate --json": 200.0,
    "deepep-calc (card)": 250.0,
    "deepep-calc --help": 100.0,
    "evaluate(explain=False) default": 1.0,
    "api cold p95": 0.8,
}


def _row(name: str, times: list[float], base: float, unit: str = "ms") -> dict[str, Any]:
    lo, med = min(times), statistics.median(times)
    goal = GOALS_MS.get(name)
    verdict = "" if goal is None else ("  PASS" if med < goal else "  MISS") + f" (goal < {goal:g} {unit})"
    print(f"  {name:<40} min {lo:8.3f}  median {med:8.3f} {unit}   x{med / base:6.2f} baseline{verdict}")
    return {"name": name, "min": lo, "median": med, "ratio": med / base, "goal": goal}


SRC = Path(__file__).resolve().parent.parent / "src"


def _env(src: Path) -> dict[str, str]:
    """A child environment importing `deepep_calc` from `src`, with bytecode caching on (a
    user's install has .pyc files; PYTHONDONTWRITEBYTECODE would time the compiler instead)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(src)
    return env


def _wall(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return (time.perf_counter() - t) * 1000.0


def cli(rounds: int, before: Path | None) -> list[dict[str, Any]]:
    """Whole-process times of `python -m deepep_calc ...` from this tree (and `before`)."""
    py = sys.executable
    plain = _env(SRC)
    cases: dict[str, tuple[list[str], dict[str, str]]] = {
        'baseline: python -c "import numpy"': ([py, "-c", "import numpy"], plain),
        'python -c "pass"': ([py, "-c", "pass"], plain),
    }
    trees = [("", SRC)] + ([("before: ", before)] if before is not None else [])
    for label, src in trees:
        env = _env(src)
        cases[f"{label}deepep-calc evaluate --json"] = ([py, "-m", "deepep_calc", "evaluate", "--json"], env)
        cases[f"{label}deepep-calc (card)"] = ([py, "-m", "deepep_calc"], env)
        cases[f"{label}deepep-calc --help"] = ([py, "-m", "deepep_calc", "--help"], env)
    for cmd, env in cases.values():  # write the bytecode, page the files in
        _wall(cmd, env)
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(rounds):
        for name, (cmd, env) in cases.items():
            times[name].append(_wall(cmd, env))
    base = statistics.median(times[next(iter(cases))])
    print(f"CLI, whole process ({rounds} rounds, ms; ratio to the numpy import):")
    return [_row(name, t, base) for name, t in times.items()]


def _baseline() -> None:
    sum(range(2000))


def _time(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000.0)
    return out


def _rule_only(evaluate: Callable[..., Any]) -> Callable[..., Any]:
    """`evaluate` without the verdict's words and advice: `explain=False` where the source
    takes it; an older source (`--before`) left them to their first read, the same work."""
    import inspect

    if "explain" in inspect.signature(evaluate).parameters:
        return lambda scenario: evaluate(scenario, explain=False)
    return evaluate


def evaluate_figures(rounds: int) -> list[dict[str, Any]]:
    from deepep_calc import Scenario
    from deepep_calc import evaluate as explained

    evaluate = _rule_only(explained)
    default = Scenario()
    explained(default).to_json()  # warm the catalogs and the fit, as a server is
    others = [
        Scenario(model="deepseek-v3", nodes=2 + i % 3, concurrency=16 + i, engine="sglang")
        for i in range(rounds)
    ]
    base, ev, distinct, full = [], [], [], []
    for i in range(rounds):
        base += _time(_baseline, 1)
        ev += _time(lambda: evaluate(default), 1)
        distinct += _time(lambda i=i: evaluate(others[i]), 1)
        full += _time(lambda: explained(default).to_json(), 1)
    b = statistics.median(base)
    print(f"evaluate() in process ({rounds} calls each, ms; ratio to sum(range(2000))):")
    return [
        _row("baseline: sum(range(2000))", base, b),
        _row("evaluate(explain=False) default", ev, b),
        _row("evaluate(explain=False) distinct", distinct, b),
        _row("evaluate(default).to_json()", full, b),
    ]


def _p(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def api_figures(rounds: int, per_round: int = 200) -> list[dict[str, Any]]:
    from deepep_calc.web import api
    from deepep_calc.web.schemas import EvaluateRequest

    api.evaluate_json(EvaluateRequest())  # warm
    p50c, p95c, p50w, p95w, base = [], [], [], [], []
    n = 0
    for _ in range(rounds):
        cold, warm = [], []
        for _ in range(per_round):
            n += 1
            body = {"model": "deepseek-v3", "nodes": 4, "concurrency": n, "isl": 100 + n % 7}
            t = time.perf_counter()
            api.evaluate_json(EvaluateRequest.model_validate(body))
            cold.append((time.perf_counter() - t) * 1000.0)
            t = time.perf_counter()
            api.evaluate_json(EvaluateRequest.model_validate(body))
            warm.append((time.perf_counter() - t) * 1000.0)
        base += _time(_baseline, per_round)
        p50c.append(_p(cold, 0.5))
        p95c.append(_p(cold, 0.95))
        p50w.append(_p(warm, 0.5))
        p95w.append(_p(warm, 0.95))
        api.clear_caches()
    b = statistics.median(base)
    print(f"API service time in process ({rounds} rounds x {per_round} requests, ms; ratio to the baseline):")
    return [
        _row("baseline: sum(range(2000))", base, b),
        _row("api cold p50", p50c, b),
        _row("api cold p95", p95c, b),
        _row("api warm p50", p50w, b),
        _row("api warm p95", p95w, b),
    ]


def _in_tree(section: str, rounds: int, src: Path) -> None:
    """Run one in-process section again with `deepep_calc` imported from `src` (a child
    process: a module imports once per process); its rows carry the child's own baseline."""
    cmd = [sys.executable, __file__, "--only", section, "--rounds", str(rounds), "--child"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=_env(src), check=True).stdout
    for line in out.splitlines():
        if line.startswith("  "):
            print("  before: " + line.strip())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["cli", "evaluate", "api"])
    ap.add_argument("--rounds", type=int, default=0, help="repeats (default: 15 CLI, 300 evaluate, 5 API)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a median misses its goal")
    ap.add_argument("--before", type=Path, help="another checkout's src/ to time beside this one")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not args.child:
        sys.path.insert(0, str(SRC))  # this tree, whatever is installed
    rows: list[dict[str, Any]] = []
    if args.only in (None, "cli"):
        rows += cli(args.rounds or 15, args.before)
    if args.only in (None, "evaluate"):
        rows += evaluate_figures(args.rounds or 300)
        if args.before is not None:
            _in_tree("evaluate", args.rounds or 300, args.before)
    if args.only in (None, "api"):
        rows += api_figures(args.rounds or 5)
        if args.before is not None:
            _in_tree("api", args.rounds or 5, args.before)
    missed = [r["name"] for r in rows if r["goal"] is not None and r["median"] >= r["goal"]]
    if missed and not args.child:
        print("missed:", ", ".join(missed))
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
