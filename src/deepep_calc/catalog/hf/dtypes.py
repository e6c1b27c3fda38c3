"""Weight, routed-expert and KV dtypes from `torch_dtype` / `dtype` and `quantization_config`.

Why a module of its own: the mapping is the same for every family (only Llama 4 moves the
dtype under `text_config`), and which quantisation methods we accept is a policy worth seeing
in one place.
"""

from __future__ import annotations

from deepep_calc.catalog.hf.base import Fields, show

TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
# quant_method -> (weight_dtype override, expert_dtype). fp8 checkpoints (DeepSeek, Kimi, Qwen
# -FP8) quantise every linear layer; gpt-oss MXFP4 quantises only the routed experts.
QUANT_METHODS: dict[str, tuple[str | None, str | None]] = {
    "fp8": ("fp8", None),
    "mxfp4": (None, "mxfp4"),
}


def read_dtypes(top: Fields) -> tuple[str, str | None, str]:
    """(weight, routed-expert, kv) dtypes from `torch_dtype`/`dtype` and `quantization_config`.

    float32 stays fp32 rather than being silently halved: the file is what the user has, and
    the calculator should size what they would load. A missing dtype means bf16, the serving
    default of every engine here.
    """
    owner, key = top, "torch_dtype"
    text = top.data.get("text_config")
    candidates = [(top, "torch_dtype"), (top, "dtype")]
    if isinstance(text, dict):
        sub = Fields(text, top.origin, top.family, "text_config.")
        candidates += [(sub, "torch_dtype"), (sub, "dtype")]
    for cand_owner, cand_key in candidates:
        if cand_owner.has(cand_key):
            owner, key = cand_owner, cand_key
            break
    raw = owner.text(key)
    if raw is None:
        base = "bf16"
    else:
        base = TORCH_DTYPES.get(raw.removeprefix("torch."), "")
        if not base:
            owner.fail(
                key, f"field '{owner.path(key)}' is {show(raw)}; expected one of {', '.join(TORCH_DTYPES)}"
            )
    weight, expert = base, None
    if top.has("quantization_config"):
        quant = top.child("quantization_config")
        method = quant.text("quant_method")
        if method is None:
            quant.fail("quant_method", f"missing field '{quant.path('quant_method')}'")
        if method.lower() not in QUANT_METHODS:
            quant.fail(
                "quant_method",
                f"field '{quant.path('quant_method')}' is {show(method)}; supported: "
                f"{', '.join(QUANT_METHODS)} (or remove quantization_config and pass "
                "--weight-dtype)",
            )
        weight_override, expert = QUANT_METHODS[method.lower()]
        weight = weight_override or weight
    return weight, expert, base
