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

__all__ = ["MOE_SHORTHANDS", "moe_shorthand", "online_target_refusal", "requantization_refusal"]

MOE_SHORTHANDS: tuple[str, ...] = ("fp8_per_tensor", "fp8_per_block", "fp8_per_channel", "int8_per_channel_weight_only", "nvfp4_per_token", "lut_b_moe")
"""The online shorthands whose ``moe`` spec resolves on a quantized checkpoint (vLLM 0.30.0-0.34.0
vllm/config/quantization.py ``_ONLINE_SHORTHANDS`` less ``_DEFERRED_ONLINE_SHORTHANDS``);
``lut_b_moe`` is one from 0.34.0 only (before, ``resolve_quantization_config`` gives it no online
arguments), see :func:`moe_shorthand`."""


def moe_shorthand(user: str | None, release: str) -> bool:
    """Whether ``--quantization user`` gives the routed experts an online target on a quantized
    checkpoint in vLLM ``release`` (:data:`MOE_SHORTHANDS`; 0.29.0 reads no online arguments there).

    >>> moe_shorthand("lut_b_moe", "0.33.0"), moe_shorthand("lut_b_moe", "0.34.0"), moe_shorthand("mxfp8", "0.34.0")
    (False, True, False)
    """
    if user not in MOE_SHORTHANDS or Version(release) < Version("0.30.0"):
        return False
    return user != "lut_b_moe" or Version(release) >= Version("0.34.0")


def requantization_refusal(given: str, checkpoint: str, release: str, path: str, experts_quantized: bool) -> InputIssue | None:
    """The refusal of an online MoE target (``given``: ``--quantization fp8_per_block``, or the
    ``--quantization-config`` target, at issue path ``path``) on a checkpoint vLLM ``release`` holds
    quantized as ``checkpoint``; ``None`` in 0.29.0, which reads no online arguments there.
    ``experts_quantized``: whether the checkpoint quantizes the routed experts (else vLLM quantizes
    them online from bf16: not modelled either).

    >>> requantization_refusal("--quantization fp8_per_block", "modelopt_fp4", "0.29.0", "--quantization", True) is None
    True
    >>> "not modelled" in requantization_refusal("--quantization fp8_per_block", "modelopt_fp4", "0.34.0", "--quantization", True).message
    True
    """
    if Version(release) < Version("0.30.0"):
        return None
    engine = experts_quantized and Version(release) < Version("0.33.0")
    if not experts_quantized:
        what = (f"not modelled: the checkpoint leaves the routed experts unquantized, so vLLM {release} quantizes them online with it "
                "(vllm/model_executor/layers/quantization/base_config.py get_quant_method), whose kernel choice moe-oracle does not model for a serve line")
    elif Version(release) < Version("0.32.0"):
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
    return InputIssue(path, f"{given} on a {checkpoint} checkpoint: {what}; drop it", given.split()[-1], None, keyword="engine_refuses" if engine else None)


def online_target_refusal(user: str | None, flag: str, online_moe: str | None, override: str | None, declared: str | None, release: str,
                          experts_quantized: bool) -> InputIssue | None:
    """The refusal of an online MoE target on a quantized checkpoint (``declared``: its method;
    ``override``: the override method that took it, or ``None``), or ``None``: a ``--quantization-config``
    target given without ``--quantization`` (``online_moe``), else an online MoE shorthand
    ``--quantization user`` (``flag`` names it) that the override lets through (:func:`moe_shorthand`).
    """
    if online_moe and declared:
        return requantization_refusal(f"--quantization-config {online_moe}", override or declared, release, "--serve --quantization-config", experts_quantized)
    if override and user not in (override, declared) and moe_shorthand(user, release):
        return requantization_refusal(f"{flag.split()[-1]} {user}", override, release, flag, experts_quantized)
    return None
