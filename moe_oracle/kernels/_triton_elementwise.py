"""Elementwise kernels: the activation of GEMM1's output (bf16 or fp8 out) and dynamic fp8 quantization of rows.

:func:`activation` serves the ``torch._grouped_mm`` paths (our Triton GEMMs fuse the activation
into GEMM1's epilogue); :func:`quantize_rows` quantizes the input of the fp8 experts per token or
per 1x128 group, scale ``max(amax / 448, 1e-12)`` as :mod:`moe_oracle.runtime.fp8` computes it.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..core.vocab import Activation
from ._triton_common import _ACT_CODES, _GROUP, INTERPRET, _gated, _pow2, _to_bf16, _to_fp8, _unary

__all__ = ["activation", "quantize_rows"]


@triton.jit
def _activated(hrow, brow, cols, m, up_off, alpha, limit,
               ACT: tl.constexpr, GATED: tl.constexpr, INTERLEAVED: tl.constexpr, HAS_BIAS: tl.constexpr):
    # The activation of columns ``cols`` of rows ``hrow`` (+ bias rows ``brow`` when HAS_BIAS) in float32.
    if GATED:
        if INTERLEAVED:
            gc = 2 * cols
            uc = 2 * cols + 1
        else:
            gc = cols
            uc = cols + up_off
        g = tl.load(hrow + gc[None, :], mask=m, other=0.0).to(tl.float32)
        u = tl.load(hrow + uc[None, :], mask=m, other=0.0).to(tl.float32)
        if HAS_BIAS:
            g += tl.load(brow + gc[None, :], mask=m, other=0.0).to(tl.float32)
            u += tl.load(brow + uc[None, :], mask=m, other=0.0).to(tl.float32)
        y = _gated(g, u, alpha, limit, ACT)
    else:
        g = tl.load(hrow + cols[None, :], mask=m, other=0.0).to(tl.float32)
        if HAS_BIAS:
            g += tl.load(brow + cols[None, :], mask=m, other=0.0).to(tl.float32)
        y = _unary(g, ACT)
    return y


@triton.jit
def _activation_kernel(
    h_ptr, out_ptr, outs_ptr, bias_ptr, offs_ptr,
    num_local, n_out, h_stride, out_stride, outs_stride, bias_stride, up_off, alpha, limit,
    ACT: tl.constexpr, GATED: tl.constexpr, INTERLEAVED: tl.constexpr, HAS_BIAS: tl.constexpr,
    QUANT: tl.constexpr, EMULATE: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_E: tl.constexpr, COLS_PER_PROG: tl.constexpr,
):
    # QUANT: 0 none (bf16 out), 1 per-row fp8 (two passes over the row), 2 per-128-column fp8.
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    er = tl.arange(0, BLOCK_E)
    ends = tl.load(offs_ptr + er, mask=er < num_local, other=0)
    total = tl.max(ends, axis=0)
    rmask = r < total
    hrow = h_ptr + r.to(tl.int64)[:, None] * h_stride
    brow = bias_ptr  # read only when HAS_BIAS
    if HAS_BIAS:
        expert = tl.minimum(tl.sum((ends[None, :] <= r[:, None]).to(tl.int32), axis=1), num_local - 1)
        brow = bias_ptr + expert.to(tl.int64)[:, None] * bias_stride
    c_lo = tl.program_id(1) * COLS_PER_PROG
    amax = tl.zeros([BLOCK_R], dtype=tl.float32)
    for c0 in range(c_lo, tl.minimum(c_lo + COLS_PER_PROG, n_out), BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        m = rmask[:, None] & (cols[None, :] < n_out)
        y = _activated(hrow, brow, cols, m, up_off, alpha, limit, ACT, GATED, INTERLEAVED, HAS_BIAS)
        y = tl.where(m, y, 0.0)
        optr = out_ptr + r.to(tl.int64)[:, None] * out_stride + cols[None, :]
        if QUANT == 0:
            tl.store(optr, _to_bf16(y, EMULATE), mask=m)
        elif QUANT == 1:
            amax = tl.maximum(amax, tl.max(tl.abs(y), axis=1))
        else:
            s = tl.maximum(tl.max(tl.abs(y), axis=1) / 448.0, 1e-12)
            tl.store(optr, _to_fp8(y / s[:, None], EMULATE), mask=m)
            tl.store(outs_ptr + r.to(tl.int64) * outs_stride + c0 // 128, s, mask=rmask)
    if QUANT == 1:
        s = tl.maximum(amax / 448.0, 1e-12)
        tl.store(outs_ptr + r.to(tl.int64) * outs_stride, s, mask=rmask)
        for c0 in range(0, n_out, BLOCK_C):  # second pass: recompute, scale, store
            cols = c0 + tl.arange(0, BLOCK_C)
            m = rmask[:, None] & (cols[None, :] < n_out)
            y = _activated(hrow, brow, cols, m, up_off, alpha, limit, ACT, GATED, INTERLEAVED, HAS_BIAS)
            optr = out_ptr + r.to(tl.int64)[:, None] * out_stride + cols[None, :]
            tl.store(optr, _to_fp8(y / s[:, None], EMULATE), mask=m)


def activation(
    h: torch.Tensor,
    act: Activation,
    offs: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    swiglu_alpha: float = 1.702,
    swiglu_limit: float = 7.0,
    quant: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The activation of GEMM1's output, for the rows of the groups ``offs`` ends.

    Args:
        h: ``[rows, w13_rows]`` GEMM1 output (bf16), expert-sorted rows.
        act: one of :data:`SUPPORTED_ACTIVATIONS`.
        offs: ``[E]`` int32 group ends; rows ``>= offs[-1]`` are left unwritten.
        bias: ``[E, w13_rows]`` float32 expert bias added before the activation, or ``None``.
        quant: ``None`` (bf16 out), ``"token"`` (fp8, one scale per row) or ``"group128"`` (fp8,
            one scale per row and 128 columns).

    Returns:
        ``(out [rows, n_out], scale)`` with ``n_out = w13_rows // 2`` for gated activations,
        ``scale`` ``[rows]`` / ``[rows, n_out // 128]`` float32 or ``None``.
    """
    code, gated, interleaved = _ACT_CODES[Activation(act)]
    rows, w13_rows = h.shape
    n_out = w13_rows // 2 if gated else w13_rows
    num_local = offs.shape[0]
    q = {None: 0, "token": 1, "group128": 2}[quant]
    out = torch.empty(rows, n_out, dtype=torch.bfloat16 if q == 0 else torch.float8_e4m3fn, device=h.device)
    scale = None
    if q == 1:
        scale = torch.empty(rows, dtype=torch.float32, device=h.device)
    elif q == 2:
        if n_out % _GROUP:
            raise ValueError(f"group-128 quantization needs a multiple of 128 columns, got {n_out}")
        scale = torch.empty(rows, n_out // _GROUP, dtype=torch.float32, device=h.device)
    if rows == 0 or num_local == 0:
        return out, scale
    block_c = 128 if q == 2 else min(256 if q == 1 else 512, _pow2(n_out))
    cols_per_prog = n_out if q == 1 else max(block_c, min(n_out, 2048) // block_c * block_c)
    block_r = 4 if q == 1 else max(1, min(16, 4096 // block_c))
    grid = (triton.cdiv(rows, block_r), triton.cdiv(n_out, cols_per_prog))
    _activation_kernel[grid](
        h, out, scale if scale is not None else out, bias if bias is not None else h, offs,
        num_local, n_out, h.stride(0), out.stride(0), 0 if scale is None else scale.stride(0),
        0 if bias is None else bias.stride(0), n_out, float(swiglu_alpha), float(swiglu_limit),
        ACT=code, GATED=gated, INTERLEAVED=interleaved, HAS_BIAS=bias is not None, QUANT=q, EMULATE=INTERPRET,
        BLOCK_R=block_r, BLOCK_C=block_c, BLOCK_E=_pow2(num_local), COLS_PER_PROG=cols_per_prog, num_warps=4,
    )
    return out, scale


@triton.jit
def _quant_rows_kernel(
    x_ptr, q_ptr, s_ptr, tokens, hidden, x_stride, q_stride, s_stride,
    GROUP: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, EMULATE: tl.constexpr,
):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = r < tokens
    xrow = x_ptr + r.to(tl.int64)[:, None] * x_stride
    qrow = q_ptr + r.to(tl.int64)[:, None] * q_stride
    if GROUP == 0:  # one scale per row: amax pass, then the scaled cast
        amax = tl.zeros([BLOCK_R], dtype=tl.float32)
        for c0 in range(0, hidden, BLOCK_C):
            cols = c0 + tl.arange(0, BLOCK_C)
            m = rmask[:, None] & (cols[None, :] < hidden)
            amax = tl.maximum(amax, tl.max(tl.abs(tl.load(xrow + cols[None, :], mask=m, other=0.0).to(tl.float32)), axis=1))
        s = tl.maximum(amax / 448.0, 1e-12)
        tl.store(s_ptr + r.to(tl.int64) * s_stride, s, mask=rmask)
        for c0 in range(0, hidden, BLOCK_C):
            cols = c0 + tl.arange(0, BLOCK_C)
            m = rmask[:, None] & (cols[None, :] < hidden)
            x = tl.load(xrow + cols[None, :], mask=m, other=0.0).to(tl.float32)
            tl.store(qrow + cols[None, :], _to_fp8(x / s[:, None], EMULATE), mask=m)
    else:
        c0 = tl.program_id(1) * GROUP
        cols = c0 + tl.arange(0, GROUP)
        m = rmask[:, None] & (cols[None, :] < hidden)
        x = tl.load(xrow + cols[None, :], mask=m, other=0.0).to(tl.float32)
        s = tl.maximum(tl.max(tl.abs(x), axis=1) / 448.0, 1e-12)
        tl.store(s_ptr + r.to(tl.int64) * s_stride + tl.program_id(1), s, mask=rmask)
        tl.store(qrow + cols[None, :], _to_fp8(x / s[:, None], EMULATE), mask=m)


def quantize_rows(x: torch.Tensor, group: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Dynamic fp8 quantization of ``x`` ``[T, H]``.

    Args:
        group: ``None``: one scale per row (``fp8_dynamic_token``), scale ``[T, 1]``;
            ``128``: one per row and 128 columns (``fp8_dynamic_group128``), scale ``[T, ceil(H/128)]``.

    Returns:
        ``(x_fp8 [T, H] float8_e4m3fn, scale float32)``.
    """
    tokens, hidden = x.shape
    q = torch.empty(tokens, hidden, dtype=torch.float8_e4m3fn, device=x.device)
    if group is None:
        s = torch.empty(tokens, 1, dtype=torch.float32, device=x.device)
        grid = (triton.cdiv(tokens, 4), 1)
        block_r, block_c, g = 4, min(1024, _pow2(hidden)), 0
    elif group == _GROUP:
        s = torch.empty(tokens, triton.cdiv(hidden, _GROUP), dtype=torch.float32, device=x.device)
        grid = (triton.cdiv(tokens, 16), triton.cdiv(hidden, _GROUP))
        block_r, block_c, g = 16, _GROUP, _GROUP
    else:
        raise ValueError(f"quantize_rows: group must be None or 128, got {group}")
    if tokens:
        _quant_rows_kernel[grid](x, q, s, tokens, hidden, x.stride(0), q.stride(0), s.stride(0), GROUP=g, BLOCK_R=block_r, BLOCK_C=block_c, EMULATE=INTERPRET, num_warps=4)
    return q, s
