"""MoonEP on a quantized model: refused at start, whatever its MoE layers' own quantization.

vLLM 0.31.0-0.34.0 ``VllmConfig.__post_init__`` (vllm/config/vllm.py) raises "The moonep all2all
backend currently supports unquantized BF16 models only" when ``model_config.quantization`` is set:
the checkpoint's method or ``--quantization``, also where the MoE layers stay unquantized (their
experts excluded by the checkpoint's ignore list, or a method that quantizes linear layers only,
``mxfp4_hadamard32``). The tables' ``constraint.moonep_unquantized`` reads the layer's own
quantization (a quantized layer is refused there, with fixes); this is the rest (breakit22 finding 1).
"""

from __future__ import annotations

from packaging.version import Version

from ..core.errors import InputIssue

__all__ = ["MOONEP_FROM", "moonep_quantized_model_refusal"]

MOONEP_FROM = "0.31.0"
"""The first release with the moonep all2all backend and its start-up checks."""


def moonep_quantized_model_refusal(model_quantization: str | None, all2all: str, release: str, where: str, file: str | None = None) -> InputIssue | None:
    """The refusal of ``--all2all-backend moonep`` (``where`` names that input) for a model vLLM
    ``release`` holds quantized with ``model_quantization`` (``ModelConfig.quantization``; ``None``:
    unquantized), else ``None``.

    >>> moonep_quantized_model_refusal("mxfp4_hadamard32", "moonep", "0.34.0", "--all2all").value
    'moonep'
    >>> moonep_quantized_model_refusal(None, "moonep", "0.34.0", "--all2all") is None
    True
    """
    if all2all != "moonep" or model_quantization is None or Version(release) < Version(MOONEP_FROM):
        return None
    return InputIssue(where, f"vLLM {release} refuses the moonep all2all backend at start for a quantized model (quantization {model_quantization}), whatever its MoE layers' own "
                      f"quantization: \"The moonep all2all backend currently supports unquantized BF16 models only; got quantization={model_quantization!r}\" "
                      "(vllm/config/vllm.py VllmConfig.__post_init__): use another all2all backend", all2all, None, file, keyword="engine_refuses")
