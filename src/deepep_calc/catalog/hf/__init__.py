"""Turn a Hugging Face `config.json` into a `ModelSpec`.

Each MoE family spells the same ideas differently (`num_experts`, `n_routed_experts`,
`num_local_experts`; `first_k_dense_replace` vs `decoder_sparse_step` vs
`interleave_moe_layer_step`), so every `model_type` gets one small adapter that knows its own
names. What they share lives once here: strict number checks, dtype and quantisation mapping,
and error wording. Every failure is a single-line `FileInputError` naming the JSON field,
because the person fixing it is looking at the file, not at this code.
"""

from __future__ import annotations

import errno
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from deepep_calc.catalog.models import ModelSpec
from deepep_calc.errors import FileInputError, printable

# Real config.json files are a few KB; anything this big is the wrong file (weights, a dump).
MAX_CONFIG_BYTES = 5 * 1024 * 1024
# Bounds that stop a typo (or a hostile file) from reaching the physics as a 40-digit integer.
_MAX_INT = 10**9
_MAX_LAYERS = 100_000

_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
# quant_method -> (weight_dtype override, expert_dtype). fp8 checkpoints (DeepSeek, Kimi, Qwen
# -FP8) quantise every linear layer; gpt-oss MXFP4 quantises only the routed experts.
_QUANT_METHODS: dict[str, tuple[str | None, str | None]] = {
    "fp8": ("fp8", None),
    "mxfp4": (None, "mxfp4"),
}
_HF_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def _show(value: Any, limit: int = 60) -> str:
    """Render a JSON value for an error message: short, and never spanning lines."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _one_line(text: str) -> str:
    """Collapse whitespace and escape control characters, so a path or a name read from a file
    can neither break the line nor drive the terminal (an ESC sequence in `_name_or_path`)."""
    return printable(" ".join(str(text).split()))


class _Fields:
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
        self, key: str, default: int | None = None, *, minimum: int = 1, maximum: int = _MAX_INT
    ) -> int:
        """A required (no default) or optional integer; JSON null counts as absent."""
        value = self.data.get(key)
        if value is None:
            if default is None:
                self.fail(key, f"missing field '{self.path(key)}'")
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"field '{self.path(key)}' must be an integer, got {_show(value)}")
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
            self.fail(key, f"field '{self.path(key)}' must be true or false, got {_show(value)}")
        return value

    def text(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            self.fail(key, f"field '{self.path(key)}' must be a string, got {_show(value)}")
        return value

    def ints(self, key: str) -> list[int]:
        """An optional list of non-negative integers (layer indices or 0/1 flags)."""
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= _MAX_LAYERS for v in value
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

    def child(self, key: str) -> _Fields:
        """A required nested object (Llama 4 `text_config`, DBRX `ffn_config`)."""
        value = self.data.get(key)
        if value is None:
            self.fail(key, f"missing field '{self.path(key)}'")
        if not isinstance(value, dict):
            self.fail(key, f"field '{self.path(key)}' must be an object, got {_show(value)}")
        return _Fields(value, self.origin, self.family, self.path(key) + ".")


# ---------------------------------------------------------------- shared pieces of adapters


def _layers(f: _Fields, key: str = "num_hidden_layers") -> int:
    return f.integer(key, maximum=_MAX_LAYERS)


def _check_topk(f: _Fields, topk_key: str, topk: int, experts: int) -> None:
    if topk > experts:
        f.fail(topk_key, f"{f.path(topk_key)} ({topk}) exceeds the {experts} routed experts")


def _check_moe_layers(f: _Fields, key: str, moe_layers: int, layers: int) -> None:
    if moe_layers == 0:
        f.fail(key, f"field '{f.path(key)}' leaves no MoE layer among the {layers} layers")


def _dense_intermediate(f: _Fields, key: str, needed: bool) -> int:
    """The dense-MLP size: required only when some layers are dense, kept when stated anyway."""
    if needed:
        return f.integer(key)
    return f.integer(key, 0, minimum=0)


def _gqa(
    f: _Fields,
    hidden: int,
    *,
    derive_head_dim: bool,
    heads_key: str = "num_attention_heads",
    kv_key: str = "num_key_value_heads",
    kv_owner: _Fields | None = None,
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


def _count_types(f: _Fields, layers: int, wanted: str) -> int | None:
    """Layers of one kind according to `layer_types`, or None when the config has no list."""
    types = f.texts("layer_types", layers)
    return None if types is None else sum(1 for t in types if t == wanted)


def _alternating_sliding(f: _Fields, layers: int) -> dict[str, int]:
    """gpt-oss style: `layer_types` if listed, else sliding on even-indexed layers (HF default)."""
    window = f.integer("sliding_window", 0, minimum=0)
    if not window:
        return {}
    count = _count_types(f, layers, "sliding_attention")
    if count is None:
        count = sum(1 for i in range(layers) if (i + 1) % 2)
    return {"sliding_window": window, "sliding_layers": count} if count else {}


# ---------------------------------------------------------------- one adapter per model_type


def _deepseek(f: _Fields) -> dict[str, Any]:
    """DeepSeek-V2/V3 and Kimi-K2: MLA attention, dense prefix, routed + shared experts."""
    hidden = f.integer("hidden_size")
    layers = _layers(f)
    experts = f.integer("n_routed_experts")
    topk = f.integer("num_experts_per_tok")
    _check_topk(f, "num_experts_per_tok", topk, experts)
    first_dense = f.integer("first_k_dense_replace", 0, minimum=0, maximum=_MAX_LAYERS)
    freq = f.integer("moe_layer_freq", 1, maximum=_MAX_LAYERS)
    moe_layers = sum(1 for i in range(layers) if i >= first_dense and i % freq == 0)
    _check_moe_layers(f, "first_k_dense_replace", moe_layers, layers)
    moe_inter = f.integer("moe_intermediate_size")
    shared = f.integer("n_shared_experts", 0, minimum=0)
    heads = f.integer("num_attention_heads")
    return {
        "hidden": hidden,
        "layers": layers,
        "moe_layers": moe_layers,
        "experts": experts,
        "shared_experts": shared,
        "topk": topk,
        "moe_intermediate": moe_inter,
        # The HF code builds the shared experts as one MLP of moe_intermediate x n_shared.
        "shared_intermediate": moe_inter if shared else 0,
        "dense_intermediate": _dense_intermediate(f, "intermediate_size", moe_layers < layers),
        "vocab": f.integer("vocab_size"),
        "tie_embeddings": f.flag("tie_word_embeddings", False),
        "attention": {
            "kind": "mla",
            "heads": heads,
            "kv_heads": heads,
            "head_dim": 0,
            "q_lora_rank": f.integer("q_lora_rank", 0, minimum=0),
            "kv_lora_rank": f.integer("kv_lora_rank"),
            "qk_rope_head_dim": f.integer("qk_rope_head_dim"),
            "qk_nope_head_dim": f.integer("qk_nope_head_dim"),
            "v_head_dim": f.integer("v_head_dim"),
        },
    }


def _qwen_layout(f: _Fields, layers: int) -> int:
    """MoE layers under Qwen's `decoder_sparse_step` and `mlp_only_layers` rules."""
    step = f.integer("decoder_sparse_step", 1, maximum=_MAX_LAYERS)
    dense_only = set(f.ints("mlp_only_layers"))
    moe_layers = sum(1 for i in range(layers) if i not in dense_only and (i + 1) % step == 0)
    _check_moe_layers(f, "decoder_sparse_step", moe_layers, layers)
    return moe_layers


