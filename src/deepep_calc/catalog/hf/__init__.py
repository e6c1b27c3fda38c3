"""Turn a Hugging Face `config.json` into a `ModelSpec`: one small adapter per model family.

Each MoE family spells the same ideas differently (`num_experts`, `n_routed_experts`,
`num_local_experts`; `first_k_dense_replace` vs `decoder_sparse_step` vs
`interleave_moe_layer_step`), so every family gets a module of its own that knows its own names
(`deepseek`, `qwen3`, `mixtral`, `gpt_oss`, `llama4`, `glm4_moe`, `dbrx`), in the way
LLM-Viewer keeps one config file per family. What they share lives once: the strict field
reader and common pieces in `base`, dtype and quantisation mapping in `dtypes`, the registry
and the fields every spec carries in `spec`; reading a config.json from disk is `io/hf_config.py`
(the catalog reads no user file). Every failure is a single-line `FileInputError` naming the
JSON field, because the person fixing it is looking at the file, not at this code.

Imports run one way: base -> families, dtypes -> spec. This module only re-exports what callers
use (`_build` is the schema-validation step `tests/catalog/hf/test_spec.py` drives).
"""

from deepep_calc.catalog.hf.base import MAX_CONFIG_BYTES
from deepep_calc.catalog.hf.spec import SUPPORTED_MODEL_TYPES, _build, spec_from_hf_dict, validation_summary

__all__ = [
    "MAX_CONFIG_BYTES",
    "SUPPORTED_MODEL_TYPES",
    "_build",
    "spec_from_hf_dict",
    "validation_summary",
]
