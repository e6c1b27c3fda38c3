"""What every model-family adapter shares: the strict field reader and the common pieces.

Why a module of its own: each MoE family spells the same ideas differently, so each gets one
small adapter module (`deepseek`, `qwen3`, `mixtral`, ...) that knows only its own names. What
they share lives once here: strict number checks and error wording (`Fields`, one-line
`FileInputError`s naming the full dotted field), and the pieces several families build from
(grouped-query attention, per-layer type counts, top-k and MoE-layer checks). An adapter is a
function `Fields -> dict` of `ModelSpec` fields; `spec` registers them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NoReturn

from deepep_calc.base.errors import FileInputError, printable

# Real config.json files are a few KB; anything this big is the wrong file (weights, a dump).
MAX_CONFIG_BYTES = 5 * 1024 * 1024
# Bounds that stop a typo (or a hostile file) from reaching the physics as a 40-digit integer.
MAX_INT = 10**9
MAX_LAYERS = 100_000


def show(value: Any, limit: int = 60) -> str:
    """Render a JSON value for an error message: short, and never spanning lines."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(text: str) -> str:
    """Collapse whitespace and escape control characters, so a path or a name read from a file
    can neither break the line nor drive the terminal (an ESC sequence in `_name_or_path`)."""
    return printable(" ".join(str(text).split()))


class Fields:
    """One JSON object plus its position, so every error names the full dotted field."""

    def __init__(self, data: dict[str, Any], origin: str, family: str, prefix: str = "") -> None:
        self.data = data
        self.origin = origin
        self.family = family
        self.prefix = prefix

    def fail(self, key: str, problem: str) -> NoReturn:
        raise FileInputError(self.origin, f"{problem} ({self.family})", field=self.prefix + key)

    def path(self, key: str) -> str:
        return self.prefix + key

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def integer(
        self, key: str, default: int | None = None, *, minimum: int = 1, maximum: int = MAX_INT
    ) -> int:
        """A required (no default) or optional integer; JSON null counts as absent."""
        value = self.data.get(key)
        if value is None:
            if default is None:
                self.fail(key, f"missing field '{self.path(key)}'")
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"field '{self.path(key)}' must be an integer, got {show(value)}")
        if value < minimum:
            kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
            self.fail(key, f"field '{self.path(key)}' must be {kind}, got {value}")
        if value > maximum:
            self.fail(key, f"field '{self.path(key)}' = {value} is implausibly large (max {maximum})")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.fail(key, f"field '{self.path(key)}' must be true or false, got {show(value)}")
        return value

    def text(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            self.fail(key, f"field '{self.path(key)}' must be a string, got {show(value)}")
        return value

    def ints(self, key: str) -> list[int]:
        """An optional list of non-negative integers (layer indices or 0/1 flags)."""
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_LAYERS for v in value
        ):
            self.fail(key, f"field '{self.path(key)}' must be a list of layer numbers")
        return value

    def texts(self, key: str, layers: int) -> list[str] | None:
        """An optional per-layer list of strings (`layer_types`); its length must match."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(key, f"field '{self.path(key)}' must be a list of strings")
        if len(value) != layers:
            self.fail(key, f"field '{self.path(key)}' has {len(value)} entries for {layers} layers")
        return value

    def child(self, key: str) -> Fields:
        """A required nested object (Llama 4 `text_config`, DBRX `ffn_config`)."""
        value = self.data.get(key)
        if value is None:
            self.fail(key, f"missing field '{self.path(key)}'")
        if not isinstance(value, dict):
            self.fail(key, f"field '{self.path(key)}' must be an object, got {show(value)}")
        return Fields(value, self.origin, self.family, self.path(key) + ".")


Adapter = Callable[[Fields], dict[str, Any]]
"""One family's reader: the config's fields in, `ModelSpec` keyword arguments out."""


def layer_count(f: Fields, key: str = "num_hidden_layers") -> int:
    return f.integer(key, maximum=MAX_LAYERS)


def check_topk(f: Fields, topk_key: str, topk: int, experts: int) -> None:
    if topk > experts:
        f.fail(topk_key, f"{f.path(topk_key)} ({topk}) exceeds the {experts} routed experts")


def check_moe_layers(f: Fields, key: str, moe_layers: int, layers: int) -> None:
    if moe_layers == 0:
        f.fail(key, f"field '{f.path(key)}' leaves no MoE layer among the {layers} layers")


def dense_intermediate(f: Fields, key: str, needed: bool) -> int:
    """The dense-MLP size: required only when some layers are dense, kept when stated anyway."""
    if needed:
        return f.integer(key)
    return f.integer(key, 0, minimum=0)


# size: the config, its hidden size, and keyword field names that differ per family (each adapter's own)
def gqa(
    f: Fields,
    hidden: int,
    *,
    derive_head_dim: bool,
    heads_key: str = "num_attention_heads",
    kv_key: str = "num_key_value_heads",
    kv_owner: Fields | None = None,
) -> dict[str, Any]:
    """Grouped-query attention, with no guessed defaults.

    The HF classes default missing KV heads and head_dim differently per family (Qwen3 128,
    DBRX one KV head, Mixtral hidden / heads), so KV heads are always required and head_dim
    is derived only where the architecture itself defines it as hidden / heads.
    """
    heads = f.integer(heads_key)
    owner = kv_owner or f
    kv_heads = owner.integer(kv_key)
    if heads % kv_heads:
        owner.fail(
            kv_key, f"{f.path(heads_key)} ({heads}) is not a multiple of {owner.path(kv_key)} ({kv_heads})"
        )
    if f.has("head_dim") or not derive_head_dim:
        head_dim = f.integer("head_dim")
    elif hidden % heads == 0:
        head_dim = hidden // heads
    else:
        f.fail(
            "head_dim",
            f"missing field '{f.path('head_dim')}' and hidden size {hidden} "
            f"is not divisible by {heads} heads",
        )
    return {"kind": "gqa", "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim}


def count_types(f: Fields, layers: int, wanted: str) -> int | None:
    """Layers of one kind according to `layer_types`, or None when the config has no list."""
    types = f.texts("layer_types", layers)
    return None if types is None else sum(1 for t in types if t == wanted)


# size: the spec's independent dimensions, read by each adapter under its own field names
def every_layer_moe(
    f: Fields,
    hidden: int,
    layers: int,
    experts: int,
    topk: int,
    moe_intermediate: int,
    attention: dict[str, Any],
) -> dict[str, Any]:
    """The spec of a family whose every layer is MoE with no shared expert (Mixtral, DBRX,
    gpt-oss): only the names of the fields differ between them, so the shape is stated once."""
    return {
        "hidden": hidden,
        "layers": layers,
        "moe_layers": layers,
        "experts": experts,
        "topk": topk,
        "moe_intermediate": moe_intermediate,
        "vocab": f.integer("vocab_size"),
        "tie_embeddings": f.flag("tie_word_embeddings", False),
        "attention": attention,
    }