def _qwen_common(f: _Fields) -> dict[str, Any]:
    hidden = f.integer("hidden_size")
    layers = _layers(f)
    experts = f.integer("num_experts")
    topk = f.integer("num_experts_per_tok")
    _check_topk(f, "num_experts_per_tok", topk, experts)
    moe_layers = _qwen_layout(f, layers)
    shared_inter = f.integer("shared_expert_intermediate_size", 0, minimum=0)
    return {
        "hidden": hidden,
        "layers": layers,
        "moe_layers": moe_layers,
        "experts": experts,
        "shared_experts": 1 if shared_inter else 0,
        "topk": topk,
        "moe_intermediate": f.integer("moe_intermediate_size"),
        "shared_intermediate": shared_inter,
        "dense_intermediate": _dense_intermediate(f, "intermediate_size", moe_layers < layers),
        "vocab": f.integer("vocab_size"),
        "tie_embeddings": f.flag("tie_word_embeddings", False),
        "attention": _gqa(f, hidden, derive_head_dim=False),
    }


def _qwen3_moe(f: _Fields) -> dict[str, Any]:
    """Qwen3-MoE: GQA; sliding window only if `use_sliding_window` (off in released models)."""
    spec = _qwen_common(f)
    layers = spec["layers"]
    window = f.integer("sliding_window", 0, minimum=0)
    sliding = _count_types(f, layers, "sliding_attention")
    if sliding is None:
        sliding = 0
        if f.flag("use_sliding_window", False) and window:
            # Qwen keeps full attention in the first max_window_layers layers.
            full = f.integer("max_window_layers", layers, minimum=0, maximum=_MAX_LAYERS)
            sliding = max(layers - full, 0)
    if sliding and window:
        spec["attention"].update(sliding_window=window, sliding_layers=sliding)
    return spec


