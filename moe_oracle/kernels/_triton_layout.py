"""Routing layout and combine: the (token, k) pairs sorted by local expert, and summed back per token.

:func:`route_layout` counts each local expert's pairs with one atomic pass and places each pair
in the expert-sorted buffer with a second (group ends, the token of each sorted row, and when
asked the tokens' rows and fp8 scales copied in); :func:`combine` sums each token's ``K`` rows
with their routing weights in float32 and writes bf16 once. The module docstring of
:mod:`moe_oracle.kernels._triton_moe` gives the layout of one call.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from ._triton_common import INTERPRET, _pow2, _to_bf16

__all__ = ["Layout", "combine", "route_layout"]


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
