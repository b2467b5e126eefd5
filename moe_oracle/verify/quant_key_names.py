"""Our quant key names and the vLLM ``quant_utils`` constants they stand for (no vLLM import).

Read by the harness's vLLM side (it hands the release the constant) and by the model-construction
tier's comparison (it reads the release's constant back as our key).
"""

from __future__ import annotations

__all__ = ["QUANT_KEY_NAMES"]

QUANT_KEY_NAMES: dict[str, str] = {
    "fp8_static_tensor": "kFp8StaticTensorSym",
    "fp8_dynamic_tensor": "kFp8DynamicTensorSym",
    "fp8_static_token": "kFp8StaticTokenSym",
    "fp8_static_channel": "kFp8StaticChannelSym",
    "fp8_dynamic_token": "kFp8DynamicTokenSym",
    "fp8_dynamic_group128": "kFp8Dynamic128Sym",
    "fp8_static_block128": "kFp8Static128BlockSym",
    "fp8_static_block128_e8m0": "kFp8Static128BlockE8M0Sym",
    "fp8_dynamic_group64": "kFp8Dynamic64Sym",
    "nvfp4_static": "kNvfp4Static",
    "nvfp4_dynamic": "kNvfp4Dynamic",
    "nvfp4_dynamic_token": "kNvfp4DynamicToken",
    "mxfp8_static": "kMxfp8Static",
    "mxfp8_dynamic": "kMxfp8Dynamic",
    "mxfp4_static": "kMxfp4Static",
    "mxfp4_dynamic": "kMxfp4Dynamic",
    "int4_static": "kInt4Static",
    "int8_static": "kInt8Static",
    "int4_static_g32": "kInt4Static32",
    "int4_static_asym": "kInt4StaticAsym",
    "int4_static_g32_asym": "kInt4Static32Asym",
    "int8_static_channel": "kInt8StaticChannelSym",
    "int8_dynamic_token": "kInt8DynamicTokenSym",
    "int8_static_tensor": "kInt8StaticTensorSym",
    "int8_dynamic_tensor": "kInt8DynamicTensorSym",
    "int8_dynamic_token_asym": "kInt8DynamicTokenAsym",
    "int8_static_tensor_asym": "kInt8StaticTensorAsym",
    "int8_dynamic_tensor_asym": "kInt8DynamicTensorAsym",
    "int8_dynamic_group32": "kInt8Dynamic32Sym",
    "int4_w4a8_static_channel": "kInt4W4A8StaticChannelSym",
    "int4_w4a8_static_group128": "kInt4W4A8StaticGroup128Sym",
    "int4_w4a8_static_group64": "kInt4W4A8StaticGroup64Sym",
    "int4_w4a8_static_group32": "kInt4W4A8StaticGroup32Sym",
    "int4_w4a8_static_group": "kInt4W4A8StaticGroupSym",
}
"""Our quant key name -> the vLLM ``quant_utils`` constant (``Q/utils/quant_utils.py``)."""
