"""Worker of test_distributed.py: runs every distributed scenario on one rank (gloo, or NCCL on GPU ``rank``).

Each scenario builds the whole layer from a fixed seed on every rank (so every rank can
compute the single-process float32 reference), takes its own tokens and its own share of the
experts, runs the distributed kernel and records the largest error on its tokens. Results
go to ``<out_dir>/rank<r>.json``; the test process asserts on them.
"""

from __future__ import annotations

import datetime
import json
import os
import traceback
from dataclasses import replace

import torch
import torch.distributed as dist

from helpers import inputs, normwise_error, small_spec
from moe_oracle import Device, MoEConfig, Oracle, ParallelConfig
from moe_oracle.kernels.reference import ReferenceBatchedExperts, ReferenceExperts, ReferenceMonolithicExperts, reference_moe
from moe_oracle.kernels.torch_grouped_mm import TorchGroupedMMExperts
from moe_oracle.prepare_finalize.all_to_all import AllToAllModular, BatchedAllToAllModular
from moe_oracle.prepare_finalize.naive_dp_ep import NaiveDPEPModular, NaiveDPEPMonolithic
from moe_oracle.core.quant import SCHEMES
from moe_oracle.runtime.agreement import check_ranks_agree
from moe_oracle.runtime.build import make_kernel, spec_for_decision
from moe_oracle.runtime.errors import RankDisagreementError
from moe_oracle.runtime.kernel import FusedMoEKernel
from moe_oracle.runtime.weights import make_random_weights, shard_experts, shard_intermediate

TOKENS = {1: [8], 2: [5, 3], 4: [5, 0, 3, 7]}  # tokens per rank: unequal; with 4 ranks one is idle
DEVICE = torch.device("cpu")  # cuda:<rank> under NCCL (set by run)


def _my_tokens(rank: int, world: int) -> slice:
    counts = TOKENS[world]
    start = sum(counts[:rank])
    return slice(start, start + counts[rank])


def _setup(rank: int, world: int, **spec_kw):  # noqa: ANN003, ANN202
    full = small_spec(**spec_kw)
    w = make_random_weights(full, seed=11)
    x, logits = inputs(full, sum(TOKENS[world]), seed=12)
    w, x, logits = w.to(DEVICE), x.to(DEVICE), logits.to(DEVICE)
    # The single-process reference runs on the same device as the distributed layer, so the
    # comparison isolates dispatch/combine (CPU vs CUDA fp8 rounding is test_gpu.py's business).
    ref = reference_moe(x, logits, w, full).cpu()
    mine = _my_tokens(rank, world)
    return full, w, x, logits, ref, mine


def _ep(full, w, rank, world, experts_cls, pf_cls, **pf_kw):  # noqa: ANN001, ANN003, ANN202
    spec = full.for_rank(rank, world)
    return FusedMoEKernel(pf_cls(spec, **pf_kw), experts_cls(spec, shard_experts(w, spec)))


def _err(out: torch.Tensor, ref: torch.Tensor) -> dict:
    if out.shape != ref.shape:
        return {"max_abs": float("inf"), "shape": list(out.shape)}
    return {"max_abs": float((out.float().cpu() - ref).abs().max()) if out.numel() else 0.0, "rows": out.shape[0]}


def naive_dp_ep_modular(rank: int, world: int) -> dict:
    full, w, x, logits, ref, mine = _setup(rank, world)
    k = _ep(full, w, rank, world, ReferenceExperts, NaiveDPEPModular)
    return _err(k(x[mine], logits[mine]), ref[mine])


def naive_dp_ep_monolithic(rank: int, world: int) -> dict:
    full, w, x, logits, ref, mine = _setup(rank, world, method="deepseek_v3", num_expert_group=4, topk_group=2, routed_scaling_factor=2.5, has_correction_bias=True)
    k = _ep(full, w, rank, world, ReferenceMonolithicExperts, NaiveDPEPMonolithic)
    return _err(k(x[mine], logits[mine]), ref[mine])


