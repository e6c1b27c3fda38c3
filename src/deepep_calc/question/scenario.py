"""The question a user asks: model, cluster, engine, transport and workload.

`Scenario` holds what the user typed (CLI flag names in snake_case, the same body the web API
takes). `resolve()` turns it into catalog objects and checks every value, raising an
`InputError` that names the CLI flag, the value and what is allowed.

This is the heavy half (numpy, the catalogs); `fields.py` holds the light half
(defaults, limits, field names) that `--help` needs. A disaggregated deployment's fields are
checked in `disagg.py`, which `resolve()` calls.

Why one module: the dataclass, its type checks and `resolve()`'s value checks describe one
question; apart, a field and its check would drift.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..base.arrays import is_array, loaded, np
from ..base.errors import InputError
from ..base.records import Record
from ..base.vocabulary import flag_of
from ..catalog.constants import CATALOG, Assumptions
from ..catalog.engines import Engine, get_engine
from ..catalog.hardware import Instance, get_instance
from ..catalog.model_catalog import find_model
from ..catalog.models import DTYPES, ModelSpec
from ..catalog.transports import Transport, get_transport
from .disagg import DisaggSpec, resolve_disagg
from .fields import DEFAULTS, FIELDS, FLOAT_LIMIT, LIMITS, OVERRIDE_LIMIT


def _f(default: Any, description: str) -> Any:
    """A field with the description `/openapi.json` shows for it."""
    return field(default=default, metadata={"description": description})


ALTERNATIVES = ("allgather", "tp")


@dataclass(kw_only=True)
class Scenario(Record):
    """One question. Field names are the CLI flags in snake_case; omitted = CLI default.

    A plain dataclass, so the CLI's path never imports pydantic: construction checks only the
    types (one line naming the flag, as the CLI would), `resolve()` checks the values. The web
    API's body model is generated from these fields (`web/schemas.py`).
    """

    model: str = _f(DEFAULTS["model"], "preset name or path to a config.json")
    instance: str = DEFAULTS["instance"]
    nodes: int = DEFAULTS["nodes"]
    gpus_per_node: int | None = _f(None, "default: the instance's GPU count")
    engine: str = DEFAULTS["engine"]
    cuda_graphs: bool = _f(False, "false = eager (the measured mode)")
    transport: str = _f(DEFAULTS["transport"], "DeepEP transport; nvlink only with nodes = 1")
    alternative: Literal["allgather", "tp"] = "allgather"
    comms: int = _f(DEFAULTS["comms"], "EP_NUM_COMMS")
    max_qps: int = _f(DEFAULTS["max_qps"], "EP_EFA_MAX_QPS")
    concurrency: int = DEFAULTS["concurrency"]
    isl: int = _f(DEFAULTS["isl"], "input tokens; ISL + OSL within the model's context window")
    osl: int = _f(DEFAULTS["osl"], "output tokens; ISL + OSL within the model's context window")
    weight_dtype: str | None = _f(None, "default: the model's native dtype")
    slo_tok_s: float | None = _f(None, "per-user decode floor")
    ttft_ms: float | None = _f(
        None, "time-to-first-token ceiling; above 10 min it also raises the prompt ceiling"
    )
    price_per_hour: float | None = _f(None, "$ per node-hour override")
    max_batch: int | None = _f(None, "sequences per DP rank the engine runs (default: the engine's)")
    calibration: str | None = _f(None, "profile written by `calibrate`")
    experts: int | None = _f(None, "override: routed experts (must split over some EP group)")
    topk: int | None = _f(None, "override: experts per token")
    hidden: int | None = _f(None, "override: hidden size")
    moe_layers: int | None = _f(None, "override: MoE layer count")
    kv_dtype: str | None = _f(None, "override: KV-cache dtype")
    prefill_nodes: int | None = _f(None, "disaggregated: nodes that only prefill (with decode_nodes)")
    decode_nodes: int | None = _f(None, "disaggregated: nodes that only decode (with prefill_nodes)")
    kv_transport: str | None = _f(None, "disaggregated: KV-cache transport (default: the engine's)")
    prefill_arm: str | None = _f(None, "disaggregated: prefill side's arm (default: the model's best)")
    decode_arm: str | None = _f(None, "disaggregated: decode side's arm (default: the model's best)")
    prefill_transport: str | None = _f(None, "disaggregated: prefill side's DeepEP transport")
    decode_transport: str | None = _f(None, "disaggregated: decode side's DeepEP transport")
    prefill_cuda_graphs: bool | None = _f(None, "disaggregated: prefill side's graph mode")
    decode_cuda_graphs: bool | None = _f(None, "disaggregated: decode side's graph mode")

    def __post_init__(self) -> None:
        _check_types(self)

    def copy(self, **update: Any) -> Scenario:
        """This scenario with `update`: a what-if. Only the updated fields are checked again
        (the rest passed when this one was made); the flip search makes a dozen per answer."""
        _known_fields(update)
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.__dict__.update(update)
        _check_types(new, update)
        return new


assert Scenario.field_names() == FIELDS, "fields.FIELDS must list Scenario's fields in order"


@dataclass(kw_only=True)
class VariedScenario(Scenario):
    """A scenario whose numeric fields (`VARIABLE`) may hold NumPy arrays: one pass of the
    physics over many rows (sweeps, break-even and flip searches, a disaggregated side).

    Made by `Resolved.vary` and `side_scenario`, which check the values as `resolve()` checks
    scalars; so construction and `copy` skip the scalar type checks an array would fail.
    """

    def __post_init__(self) -> None:
        """The values were checked by whoever built this one (see the class docstring)."""

    def copy(self, **update: Any) -> VariedScenario:
        _known_fields(update)
        return varied_scenario(self, **update)


def varied_scenario(s: Scenario, **update: Any) -> VariedScenario:
    """`s` as a `VariedScenario`, with `update` (values already checked by the caller)."""
    new = object.__new__(VariedScenario)
    new.__dict__.update(s.__dict__)
    new.__dict__.update(update)
    return new


# Each field's type, read once from the class's own annotations (strings: `int | None`).
_KINDS = {name: ann.removesuffix(" | None") for name, ann in Scenario.__annotations__.items()}
_OPTIONAL = frozenset(name for name, ann in Scenario.__annotations__.items() if ann.endswith(" | None"))


def _known_fields(update: dict[str, Any]) -> None:
    """A copy names only Scenario's fields (a typo is a programming error, not an input)."""
    unknown = update.keys() - _KINDS.keys()
    if unknown:
        raise TypeError(f"Scenario has no field {sorted(unknown)[0]!r}")