def _qwen3_next(f: _Fields) -> dict[str, Any]:
    """Qwen3-Next: 3 of 4 layers Gated DeltaNet (constant fp32 state), the rest full GQA."""
    spec = _qwen_common(f)
    layers = spec["layers"]
    hidden = spec["hidden"]
    linear = _count_types(f, layers, "linear_attention")
    if linear is None:
        interval = f.integer("full_attention_interval", 4, maximum=_MAX_LAYERS)
        linear = sum(1 for i in range(layers) if (i + 1) % interval)
    if linear:
        nk = f.integer("linear_num_key_heads")
        nv = f.integer("linear_num_value_heads")
        dk = f.integer("linear_key_head_dim")
        dv = f.integer("linear_value_head_dim")
        spec["attention"].update(
            linear_layers=linear,
            # Recurrent state per sequence per layer: one dk x dv matrix per value head, fp32.
            linear_state_bytes=nv * dk * dv * 4,
            # in_proj_qkvz + in_proj_ba (one a and one b per value head) + out_proj.
            linear_params=hidden * (2 * nk * dk + 2 * nv * dv) + hidden * 2 * nv + nv * dv * hidden,
        )
    return spec


def _mixtral(f: _Fields) -> dict[str, Any]:
    """Mixtral: every layer MoE, no shared expert; a sliding window applies to all layers."""
    hidden = f.integer("hidden_size")
    layers = _layers(f)
    experts = f.integer("num_local_experts")
    topk = f.integer("num_experts_per_tok")
    _check_topk(f, "num_experts_per_tok", topk, experts)
    attention = _gqa(f, hidden, derive_head_dim=True)
    window = f.integer("sliding_window", 0, minimum=0)
    if window:
        attention.update(sliding_window=window, sliding_layers=layers)
    return {
        "hidden": hidden,
        "layers": layers,
        "moe_layers": layers,
        "experts": experts,
        "topk": topk,
        "moe_intermediate": f.integer("intermediate_size"),
        "vocab": f.integer("vocab_size"),
        "tie_embeddings": f.flag("tie_word_embeddings", False),
        "attention": attention,
    }


def _gpt_oss(f: _Fields) -> dict[str, Any]:
    """gpt-oss: every layer MoE, alternating sliding-128 / full attention."""
    hidden = f.integer("hidden_size")
    layers = _layers(f)
    experts = f.integer("num_local_experts")
    # Released configs carry both spellings; older exports only the second.
    topk_key = "num_experts_per_tok"
    if not f.has(topk_key) and f.has("experts_per_token"):
        topk_key = "experts_per_token"
    topk = f.integer(topk_key)
    _check_topk(f, topk_key, topk, experts)
    attention = _gqa(f, hidden, derive_head_dim=False)
    attention.update(_alternating_sliding(f, layers))
    return {
        "hidden": hidden,
        "layers": layers,
        "moe_layers": layers,
        "experts": experts,
        "topk": topk,
        "moe_intermediate": f.integer("intermediate_size"),
        "vocab": f.integer("vocab_size"),
        "tie_embeddings": f.flag("tie_word_embeddings", False),
        "attention": attention,
    }