def naive_dp_tensor_parallel(rank: int, world: int) -> dict:
    full, w, x, logits, ref, mine = _setup(rank, world, intermediate=16)
    part = shard_intermediate(w, gated=True, tp_rank=rank, tp_size=world)
    spec = replace(full, intermediate_size=16 // world)
    k = FusedMoEKernel(NaiveDPEPModular(spec), ReferenceExperts(spec, part))
    return _err(k(x[mine], logits[mine]), ref[mine])


def all_to_all_standard(rank: int, world: int) -> dict:
    full, w, x, logits, ref, mine = _setup(rank, world)
    k = _ep(full, w, rank, world, ReferenceExperts, AllToAllModular)
    return _err(k(x[mine], logits[mine]), ref[mine])


def all_to_all_batched(rank: int, world: int) -> dict:
    full, w, x, logits, ref, mine = _setup(rank, world)
    k = _ep(full, w, rank, world, ReferenceBatchedExperts, BatchedAllToAllModular)
    return _err(k(x[mine], logits[mine]), ref[mine])


def all_to_all_batched_fixed_capacity(rank: int, world: int) -> dict:
    full, w, x, logits, ref, mine = _setup(rank, world)
    k = _ep(full, w, rank, world, ReferenceBatchedExperts, BatchedAllToAllModular, max_tokens_per_expert=16)
    return _err(k(x[mine], logits[mine]), ref[mine])


def all_to_all_fp8_block(rank: int, world: int) -> dict:
    """fp8 block w8a8: activations quantized per 1x128 group before dispatch, scales travel with rows."""
    full, w, x, logits, ref, mine = _setup(rank, world, hidden=256, intermediate=128, quant=SCHEMES["fp8_block"])
    k = _ep(full, w, rank, world, ReferenceExperts, AllToAllModular)
    out = _err(k(x[mine], logits[mine]), ref[mine])
    kb = _ep(full, w, rank, world, ReferenceBatchedExperts, BatchedAllToAllModular)
    out["batched_max_abs"] = _err(kb(x[mine], logits[mine]), ref[mine])["max_abs"]
    return out


def all_to_all_bf16_grouped_mm(rank: int, world: int) -> dict:
    full, w, x, logits, ref, mine = _setup(rank, world, dtype="bfloat16", hidden=64, intermediate=32)
    k = _ep(full, w, rank, world, TorchGroupedMMExperts, AllToAllModular)
    out = k(x[mine], logits[mine])
    return {"normwise": normwise_error(out.cpu(), ref[mine]) if out.numel() else 0.0, "dtype": str(out.dtype)}


def _config(world: int, backend: str, all2all: str, use_ep: bool = True, in_dtype: str = "float32") -> MoEConfig:
    return MoEConfig(
        num_experts=8, top_k=2, hidden_size=32, intermediate_size=16, device=Device("cuda", capability=90),
        routing_method="renormalize", in_dtype=in_dtype, moe_backend=backend,
        parallel=ParallelConfig(dp_size=world, use_ep=use_ep, all2all_backend=all2all),
    )


def decisions_build_distributed_kernels(rank: int, world: int) -> dict:
    """Real Decisions (tables) -> make_kernel with this rank's spec from the decision -> run."""
    oracle = Oracle.default(view="runtime")
    full, w, x, logits, ref, mine = _setup(rank, world)
    result = {}
    for all2all, use_ep in (("deepep_high_throughput", True), ("deepep_low_latency", True), ("allgather_reducescatter", True), ("allgather_reducescatter", False)):
        decision = oracle.select(_config(world, "reference", all2all, use_ep))
        spec = spec_for_decision(decision, rank=rank)
        if use_ep:
            weights = shard_experts(w, spec)
        else:
            weights = shard_intermediate(w, gated=True, tp_rank=rank, tp_size=world)
        kernel = make_kernel(decision, weights=weights)
        name = f"{all2all}{'' if use_ep else ' (no EP)'}: {decision.kernel}+{decision.prepare_finalize}"
        result[name] = _err(kernel(x[mine], logits[mine]), ref[mine])["max_abs"]
    return result


def raw_collectives(rank: int, world: int) -> dict:
    """The torch.distributed calls comm.py makes, with its dtypes and shapes, called directly.

    comm.py skips communication at world size 1; this calls the collectives themselves, so a single
    NCCL rank exercises them too: int64 counts (all_gather, all_to_all_single), fp8 rows as uint8
    bytes (all_gather), float32/bf16 sums (reduce_scatter), uneven splits (all_to_all_single), max
    (all_reduce). Each result is compared with what every rank sent.
    """
    dev, checks = DEVICE, {}
    mine = torch.tensor([rank + 1], dtype=torch.int64, device=dev)
    got = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(got, mine)
    checks["all_gather_int64"] = [int(g) for g in got] == list(range(1, world + 1))

    def fp8_rows(r: int) -> torch.Tensor:
        return ((torch.arange(12, dtype=torch.float32, device=dev).view(3, 4) - 5) * (r + 1)).to(torch.float8_e4m3fn)

    parts = [torch.empty(3, 4, dtype=torch.uint8, device=dev) for _ in range(world)]
    dist.all_gather(parts, fp8_rows(rank).view(torch.uint8))
    checks["all_gather_fp8_as_uint8"] = all(torch.equal(p.view(torch.float8_e4m3fn).float(), fp8_rows(r).float()) for r, p in enumerate(parts))
    for dtype in (torch.float32, torch.bfloat16):
        chunks = [torch.full((2, 4), float(rank + 1 + 10 * r), dtype=dtype, device=dev) for r in range(world)]
        out = torch.empty(2, 4, dtype=dtype, device=dev)
        dist.reduce_scatter(out, chunks, op=dist.ReduceOp.SUM)
        want = float(sum(s + 1 + 10 * rank for s in range(world)))
        checks[f"reduce_scatter_{str(dtype).split('.')[-1]}"] = bool((out.float() == want).all())
    send = [1 + (rank + r) % 2 for r in range(world)]  # rows for each destination: uneven
    recv = [1 + (r + rank) % 2 for r in range(world)]
    rows = torch.cat([torch.full((n, 3), float(1000 * rank + r), dtype=torch.bfloat16, device=dev) for r, n in enumerate(send)])
    out = torch.empty(sum(recv), 3, dtype=torch.bfloat16, device=dev)
    dist.all_to_all_single(out, rows, output_split_sizes=recv, input_split_sizes=send)
    want = torch.cat([torch.full((n, 3), float(1000 * s + rank), dtype=torch.bfloat16, device=dev) for s, n in enumerate(recv)])
    checks["all_to_all_single_uneven_bf16"] = torch.equal(out, want)
    counts = torch.tensor(send, dtype=torch.int64, device=dev)
    got_counts = torch.empty_like(counts)
    dist.all_to_all_single(got_counts, counts)
    checks["all_to_all_single_int64"] = got_counts.tolist() == recv
    v = torch.tensor([rank * 7], dtype=torch.int64, device=dev)
    dist.all_reduce(v, op=dist.ReduceOp.MAX)
    checks["all_reduce_max"] = int(v) == 7 * (world - 1)
    return {"checks": checks, "backend": dist.get_backend(), "device": str(dev)}


def agreement(rank: int, world: int) -> dict:
    oracle = Oracle.default(view="runtime")
    same = oracle.select(_config(world, "reference", "deepep_high_throughput", in_dtype="bfloat16"))
    fp = check_ranks_agree(same)
    # rank 1 selects another backend: every rank must raise, naming the ranks and kernels
    mine = oracle.select(_config(world, "torch_grouped_mm" if rank == 1 else "reference", "deepep_high_throughput", in_dtype="bfloat16"))
    try:
        check_ranks_agree(mine)
        return {"agreed": fp == same.fingerprint(), "raised": False}
    except RankDisagreementError as err:
        return {
            "agreed": fp == same.fingerprint(),
            "raised": True,
            "message": str(err),
            "ranks": [[r.rank, r.kernel, r.fingerprint] for r in err.ranks],
        }


SCENARIOS = [
    naive_dp_ep_modular,
    naive_dp_ep_monolithic,
    naive_dp_tensor_parallel,
    all_to_all_standard,
    all_to_all_batched,
    all_to_all_batched_fixed_capacity,
    all_to_all_fp8_block,
    all_to_all_bf16_grouped_mm,
    decisions_build_distributed_kernels,
    raw_collectives,
    agreement,
]


def run(rank: int, world: int, port: int, out_dir: str, backend: str = "gloo") -> None:
    global DEVICE
    torch.set_num_threads(1)
    if backend == "nccl":
        torch.cuda.set_device(rank)
        DEVICE = torch.device("cuda", rank)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120))
    results = {}
    try:
        for scenario in SCENARIOS:
            try:
                results[scenario.__name__] = {"ok": True, **scenario(rank, world)}
            except Exception as exc:  # recorded and asserted on by the test
                results[scenario.__name__] = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
    finally:
        with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as fh:
            json.dump(results, fh)
        dist.destroy_process_group()
