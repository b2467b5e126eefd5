"""Variable-length collectives over ``torch.distributed`` (gloo on CPU, NCCL on GPUs).

Every helper works without an initialized process group when ``group`` is
``None`` (a single rank: no communication). Tensors travel on their own device;
float8 tensors travel as their uint8 bytes (gloo has no fp8 type). Token counts
are exchanged first, then rows are padded to the largest count so that the
equal-shape collectives (``all_gather``, ``reduce_scatter``) apply.

Source: ``torch.distributed`` collectives (``all_gather``, ``reduce_scatter``,
``all_to_all_single``, ``all_reduce``); torch 2.13 gloo supports each of them for
float32/bfloat16/float16/int/uint8 (checked 2026-11).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

__all__ = ["all_gather_varlen", "all_reduce_max", "all_to_all_varlen", "group_info", "reduce_scatter_varlen"]


def group_info(group: Any = None) -> tuple[int, int]:
    """``(rank, world_size)`` in ``group``; ``(0, 1)`` when no process group is initialized."""
    if not (dist.is_available() and dist.is_initialized()):
        if group is not None:
            raise RuntimeError("a process group was given but torch.distributed is not initialized")
        return 0, 1
    return dist.get_rank(group), dist.get_world_size(group)


def _to_wire(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.uint8) if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2) else t


def _from_wire(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return t.view(dtype) if t.dtype != dtype else t


def _sizes(n: int, device: torch.device, group: Any, world: int) -> list[int]:
    mine = torch.tensor([n], dtype=torch.int64, device=device)
    out = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(out, mine, group=group)
    return [int(x.item()) for x in out]


def all_gather_varlen(t: torch.Tensor, group: Any = None) -> tuple[torch.Tensor, list[int]]:
    """Concatenate every rank's ``t`` (``[n_r, ...]``, ``n_r`` may differ) in rank order.

    Returns:
        ``([sum n_r, ...], [n_0, n_1, ...])``.
    """
    rank, world = group_info(group)
    if world == 1:
        return t, [t.shape[0]]
    sizes = _sizes(t.shape[0], t.device, group, world)
    wire = _to_wire(t.contiguous())
    longest = max(sizes)
    padded = torch.zeros((longest,) + tuple(wire.shape[1:]), dtype=wire.dtype, device=wire.device)
    padded[: wire.shape[0]] = wire
    parts = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(parts, padded, group=group)
    out = torch.cat([p[:n] for p, n in zip(parts, sizes)], dim=0)
    return _from_wire(out, t.dtype), sizes


def reduce_scatter_varlen(t: torch.Tensor, sizes: list[int], group: Any = None) -> torch.Tensor:
    """Sum ``t`` (``[sum n_r, ...]``, same on every rank's layout) over ranks; keep this rank's rows.

    Args:
        t: rows of every rank, concatenated in rank order (as :func:`all_gather_varlen` made them).
        sizes: rows per rank.

    Returns:
        ``[n_rank, ...]``: the sum over ranks of this rank's rows, dtype of ``t``.
    """
    rank, world = group_info(group)
    if world == 1:
        return t
    longest = max(sizes)
    chunks = []
    start = 0
    for n in sizes:
        c = torch.zeros((longest,) + tuple(t.shape[1:]), dtype=t.dtype, device=t.device)
        c[:n] = t[start : start + n]
        chunks.append(c)
        start += n
    out = torch.empty_like(chunks[0])
    dist.reduce_scatter(out, chunks, op=dist.ReduceOp.SUM, group=group)
    return out[: sizes[rank]]


def all_to_all_varlen(
    t: torch.Tensor,
    send_counts: list[int],
    group: Any = None,
    *,
    recv_counts: list[int] | None = None,
) -> tuple[torch.Tensor, list[int]]:
    """Send ``send_counts[r]`` consecutive rows of ``t`` to rank ``r``; receive the rows sent here.

    Args:
        t: ``[sum send_counts, ...]`` rows ordered by destination rank.
        send_counts: rows for each rank.
        recv_counts: rows to expect from each rank, when already known (skips one exchange).

    Returns:
        ``(received [sum recv_counts, ...] ordered by source rank, recv_counts)``.
    """
    rank, world = group_info(group)
    if world == 1:
        return t, list(send_counts)
    if recv_counts is None:
        sc = torch.tensor(send_counts, dtype=torch.int64, device=t.device)
        rc = torch.empty_like(sc)
        dist.all_to_all_single(rc, sc, group=group)
        recv_counts = [int(x) for x in rc.tolist()]
    wire = _to_wire(t.contiguous())
    out = torch.empty((sum(recv_counts),) + tuple(wire.shape[1:]), dtype=wire.dtype, device=wire.device)
    dist.all_to_all_single(out, wire, output_split_sizes=recv_counts, input_split_sizes=list(send_counts), group=group)
    return _from_wire(out, t.dtype), recv_counts


def all_reduce_max(value: int, device: torch.device, group: Any = None) -> int:
    """The largest ``value`` over the ranks of ``group``."""
    _, world = group_info(group)
    if world == 1:
        return value
    v = torch.tensor([value], dtype=torch.int64, device=device)
    dist.all_reduce(v, op=dist.ReduceOp.MAX, group=group)
    return int(v.item())
