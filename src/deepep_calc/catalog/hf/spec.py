"""Parsed config.json -> `ModelSpec`: the registry of family adapters and the shared fields.

Why a module of its own: this is where `model_type` picks its adapter, and where what every
family has in common (name, HF id, dtypes, context window, schema validation) is added once.
The registry is explicit: a new family is a module with `ADAPTERS` and one entry in `FAMILIES`.
"""

from __future__ import annotations

import re
from typing import Any

from deepep_calc.base.errors import FileInputError
from deepep_calc.base.records import RecordError
from deepep_calc.catalog.hf import dbrx, deepseek, glm4_moe, gpt_oss, llama4, mixtral, qwen3
from deepep_calc.catalog.hf.base import Adapter, Fields, one_line, show
from deepep_calc.catalog.hf.dtypes import read_dtypes
from deepep_calc.catalog.models import ModelSpec

_HF_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")

FAMILIES = (dbrx, deepseek, glm4_moe, gpt_oss, llama4, mixtral, qwen3)
"""Every family module; each maps the `model_type` values it reads to its adapter."""


def _registry() -> dict[str, Adapter]:
    """`model_type` -> adapter over every family; a type claimed by two modules is a bug."""
    out: dict[str, Adapter] = {}
    for module in FAMILIES:
        for model_type, adapter in module.ADAPTERS.items():
            if model_type in out:
                raise RuntimeError(f"model_type {model_type!r} is claimed by two family modules")
            out[model_type] = adapter
    return out


ADAPTERS = _registry()
# The family recorded on the spec: a text-only Llama 4 export is still Llama 4.
_FAMILY = {"llama4_text": "llama4"}
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(sorted(ADAPTERS))


def validation_summary(err: RecordError) -> tuple[str, str]:
    """(field, message) of the first problem, on one line.

    Cross-field rules carry no location, so their field is taken from the message's first
    word when that names a ModelSpec field ("topk (9) exceeds experts (8)" -> topk).
    """
    loc, msg = err.loc, one_line(err.msg)
    if not loc:
        head = msg.split(" ", 1)[0]
        loc = head if head in ModelSpec.field_names() else "model"
    return loc, msg


def _validation_error(origin: str, family: str, err: RecordError) -> FileInputError:
    loc, msg = validation_summary(err)
    return FileInputError(origin, f"does not describe a valid model: {loc}: {msg} ({family})", loc)


def _build(fields: dict[str, Any], origin: str, family: str) -> ModelSpec:
    try:
        return ModelSpec.validate(fields)
    except RecordError as err:
        raise _validation_error(origin, family, err) from None


def spec_from_hf_dict(
    d: dict[str, Any], source: str, name: str | None = None, origin: str = "config.json"
) -> ModelSpec:
    """Build a `ModelSpec` from parsed config.json contents.

    `name` is the fallback when the config has no `_name_or_path`; `origin` is what error
    messages point at (the file path when there is one).
    """
    origin = one_line(origin)
    if not isinstance(d, dict):
        raise FileInputError(origin, f"JSON top level is {type(d).__name__}, expected an object")
    top = Fields(d, origin, "model_type")
    model_type = top.text("model_type")
    if model_type is None:
        top.fail("model_type", "missing field 'model_type'")
    adapter = ADAPTERS.get(model_type)
    if adapter is None:
        raise FileInputError(
            origin,
            f"model_type {show(model_type)} is not a supported MoE family; supported: "
            f"{', '.join(SUPPORTED_MODEL_TYPES)}",
            field="model_type",
        )
    family = _FAMILY.get(model_type, model_type)
    top = Fields(d, origin, model_type)
    fields = adapter(top)
    weight, expert, kv = read_dtypes(top)

    declared = top.text("_name_or_path")
    declared = one_line(declared)[:200] if declared else ""
    fields.update(
        name=declared or one_line(name or "")[:200] or "config.json",
        hf_id=declared if _HF_ID.fullmatch(declared) else "",
        family=family,
        source=source,
        verified=True,
        weight_dtype=weight,
        expert_dtype=expert,
        kv_dtype=kv,
        max_context=_max_context(top),
    )
    return _build(fields, origin, model_type)


def _max_context(top: Fields) -> int:
    """The context window the config declares (0 when it declares none): ISL + OSL is checked
    against it, because an engine refuses a longer request rather than serving it slowly."""
    owners = [top]
    if isinstance(top.data.get("text_config"), dict):  # Llama 4 keeps it with the text model
        owners.append(top.child("text_config"))
    for owner in owners:
        for key in ("max_position_embeddings", "max_seq_len"):  # max_seq_len: DBRX
            if owner.has(key):
                return owner.integer(key, 0, minimum=0)
    return 0
