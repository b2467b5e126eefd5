"""moe_oracle.tools.vllm_moe_archs on a small written source tree (no vLLM needed)."""

from __future__ import annotations

from pathlib import Path

from moe_oracle.tools.vllm_moe_archs import moe_architectures

_REGISTRY = '''
_TEXT_GENERATION_MODELS = {
    "BigForCausalLM": ("big_moe", "BigForCausalLM"),
    "DenseForCausalLM": ("dense", "DenseForCausalLM"),
    "SubForCausalLM": ("sub", "SubForCausalLM"),
    "Qwen9ForCausalLM": ("qwen9", "Qwen9ForCausalLM"),
    "Qwen9MoeForCausalLM": ("qwen9", "Qwen9MoeForCausalLM"),
}
_MULTIMODAL_MODELS = {
    "WrapVL": ("wrap_vl", "WrapVL"),
    "WrapDense": ("wrap_dense", "WrapDense"),
    "WrapQwen9": ("wrap_qwen9", "WrapQwen9"),
}
_SPECULATIVE_DECODING_MODELS = {"DenseDraft": ("dense_draft", "DenseDraft")}
'''

_FILES = {
    "big_moe.py": "from vllm.model_executor.layers.fused_moe import FusedMoE\nclass BigForCausalLM:\n    def __init__(self):\n        self.experts = FusedMoE()\n",
    "dense.py": "class DenseForCausalLM:\n    pass\n",
    "sub.py": "from .big_moe import BigForCausalLM\nclass SubForCausalLM(BigForCausalLM):\n    pass\n",
    "qwen9.py": "from vllm.model_executor.layers.fused_moe import FusedMoE\nclass Qwen9ForCausalLM:\n    pass\nclass Qwen9MoeForCausalLM:\n    def __init__(self):\n        self.e = FusedMoE()\n",
    "wrap_vl.py": "from .utils import init_vllm_registered_model\nclass WrapVL:\n    def __init__(self):\n        self.language_model = init_vllm_registered_model(architectures=[\"BigForCausalLM\"])\n",
    "wrap_dense.py": "from .utils import init_vllm_registered_model\nclass WrapDense:\n    def __init__(self):\n        self.language_model = init_vllm_registered_model(architectures=[\"DenseForCausalLM\"])\n",
    "wrap_qwen9.py": "from .qwen9 import Qwen9ForCausalLM\nclass WrapQwen9:\n    def __init__(self):\n        self.language_model = Qwen9ForCausalLM()\n",
    "dense_draft.py": "from .big_moe import BigForCausalLM\nclass DraftModel:\n    pass\nclass DenseDraft(BigForCausalLM):\n    def __init__(self):\n        self.model = DraftModel()\n",
    "utils.py": "def init_vllm_registered_model(**kw):\n    pass\n",
}


def _tree(tmp_path: Path) -> Path:
    models = tmp_path / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True)
    (models / "registry.py").write_text(_REGISTRY)
    for name, text in _FILES.items():
        (models / name).write_text(text)
    return tmp_path


def test_subclasses_and_wrappers_of_a_moe_class_are_moe_and_dense_ones_are_not(tmp_path):
    found = set(moe_architectures(_tree(tmp_path)))
    # Big builds FusedMoE; Sub inherits it; WrapVL builds it as its language model.
    assert {"BigForCausalLM", "SubForCausalLM", "WrapVL"} <= found
    # A dense wrapper, a wrapper of the dense sibling of a MoE class, and a draft that builds its
    # own dense self.model over a MoE base are not MoE.
    assert not {"DenseForCausalLM", "WrapDense", "WrapQwen9", "DenseDraft"} & found
