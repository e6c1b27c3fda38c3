"""The scenario flags every command shares, declared once, and how they become a `Scenario`.

Six commands take the same two dozen scenario flags; `scenario_options` declares them once
(sweep and plan build their list-valued twins from the same table), so a flag has one
spelling and one set of value words everywhere. `emit_json` is the one JSON printer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from ..base.vocabulary import FALSE_WORDS, TRUE_WORDS, flag_of
from ..question.fields import DEFAULTS, FIELDS
from .completion import SINGLE as COMPLETE

if TYPE_CHECKING:
    from ..question.scenario import Scenario


# The light field list, not `Scenario.field_names()`: importing numpy and the catalogs is most
# of what `--help` would otherwise cost (tests/speed/test_speed_imports.py).
SCENARIO_KEYS = FIELDS


# The value words of --cuda-graphs and --eager, in every command (sweep.py parses the same
# words in lists; tests/cli/test_options_flag_spelling.py checks the two agree). `true`/`false` answer the
# flag they follow; the mode words name the mode whichever flag carries them.
MODE_WORDS = {"graphs": True, "cuda-graphs": True, "eager": False}
BOOL_ALLOWED = "true or false (or the mode: graphs, eager)"


class GraphMode(click.ParamType):
    """`--cuda-graphs [WORD]` / `--eager [WORD]`: whether CUDA graphs are on (a bool).

    Bare, the flag means what it says; with a word, `true`/`false` answer it. A word outside
    the list is an `InputError` (one line naming the flag, exit 2), as sweep's parser says it.
    """

    name = "mode"

    def __init__(self, flag: str) -> None:
        self.flag = flag
        self.words = (*TRUE_WORDS, *FALSE_WORDS, *MODE_WORDS)

    def convert(self, value: Any, param: Any, ctx: Any) -> bool:
        if isinstance(value, bool):
            return value
        from ..base.errors import InputError

        low = str(value).strip().lower()
        if low in MODE_WORDS:
            return MODE_WORDS[low]
        if low in TRUE_WORDS or low in FALSE_WORDS:
            return (low in TRUE_WORDS) == (self.flag != "--eager")  # every mode flag but --eager
        raise InputError(self.flag, str(value).strip(), BOOL_ALLOWED)


class ListOf(click.ParamType):
    """A comma list (or range) of the words of `inner`: the sweep (and plan) twin of a scenario
    flag. The text is passed on as given; `sweep.parse_values` parses it, so a bad item is
    refused there with the flag, the item and what is allowed."""

    name = "list"

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        return value


def _opt(name: str, typ: Any, help_: str, default: Any = None) -> Callable[[Any], Any]:
    complete = COMPLETE.get(name[2:])
    return click.option(
        name, type=typ, default=default, show_default=default is not None, help=help_, shell_complete=complete
    )


def _mode_opt(name: str, help_: str, typ: Any = None, metavar: str = "[true|false]") -> Callable[[Any], Any]:
    """A flag that works bare and also takes a value word (`--cuda-graphs`, `--cuda-graphs true`)."""
    return click.option(
        name,
        name[2:].replace("-", "_"),
        type=typ if typ is not None else GraphMode(name),
        is_flag=False,
        flag_value="true",
        default=None,
        metavar=metavar,
        help=help_,
    )


GRAPHS_HELP = "decode with CUDA graphs (bare, or true / false)  [default: eager]"
EAGER_HELP = "decode without CUDA graphs, the measured mode (bare, or true / false)"

# (flag, type, help, default): the scenario flags of DESIGN.md, in one place. `scenario_options`
# declares them on evaluate / report / breakeven / sensitivity; `cli/commands/sweep.py` declares the
# same names with `ListOf(type)` so a sweep takes lists of the same words.
SCENARIO_FLAGS: tuple[tuple[str, Any, str, Any], ...] = (
    ("--model", click.STRING, "preset name or path to a config.json (or its folder)", DEFAULTS["model"]),
    (
        "--instance",
        click.STRING,
        "p5, p5en, p6-b200, p6-b300, ib-h800, ib-h100, ib-h200",
        DEFAULTS["instance"],
    ),
    ("--nodes", click.INT, "nodes in the cluster", DEFAULTS["nodes"]),
    ("--gpus-per-node", click.INT, "GPUs used per node [default: all]", None),
    ("--engine", click.STRING, "trtllm, vllm or sglang", DEFAULTS["engine"]),
    ("--cuda-graphs", GraphMode("--cuda-graphs"), GRAPHS_HELP, None),
    ("--eager", GraphMode("--eager"), EAGER_HELP, None),
    ("--transport", click.STRING, "transport of the DeepEP arm (see `transports`)", DEFAULTS["transport"]),
    ("--alternative", click.Choice(["allgather", "tp"]), "dense alternative arm", "allgather"),
    ("--comms", click.INT, "EP_NUM_COMMS for the NCCL-GIN proxy", DEFAULTS["comms"]),
    ("--max-qps", click.INT, "EP_EFA_MAX_QPS", DEFAULTS["max_qps"]),
    ("--concurrency", click.INT, "concurrent requests", DEFAULTS["concurrency"]),
    ("--isl", click.INT, "input sequence length (tokens)", DEFAULTS["isl"]),
    ("--osl", click.INT, "output sequence length (tokens)", DEFAULTS["osl"]),
    ("--max-batch", click.INT, "sequences per DP rank the engine runs [default: the engine's]", None),
    ("--weight-dtype", click.STRING, "override the model's weight dtype (fp8, bf16, mxfp4, ...)", None),
    ("--kv-dtype", click.STRING, "override the KV-cache dtype", None),
    ("--experts", click.INT, "what-if: routed experts", None),
    ("--topk", click.INT, "what-if: experts per token", None),
    ("--hidden", click.INT, "what-if: hidden size", None),
    ("--moe-layers", click.INT, "what-if: number of MoE layers", None),
    ("--slo-tok-s", click.FLOAT, "per-user decode floor (tok/s)", None),
    ("--ttft-ms", click.FLOAT, "time-to-first-token ceiling (ms)", None),
    ("--price-per-hour", click.FLOAT, "$ per node-hour (default: catalog price)", None),
    ("--calibration", click.STRING, "calibration profile written by `deepep-calc calibrate`", None),
    (
        "--disagg",
        click.STRING,
        "disaggregated prefill / decode as xPyD, e.g. 1P3D (= --prefill-nodes 1 --decode-nodes 3)",
        None,
    ),
    ("--prefill-nodes", click.INT, "disaggregated: nodes that only prefill", None),
    ("--decode-nodes", click.INT, "disaggregated: nodes that only decode", None),
    (
        "--kv-transport",
        click.STRING,
        "disaggregated: KV-cache transport, nixl-libfabric, mooncake-efa, nixl-ucx or tcp "
        "[default: the engine's]",
        None,
    ),
    ("--prefill-arm", click.STRING, "disaggregated: deepep, allgather, tp or replica [default: best]", None),
    ("--decode-arm", click.STRING, "disaggregated: deepep, allgather, tp or replica [default: best]", None),
    ("--prefill-transport", click.STRING, "disaggregated: the prefill side's DeepEP transport", None),
    ("--decode-transport", click.STRING, "disaggregated: the decode side's DeepEP transport", None),
    (
        "--prefill-cuda-graphs",
        GraphMode("--prefill-cuda-graphs"),
        "disaggregated: the prefill side's graph mode [default: as --cuda-graphs]",
        None,
    ),
    (
        "--decode-cuda-graphs",
        GraphMode("--decode-cuda-graphs"),
        "disaggregated: the decode side's graph mode [default: as --cuda-graphs]",
        None,
    ),
)
MODE_FLAGS = ("--cuda-graphs", "--eager")
SIDE_MODE_FLAGS = ("--prefill-cuda-graphs", "--decode-cuda-graphs")


def scenario_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Declare the scenario flags (the CLI contract of DESIGN.md) on a command."""
    opts = [
        _mode_opt(name, help_)
        if name in MODE_FLAGS
        else _mode_opt(name, help_, typ)
        if name in SIDE_MODE_FLAGS
        else _opt(name, typ, help_, default)
        for name, typ, help_, default in SCENARIO_FLAGS
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def graph_mode(cuda_graphs: bool | None, eager: bool | None) -> bool:
    """CUDA graphs on or off from `--cuda-graphs` and `--eager` (each already a mode), default
    eager; the two given with different modes is refused."""
    if cuda_graphs is not None and eager is not None and cuda_graphs != eager:
        from ..base.errors import InputError

        raise InputError("--eager", None, "--cuda-graphs asks for the other mode; give one of the two")
    if cuda_graphs is not None:
        return cuda_graphs
    return bool(eager) if eager is not None else False


def mode_unset(kwargs: dict[str, Any]) -> bool:
    """Whether neither --cuda-graphs nor --eager was given (ask before `scenario_from` pops them):
    the card then says which mode it assumed."""
    return kwargs.get("cuda_graphs") is None and kwargs.get("eager") is None


def scenario_from(kwargs: dict[str, Any]) -> Scenario:
    """Pop the scenario flags out of a command's keyword arguments."""
    from ..question.scenario import Scenario

    graphs = graph_mode(kwargs.pop("cuda_graphs", None), kwargs.pop("eager", None))
    split = kwargs.pop("disagg", None)
    fields = {k: kwargs.pop(k) for k in list(kwargs) if k in SCENARIO_KEYS}
    fields["cuda_graphs"] = graphs
    if split is not None:
        disagg_fields(split, fields)
    else:
        check_nodes(fields)
    return Scenario(**{k: v for k, v in fields.items() if v is not None or k in ("gpus_per_node",)})


def disagg_fields(split: str, fields: dict[str, Any]) -> None:
    """`--disagg 1P3D` into the prefill and decode node counts, refusing a contradiction with
    --prefill-nodes / --decode-nodes, and a --nodes other than P + D."""
    from ..base.errors import InputError
    from ..question.disagg import parse_disagg

    p, d = parse_disagg(split)
    for name, value in (("prefill_nodes", p), ("decode_nodes", d)):
        given = fields.get(name)
        if given is not None and given != value:
            flag = flag_of(name)
            raise InputError(
                flag, given, f"{value}, as --disagg {split.strip()} says (or give only one of the two)"
            )
        fields[name] = value
    check_nodes(fields)


def check_nodes(fields: dict[str, Any]) -> None:
    """A --nodes typed beside a disaggregated split must be P + D (the cluster's node count)."""
    p, d = fields.get("prefill_nodes"), fields.get("decode_nodes")
    nodes = fields.get("nodes")
    if p is None or d is None or nodes is None or not isinstance(p, int) or not isinstance(d, int):
        return
    ctx = click.get_current_context(silent=True)
    typed = ctx is not None and ctx.get_parameter_source("nodes") == click.core.ParameterSource.COMMANDLINE
    if typed and nodes != p + d:
        from ..base.errors import InputError

        raise InputError("--nodes", nodes, f"{p + d} = P + D for a {p}P{d}D split (or leave --nodes out)")
    fields["nodes"] = p + d


SOURCES_HELP = "number every row's source and list the sources under the table"


def emit_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=2, allow_nan=False))
