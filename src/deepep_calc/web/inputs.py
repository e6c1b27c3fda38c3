"""From what a browser sends to a `Result`, with errors that name the input to fix.

Three ways in, one way through: a JSON body (`/api/evaluate`), a form post (the page with
JavaScript off) and query parameters (a shared link) all become an `EvaluateRequest`, then a
`Scenario` evaluated by the same `evaluate()` as the CLI. The server never reads a file a
request names: `model` must be a preset, and a config.json arrives inline and is resolved in
memory (`evaluate(..., models=)`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from ..api import evaluate
from ..base.errors import CalcError, FileInputError, InputError
from ..base.vocabulary import TRUE_WORDS, flag_of
from ..catalog.hf import MAX_CONFIG_BYTES, spec_from_hf_dict
from ..catalog.model_catalog import load_models, preset_names
from ..catalog.models import ModelSpec
from ..estimate.result import Result
from ..question.scenario import FLOAT_FIELDS, INT_FIELDS, Scenario
from .schemas import EvaluateRequest

UPLOAD_PREFIX = "upload:"
CONFIG_ORIGIN = "uploaded config.json"

TEXT_FIELDS = (
    "model",
    "instance",
    "engine",
    "transport",
    "alternative",
    "weight_dtype",
    "kv_dtype",
    "kv_transport",
    "prefill_arm",
    "decode_arm",
    "prefill_transport",
    "decode_transport",
)
SIDE_MODES = ("prefill_cuda_graphs", "decode_cuda_graphs")  # blank: as the decode mode
TRUE = TRUE_WORDS

_EXPECT = {
    "int": "a whole number greater than 0",
    "float": "a number greater than 0",
    "bool": "true or false",
    "string": "text",
}


# pydantic's numeric limits, said as the CLI says them ("at most 64", not "input should be less
# than or equal to 64"): its error kind -> (words, the key of the limit in the error's context)
_BOUNDS = {
    "less_than_equal": ("at most", "le"),
    "less_than": ("less than", "lt"),
    "greater_than_equal": ("at least", "ge"),
    "greater_than": ("more than", "gt"),
}


def input_name(err: CalcError) -> str | None:
    """The page input (snake_case) an error is about: `--max-qps` -> `max_qps`."""
    field = err.field
    if not field:
        return None
    if field.startswith("--"):
        name = field[2:].replace("-", "_")
        return "cuda_graphs" if name == "eager" else name
    return field


_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")


def json_field(flag_name: str) -> str:
    """The JSON field a CLI flag stands for: `--max-qps` -> `max_qps` (`--eager` stays `eager`,
    which the API accepts beside `cuda_graphs`)."""
    return flag_name.removeprefix("--").replace("-", "_")


def api_message(err: CalcError) -> str:
    """The error line as a JSON client reads it: fields by their JSON names, not CLI flags.

    The core raises one message for every face, spelled with the CLI's flags; over HTTP there
    are no flags, so `--nodes: 0 is not allowed` becomes `nodes: 0 is not allowed`. Text in
    backticks is a command to run in a shell and keeps its flags.
    """
    parts = err.message.split("`")
    for i in range(0, len(parts), 2):  # outside backticks only
        parts[i] = _FLAG.sub(lambda m: json_field(m.group(0)), parts[i])
    return "`".join(parts)


def from_validation(err: ValidationError) -> CalcError:
    """pydantic's first complaint as the one-line error the CLI would print."""
    first = err.errors()[0]
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    kind = str(first.get("type", ""))
    value = first.get("input")
    if kind == "json_invalid":
        return CalcError(f"the request body is not valid JSON ({first.get('msg', '')})")
    if not loc or kind in ("model_attributes_type", "model_type"):
        return CalcError("the request body must be a JSON object of scenario fields")
    name = loc[0]
    plain = isinstance(value, int | float | str | bool) or value is None
    shown = value if plain else type(value).__name__
    if name == "config_json":  # a union: pydantic's first complaint names only one of its types
        return InputError(name, shown, "a config.json object, or its text")
    if kind == "extra_forbidden":
        known = ", ".join(k for k in EvaluateRequest.model_fields)
        return InputError(name, value, f"one of the known fields ({known})")
    head = kind.split("_", 1)[0]
    ctx = first.get("ctx", {})
    if kind == "literal_error":
        allowed = f"one of {ctx.get('expected', '')}"
    elif kind in _BOUNDS:
        word, key = _BOUNDS[kind]
        allowed = f"{word} {ctx.get(key)}"  # a limit of the API's own, in the CLI's words
    else:
        allowed = _EXPECT.get(head, str(first.get("msg", "a valid value")).lower())
    return InputError(flag_of(name), shown, allowed)


