"""An online ``--quantization`` shorthand on a checkpoint that is already quantized (requantization).

Only checkpoints that an override method takes under any ``--quantization`` get here (ModelOpt
FP8 / NVFP4 / MXFP8 / mixed, gpt-oss MXFP4: ``ModelConfig._verify_quantization`` refuses a
mismatch for the others). What vLLM does with the shorthand's MoE spec differs per release:

* 0.29.0: the online arguments are read only without a checkpoint quantization config
  (vllm/model_executor/model_loader/weight_utils.py ``get_quant_config``): no effect.
* 0.30.0-0.31.0: ``get_quant_method`` (Q/base_config.py) raises "Cannot apply requested online
  quantization ... to pre-quantized layer" while the model is built.
* 0.32.0: linear layers are re-quantized, routed experts raise "Requantizing
  checkpoint-quantized MoE layers is not supported." (Q/base_config.py).
* 0.33.0-0.34.0: the routed experts are dequantized (only the NVFP4 MoE methods can:
  ModelOpt, compressed-tensors W4A4, Quark; any other source fails when its weights are
  processed) and quantized again by the online method, whose own oracle picks the kernel
  (Q/base_config.py ``set_requantization_source``; 0.34.0 also short-circuits the NVFP4
  source's selection, P/oracle/nvfp4.py ``is_requantization_source``). Not modelled.

``mxfp4`` and ``mxfp8`` are deferred from 0.30.0 (``_DEFERRED_ONLINE_SHORTHANDS``: no online
arguments on a quantized checkpoint) and ``mxfp4_hadamard32`` has no MoE spec.
"""

from __future__ import annotations

from packaging.version import Version

from ..core.errors import InputIssue

__all__ = ["MOE_SHORTHANDS", "requantization_refusal"]

MOE_SHORTHANDS: tuple[str, ...] = ("fp8_per_tensor", "fp8_per_block", "fp8_per_channel", "int8_per_channel_weight_only", "nvfp4_per_token", "lut_b_moe")
"""The online shorthands whose ``moe`` spec resolves on a quantized checkpoint (vLLM 0.30.0-0.34.0
vllm/config/quantization.py ``_ONLINE_SHORTHANDS`` less ``_DEFERRED_ONLINE_SHORTHANDS``;
``lut_b_moe`` from 0.34.0)."""


def requantization_refusal(user: str | None, checkpoint: str, release: str, flag: str) -> InputIssue | None:
    """The refusal of ``--quantization user`` (``flag`` names it) on a checkpoint an override took as
    ``checkpoint`` in vLLM ``release``; ``None`` where the shorthand has no effect there (0.29.0, a
    deferred or linear-only shorthand, or no shorthand).

    >>> requantization_refusal("fp8_per_block", "modelopt_fp4", "0.29.0", "--quantization") is None
    True
    >>> "not modelled" in requantization_refusal("fp8_per_block", "modelopt_fp4", "0.34.0", "--quantization").message
    True
    """
    if user not in MOE_SHORTHANDS or Version(release) < Version("0.30.0"):
        return None
    name = flag.split()[-1]
    if Version(release) < Version("0.32.0"):
        what = (f"vLLM {release} refuses it while it builds the model: 'Cannot apply requested online quantization ... to pre-quantized layer' "
                "(vllm/model_executor/layers/quantization/base_config.py get_quant_method)")
    elif Version(release) < Version("0.33.0"):
        what = (f"vLLM {release} refuses it while it builds the MoE layers: 'Requantizing checkpoint-quantized MoE layers is not supported.' "
                "(vllm/model_executor/layers/quantization/base_config.py get_quant_method)")
    else:
        what = (f"not modelled: vLLM {release} re-quantizes the routed experts of a {checkpoint} checkpoint with it (dequantizes them, then the online "
                "method's own oracle picks the kernel; only NVFP4 experts can be dequantized, any other fails when its weights are processed: "
                "vllm/model_executor/layers/quantization/base_config.py set_requantization_source), which moe-oracle does not model; refused rather than "
                "answer for the checkpoint's own kernel")
    return InputIssue(flag, f"{name} {user} on a {checkpoint} checkpoint: {what}; drop {name} {user}", user, None, keyword="engine_refuses" if "not modelled" not in what else None)