def _llama4(top: _Fields) -> dict[str, Any]:
    """Llama 4: text model under `text_config`; MoE every Nth layer; chunked attention."""
    f = top.child("text_config") if top.data.get("model_type") == "llama4" else top
    hidden = f.integer("hidden_size")
    layers = _layers(f)
    experts = f.integer("num_local_experts")
    topk = f.integer("num_experts_per_tok")
    _check_topk(f, "num_experts_per_tok", topk, experts)
    listed = f.ints("moe_layers")
    if listed:
        if any(i >= layers for i in listed):
            f.fail("moe_layers", f"field '{f.path('moe_layers')}' names a layer beyond {layers}")
        moe_layers = len(set(listed))
        layout_key = "moe_layers"
    else:
        step = f.integer("interleave_moe_layer_step", 1, maximum=_MAX_LAYERS)
        moe_layers = len(range(step - 1, layers, step))
        layout_key = "interleave_moe_layer_step"
    _check_moe_layers(f, layout_key, moe_layers, layers)
    moe_inter = f.integer("intermediate_size")
    attention = _gqa(f, hidden, derive_head_dim=False)
    chunk = f.integer("attention_chunk_size", 0, minimum=0)
    if chunk:
        # Chunked layers keep at most one chunk of KV, so they are modelled as sliding layers.
        # RoPE layers are chunked; every `no_rope_layer_interval`-th layer is NoPE and full.
        chunked = _count_types(f, layers, "chunked_attention")
        if chunked is None:
            flags = f.ints("no_rope_layers")
            if flags and len(flags) == layers:
                chunked = sum(1 for v in flags if v)
            else:
                interval = f.integer("no_rope_layer_interval", 4, maximum=_MAX_LAYERS)
                chunked = sum(1 for i in range(layers) if (i + 1) % interval)
        if chunked:
            attention.update(sliding_window=chunk, sliding_layers=chunked)
    tie = f.flag("tie_word_embeddings", top.flag("tie_word_embeddings", False))
    return {
        "hidden": hidden,
        "layers": layers,
        "moe_layers": moe_layers,
        "experts": experts,
        "shared_experts": 1,  # every Llama 4 MoE layer has one shared expert of the same size
        "topk": topk,
        "moe_intermediate": moe_inter,
        "shared_intermediate": moe_inter,
        "dense_intermediate": _dense_intermediate(f, "intermediate_size_mlp", moe_layers < layers),
        "vocab": f.integer("vocab_size"),
        "tie_embeddings": tie,
        "attention": attention,
    }


def _glm4_moe(f: _Fields) -> dict[str, Any]:
    """GLM-4.5: DeepSeek-style layout (dense prefix, shared expert) with GQA attention."""
    hidden = f.integer("hidden_size")
    layers = _layers(f)
    experts = f.integer("n_routed_experts")
    topk = f.integer("num_experts_per_tok")
    _check_topk(f, "num_experts_per_tok", topk, experts)
    first_dense = f.integer("first_k_dense_replace", 0, minimum=0, maximum=_MAX_LAYERS)
    moe_layers = max(layers - first_dense, 0)
    _check_moe_layers(f, "first_k_dense_replace", moe_layers, layers)
    moe_inter = f.integer("moe_intermediate_size")
    shared = f.integer("n_shared_experts", 0, minimum=0)
    return {
        "hidden": hidden,
        "layers": layers,
        "moe_layers": moe_layers,
        "experts": experts,
        "shared_experts": shared,
        "topk": topk,
        "moe_intermediate": moe_inter,
        "shared_intermediate": moe_inter if shared else 0,
        "dense_intermediate": _dense_intermediate(f, "intermediate_size", moe_layers < layers),
        "vocab": f.integer("vocab_size"),
        "tie_embeddings": f.flag("tie_word_embeddings", False),
        "attention": _gqa(f, hidden, derive_head_dim=False),
    }