def request_from_json(data: Any) -> EvaluateRequest:
    try:
        return EvaluateRequest.model_validate(data)
    except ValidationError as err:
        raise from_validation(err) from None


def request_from_form(form: Mapping[str, Any], upload: str | None = None) -> EvaluateRequest:
    """Form fields (all text, blank = default) as a request; `upload` is a config file's text."""
    data: dict[str, Any] = {}
    for name in INT_FIELDS:
        text = str(form.get(name) or "").strip()
        if text:
            try:
                data[name] = int(text)
            except ValueError:
                raise InputError(flag_of(name), text, _EXPECT["int"]) from None
    for name in FLOAT_FIELDS:
        text = str(form.get(name) or "").strip()
        if text:
            try:
                data[name] = float(text)
            except ValueError:
                raise InputError(flag_of(name), text, _EXPECT["float"]) from None
    for name in TEXT_FIELDS:
        text = str(form.get(name) or "").strip()
        if text:
            data[name] = text
    graphs = str(form.get("cuda_graphs") or "").strip().lower()
    data["cuda_graphs"] = graphs in TRUE
    eager = str(form.get("eager") or "").strip().lower()
    if eager:  # the CLI's spelling, e.g. in a hand-written link
        data["cuda_graphs"] = eager not in TRUE
    for name in SIDE_MODES:
        text = str(form.get(name) or "").strip().lower()
        if text:
            data[name] = text in TRUE
    split = str(form.get("disagg") or "").strip()
    if split:
        data["disagg"] = split
    config = upload if upload and upload.strip() else str(form.get("config_text") or "")
    if config.strip():
        data["config_json"] = config
    return request_from_json(data)


def _preset_key(model: str) -> str:
    """A preset name or a preset's HF id; anything else (a path above all) is refused."""
    text = model.strip().lower()
    names = preset_names()
    if text in names:
        return model
    for key, spec in load_models().items():
        if spec.hf_id and spec.hf_id.lower() == text:
            return key
    raise InputError(
        "--model", model, f"a preset ({', '.join(names)}), or upload / paste a config.json on the page"
    )


def parse_config(config: dict[str, Any] | str) -> tuple[str, ModelSpec]:
    """An inline config.json as a model spec, keyed by a hash of its content."""
    try:
        if isinstance(config, str):
            if len(config.encode("utf-8", "replace")) > MAX_CONFIG_BYTES:
                raise FileInputError(CONFIG_ORIGIN, "is larger than 5 MB; refused")
            try:
                data = json.loads(config)
            except json.JSONDecodeError as err:
                raise FileInputError(
                    CONFIG_ORIGIN,
                    f"is not valid JSON ({err.msg} at line {err.lineno} column {err.colno})",
                ) from None
            except (RecursionError, ValueError) as err:
                raise FileInputError(CONFIG_ORIGIN, f"is not valid JSON ({type(err).__name__})") from None
        else:
            data = config
        spec = spec_from_hf_dict(
            data, source="config.json sent to the web page", name="uploaded model", origin=CONFIG_ORIGIN
        )
    except CalcError as err:
        err.field = "config_json"
        raise
    digest = hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:12]
    return UPLOAD_PREFIX + digest, spec


def prepare(req: EvaluateRequest) -> tuple[Scenario, dict[str, ModelSpec]]:
    """The scenario to evaluate and the in-memory models it names."""
    if req.calibration is not None:
        raise InputError(
            "--calibration",
            req.calibration,
            "nothing over HTTP (the server reads no files); use `deepep-calc evaluate --calibration`",
        )
    if req.config_json is not None:
        key, spec = parse_config(req.config_json)
        return req.to_scenario(model=key), {key: spec}
    return req.to_scenario(model=_preset_key(req.model)), {}


def run(req: EvaluateRequest) -> Result:
    scenario, specs = prepare(req)
    return evaluate(scenario, models=specs)


def cache_key(req: EvaluateRequest) -> str:
    """A digest of the whole request (an inline config can be large; the key stays small)."""
    text = json.dumps(req.model_dump(), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()