def _fields_typed(kind: str) -> tuple[str, ...]:
    return tuple(name for name, k in _KINDS.items() if k == kind)


# Scenario fields by type, for the faces that parse text into a Scenario (sweep lists, forms).
INT_FIELDS = _fields_typed("int")
FLOAT_FIELDS = _fields_typed("float")
BOOL_FIELDS = _fields_typed("bool")


def _check_types(s: Scenario, names: Iterable[str] | None = None) -> None:
    """Each field (of `names`, else all) of the type its annotation states, or one line naming
    the flag.

    Whole numbers given as floats (2.0) become ints and numbers given for a float field become
    floats, the conversions a JSON or TOML reader expects; nothing else is converted."""
    for name in _KINDS if names is None else names:
        kind = _KINDS[name]
        value = getattr(s, name)
        if value is None and name in _OPTIONAL:
            continue
        flag = flag_of(name)
        if kind == "int":
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise InputError(flag, value, "a whole number")
            if not isinstance(value, int):
                if not (isinstance(value, numbers.Integral) or float(value).is_integer()):
                    raise InputError(flag, value, "a whole number")
                setattr(s, name, int(value))
        elif kind == "float":
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise InputError(flag, value, "a number")
            if type(value) is not float:
                setattr(s, name, float(value))
        elif kind == "bool":
            if type(value) is not bool and not (loaded() and isinstance(value, np.bool_)):
                raise InputError(flag, value, "true or false")
            setattr(s, name, bool(value))
        elif kind == "str":
            if not isinstance(value, str):
                raise InputError(flag, value, "a text value")
        elif value not in ALTERNATIVES:
            raise InputError(flag, value, " or ".join(ALTERNATIVES))