def _dbrx(f: _Fields) -> dict[str, Any]:
    """DBRX: MosaicML names, experts under `ffn_config`, KV heads under `attn_config`."""
    hidden = f.integer("d_model")
    layers = _layers(f, "n_layers")
    ffn = f.child("ffn_config")
    attn = f.child("attn_config")
    experts = ffn.integer("moe_num_experts")
    topk = ffn.integer("moe_top_k")
    _check_topk(ffn, "moe_top_k", topk, experts)
    return {
        "hidden": hidden,
        "layers": layers,
        "moe_layers": layers,
        "experts": experts,
        "topk": topk,
        "moe_intermediate": ffn.integer("ffn_hidden_size"),
        "vocab": f.integer("vocab_size"),
        "tie_embeddings": f.flag("tie_word_embeddings", False),
        "attention": _gqa(
            f,
            hidden,
            derive_head_dim=True,
            heads_key="n_heads",
            kv_key="kv_n_heads",
            kv_owner=attn,
        ),
    }


_ADAPTERS: dict[str, Callable[[_Fields], dict[str, Any]]] = {
    "dbrx": _dbrx,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "glm4_moe": _glm4_moe,
    "gpt_oss": _gpt_oss,
    "kimi_k2": _deepseek,
    "llama4": _llama4,
    "llama4_text": _llama4,
    "mixtral": _mixtral,
    "qwen3_moe": _qwen3_moe,
    "qwen3_next": _qwen3_next,
}
# The family recorded on the spec: a text-only Llama 4 export is still Llama 4.
_FAMILY = {"llama4_text": "llama4"}
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(sorted(_ADAPTERS))


# ---------------------------------------------------------------- dtypes and quantisation


def _dtypes(top: _Fields) -> tuple[str, str | None, str]:
    """(weight, routed-expert, kv) dtypes from `torch_dtype`/`dtype` and `quantization_config`.

    float32 stays fp32 rather than being silently halved: the file is what the user has, and
    the calculator should size what they would load. A missing dtype means bf16, the serving
    default of every engine here.
    """
    owner, key = top, "torch_dtype"
    text = top.data.get("text_config")
    candidates = [(top, "torch_dtype"), (top, "dtype")]
    if isinstance(text, dict):
        sub = _Fields(text, top.origin, top.family, "text_config.")
        candidates += [(sub, "torch_dtype"), (sub, "dtype")]
    for cand_owner, cand_key in candidates:
        if cand_owner.has(cand_key):
            owner, key = cand_owner, cand_key
            break
    raw = owner.text(key)
    if raw is None:
        base = "bf16"
    else:
        base = _TORCH_DTYPES.get(raw.removeprefix("torch."), "")
        if not base:
            owner.fail(
                key, f"field '{owner.path(key)}' is {_show(raw)}; expected one of {', '.join(_TORCH_DTYPES)}"
            )
    weight, expert = base, None
    if top.has("quantization_config"):
        quant = top.child("quantization_config")
        method = quant.text("quant_method")
        if method is None:
            quant.fail("quant_method", f"missing field '{quant.path('quant_method')}'")
        if method.lower() not in _QUANT_METHODS:
            quant.fail(
                "quant_method",
                f"field '{quant.path('quant_method')}' is {_show(method)}; supported: "
                f"{', '.join(_QUANT_METHODS)} (or remove quantization_config and pass "
                "--weight-dtype)",
            )
        weight_override, expert = _QUANT_METHODS[method.lower()]
        weight = weight_override or weight
    return weight, expert, base


# ---------------------------------------------------------------- entry points


def validation_summary(err: ValidationError) -> tuple[str, str]:
    """(field, message) of pydantic's first problem, on one line.

    Cross-field rules carry no location, so their field is taken from the message's first
    word when that names a ModelSpec field ("topk (9) exceeds experts (8)" -> topk).
    """
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()))
    msg = _one_line(str(first.get("msg", "invalid value")).removeprefix("Value error, "))
    if not loc:
        head = msg.split(" ", 1)[0]
        loc = head if head in ModelSpec.model_fields else "model"
    return loc, msg


def _validation_error(origin: str, family: str, err: ValidationError) -> FileInputError:
    loc, msg = validation_summary(err)
    return FileInputError(origin, f"does not describe a valid model: {loc}: {msg} ({family})", loc)


def _build(fields: dict[str, Any], origin: str, family: str) -> ModelSpec:
    try:
        return ModelSpec(**fields)
    except ValidationError as err:
        raise _validation_error(origin, family, err) from None


