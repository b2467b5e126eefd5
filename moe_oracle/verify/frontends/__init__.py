"""The vLLM quantization front ends the harness drives, one module per quant family.

A front end is ``fn(side, dep, moe) -> (backend, experts_cls)``: it receives the
:class:`~moe_oracle.verify.vllm_side.VllmSide` (which holds the simulated release),
the :class:`~moe_oracle.verify.cases.Deployment` and the release's ``FusedMoEConfig``,
constructs what that release's own code constructs, and returns the backend enum and
experts class vLLM selected (``experts_cls`` may be ``None`` where vLLM returns none,
e.g. TPU). Whatever it raises is vLLM refusing the deployment; raise
:class:`NotDriven` when the harness cannot build the case for this release (the case
is then counted as not driven, never as agreement).

Modules import vLLM lazily inside the functions, so this registry is importable
without vLLM. ``FRONT_ENDS`` maps each name to ``"module:function"`` in this package.
"""

from __future__ import annotations

__all__ = ["FRONT_ENDS", "NotDriven", "QUANT_METHOD"]


class NotDriven(Exception):
    """The harness cannot build this case for this release (not a vLLM refusal).

    ``at_start``: vLLM refuses the deployment at start-up in a part the harness does not build
    (the EP all2all manager asserting its package), so no layer is ever built to compare; counted
    apart from the harness's own gaps (``not_driven_at_start`` in the report).
    """

    def __init__(self, message: str, *, at_start: bool = False) -> None:
        super().__init__(message)
        self.at_start = at_start


FRONT_ENDS: dict[str, str] = {
    "direct": "generic:direct",
    "unquantized": "generic:unquantized",
    "fp8": "fp8:fp8_method",
    "modelopt_nvfp4": "nvfp4:modelopt_nvfp4",
    "ct_nvfp4": "nvfp4:ct_nvfp4",
    "online_nvfp4": "nvfp4:online_nvfp4",
    "modelopt_mxfp8": "mxfp8:modelopt_mxfp8",
    "ct_mxfp8": "mxfp8:ct_mxfp8",
    "online_mxfp8": "mxfp8:online_mxfp8",
    "ct_wna16": "wna16:ct_wna16",
    "gptq": "wna16:gptq",
    "awq": "wna16:awq",
    "moe_wna16": "wna16:moe_wna16",
    "ct_w8a8_int8": "int8:ct_w8a8_int8",
    "experts_int8": "int8:experts_int8",
    "ct_w4a8_fp8": "w4a8:ct_w4a8_fp8",
    "ct_w4a8_int8": "w4a8:ct_w4a8_int8",
    "compressed-tensors-fp8": "fp8:compressed_tensors",
    "mxfp4": "mxfp4:mxfp4_method",
    "compressed_tensors_mxfp4": "mxfp4:compressed_tensors_mxfp4",
    "quark_mxfp4": "mxfp4:quark_mxfp4",
    "lut_b": "lut_b:lut_b_method",
    "online_fp8_per_tensor": "fp8:online_fp8_per_tensor",
    "online_fp8_per_block": "fp8:online_fp8_per_block",
    "online_fp8_per_channel": "fp8:online_fp8_per_channel",
}
"""Front-end name -> ``module:function`` in ``moe_oracle.verify.frontends``."""

QUANT_METHOD: dict[str, str | None] = {
    "direct": None,
    "unquantized": None,
    "fp8": "fp8",
    "modelopt_nvfp4": "modelopt",
    "ct_nvfp4": "compressed-tensors",
    "online_nvfp4": "nvfp4_per_token",
    "modelopt_mxfp8": "modelopt",
    "ct_mxfp8": "compressed-tensors",
    "online_mxfp8": "mxfp8",
    "ct_wna16": "compressed-tensors",
    "gptq": "gptq",
    "awq": "awq",
    "moe_wna16": "moe_wna16",
    "ct_w8a8_int8": "compressed-tensors",
    "experts_int8": "experts_int8",
    "ct_w4a8_fp8": "compressed-tensors",
    "ct_w4a8_int8": "compressed-tensors",
    "compressed-tensors-fp8": "compressed-tensors",
    "mxfp4": "mxfp4",
    "compressed_tensors_mxfp4": "compressed-tensors",
    "quark_mxfp4": "quark",
    "lut_b": "lut_b_moe",
    "online_fp8_per_tensor": "fp8_per_tensor",
    "online_fp8_per_block": "fp8_per_block",
    "online_fp8_per_channel": "fp8_per_channel",
}
"""Front-end name -> the checkpoint ``quant_method`` our side is told (``None``: unknown)."""
