"""Doctest collection of the package: modules that need an optional package are skipped without it."""

from __future__ import annotations

import importlib.util

collect_ignore: list[str] = []
if importlib.util.find_spec("triton") is None:
    # Our Triton kernels import triton at module level; their tests skip themselves without it.
    collect_ignore += ["moe_oracle/kernels/triton_fp8_block.py"] + [
        f"moe_oracle/kernels/_triton_{name}.py" for name in ("moe", "common", "layout", "elementwise", "fp8_gemm", "bf16_gemm")
    ]