def spec_from_hf_dict(
    d: dict[str, Any], source: str, name: str | None = None, origin: str = "config.json"
) -> ModelSpec:
    """Build a `ModelSpec` from parsed config.json contents.

    `name` is the fallback when the config has no `_name_or_path`; `origin` is what error
    messages point at (the file path when there is one).
    """
    origin = _one_line(origin)
    if not isinstance(d, dict):
        raise FileInputError(origin, f"JSON top level is {type(d).__name__}, expected an object")
    top = _Fields(d, origin, "model_type")
    model_type = top.text("model_type")
    if model_type is None:
        top.fail("model_type", "missing field 'model_type'")
    adapter = _ADAPTERS.get(model_type)
    if adapter is None:
        raise FileInputError(
            origin,
            f"model_type {_show(model_type)} is not a supported MoE family; supported: "
            f"{', '.join(SUPPORTED_MODEL_TYPES)}",
            field="model_type",
        )
    family = _FAMILY.get(model_type, model_type)
    top = _Fields(d, origin, model_type)
    fields = adapter(top)
    weight, expert, kv = _dtypes(top)

    declared = top.text("_name_or_path")
    declared = _one_line(declared)[:200] if declared else ""
    fields.update(
        name=_one_line(declared or "")[:200] or _one_line(name or "")[:200] or "config.json",
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


def _max_context(top: _Fields) -> int:
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


def _read_json(file: Path) -> Any:
    """Bounded, decoded, parsed: each failure mode gets its own plain sentence."""
    shown = _one_line(str(file))
    try:
        size = file.stat().st_size
    except OSError as err:
        raise FileInputError(
            shown, f"cannot be read ({_one_line(err.strerror or str(err))})", field="path"
        ) from None
    if size > MAX_CONFIG_BYTES:
        raise FileInputError(
            shown, f"is {size:,} bytes; a config.json over 5 MB is refused unread", field="path"
        )
    try:
        with file.open("rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as err:
        raise FileInputError(
            shown, f"cannot be read ({_one_line(err.strerror or str(err))})", field="path"
        ) from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise FileInputError(shown, "is larger than 5 MB; refused", field="path")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise FileInputError(
            shown, f"is not UTF-8 text (invalid byte at offset {err.start})", field="path"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise FileInputError(
            shown,
            f"is not valid JSON ({err.msg} at line {err.lineno} column {err.colno})",
            field="path",
        ) from None
    except RecursionError:
        raise FileInputError(shown, "is not valid JSON (nested too deeply)", field="path") from None
    except ValueError:  # the only other parse failure: an integer beyond Python's digit limit
        raise FileInputError(
            shown, "is not valid JSON (a number with thousands of digits)", field="path"
        ) from None


def load_hf_config(path: str | Path) -> ModelSpec:
    """Load a config.json (or a folder holding one) as a verified `ModelSpec`."""
    given = Path(path).expanduser()
    shown = _one_line(str(given))
    try:
        given.stat()  # follows symlinks: HF cache snapshots are links into blobs/
    except (OSError, ValueError) as err:
        if isinstance(err, OSError) and err.errno == errno.ELOOP:
            raise FileInputError(shown, "is a symbolic link loop", field="path") from None
        if isinstance(err, OSError) and not isinstance(err, FileNotFoundError):
            raise FileInputError(
                shown, f"cannot be read ({_one_line(err.strerror or str(err))})", field="path"
            ) from None
        dangling = " (a symbolic link to a missing target)" if given.is_symlink() else ""
        raise FileInputError(shown, f"no such file or folder{dangling}", field="path") from None
    if given.is_dir():
        file = given / "config.json"
        if not file.exists():
            raise FileInputError(shown, "folder has no config.json", field="path")
        fallback = given.resolve().name
    else:
        file = given
        fallback = given.resolve().parent.name if given.name == "config.json" else given.stem
    if not file.is_file():
        raise FileInputError(_one_line(str(file)), "is not a regular file", field="path")
    data = _read_json(file)
    where = _one_line(str(file))
    return spec_from_hf_dict(data, source=f"config.json at {where}", name=fallback, origin=where)
