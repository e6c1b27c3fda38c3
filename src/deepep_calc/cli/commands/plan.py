"""`deepep-calc plan`: the cheapest configuration that meets the targets, and the frontier.

Light at import time: the planner, rich and plotly load inside the command. The command owns
the progress bar (the planner reports passes through a callback and never imports rich) and
the files: it hands the planner the config.json reader (`io.hf_config.load_hf_config`) and
checks and writes `--html` through `io.safe_write`.
"""

from __future__ import annotations

from typing import Any

import click

from ...question.fields import DEFAULTS
from ...whatif.plan import MEASURED_ONLY
from ..options import ListOf, emit_json


def register(app: click.Group) -> None:
    app.add_command(plan_cmd)


@click.command("plan")
@click.option(
    "--model", default=DEFAULTS["model"], show_default=True, help="preset name or path to a config.json"
)
@click.option(
    "--isl", type=int, default=DEFAULTS["isl"], show_default=True, help="input sequence length (tokens)"
)
@click.option(
    "--osl", type=int, default=DEFAULTS["osl"], show_default=True, help="output sequence length (tokens)"
)
@click.option("--concurrency", type=int, help="requests in flight (give this or --request-rate)")
@click.option("--request-rate", type=float, help="requests per second; running sequences by Little's law")
@click.option("--slo-tok-s", type=float, help="per-user decode floor (tok/s)")
@click.option("--ttft-ms", type=float, help="time-to-first-token ceiling (ms)")
@click.option("--budget-per-hour", type=float, help="most $ per hour for the whole deployment")
@click.option(
    "--instances",
    "--instance",
    "instances",
    type=ListOf(click.STRING),
    metavar="LIST",
    help="instance types to search, comma-separated [default: the EFA ones]",
)
@click.option("--max-nodes", type=int, default=16, show_default=True, help="largest node count searched")
@click.option(
    "--engines",
    "--engine",
    "engines",
    type=ListOf(click.STRING),
    metavar="LIST",
    help="engines to search, comma-separated [default: all]",
)
@click.option("--max-batch", type=int, help="sequences per DP rank [default: each engine's own]")
@click.option("--measured-only", is_flag=True, help=MEASURED_ONLY)
@click.option(
    "--price-per-hour",
    type=ListOf(click.FLOAT),
    metavar="P | NAME=P,...",
    help="$ per node-hour: one price for every instance searched, or per instance (default: catalog)",
)
@click.option(
    "--price-kinds",
    metavar="all | LIST",
    help="price kinds ranked together (on-demand, capacity-block, quote) [default: like with like: "
    "on-demand when one is searched]",
)
@click.option(
    "--layouts",
    type=click.Choice(["all", "aggregated", "disaggregated"]),
    default="all",
    show_default=True,
    help="aggregated deployments, disaggregated prefill / decode splits (xPyD), or both",
)
@click.option("--disagg", metavar="xPyD", help="search only this prefill / decode split, e.g. 1P3D")
@click.option("--json", "as_json", is_flag=True, help="print the plan as one JSON object")
@click.option(
    "--html", "html_path", metavar="FILE", help="write a self-contained HTML page with the frontier"
)
def plan_cmd(as_json: bool, html_path: str | None, **fields: Any) -> None:
    """Search instance types, node counts, engines, graph modes (eager, CUDA graphs), arms
    (DeepEP over each transport, allgather, tensor parallel, single-node replicas), EP_NUM_COMMS
    and weight dtypes (the checkpoint's own, and FP8 for a BF16 / FP16 one) for the cheapest
    configuration ($ per million output tokens) that fits and meets every target.

    Prints its verdict card and the command line to run it (the checkpoint or quantisation flag
    of the dtype chosen), the frontier of per-user tok/s against $/Mtok, and, when nothing meets
    the targets, the closest misses and the single change that would. Example: --model
    deepseek-v3 --isl 1024 --osl 256 --concurrency 64 --slo-tok-s 20
    """
    from ...io.hf_config import load_hf_config
    from ...io.safe_write import check_output, scenario_inputs, writing
    from ...whatif.plan.search import default_size, plan_request, plan_size, run_plan

    # a --model config.json is read here, once, where the planner checks the model
    req = plan_request(**fields, read_model=load_hf_config)
    # The target is checked before the search: a bad one costs nothing and writes nothing.
    target = check_output(html_path, "--html", inputs=scenario_inputs(req.model)) if html_path else None
    if target is not None and target.is_stdout and as_json:
        raise click.UsageError("--html - prints the page; drop --json or name a file")
    from ..progress import Bar

    with Bar("plan", show_now=plan_size(req) > default_size(req)) as bar:
        plan = run_plan(req, bar.update)
    if target is None:
        if as_json:
            emit_json(plan.to_json())
        else:
            _print(plan)
        return
    from ...report.plan_html import render_plan_html

    with writing(target):  # rendered and staged before anything is committed
        target.stage(render_plan_html(plan).encode("utf-8"))
    if not target.is_stdout:  # a page sent to stdout is the output itself: nothing beside it
        if as_json:
            emit_json(plan.to_json())
        else:
            _print(plan)
        click.echo(f"deepep-calc: wrote {target.shown}", err=as_json)


def _print(plan: Any) -> None:
    from rich.console import Console

    from ...report.plan_terminal import print_best_card, print_plan

    console = Console(highlight=False)
    print_plan(plan, console)
    if plan.best is not None:
        from ...whatif.plan.card import card_for

        card = card_for(plan)
        if card is not None:
            console.print()
            print_best_card(plan, card, console)