@dataclass(frozen=True, eq=False)
class Resolved:
    """A checked scenario with its catalog rows attached."""

    scenario: Scenario
    model: ModelSpec
    instance: Instance
    engine: Engine
    transport: Transport
    gpus_per_node: int
    # the calibration profile `--calibration` names, read by the caller (fit.profile.Profile, typed
    # Any because fit/ sits above this layer; `io/inputs.py: resolve_files` reads it)
    profile: Any = None
    max_batch: int = 256  # sequences per DP rank the engine runs at once
    max_batch_source: str = ""
    attention_tp: int = 1  # attention tensor-parallel degree inside each DP group (references)
    disaggregated: bool = False  # prefill runs on other nodes: no mixed prefill (a decode side)
    disagg: DisaggSpec | None = None  # a disaggregated scenario's split (None: aggregated)
    # models known only in memory (an uploaded config.json, the references' GPT-2) by the key
    # `scenario.model` may name: carried so a what-if resolves them again without a lookup
    models: Mapping[str, ModelSpec] = field(default_factory=dict)
    # False: a what-if pass on the model's own figures (`vary`), never a measured cell
    measured: bool = True
    # the assumed constants in force (a sensitivity case changes some): physics reads them here
    assumptions: Assumptions = CATALOG

    @property
    def world(self) -> Any:
        return self.scenario.nodes * self.gpus_per_node

    def change(self, **update: Any) -> Resolved:
        """This question with a few fields changed, checked and resolved again with the same
        in-memory models, and the same loaded profile unless `calibration` changes: a what-if
        the flip search, the advisories and the fixes ask of one answer."""
        r = resolve(self.scenario.copy(**update), self.models, self.assumptions)
        if self.profile is not None and "calibration" not in update:
            r = replace(r, profile=self.profile)
        return r

    def assume(self, assumptions: Assumptions) -> Resolved:
        """This question under other assumed constants: the same rows, with the transports'
        figures those assumptions change (a table fitted under them computes it, `compute`)."""
        if assumptions == self.assumptions:
            return self
        old = self.assumptions

        def again(t: Transport) -> Transport:
            moved = old.transport_figures(t.name) or assumptions.transport_figures(t.name)
            return get_transport(t.name, assumptions) if moved else t

        spec = self.disagg
        if spec is not None:
            spec = replace(
                spec,
                prefill=replace(spec.prefill, transport=again(spec.prefill.transport)),
                decode=replace(spec.decode, transport=again(spec.decode.transport)),
            )
        return replace(self, transport=again(self.transport), disagg=spec, assumptions=assumptions)

    def vary(self, **values: Any) -> Resolved:
        """The same model, instance, engine and transport with numeric fields as arrays.

        This is how sweeps and the flip search run many scenarios through one pass of the
        same physics. Values are checked with the rules `resolve()` applies to scalars. A plain
        number (or bool) stays one, as a float: a what-if of one row on the model's figures
        (no measured cell), computed without NumPy.
        """
        fields: dict[str, Any] = {}
        for name, value in values.items():
            if name not in VARIABLE:
                raise InputError(name, value, f"one of the numeric fields {', '.join(VARIABLE)}")
            if type(value) is bool and name == "cuda_graphs":
                fields[name] = value
                continue
            if type(value) in (int, float):
                fields[name] = _whole_float(name, value)
                continue
            arr = np.asarray(value)
            if name == "cuda_graphs":
                fields[name] = arr.astype(bool)
                continue
            check_array(name, arr)
            fields[name] = arr.astype(float)
        if "isl" in values or "osl" in values:
            check_context(
                self.model, fields.get("isl", self.scenario.isl), fields.get("osl", self.scenario.osl)
            )
        return replace(self, scenario=varied_scenario(self.scenario, **fields), measured=False)


VARIABLE = ("nodes", "comms", "max_qps", "concurrency", "isl", "osl", "cuda_graphs")


def check_array(name: str, arr: np.ndarray) -> None:
    """Array twin of the scalar checks: whole numbers in (0, limit]."""
    flag = flag_of(name)
    if arr.size == 0:
        raise InputError(flag, "[]", "at least one value")
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise InputError(flag, arr.reshape(-1)[0].item(), "whole numbers greater than 0")
    bad = ~np.isfinite(arr) | (arr <= 0) | (arr != np.floor(arr)) | (arr > LIMITS[name])
    if bad.any():
        value = arr[bad].reshape(-1)[0].item()
        raise InputError(flag, value, f"whole numbers from 1 to {LIMITS[name]:,}")


def _whole_float(name: str, value: float) -> float:
    """The scalar twin of `check_array`: a whole number in (0, limit], as a float."""
    if not (0 < value <= LIMITS[name] and float(value).is_integer()):
        raise InputError(flag_of(name), value, f"whole numbers from 1 to {LIMITS[name]:,}")
    return float(value)


