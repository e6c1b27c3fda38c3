"""The planner's question, checked: every flag of `deepep-calc plan` (and every field of
`/api/plan`) refused with one line naming it before any work starts.

The planner reads no file: a `--model` path is read by the reader the face hands
`plan_request` (`read_model=io.hf_config.load_hf_config`, at the point the model is checked, so
errors come in the order they always did), and the spec read travels in `PlanRequest.models`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...base.errors import CalcError, InputError
from ...catalog.engines import load_engines
from ...catalog.hardware import PRICE_KINDS, load_instances
from ...catalog.model_catalog import find_model
from ...catalog.models import ModelSpec
from ...question.fields import DEFAULTS, LIMITS
from ...question.scenario import ModelReader
from .space import COMMS

DEFAULT_MAX_NODES = 16
LAYOUTS = ("all", "aggregated", "disaggregated")
MAX_RATE = 1_000_000.0  # requests / s: beyond this the question is not a serving deployment


def default_instances() -> tuple[str, ...]:
    """The AWS EFA instance types (the reference InfiniBand nodes have no AWS price)."""
    return tuple(n for n, i in load_instances().items() if i.fabric == "efa")


def default_engines() -> tuple[str, ...]:
    return tuple(load_engines())


# The request ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanRequest:
    """A checked plan question. Build it with `plan_request()`, which refuses bad input."""

    model: str
    isl: int
    osl: int
    concurrency: int | None = None
    request_rate: float | None = None
    slo_tok_s: float | None = None
    ttft_ms: float | None = None
    budget_per_hour: float | None = None
    instances: tuple[str, ...] = ()
    max_nodes: int = DEFAULT_MAX_NODES
    max_batch: int | None = None  # sequences per DP rank (default: each engine's own)
    engines: tuple[str, ...] = ()
    measured_only: bool = False
    prices: tuple[tuple[str, float], ...] = ()  # --price-per-hour, per instance
    price_kinds: tuple[str, ...] = ()  # --price-kinds: the kinds ranked together; () = like with like
    layouts: str = "all"  # all, aggregated or disaggregated (xPyD splits, whatif/plan/disagg.py)
    disagg: tuple[int, int] | None = None  # --disagg: search only this split
    # (key, spec) of the models known only in memory, a config.json the face read among them:
    # pairs, not a dict, so the request stays hashable
    models: tuple[tuple[str, ModelSpec], ...] = ()

    def specs(self) -> dict[str, ModelSpec]:
        """The in-memory models every scenario of the plan resolves with (`resolve(s, specs)`)."""
        return dict(self.models)

    def spec(self) -> ModelSpec:
        """The model `--model` names as its checkpoint stores it (a preset, or the config.json read)."""
        known = _model(self.model, self.specs(), None)  # refuses a path the request does not carry
        spec = known.get(self.model) or find_model(self.model)
        assert spec is not None  # _model refused any other
        return spec

    def targets_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "isl": self.isl,
            "osl": self.osl,
            "concurrency": self.concurrency,
            "request_rate": self.request_rate,
            "slo_tok_s": self.slo_tok_s,
            "ttft_ms": self.ttft_ms,
            "budget_per_hour": self.budget_per_hour,
        }

    def space_json(self) -> dict[str, Any]:
        return {
            "instances": list(self.instances),
            "engines": list(self.engines),
            "max_nodes": self.max_nodes,
            "max_batch": self.max_batch,
            "comms": list(COMMS),
            "measured_only": self.measured_only,
            "prices": dict(self.prices),
            "price_kinds": list(self.price_kinds),
            "layouts": self.layouts,
            "disagg": None if self.disagg is None else f"{self.disagg[0]}P{self.disagg[1]}D",
            "disaggregated_note": (
                "xPyD splits with P + D within the node limit are searched for a concurrency"
                if self.request_rate is None
                else "request-rate plans search aggregated layouts only"
            ),
        }


def _whole(flag: str, value: Any, limit: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise InputError(flag, value, "a whole number greater than 0")
    if value <= 0 or value != int(value):
        raise InputError(flag, value, "a whole number greater than 0")
    if value > limit:
        raise InputError(flag, value, f"at most {limit:,} (outside what the model covers)")
    return int(value)


def _positive(flag: str, value: Any, limit: float = 1e12) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(flag, value, "a number greater than 0")
    if not (value > 0 and math.isfinite(value)):
        raise InputError(flag, value, "a finite number greater than 0")
    if value > limit:
        raise InputError(flag, value, f"at most {limit:,g}")
    return float(value)


def _names(
    flag: str, raw: str | Iterable[str] | None, known: Iterable[str], default: tuple[str, ...]
) -> tuple[str, ...]:
    if raw is None:
        return default
    parts = [p.strip().lower() for p in (raw.split(",") if isinstance(raw, str) else raw)]
    if not parts or any(not p for p in parts):
        raise InputError(
            flag, raw if isinstance(raw, str) else ",".join(raw), "a comma list with no empty items"
        )
    names = list(known)
    for p in parts:
        if p not in names:
            raise InputError(flag, p, f"names from {', '.join(names)}")
    return tuple(dict.fromkeys(parts))


def _prices(
    raw: str | float | Mapping[str, float] | None, instances: tuple[str, ...]
) -> tuple[tuple[str, float], ...]:
    """`--price-per-hour`: one price for every instance searched, or `NAME=P[,NAME=P]`."""
    if raw is None:
        return ()
    flag = "--price-per-hour"
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        price = _positive(flag, raw)
        return tuple((name, float(price)) for name in instances)  # type: ignore[arg-type]
    pairs: list[tuple[str, Any]]
    if isinstance(raw, Mapping):
        pairs = list(raw.items())
    elif isinstance(raw, str):
        text = raw.strip()
        try:
            return _prices(float(text), instances)
        except ValueError:
            pass
        pairs = []
        for part in text.split(","):
            name, sep, value = part.partition("=")
            if not sep:
                raise InputError(flag, part.strip(), "a price, or NAME=PRICE pairs separated by commas")
            pairs.append((name, value))
    else:
        raise InputError(flag, raw, "a price, or NAME=PRICE pairs separated by commas")
    known = list(load_instances())
    out: dict[str, float] = {}
    for name, value in pairs:
        key = str(name).strip().lower()
        if key not in known:
            raise InputError(flag, key, f"instance names from {', '.join(known)}")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise InputError(flag, f"{key}={value}", "a number of $ per node-hour after the =") from None
        out[key] = float(_positive(flag, number))  # type: ignore[arg-type]
    return tuple(out.items())


# size: keyword-only, one per plan flag (the CLI's and the API body's alike), checked into a PlanRequest
def plan_request(
    *,
    model: str = DEFAULTS["model"],
    isl: Any = DEFAULTS["isl"],
    osl: Any = DEFAULTS["osl"],
    concurrency: Any = None,
    request_rate: Any = None,
    slo_tok_s: Any = None,
    ttft_ms: Any = None,
    budget_per_hour: Any = None,
    instances: str | Iterable[str] | None = None,
    max_nodes: Any = DEFAULT_MAX_NODES,
    max_batch: Any = None,
    engines: str | Iterable[str] | None = None,
    measured_only: bool = False,
    price_per_hour: str | float | Mapping[str, float] | None = None,
    price_kinds: str | Iterable[str] | None = None,
    layouts: str | None = None,
    disagg: str | None = None,
    models: Mapping[str, ModelSpec] | None = None,
    read_model: ModelReader | None = None,
) -> PlanRequest:
    """Check every input of a plan (the CLI's flags, the API's body) before any work.

    `models`, `read_model`: as `question.scenario.resolve` takes them: specs known only in
    memory, and how a `--model` path is read (None: a path is refused; the web reads no file).
    """
    conc, rate = _load(concurrency, request_rate)
    insts = _names("--instances", instances, load_instances(), default_instances())
    engs = _names("--engines", engines, load_engines(), default_engines())
    known = _model(model, models, read_model)  # an unknown preset or a bad config.json fails here
    max_nodes = _whole("--max-nodes", max_nodes, LIMITS["nodes"])
    shape, split = _layouts(layouts, disagg, max_nodes, request_rate)
    return PlanRequest(
        model=model,
        isl=_whole("--isl", isl, LIMITS["isl"]),
        osl=_whole("--osl", osl, LIMITS["osl"]),
        concurrency=conc,
        request_rate=rate,
        slo_tok_s=_positive("--slo-tok-s", slo_tok_s),
        ttft_ms=_positive("--ttft-ms", ttft_ms),
        budget_per_hour=_positive("--budget-per-hour", budget_per_hour),
        instances=insts,
        max_nodes=max_nodes,
        max_batch=None if max_batch is None else _whole("--max-batch", max_batch, LIMITS["max_batch"]),
        engines=engs,
        measured_only=bool(measured_only),
        prices=_prices(price_per_hour, insts),
        price_kinds=_kinds(price_kinds),
        layouts=shape,
        disagg=split,
        models=tuple(known.items()),
    )


def _model(
    model: str, models: Mapping[str, ModelSpec] | None, read_model: ModelReader | None
) -> dict[str, ModelSpec]:
    """The in-memory models the plan carries, `--model` checked: a preset needs none, a path is
    read once by `read_model` (its errors name the file, as `resolve` reports them)."""
    known = dict(models or {})
    if model in known or find_model(model) is not None:  # find_model refuses a non-path non-preset
        return known
    if read_model is None:
        raise InputError(
            "--model",
            model,
            "a preset here: a config.json path is read by the caller "
            "(plan_request(read_model=io.hf_config.load_hf_config))",
        )
    known[model] = read_model(model.strip())
    return known


def _load(concurrency: Any, request_rate: Any) -> tuple[int | None, float | None]:
    """The plan's load: a concurrency or a request rate, exactly one of them."""
    if concurrency is None and request_rate is None:
        raise CalcError(
            "give the load: --concurrency C (requests in flight) or --request-rate R (per second)",
            field="--concurrency",
        )
    if concurrency is not None and request_rate is not None:
        raise CalcError("give --concurrency or --request-rate, not both", field="--request-rate")
    conc = None if concurrency is None else _whole("--concurrency", concurrency, LIMITS["concurrency"])
    rate = None if request_rate is None else _positive("--request-rate", request_rate, MAX_RATE)
    return conc, rate


