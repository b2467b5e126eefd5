"""Triton kernels of our experts: routing layout, activation, fp8 quantization, combine, fp8 block GEMM.

Used by :mod:`moe_oracle.kernels.torch_grouped_mm` (the glue around ``torch._grouped_mm`` and
``torch._scaled_grouped_mm``) and :mod:`moe_oracle.kernels.triton_fp8_block` (our 128x128-block
fp8 grouped GEMM). Every launcher has a static grid and reads no device value on the host, so a
call can be captured in a CUDA graph.

Layout of one call (``T`` tokens, top-``K``, ``N = T*K`` (token, k) pairs, ``E`` local experts):

* :func:`route_layout`: one atomic pass counts the pairs of each local expert and gives each pair
  its slot inside its expert's group (``pos``); a second pass turns ``(expert, pos)`` into the pair's
  row of the expert-sorted buffer (``pair_row [N]``, ``-1`` for pairs of other ranks' experts),
  writes the group ends ``offs [E]`` (int32, what ``torch._grouped_mm`` takes), the token of each
  sorted row (``sorted_tok``) and, when asked, copies the token's hidden row (and its fp8 scales)
  into the sorted buffer. Rows inside a group come in atomic order: each row's GEMM result does
  not depend on its position, and the combine sums each token's ``K`` rows in ``k`` order, so the
  output does not depend on that order.
* :func:`activation`: GEMM1 output ``[rows, w13_rows]`` (+ bias) -> activation in float32 ->
  bf16, or fp8 with per-row (``token``) or per-128-column (``group128``) scales; rows past the
  last group end are not touched.
* :func:`combine`: ``out[t] = sum_k w[t,k] * (y[pair_row[t,k]] + b2[expert])`` in float32, one
  bf16 write per output element; only real rows are read.
* :func:`quantize_rows`: per-token or per-1x128-group dynamic fp8 (e4m3fn) quantization, scale
  ``max(amax / 448, 1e-12)`` as :mod:`moe_oracle.runtime.fp8` computes it.
* :func:`bf16_grouped_gemm`: grouped GEMM ``A [rows, K] bf16 x B [E, N, K] bf16`` over
  expert-ordered rows, the tile -> expert map (each expert padded to whole ``BLOCK_M`` tiles)
  computed in the kernel from the group counts; GEMM1 reads the tokens' rows through the sorted
  token index and applies the activation (``[gate; up]`` halves or interleaved rows, bias) to its
  float32 accumulators before the one bf16 rounding. Tiles per layer and token count:
  ``runtime_tables/paths/bf16_grouped.yaml``.
* :func:`fp8_block_gemm`: grouped GEMM ``A [rows, K] fp8 (1x128 scales) x B [E, N, K] fp8 (128x128
  scales)`` with the tile -> expert map computed in the kernel from the group counts; GEMM1 fuses
  the gated activation and the group-128 fp8 quantization of its output into the epilogue.

Numerics: float32 accumulation and activation math; bf16 and fp8 casts round to nearest even (fp8
saturates at +-448). Triton's CPU interpreter (``TRITON_INTERPRET=1``, used by the CPU tests)
truncates float32 -> bf16 and drops the carry of float32 -> e4m3 rounding across a power of two
(Triton 3.6), so there :func:`_to_bf16` and :func:`_to_fp8` round on the float32 bits first;
compiled kernels use the hardware conversions.

Sources: vLLM main 00f7f258 ``P/fused_moe.py`` (``fused_moe_kernel``: block-scaled fp8 dot with
per-K-block scale products, grouped tile ordering) and ``moe_align_block_size`` (per-expert tiles);
activation formulas of :mod:`moe_oracle.runtime.activations`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from ..core.vocab import Activation

__all__ = [
    "BLOCK_CONFIGS",
    "SUPPORTED_ACTIVATIONS",
    "BlockConfig",
    "GemmTile",
    "bf16_grouped_gemm",
    "block_config",
    "INTERPRET",
    "Layout",
    "activation",
    "available",
    "combine",
    "fp8_block_gemm",
    "quantize_rows",
    "route_layout",
]

try:  # Triton >= 3.4
    INTERPRET = bool(triton.knobs.runtime.interpret)
except AttributeError:  # pragma: no cover - older Triton
    INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
"""This module's kernels were built for Triton's CPU interpreter (``TRITON_INTERPRET=1`` at import)."""

FP8_MAX = 448.0
_EPS = 1e-12
_GROUP = 128

_ACT_CODES = {
    Activation.SILU: (0, True, False),
    Activation.GELU: (1, True, False),
    Activation.GELU_TANH: (2, True, False),
    Activation.RELU2: (3, True, False),
    Activation.SWIGLUOAI: (4, True, True),
    Activation.SWIGLUOAI_UNINTERLEAVE: (4, True, False),
    Activation.SILU_NO_MUL: (0, False, False),
    Activation.GELU_NO_MUL: (1, False, False),
    Activation.GELU_TANH_NO_MUL: (2, False, False),
    Activation.RELU2_NO_MUL: (3, False, False),
}
"""Activation -> (code of the Triton math, gated, gate/up interleaved)."""

SUPPORTED_ACTIVATIONS = frozenset(_ACT_CODES)


def available(device: torch.device) -> bool:
    """The adapters use these kernels on ``device``: CUDA, compiled (not under the interpreter).

    The CPU tests run the interpreted kernels by handing them to the adapters explicitly.
    """
    return device.type == "cuda" and not INTERPRET


def _pow2(n: int) -> int:
    return triton.next_power_of_2(max(int(n), 1))


# ----------------------------------------------------------------------------- shared math


@triton.jit
def _unary(x, ACT: tl.constexpr):
    if ACT == 0:  # silu
        y = x / (1.0 + tl.exp(-x))
    elif ACT == 1:  # gelu (erf)
        y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    elif ACT == 2:  # gelu, tanh approximation; tanh(z) = 2 * sigmoid(2z) - 1
        z = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        y = 0.5 * x * (2.0 / (1.0 + tl.exp(-2.0 * z)))
    else:  # relu2
        r = tl.maximum(x, 0.0)
        y = r * r
    return y


@triton.jit
def _gated(g, u, alpha, limit, ACT: tl.constexpr):
    if ACT == 4:  # swigluoai: (clamp(up) + 1) * g * sigmoid(alpha * g), g = min(gate, limit)
        g = tl.minimum(g, limit)
        u = tl.minimum(tl.maximum(u, -limit), limit)
        y = (u + 1.0) * (g / (1.0 + tl.exp(-alpha * g)))
    else:
        y = _unary(g, ACT) * u
    return y


@triton.jit
def _to_fp8(x, EMULATE: tl.constexpr):
    x = tl.minimum(tl.maximum(x, -448.0), 448.0)
    if EMULATE:
        # Round to the e4m3 grid in float32 (nearest even): spacing 2^(e-3) for |x| in [2^e, 2^(e+1)),
        # 2^-9 below 2^-6 (subnormals). 1.5 * 2^23 rounds |x / spacing| < 2^22 to an integer.
        bits = x.to(tl.int32, bitcast=True)
        e = tl.maximum((bits >> 23) & 0xFF, 121)
        spacing = ((e - 3) << 23).to(tl.float32, bitcast=True)
        x = ((x / spacing + 12582912.0) - 12582912.0) * spacing
    return x.to(tl.float8e4nv)


@triton.jit
def _to_bf16(x, EMULATE: tl.constexpr):
    if EMULATE:  # the interpreter truncates float32 -> bf16; round to nearest even on the bits first
        bits = x.to(tl.int32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & -65536
        x = bits.to(tl.float32, bitcast=True)
    return x.to(tl.bfloat16)


# ----------------------------------------------------------------------------- routing layout


@triton.jit
def _count_kernel(ids_ptr, counts_ptr, pos_ptr, n_pairs, first, num_local, BLOCK: tl.constexpr):
    p = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = p < n_pairs
    e = (tl.load(ids_ptr + p, mask=inside, other=-1) - first).to(tl.int32)
    valid = inside & (e >= 0) & (e < num_local)
    pos = tl.atomic_add(counts_ptr + e, tl.full([BLOCK], 1, tl.int32), mask=valid, sem="relaxed")
    tl.store(pos_ptr + p, pos, mask=valid)


@triton.jit
def _place_kernel(
    ids_ptr, pos_ptr, counts_ptr, pair_row_ptr, sorted_tok_ptr, offs_ptr,
    x_ptr, xs_ptr, buf_ptr, bufs_ptr,
    n_pairs, first, num_local, top_k, hidden, n_scale, x_stride, xs_stride, buf_stride, bufs_stride,
    ALIGN: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_H: tl.constexpr,
    COPY: tl.constexpr, COPY_SCALE: tl.constexpr, BLOCK_S: tl.constexpr,
):
    er = tl.arange(0, BLOCK_E)
    cnt = tl.load(counts_ptr + er, mask=er < num_local, other=0)
    padded = (cnt + (ALIGN - 1)) // ALIGN * ALIGN
    ends = tl.cumsum(padded, 0)
    starts = ends - padded
    if tl.program_id(0) == 0:
        tl.store(offs_ptr + er, ends, mask=er < num_local)
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    inside = p < n_pairs
    e = (tl.load(ids_ptr + p, mask=inside, other=-1) - first).to(tl.int32)
    valid = inside & (e >= 0) & (e < num_local)
    start = tl.sum(tl.where(er[None, :] == e[:, None], starts[None, :], 0), axis=1)
    dest = start + tl.load(pos_ptr + p, mask=valid, other=0)
    tl.store(pair_row_ptr + p, tl.where(valid, dest, -1), mask=inside)
    tok = p // top_k
    tl.store(sorted_tok_ptr + dest, tok, mask=valid)
    if COPY:
        src = x_ptr + tok.to(tl.int64)[:, None] * x_stride
        dst = buf_ptr + dest.to(tl.int64)[:, None] * buf_stride
        for h0 in range(0, hidden, BLOCK_H):
            cols = h0 + tl.arange(0, BLOCK_H)
            m = valid[:, None] & (cols[None, :] < hidden)
            tl.store(dst + cols[None, :], tl.load(src + cols[None, :], mask=m), mask=m)
    if COPY_SCALE:
        cols = tl.arange(0, BLOCK_S)
        m = valid[:, None] & (cols[None, :] < n_scale)
        v = tl.load(xs_ptr + tok.to(tl.int64)[:, None] * xs_stride + cols[None, :], mask=m)
        tl.store(bufs_ptr + dest.to(tl.int64)[:, None] * bufs_stride + cols[None, :], v, mask=m)


@dataclass(frozen=True, eq=False)
class Layout:
    """Where each (token, k) pair goes (see the module docstring).

    Attributes:
        counts: ``[E]`` int32 pairs per local expert.
        pair_row: ``[T*K]`` int32 buffer row of each pair, ``-1`` for other ranks' experts.
        sorted_tok: ``[rows]`` int32 token of each buffer row (rows past the last group: unset).
        offs: ``[E]`` int32 cumulative group ends (padded to ``align``).
        rows: static buffer length ``T*K + E*(align-1)``.
        buf, buf_scale: the gathered rows ``[rows, H]`` and their scales ``[rows, S]`` when copied.
    """

    counts: torch.Tensor
    pair_row: torch.Tensor
    sorted_tok: torch.Tensor
    offs: torch.Tensor
    rows: int
    buf: torch.Tensor | None = None
    buf_scale: torch.Tensor | None = None


def route_layout(
    topk_ids: torch.Tensor,
    first: int,
    num_local: int,
    *,
    x: torch.Tensor | None = None,
    x_scale: torch.Tensor | None = None,
    align: int = 1,
) -> Layout:
    """Sort the (token, k) pairs of ``topk_ids`` by local expert, without a host synchronization.

    Args:
        topk_ids: ``[T, K]`` int32/int64 global expert ids.
        first, num_local: this rank's experts are ``[first, first + num_local)``.
        x: ``[T, H]`` rows to copy into the sorted buffer (any dtype), or ``None``.
        x_scale: ``[T, S]`` float32 scales copied with ``x``'s rows, or ``None``.
        align: pad each group to a multiple of this many rows.

    Returns:
        The :class:`Layout`.
    """
    tokens, top_k = topk_ids.shape
    n = tokens * top_k
    dev = topk_ids.device
    ids = topk_ids.reshape(-1).contiguous()
    rows = n + num_local * (align - 1)
    counts = torch.zeros(num_local, dtype=torch.int32, device=dev)
    pos = torch.empty(n, dtype=torch.int32, device=dev)
    pair_row = torch.empty(n, dtype=torch.int32, device=dev)
    sorted_tok = torch.empty(max(rows, 1), dtype=torch.int32, device=dev)
    offs = torch.empty(num_local, dtype=torch.int32, device=dev)
    buf = None if x is None else torch.empty(rows, x.shape[1], dtype=x.dtype, device=dev)
    buf_scale = None if x_scale is None else torch.empty(rows, x_scale.shape[1], dtype=x_scale.dtype, device=dev)
    if n == 0:
        offs.zero_()
        return Layout(counts, pair_row, sorted_tok, offs, rows, buf, buf_scale)
    block = 1024
    _count_kernel[(triton.cdiv(n, block),)](ids, counts, pos, n, first, num_local, BLOCK=block)
    block_p = 8
    hidden = 0 if x is None else x.shape[1]
    n_scale = 0 if x_scale is None else x_scale.shape[1]
    _place_kernel[(triton.cdiv(n, block_p),)](
        ids, pos, counts, pair_row, sorted_tok, offs,
        x if x is not None else ids, x_scale if x_scale is not None else ids,
        buf if buf is not None else ids, buf_scale if buf_scale is not None else ids,
        n, first, num_local, top_k, hidden, n_scale,
        0 if x is None else x.stride(0), 0 if x_scale is None else x_scale.stride(0),
        0 if buf is None else buf.stride(0), 0 if buf_scale is None else buf_scale.stride(0),
        ALIGN=align, BLOCK_P=block_p, BLOCK_E=_pow2(num_local), BLOCK_H=min(1024, _pow2(hidden)),
        COPY=x is not None, COPY_SCALE=x_scale is not None, BLOCK_S=_pow2(n_scale), num_warps=4,
    )
    return Layout(counts, pair_row, sorted_tok, offs, rows, buf, buf_scale)


# ----------------------------------------------------------------------------- activation


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
    if HAS_BIAS:
        expert = tl.minimum(tl.sum((ends[None, :] <= r[:, None]).to(tl.int32), axis=1), num_local - 1)
        brow = bias_ptr + expert.to(tl.int64)[:, None] * bias_stride
    c_lo = tl.program_id(1) * COLS_PER_PROG
    amax = tl.zeros([BLOCK_R], dtype=tl.float32)
    for c0 in range(c_lo, tl.minimum(c_lo + COLS_PER_PROG, n_out), BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        m = rmask[:, None] & (cols[None, :] < n_out)
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


# ----------------------------------------------------------------------------- combine


@triton.jit
def _combine_kernel(
    y_ptr, pair_row_ptr, w_ptr, ids_ptr, bias_ptr, out_ptr,
    tokens, hidden, y_stride, out_stride, bias_stride, first,
    TOP_K: tl.constexpr, HAS_BIAS: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr, EMULATE: tl.constexpr,
):
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    cols = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    tmask = t < tokens
    cmask = cols < hidden
    acc = tl.zeros([BLOCK_T, BLOCK_H], dtype=tl.float32)
    for k in tl.static_range(TOP_K):
        row = tl.load(pair_row_ptr + t * TOP_K + k, mask=tmask, other=-1)
        w = tl.load(w_ptr + t * TOP_K + k, mask=tmask, other=0.0).to(tl.float32)
        ok = (row >= 0)[:, None] & cmask[None, :]
        v = tl.load(y_ptr + row.to(tl.int64)[:, None] * y_stride + cols[None, :], mask=ok, other=0.0).to(tl.float32)
        if HAS_BIAS:
            e = tl.load(ids_ptr + t * TOP_K + k, mask=tmask, other=first) - first
            v += tl.load(bias_ptr + e.to(tl.int64)[:, None] * bias_stride + cols[None, :], mask=ok, other=0.0).to(tl.float32)
        acc += v * w[:, None]
    tl.store(out_ptr + t.to(tl.int64)[:, None] * out_stride + cols[None, :], _to_bf16(acc, EMULATE), mask=tmask[:, None] & cmask[None, :])


def combine(
    y: torch.Tensor,
    layout: Layout,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
    first: int,
    *,
    bias: torch.Tensor | None = None,
) -> torch.Tensor:
    """``[T, H]`` bf16: each token's top-k-weighted sum of its rows of ``y`` (pairs of other ranks skipped).

    Args:
        y: ``[rows, H]`` GEMM2 output in the layout's row order.
        topk_weights: ``[T, K]`` (float32).
        topk_ids: ``[T, K]`` global ids (read only for ``bias``).
        bias: ``[E, H]`` float32 expert bias added to each real row, or ``None``.
    """
    tokens, top_k = topk_weights.shape
    hidden = y.shape[1]
    out = torch.empty(tokens, hidden, dtype=torch.bfloat16, device=y.device)
    if tokens == 0:
        return out
    w = topk_weights.contiguous()
    ids = topk_ids.contiguous()
    block_h = min(1024, _pow2(hidden))
    block_t = max(1, min(8, 2048 // block_h))
    grid = (triton.cdiv(tokens, block_t), triton.cdiv(hidden, block_h))
    _combine_kernel[grid](
        y, layout.pair_row, w, ids, bias if bias is not None else w, out,
        tokens, hidden, y.stride(0), out.stride(0), 0 if bias is None else bias.stride(0), first,
        TOP_K=top_k, HAS_BIAS=bias is not None, BLOCK_T=block_t, BLOCK_H=block_h, EMULATE=INTERPRET, num_warps=4,
    )
    return out


# ----------------------------------------------------------------------------- fp8 quantization


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


# ----------------------------------------------------------------------------- fp8 block GEMM


@triton.jit
def _fp8_block_gemm_kernel(
    a_ptr, as_ptr, tok_ptr, b_ptr, bs_ptr, c_ptr, cs_ptr, counts_ptr,
    num_local, n_out, k_dim, up_off, max_tiles_m,
    stride_am, stride_asm, stride_be, stride_bn, stride_bse, stride_bsn, stride_cm, stride_csm,
    alpha, limit,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_E: tl.constexpr, GROUP_M: tl.constexpr,
    INDIRECT: tl.constexpr, GATED: tl.constexpr, ACT: tl.constexpr, QUANT_OUT: tl.constexpr, EMULATE: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(n_out, BLOCK_N)
    in_group = GROUP_M * num_pid_n
    first_m = (pid // in_group) * GROUP_M
    group_size = tl.minimum(max_tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % group_size
    pid_n = (pid % in_group) // group_size
    # m-tile -> (expert, rows) from the group counts: expert e owns ceil(count_e / BLOCK_M) tiles.
    er = tl.arange(0, BLOCK_E)
    cnt = tl.load(counts_ptr + er, mask=er < num_local, other=0)
    tiles = (cnt + BLOCK_M - 1) // BLOCK_M
    tile_end = tl.cumsum(tiles, 0)
    if pid_m >= tl.sum(tiles, axis=0):
        return
    e = tl.sum((tile_end <= pid_m).to(tl.int32), axis=0)
    sel = er == e
    row_end_all = tl.cumsum(cnt, 0)
    row_begin = tl.sum(tl.where(sel, row_end_all - cnt, 0), axis=0)
    row_end = tl.sum(tl.where(sel, row_end_all, 0), axis=0)
    tile_begin = tl.sum(tl.where(sel, tile_end - tiles, 0), axis=0)
    rows = row_begin + (pid_m - tile_begin) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < row_end
    if INDIRECT:
        arow = tl.load(tok_ptr + rows, mask=rmask, other=0).to(tl.int64)
    else:
        arow = rows.to(tl.int64)
    rk = tl.arange(0, BLOCK_K)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    a_ptrs = a_ptr + arow[:, None] * stride_am + rk[None, :]
    as_ptrs = as_ptr + arow * stride_asm
    e64 = e.to(tl.int64)
    b_ptrs = b_ptr + e64 * stride_be + rn.to(tl.int64)[None, :] * stride_bn + rk[:, None]
    bs_ptrs = bs_ptr + e64 * stride_bse + ((pid_n * BLOCK_N) // 128) * stride_bsn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    if GATED:
        bu_ptrs = b_ptrs + up_off * stride_bn
        bus_ptrs = bs_ptr + e64 * stride_bse + ((up_off + pid_n * BLOCK_N) // 128) * stride_bsn
        acc_u = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for kb in range(0, tl.cdiv(k_dim, BLOCK_K)):
        a = tl.load(a_ptrs, mask=rmask[:, None], other=0.0)
        a_s = tl.load(as_ptrs + kb, mask=rmask, other=0.0)
        b = tl.load(b_ptrs)
        b_s = tl.load(bs_ptrs + kb)
        acc += tl.dot(a, b) * (a_s[:, None] * b_s)
        if GATED:
            bu = tl.load(bu_ptrs)
            bu_s = tl.load(bus_ptrs + kb)
            acc_u += tl.dot(a, bu) * (a_s[:, None] * bu_s)
            bu_ptrs += BLOCK_K
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    if GATED:
        out = _gated(acc, acc_u, alpha, limit, ACT)
    elif ACT >= 0:
        out = _unary(acc, ACT)
    else:
        out = acc
    c_ptrs = c_ptr + rows.to(tl.int64)[:, None] * stride_cm + rn[None, :]
    if QUANT_OUT:  # one scale per row and 128 columns: BLOCK_N == 128
        s = tl.maximum(tl.max(tl.abs(out), axis=1) / 448.0, 1e-12)
        tl.store(c_ptrs, _to_fp8(out / s[:, None], EMULATE), mask=rmask[:, None])
        tl.store(cs_ptr + rows.to(tl.int64) * stride_csm + pid_n, s, mask=rmask)
    else:
        tl.store(c_ptrs, _to_bf16(out, EMULATE), mask=rmask[:, None])


@dataclass(frozen=True)
class BlockConfig:
    """Tile shape of :func:`fp8_block_gemm` (``BLOCK_N = BLOCK_K = 128``: one weight scale per tile step)."""

    block_m: int
    num_warps: int
    num_stages: int
    group_m: int = 8


BLOCK_CONFIGS = {
    "gated": ((16, BlockConfig(16, 4, 4)), (48, BlockConfig(64, 4, 4)), (None, BlockConfig(64, 8, 3))),
    "plain": ((16, BlockConfig(16, 4, 4)), (None, BlockConfig(64, 4, 4))),
}
"""GEMM1 with the fused gated activation (``gated``) and GEMM2 (``plain``): (largest mean rows per
expert, config) in order, ``None`` for any larger load. The fastest of six tile shapes on the H200
for a DeepSeek-V3 EP8 shard and Qwen3-30B-A3B-FP8 at 16 to 8,192 tokens
(benchmarks/results/h200_fp8_block_tuning.log; BLOCK_M 128 won GEMM1 for Qwen3 above 64 rows per
expert by 6-12 % and lost for DeepSeek by 12 %: one table for both keeps BLOCK_M 64)."""


def block_config(rows: int, num_local: int, gated: bool = False) -> BlockConfig:
    """The :data:`BLOCK_CONFIGS` entry for ``rows`` routed rows over ``num_local`` experts."""
    mean = rows / max(num_local, 1)
    for limit, cfg in BLOCK_CONFIGS["gated" if gated else "plain"]:
        if limit is None or mean <= limit:
            return cfg
    raise AssertionError("BLOCK_CONFIGS tables end with a catch-all")


def fp8_block_gemm(
    a: torch.Tensor,
    a_scale: torch.Tensor,
    w: torch.Tensor,
    w_scale: torch.Tensor,
    counts: torch.Tensor,
    rows: int,
    *,
    sorted_tok: torch.Tensor | None = None,
    act: Activation | None = None,
    quant_out: bool = False,
    swiglu_alpha: float = 1.702,
    swiglu_limit: float = 7.0,
    config: BlockConfig | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Grouped GEMM with 128x128-block fp8 weights and 1x128-group fp8 activations.

    Row ``r`` of group ``e`` (groups in expert order, ``counts[e]`` rows each, no padding) is
    ``sum_kb (A[r, kb] . W[e, :, kb]) * a_scale[r, kb] * w_scale[e, n // 128, kb]``.

    Args:
        a: ``[*, K]`` float8_e4m3fn; with ``sorted_tok`` row ``r`` reads ``a[sorted_tok[r]]``.
        a_scale: ``[*, K // 128]`` float32, rows as ``a``.
        w: ``[E, N_w, K]`` float8_e4m3fn (vLLM layout, K contiguous).
        w_scale: ``[E, N_w // 128, K // 128]`` float32.
        counts: ``[E]`` int32 rows per expert (:attr:`Layout.counts`).
        rows: static row count of the output buffer (``>= sum(counts)``).
        act: ``None``: plain GEMM, ``[rows, N_w]`` bf16. A gated activation: ``N_w = 2 * n``, the
            ``[gate; up]`` halves of each expert's rows, output ``[rows, n]``; a ``*_no_mul`` one:
            applied to ``[rows, N_w]``.
        quant_out: store the output as fp8 with one scale per row and 128 columns.
        config: tile shape (default :func:`block_config` for this load and GEMM).

    Returns:
        ``(out, scale)``: ``scale`` ``[rows, n // 128]`` when ``quant_out``, else ``None``.

    Raises:
        ValueError: ``K`` or the output width not a multiple of 128, an interleaved activation.
    """
    num_local, n_w, k_dim = w.shape
    gated = False
    code = -1
    if act is not None:
        code, gated, interleaved = _ACT_CODES[Activation(act)]
        if interleaved:
            raise ValueError("fp8_block_gemm fuses [gate; up] halves only, not interleaved gate/up rows")
    n_out = n_w // 2 if gated else n_w
    if k_dim % _GROUP or n_out % _GROUP:
        raise ValueError(f"fp8_block_gemm needs K and N multiples of 128, got K={k_dim}, N={n_out}")
    dev = w.device
    out = torch.empty(rows, n_out, dtype=torch.float8_e4m3fn if quant_out else torch.bfloat16, device=dev)
    scale = torch.empty(rows, n_out // _GROUP, dtype=torch.float32, device=dev) if quant_out else None
    if rows == 0 or num_local == 0:
        return out, scale
    cfg = config or block_config(rows, num_local, gated)
    max_tiles_m = triton.cdiv(rows, cfg.block_m) + num_local
    grid = (max_tiles_m * (n_out // 128),)
    _fp8_block_gemm_kernel[grid](
        a, a_scale, sorted_tok if sorted_tok is not None else counts, w, w_scale, out, scale if scale is not None else out, counts,
        num_local, n_out, k_dim, n_out, max_tiles_m,
        a.stride(0), a_scale.stride(0), w.stride(0), w.stride(1), w_scale.stride(0), w_scale.stride(1),
        out.stride(0), 0 if scale is None else scale.stride(0),
        float(swiglu_alpha), float(swiglu_limit),
        BLOCK_M=cfg.block_m, BLOCK_N=128, BLOCK_K=128, BLOCK_E=_pow2(num_local), GROUP_M=cfg.group_m,
        INDIRECT=sorted_tok is not None, GATED=gated, ACT=code, QUANT_OUT=quant_out, EMULATE=INTERPRET,
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )
    return out, scale


# ----------------------------------------------------------------------------- bf16 grouped GEMM


@triton.jit
def _bf16_grouped_gemm_kernel(
    a_ptr, tok_ptr, b_ptr, bias_ptr, c_ptr, counts_ptr,
    num_local, n_out, k_dim, up_off, gate_step, max_tiles_m,
    stride_am, stride_be, stride_bn, stride_bias_e, stride_cm,
    alpha, limit,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_E: tl.constexpr, GROUP_M: tl.constexpr,
    INDIRECT: tl.constexpr, GATED: tl.constexpr, ACT: tl.constexpr, HAS_BIAS: tl.constexpr,
    EVEN_K: tl.constexpr, EMULATE: tl.constexpr,
):
    # Tile order: GROUP_M m-tiles share each n-tile (L2 reuse of the weight tile), as in the fp8 kernel.
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(n_out, BLOCK_N)
    in_group = GROUP_M * num_pid_n
    first_m = (pid // in_group) * GROUP_M
    group_size = tl.minimum(max_tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % group_size
    pid_n = (pid % in_group) // group_size
    # m-tile -> (expert, rows): expert e owns ceil(count_e / BLOCK_M) tiles (block-size padding in the
    # tile map only; the rows themselves are stored unpadded, in expert order).
    er = tl.arange(0, BLOCK_E)
    cnt = tl.load(counts_ptr + er, mask=er < num_local, other=0)
    tiles = (cnt + BLOCK_M - 1) // BLOCK_M
    tile_end = tl.cumsum(tiles, 0)
    if pid_m >= tl.sum(tiles, axis=0):
        return
    e = tl.sum((tile_end <= pid_m).to(tl.int32), axis=0)
    sel = er == e
    row_end_all = tl.cumsum(cnt, 0)
    row_begin = tl.sum(tl.where(sel, row_end_all - cnt, 0), axis=0)
    row_end = tl.sum(tl.where(sel, row_end_all, 0), axis=0)
    tile_begin = tl.sum(tl.where(sel, tile_end - tiles, 0), axis=0)
    rows = row_begin + (pid_m - tile_begin) * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < row_end
    if INDIRECT:
        arow = tl.load(tok_ptr + rows, mask=rmask, other=0).to(tl.int64)
    else:
        arow = rows.to(tl.int64)
    rk = tl.arange(0, BLOCK_K)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    nmask = rn < n_out
    rn_safe = tl.where(nmask, rn, 0)
    e64 = e.to(tl.int64)
    a_ptrs = a_ptr + arow[:, None] * stride_am + rk[None, :]
    # Weight rows: gate row of output column n is n * gate_step, its up row that + up_off
    # ([gate; up] halves: step 1, up_off n_out; interleaved: step 2, up_off 1).
    g_rows = rn_safe.to(tl.int64) * gate_step
    b_ptrs = b_ptr + e64 * stride_be + g_rows[None, :] * stride_bn + rk[:, None]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    if GATED:
        bu_ptrs = b_ptrs + up_off * stride_bn
        acc_u = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k_dim, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_ptrs, mask=rmask[:, None], other=0.0)
            b = tl.load(b_ptrs)
        else:
            kmask = (k0 + rk) < k_dim
            a = tl.load(a_ptrs, mask=rmask[:, None] & kmask[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=kmask[:, None], other=0.0)
        if EMULATE:  # Triton's interpreter multiplies bf16 dot operands wrongly (3.9); float32 products are exact
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc)
        if GATED:
            if EVEN_K:
                bu = tl.load(bu_ptrs)
            else:
                bu = tl.load(bu_ptrs, mask=kmask[:, None], other=0.0)
            if EMULATE:
                bu = bu.to(tl.float32)
            acc_u = tl.dot(a, bu, acc_u)
            bu_ptrs += BLOCK_K
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    if HAS_BIAS:
        brow = bias_ptr + e64 * stride_bias_e
        acc += tl.load(brow + g_rows, mask=nmask, other=0.0)[None, :]
        if GATED:
            acc_u += tl.load(brow + g_rows + up_off, mask=nmask, other=0.0)[None, :]
    if GATED:
        out = _gated(acc, acc_u, alpha, limit, ACT)
    elif ACT >= 0:
        out = _unary(acc, ACT)
    else:
        out = acc
    c_ptrs = c_ptr + rows.to(tl.int64)[:, None] * stride_cm + rn[None, :]
    tl.store(c_ptrs, _to_bf16(out, EMULATE), mask=rmask[:, None] & nmask[None, :])


@dataclass(frozen=True)
class GemmTile:
    """Tile shape of :func:`bf16_grouped_gemm`: ``BLOCK_M x BLOCK_N`` outputs per program (gated: ``BLOCK_N``
    columns of the activation, i.e. ``2 * BLOCK_N`` weight rows), ``BLOCK_K`` per step.

    Raises:
        ValueError: a block size not a power of two of at least 16, or warps/stages/group out of range.
    """

    block_m: int
    block_n: int
    block_k: int
    num_warps: int = 4
    num_stages: int = 3
    group_m: int = 1

    def __post_init__(self) -> None:
        for field in ("block_m", "block_n", "block_k"):
            v = getattr(self, field)
            if not isinstance(v, int) or v < 16 or v & (v - 1):
                raise ValueError(f"GemmTile.{field}: {v!r} is not allowed; a power of two >= 16")
        if self.num_warps not in (1, 2, 4, 8, 16):
            raise ValueError(f"GemmTile.num_warps: {self.num_warps!r} is not allowed; one of 1, 2, 4, 8, 16")
        if not 1 <= self.num_stages <= 8:
            raise ValueError(f"GemmTile.num_stages: {self.num_stages!r} is not allowed; 1 to 8")
        if not 1 <= self.group_m <= 256:
            raise ValueError(f"GemmTile.group_m: {self.group_m!r} is not allowed; 1 to 256")


def bf16_grouped_gemm(
    a: torch.Tensor,
    w: torch.Tensor,
    counts: torch.Tensor,
    rows: int,
    tile: GemmTile,
    *,
    sorted_tok: torch.Tensor | None = None,
    act: Activation | None = None,
    bias: torch.Tensor | None = None,
    swiglu_alpha: float = 1.702,
    swiglu_limit: float = 7.0,
) -> torch.Tensor:
    """Grouped GEMM over expert-sorted rows, bf16 in and out, float32 accumulation.

    Row ``r`` of group ``e`` (groups in expert order, ``counts[e]`` rows each, no padding between
    groups) is ``A[r] @ W[e].T`` (+ bias, then the activation when ``act`` is given).

    Args:
        a: ``[*, K]`` bf16, K contiguous; with ``sorted_tok`` row ``r`` reads ``a[sorted_tok[r]]``
            (GEMM1 reads the tokens' hidden rows in place: no gathered copy).
        w: ``[E, N_w, K]`` bf16 (vLLM layout, K contiguous).
        counts: ``[E]`` int32 rows per expert (:attr:`Layout.counts`).
        rows: static row count of the output (``>= sum(counts)``; rows past it are left unwritten).
        tile: the tile shape.
        act: ``None``: plain GEMM, ``[rows, N_w]``. A gated activation (``[gate; up]`` halves or
            interleaved rows): ``N_w = 2 * n``, output ``[rows, n]``, the activation applied to the
            float32 accumulators (no bf16 rounding before it). A ``*_no_mul`` one: ``[rows, N_w]``.
        bias: ``[E, N_w]`` float32 added to the accumulators before the activation, or ``None``.

    Returns:
        ``[rows, n_out]`` bf16.

    Raises:
        ValueError: dtypes other than bf16, or ``a``'s width not ``w``'s K.
    """
    if a.dtype != torch.bfloat16 or w.dtype != torch.bfloat16:
        raise ValueError(f"bf16_grouped_gemm takes bf16 a and w, got {a.dtype} and {w.dtype}")
    num_local, n_w, k_dim = w.shape
    if a.shape[-1] != k_dim or a.stride(-1) != 1 or w.stride(-1) != 1:
        raise ValueError(f"bf16_grouped_gemm: a [*, {a.shape[-1]}] must be [*, K={k_dim}] with K contiguous (and w's K contiguous)")
    gated, interleaved, code = False, False, -1
    if act is not None:
        code, gated, interleaved = _ACT_CODES[Activation(act)]
    n_out = n_w // 2 if gated else n_w
    out = torch.empty(rows, n_out, dtype=torch.bfloat16, device=w.device)
    if rows == 0 or num_local == 0:
        return out
    max_tiles_m = triton.cdiv(rows, tile.block_m) + num_local
    grid = (max_tiles_m * triton.cdiv(n_out, tile.block_n),)
    gate_step, up_off = (2, 1) if interleaved else (1, n_out)
    if bias is not None:
        bias = bias.float().contiguous()
    _bf16_grouped_gemm_kernel[grid](
        a, sorted_tok if sorted_tok is not None else counts, w, bias if bias is not None else counts, out, counts,
        num_local, n_out, k_dim, up_off, gate_step if gated else 1, max_tiles_m,
        a.stride(0), w.stride(0), w.stride(1), 0 if bias is None else bias.stride(0), out.stride(0),
        float(swiglu_alpha), float(swiglu_limit),
        BLOCK_M=tile.block_m, BLOCK_N=tile.block_n, BLOCK_K=tile.block_k, BLOCK_E=_pow2(num_local), GROUP_M=tile.group_m,
        INDIRECT=sorted_tok is not None, GATED=gated, ACT=code, HAS_BIAS=bias is not None,
        EVEN_K=k_dim % tile.block_k == 0, EMULATE=INTERPRET,
        num_warps=tile.num_warps, num_stages=tile.num_stages,
    )
    return out