def _positive_int(field: str, value: Any, limit: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(flag_of(field), value, "a whole number greater than 0")
    if value > limit:
        raise InputError(flag_of(field), value, f"at most {limit:,} (outside what the model covers)")


def _positive_float(field: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise InputError(flag_of(field), value, "a number greater than 0")
    if value != value or value in (float("inf"), float("-inf")) or value > FLOAT_LIMIT:
        raise InputError(flag_of(field), value, "a finite number below 1e12")


def check_numbers(s: Scenario) -> None:
    """The checks of every numeric field that need no catalog row (a profile's [scenario] too)."""
    for name in ("nodes", "comms", "max_qps", "concurrency", "isl", "osl"):
        _positive_int(name, getattr(s, name), LIMITS[name])
    if s.gpus_per_node is not None:
        _positive_int("gpus_per_node", s.gpus_per_node, LIMITS["gpus_per_node"])
    if s.max_batch is not None:
        _positive_int("max_batch", s.max_batch, LIMITS["max_batch"])
    for name in ("slo_tok_s", "ttft_ms", "price_per_hour"):
        _positive_float(name, getattr(s, name))


def check_context(model: ModelSpec, isl: Any, osl: Any) -> None:
    """ISL + OSL must fit the model's context window: an engine refuses a longer request.

    Works on scalars and arrays (sweeps); a model that declares no window is not checked.
    """
    limit = model.max_context
    if not limit:
        return
    if not is_array(isl) and not is_array(osl):  # one scenario: no NumPy
        i, o = float(isl), float(osl)
        if not i + o > limit:
            return
    else:
        isl_a, osl_a = np.asarray(isl, dtype=float), np.asarray(osl, dtype=float)
        over = isl_a + osl_a > limit
        if not np.any(over):
            return
        i = np.broadcast_to(isl_a, over.shape)[over].reshape(-1)[0].item()
        o = np.broadcast_to(osl_a, over.shape)[over].reshape(-1)[0].item()
    field, value = ("--osl", o) if o >= limit else ("--isl", i)
    raise InputError(
        field,
        int(value),
        f"ISL + OSL of at most {limit:,} tokens, the context window of {model.name} "
        f"(max_position_embeddings; here {int(i):,} + {int(o):,})",
    )


def check_transport_reach(transport: Transport, nodes: int, instance: str) -> None:
    """A transport that cannot leave a node is refused for a scenario that spans nodes (as
    `deepep-calc kernel` refuses an nvlink EP beyond one node)."""
    if transport.fabric == "nvlink" and nodes > 1:
        from ..catalog.transports import load_transports

        scale_out = [
            t.name for t in load_transports().values() if t.fabric != "nvlink" and instance in t.instances
        ]
        raise InputError(
            "--transport",
            transport.name,
            f"a scale-out transport for {nodes} nodes ({', '.join(scale_out)}): NVLink reaches only "
            "the GPUs of one node, so it serves DeepEP only with --nodes 1",
        )


# Reads the config.json a `--model` path names (`io/hf_config.py: load_hf_config`): this layer
# reads no file, so a caller that may be handed a path passes the reader in.
ModelReader = Callable[[str], ModelSpec]


def resolve(
    scenario: Scenario,
    models: Mapping[str, ModelSpec] | None = None,
    assumptions: Assumptions = CATALOG,
    read_model: ModelReader | None = None,
) -> Resolved:
    """Check every field and attach catalog rows; raise InputError on the first bad value.

    `models`: specs known only in memory (key -> spec) that `scenario.model` may name before
    the catalog is asked; the result carries them for its what-ifs (`Resolved.change`).
    `assumptions`: the constants in force (the transports' rows carry the figures it changes).
    `read_model`: how a config.json path is read, at the point the model is checked (so a bad
    file is reported where it always was); the spec read joins `models` for the what-ifs.
    """
    s = scenario
    check_numbers(s)
    models = dict(models or {})

    instance = get_instance(s.instance)
    engine = get_engine(s.engine)
    transport = get_transport(s.transport, assumptions)
    model = _model_of(s, models, read_model)

    gpn = s.gpus_per_node or instance.gpus_per_node
    if gpn > instance.gpus_per_node:
        raise InputError("--gpus-per-node", gpn, f"at most {instance.gpus_per_node} on {instance.name}")
    model = _with_weight_dtype(model, s.weight_dtype)
    if instance.name not in transport.instances:
        raise InputError(
            "--transport",
            transport.name,
            f"a transport available on {instance.name}: "
            + ", ".join(t for t in _transports_for(instance.name)),
        )
    spec = resolve_disagg(s, instance, engine, transport, assumptions)
    if spec is not None and s.nodes != spec.nodes:
        s = s.copy(nodes=spec.nodes)  # the cluster is P + D nodes; the aggregated arms run on all
    check_transport_reach(transport, s.nodes, instance.name)
    model = _apply_overrides(model, s)
    check_context(model, s.isl, s.osl)
    profile = None  # read by the caller (`io/inputs.py: resolve_files`): a file is not a catalog row
    if s.max_batch is not None:
        batch, batch_source = s.max_batch, "--max-batch"
    else:
        batch, batch_source = engine.max_batch_per_rank, engine.max_batch_source
    return Resolved(
        s,
        model,
        instance,
        engine,
        transport,
        gpn,
        profile,
        batch,
        batch_source,
        disagg=spec,
        models=models,
        assumptions=assumptions,
    )


def _with_weight_dtype(model: ModelSpec, weight_dtype: str | None) -> ModelSpec:
    """The model served in `--weight-dtype` (its routed experts too), checked; else as stored."""
    if weight_dtype is None:
        return model
    dtype = weight_dtype.strip().lower()
    if dtype not in DTYPES:
        raise InputError("--weight-dtype", weight_dtype, f"one of {', '.join(DTYPES)}")
    return model.copy(weight_dtype=dtype, expert_dtype=None)


def _model_of(s: Scenario, models: dict[str, ModelSpec], read_model: ModelReader | None) -> ModelSpec:
    """The model as the checkpoint stores it; a config.json path is read by `read_model` and
    kept in `models` (the what-ifs of the answer find it there)."""
    if read_model is not None and s.model not in models and find_model(s.model) is None:
        models[s.model] = read_model(s.model.strip())
    return native_model(s, models)


def native_model(scenario: Scenario, models: Mapping[str, ModelSpec] | None = None) -> ModelSpec:
    """The model `--model` names as its checkpoint stores it: before --weight-dtype and the
    structural overrides (the launch command picks the checkpoint from the difference).
    `models`: in-memory specs by key (an upload, a config.json already read), asked first."""
    if models and scenario.model in models:
        return models[scenario.model]
    spec = find_model(scenario.model)
    if spec is None:
        raise InputError(
            "--model",
            scenario.model,
            "a preset here: a config.json path is read by the caller (deepep_calc.io.inputs.resolve_files)",
        )
    return spec


_OVERRIDES = ("experts", "topk", "hidden", "moe_layers", "kv_dtype")


def _apply_overrides(model: ModelSpec, s: Scenario) -> ModelSpec:
    """Structural overrides on top of a preset; re-validated as a whole model."""
    update: dict[str, Any] = {}
    for name in _OVERRIDES:
        value = getattr(s, name)
        if value is None:
            continue
        flag = flag_of(name)
        if name == "kv_dtype":  # any case, as --weight-dtype: FP8 and fp8 are one dtype
            if not isinstance(value, str) or value.strip().lower() not in DTYPES:
                raise InputError(flag, value, f"one of {', '.join(DTYPES)}")
            value = value.strip().lower()
        else:
            _positive_int(name, value, OVERRIDE_LIMIT)
        update[name] = value
    if not update:
        return model
    merged = {**model.as_dict(exclude={"attention"}), **update}
    if merged["topk"] > merged["experts"]:
        raise InputError("--topk", merged["topk"], f"at most the expert count ({merged['experts']})")
    if merged["moe_layers"] > merged["layers"]:
        raise InputError(
            "--moe-layers", merged["moe_layers"], f"at most the layer count ({merged['layers']})"
        )
    if merged["moe_layers"] < merged["layers"] and merged["dense_intermediate"] <= 0:
        merged["dense_intermediate"] = merged["moe_intermediate"] * merged["topk"]
    merged["name"] = f"{model.name} (modified)"
    merged["source"] = f"{model.source}; user overrides {sorted(update)}"
    return model.copy(**merged)  # every value checked above; the spec's own rules run again


def _transports_for(instance: str) -> list[str]:
    from ..catalog.transports import load_transports

    return [t.name for t in load_transports().values() if instance in t.instances]