def _layouts(
    layouts: str | None, disagg: str | None, max_nodes: int, request_rate: Any
) -> tuple[str, tuple[int, int] | None]:
    """`--layouts` and `--disagg`, checked against each other, the node limit and the load."""
    shape = "all" if layouts is None else str(layouts).strip().lower()
    if shape not in LAYOUTS:
        raise InputError("--layouts", layouts, f"one of {', '.join(LAYOUTS)}")
    split = None
    if disagg is not None:
        from ...question.disagg import parse_disagg

        split = parse_disagg(disagg)
        if sum(split) > max_nodes:
            raise InputError(
                "--disagg",
                str(disagg).strip(),
                f"P + D within --max-nodes {max_nodes} (this split needs {sum(split)}: raise --max-nodes)",
            )
        if shape == "aggregated":
            raise InputError("--disagg", str(disagg).strip(), "no split with --layouts aggregated")
    if shape == "disaggregated" and max_nodes < 2:
        raise InputError(
            "--max-nodes", max_nodes, "at least 2 for disaggregated layouts (one prefill, one decode)"
        )
    if shape == "disaggregated" and request_rate is not None:
        raise InputError(
            "--layouts", shape, "all or aggregated with --request-rate (rate plans search aggregated layouts)"
        )
    return shape, split


def _kinds(raw: str | Iterable[str] | None) -> tuple[str, ...]:
    """`--price-kinds`: `all`, or the kinds to rank together (on-demand, capacity-block, quote)."""
    if raw is None:
        return ()
    parts = [p.strip().lower() for p in (raw.split(",") if isinstance(raw, str) else raw)]
    if parts == ["all"]:
        return PRICE_KINDS
    return _names("--price-kinds", parts, PRICE_KINDS, ())  # refuses an empty or unknown item
